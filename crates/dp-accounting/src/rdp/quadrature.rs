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

/// Quadrature nodes for one `(q, z)`: the Gaussian weight `w_k·φ(o_k/z)/z`, `u(o_k)` and
/// `ln(1 + u(o_k))`, shared by every order (only the power changes with α).
struct Nodes {
    q: f64,
    z: f64,
    hi: f64,
    weight: Vec<f64>,
    u: Vec<f64>,
    log1p_u: Vec<f64>,
}

/// Most panels (of width `z`) the integral is split into; more fails with an error.
const MAX_PANELS: f64 = 1e5;

/// The panels `(count, width)` covering `[lo, hi]` with width about `z`, or why not.
fn panels(lo: f64, hi: f64, z: f64) -> Result<(usize, f64), String> {
    let n = ((hi - lo) / z).ceil();
    if n.is_nan() || !(1.0..=MAX_PANELS).contains(&n) {
        return Err(format!(
            "the quadrature of A_alpha over [{lo}, {hi}] would need {n} panels (at most {MAX_PANELS})"
        ));
    }
    Ok((n as usize, (hi - lo) / n))
}

impl Nodes {
    fn new(q: f64, z: f64, hi: f64) -> Result<Self, String> {
        let rule = gauss_legendre();
        let lo = -11.0 * z;
        let (panels, width) = panels(lo, hi, z)?;
        let cap = panels * rule.len();
        let (mut weight, mut u, mut log1p_u) = (
            Vec::with_capacity(cap),
            Vec::with_capacity(cap),
            Vec::with_capacity(cap),
        );
        for p in 0..panels {
            let mid = lo + (p as f64 + 0.5) * width;
            for &(x, w) in rule {
                let o = mid + 0.5 * width * x;
                let uk = q * ((2.0 * o - 1.0) / (2.0 * z * z)).exp_m1();
                weight.push(0.5 * width * w * (log_pdf(o / z) - z.ln()).exp());
                u.push(uk);
                log1p_u.push(uk.ln_1p());
            }
        }
        Ok(Self {
            q,
            z,
            hi,
            weight,
            u,
            log1p_u,
        })
    }

    /// `A_α − 1` in linear scale, or `None` when a term overflows.
    fn a_minus_one(&self, alpha: f64) -> Option<f64> {
        let mut sum = 0.0;
        for k in 0..self.u.len() {
            let w = self.weight[k];
            if w == 0.0 {
                continue;
            }
            let (u, l) = (self.u[k], self.log1p_u[k]);
            let excess = if u.abs() < 1e-3 {
                log_excess(u, alpha).exp()
            } else {
                let p = alpha * l;
                if p > 700.0 {
                    return None;
                }
                p.exp_m1() - alpha * u
            };
            sum += w * excess;
        }
        sum.is_finite().then_some(sum)
    }
}

/// `ln(A_α − 1)`, or why it cannot be computed (too many panels, a node that overflows).
pub(crate) fn log_a_minus_one(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    thread_local! {
        static CACHE: std::cell::RefCell<Option<Nodes>> = const { std::cell::RefCell::new(None) };
    }
    let need = alpha.max(1.0) + 11.0 * z;
    let linear = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let fresh = match &*c {
            Some(n) => n.q != q || n.z != z || n.hi < need,
            None => true,
        };
        if fresh {
            // Cover the default fractional orders (≤ 11) in one build.
            *c = Some(Nodes::new(q, z, need.max(11.0 + 11.0 * z))?);
        }
        Ok::<_, String>(c.as_ref().and_then(|n| n.a_minus_one(alpha)))
    })?;
    match linear {
        Some(v) if v > 0.0 => Ok(v.ln()),
        _ => log_a_minus_one_logspace(q, z, alpha),
    }
}

/// `ln(A_α − 1)` with every term in log space (no overflow for large α). A node whose term
/// is NaN or +∞ fails the whole sum: dropping it would lose mass (an under-estimate).
fn log_a_minus_one_logspace(q: f64, z: f64, alpha: f64) -> Result<f64, String> {
    let rule = gauss_legendre();
    let lo = -11.0 * z;
    let hi = alpha.max(1.0) + 11.0 * z;
    let (panels, width) = panels(lo, hi, z)?;
    let mut logs = Vec::with_capacity(panels * rule.len());
    for p in 0..panels {
        let mid = lo + (p as f64 + 0.5) * width;
        for &(x, w) in rule {
            let o = mid + 0.5 * width * x;
            let u = q * ((2.0 * o - 1.0) / (2.0 * z * z)).exp_m1();
            let v = log_pdf(o / z) - z.ln() + log_excess(u, alpha) + (0.5 * width * w).ln();
            if v.is_nan() || v == f64::INFINITY {
                return Err(format!(
                    "the quadrature of A_alpha at alpha = {alpha} overflows at o = {o}"
                ));
            }
            logs.push(v);
        }
    }
    let m = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(m + logs.iter().map(|v| (v - m).exp()).sum::<f64>().ln())
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
    fn linear_and_log_space_sums_agree() {
        for &(q, z, a) in &[(0.004, 1.0, 1.5), (0.01, 0.6, 7.3), (0.2, 3.0, 1.1)] {
            let lin = log_a_minus_one(q, z, a).unwrap();
            let log = log_a_minus_one_logspace(q, z, a).unwrap();
            assert!(
                (lin - log).abs() < 1e-11 * log.abs().max(1.0),
                "{q} {z} {a}: {lin} {log}"
            );
        }
    }

    #[test]
    fn agrees_with_the_integer_binomial_sum() {
        for &(q, z, a) in &[(0.01, 1.0, 2u64), (0.001, 0.8, 3), (0.1, 2.0, 5)] {
            let quad = log_a_minus_one(q, z, a as f64).unwrap().exp().ln_1p();
            let exact = super::super::poisson::log_a_int(q, z, a);
            assert!(
                ((quad - exact) / exact).abs() < 1e-12,
                "{q} {z} {a}: {quad} {exact}"
            );
        }
    }
}
