//! The Rényi-DP accountant (Mironov 2017) over a configurable grid of orders, refined
//! continuously between them.

mod convert;
mod curves;
mod poisson;
mod quadrature;
mod without_replacement;

use convert::Objective;
pub use convert::{Conversion, RdpDelta, RdpEpsilon};
pub use curves::objpert_rdp;

use std::cell::Cell;

use crate::accountant::{Accountant, Note, NoteValue};
use crate::checks::Facts;
use crate::error::{Error, Result, ensure, non_negative, valid_delta};
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;

/// dp_accounting's default orders: 1.1, 1.2, …, 10.9, 11, 12, …, 63, 128, 256, 512, 1024.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    v.extend((11..64).map(f64::from));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

/// An order left out of the minimisation, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedOrder {
    /// The order α.
    pub order: f64,
    /// The mechanism whose RDP could not be computed or is infinite there.
    pub mechanism: &'static str,
    /// Why (overflow, a series that does not converge, an infinite value).
    pub reason: String,
}

/// Relative width at which the continuous refinement of the order stops.
const REFINE_TOL: f64 = 1e-6;

/// Rényi-DP accountant: RDP curves add order by order; (ε, δ) by the best of three
/// conversions (MATH §3), minimised over the grid of orders and then refined continuously.
///
/// After the best grid order is found, a golden-section search over real `α` between its two
/// neighbouring grid orders evaluates the composed curve at fractional orders and keeps the
/// best value computed. Every curve's formula is an upper bound at every real `α > 1`:
/// Gaussian `αs²/2` and Laplace (Mironov 2017, Prop. 6 and Prop. 7's derivation hold for
/// real α), pure-DP steps through randomized response (its Rényi divergence, real α),
/// Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019, §3.3: the fractional-order
/// series with its remainder counted, or the Gauss–Legendre quadrature of `A_α − 1`, which is
/// accurate to ~1e-12 relative, the same numerics as the grid's fractional orders), sampling
/// without replacement (Wang, Balle &
/// Kasiviswanathan 2019, Thm 27 at integers, Cor. 10's linear interpolation of the convex
/// `(α−1)ε(α)` between them — a valid bound, so its refinement is effectively over the
/// conversions' terms between integers), objective perturbation and AMP (paper 001, Thm 3.2,
/// stated for every α > 1), zCDP `ρα`. A composition's curve is the sum, so it is one too.
/// An accountant built by [`crate::tuned`] knows its curve only on the grid and is not
/// refined.
///
/// # Privacy
/// Every order's value is an upper bound on the composition's Rényi divergence (per-mechanism
/// sources on [`Mechanism`]'s constructors: Mironov 2017 for Gaussian and Laplace, Mironov,
/// Talwar & Zhang 2019 for Poisson subsampling, Wang, Balle & Kasiviswanathan 2019 for
/// sampling without replacement, paper 001 Thm 3.2 for objective perturbation). An order
/// whose value cannot be computed (a series that does not converge, overflow) or is infinite
/// is set to +∞ — skipping an order keeps the minimum an upper bound — and listed in
/// [`RdpAccountant::dropped_orders`].
#[derive(Debug, Clone)]
pub struct RdpAccountant {
    rel: Neighbouring,
    orders: Vec<f64>,
    rdp: Vec<f64>,
    dropped: Vec<DroppedOrder>,
    /// The composed mechanisms, to evaluate the curve between grid orders; `None` when the
    /// curve is known only on the grid.
    parts: Option<Vec<(Mechanism, u64)>>,
    /// Closed-form single-step facts every answer is checked against.
    facts: Facts,
    /// The order of the last answer (for [`Accountant::notes`]).
    last_order: Cell<Option<f64>>,
}

impl RdpAccountant {
    /// An empty accountant on [`default_orders`].
    pub fn new(rel: Neighbouring) -> Self {
        let orders = default_orders();
        let rdp = vec![0.0; orders.len()];
        Self {
            rel,
            orders,
            rdp,
            dropped: Vec::new(),
            parts: Some(Vec::new()),
            facts: Facts::default(),
            last_order: Cell::new(None),
        }
    }

    /// An empty accountant on the given orders (each finite and > 1; fractional allowed). The
    /// continuous refinement searches between neighbouring given orders only.
    ///
    /// # Errors
    /// An order ≤ 1 or non-finite, or an empty list.
    pub fn with_orders(rel: Neighbouring, orders: Vec<f64>) -> Result<Self> {
        ensure(!orders.is_empty(), "orders", 0.0, "must not be empty")?;
        for &a in &orders {
            ensure(
                a.is_finite() && a > 1.0,
                "order",
                a,
                "must be finite and > 1",
            )?;
        }
        let rdp = vec![0.0; orders.len()];
        Ok(Self {
            rel,
            orders,
            rdp,
            dropped: Vec::new(),
            parts: Some(Vec::new()),
            facts: Facts::default(),
            last_order: Cell::new(None),
        })
    }

    /// The orders.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    /// The composed RDP value at each order (+∞ where it could not be computed).
    ///
    /// # Privacy
    /// Upper bounds on the composition's Rényi divergences (see [`RdpAccountant`]).
    pub fn curve(&self) -> &[f64] {
        &self.rdp
    }

    /// The same accountant with another composed curve (same orders and relation), known on
    /// the grid only: its ε and δ are not refined between orders.
    pub(crate) fn with_curve(&self, rdp: Vec<f64>) -> Result<Self> {
        ensure(
            rdp.len() == self.orders.len(),
            "curve",
            rdp.len() as f64,
            "must have one value per order",
        )?;
        Ok(Self {
            rel: self.rel,
            orders: self.orders.clone(),
            rdp,
            dropped: self.dropped.clone(),
            parts: None,
            facts: self.facts.clone(),
            last_order: Cell::new(None),
        })
    }

    /// Orders left out of the minimisation (the curve is +∞ there), with the mechanism and
    /// reason, in the order they were found (an order appears once per failing mechanism).
    pub fn dropped_orders(&self) -> &[DroppedOrder] {
        &self.dropped
    }

    /// The composed curve at any real order `alpha > 1`, or `None` where some mechanism's
    /// value cannot be computed or is infinite (or the curve is known on the grid only).
    fn curve_at(&self, alpha: f64) -> Option<f64> {
        let mut total = 0.0;
        for (m, count) in self.parts.as_ref()? {
            total += *count as f64 * curves::rdp(m, self.rel, alpha).ok()?;
        }
        total.is_finite().then_some(total)
    }

    /// The minimum of `objective` over the grid, then over real orders between the grid
    /// minimum's neighbours: `(value, order, conversion)`.
    fn minimum(&self, objective: Objective) -> Option<(f64, f64, Conversion)> {
        let (v, a, c) = convert::grid_minimum(&self.orders, &self.rdp, objective)?;
        if self.parts.is_none() {
            return Some((v, a, c));
        }
        let orders = || self.orders.iter().copied();
        let lo = orders().filter(|&o| o < a).reduce(f64::max).unwrap_or(a);
        let hi = orders().filter(|&o| o > a).reduce(f64::min).unwrap_or(a);
        if lo >= hi {
            return Some((v, a, c));
        }
        let mut best = (v, a, c);
        convert::golden_minimum(lo, hi, REFINE_TOL, |alpha| {
            match self.curve_at(alpha).and_then(|r| objective.best(alpha, r)) {
                Some((w, wc)) => {
                    if w < best.0 {
                        best = (w, alpha, wc);
                    }
                    w
                }
                None => f64::INFINITY,
            }
        });
        Some(best)
    }

    /// ε(δ) with the order and conversion that attain it, after the continuous refinement of
    /// the order (see [`RdpAccountant`]).
    ///
    /// # Privacy
    /// The minimum over orders of the classic (Mironov 2017, Prop. 3), CKS20 (Canonne,
    /// Kamath & Steinke 2020) and Asoodeh et al. 2021 (Lemma 1) conversions: each is an
    /// upper bound at every order where the curve is one, so is their minimum. The value is
    /// the conversion computed at the returned order, rounded up.
    ///
    /// # Errors
    /// δ ∉ [2.2e-308, 1) (`DELTA_MIN`), or no order finite.
    pub fn epsilon_at_best_order(&self, delta: f64) -> Result<RdpEpsilon> {
        valid_delta(delta)?;
        let (e, order, conversion) = self
            .minimum(Objective::Epsilon(delta))
            .ok_or_else(no_finite_order)?;
        Ok(RdpEpsilon {
            epsilon: crate::gaussian::round_up_eps(e),
            order,
            conversion,
        })
    }

    /// ε(δ) minimised over the grid of orders only (no refinement; for comparisons with peers
    /// that use a grid).
    ///
    /// # Privacy
    /// As [`RdpAccountant::epsilon_at_best_order`], over the grid: never below it.
    ///
    /// # Errors
    /// As [`RdpAccountant::epsilon_at_best_order`].
    pub fn epsilon_on_grid(&self, delta: f64) -> Result<RdpEpsilon> {
        valid_delta(delta)?;
        let (e, order, conversion) =
            convert::grid_minimum(&self.orders, &self.rdp, Objective::Epsilon(delta))
                .ok_or_else(no_finite_order)?;
        Ok(RdpEpsilon {
            epsilon: crate::gaussian::round_up_eps(e),
            order,
            conversion,
        })
    }

    /// δ(ε) with the order and conversion that attain it, after the continuous refinement of
    /// the order.
    ///
    /// # Privacy
    /// The minimum over orders and the three conversions of their δ(ε) (MATH §3), each an
    /// upper bound; computed at the returned order, rounded up, at most 1.
    ///
    /// # Errors
    /// ε negative or not finite.
    pub fn delta_at_best_order(&self, epsilon: f64) -> Result<RdpDelta> {
        non_negative("epsilon", epsilon)?;
        Ok(match self.minimum(Objective::LogDelta(epsilon)) {
            Some((l, order, conversion)) if l < 0.0 => RdpDelta {
                delta: crate::gaussian::round_up(l.exp()),
                order: Some(order),
                conversion: Some(conversion),
            },
            _ => RdpDelta {
                delta: 1.0,
                order: None,
                conversion: None,
            },
        })
    }

    /// ε(δ) by a single conversion over the grid only (for comparisons with peers that use
    /// only one).
    ///
    /// # Privacy
    /// As [`RdpAccountant::epsilon_on_grid`], restricted to `conversion`.
    ///
    /// # Errors
    /// As [`RdpAccountant::epsilon_at_best_order`].
    pub fn epsilon_with(&self, delta: f64, conversion: Conversion) -> Result<f64> {
        valid_delta(delta)?;
        let e = self
            .orders
            .iter()
            .zip(&self.rdp)
            .filter(|(_, r)| r.is_finite())
            .map(|(&a, &r)| conversion.epsilon(a, r, delta))
            .fold(f64::INFINITY, f64::min);
        if e.is_finite() {
            Ok(crate::gaussian::round_up_eps(e))
        } else {
            Err(no_finite_order())
        }
    }
}

fn no_finite_order() -> Error {
    Error::OutOfRange("no RDP order has a finite value: epsilon is unbounded".into())
}

impl Accountant for RdpAccountant {
    fn name(&self) -> &'static str {
        "rdp"
    }

    fn neighbouring(&self) -> Neighbouring {
        self.rel
    }

    fn compose(&mut self, mechanism: &Mechanism, count: u64) -> Result<()> {
        mechanism.check_relation(self.rel, "rdp")?;
        if count == 0 {
            return Ok(());
        }
        let c = count as f64;
        for (a, r) in self.orders.iter().zip(self.rdp.iter_mut()) {
            let why = match curves::rdp(mechanism, self.rel, *a) {
                Ok(v) => {
                    let sum = *r + c * v;
                    // Finite, or +∞ already listed for another mechanism: nothing new.
                    if sum.is_finite() || (r.is_infinite() && !v.is_nan()) {
                        *r = sum;
                        continue;
                    }
                    format!("RDP of the composition at alpha = {a} is {sum}")
                }
                Err(why) => why,
            };
            if r.is_finite() {
                *r = f64::INFINITY;
            }
            self.dropped.push(DroppedOrder {
                order: *a,
                mechanism: mechanism.name(),
                reason: why,
            });
        }
        if let Some(parts) = &mut self.parts {
            parts.push((mechanism.clone(), count));
        }
        self.facts.record(mechanism, count, self.rel);
        Ok(())
    }

    /// # Privacy
    /// See [`RdpAccountant::epsilon_at_best_order`]; checked against the single-step closed
    /// forms before it is returned.
    fn epsilon(&self, delta: f64) -> Result<f64> {
        let best = self.epsilon_at_best_order(delta)?;
        self.last_order.set(Some(best.order));
        self.facts.check_epsilon("rdp", delta, best.epsilon)
    }

    /// # Privacy
    /// See [`RdpAccountant::delta_at_best_order`]; checked against the single-step closed
    /// forms before it is returned.
    fn delta(&self, epsilon: f64) -> Result<f64> {
        let best = self.delta_at_best_order(epsilon)?;
        self.last_order.set(best.order);
        self.facts.check_delta("rdp", epsilon, best.delta)
    }

    fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some(order) = self.last_order.get() {
            notes.push(Note {
                name: "order",
                value: NoteValue::Number(order),
            });
        }
        let mut dropped: Vec<f64> = self.dropped.iter().map(|d| d.order).collect();
        dropped.sort_by(f64::total_cmp);
        dropped.dedup();
        notes.push(Note {
            name: "dropped_orders",
            value: NoteValue::Numbers(dropped),
        });
        notes
    }
}

pub(crate) use convert::minimise_over_order;
