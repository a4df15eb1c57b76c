//! RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar, Zhang 2019, *Rényi
//! differential privacy of the sampled Gaussian mechanism*, §3.3), add/remove relation.

use crate::special::{log_add, log_expm1, log_sf, log_sub};

/// `ln A_α` for integer `α ≥ 2`: `ln Σ_k C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2z²))`.
///
/// The binomial weights sum to 1 and the `k = 0, 1` terms have exponent 0, so
/// `A − 1 = Σ_{k≥2} C(α,k)(1−q)^{α−k} q^k (e^{(k²−k)/(2z²)} − 1)`, a sum of positive terms:
/// summing that keeps full relative precision when `A` is close to 1 (small q).
pub(crate) fn log_a_int(q: f64, z: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let af = alpha as f64;
    let mut terms = Vec::with_capacity(alpha as usize);
    let mut lb = af.ln() + (af - 1.0).ln() - 2f64.ln(); // ln C(α, 2)
    for k in 2..=alpha {
        let kf = k as f64;
        if k > 2 {
            lb += ((af - kf + 1.0) / kf).ln();
        }
        let e = (kf * kf - kf) / (2.0 * z * z);
        terms.push(lb + (af - kf) * l1q + kf * lq + log_expm1(e));
    }
    let m = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = terms.iter().map(|t| (t - m).exp()).sum();
    log_add(0.0, m + s.ln())
}

/// Most terms [`log_a_frac`] sums before giving up.
const MAX_TERMS: u64 = 5_000_000;

/// `ln A_α` for fractional `α > 1` by the two series of MTZ19 §3.3, or why it failed.
///
/// Past `i > α + 1` the binomial coefficients alternate in sign and the terms' magnitudes
/// decrease (polynomially: the second series decays like `i^{−α−2}`), so the remainder after
/// the last term summed is at most the next term's magnitude; it is added to the sum, which
/// keeps the result an upper bound. The series stops once that remainder is below
/// `(α − 1)·e^{−30}` of the sum (≈ 1e-13 relative in `ε(α)`). It cannot stop before
/// `i > max(α + 1, z0)`, so when that index is beyond [`MAX_TERMS`] it fails at once, and
/// a term that is NaN or +∞ (overflow at tiny `z`) fails it too: every path is bounded.
pub(crate) fn log_a_frac(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let inv2z2 = 1.0 / (2.0 * z * z);
    let stop = (alpha - 1.0).ln() - 30.0;
    if !z0.is_finite() || z0.max(alpha + 1.0) >= MAX_TERMS as f64 {
        return Err(format!(
            "fractional-order series at alpha = {alpha} needs more than {MAX_TERMS} terms"
        ));
    }
    let (mut pos, mut neg) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // ln |C(α, i)| and its sign, updated incrementally.
    let (mut lb, mut sign) = (0.0f64, 1.0f64);
    for i in 0..MAX_TERMS {
        let fi = i as f64;
        if i > 0 {
            let r = (alpha - fi + 1.0) / fi;
            if r == 0.0 {
                // Integer α: the series is a finite sum.
                return Ok(log_sub(pos, neg));
            }
            lb += r.abs().ln();
            if r < 0.0 {
                sign = -sign;
            }
        }
        let j = alpha - fi;
        let t0 = lb + fi * lq + j * l1q + (fi * fi - fi) * inv2z2 + log_sf((fi - z0) / z);
        let t1 = lb + j * lq + fi * l1q + (j * j - j) * inv2z2 + log_sf((z0 - j) / z);
        let s = log_add(t0, t1);
        if s.is_nan() || s == f64::INFINITY {
            return Err(format!(
                "fractional-order series at alpha = {alpha} overflows (term {i} is {s})"
            ));
        }
        if fi > alpha + 1.0 && fi > z0 && (s < log_sub(pos, neg) + stop || s == f64::NEG_INFINITY) {
            // Alternating tail: remainder ≤ |this term|; count it as positive.
            pos = log_add(pos, s);
            if neg >= pos {
                return Err(format!(
                    "fractional-order series at alpha = {alpha} cancelled to a non-positive sum"
                ));
            }
            return Ok(log_sub(pos, neg));
        }
        if sign > 0.0 {
            pos = log_add(pos, s);
        } else {
            neg = log_add(neg, s);
        }
    }
    Err(format!(
        "fractional-order series at alpha = {alpha} did not converge in {MAX_TERMS} terms"
    ))
}

/// RDP `ε(α)` of one step, or why it could not be computed.
pub(crate) fn rdp(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    if q == 1.0 {
        return Ok(alpha / (2.0 * z * z));
    }
    let la = if alpha.fract() == 0.0 && alpha <= 1e6 {
        log_a_int(q, z, alpha as u64)
    } else {
        // The series cancels when A_α is near 1; then integrate A_α − 1 instead. A_α grows
        // with α, so the (cheap) integer order above α tells which case applies.
        if alpha <= 1e6 && log_a_int(q, z, alpha.ceil() as u64) < 1e-2 {
            super::quadrature::log_a_minus_one(q, z, alpha)?
                .exp()
                .ln_1p()
        } else {
            log_a_frac(q, z, alpha)?
        }
    };
    let v = la / (alpha - 1.0);
    if v.is_finite() {
        Ok(v.max(0.0))
    } else {
        Err(format!("RDP at alpha = {alpha} overflows"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_series_agrees_with_integer_sum_at_integers() {
        for &(q, z) in &[(0.01, 1.0), (0.1, 0.8), (0.004, 2.0)] {
            for a in [2u64, 3, 7, 20] {
                let i = log_a_int(q, z, a);
                let f = log_a_frac(q, z, a as f64).unwrap();
                assert!(
                    (i - f).abs() < 1e-11 * i.abs().max(1e-3),
                    "q={q} z={z} a={a}: {i} {f}"
                );
            }
        }
    }
}
