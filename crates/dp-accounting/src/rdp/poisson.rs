//! RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar, Zhang 2019, *Rényi
//! differential privacy of the sampled Gaussian mechanism*, §3.3), add/remove relation.

use crate::special::{ln_abs_binom, log_add, log_sf, log_sub};

/// `ln A_α` for integer `α ≥ 2`: `ln Σ_k C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2z²))`.
pub(crate) fn log_a_int(q: f64, z: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let mut acc = f64::NEG_INFINITY;
    for k in 0..=alpha {
        let kf = k as f64;
        let (lb, _) = ln_abs_binom(alpha as f64, k);
        let term = lb + (alpha - k) as f64 * l1q + kf * lq + (kf * kf - kf) / (2.0 * z * z);
        acc = log_add(acc, term);
    }
    acc
}

/// `ln A_α` for fractional `α > 1` by the two series of MTZ19 §3.3, or why it failed.
pub(crate) fn log_a_frac(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let (mut pos, mut neg) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..20_000u64 {
        let fi = i as f64;
        let j = alpha - fi;
        let (lb, sign) = ln_abs_binom(alpha, i);
        let t0 = lb + fi * lq + j * l1q + (fi * fi - fi) / (2.0 * z * z) + log_sf((fi - z0) / z);
        let t1 = lb + j * lq + fi * l1q + (j * j - j) / (2.0 * z * z) + log_sf((z0 - j) / z);
        let s = log_add(t0, t1);
        if sign > 0.0 {
            pos = log_add(pos, s);
        } else {
            neg = log_add(neg, s);
        }
        if fi > alpha && s < pos - 45.0 {
            if neg >= pos {
                return Err(format!(
                    "fractional-order series at alpha = {alpha} cancelled to a non-positive sum"
                ));
            }
            return Ok(log_sub(pos, neg));
        }
    }
    Err(format!(
        "fractional-order series at alpha = {alpha} did not converge in 20000 terms"
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
        log_a_frac(q, z, alpha)?
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
                assert!((i - f).abs() < 1e-11 * i.abs().max(1e-3), "q={q} z={z} a={a}: {i} {f}");
            }
        }
    }
}
