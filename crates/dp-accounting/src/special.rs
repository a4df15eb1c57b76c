//! Special functions: the standard normal distribution to full relative precision in both
//! tails, and log-space arithmetic.
//!
//! Privacy profiles of Gaussian-based mechanisms are differences of two normal tail
//! probabilities that nearly cancel; [`tail_gap`] evaluates such a difference through the Mills
//! ratio `R(t) = Φ̄(t)/φ(t)` so that neither term over- or underflows and the Gaussian factor
//! cancels exactly.

use std::f64::consts::PI;

/// Below this argument the complementary error function is used; above it, the Mills-ratio
/// continued fraction (which converges fast there and keeps full relative precision).
const CF_MIN: f64 = 2.0;

/// `ln √(2π)`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Splits `x` into a high part with 26 significant bits and the remainder, so that `hi * hi`
/// is exact in double precision.
fn split(x: f64) -> (f64, f64) {
    let c = 134_217_729.0 * x; // 2^27 + 1
    let hi = c - (c - x);
    (hi, x - hi)
}

/// `-x²/2` as an unevaluated sum `(a, b)` with `a` exact and `|b| ≪ |a|`, so `exp(a)·exp(b)`
/// keeps full relative precision even when `x²` is large.
fn neg_half_square(x: f64) -> (f64, f64) {
    let (hi, lo) = split(x);
    (-0.5 * hi * hi, -(hi * lo + 0.5 * lo * lo))
}

/// Standard normal density `φ(x)` with full relative precision for large `|x|`.
pub(crate) fn pdf(x: f64) -> f64 {
    let (a, b) = neg_half_square(x);
    // For |x| ≳ 2^26 the remainder `b` can itself overflow `exp` while `a` underflows
    // (0·∞ = NaN): the density is then far below the smallest double.
    if a + b < -746.0 {
        return 0.0;
    }
    a.exp() * b.exp() / (2.0 * PI).sqrt()
}

/// `ln φ(x)`.
pub(crate) fn log_pdf(x: f64) -> f64 {
    if x.abs() > 1e150 {
        // The exact split of x² overflows (∞ − ∞ = NaN); −x²/2 alone is as precise a
        // logarithm here, and −∞ beyond ~1.3e154.
        return -0.5 * x * x - LN_SQRT_2PI;
    }
    let (a, b) = neg_half_square(x);
    a + b - LN_SQRT_2PI
}

/// Mills ratio `R(t) = Φ̄(t)/φ(t)` for `t ≥ CF_MIN`: a Chebyshev expansion of `t·R(t)` in
/// `y = (t − K)/(t + K)`; the continued fraction [`mills_cf`] is the reference in the tests.
fn mills(t: f64) -> f64 {
    let cheb = &MILLS_CHEB;
    let y = (t - MILLS_K) / (t + MILLS_K);
    // Clenshaw recurrence on [−1/3, 1] mapped to [−1, 1].
    let x = (y - MILLS_Y0) * 2.0 / (1.0 - MILLS_Y0) - 1.0;
    let (mut b1, mut b2) = (0.0, 0.0);
    for &c in cheb.iter().rev().take(cheb.len() - 1) {
        let b0 = 2.0 * x * b1 - b2 + c;
        b2 = b1;
        b1 = b0;
    }
    (x * b1 - b2 + cheb[0]) / t
}

/// Centre of the map `y = (t − K)/(t + K)`.
const MILLS_K: f64 = 4.0;
/// `y` at `t = CF_MIN`.
const MILLS_Y0: f64 = (CF_MIN - MILLS_K) / (CF_MIN + MILLS_K);
/// Chebyshev coefficients of `g(x) = t·R(t)` on `x ∈ [−1, 1]`, `y = y0 + (x+1)(1−y0)/2`,
/// `t = K(1+y)/(1−y)`, computed in 40-digit arithmetic by `tools/mills_chebyshev.py`.
#[allow(clippy::excessive_precision, clippy::unreadable_literal)]
const MILLS_CHEB: [f64; 24] = [
    0.9552002700043619,
    0.0690700411842778,
    -0.031808729128596815,
    0.009240644137768683,
    -0.0019880698575944,
    0.0003187193340031465,
    -3.450974554781082e-05,
    1.4151401040516328e-06,
    2.6759484540631903e-07,
    -4.9894825916309335e-08,
    4.844652833351396e-10,
    8.229924612476878e-10,
    -6.580458144277597e-11,
    -1.2578721304406196e-11,
    1.9760240545937627e-12,
    2.0808240034174227e-13,
    -5.1931553558919674e-14,
    -4.1724724589394255e-15,
    1.3699263653833783e-15,
    1.095980237841632e-16,
    -3.7212708778443684e-17,
    -3.6679385796101e-18,
    1.0254781491855431e-18,
    1.4115440484065005e-19,
];

#[cfg(test)]
/// Mills ratio by the continued fraction `R(t) = 1/(t + 1/(t + 2/(t + 3/(t + …))))`
/// evaluated with the modified Lentz method (`t ≥ CF_MIN`).
fn mills_cf(t: f64) -> f64 {
    debug_assert!(t >= CF_MIN);
    const TINY: f64 = 1e-300;
    // f = b0 + a1/(b1 + a2/(b2 + …)) with b_k = t, a_1 = 1, a_k = k − 1.
    let mut f = t;
    let mut c = t;
    let mut d = 0.0;
    for k in 1..10_000u32 {
        let a = f64::from(k);
        d = t + a * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = t + a / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = c * d;
        f *= step;
        if (step - 1.0).abs() < 1e-17 {
            break;
        }
    }
    1.0 / f
}

/// `erf(u)` for `0 ≤ u ≤ 1.5` by the series of positive terms
/// `erf(u) = (2/√π) e^{−u²} Σ_n 2^n u^{2n+1}/(1·3·…·(2n+1))` (no cancellation).
fn erf_small(u: f64) -> f64 {
    let u2 = u * u;
    let mut term = u;
    let mut sum = u;
    let mut n = 0.0;
    while term > 1e-18 * sum {
        n += 1.0;
        term *= 2.0 * u2 / (2.0 * n + 1.0);
        sum += term;
    }
    2.0 / PI.sqrt() * (-u2).exp() * sum
}

/// Upper tail `Φ̄(x) = P[N(0,1) > x]` with full relative precision for all `x`
/// (down to the smallest positive double).
pub(crate) fn sf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x >= CF_MIN {
        if x > 40.0 {
            return (log_pdf(x) + mills(x).ln()).exp();
        }
        pdf(x) * mills(x)
    } else if x <= -CF_MIN {
        if x < -40.0 {
            return 1.0;
        }
        1.0 - pdf(x) * mills(-x)
    } else {
        let e = erf_small(x.abs() / std::f64::consts::SQRT_2);
        if x >= 0.0 {
            0.5 * (1.0 - e)
        } else {
            0.5 * (1.0 + e)
        }
    }
}

/// `ln Φ̄(x)`, finite for every finite `x`.
pub(crate) fn log_sf(x: f64) -> f64 {
    if x >= CF_MIN {
        log_pdf(x) + mills(x).ln()
    } else if x <= -CF_MIN {
        (-sf(-x)).ln_1p()
    } else {
        sf(x).ln()
    }
}

/// `Φ̄(a) − w·Φ̄(b)` where `w = φ(a)/φ(b)` and `a ≤ b`: the shape every Gaussian privacy profile
/// takes (the weight is `e^ε` for the Gaussian mechanism). The Gaussian factors cancel
/// analytically, so the result keeps its relative precision deep in the tail (δ ≈ 1e-300).
/// An upper bound: the rounding allowance of [`tail_gap_parts`] is added.
pub(crate) fn tail_gap(a: f64, b: f64) -> f64 {
    let (gap, allowance) = tail_gap_parts(a, b);
    // Rounding can leave a hair below 0; a NaN is passed on (never turned into 0), so the
    // callers' checks see it.
    if gap.is_nan() {
        gap
    } else {
        gap.max(0.0) + allowance
    }
}

/// [`tail_gap`] as a lower bound: the rounding allowance subtracted (at least 0). The
/// self-checks compare answers against it: the upper bound is not monotone in its arguments
/// where the two terms nearly cancel (a Gaussian profile at a tiny ratio), so an answer
/// computed from it can sit a rounding error above the same function evaluated a hair away.
pub(crate) fn tail_gap_lower(a: f64, b: f64) -> f64 {
    let (gap, allowance) = tail_gap_parts(a, b);
    if gap.is_nan() {
        gap
    } else {
        (gap - allowance).max(0.0)
    }
}

/// The computed `Φ̄(a) − w·Φ̄(b)` and a bound on its rounding error, `8u` times the sum of the
/// two terms' sizes.
fn tail_gap_parts(a: f64, b: f64) -> (f64, f64) {
    // Arguments out of order (or NaN, from a ratio that under- or overflowed) have no value:
    // NaN, which every caller's check turns into an error.
    if a.is_nan() || b.is_nan() || a > b {
        return (f64::NAN, 0.0);
    }
    // Each branch is a difference of two terms; `scale` is the sum of their sizes, so the
    // rounding error of the difference is a few ulps of `scale` (large against the gap when the
    // two nearly cancel).
    let (gap, scale) = if a >= CF_MIN {
        let (ma, mb) = (mills(a), mills(b));
        let p = pdf(a);
        (p * (ma - mb), p * (ma + mb))
    } else if b >= CF_MIN {
        let (first, second) = (sf(a), pdf(a) * mills(b));
        (first - second, first + second)
    } else {
        // Both arguments moderate: w = exp((b² − a²)/2) is moderate too.
        let w = (0.5 * (b - a) * (b + a)).exp();
        let (first, second) = (sf(a), w * sf(b));
        (first - second, first + second)
    };
    (gap, 8.0 * f64::EPSILON * scale)
}

/// The larger of two privacy numbers, NaN if either is NaN (`f64::max` would return the
/// other one, possibly the smaller: an under-report).
pub(crate) fn worse(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// `x` capped at 1 (a probability), NaN kept (`f64::min` would turn it into 1 and hide it).
pub(crate) fn cap_one(x: f64) -> f64 {
    if x.is_nan() { x } else { x.min(1.0) }
}

/// `ln(e^a + e^b)`.
pub(crate) fn log_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if hi == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// `ln(e^a − e^b)` for `a ≥ b`; `-∞` when they are equal.
pub(crate) fn log_sub(a: f64, b: f64) -> f64 {
    if b == f64::NEG_INFINITY {
        return a;
    }
    if a <= b {
        return f64::NEG_INFINITY;
    }
    a + (-(b - a).exp_m1()).ln()
}

/// `ln(e^x − 1)` for `x > 0`, stable for small and large `x`.
pub(crate) fn log_expm1(x: f64) -> f64 {
    if x > 40.0 {
        x + (-(-x).exp()).ln_1p()
    } else {
        x.exp_m1().ln()
    }
}

/// `ln Γ(x)` for `x > 0`.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    statrs::function::gamma::ln_gamma(x)
}

/// `ln |C(α, k)|` for real `α` and integer `k ≥ 0`, together with the sign of `C(α, k)`.
pub(crate) fn ln_abs_binom(alpha: f64, k: u64) -> (f64, f64) {
    // C(α, k) = Π_{j<k} (α − j) / k!
    let kf = k as f64;
    if alpha.fract() == 0.0 && alpha >= 0.0 && kf > alpha {
        return (f64::NEG_INFINITY, 0.0);
    }
    if alpha + 1.0 - kf > 0.0 {
        let v = ln_gamma(alpha + 1.0) - ln_gamma(kf + 1.0) - ln_gamma(alpha + 1.0 - kf);
        return (v, 1.0);
    }
    // α − k + 1 ≤ 0: the product has negative factors; compute it term by term.
    let mut ln = 0.0;
    let mut sign = 1.0;
    for j in 0..k {
        let f = (alpha - j as f64) / (j as f64 + 1.0);
        if f < 0.0 {
            sign = -sign;
        }
        ln += f.abs().ln();
    }
    (ln, sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn normal_tail_matches_high_precision_values() {
        // Values of Φ̄(x) from mpmath at 50 digits.
        let cases = [
            (0.0, 0.5),
            (1.0, 0.158_655_253_931_457_05),
            (2.5, 0.006_209_665_325_776_135),
            (3.0, 0.001_349_898_031_630_094_5),
            (5.0, 2.866_515_718_791_939e-7),
            (10.0, 7.619_853_024_160_526e-24),
            (20.0, 2.753_624_118_606_233_7e-89),
            (37.0, 5.725_571_222_524_577e-300),
            (-2.0, 0.977_249_868_051_820_8),
        ];
        for (x, want) in cases {
            assert!(rel(sf(x), want) < 2e-15, "sf({x}) = {} want {want}", sf(x));
        }
        assert!(rel(log_sf(50.0), -1_254.831_361_139_419_9) < 1e-15);
    }

    #[test]
    fn mills_expansion_matches_the_continued_fraction() {
        let mut worst = 0.0f64;
        for i in 0..20_000 {
            let t = CF_MIN + i as f64 * 0.01;
            worst = worst.max(rel(mills(t), mills_cf(t)));
        }
        for t in [1e3, 1e5, 1e8] {
            worst = worst.max(rel(mills(t), mills_cf(t)));
        }
        // Both are approximations; the mpmath-based tests pin the absolute accuracy.
        assert!(worst < 2.5e-15, "worst relative error {worst:e}");
    }

    #[test]
    fn tail_gap_equals_direct_difference_where_that_is_accurate() {
        for &(a, b) in &[(0.1f64, 0.7f64), (-1.0, 0.5), (1.0, 2.0), (2.9, 3.2)] {
            let w = (0.5 * (b * b - a * a)).exp();
            let direct = sf(a) - w * sf(b);
            assert!(rel(tail_gap(a, b), direct) < 1e-13);
        }
    }

    #[test]
    fn log_tail_of_huge_arguments_is_minus_infinity_not_nan() {
        // Fuzzing (tests/fuzz_constructors.rs): objective perturbation with L/σ = 1.7e253
        // gave δ = NaN through ln Φ̄(L/σ).
        assert_eq!(log_sf(1.7e253), f64::NEG_INFINITY);
        assert_eq!(log_sf(f64::MAX), f64::NEG_INFINITY);
        let x = 1e151f64;
        assert!((log_sf(x) / (-0.5 * x * x) - 1.0).abs() < 1e-15);
        // Continuous across the switch: ln Φ̄(x) ≈ −x²/2 − ln x − ln√(2π).
        let x = 1e150f64;
        let want = -0.5 * x * x - x.ln() - LN_SQRT_2PI;
        assert!((log_sf(x) / want - 1.0).abs() < 1e-15);
        let p = crate::ObjPertParams::new(0.5, 3.9537535169142464e152, 2.6e113, 8.7e252).unwrap();
        assert_eq!(crate::objpert_delta(&p, 1e-310).unwrap(), 1.0);
    }

    #[test]
    fn log_arithmetic() {
        assert!((log_add(0.0, 0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log_sub(2f64.ln(), 0.0)).abs() < 1e-15);
        assert_eq!(log_sub(1.0, 1.0), f64::NEG_INFINITY);
        assert!((log_expm1(1e-10) - (1e-10f64).ln()).abs() < 1e-9);
        assert!((log_expm1(100.0) - 100.0).abs() < 1e-15);
    }

    #[test]
    fn binomial_coefficients_of_real_order() {
        let (v, s) = ln_abs_binom(5.0, 2);
        assert!((v.exp() - 10.0).abs() < 1e-12 && s > 0.0);
        // C(2.5, 4) = 2.5·1.5·0.5·(−0.5)/24 = −0.0390625
        let (v, s) = ln_abs_binom(2.5, 4);
        assert!((s * v.exp() + 0.039_062_5).abs() < 1e-15);
        assert_eq!(ln_abs_binom(3.0, 5).0, f64::NEG_INFINITY);
    }
}
