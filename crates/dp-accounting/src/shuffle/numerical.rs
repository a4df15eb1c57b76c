//! The numerical shuffling bound of Feldman, McMillan & Talwar 2021 (*Hiding among the clones*,
//! FOCS), Thm 3.2: the hockey-stick divergence between the two binomial mixtures that dominate
//! the shuffled output of `n` ε0-DP local randomisers, summed in log space with every
//! truncation bounded and added.
//!
//! The pair (Thm 3.2): `C ~ Bin(n − 1, e^{−ε0})`, `A ~ Bin(C, 1/2)`,
//! `Δ ~ Bern(e^{ε0}/(e^{ε0} + 1))`, `P = (A + Δ, C − A + 1 − Δ)`, `Q = (A + 1 − Δ, C − A + Δ)`.
//! Swapping the two coordinates maps `P` to `Q`, so `D_{e^ε}(P‖Q) = D_{e^ε}(Q‖P)` and one
//! direction covers both. The coordinates sum to `C + 1`, so `C` is observed and
//! `δ(ε) = Σ_c Pr[C = c]·δ_c(ε)`, where, with `B = Bin(c, 1/2)`'s pmf and
//! `q = e^{ε0}/(e^{ε0} + 1)`, the first coordinate has pmf `P_c(a) = q·B(a−1) + (1−q)·B(a)`
//! under `P` and `Q_c(a) = (1−q)·B(a−1) + q·B(a)` under `Q`:
//! `δ_c(ε) = Σ_a max(0, P_c(a) − e^ε Q_c(a)) = Σ_a max(0, α·B(a−1) − β·B(a))/(e^{ε0} + 1)`
//! with `α = e^{ε0} − e^ε`, `β = e^{ε+ε0} − 1`. `B(a−1)/B(a) = a/(c − a + 1)` increases in
//! `a`, so the positive terms are those above one threshold.
//!
//! Two facts make the sum cheap and rigorous:
//! * `δ_c` does not increase with `c`: the pair for `c + 1` is the pair for `c` with the same
//!   independent `(X, 1 − X)`, `X ~ Bern(1/2)`, added to both (post-processing). So a block
//!   of consecutive `c` is bounded by `δ` at its first `c` (buckets), and `c` below the
//!   summed range by `δ_0 = α/(e^{ε0} + 1)`.
//! * Binomial tails: Chernoff `Pr[Bin(N, p) ≤ k] ≤ exp(−N·KL(k/N ‖ p))` (`k ≤ Np`, and
//!   symmetrically above) for the outer `C`, and, inside each `δ_c`, the geometric bound
//!   `Σ_{a' ≥ a} B(a') ≤ B(a)/(1 − ρ_a)`, `ρ_a = (c − a)/(a + 1) < 1`.

use crate::special::log_add;

/// Largest `n` the numerical bound accepts (beyond it, callers use the closed form).
pub(crate) const MAX_N: u64 = 1_000_000_000;
/// Largest ε0 the numerical bound accepts: beyond it `n·e^{−ε0}` is negligible for every
/// accepted `n` and there is nothing to amplify.
pub(crate) const MAX_EPS0: f64 = 40.0;
/// Work budget for one `δ(ε)`: the number of buckets times `√(mean of C)` (each bucket's
/// inner sum takes `O(√c)` steps). Below it every `c` is its own bucket (exact); `n = 10⁸`
/// gets ~650 buckets of 0.03 standard deviations of `C`.
const WORK: f64 = 4e6;
/// Fewest buckets when the budget is tight.
const MIN_BUCKETS: u64 = 192;
/// Relative accuracy at which a `δ_c` sum is stopped (the bounded rest is added).
const INNER_TOL: f64 = 1e-13;
/// Relative margin on every `δ` returned: covers the float error of the pmf evaluations
/// (Loader's method, relative error ~1e-14) and of the logs.
const MARGIN: f64 = 1e-9;

/// `ln(e^{ε0} + 1)`.
fn ln_one_plus_exp(x: f64) -> f64 {
    if x > 40.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `stirlerr(m) = ln Γ(m + 1) − (m + 1/2) ln m + m − ln √(2π)`, the remainder of Stirling's
/// formula: its asymptotic series (Bernoulli coefficients 1/12, 1/360, 1/1260, 1/1680,
/// 1/1188; error below the next term, < 3e-16 for `m > 15`), or directly for small `m`.
fn stirlerr(m: f64) -> f64 {
    const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
    if m <= 15.0 {
        return crate::special::ln_gamma(m + 1.0) - (m + 0.5) * m.ln() + m - LN_SQRT_2PI;
    }
    let mm = m * m;
    (1.0 / 12.0
        - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / (1188.0 * mm)) / mm) / mm) / mm)
        / m
}

/// `x·ln(x/μ) + μ − x ≥ 0`, without cancellation when `x ≈ μ` (series in `v = (x−μ)/(x+μ)`:
/// `x ln(x/μ) + μ − x = (x − μ)v + 2x Σ_{j ≥ 1} v^{2j+1}/(2j + 1)`).
fn bd0(x: f64, mu: f64) -> f64 {
    if (x - mu).abs() < 0.1 * (x + mu) {
        let v = (x - mu) / (x + mu);
        let mut s = (x - mu) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..200 {
            ej *= v2;
            let s1 = s + ej / f64::from(2 * j + 1);
            if s1 == s {
                break;
            }
            s = s1;
        }
        s
    } else {
        x * (x / mu).ln() + mu - x
    }
}

/// `ln Pr[Bin(m, p) = k]` by the saddle-point form of Loader (2000, *Fast and accurate
/// computation of binomial probabilities*): relative error ~1e-14 even for `m` ~ 1e9, where
/// `ln Γ` differences lose digits. `p1 = 1 − p`, `ln_p = ln p`, `ln_1mp = ln(1 − p)`, each
/// passed in computed accurately (for `p = e^{−ε0}` near 1, `1 − p` must not be `1.0 − p`).
fn ln_binom_pmf(k: u64, m: u64, [p, p1]: [f64; 2], ln_p: f64, ln_1mp: f64) -> f64 {
    if k > m {
        return f64::NEG_INFINITY;
    }
    let (kf, mf) = (k as f64, m as f64);
    if k == 0 {
        return mf * ln_1mp;
    }
    if k == m {
        return mf * ln_p;
    }
    let rest = mf - kf;
    stirlerr(mf) - stirlerr(kf) - stirlerr(rest) - bd0(kf, mf * p) - bd0(rest, mf * p1)
        + 0.5 * (mf / (std::f64::consts::TAU * kf * rest)).ln()
}

/// Chernoff bound `ln Pr[Bin(m, p) ≤ k]` (`k ≤ mp`) or `ln Pr[Bin(m, p) ≥ k]` (`k ≥ mp`):
/// `−m·KL(k/m ‖ p)`.
fn ln_chernoff(k: u64, m: u64, ln_p: f64, ln_1mp: f64) -> f64 {
    let (kf, mf) = (k as f64, m as f64);
    let a = kf / mf;
    let mut kl = 0.0;
    if k > 0 {
        kl += a * (a.ln() - ln_p);
    }
    if k < m {
        kl += (1.0 - a) * ((-a).ln_1p() - ln_1mp);
    }
    -mf * kl.max(0.0)
}

/// The outer distribution `C ~ Bin(n − 1, e^{−ε0})`, cut into buckets of consecutive `c`
/// with their log masses, and the Chernoff bounds on the mass left out on each side.
struct Outer {
    /// `(first c, ln Pr[C in bucket])`, increasing `c`.
    buckets: Vec<(u64, f64)>,
    /// `ln` of a bound on `Pr[C < first bucket]` (−∞ if nothing is left out).
    ln_below: f64,
    /// `ln` of a bound on `Pr[C > last bucket]`.
    ln_above: f64,
}

impl Outer {
    /// Buckets covering every `c` whose Chernoff tail exceeds `e^{ln_cut}`.
    fn new(eps0: f64, n: u64, ln_cut: f64) -> Self {
        let m = n - 1;
        let p = (-eps0).exp();
        let p1 = -(-eps0).exp_m1();
        let (ln_p, ln_1mp) = (-eps0, p1.ln());
        let mean = m as f64 * p;
        // Largest k ≤ mean whose lower tail bound is ≤ e^{ln_cut} (by bisection: the bound
        // increases with k up to the mean).
        let mean_floor = (mean.floor() as u64).min(m);
        let (lo, ln_below) = if m == 0 || ln_chernoff(0, m, ln_p, ln_1mp) > ln_cut {
            (0, f64::NEG_INFINITY)
        } else {
            let (mut a, mut b) = (0_u64, mean_floor);
            while b - a > 1 {
                let mid = a + (b - a) / 2;
                if ln_chernoff(mid, m, ln_p, ln_1mp) <= ln_cut {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            (a + 1, ln_chernoff(a, m, ln_p, ln_1mp))
        };
        let mean_ceil = (mean.ceil() as u64).min(m);
        let (hi, ln_above) = if ln_chernoff(m, m, ln_p, ln_1mp) > ln_cut || mean_ceil >= m {
            (m, f64::NEG_INFINITY)
        } else {
            let (mut a, mut b) = (mean_ceil, m);
            // Smallest k ≥ mean with upper tail bound ≤ e^{ln_cut}: b.
            while b - a > 1 {
                let mid = a + (b - a) / 2;
                if ln_chernoff(mid, m, ln_p, ln_1mp) <= ln_cut {
                    b = mid;
                } else {
                    a = mid;
                }
            }
            (b - 1, ln_chernoff(b, m, ln_p, ln_1mp))
        };
        let lo = lo.min(hi);
        let buckets = ((WORK / mean.max(1.0).sqrt()) as u64).max(MIN_BUCKETS);
        let width = ((hi - lo + 1).div_ceil(buckets)).max(1);
        let mut buckets = Vec::new();
        let mut start = lo;
        while start <= hi {
            let end = (start + width - 1).min(hi);
            let mut ln_mass = f64::NEG_INFINITY;
            for c in start..=end {
                ln_mass = log_add(ln_mass, ln_binom_pmf(c, m, [p, p1], ln_p, ln_1mp));
            }
            buckets.push((start, ln_mass));
            start = end + 1;
        }
        Self {
            buckets,
            ln_below,
            ln_above,
        }
    }
}

/// `ln δ_c(ε)` (module docs), an upper bound: the terms above the threshold summed from
/// `B(t)` by the ratio recurrence, the rest bounded geometrically, and the float error of
/// the recurrence (≤ 4u per step, relative to the sum of the terms' magnitudes) added.
fn ln_delta_c(c: u64, eps0: f64, eps: f64, ln_norm: f64) -> f64 {
    let alpha = eps0.exp() - eps.exp();
    let beta = (eps + eps0).exp_m1();
    if alpha <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let cf = c as f64;
    // Positive terms: a/(c − a + 1) > r = β/α, i.e. a > r(c + 1)/(1 + r). Start two below
    // the computed threshold (terms below it are negative and clamped to 0).
    let r = beta / alpha;
    let first = (r * (cf + 1.0) / (1.0 + r)).floor() as u64 + 1;
    let a0 = first.saturating_sub(2).min(c + 1);
    let ln_half = -std::f64::consts::LN_2;
    // Scaled: b = B(a)/B(a0) (or B(c) when a0 = c + 1), b_prev = B(a − 1) on the same scale.
    let (ln_b0, mut b_prev, mut b) = if a0 > c {
        (ln_binom_pmf(c, c, [0.5, 0.5], ln_half, ln_half), 1.0, 0.0)
    } else {
        let prev = a0 as f64 / (cf - a0 as f64 + 1.0);
        (ln_binom_pmf(a0, c, [0.5, 0.5], ln_half, ln_half), prev, 1.0)
    };
    let (mut sum, mut mag, mut steps, mut rest) = (0.0_f64, 0.0_f64, 0.0_f64, 0.0_f64);
    let mut a = a0;
    loop {
        let term = alpha * b_prev - beta * b;
        sum += term.max(0.0);
        mag += alpha * b_prev + beta * b;
        steps += 1.0;
        if a > c {
            break;
        }
        // Next a: B(a + 1)/B(a) = (c − a)/(a + 1), which decreases in a.
        let rho = (cf - a as f64) / (a as f64 + 1.0);
        b_prev = b;
        b *= rho;
        a += 1;
        // Every term from a on is ≤ α·B(a' − 1), a' ≥ a, and those B sum to at most
        // B(a − 1)/(1 − ρ) since the ratios only decrease.
        if rho < 1.0 && sum > 0.0 {
            let bound = alpha * b_prev / (1.0 - rho);
            if bound <= INNER_TOL * sum {
                rest = bound;
                break;
            }
        }
    }
    let err = mag * f64::EPSILON * (4.0 + 4.0 * steps);
    let total = sum + rest + err;
    if total <= 0.0 {
        return f64::NEG_INFINITY;
    }
    ln_b0 + total.ln() - ln_norm
}

/// `ln` of an upper bound on `δ(ε)` of `n` shuffled ε0-DP randomisers (module docs), with
/// the outer range cut where its Chernoff tail is below `e^{ln_cut}`.
pub(crate) fn ln_delta(eps0: f64, n: u64, eps: f64, ln_cut: f64) -> f64 {
    ln_delta_with(&Outer::new(eps0, n, ln_cut), eps0, eps)
}

fn ln_delta_with(outer: &Outer, eps0: f64, eps: f64) -> f64 {
    let ln_norm = ln_one_plus_exp(eps0);
    if eps >= eps0 {
        return f64::NEG_INFINITY;
    }
    // δ_0 = α/(e^{ε0} + 1) bounds δ_c for every c (monotone), in particular those left out.
    let ln_delta0 = (eps0.exp() - eps.exp()).ln() - ln_norm;
    let mut acc = outer.ln_below + ln_delta0;
    let mut last = ln_delta0;
    for &(c, ln_mass) in &outer.buckets {
        last = ln_delta_c(c, eps0, eps, ln_norm);
        acc = log_add(acc, ln_mass + last);
    }
    acc = log_add(acc, outer.ln_above + last);
    acc + MARGIN
}

/// The smallest ε (up to a relative 1e-7, returned at the feasible end) with
/// `δ(ε) ≤ delta` for `n` shuffled ε0-DP randomisers, searched below `upper` (a known
/// feasible value, e.g. the closed form or ε0). `None` if `upper` is not confirmed.
pub(crate) fn epsilon(eps0: f64, n: u64, delta: f64, upper: f64) -> Option<f64> {
    let ln_target = delta.ln();
    // Tails left out are bounded by a 1e-12 share of the target.
    let outer = Outer::new(eps0, n, ln_target - 28.0);
    let feasible = |e: f64| ln_delta_with(&outer, eps0, e) <= ln_target;
    let mut hi = upper.min(eps0);
    if !feasible(hi) {
        return None;
    }
    let mut lo = 0.0;
    if feasible(lo) {
        return Some(0.0);
    }
    for _ in 0..200 {
        if hi - lo <= 1e-7 * hi {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if feasible(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `δ` by brute force over every `c` and every `a` (small `n`), straight from the
    /// definition of `P` and `Q`.
    fn brute(eps0: f64, n: u64, eps: f64) -> f64 {
        let q = eps0.exp() / (eps0.exp() + 1.0);
        let p = (-eps0).exp();
        let m = n - 1;
        let binom = |k: u64, m: u64, p: f64| -> f64 {
            let mut v = 1.0;
            for j in 0..k {
                v *= (m - j) as f64 / (j + 1) as f64;
            }
            v * p.powi(k as i32) * (1.0 - p).powi((m - k) as i32)
        };
        let mut total = 0.0;
        for c in 0..=m {
            let bc = |a: i64| {
                if a < 0 || a as u64 > c {
                    0.0
                } else {
                    binom(a as u64, c, 0.5)
                }
            };
            let mut d = 0.0;
            for a in 0..=(c as i64 + 1) {
                let pa = q * bc(a - 1) + (1.0 - q) * bc(a);
                let qa = (1.0 - q) * bc(a - 1) + q * bc(a);
                d += (pa - eps.exp() * qa).max(0.0);
            }
            total += binom(c, m, p) * d;
        }
        total
    }

    #[test]
    fn matches_brute_force_from_above() {
        for (eps0, n, eps) in [
            (1.0, 30, 0.3),
            (2.0, 60, 0.5),
            (0.5, 80, 0.1),
            (3.0, 20, 1.0),
            (1.0, 1, 0.2),
        ] {
            let want = brute(eps0, n, eps);
            let got = ln_delta(eps0, n, eps, -700.0).exp();
            assert!(
                got >= want && got <= want * (1.0 + 1e-6),
                "{eps0} {n} {eps}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn loader_pmf_matches_ln_gamma_where_both_are_accurate() {
        for (k, m, p) in [(3_u64, 10_u64, 0.3), (500, 1000, 0.5), (40, 100, 0.37)] {
            let direct = crate::special::ln_gamma(m as f64 + 1.0)
                - crate::special::ln_gamma(k as f64 + 1.0)
                - crate::special::ln_gamma((m - k) as f64 + 1.0)
                + k as f64 * f64::ln(p)
                + (m - k) as f64 * (1.0 - p).ln();
            let got = ln_binom_pmf(k, m, [p, 1.0 - p], p.ln(), (1.0 - p).ln());
            assert!(
                (got - direct).abs() < 1e-11,
                "{k} {m} {p}: {got} vs {direct}"
            );
        }
    }
}
