//! `A_α − 1` of the Poisson-subsampled Gaussian by Gauss–Legendre quadrature, for the orders
//! where the MTZ series cancels (A_α within ~1% of 1: small q, α near 1).
//!
//! With `u(o) = q·(e^{(2o−1)/(2z²)} − 1)` and `o ~ N(0, z²)`, `A_α = E[(1 + u)^α]`; since
//! `E[u] = 0`, `A_α − 1 = E[(1 + u)^α − 1 − αu]`, whose integrand is non-negative for α > 1
//! (convexity) — no cancellation anywhere.

use std::sync::OnceLock;

use crate::special::{log_pdf, log_sub};

/// Nodes and weights of the 16-point Gauss–Legendre rule on [−1, 1].
fn gauss_legendre() -> &'static [(f64, f64)] {
    static RULE: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = 16usize;
        let mut rule = Vec::with_capacity(n);
        for i in 0..n {
            // Newton's method on P_n from the Chebyshev-like initial guess.
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 0.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let kf = k as f64;
                    let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            rule.push((x, 2.0 / ((1.0 - x * x) * dp * dp)));
        }
        rule
    })
}

/// `ln((1 + u)^α − 1 − αu)` for `u > −1`, `α > 1`.
fn log_excess(u: f64, alpha: f64) -> f64 {
    let l = alpha * u.ln_1p();
    if u.abs() < 1e-3 {
        // Σ_{k≥2} C(α,k) u^k, alternating in sign only through u: sum directly.
        let mut term = alpha * (alpha - 1.0) / 2.0 * u * u;
        let mut sum = term;
        for k in 3..30 {
            let kf = f64::from(k);
            term *= (alpha - kf + 1.0) / kf * u;
            sum += term;
            if term.abs() < 1e-18 * sum.abs() {
                break;
            }
        }
        return sum.ln();
    }
    if l > 700.0 {
        // (1 + u)^α dominates: ln((1+u)^α − (1 + αu)).
        return log_sub(l, (alpha * u).ln_1p());
    }
    (l.exp_m1() - alpha * u).ln()
}

/// `ln(A_α − 1)`.
pub(crate) fn log_a_minus_one(q: f64, z: f64, alpha: f64) -> f64 {
    let rule = gauss_legendre();
    // The integrand is a Gaussian weight times a smooth factor peaking at o ≈ α: beyond 11
    // standard deviations it is below e^{-60} of its bulk.
    let lo = -11.0 * z;
    let hi = alpha.max(1.0) + 11.0 * z;
    let width = z;
    let panels = ((hi - lo) / width).ceil() as usize;
    let width = (hi - lo) / panels as f64;
    let mut logs = Vec::with_capacity(panels * rule.len());
    for p in 0..panels {
        let mid = lo + (p as f64 + 0.5) * width;
        for &(x, w) in rule {
            let o = mid + 0.5 * width * x;
            let u = q * ((2.0 * o - 1.0) / (2.0 * z * z)).exp_m1();
            let v = log_pdf(o / z) - z.ln() + log_excess(u, alpha) + (0.5 * width * w).ln();
            if v.is_finite() {
                logs.push(v);
            }
        }
    }
    let m = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + logs.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_integrates_polynomials_exactly() {
        let s: f64 = gauss_legendre().iter().map(|(x, w)| w * x.powi(30)).sum();
        assert!((s - 2.0 / 31.0).abs() < 1e-14);
        let total: f64 = gauss_legendre().iter().map(|(_, w)| w).sum();
        assert!((total - 2.0).abs() < 1e-14);
    }

    #[test]
    fn agrees_with_the_integer_binomial_sum() {
        for &(q, z, a) in &[(0.01, 1.0, 2u64), (0.001, 0.8, 3), (0.1, 2.0, 5)] {
            let quad = log_a_minus_one(q, z, a as f64).exp().ln_1p();
            let exact = super::super::poisson::log_a_int(q, z, a);
            assert!(
                ((quad - exact) / exact).abs() < 1e-12,
                "{q} {z} {a}: {quad} {exact}"
            );
        }
    }
}
