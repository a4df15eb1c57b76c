//! Amplification by shuffling: Feldman, McMillan & Talwar 2021 (*Hiding among the clones*,
//! FOCS): the closed form of MATH §8 (Thm 3.1) and the tighter numerical bound (Thm 3.2),
//! both extended to (ε0, δ0)-DP local randomisers (Thm 3.8).

mod numerical;

use crate::error::{Error, Result, ensure, positive, valid_delta};
use crate::gaussian::{round_up, round_up_eps};

/// ε of the shuffled output of `n` independent ε0-DP local randomisers, at `delta`.
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, Thm 3.1 (closed form as in the authors' reference code;
/// MATH §8): for `ε0 ≤ log(n/(16 log(4/δ)))`, with `a = 8√(e^{ε0} log(4/δ))/√n` and
/// `c = 8e^{ε0}/n`, `ε = log(1 + (1 − e^{−ε0})/(1 + e^{−ε0−e})·(a + c))`,
/// `e = log(1 + a + c)`; otherwise no amplification is claimed and `ε = ε0`. Replace-one.
/// Rounded up.
///
/// # Errors
/// ε0 not positive, `n` = 0, δ ∉ [2.2e-308, 1) (`DELTA_MIN`).
pub fn shuffle_epsilon(eps0: f64, n: u64, delta: f64) -> Result<f64> {
    positive("eps0", eps0)?;
    ensure(n >= 1, "n", n as f64, "must be >= 1")?;
    valid_delta(delta)?;
    let nf = n as f64;
    let l = (4.0 / delta).ln();
    if eps0 > (nf / (16.0 * l)).ln() {
        return Ok(eps0);
    }
    let a = 8.0 * (eps0.exp() * l).sqrt() / nf.sqrt();
    let c = 8.0 * eps0.exp() / nf;
    let e = (a + c).ln_1p();
    let factor = -(-eps0).exp_m1() / (1.0 + (-eps0 - e).exp());
    Ok(round_up_eps((factor * (a + c)).ln_1p()).min(eps0))
}

/// δ of the shuffled output when each local randomiser is (ε0, δ0)-DP: the shuffle's `delta`
/// plus `(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0`, where `ε` is [`shuffle_epsilon`]'s value.
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, Thm 3.8 (as used in the authors' code and MATH §8).
///
/// # Errors
/// As [`shuffle_epsilon`], and δ0 ∉ [0, 1).
pub fn shuffle_delta(eps0: f64, delta0: f64, n: u64, delta: f64) -> Result<(f64, f64)> {
    check_delta0(delta0)?;
    let eps = shuffle_epsilon(eps0, n, delta)?;
    Ok((eps, approximate_dp_delta(eps, eps0, delta0, n, delta)))
}

fn check_delta0(delta0: f64) -> Result<()> {
    ensure(
        (0.0..1.0).contains(&delta0),
        "delta0",
        delta0,
        "must be in [0, 1)",
    )
}

/// `δ + (e^ε + 1)(1 + e^{−ε0}/2)·n·δ0`, rounded up and at most 1: Thm 3.8's price for
/// (ε0, δ0) local randomisers on top of an (ε, δ) bound for ε0-DP ones. The term is 0 when
/// δ0 = 0 (not `∞·0`, a NaN, when `e^ε` overflows), and an overflowing term gives the trivial
/// δ = 1.
fn approximate_dp_delta(eps: f64, eps0: f64, delta0: f64, n: u64, delta: f64) -> f64 {
    let term = if delta0 == 0.0 {
        0.0
    } else {
        (eps.exp() + 1.0) * (1.0 + 0.5 * (-eps0).exp()) * n as f64 * delta0
    };
    round_up(delta + term)
}

/// Which bound a [`ShuffleBound`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShuffleMethod {
    /// The numerical bound of Feldman, McMillan & Talwar 2021, Thm 3.2
    /// ([`shuffle_epsilon_numerical`]).
    Numerical,
    /// The closed form of Thm 3.1 ([`shuffle_epsilon`]).
    ClosedForm,
    /// No amplification could be shown: `ε = ε0`.
    NoAmplification,
}

impl ShuffleMethod {
    /// A short name for reports and JSON: `numerical`, `closed-form`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Numerical => "numerical",
            Self::ClosedForm => "closed-form",
            Self::NoAmplification => "none",
        }
    }
}

/// An (ε, δ) guarantee for the shuffled output and the bound that gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShuffleBound {
    /// ε, rounded up.
    pub epsilon: f64,
    /// Total δ (the shuffle's δ plus the local randomisers' δ0 term), rounded up.
    pub delta: f64,
    /// Which bound answered.
    pub method: ShuffleMethod,
}

/// ε of the shuffled output of `n` (ε0, δ0)-DP local randomisers: the smaller of the
/// numerical bound (Feldman, McMillan & Talwar 2021, Thm 3.2) and the closed form
/// ([`shuffle_epsilon`]), at the shuffle's `delta`; the returned δ adds the δ0 term.
///
/// The numerical bound is the hockey-stick divergence `δ(ε) = D_{e^ε}(P‖Q)` of the pair of
/// binomial mixtures of Thm 3.2 (`C ~ Bin(n − 1, e^{−ε0})`, `A ~ Bin(C, 1/2)`,
/// `Δ ~ Bern(e^{ε0}/(e^{ε0} + 1))`, `P = (A + Δ, C − A + 1 − Δ)`,
/// `Q = (A + 1 − Δ, C − A + Δ)`), summed in log space: `C` in buckets of consecutive
/// values, each bounded by its first value (`δ_c` does not increase with `c`, a
/// post-processing fact; one value per bucket while a work budget allows, ~650 buckets at
/// `n = 10⁸`), `C`'s tails beyond a Chernoff bound of `10⁻¹²·delta` added at their worst,
/// each inner binomial sum stopped with a geometric bound on the rest added, its float
/// error added, and a relative margin of 1e-9 on top; then ε by bisection (to a relative
/// 1e-7, returned at the feasible end). It is used for `n ≤ 10⁹` and `ε0 ≤ 40` (time is
/// then bounded: `O(√n)` work per bisection step); otherwise, or if it cannot confirm a
/// value below the closed form, the closed form answers. Measured
/// (`tests/golden_shuffle.rs`): never below and within 1e-6 (relative) of a 22-digit
/// evaluation of Thm 3.2 without truncation (n ≤ 10⁴), and 3–6× below the closed form for
/// `n` from 10⁵ to 10⁸.
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, *Hiding among the clones: a simple and nearly optimal
/// analysis of privacy amplification by shuffling* (FOCS): Thm 3.2 (numerical) and Thm 3.1
/// (closed form) for adaptive ε0-DP local randomisers applied to a uniformly shuffled
/// dataset, replace-one neighbouring (one record replaced). For (ε0, δ0)-DP randomisers
/// (δ0 > 0), Thm 3.8: `(ε, delta + (e^ε + 1)(1 + e^{−ε0}/2)·n·δ0)`. Thm 3.8 is stated with
/// Thm 3.1's ε; its proof replaces each randomiser by an ε0-DP one within total variation
/// δ0 (so the `n·δ0`-scaled term pays for the swap, whatever bound is then applied to the
/// ε0-DP randomisers) and we apply it with the numerical ε in place of Thm 3.1's, which
/// is the same argument with the tighter ε0-DP bound. With `δ0 = 0` the term vanishes. All
/// numbers rounded up.
///
/// # Errors
/// ε0 not positive, `n` = 0, δ ∉ [2.2e-308, 1) (`DELTA_MIN`), δ0 ∉ [0, 1).
pub fn shuffle_epsilon_numerical(
    eps0: f64,
    delta0: f64,
    n: u64,
    delta: f64,
) -> Result<ShuffleBound> {
    check_delta0(delta0)?;
    let closed = shuffle_epsilon(eps0, n, delta)?;
    let numerical = if n <= numerical::MAX_N && eps0 <= numerical::MAX_EPS0 {
        numerical::epsilon(eps0, n, delta, closed).map(round_up_eps)
    } else {
        None
    };
    let (epsilon, method) = match numerical {
        Some(e) if e < closed => (e, ShuffleMethod::Numerical),
        _ if closed < eps0 => (closed, ShuffleMethod::ClosedForm),
        _ => (eps0, ShuffleMethod::NoAmplification),
    };
    Ok(ShuffleBound {
        epsilon,
        delta: approximate_dp_delta(epsilon, eps0, delta0, n, delta),
        method,
    })
}

/// Lowest tail cut of [`shuffle_delta_numerical`]'s second pass (`e^-800` is below the
/// smallest positive f64, so no δ it reports depends on a lower cut).
const LN_CUT_MIN: f64 = -800.0;

/// δ at a given ε of the shuffled output of `n` (ε0, δ0)-DP local randomisers: the
/// numerical bound of Thm 3.2 at `epsilon` plus the δ0 term of Thm 3.8 (see
/// [`shuffle_epsilon_numerical`] for the method and its margins).
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, *Hiding among the clones* (FOCS), Thm 3.2 and Thm 3.8
/// as in [`shuffle_epsilon_numerical`]; replace-one; rounded up. For `ε ≥ ε0` the ε0-DP
/// part is 0.
///
/// # Errors
/// As [`shuffle_epsilon_numerical`], ε negative or not finite, and
/// [`Error::OutOfRange`] for `n > 10⁹` or `ε0 > 40` (outside the numerical bound's range;
/// use [`shuffle_epsilon_numerical`], which falls back to the closed form).
pub fn shuffle_delta_numerical(eps0: f64, delta0: f64, n: u64, epsilon: f64) -> Result<f64> {
    positive("eps0", eps0)?;
    ensure(n >= 1, "n", n as f64, "must be >= 1")?;
    check_delta0(delta0)?;
    ensure(
        epsilon.is_finite() && epsilon >= 0.0,
        "epsilon",
        epsilon,
        "must be finite and >= 0",
    )?;
    if n > numerical::MAX_N || eps0 > numerical::MAX_EPS0 {
        return Err(Error::OutOfRange(format!(
            "the numerical shuffling bound takes n <= 1e9 and eps0 <= 40 (got n = {n}, \
             eps0 = {eps0})"
        )));
    }
    if epsilon >= eps0 {
        // The ε0-DP part is 0 here (every δ_c is), with no sum to evaluate.
        return Ok(approximate_dp_delta(epsilon, eps0, delta0, n, 0.0));
    }
    // A first pass cuts C's tails at e^-60; if δ is far below that, cut again below δ (not
    // below e^-800, where δ underflows anyway: an unbounded cut would sum every c ≤ n).
    let mut ln_d = numerical::ln_delta(eps0, n, epsilon, -60.0);
    if ln_d < -30.0 {
        ln_d = numerical::ln_delta(eps0, n, epsilon, (ln_d - 28.0).max(LN_CUT_MIN));
    }
    Ok(approximate_dp_delta(epsilon, eps0, delta0, n, ln_d.exp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplifies_and_falls_back() {
        let e = shuffle_epsilon(1.0, 100_000, 1e-6).unwrap();
        assert!(e < 0.1 && e > 0.0, "{e}");
        assert_eq!(shuffle_epsilon(5.0, 100, 1e-6).unwrap(), 5.0);
        assert!(shuffle_epsilon(1.0, 1000, 1e-6).unwrap() <= 1.0);
        let (_, d) = shuffle_delta(1.0, 1e-12, 100_000, 1e-6).unwrap();
        assert!(d > 1e-6);
    }

    #[test]
    fn overflowing_terms_give_a_probability_not_nan() {
        // Fuzzing (tests/fuzz_constructors.rs): e^ε overflowed and met δ0 = 0 as ∞·0 = NaN.
        let (e, d) = shuffle_delta(8.354208572211076e90, 0.0, 1994, 1e-6).unwrap();
        assert_eq!((e, d), (8.354208572211076e90, round_up(1e-6)));
        assert_eq!(
            shuffle_delta_numerical(0.076, 0.0, 1503, 1e300).unwrap(),
            0.0
        );
        // With δ0 > 0 the Thm 3.8 term overflows: the trivial δ = 1.
        assert_eq!(
            shuffle_delta_numerical(0.5, 1e-3, 1000, 1e300).unwrap(),
            1.0
        );
        let b = shuffle_epsilon_numerical(1e200, 1e-9, 1000, 1e-6).unwrap();
        assert_eq!((b.epsilon, b.delta), (1e200, 1.0));
    }

    #[test]
    fn epsilon_at_or_above_eps0_needs_no_sum() {
        // This asked for every c ≤ n − 1 (a tail cut of e^-∞): a minute at n = 10⁹. The
        // ε0-DP part is 0 at ε ≥ ε0, leaving the δ0 term alone.
        assert_eq!(
            shuffle_delta_numerical(1.3, 0.0, 1_000_000_000, 2e179).unwrap(),
            0.0
        );
        let d = shuffle_delta_numerical(1.3, 1e-20, 1_000_000_000, 1.3).unwrap();
        let want = (1.3f64.exp() + 1.0) * (1.0 + 0.5 * (-1.3f64).exp()) * 1e9 * 1e-20;
        assert!(d >= want && d <= want * (1.0 + 1e-12), "{d} vs {want}");
    }
}
