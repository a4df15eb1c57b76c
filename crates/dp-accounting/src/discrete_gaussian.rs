//! Gaussian noise released as a **discrete** Gaussian on a grid, priced by accountants that
//! know only the continuous Gaussian's privacy profile (PLD, exact).
//!
//! The grid-safe release of `dp-optim` outputs `γ·(m + K)` with `m = round(f(x)/γ) ∈ ℤ^d`
//! and `K ~ N_ℤ(0, s²)^d` (pmf `∝ e^{−k²/(2s²)}` per coordinate, `s ≥ 1` in grid units). A
//! [`Mechanism`] carrying a [`GridGaussian`] (see [`Mechanism::with_grid`]) says: "my
//! Gaussian noise is released this way, with `d` coordinates of parameter at least `s`".
//! The PLD and exact accountants price such a mechanism as its continuous counterpart and
//! add the adjustment below; RDP and zCDP price it as before (the discrete Gaussian's Rényi
//! divergences are at most the continuous ones: Canonne, Kamath & Steinke, "The discrete
//! Gaussian for differential privacy", NeurIPS 2020, §2; `dp-optim`'s noise module docs).
//!
//! # Privacy
//! **Comparison mechanism.** Replace every `K` by `R = round(Z)`, `Z ~ N(0, s²)`. Since `m`
//! is an integer vector, `m + round(Z) = round(m + Z)` (ties have probability 0): the
//! comparison is post-processing of the *continuous* Gaussian mechanism on the rounded query
//! `γ·m`, whose sensitivity the ledger states (`Δ + slack`), with noise at least the
//! recorded one. So the comparison composition `M'` has the privacy profile `δ'(ε')` the
//! accountant computes for the continuous mechanisms.
//!
//! **One coordinate.** `p_R(k) = ∫_{k−½}^{k+½} φ_s = e^{−k²/(2s²)} I(k)/(√(2π)s)` with
//! `I(k) = ∫_{−½}^{½} e^{−(2kt+t²)/(2s²)} dt = ∫_{−½}^{½} cosh(kt/s²) e^{−t²/(2s²)} dt`, and by
//! Poisson summation `Σ_j e^{−j²/(2s²)} = √(2π)s·(1 + θ)`, `θ = 2Σ_{m≥1} e^{−2π²s²m²}`. So
//! `p_K(k)/p_R(k) = 1/((1+θ)·I(k))`, and
//! * `I(k) ≥ I(0) ≥ ∫(1 − t²/(2s²)) dt = 1 − 1/(24s²)` (`cosh ≥ 1`, `e^{−u} ≥ 1 − u`), so
//!   `p_K(k) ≤ e^{a₊} p_R(k)` for **every** `k`, `a₊ = −ln(1 − 1/(24s²))`;
//! * `I(k) ≤ ∫ cosh(kt/s²) dt = sinh(x)/x ≤ e^{x²/6}` with `x = k/(2s²)` (compare the power
//!   series: `(2n+1)! ≥ 6ⁿn!`), so for `|k| ≤ cs`, `p_R(k) ≤ e^{a₋(c)} p_K(k)` with
//!   `a₋(c) = ln(1+θ) + c²/(24s²)`, and `θ ≤ 2e^{−2π²s²}/(1 − e^{−2π²s²})`;
//! * `P(|R| > cs) ≤ P(|Z| > cs − ½) ≤ e^{−(c − 1/(2s))²/2}` (`P(|N(0,1)| > u) ≤ e^{−u²/2}`,
//!   the Chernoff bound, for `u ≥ 0`).
//!
//! All three decrease in `s`, so a lower bound on `s` gives upper bounds.
//!
//! **Composition.** Fix the internal randomness `ω` of everything else (batches, other
//! mechanisms' noise). Each output is `m_t(ω, earlier outputs) + noise_t`, so the whole
//! output is an injective function `Φ_ω` of the tuple of grid-noise coordinates, the same
//! function for the real and the comparison mechanism, and the tuple's coordinates are
//! independent. With `N = Σ count·d` coordinates, `A₊ = Σ count·d·a₊`, `A₋(c) = Σ
//! count·d·a₋(c)` and `β(c) = N·e^{−(c − 1/(2s_min))²/2}` (union bound), for every set `S`
//! and input `x`: `P_x(S) ≤ e^{A₊} P'_x(S)` and `P'_x(S) ≤ e^{A₋(c)} P_x(S) + β(c)`
//! (integrate the pointwise ratio bounds over `Φ_ω^{−1}(S)`, then over `ω`). For
//! neighbours `x, x'` in either order, under add/remove or replace-one alike,
//! `P_x(S) − e^{ε'+A₊+A₋}P_{x'}(S) ≤ e^{A₊}P'_x(S) − e^{ε'+A₊}(P'_{x'}(S) − β)`, so
//!
//! > `δ(ε' + A₊ + A₋(c)) ≤ e^{A₊}·(δ'(ε') + e^{ε'}β(c))` for every `ε' ≥ 0` and `c ≥ 1/(2s_min)`.
//!
//! The mechanisms' noise parameters must be fixed in advance (the means may be adaptive).
//!
//! **Objective perturbation.** The comparison needs no post-processing structure: the
//! pointwise bounds hold for any output that is a function of the integer noise vector (and
//! of independent randomness `ω`), injective or not. `dp-glm`'s objective perturbation and
//! AMP draw their linear term `b = γ_b·K`, `K ~ N_ℤ(0, s_b²)^d`, solve to a certified
//! `‖∇J_b(θ̃)‖ ≤ τ` and release `θ̃` through a grid Gaussian. In the comparison mechanism
//! `b = γ_b·round(Z/γ_b)` with `Z ~ N(0, (γ_b s_b)²I)`; the objective is `λ`-strongly convex, so
//! `b ↦ θ*(b)` is `1/λ`-Lipschitz and `‖θ̃ − θ*(Z)‖ ≤ τ/λ + ‖γ_b round(Z/γ_b) − Z‖/λ ≤
//! (τ + γ_b√d/2)/λ`. That comparison mechanism is exactly paper 001's Thm 4.1 (Redberg,
//! Koskela & Wang, "Improving the privacy and practicality of objective perturbation for
//! differentially private linear learners"; AMP of Iyengar et al. 2019) with the exact
//! minimiser `θ*(Z)` of a real-valued Gaussian `b` and the tolerance `τ + γ_b√d/2`: the
//! objective-perturbation release (Thm 3.1/3.2) composed with a Gaussian of sensitivity
//! `(2τ + γ_b√d)/λ` (plus the output grid's rounding slack). Its `δ'(ε')` is what any of the
//! PLD, exact or RDP accountants computes for those entries, and the adjustment above turns
//! it into the real mechanism's with the `b` coordinates counted in `N`. Such a mechanism
//! carries its grid like a Gaussian release; the RDP accountant adjusts it too
//! ([`GridAdjusted::renyi`]), since its Rényi curve is the comparison mechanism's only.
//!
//! **How the accountants use it** ([`GridComposition`]). For ε(δ): ask the continuous
//! accountant at `δ₁ = δ(1 − η)e^{−A₊}` (η = [`TAIL_SHARE`]) for `ε'`, choose the smallest `c`
//! with `e^{A₊+ε'}β(c) ≤ ηδ`, and answer `ε' + A₊ + A₋(c)`. For δ(ε): choose `c` from the
//! continuous `δ'(ε)`, answer `e^{A₊}(δ'(ε') + e^{ε'}β(c))` at `ε' = ε − A₊ − A₋(c)` (1 if that
//! is negative). At the default grid (`s ≥ 2^24`) the adjustment is of order
//! `N·c²/(24s²)`: `≈ 10^{-8}` for 10⁶ coordinates.

use std::cell::Cell;

use crate::accountant::{Accountant, Note, NoteValue};
use crate::error::{Error, Result, ensure, non_negative, valid_delta};
use crate::mechanism::{Kind, Mechanism};
use crate::neighbouring::Neighbouring;
use crate::special::worse;

/// The share `η` of the target δ given to the tail event `|R| > cs` (module docs).
pub const TAIL_SHARE: f64 = 1.0 / 4_294_967_296.0; // 2^-32

/// How a mechanism's Gaussian noise is released: as independent discrete Gaussians of
/// parameter at least `sigma` (in grid units) on `dim` coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridGaussian {
    sigma: f64,
    dim: u64,
}

impl GridGaussian {
    /// `sigma`: a lower bound on the discrete Gaussian's parameter `s` in grid units (the
    /// standard deviation of the continuous Gaussian it stands for, divided by the grid);
    /// `dim`: the number of coordinates one application releases.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `sigma` not finite or below 1 (the grid release's
    /// variance in grid units is an integer `≥ 1`) or `dim` = 0.
    pub fn new(sigma: f64, dim: u64) -> Result<Self> {
        ensure(
            sigma.is_finite() && sigma >= 1.0,
            "grid_sigma",
            sigma,
            "must be finite and >= 1 (grid units)",
        )?;
        ensure(dim >= 1, "grid_dim", dim as f64, "must be >= 1")?;
        Ok(Self { sigma, dim })
    }

    /// The lower bound on the discrete Gaussian's parameter, in grid units.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The number of coordinates per application.
    pub fn dim(&self) -> u64 {
        self.dim
    }

    /// `a₊ = −ln(1 − 1/(24s²))` of one coordinate (module docs).
    fn up(&self) -> f64 {
        -(-1.0 / (24.0 * self.sigma * self.sigma)).ln_1p()
    }

    /// `θ`'s bound `2e^{−2π²s²}/(1 − e^{−2π²s²})`, plus `10^-300` for the underflow of `exp`.
    fn theta(&self) -> f64 {
        let e = (-2.0 * std::f64::consts::PI.powi(2) * self.sigma * self.sigma).exp();
        2.0 * e / (1.0 - e) + 1e-300
    }

    /// The coefficient `1/(24s²)` of `c²` in `a₋(c)`.
    fn curvature(&self) -> f64 {
        1.0 / (24.0 * self.sigma * self.sigma)
    }
}

impl Mechanism {
    /// This mechanism with its Gaussian noise released as the discrete Gaussian `grid`
    /// describes (`dp-optim`'s grid release). Every Gaussian noise it adds must be so
    /// released, on at most `grid.dim()` coordinates of parameter at least `grid.sigma()`.
    ///
    /// # Privacy
    /// The PLD and exact accountants add the discretisation's adjustment (module docs; the
    /// discrete Gaussian of Canonne, Kamath & Steinke, "The discrete Gaussian for differential
    /// privacy", NeurIPS 2020, compared with the rounded continuous Gaussian); RDP and zCDP
    /// price it as the continuous mechanism (CKS 2020, §2).
    pub fn with_grid(mut self, grid: GridGaussian) -> Self {
        self.grid = Some(grid);
        self
    }

    /// The discrete-Gaussian release of this mechanism's noise, if it has one.
    pub fn grid(&self) -> Option<GridGaussian> {
        self.grid
    }

    /// Errors if the mechanism is a grid release: an accountant that prices only the
    /// continuous Gaussian must be wrapped in [`GridAdjusted`] (as [`crate::AccountantKind`]
    /// builds it) to price one.
    pub(crate) fn require_continuous(&self, accountant: &'static str) -> Result<()> {
        match self.grid {
            None => Ok(()),
            Some(_) => Err(Error::Unsupported {
                accountant,
                what: format!(
                    "the {} mechanism released on a discrete Gaussian grid without its \
                     adjustment (build the accountant with AccountantKind::build)",
                    self.name()
                ),
            }),
        }
    }
}

/// The grid releases of a composition and the adjustment they need (module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridComposition {
    parts: Vec<(GridGaussian, u64)>,
}

/// `x` rounded up by a relative margin covering the float error of the sums below.
fn up_by(x: f64, terms: usize) -> f64 {
    x * (1.0 + 4.0 * (terms as f64 + 8.0) * f64::EPSILON)
}

impl GridComposition {
    /// An empty composition (no adjustment).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `count` applications of a release on `grid`. A total that would overflow `u64` is
    /// kept as a further entry (never saturated: a count cut short would under-report).
    pub fn add(&mut self, grid: GridGaussian, count: u64) {
        if count == 0 {
            return;
        }
        let merged = self
            .parts
            .iter_mut()
            .find(|(g, _)| *g == grid)
            .and_then(|(_, c)| c.checked_add(count).map(|total| *c = total));
        if merged.is_none() {
            self.parts.push((grid, count));
        }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// `Σ count·dim·f(grid)`, rounded up.
    fn sum(&self, f: impl Fn(&GridGaussian) -> f64) -> f64 {
        let s: f64 = self
            .parts
            .iter()
            .map(|(g, c)| *c as f64 * g.dim as f64 * f(g))
            .sum();
        up_by(s, self.parts.len())
    }

    /// `A₊`, rounded up.
    pub fn up(&self) -> f64 {
        self.sum(GridGaussian::up)
    }

    /// `A₋(c)`, rounded up.
    pub fn down(&self, c: f64) -> f64 {
        self.sum(|g| g.theta() + g.curvature() * c * c)
    }

    /// `1/(2 s_min)`: the tail's offset.
    fn offset(&self) -> f64 {
        let s_min = self
            .parts
            .iter()
            .map(|(g, _)| g.sigma)
            .fold(f64::INFINITY, f64::min);
        up_by(0.5 / s_min, 0)
    }

    /// `ln N`, rounded up.
    fn ln_coordinates(&self) -> f64 {
        worse(up_by(self.sum(|_| 1.0).ln(), 0), 0.0)
    }

    /// The smallest `c` (rounded up) with `ln β(c) ≤ −budget`, i.e.
    /// `(c − 1/(2s_min))² ≥ 2(ln N + budget)`.
    fn cutoff(&self, budget: f64) -> f64 {
        // A NaN budget stays NaN (a cut-off silently at the offset would shrink the adjustment).
        let need = worse(up_by(2.0 * (self.ln_coordinates() + budget), 2), 0.0);
        up_by(self.offset() + up_by(need.sqrt(), 0), 1)
    }

    /// `ln β(c) = ln N − (c − 1/(2s_min))²/2`, rounded up: a bound on the log-probability
    /// that some coordinate of the rounded Gaussians exceeds `c·s` in magnitude (module docs).
    pub fn ln_tail(&self, c: f64) -> f64 {
        let u = worse(c - self.offset(), 0.0);
        let v = self.ln_coordinates() - 0.5 * u * u * (1.0 - 4.0 * f64::EPSILON);
        v + 4.0 * f64::EPSILON * v.abs()
    }

    /// The δ at which to ask the continuous accountant for ε(δ): `δ(1 − η)e^{−A₊}`, rounded
    /// down.
    pub fn inner_delta(&self, delta: f64) -> f64 {
        if self.is_empty() {
            return delta;
        }
        delta * (1.0 - TAIL_SHARE) * (-self.up()).exp() * (1.0 - 8.0 * f64::EPSILON)
    }

    /// The adjustment added to the continuous `ε' = ε'(inner_delta(δ))`: `A₊ + A₋(c)` with the
    /// smallest `c` such that `e^{A₊+ε'}β(c) ≤ ηδ` (module docs), rounded up.
    pub fn epsilon_adjustment(&self, inner_epsilon: f64, delta: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let up = self.up();
        let budget = inner_epsilon + up - delta.ln() - TAIL_SHARE.ln();
        let c = self.cutoff(up_by(budget, 4));
        up_by(up + self.down(c), 1)
    }

    /// ε(δ) of the real composition from `inner`, the continuous accountant (module docs).
    ///
    /// # Privacy
    /// `δ(ε' + A₊ + A₋(c)) ≤ e^{A₊}(δ'(ε') + e^{ε'}β(c)) ≤ δ(1 − η) + ηδ` (module docs).
    ///
    /// # Errors
    /// Invalid δ; `inner`'s errors; a non-finite result ([`Error::Numerical`]).
    pub fn epsilon(&self, inner: &dyn Accountant, delta: f64) -> Result<f64> {
        self.epsilon_and_adjustment(inner, delta)
            .map(|(eps, _)| eps)
    }

    /// [`GridComposition::epsilon`] and the adjustment it added.
    fn epsilon_and_adjustment(&self, inner: &dyn Accountant, delta: f64) -> Result<(f64, f64)> {
        if self.is_empty() {
            return Ok((inner.epsilon(delta)?, 0.0));
        }
        valid_delta(delta)?;
        let inner_epsilon = inner.epsilon(self.inner_delta(delta))?;
        let adjustment = self.epsilon_adjustment(inner_epsilon, delta);
        Ok((finite((inner_epsilon + adjustment).next_up())?, adjustment))
    }

    /// δ(ε) of the real composition from `inner`, the continuous accountant (module docs).
    ///
    /// # Privacy
    /// `δ(ε) ≤ e^{A₊}(δ'(ε') + e^{ε'}β(c))` with `ε' = ε − A₊ − A₋(c)`; 1 (always valid) when
    /// `ε'` would be negative.
    ///
    /// # Errors
    /// Invalid ε; `inner`'s errors; a non-finite result ([`Error::Numerical`]).
    pub fn delta(&self, inner: &dyn Accountant, epsilon: f64) -> Result<f64> {
        let reference = inner.delta(epsilon)?;
        if self.is_empty() {
            return Ok(reference);
        }
        non_negative("epsilon", epsilon)?;
        let up = self.up();
        // Aim the tail at a share η of the continuous δ (at least e^-690, so that c stays
        // finite when that δ underflows); any c is valid, this one makes the tail negligible.
        let budget = epsilon + up - TAIL_SHARE.ln() - reference.max(1e-300).ln();
        let c = self.cutoff(up_by(budget, 4));
        let shifted = (epsilon - up_by(up + self.down(c), 1)).next_down();
        if shifted.is_nan() || shifted < 0.0 {
            return Ok(1.0);
        }
        let inner_delta = inner.delta(shifted)?;
        let tail = (up + shifted + self.ln_tail(c)).exp();
        let d = up_by(up.exp() * inner_delta + tail, 4).next_up();
        finite(d).map(|d| d.min(1.0))
    }
}

fn finite(x: f64) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Error::Numerical(format!(
            "the discrete-Gaussian adjustment is not finite ({x})"
        )))
    }
}

/// An accountant for the continuous Gaussian (PLD, exact) extended to grid releases: it
/// composes each mechanism's continuous counterpart into the inner accountant and adds the
/// [`GridComposition`] adjustment to every answer. [`crate::AccountantKind::build`] wraps the
/// PLD and exact accountants in it ([`GridAdjusted::new`]: every grid is adjusted) and the
/// RDP accountant ([`GridAdjusted::renyi`]: only the grids whose discrete law the Rényi curve
/// does not already cover); without grid releases its answers are the inner ones.
pub struct GridAdjusted {
    inner: Box<dyn Accountant>,
    grid: GridComposition,
    last: Cell<Option<f64>>,
    /// Whether the inner accountant prices a Gaussian or subsampled-Gaussian grid release
    /// itself (by its Rényi curve), so that only the other kinds' grids are adjusted here.
    renyi: bool,
}

impl GridAdjusted {
    /// Wraps `inner`, an accountant that prices Gaussian noise by its continuous profile.
    pub fn new(inner: Box<dyn Accountant>) -> Self {
        Self {
            inner,
            grid: GridComposition::new(),
            last: Cell::new(None),
            renyi: false,
        }
    }

    /// Wraps `inner`, an accountant that prices Gaussian noise by its Rényi curve (RDP).
    ///
    /// # Privacy
    /// A Gaussian or Poisson-subsampled Gaussian grid release keeps its grid and is priced
    /// by `inner` directly: the discrete Gaussian's Rényi divergences are at most the
    /// continuous ones (Canonne, Kamath & Steinke 2020, §2; `dp-optim`'s noise docs). Any
    /// other mechanism carrying a grid — objective perturbation or AMP with a discrete
    /// Gaussian linear term, whose Rényi curve is the continuous one only for the comparison
    /// mechanism (module docs, § Objective perturbation) — is priced as its continuous
    /// counterpart plus the module's adjustment, which holds for any accountant's `δ'(ε')`.
    pub fn renyi(inner: Box<dyn Accountant>) -> Self {
        Self {
            renyi: true,
            ..Self::new(inner)
        }
    }

    /// Whether `mechanism`'s grid is priced by the adjustment here (not by `inner` itself).
    fn adjusts(&self, mechanism: &Mechanism) -> bool {
        !(self.renyi
            && matches!(
                mechanism.kind,
                Kind::Gaussian { .. } | Kind::SubsampledGaussian { .. }
            ))
    }

    /// The grid releases composed so far.
    pub fn grid(&self) -> &GridComposition {
        &self.grid
    }
}

impl Accountant for GridAdjusted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn neighbouring(&self) -> Neighbouring {
        self.inner.neighbouring()
    }

    fn compose(&mut self, mechanism: &Mechanism, count: u64) -> Result<()> {
        match mechanism.grid {
            Some(g) if self.adjusts(mechanism) => {
                let mut continuous = mechanism.clone();
                continuous.grid = None;
                self.inner.compose(&continuous, count)?;
                self.grid.add(g, count);
                Ok(())
            }
            _ => self.inner.compose(mechanism, count),
        }
    }

    /// # Privacy
    /// [`GridComposition::epsilon`] (module docs).
    fn epsilon(&self, delta: f64) -> Result<f64> {
        let (eps, adjustment) = self
            .grid
            .epsilon_and_adjustment(self.inner.as_ref(), delta)?;
        if !self.grid.is_empty() {
            self.last.set(Some(adjustment));
        }
        Ok(eps)
    }

    /// # Privacy
    /// [`GridComposition::delta`] (module docs).
    fn delta(&self, epsilon: f64) -> Result<f64> {
        self.grid.delta(self.inner.as_ref(), epsilon)
    }

    fn epsilon_optimistic(&self, delta: f64) -> Result<Option<f64>> {
        self.inner.epsilon_optimistic(delta)
    }

    fn notes(&self) -> Vec<Note> {
        let mut notes = self.inner.notes();
        if let Some(adj) = self.last.get() {
            notes.push(Note {
                name: "discrete_gaussian_epsilon_adjustment",
                value: NoteValue::Number(adj),
            });
        }
        notes
    }
}
