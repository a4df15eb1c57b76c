//! The Rényi-DP accountant (Mironov 2017) over a configurable grid of orders.

mod convert;
mod curves;
mod poisson;
mod quadrature;
mod without_replacement;

pub use convert::{Conversion, RdpEpsilon};
pub use curves::objpert_rdp;

use crate::accountant::Accountant;
use crate::error::{Error, Result, ensure, non_negative, open_unit};
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;

/// dp_accounting's default orders: 1.1, 1.2, …, 10.9, 11, 12, …, 63, 128, 256, 512, 1024.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    v.extend((11..64).map(f64::from));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

/// Rényi-DP accountant: RDP curves add order by order; (ε, δ) by the best of three
/// conversions (MATH §3).
///
/// # Privacy
/// Every order's value is an upper bound on the composition's Rényi divergence (per-mechanism
/// sources on [`Mechanism`]'s constructors: Mironov 2017 for Gaussian and Laplace, Mironov,
/// Talwar & Zhang 2019 for Poisson subsampling, Wang, Balle & Kasiviswanathan 2019 for
/// sampling without replacement, paper 001 Thm 3.2 for objective perturbation). An order
/// whose value cannot be computed (a series that does not converge, overflow) is set to +∞ —
/// skipping an order keeps the minimum an upper bound — and listed in
/// [`RdpAccountant::failed_orders`].
#[derive(Debug, Clone)]
pub struct RdpAccountant {
    rel: Neighbouring,
    orders: Vec<f64>,
    rdp: Vec<f64>,
    failed: Vec<(f64, String)>,
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
            failed: Vec::new(),
        }
    }

    /// An empty accountant on the given orders (each finite and > 1; fractional allowed).
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
            failed: Vec::new(),
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

    /// The same accountant with another composed curve (same orders and relation).
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
            failed: self.failed.clone(),
        })
    }

    /// Orders dropped from the minimisation, with the reason.
    pub fn failed_orders(&self) -> &[(f64, String)] {
        &self.failed
    }

    /// ε(δ) with the order and conversion that attain it.
    ///
    /// # Privacy
    /// The minimum over orders of the classic (Mironov 2017, Prop. 3), CKS20 (Canonne,
    /// Kamath & Steinke 2020) and Asoodeh et al. 2021 (Lemma 1) conversions: each is an
    /// upper bound, so is their minimum. Rounded up.
    ///
    /// # Errors
    /// δ ∉ (0, 1), or no order finite.
    pub fn epsilon_at_best_order(&self, delta: f64) -> Result<RdpEpsilon> {
        open_unit("delta", delta)?;
        convert::best_epsilon(&self.orders, &self.rdp, delta)
    }

    /// ε(δ) by a single conversion (for comparisons with peers that use only one).
    ///
    /// # Privacy
    /// As [`RdpAccountant::epsilon_at_best_order`], restricted to `conversion`.
    ///
    /// # Errors
    /// As [`RdpAccountant::epsilon_at_best_order`].
    pub fn epsilon_with(&self, delta: f64, conversion: Conversion) -> Result<f64> {
        open_unit("delta", delta)?;
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
            Err(Error::OutOfRange("no RDP order has a finite value".into()))
        }
    }
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
        let c = count as f64;
        for (a, r) in self.orders.iter().zip(self.rdp.iter_mut()) {
            match curves::rdp(mechanism, self.rel, *a) {
                Ok(v) if count > 0 => *r += c * v,
                Ok(_) => {}
                Err(why) => {
                    *r = f64::INFINITY;
                    self.failed.push((*a, why));
                }
            }
        }
        Ok(())
    }

    /// # Privacy
    /// See [`RdpAccountant::epsilon_at_best_order`].
    fn epsilon(&self, delta: f64) -> Result<f64> {
        Ok(self.epsilon_at_best_order(delta)?.epsilon)
    }

    /// # Privacy
    /// The minimum over orders and the three conversions of their δ(ε) (MATH §3), rounded up.
    fn delta(&self, epsilon: f64) -> Result<f64> {
        non_negative("epsilon", epsilon)?;
        Ok(convert::best_delta(&self.orders, &self.rdp, epsilon))
    }
}

pub(crate) use convert::minimise_over_order;
