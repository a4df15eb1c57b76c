//! RDP of the Gaussian mechanism on a batch sampled without replacement, replace-one relation
//! (Wang, Balle, Kasiviswanathan 2019, *Subsampled Rényi differential privacy and analytical
//! moments accountant*, Thm 27 for integer orders, Cor. 10 to interpolate fractional ones).
//!
//! For integer `α ≥ 2`, with `ε_G(j) = j/(2z²)` and `b_m = exp((m−1)m/(2z²))`:
//! `A_α ≤ 1 + q²C(α,2)·min(4(e^{ε_G(2)} − 1), 2e^{ε_G(2)})
//!        + Σ_{j≥3} q^j C(α,j)·min(4√(|Δ^{2⌊j/2⌋}b(0)|·|Δ^{2⌈j/2⌉}b(0)|), 2e^{(j−1)ε_G(j)})`,
//! `ε(α) = log A_α/(α−1)`. Above order 256 the forward differences are skipped (the second
//! term of each minimum alone is a valid, looser bound).

use crate::special::{ln_abs_binom, log_add, log_sub};

/// Largest order for which forward differences are used.
const MAX_DIFF_ORDER: u64 = 256;

/// `ln |Δ^k b(0)|` for `k = 0..=n`, computed by repeated differencing in log-magnitude/sign
/// form (the alternating sums cancel heavily, the exponents overflow in linear scale).
fn log_forward_diffs(z: f64, n: usize) -> Vec<f64> {
    let len = n + 1;
    let mut mag: Vec<f64> = (0..len)
        .map(|m| {
            let m = m as f64;
            (m - 1.0) * m / (2.0 * z * z)
        })
        .collect();
    let mut pos = vec![true; len];
    let mut out = Vec::with_capacity(len);
    out.push(mag[0]);
    for pass in 1..len {
        for j in 0..len - pass {
            // v[j] ← v[j+1] − v[j]
            let (a, sa, b, sb) = (mag[j + 1], pos[j + 1], mag[j], pos[j]);
            let (m, s) = if sa == sb {
                if a >= b {
                    (log_sub(a, b), sa)
                } else {
                    (log_sub(b, a), !sa)
                }
            } else {
                (log_add(a, b), sa)
            };
            mag[j] = m;
            pos[j] = s;
        }
        out.push(mag[0]);
    }
    out
}

/// `ln A_α` for integer `α ≥ 1`.
fn log_a_int(q: f64, z: f64, alpha: u64, diffs: &[f64]) -> f64 {
    if alpha <= 1 {
        return 0.0;
    }
    let lq = q.ln();
    let cgf = |x: f64| x * (x + 1.0) / (2.0 * z * z);
    let e2 = 1.0 / (z * z);
    let mut acc = 0.0f64; // ln 1
    for j in 2..=alpha {
        let jf = j as f64;
        let (lb, _) = ln_abs_binom(alpha as f64, j);
        let bound = if j == 2 {
            let a = 4f64.ln() + e2 + (-(-e2).exp()).ln_1p();
            a.min(e2 + 2f64.ln())
        } else {
            let simple = 2f64.ln() + cgf(jf - 1.0);
            if alpha <= MAX_DIFF_ORDER {
                let lo = diffs[(2 * (j / 2)) as usize];
                let hi = diffs[(2 * j.div_ceil(2)) as usize];
                (4f64.ln() + 0.5 * (lo + hi)).min(simple)
            } else {
                simple
            }
        };
        acc = log_add(acc, bound + jf * lq + lb);
    }
    acc
}

/// Largest order evaluated (the bound's sum has `α` terms).
const MAX_ORDER: f64 = 1e6;

/// RDP `ε(α)` of one step with sampling ratio `q = m/n` and noise multiplier `z`, or why it
/// cannot be computed (an order above [`MAX_ORDER`], overflow).
pub(crate) fn rdp(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    if q == 1.0 {
        return Ok(alpha / (2.0 * z * z));
    }
    if alpha > MAX_ORDER {
        return Err(format!(
            "sampling-without-replacement RDP is evaluated up to order {MAX_ORDER}, not {alpha}"
        ));
    }
    let hi_order = alpha.ceil() as u64;
    let need = (hi_order.min(MAX_DIFF_ORDER) + 1) as usize;
    let diffs = log_forward_diffs(z, need);
    let v = if alpha.fract() == 0.0 {
        log_a_int(q, z, alpha as u64, &diffs)
    } else {
        // Cor. 10: the CGF (α−1)ε(α) is convex in α; interpolate linearly.
        let (f, c) = (alpha.floor() as u64, hi_order);
        let t = alpha - alpha.floor();
        (1.0 - t) * log_a_int(q, z, f, &diffs) + t * log_a_int(q, z, c, &diffs)
    };
    let r = v / (alpha - 1.0);
    if r.is_finite() {
        Ok(r.max(0.0))
    } else {
        Err(format!(
            "sampling-without-replacement RDP at alpha = {alpha} overflows"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_differences_match_direct_sums() {
        let z = 3.0;
        let d = log_forward_diffs(z, 8);
        let b = |m: f64| ((m - 1.0) * m / (2.0 * z * z)).exp();
        for k in 0..=8u32 {
            let mut s = 0.0;
            for m in 0..=k {
                let c = (0..m).fold(1.0, |acc, i| acc * f64::from(k - i) / f64::from(i + 1));
                let sign = if (k - m) % 2 == 0 { 1.0 } else { -1.0 };
                s += sign * c * b(f64::from(m));
            }
            if s == 0.0 {
                assert_eq!(d[k as usize], f64::NEG_INFINITY, "k={k}");
            } else {
                assert!((d[k as usize] - s.abs().ln()).abs() < 1e-9, "k={k}");
            }
        }
    }

    #[test]
    fn huge_orders_fail_fast() {
        assert!(rdp(0.01, 1.0, 1e15).is_err());
        assert!(rdp(0.01, 1.0, 1e6).is_ok());
    }

    #[test]
    fn bounded_by_the_unsampled_gaussian() {
        for a in [2.0, 3.5, 10.0, 300.0] {
            let r = rdp(0.01, 1.0, a).unwrap();
            assert!(r >= 0.0 && r < a / 2.0, "{a}: {r}");
        }
    }
}
