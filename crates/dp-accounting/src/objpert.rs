//! Objective perturbation's privacy in closed form (paper 001), for direct use and figures.

use crate::error::{Error, Result, ensure, non_negative, positive, valid_delta};
use crate::gaussian::{EPS_MAX, REL_TOL, round_up, round_up_eps};
use crate::mechanism::ObjPertParams;
use crate::profile::Profile;
use crate::search::epsilon_for_delta;

fn profile(p: &ObjPertParams) -> Profile {
    Profile::ObjPert {
        c: p.c(),
        s: p.ratio(),
    }
}

/// δ(ε) of one objective-perturbation release.
///
/// # Privacy
/// Paper 001 (Redberg, Koskela, Wang 2023), Thm 3.1 (MATH §6): with `ε' = ε − c`,
/// `c = −log(1 − β/λ)`, `μ = L²/(2σ²)`: `2δ_Gauss(ε')` if `ε' ≥ μ`, else
/// `1 − 2e^{ε'}Φ(−L/σ)`. Add/remove relation. Rounded up.
///
/// # Errors
/// ε negative or not finite.
pub fn objpert_delta(p: &ObjPertParams, epsilon: f64) -> Result<f64> {
    non_negative("epsilon", epsilon)?;
    Ok(round_up(profile(p).delta(epsilon)))
}

/// The smallest ε with `objpert_delta(ε) ≤ delta`.
///
/// # Privacy
/// Inverts paper 001, Thm 3.1 by bisection, returning the feasible end.
///
/// # Errors
/// δ ∉ [2.2e-308, 1) (`DELTA_MIN`).
pub fn objpert_epsilon(p: &ObjPertParams, delta: f64) -> Result<f64> {
    valid_delta(delta)?;
    let pr = profile(p);
    epsilon_for_delta(delta, EPS_MAX, REL_TOL, |e| Ok(pr.delta(e)))
}

/// Kifer, Smith & Thakurta 2012's sufficient condition for objective perturbation (paper
/// 001's Thm 2.8): the smallest `(λ, σ)` with `λ ≥ 2β/ε` and
/// `σ² ≥ L²(8 log(2/δ) + 4ε)/ε²`.
///
/// # Privacy
/// With those λ and σ, one release is (ε, δ)-DP by Kifer et al. 2012, Thm 2 (as restated in
/// paper 001, Thm 2.8). Add/remove.
///
/// # Errors
/// ε, L not positive, β negative, δ ∉ [2.2e-308, 1) (`DELTA_MIN`).
pub fn kifer_parameters(epsilon: f64, delta: f64, beta: f64, lipschitz: f64) -> Result<(f64, f64)> {
    positive("epsilon", epsilon)?;
    valid_delta(delta)?;
    ensure(
        beta.is_finite() && beta >= 0.0,
        "beta",
        beta,
        "must be >= 0",
    )?;
    positive("lipschitz", lipschitz)?;
    let lambda = 2.0 * beta / epsilon;
    let sigma = lipschitz * (8.0 * (2.0 / delta).ln() + 4.0 * epsilon).sqrt() / epsilon;
    if !(lambda.is_finite() && sigma.is_finite() && sigma > 0.0) {
        return Err(Error::OutOfRange(format!(
            "Kifer et al.'s parameters overflow: lambda = {lambda:e}, sigma = {sigma:e}"
        )));
    }
    Ok((lambda, sigma.next_up()))
}

/// The ε at which Kifer et al.'s condition certifies a release with noise `sigma` at `delta`
/// (the smallest ε with `σ² ≥ L²(8 log(2/δ) + 4ε)/ε²`; λ is assumed large enough).
///
/// # Privacy
/// Paper 001, Thm 2.8 (Kifer et al. 2012). Rounded up.
///
/// # Errors
/// σ, L not positive, δ ∉ [2.2e-308, 1) (`DELTA_MIN`).
pub fn kifer_epsilon(sigma: f64, lipschitz: f64, delta: f64) -> Result<f64> {
    positive("sigma", sigma)?;
    positive("lipschitz", lipschitz)?;
    valid_delta(delta)?;
    // σ²ε² − 4L²ε − 8L² log(2/δ) = 0, positive root.
    let (a, b, c) = (
        sigma * sigma,
        -4.0 * lipschitz * lipschitz,
        -8.0 * lipschitz * lipschitz * (2.0 / delta).ln(),
    );
    // b < 0 and c < 0, so both terms of the numerator are positive: no cancellation.
    let eps = (-b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::OutOfRange(format!(
            "Kifer et al.'s epsilon is not representable for sigma = {sigma:e}, L = \
             {lipschitz:e}"
        )));
    }
    Ok(round_up_eps(eps))
}
