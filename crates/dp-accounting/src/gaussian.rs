//! The analytic Gaussian mechanism: its exact privacy profile, inverse and calibration.

use crate::error::{Result, non_negative, positive, valid_delta};
use crate::search::{bisect_up, epsilon_for_delta};
use crate::special::{cap_one, tail_gap, tail_gap_lower};

/// Largest ε any inversion in this crate searches.
pub(crate) const EPS_MAX: f64 = 1e6;

/// Relative precision of ε and σ searches (results are rounded to the safe side).
pub(crate) const REL_TOL: f64 = 1e-13;

/// `δ(ε)` of a Gaussian mechanism with sensitivity-to-noise ratio `s = Δ/σ`:
/// `Φ(s/2 − ε/s) − e^ε Φ(−s/2 − ε/s)`.
///
/// For ε < 0 (where the PLD discretisation evaluates it) the reflected form
/// `(1 − e^ε) + e^ε·[Φ̄(−ε/s − s/2) − e^{−ε}Φ̄(−ε/s + s/2)]` is used: the direct form takes
/// the weight `e^ε` from `(b² − a²)/2` of its two arguments, which lose `s/2` against a huge
/// `ε/s` when `s` is tiny (`s = 1e-16`, `ε = −1e-4` gave δ = 0 instead of `1 − e^ε ≈ 1e-4`,
/// putting a Gaussian's whole mass at a negative loss), while `1 − e^ε` here is exact.
///
/// The bracket `Φ̄(m − s/2) − e^{·}Φ̄(m + s/2)` is at most `Φ̄(m − s/2)`, below the smallest
/// positive float (5e-324) once `m − s/2 > 40`: it is 0 there, and not evaluated — with a tiny
/// ratio against a large `|ε|`, `m = |ε|/s` overflows or swallows `s/2`, and `tail_gap(∞, ∞)`
/// or `tail_gap(m, m)` has no value (NaN). δ is then 0 for ε ≥ 0 and `1 − e^ε` for ε < 0.
pub(crate) fn delta_for_ratio(s: f64, eps: f64) -> f64 {
    delta_for_ratio_with(s, eps, tail_gap)
}

/// [`delta_for_ratio`] as a lower bound (the rounding allowance of the cancelling difference
/// subtracted, [`tail_gap_lower`]), for the self-checks.
pub(crate) fn delta_for_ratio_lower(s: f64, eps: f64) -> f64 {
    delta_for_ratio_with(s, eps, tail_gap_lower)
}

/// [`delta_for_ratio`] with the difference `Φ̄(a) − w·Φ̄(b)` evaluated by `gap`.
pub(crate) fn delta_for_ratio_with(s: f64, eps: f64, gap: fn(f64, f64) -> f64) -> f64 {
    let m = eps.abs() / s;
    let gap = if m - 0.5 * s > 40.0 {
        0.0
    } else {
        gap(m - 0.5 * s, m + 0.5 * s)
    };
    if eps < 0.0 {
        -eps.exp_m1() + eps.exp() * gap
    } else {
        gap
    }
}

/// Privacy profile `δ(ε)` of the Gaussian mechanism `f(D) + N(0, σ²I)` where `f` has L2
/// sensitivity `sensitivity` under the relation at hand.
///
/// # Privacy
/// Exact (tight) profile of Balle & Wang 2018 (*Improving the Gaussian mechanism for
/// differential privacy*, Thm 8), MATH §2: `δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`.
/// Evaluated with the Gaussian factors cancelled analytically, so it keeps ~1e-13 relative
/// precision down to δ = 2.2e-308 (`DELTA_MIN`, the smallest normal double; below it δ is
/// subnormal and loses precision); the result is nudged up by a few ulps.
///
/// # Errors
/// [`Error::InvalidParameter`](crate::Error::InvalidParameter) unless `sigma`, `sensitivity`
/// are finite and positive and `epsilon` is finite and ≥ 0.
pub fn gaussian_delta(sigma: f64, sensitivity: f64, epsilon: f64) -> Result<f64> {
    let s = positive("sensitivity", sensitivity)? / positive("sigma", sigma)?;
    non_negative("epsilon", epsilon)?;
    let d = delta_for_ratio(s, epsilon);
    if d.is_nan() {
        return Err(crate::Error::Numerical(format!(
            "the Gaussian profile has no value at ratio {s:e}, epsilon {epsilon:e}"
        )));
    }
    Ok(round_up_at(d, epsilon))
}

/// The smallest ε with `δ(ε) ≤ delta` for the Gaussian mechanism (inverse of
/// [`gaussian_delta`]).
///
/// # Privacy
/// Inverts the exact profile of Balle & Wang 2018, Thm 8 (MATH §2) by bisection; the returned
/// ε is the upper end of the final bracket, so `gaussian_delta(ε) ≤ delta` always holds, and
/// is then rounded up by a relative 5e-13 for the evaluation's own rounding error.
///
/// # Errors
/// Invalid parameters (δ ∉ [2.2e-308, 1) (`DELTA_MIN`), σ or sensitivity not positive) or ε beyond 1e6.
pub fn gaussian_epsilon(sigma: f64, sensitivity: f64, delta: f64) -> Result<f64> {
    let s = positive("sensitivity", sensitivity)? / positive("sigma", sigma)?;
    valid_delta(delta)?;
    Ok(round_up_eps(epsilon_for_ratio(s, delta)?))
}

/// ε(δ) for ratio `s = Δ/σ`.
pub(crate) fn epsilon_for_ratio(s: f64, delta: f64) -> Result<f64> {
    epsilon_for_delta(delta, EPS_MAX, REL_TOL, |e| Ok(delta_for_ratio(s, e)))
}

/// The smallest noise standard deviation σ for which the Gaussian mechanism with the given L2
/// sensitivity is (ε, δ)-DP (the analytic Gaussian mechanism).
///
/// # Privacy
/// Balle & Wang 2018, Thm 8 (MATH §2): σ is found by bisection on the exact profile and the
/// returned value is the feasible end of the final bracket: `gaussian_delta(σ, Δ, ε) ≤ δ`.
///
/// # Errors
/// Invalid parameters: ε must be finite and > 0, δ ∈ [2.2e-308, 1) (`DELTA_MIN`), sensitivity > 0.
pub fn gaussian_sigma(epsilon: f64, delta: f64, sensitivity: f64) -> Result<f64> {
    positive("epsilon", epsilon)?;
    valid_delta(delta)?;
    positive("sensitivity", sensitivity)?;
    let ratio = ratio_for_target(epsilon, delta)?;
    // σ = Δ / ratio; make sure rounding of the division keeps the target.
    let mut sigma = sensitivity / ratio;
    // A few ulps at most (the division's rounding); bounded, and the result is checked.
    for _ in 0..64 {
        if delta_for_ratio(sensitivity / sigma, epsilon) <= delta {
            break;
        }
        sigma = sigma.next_up();
    }
    if !(sigma.is_finite() && sigma > 0.0 && delta_for_ratio(sensitivity / sigma, epsilon) <= delta)
    {
        return Err(crate::Error::Calibration(format!(
            "no representable Gaussian noise verifies ({epsilon}, {delta:e})-DP for sensitivity \
             {sensitivity:e} (sigma would be {sigma:e})"
        )));
    }
    Ok(sigma)
}

/// The largest sensitivity-to-noise ratio `s = Δ/σ` with `δ_s(ε) ≤ δ`.
pub(crate) fn ratio_for_target(epsilon: f64, delta: f64) -> Result<f64> {
    // δ grows with s. Search σ' = 1/s geometrically for the smallest feasible noise.
    let feasible = |inv: f64| Ok(delta_for_ratio(1.0 / inv, epsilon) <= delta);
    let mut lo = 1.0;
    while feasible(lo)? {
        if lo < 1e-12 {
            // Verified feasible: the noise may be this small (relative to the sensitivity).
            return Ok(1.0 / lo);
        }
        lo *= 0.5;
    }
    let mut hi = 2.0 * lo;
    while !feasible(hi)? {
        hi *= 2.0;
        if hi > 1e12 {
            return Err(crate::Error::Calibration(format!(
                "no Gaussian noise up to 1e12 x sensitivity gives ({epsilon}, {delta:e})-DP"
            )));
        }
    }
    Ok(1.0 / bisect_up(lo, hi, REL_TOL, true, feasible)?)
}

/// Relative margin added to every closed-form privacy number: covers the floating-point error
/// of the evaluations (measured ≤ ~2e-14 against 50-digit references, tests/golden_*).
pub(crate) const ROUNDING_MARGIN: f64 = 5e-13;

/// Rounds a probability up by [`ROUNDING_MARGIN`] (never above 1): the last guard against
/// reporting a δ a rounding error below the true one.
pub(crate) fn round_up(delta: f64) -> f64 {
    if delta <= 0.0 {
        return 0.0;
    }
    cap_one(delta * (1.0 + ROUNDING_MARGIN))
}

/// Rounds a δ(ε) up by [`ROUNDING_MARGIN`] plus `8u·(ε + |ln δ|)`: the profiles evaluate
/// `exp` of arguments of that size (`e^ε`, and Gaussian factors `e^{−a²/2} ≈ δ`), whose
/// relative error grows with them (measured: 1.4e-10 at ε ≈ 5e5).
pub(crate) fn round_up_at(delta: f64, epsilon: f64) -> f64 {
    if delta <= 0.0 {
        return 0.0;
    }
    let size = epsilon.abs() + delta.ln().abs();
    cap_one(delta * (1.0 + ROUNDING_MARGIN + 8.0 * f64::EPSILON * size))
}

/// Rounds an ε up by [`ROUNDING_MARGIN`].
pub(crate) fn round_up_eps(eps: f64) -> f64 {
    if eps <= 0.0 {
        0.0
    } else {
        eps * (1.0 + ROUNDING_MARGIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_known_values() {
        // σ = 1, Δ = 1, ε = 1: Φ(-0.5) − e Φ(-1.5), computed with mpmath.
        let d = gaussian_delta(1.0, 1.0, 1.0).unwrap();
        assert!((d / 0.126_936_737_506_643_95 - 1.0).abs() < 1e-12, "{d}");
        // MATH §5: σ = 1, T = 1, δ = 1e-5 under replace-one (Δ = 2) gives ε ≈ 10.0.
        let e = gaussian_epsilon(1.0, 2.0, 1e-5).unwrap();
        assert!((e - 10.0).abs() < 0.1, "{e}");
    }

    #[test]
    fn calibration_is_on_the_safe_side_and_tight() {
        for &(eps, delta) in &[(0.1, 1e-5), (1.0, 1e-5), (8.0, 1e-10), (1.0, 1e-50)] {
            let s = gaussian_sigma(eps, delta, 1.0).unwrap();
            assert!(gaussian_delta(s, 1.0, eps).unwrap() <= delta * (1.0 + 1e-12));
            assert!(delta_for_ratio(1.0 / (s * (1.0 - 1e-9)), eps) > delta);
        }
    }

    #[test]
    fn an_overflowing_epsilon_over_ratio_is_the_limit_not_nan() {
        // Fuzzing (tests/fuzz_constructors.rs): ε/s = ∞ gave tail_gap(∞, ∞) = NaN, and
        // objpert_delta returned it.
        let s = 9.18e-286;
        assert_eq!(delta_for_ratio(s, 2.36e276), 0.0);
        assert_eq!(delta_for_ratio(s, -1e300), 1.0);
        assert_eq!(delta_for_ratio(s, -1e-6), -(-1e-6f64).exp_m1());
        assert_eq!(gaussian_delta(1e300, 1e-10, 1e300).unwrap(), 0.0);
        let p = crate::ObjPertParams::new(5.4439578290451766e284, 3.4e-68, 7.8e-255, 0.5).unwrap();
        assert_eq!(
            crate::objpert_delta(&p, 2.3636695014906106e276).unwrap(),
            0.0
        );
    }

    #[test]
    fn invalid_inputs_are_errors() {
        assert!(gaussian_delta(0.0, 1.0, 1.0).is_err());
        assert!(gaussian_delta(f64::NAN, 1.0, 1.0).is_err());
        assert!(gaussian_delta(1.0, 1.0, -1.0).is_err());
        assert!(gaussian_epsilon(1.0, 1.0, 1.0).is_err());
        assert!(gaussian_sigma(0.0, 1e-5, 1.0).is_err());
    }
}
