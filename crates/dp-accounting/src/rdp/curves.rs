//! The RDP curve `ε(α)` of every mechanism (MATH §3, §5, §6).

use super::poisson;
use crate::mechanism::{Kind, Mechanism, ObjPertParams, Sampling};
use crate::neighbouring::Neighbouring;
use crate::special::{log_add, log_sf};

/// RDP of randomized response with ε0 (tight for every ε0-DP mechanism):
/// `(1/(α−1)) log(p^α(1−p)^{1−α} + (1−p)^α p^{1−α})`, `p = e^{ε0}/(1+e^{ε0})`.
pub(crate) fn randomized_response(eps: f64, alpha: f64) -> f64 {
    let lp = -(-eps).exp().ln_1p();
    let lq = -eps.exp().ln_1p();
    let (a, b) = (
        alpha * lp + (1.0 - alpha) * lq,
        alpha * lq + (1.0 - alpha) * lp,
    );
    pure_dp_rdp(log_add(a, b), a.abs() + b.abs(), alpha, eps)
}

/// `v/(α−1)` for the log-sum `v` (terms of total size `size`) of an ε-DP mechanism's RDP
/// formula, made an upper bound: `v` plus its rounding error (a few ulps of `1 + size`) over
/// `α − 1`, capped by what every ε-DP mechanism obeys, `ε` and `αε²/2` (Bun & Steinke 2016,
/// *Concentrated differential privacy*, Prop. 1.4: ε-DP implies ε²/2-zCDP). For a tiny ε the
/// formula's log argument is `1 + O(α²ε²)`, below the rounding of its terms: computed as is
/// it gave 0 (Laplace with `r = 3.7e-9`, an ε the self-check refused), and the cap `αε²/2`,
/// tight to `O(ε)` there, is the answer.
fn pure_dp_rdp(v: f64, size: f64, alpha: f64, eps: f64) -> f64 {
    let err = 8.0 * f64::EPSILON * (1.0 + size);
    ((v + err) / (alpha - 1.0)).clamp(0.0, eps.min(0.5 * alpha * eps * eps))
}

/// RDP of the Laplace mechanism with `r = Δ/b` (Mironov 2017, Prop. 6).
fn laplace(r: f64, alpha: f64) -> f64 {
    let a = (alpha / (2.0 * alpha - 1.0)).ln() + (alpha - 1.0) * r;
    let b = ((alpha - 1.0) / (2.0 * alpha - 1.0)).ln() - alpha * r;
    pure_dp_rdp(log_add(a, b), a.abs() + b.abs(), alpha, r)
}

/// RDP `ε(α)` of one objective-perturbation release.
///
/// # Privacy
/// Paper 001 (Redberg, Koskela & Wang 2023), Thm 3.2 (MATH §6), add/remove:
/// `c + L²/(2σ²) + K(α−1)/(α−1)`, `K(t) = t²L²/(2σ²) + log(2Φ(tL/σ))`, with the limit
/// `c + μ + (L/σ)√(2/π)` at α → 1 (the authors' code uses the looser `K(1)` there).
pub fn objpert_rdp(p: &ObjPertParams, alpha: f64) -> f64 {
    let s = p.ratio();
    let mu = 0.5 * s * s;
    let t = alpha - 1.0;
    let k_over_t = if t < 1e-8 {
        s * (2.0 / std::f64::consts::PI).sqrt()
    } else {
        // log(2Φ(ts)) = ln 2 + ln(1 − Φ̄(ts)) = ln 2 + log Φ̄(−ts).
        t * mu + (std::f64::consts::LN_2 + log_sf(-t * s)) / t
    };
    let v = p.c() + mu + k_over_t;
    // ∞ − ∞ or 0·∞ at extreme α or ratios has no value; +∞ is then the (trivial) valid bound.
    if v.is_nan() { f64::INFINITY } else { v }
}

/// `ε(α)` of one application of `m` under `rel`, or why it cannot be computed.
pub(crate) fn rdp(m: &Mechanism, rel: Neighbouring, alpha: f64) -> Result<f64, String> {
    let f = rel.sum_sensitivity_factor();
    match &m.kind {
        Kind::Gaussian { sigma, sensitivity } => {
            let s = f * sensitivity / sigma;
            Ok(alpha * s * s / 2.0)
        }
        Kind::Laplace { scale, sensitivity } => Ok(laplace(f * sensitivity / scale, alpha)),
        Kind::SubsampledGaussian {
            noise_multiplier,
            q,
            sampling,
        } => match sampling {
            _ if *q == 1.0 => {
                let s = f / noise_multiplier;
                Ok(alpha * s * s / 2.0)
            }
            Sampling::Poisson => poisson::rdp(*q, *noise_multiplier, alpha),
            Sampling::WithoutReplacement { .. } => {
                super::without_replacement::rdp(*q, *noise_multiplier, alpha)
            }
        },
        Kind::PureDp { .. } | Kind::GammaBall { .. } => {
            let eps = m
                .pure_epsilon(rel)
                .ok_or_else(|| "pure-DP mechanism without an epsilon".to_string())?;
            Ok(randomized_response(eps, alpha))
        }
        Kind::ObjPert(p) => Ok(objpert_rdp(p, alpha)),
        Kind::Amp {
            objpert,
            tau,
            sigma_out,
        } => {
            let s = 2.0 * tau / objpert.lambda / sigma_out;
            Ok(objpert_rdp(objpert, alpha) + alpha * s * s / 2.0)
        }
        Kind::Zcdp { rho } => Ok(rho * alpha),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_orderings() {
        // RR RDP is below ε0 and below the zCDP bound αε0²/2.
        for a in [1.5, 2.0, 10.0, 100.0] {
            let r = randomized_response(0.5, a);
            assert!(r <= 0.5 && r <= a * 0.125 + 1e-15, "{a}: {r}");
        }
        // Laplace at large α approaches Δ/b.
        assert!((laplace(1.0, 1e6) - 1.0).abs() < 1e-5);
        // ObjPert: the α → 1 limit is continuous.
        let p = ObjPertParams::new(1.0, 2.0, 0.5, 2f64.sqrt()).unwrap();
        let a = objpert_rdp(&p, 1.0 + 1e-9);
        let b = objpert_rdp(&p, 1.0 + 1e-6);
        assert!((a - b).abs() < 1e-5, "{a} {b}");
    }
}
