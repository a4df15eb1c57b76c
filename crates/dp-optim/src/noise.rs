//! Noise samplers writing into caller-owned buffers.
//!
//! * Gaussian `N(0, s²I)` and Laplace `Lap(b)` are **released on a grid** (see below): each
//!   coordinate is `γ·K` with `K` an exact discrete Gaussian `N_ℤ(0, (s/γ)²)` or discrete
//!   Laplace draw ([`discrete`]), and [`Noise::add_to`] first rounds the value it perturbs to
//!   the same grid.
//! * Gamma ball (paper 000, §6 and App. E): density `∝ exp(−‖z‖/s)` on `R^d`. In polar
//!   coordinates the density of the radius is `∝ r^{d−1} e^{−r/s}`, so `z = R · U` with `U`
//!   uniform on the unit sphere (a normalised standard Gaussian vector) and
//!   `R ~ Gamma(shape d, scale s)` (`rand_distr`'s [`rand_distr::Gamma`], Marsaglia–Tsang).
//!   This one is still floating-point noise (no exact sampler on a grid is known: the
//!   lattice law `∝ e^{−‖k‖₂/t}` would be pure DP with the rounding slack, but rejection from
//!   a product law accepts with probability `e^{−Θ(d)}`); it is only used inside DP-SGD with
//!   the Gamma-ball option, is **not** covered by the grid argument, and `dp-glm` refuses it
//!   for a release (`DpSgd::allow_float_noise` opts in for experiments, and the report then
//!   says the model is not a private release).
//!
//! # Internal noise of the iterative solvers
//! The noisy solvers (DP-SGD, DP-GD, …) add their Gaussian noise to each clipped sum through
//! the exact release of the `exact` module ([`crate::SumRelease`]): the clipped terms are
//! quantised on this module's grid with their norm bound enforced on the integers and summed
//! exactly, and the value that leaves the noise step is a grid point whose law is the exact
//! discrete Gaussian shifted by that integer sum. Every later operation — scaling by
//! the expected batch, the update rule, projections, averaging, all in `f64` — reads only
//! these grid values and public settings, so it is post-processing, which holds for any
//! function, floating-point arithmetic included: the iterates and the released model are
//! private as computed without noise of their own. The cost, measured by `dp-glm`'s
//! `noise_cost` example: ≈ 0.3 µs per coordinate against ≈ 3–5 ns for a Ziggurat draw, i.e.
//! about 2% of a DP-SGD fit (91,416 draws, 1.66 s) on `n = 45,000`, `d = 104`.
//!
//! Samplers take the generator explicitly. For real releases pass a CSPRNG
//! ([`crate::secure_rng`]).
//!
//! # Why a grid
//! Adding `s·Z` with `Z` a floating-point "Gaussian" (e.g. a Ziggurat draw) to a value `f(x)` in
//! `f64` is not the Gaussian mechanism: the set of doubles the sum can take depends on `f(x)`
//! through its low-order bits, so an output can be possible under one input and impossible
//! under its neighbour (ε = ∞ with a δ of a few percent per coordinate; Mironov, "On
//! significance of the least significant bits for differential privacy", CCS 2012). The grid
//! release closes this: with `γ` a power of two, `v ↦ γ·round(v/γ)` and `K ↦ γ·K` are exact in
//! `f64` while `|v|/γ < 2^52` (checked; an error otherwise), so the output is exactly
//! `γ·(round(f(x)/γ) + K)` — a value on the grid `γℤ`, each of whose points has positive
//! probability under every input.
//!
//! The grid is the power of two with `s/γ ∈ [2^24, 2^25)` ([`Noise::grid`]).
//!
//! # Privacy
//! Let `μ = round(f(x)/γ) − round(f(x')/γ) ∈ ℤ^d`. Deterministic rounding moves each coordinate
//! by at most `γ/2`, so `γ‖μ‖₂ ≤ ‖f(x) − f(x')‖₂ + γ√d` and `γ‖μ‖₁ ≤ ‖f(x) − f(x')‖₁ + γd`
//! (triangle inequality). [`Noise::rounding_slack`] returns `γ√d` (Gaussian) or `γd`
//! (Laplace): callers state the mechanism with sensitivity `Δ + slack`.
//!
//! * **Discrete Gaussian.** For independent coordinates `N_ℤ(0, σ_g²)` and an integer shift
//!   `μ`, the Rényi divergence of every order `α > 1` is at most `α‖μ‖²/(2σ_g²)` (Canonne,
//!   Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020, §2:
//!   ρ-zCDP with `ρ = ‖μ‖²/(2σ_g²)`; the one-line proof: completing the square,
//!   `Σ_x p(x−μ)^α p(x)^{1−α} = e^{α(α−1)‖μ‖²/(2σ_g²)} · Σ_x e^{−‖x−αμ‖²/(2σ_g²)}/Z` and a
//!   shifted Gaussian sum over `ℤ^d` is at most the centred one, `Z`). This is exactly the
//!   Rényi curve of the continuous Gaussian mechanism `Mechanism::gaussian(σ, Δ + slack)`
//!   (grid units cancel), so that ledger entry is a valid bound **for accountants that price
//!   a Gaussian entry through its Rényi curve** (RDP, zCDP), for every order. The noise is
//!   drawn exactly from `N_ℤ(0, p)` by [`discrete::TableGaussian`] (rejection from a table of
//!   boxes whose every comparison with `e^{−x}` is decided exactly).
//! * **Subsampled.** The sub-Gaussian moment bound `E[e^{⟨λ,X⟩}] ≤ e^{σ_g²‖λ‖²/2}` of the
//!   discrete Gaussian (CKS §2; the theorem number was not re-checked — the paper is not in the
//!   project's sources) makes each term of the binomial expansion of
//!   `D_α((1−q)N_ℤ + qN_ℤ(μ) ‖ N_ℤ)` at **integer** `α` at most the continuous one. The other
//!   direction and fractional orders are not covered by this argument.
//! * **PLD / exact accountants.** They evaluate the *continuous* Gaussian's privacy-loss
//!   distribution, so the ledger's mechanism carries the release's
//!   [`GridRelease::discrete_gaussian`] (its parameter in grid units and dimension) and these
//!   accountants add an adjustment ([`dp_accounting::discrete_gaussian`]). The theorem: the
//!   comparison release `m + round(Z)`, `Z ~ N(0, σ_g²I)`, is post-processing of the
//!   continuous Gaussian mechanism with the ledger's sensitivity, so it has the profile
//!   `δ'(ε')` the accountant computes; per coordinate `p_K(k) ≤ e^{a₊}p_{round Z}(k)` for
//!   every `k` and `p_{round Z}(k) ≤ e^{a₋(c)}p_K(k)` for `|k| ≤ cσ_g`, with
//!   `a₊ = −ln(1 − 1/(24σ_g²))` and `a₋(c) = ln(1+θ) + c²/(24σ_g²)`, `θ ≤ 3e^{−2π²σ_g²}`
//!   (Poisson summation for the lattice sum, `sinh x/x ≤ e^{x²/6}`), and
//!   `P(|round Z| > cσ_g) ≤ e^{−(c−1/(2σ_g))²/2}`. Over the `N` noise coordinates of the
//!   whole (adaptive) composition this gives, for every `c` and every relation,
//!   `δ(ε' + A₊ + A₋(c)) ≤ e^{A₊}(δ'(ε') + e^{ε'}·N·e^{−(c−1/(2σ_g))²/2})` with `A± = N·a±`.
//!   The bounds are checked against 60-digit mpmath values from `σ_g = 1` (the smallest a
//!   coarsened grid can give: the variance in grid units is an integer `≥ 1`) to `2^25`
//!   (dp-accounting's `tests/fixtures/generate_discrete_gaussian.py`). At the default grid
//!   (`σ_g ≥ 2^24`) the ε adjustment is `≈ 1.5·10^-8` for DP-SGD with `q = 0.004`, `σ = 1`,
//!   `T = 10⁴`, `d = 100` (ε = 2.18226 at δ = 1e-5); on a grid coarsened to `σ_g` near 1
//!   it is of order `N/σ_g²` and can be large — it is always in the ledger's ε.
//! * **Discrete Laplace** with integer scale `t ≥ s/γ` (the scale in grid units rounded up):
//!   `p(k)/p(k + m) ≤ e^{|m|/t}` for every integer `m`, so an integer shift of L1 norm
//!   `‖μ‖₁` is `(‖μ‖₁/t)`-DP, at most `(Δ₁ + slack)/s` — pure DP as for `Lap(s)` with
//!   sensitivity `Δ₁ + slack` (the geometric mechanism of Ghosh, Roughgarden & Sundararajan,
//!   "Universally utility-maximizing privacy mechanisms", 2009; sampled by CKS Alg. 2). The
//!   ledger entries built from it are pure-DP ones, valid for every accountant.
//! * The discrete Gaussian's variance is `p = ⌈σ_g²⌉` grid units² (on the default grid
//!   `σ_g² ≥ 2^48`, so at most a relative `2^-48` above the requested one; on a grid coarsened
//!   for a value bound it can be much more): more noise than stated, never less.

pub mod discrete;
pub mod tally;

use dp_accounting::GridGaussian;
use ndarray::{ArrayViewMut1, Zip};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result, positive};

/// Grid resolution: the noise scale in grid units lies in `[2^GRID_BITS, 2^(GRID_BITS+1))`.
pub const GRID_BITS: i32 = 24;

/// The exact law of one coordinate in grid units.
#[derive(Debug, Clone, PartialEq)]
enum GridLaw {
    /// `N_ℤ(0, p)`, with its sampler's table computed once.
    Gaussian {
        p: u128,
        sampler: discrete::TableGaussian,
    },
    /// Discrete Laplace of integer scale `t`.
    Laplace { t: u128 },
}

/// A Gaussian or Laplace [`Noise`] placed on a grid `γ` (a power of two): the grid-safe
/// release `v ↦ γ·(round(v/γ) + K)` of the module docs. Built by [`Noise::on_grid`].
#[derive(Debug, Clone, PartialEq)]
pub struct GridRelease {
    gamma: f64,
    law: GridLaw,
    l2: bool,
}

impl GridRelease {
    /// The grid `γ`.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The extra sensitivity rounding a `dim`-dimensional value to the grid can cause:
    /// `γ√dim` (L2, Gaussian) or `γ·dim` (L1, Laplace), rounded up (module docs, § Privacy).
    pub fn slack(&self, dim: usize) -> f64 {
        let d = dim as f64;
        let raw = if self.l2 {
            self.gamma * d.sqrt()
        } else {
            self.gamma * d
        };
        // A few relative ulps up cover the rounding of `sqrt`, the product and `as f64`.
        raw * (1.0 + 4.0 * f64::EPSILON)
    }

    /// How the accountants should see this release on `dim` coordinates (at least 1): the
    /// discrete Gaussian's parameter in grid units, `√p ≥ s/γ` rounded down (at least 1), and
    /// the dimension. Attach it to the ledger's mechanism with
    /// [`Mechanism::with_grid`](dp_accounting::Mechanism::with_grid).
    ///
    /// # Privacy
    /// With it the PLD and exact accountants add the discretisation's adjustment
    /// ([`dp_accounting::discrete_gaussian`]: the discrete Gaussian of Canonne, Kamath &
    /// Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020, against the
    /// rounded continuous Gaussian); module docs, § Privacy.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a Laplace release.
    pub fn discrete_gaussian(&self, dim: usize) -> Result<GridGaussian> {
        match self.law {
            GridLaw::Gaussian { p, .. } => {
                // p ≤ 2^50 is exact in f64; one relative ulp down covers the square root's
                // rounding, and √p ≥ 1 since p ≥ 1.
                let s = ((p as f64).sqrt() * (1.0 - f64::EPSILON)).max(1.0);
                Ok(GridGaussian::new(s, dim.max(1) as u64)?)
            }
            GridLaw::Laplace { .. } => Err(Error::Unsupported(
                "a discrete Laplace release is pure DP, not a discrete Gaussian",
            )),
        }
    }

    /// One coordinate's noise in grid units.
    pub(crate) fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i128> {
        match &self.law {
            GridLaw::Gaussian { sampler, .. } => sampler.sample(rng),
            GridLaw::Laplace { t } => discrete::discrete_laplace(rng, *t),
        }
    }

    /// `out ← γ·(round(out/γ) + K)` coordinate-wise (`round` half away from zero), exact in
    /// `f64`, for the release `label` (its event's label, counted by [`tally`]).
    ///
    /// # Privacy
    /// State the release with sensitivity `Δ + `[`GridRelease::slack`] and attach
    /// [`GridRelease::discrete_gaussian`] to a Gaussian release's mechanism; the module docs
    /// give the argument for each accountant (Canonne, Kamath & Steinke 2020).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when a value is not finite or `|v|/γ ≥ 2^52` (coordinates
    /// before it are already perturbed: the caller must discard `out`).
    pub fn add_to<R: Rng + ?Sized>(
        &self,
        label: &str,
        rng: &mut R,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        tally::count(label);
        out.iter_mut().try_for_each(|v| self.perturb(rng, v))
    }

    /// One coordinate of [`GridRelease::add_to`].
    fn perturb<R: Rng + ?Sized>(&self, rng: &mut R, v: &mut f64) -> Result<()> {
        const LIMIT: f64 = 4_503_599_627_370_496.0; // 2^52
        let off_grid = |value: f64| Error::InvalidParameter {
            name: "released value",
            value,
            reason: "must be finite with |value|/grid < 2^52 to be rounded exactly",
        };
        let r = (*v / self.gamma).round();
        if !r.is_finite() || r.abs() >= LIMIT {
            return Err(off_grid(*v));
        }
        let total = r as i128 + self.draw(rng)?;
        if total.unsigned_abs() >= 1u128 << 53 {
            return Err(off_grid(*v));
        }
        let out = total as f64 * self.gamma;
        if !out.is_finite() {
            return Err(off_grid(*v));
        }
        *v = out;
        Ok(())
    }
}

/// `⌊log₂ x⌋` for a positive normal `x` (from the exponent bits; `None` for subnormals).
fn exponent_of(x: f64) -> Option<i32> {
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    (e > -1023).then_some(e)
}

/// `⌈x²⌉` for `0 < x < 2^26`, exactly (`x = m·2^k` with a 53-bit integer `m`; at least 1).
fn ceil_square(x: f64) -> u128 {
    let bits = x.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = u128::from(bits & ((1u64 << 52) - 1));
    let (m, k) = if raw_exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u128 << 52), raw_exp - 1075)
    };
    let m2 = m * m; // < 2^106
    let shift = -2 * k; // > 0 since x < 2^26 < 2^52
    if shift >= 107 {
        1
    } else {
        m2.div_ceil(1u128 << shift).max(1)
    }
}

/// A noise law on `R^d`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Isotropic Gaussian `N(0, std² I)`.
    Gaussian {
        /// Standard deviation of each coordinate (finite, > 0).
        std: f64,
    },
    /// Independent Laplace coordinates with density `exp(−|z|/scale) / (2·scale)`.
    Laplace {
        /// Scale `b` (finite, > 0); the variance of a coordinate is `2b²`.
        scale: f64,
    },
    /// The Gamma ball of paper 000: density `∝ exp(−‖z‖/scale)`; `‖z‖ ~ Gamma(d, scale)`,
    /// direction uniform. Added to a query of L2 sensitivity `Δ` it is `(Δ/scale)`-DP.
    GammaBall {
        /// Scale `s` (finite, > 0); `E‖z‖ = d·s`.
        scale: f64,
    },
}

impl Noise {
    /// Checks the parameter.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the standard deviation or scale is not finite and
    /// positive.
    pub fn check(&self) -> Result<()> {
        match *self {
            Noise::Gaussian { std } => positive("std", std).map(drop),
            Noise::Laplace { scale } | Noise::GammaBall { scale } => {
                positive("scale", scale).map(drop)
            }
        }
    }

    /// The grid-safe release of this noise for values of magnitude at most `value_bound`
    /// (a bound that must not depend on the private data; `None` when no bound is known).
    ///
    /// The grid is the power of two `γ = 2^(⌊log₂ s⌋ − GRID_BITS)` (`s` the standard deviation
    /// or scale, so `s/γ ∈ [2^24, 2^25)`), coarsened if needed so that
    /// `value_bound/γ < 2^51` — then no value within the bound can fail the exactness check.
    /// The law in grid units is `N_ℤ(0, ⌈(s/γ)²⌉)` or the discrete Laplace of scale
    /// `⌈s/γ⌉` (at least the requested noise).
    ///
    /// # Errors
    /// As [`Noise::check`]; [`Error::Unsupported`] for the Gamma ball (not a grid release);
    /// [`Error::InvalidParameter`] for a scale below `2^-976` or above `2^984`, or a bound
    /// that is not finite and positive.
    pub fn on_grid(&self, value_bound: Option<f64>) -> Result<GridRelease> {
        self.check()?;
        let (name, s, l2) = match *self {
            Noise::Gaussian { std } => ("std", std, true),
            Noise::Laplace { scale } => ("scale", scale, false),
            Noise::GammaBall { .. } => {
                return Err(Error::Unsupported(
                    "the Gamma ball is floating-point noise, not a grid release",
                ));
            }
        };
        let out_of_range = Error::InvalidParameter {
            name,
            value: s,
            reason: "outside the range an exact grid supports (2^-976 to 2^984)",
        };
        let mut e = exponent_of(s).ok_or(out_of_range.clone())? - GRID_BITS;
        if let Some(bound) = value_bound {
            let bound = positive("value_bound", bound)?;
            // Smallest e with bound/2^e < 2^51.
            let need = exponent_of(bound).map_or(-1074, |b| b + 1) - 51;
            e = e.max(need);
        }
        // Far from the subnormal range (γ·K exact) and from overflow.
        if !(-1000..=960).contains(&e) {
            return Err(out_of_range);
        }
        let gamma = 2f64.powi(e);
        let scaled = s / gamma; // exact: a power-of-two scaling, in (0, 2^25)
        let law = if l2 {
            let p = ceil_square(scaled);
            GridLaw::Gaussian {
                p,
                sampler: discrete::TableGaussian::new(p)?,
            }
        } else {
            GridLaw::Laplace {
                t: (scaled.ceil() as u128).max(1),
            }
        };
        Ok(GridRelease { gamma, law, l2 })
    }

    /// The default grid `γ` ([`Noise::on_grid`] without a value bound).
    ///
    /// # Errors
    /// As [`Noise::on_grid`].
    pub fn grid(&self) -> Result<f64> {
        self.on_grid(None).map(|g| g.gamma)
    }

    /// The rounding slack on the default grid ([`GridRelease::slack`]).
    ///
    /// # Errors
    /// As [`Noise::on_grid`].
    pub fn rounding_slack(&self, dim: usize) -> Result<f64> {
        self.on_grid(None).map(|g| g.slack(dim))
    }

    /// Overwrites `out` with one draw (of dimension `out.len()`) for the release `label`:
    /// grid-valued `γ·K` for the Gaussian and Laplace laws.
    ///
    /// # Errors
    /// As [`Noise::check`] and [`Noise::grid`].
    pub fn sample_into<R: Rng + ?Sized>(
        &self,
        label: &str,
        rng: &mut R,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        match *self {
            Noise::GammaBall { scale } => {
                self.check()?;
                tally::count(label);
                gamma_ball_into(rng, scale, out)
            }
            _ => {
                out.fill(0.0);
                self.add_to(label, rng, out)
            }
        }
    }

    /// Adds one draw to `out` for the release `label` (its event's label, counted by
    /// [`tally`]). For the Gaussian and Laplace laws this is the grid release
    /// `out ← γ·(round(out/γ) + K)` (module docs): what a mechanism should release.
    ///
    /// # Privacy
    /// State the released mechanism with sensitivity `Δ + `[`Noise::rounding_slack`] and, for
    /// the Gaussian, attach its grid's [`GridRelease::discrete_gaussian`] (on the default grid,
    /// [`Noise::on_grid`]`(None)`); the module docs give the argument for each accountant
    /// (Canonne, Kamath & Steinke 2020).
    ///
    /// # Errors
    /// As [`Noise::check`] and [`Noise::grid`]; [`Error::InvalidParameter`] when a value of
    /// `out` is not finite or too large for the grid (`|v|/γ ≥ 2^52`).
    pub fn add_to<R: Rng + ?Sized>(
        &self,
        label: &str,
        rng: &mut R,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        if let Noise::GammaBall { scale } = *self {
            self.check()?;
            tally::count(label);
            let mut z = ndarray::Array1::zeros(out.len());
            gamma_ball_into(rng, scale, z.view_mut())?;
            Zip::from(&mut out).and(&z).for_each(|o, &v| *o += v);
            return Ok(());
        }
        self.on_grid(None)?.add_to(label, rng, out)
    }
}

/// The grid release of a value computed in `f64` — a sum of at most `n` contributions of norm
/// `≤ clip` — with noise `N(0, (σ·clip)²I)`, and the noise multiplier it is private as (the
/// private solvers' clipped sums use the exact release, [`crate::sum_multiplier`], instead):
/// `σ·clip / (clip + slack)` with `slack` its [`GridRelease::slack`] in dimension `dim`.
/// The grid is coarsened if needed so that every coordinate of the sum (`|v| ≤ n·clip`, a
/// data-independent bound) fits ([`Noise::on_grid`]). Calibrate with this multiplier (and
/// record it in the ledger) so that the rounding is accounted.
///
/// # Privacy
/// The released sum moves by at most `clip + slack` between neighbours (noise module docs,
/// § Privacy), so the release is the Gaussian mechanism of std `σ·clip` and sensitivity
/// `clip + slack`, i.e. multiplier `σ·clip/(clip + slack)`, with its noise discrete: record
/// the mechanism with the grid's [`GridRelease::discrete_gaussian`] (module docs; Canonne,
/// Kamath & Steinke 2020).
///
/// # Errors
/// [`Error::InvalidParameter`] for a multiplier or clip that is not finite and positive, or a
/// noise std outside the grid's range.
pub fn grid_multiplier(
    noise_multiplier: f64,
    clip: f64,
    n: usize,
    dim: usize,
) -> Result<(GridRelease, f64)> {
    let sigma = positive("noise_multiplier", noise_multiplier)?;
    let clip = positive("clip", clip)?;
    let std = positive("std", sigma * clip)?;
    let bound = clip * n.max(1) as f64;
    let grid = Noise::Gaussian { std }.on_grid(Some(bound))?;
    let z = std / (clip + grid.slack(dim));
    Ok((grid, z))
}

/// A grid-safe Laplace release calibrated so that a query of L1 sensitivity `sensitivity` in
/// dimension `dim` is `ε`-DP **including** the rounding: returns the release, its scale `b`
/// and the ε it achieves, `(sensitivity + slack(dim))/b ≤ epsilon`.
///
/// The scale is found by a fixed point: start from `b = sensitivity/ε`, then set
/// `b = (sensitivity + slack)/ε` with the slack of the grid of the previous (larger-or-equal)
/// scale until the grid no longer grows; the grid is monotone in `b`, so the final slack is at
/// most the one used.
///
/// # Privacy
/// The discrete Laplace mechanism on the grid (noise module docs, § Privacy): pure
/// `(sensitivity + slack)/b`-DP. For report-noisy-max over scores of sensitivity `Δ` pass
/// `sensitivity = 2Δ` and `dim = 2` (each of the two scores the argument compares moves by
/// `Δ + γ`; Dwork & Roth, "The algorithmic foundations of differential privacy", Claim 3.9,
/// whose proof holds for integer-valued noise with a fixed tie-breaking order).
///
/// # Errors
/// [`Error::InvalidParameter`] for a sensitivity or ε that is not finite and positive, a
/// scale outside the grid's range, or no fixed point within 64 rounds.
pub fn laplace_for(sensitivity: f64, epsilon: f64, dim: usize) -> Result<(GridRelease, f64, f64)> {
    let sensitivity = positive("sensitivity", sensitivity)?;
    let epsilon = positive("epsilon", epsilon)?;
    let mut slack = 0.0;
    for _ in 0..64 {
        let scale = positive("scale", (sensitivity + slack) / epsilon)?;
        let grid = Noise::Laplace { scale }.on_grid(None)?;
        let used = grid.slack(dim);
        if used <= slack {
            let achieved = (sensitivity + used) / scale;
            return Ok((grid, scale, achieved));
        }
        // Aim at the slack of twice this scale, so that the next grid is not coarser.
        slack = Noise::Laplace { scale: 2.0 * scale }
            .on_grid(None)?
            .slack(dim);
    }
    Err(Error::InvalidParameter {
        name: "sensitivity",
        value: sensitivity,
        reason: "no grid-safe Laplace scale found (rounding slack exceeds the sensitivity)",
    })
}

/// The noise multiplier of [`grid_multiplier`] and the release's
/// [`GridRelease::discrete_gaussian`] in dimension `dim`, with the accounting crate's error
/// type: what a calibration closure (`Fn(σ) -> dp_accounting::Result<Mechanism>`) needs so
/// that the calibrated mechanism is the one the solver records,
/// `Mechanism::…(z, …)?.with_grid(grid)`.
///
/// # Privacy
/// As [`grid_multiplier`] and [`GridRelease::discrete_gaussian`].
///
/// # Errors
/// As [`grid_multiplier`], as [`dp_accounting::Error::InvalidParameter`].
pub fn grid_noise_multiplier(
    noise_multiplier: f64,
    clip: f64,
    n: usize,
    dim: usize,
) -> dp_accounting::Result<(f64, GridGaussian)> {
    grid_multiplier(noise_multiplier, clip, n, dim)
        .and_then(|(grid, z)| Ok((z, grid.discrete_gaussian(dim)?)))
        .map_err(to_accounting)
}

/// This crate's error as the accounting crate's (for calibration closures).
pub(crate) fn to_accounting(e: Error) -> dp_accounting::Error {
    match e {
        Error::InvalidParameter {
            name,
            value,
            reason,
        } => dp_accounting::Error::InvalidParameter {
            name,
            value,
            reason,
        },
        Error::Accounting(e) => e,
        other => dp_accounting::Error::Numerical(other.to_string()),
    }
}

/// One `N(0, 1)` draw.
pub(crate) fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// Overwrites `out` with a Gamma-ball draw of scale `scale` (checked by the caller).
fn gamma_ball_into<R: Rng + ?Sized>(
    rng: &mut R,
    scale: f64,
    mut out: ArrayViewMut1<'_, f64>,
) -> Result<()> {
    let d = out.len();
    if d == 0 {
        return Ok(());
    }
    // Uniform direction: a standard Gaussian vector, normalised. Its norm is zero with
    // probability zero; redraw in that case (and if it underflows).
    let norm = loop {
        out.map_inplace(|v| *v = standard_normal(rng));
        let n = out.dot(&out).sqrt();
        if n > 0.0 && n.is_finite() {
            break n;
        }
    };
    let radius_law =
        rand_distr::Gamma::new(d as f64, scale).map_err(|_| Error::InvalidParameter {
            name: "scale",
            value: scale,
            reason: "must be finite and positive",
        })?;
    let radius: f64 = radius_law.sample(rng);
    out *= radius / norm;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded_rng;
    use crate::testutil::{assert_ks, assert_z, mean_var};
    use ndarray::Array1;
    use statrs::distribution::{ContinuousCDF, Gamma, Laplace, Normal};

    const N: usize = 40_000;

    #[test]
    fn rejects_bad_parameters() {
        let mut rng = seeded_rng(0);
        let mut out = Array1::zeros(3);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            for noise in [
                Noise::Gaussian { std: bad },
                Noise::Laplace { scale: bad },
                Noise::GammaBall { scale: bad },
            ] {
                assert!(matches!(
                    noise.sample_into("test", &mut rng, out.view_mut()),
                    Err(Error::InvalidParameter { .. })
                ));
                assert!(noise.add_to("test", &mut rng, out.view_mut()).is_err());
            }
        }
        // Zero-dimensional draws are empty, not errors.
        let mut empty = Array1::<f64>::zeros(0);
        Noise::GammaBall { scale: 1.0 }
            .sample_into("test", &mut rng, empty.view_mut())
            .unwrap();
    }

    /// The accountants' view of a grid release: the discrete Gaussian's parameter in grid
    /// units is a lower bound on `√p` and at least `s/γ`; on the default grid it is in
    /// `[2^24, 2^25)`; a grid coarsened for a large value bound gives a small one (never
    /// below 1); a Laplace release has none.
    #[test]
    fn discrete_gaussian_describes_the_release() {
        let std = 0.3;
        let grid = Noise::Gaussian { std }.on_grid(None).unwrap();
        let g = grid.discrete_gaussian(7).unwrap();
        assert_eq!(g.dim(), 7);
        let scaled = std / grid.gamma();
        assert!(g.sigma() >= scaled * (1.0 - 1e-15) && g.sigma() <= scaled * (1.0 + 1e-14));
        assert!((2f64.powi(24)..2f64.powi(25)).contains(&g.sigma()));
        assert_eq!(grid.discrete_gaussian(0).unwrap().dim(), 1);
        let coarse = Noise::Gaussian { std: 1e-9 }.on_grid(Some(1e6)).unwrap();
        let c = coarse.discrete_gaussian(1).unwrap().sigma();
        assert!((1.0..4.0).contains(&c), "{c}");
        let tiny = Noise::Gaussian { std: 1e-12 }.on_grid(Some(1e6)).unwrap();
        assert_eq!(tiny.discrete_gaussian(1).unwrap().sigma(), 1.0);
        let laplace = Noise::Laplace { scale: 1.0 }.on_grid(None).unwrap();
        assert!(matches!(
            laplace.discrete_gaussian(1),
            Err(Error::Unsupported(_))
        ));
    }

    /// KS (p > 1e-6) against N(0, s²), and mean/variance z-tests (|z| ≤ 5.5).
    #[test]
    fn gaussian_has_the_right_law() {
        let mut rng = seeded_rng(1);
        let s = 2.5;
        let mut z = Array1::zeros(N);
        Noise::Gaussian { std: s }
            .sample_into("test", &mut rng, z.view_mut())
            .unwrap();
        let z = z.to_vec();
        let law = Normal::new(0.0, s).unwrap();
        assert_ks(&z, |x| law.cdf(x), "gaussian");
        let (m, v) = mean_var(&z);
        assert_z(m, 0.0, s / (N as f64).sqrt(), "gaussian mean");
        // Var of the sample variance of a normal: 2σ⁴/(n−1).
        assert_z(
            v,
            s * s,
            s * s * (2.0 / (N as f64 - 1.0)).sqrt(),
            "gaussian variance",
        );
    }

    /// `add_to` adds an independent draw with the same law.
    #[test]
    fn add_to_adds() {
        let mut rng = seeded_rng(11);
        let mut z = Array1::from_elem(N, 3.0);
        Noise::Gaussian { std: 1.0 }
            .add_to("test", &mut rng, z.view_mut())
            .unwrap();
        let law = Normal::new(3.0, 1.0).unwrap();
        assert_ks(&z.to_vec(), |x| law.cdf(x), "gaussian add_to");
        let mut l = Array1::from_elem(N, -1.0);
        Noise::Laplace { scale: 0.5 }
            .add_to("test", &mut rng, l.view_mut())
            .unwrap();
        let law = Laplace::new(-1.0, 0.5).unwrap();
        assert_ks(&l.to_vec(), |x| law.cdf(x), "laplace add_to");
        let d = 5;
        let mut g = Array1::from_elem(d, 1.0);
        Noise::GammaBall { scale: 1.0 }
            .add_to("test", &mut rng, g.view_mut())
            .unwrap();
        assert!(g.iter().all(|v| v.is_finite()) && g.iter().any(|&v| v != 1.0));
    }

    /// KS against Lap(b), mean and variance `2b²`.
    #[test]
    fn laplace_has_the_right_law() {
        let mut rng = seeded_rng(2);
        let b = 0.7;
        let mut z = Array1::zeros(N);
        Noise::Laplace { scale: b }
            .sample_into("test", &mut rng, z.view_mut())
            .unwrap();
        let z = z.to_vec();
        let law = Laplace::new(0.0, b).unwrap();
        assert_ks(&z, |x| law.cdf(x), "laplace");
        let (m, v) = mean_var(&z);
        let var = 2.0 * b * b;
        assert_z(m, 0.0, (var / N as f64).sqrt(), "laplace mean");
        // Fourth central moment of Laplace: 24 b⁴; Var(s²) ≈ (μ4 − σ⁴)/n.
        let se = ((24.0 * b.powi(4) - var * var) / N as f64).sqrt();
        assert_z(v, var, se, "laplace variance");
    }

    /// Gamma ball: magnitude KS against Gamma(d, s) and `E‖z‖ = d·s`; direction uniform:
    /// every coordinate of `z/‖z‖` has mean 0 and second moment `1/d`, and the direction is
    /// independent of the magnitude (checked through the first coordinate against Beta-law
    /// moments, and the correlation of `u_1²` with `‖z‖`).
    #[test]
    fn gamma_ball_has_the_right_law() {
        let mut rng = seeded_rng(3);
        let (d, s) = (8usize, 0.6);
        let draws = 20_000;
        let mut z = Array1::zeros(d);
        let mut radii = Vec::with_capacity(draws);
        let mut sum_u = Array1::<f64>::zeros(d);
        let mut sum_u2 = Array1::<f64>::zeros(d);
        let mut u1sq = Vec::with_capacity(draws);
        for _ in 0..draws {
            Noise::GammaBall { scale: s }
                .sample_into("test", &mut rng, z.view_mut())
                .unwrap();
            let r = z.dot(&z).sqrt();
            radii.push(r);
            let u = &z / r;
            sum_u += &u;
            sum_u2 += &u.mapv(|v| v * v);
            u1sq.push(u[0] * u[0]);
        }
        let law = Gamma::new(d as f64, 1.0 / s).unwrap(); // statrs: (shape, rate)
        assert_ks(&radii, |x| law.cdf(x), "gamma-ball magnitude");
        let (mr, _) = mean_var(&radii);
        // Gamma(d, s): mean d·s, variance d·s².
        assert_z(
            mr,
            d as f64 * s,
            ((d as f64) * s * s / draws as f64).sqrt(),
            "E|z|",
        );
        // u_i has mean 0 and variance 1/d; u_i² has mean 1/d and variance
        // 2(d−1)/(d²(d+2)) (u_i² ~ Beta(1/2, (d−1)/2)).
        let df = d as f64;
        let se1 = (1.0 / df / draws as f64).sqrt();
        let se2 = (2.0 * (df - 1.0) / (df * df * (df + 2.0)) / draws as f64).sqrt();
        for i in 0..d {
            assert_z(sum_u[i] / draws as f64, 0.0, se1, "direction mean");
            assert_z(
                sum_u2[i] / draws as f64,
                1.0 / df,
                se2,
                "direction second moment",
            );
        }
        // Independence of direction and magnitude: sample correlation ≈ 0 (se ≈ 1/√n).
        let (mu, vu) = mean_var(&u1sq);
        let (_, vr) = mean_var(&radii);
        let cov = u1sq
            .iter()
            .zip(&radii)
            .map(|(a, r)| (a - mu) * (r - mr))
            .sum::<f64>()
            / (draws as f64 - 1.0);
        assert_z(
            cov / (vu * vr).sqrt(),
            0.0,
            1.0 / (draws as f64).sqrt(),
            "corr",
        );
    }

    /// In dimension 1 the Gamma ball is the Laplace law: KS of the signed value.
    #[test]
    fn gamma_ball_in_one_dimension_is_laplace() {
        let mut rng = seeded_rng(4);
        let s = 1.3;
        let mut z = Array1::zeros(1);
        let mut v = Vec::with_capacity(N);
        for _ in 0..N {
            Noise::GammaBall { scale: s }
                .sample_into("test", &mut rng, z.view_mut())
                .unwrap();
            v.push(z[0]);
        }
        let law = Laplace::new(0.0, s).unwrap();
        assert_ks(&v, |x| law.cdf(x), "gamma-ball d = 1");
    }
}
