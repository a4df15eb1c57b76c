//! Exact comparisons of a uniform real with `2^s·e^{−x}`, `x ≥ 0` rational: the decision
//! [`TableGaussian`](super::TableGaussian) takes for each proposal it cannot accept at once.
//!
//! The uniform is `(u + V)·h` for a drawn word `u`, a constant `h` and a uniform `V ∈ [0, 1)`
//! whose bits are drawn only when needed. A bracket `lo ≤ e^{−x} ≤ hi` in `f64`, with a proven
//! relative error below `2^−41` ([`neg_exp_bracket`]), decides from `u` alone unless `(u + V)·h`
//! can fall on either side of `2^s·e^{−x}`: with the stated tolerance `2^−36`, for a
//! probability of about `2^−35` per comparison. Those comparisons are decided exactly
//! ([`decide_exactly`]): `V`'s bits 64 at a time against brackets of `e^{−x}` as ratios of big
//! integers (alternating Taylor sums), both refined until one side is certain. `e^{−x}` is
//! irrational for rational `x > 0` (Lindemann), so this ends with probability 1; after 4,096
//! bits (probability below `2^−4000`) it returns an error rather than loop on.
//!
//! The law of the decision is therefore exactly `P((u + V)·h < 2^s·e^{−x})`, whatever the
//! floating-point arithmetic: floating point only chooses which exact comparison answers.

use num_bigint::{BigInt, BigUint};
use rand::Rng;

use crate::error::{Error, Result};

/// `e^{−2^i}`, `i = 0, …, 9`: the `f64` nearest each (within one relative ulp: tested).
const EXP_NEG_POW2: [f64; 10] = [
    0.367_879_441_171_442_33,
    0.135_335_283_236_612_7,
    0.018_315_638_888_734_18,
    0.000_335_462_627_902_511_85,
    1.125_351_747_192_591_2e-7,
    1.266_416_554_909_417_6e-14,
    1.603_810_890_548_638e-28,
    2.572_209_372_642_415e-56,
    6.616_261_056_709_485e-112,
    4.377_491_037_053_051e-223,
];

/// `e^{−j/64}`, `j = 0, …, 63`: the `f64` nearest each (within one relative ulp: tested).
const EXP_NEG_64THS: [f64; 64] = [
    1.0,
    0.984_496_437_005_408_5,
    0.969_233_234_476_344_1,
    0.954_206_665_969_188_4,
    0.939_413_062_813_475_8,
    0.924_848_813_216_204_8,
    0.910_510_361_380_034_2,
    0.896_394_206_635_150_5,
    0.882_496_902_584_595_5,
    0.868_815_056_262_843_2,
    0.855_345_327_307_422_5,
    0.842_084_427_143_382_4,
    0.829_029_118_180_400_4,
    0.816_176_213_022_339_8,
    0.803_522_573_689_060_8,
    0.791_065_110_850_296,
    0.778_800_783_071_404_9,
    0.766_726_596_070_82,
    0.754_839_601_989_007_3,
    0.743_136_898_668_758_3,
    0.731_615_628_946_641_8,
    0.720_272_979_955_439_8,
    0.709_106_182_437_398_4,
    0.698_112_510_068_125_8,
    0.687_289_278_790_972_2,
    0.676_633_846_161_729,
    0.666_143_610_703_487_8,
    0.655_816_011_271_501_6,
    0.645_648_526_427_892,
    0.635_638_673_826_052,
    0.625_784_009_604_591_1,
    0.616_082_127_790_678_3,
    0.606_530_659_712_633_4,
    0.597_127_273_421_627_4,
    0.587_869_673_122_346_5,
    0.578_755_598_612_484_3,
    0.569_782_824_730_923,
    0.560_949_160_814_470_8,
    0.552_252_450_163_020_4,
    0.543_690_569_513_000_4,
    0.535_261_428_518_990_3,
    0.526_962_969_243_370_9,
    0.518_793_165_653_889_3,
    0.510_750_023_129_010_7,
    0.502_831_577_970_940_9,
    0.495_035_896_926_198_6,
    0.487_361_076_713_619_1,
    0.479_805_243_559_677_5,
    0.472_366_552_741_014_7,
    0.465_043_188_134_056_3,
    0.457_833_361_771_614_27,
    0.450_735_313_406_362_4,
    0.443_747_310_081_079_87,
    0.436_867_645_705_557_3,
    0.430_094_640_640_062_25,
    0.423_426_641_285_262_8,
    0.416_862_019_678_508_4,
    0.410_399_173_096_37,
    0.404_036_523_663_342_1,
    0.397_772_517_966_611_67,
    0.391_605_626_676_799,
    0.385_534_344_174_578_7,
    0.379_557_188_183_089_6,
    0.373_672_699_406_043,
];

/// The relative tolerance of the fast bracket: `2^−36`, above the proven error `2^−41` of
/// [`neg_exp_estimate`] with its argument ([`neg_exp_bracket`]).
pub(crate) const FAST_TOLERANCE: f64 = 1.0 / 68_719_476_736.0;

/// The largest argument the estimate takes; above, `e^{−x} < 2^{−1000}`.
const FAST_MAX: f64 = 700.0;

/// `2^−1000`, the bracket's upper end above [`FAST_MAX`].
const TINY: f64 = 9.332_636_185_032_189e-302;

/// The most whole units `⌊x⌋` the exact brackets take (`e^{−4096}`: far below any
/// comparison the samplers make except with probability below `2^−900`).
const MAX_UNITS: u128 = 4096;

/// The most 64-bit words of `V` an exact comparison draws.
const MAX_WORDS: u32 = 64;

/// An estimate of `e^{−x}` for `0 ≤ x < 700` with relative error below `2^−44`.
///
/// `x = n + j/64 + s` with `n = ⌊x⌋`, `j = ⌊64(x − n)⌋`, `s ∈ [0, 1/64)`, each split exact
/// (Sterbenz; scalings by 64). `e^{−n}` is the product of the constants `e^{−2^i}` of `n`'s
/// bits (at most 10 factors, each within `u = 2^−53` relative: at most `20u` with the 9
/// products), `e^{−j/64}` a constant (`u`), `e^{−s}` the degree-5 Taylor polynomial by Horner:
/// truncation `s⁶/720 < 2^−45` and rounding below `12u·e^{s}` relative to `e^{−s} ≥ 0.98`
/// (Higham, "Accuracy and Stability of Numerical Algorithms", §5.1: `γ_{2n}` for degree `n`,
/// plus the three rounded coefficients), two more products `2u`. In all below
/// `36u + 2^{−44.9} < 2^{−44}`.
fn neg_exp_estimate(x: f64) -> f64 {
    debug_assert!((0.0..FAST_MAX).contains(&x));
    // Truncations are floors here (x ≥ 0), without a library call.
    let mut units = x as u32;
    let r = x - f64::from(units);
    let mut v = 1.0;
    for c in EXP_NEG_POW2 {
        if units & 1 == 1 {
            v *= c;
        }
        units >>= 1;
    }
    let scaled = r * 64.0;
    let j = scaled as usize;
    let s = (scaled - j as f64) / 64.0;
    let poly = 1.0 - s * (1.0 - s * (0.5 - s * (1.0 / 6.0 - s * (1.0 / 24.0 - s / 120.0))));
    v * EXP_NEG_64THS[j] * poly
}

/// `lo ≤ e^{−num/den} ≤ hi` in `f64`, `den ≥ 1`, for a relative `tolerance ≥ 2^−36`.
///
/// The argument `x̃ = fl(fl(num)/fl(den))` is within `4u·x` of `x` (three roundings), so
/// `e^{−x̃}` is within a relative `e^{4u·700} − 1 < 2^{−41.4}` of `e^{−x}` for `x̃ < 700`; with
/// the estimate's `2^{−44}` the error is below `2^{−41}`, and `e^{−x̃}·(1 ∓ tolerance)`,
/// rounded, brackets `e^{−x}`. For `x̃ ≥ 700`, `x > 699` and `e^{−x} < 2^{−1000}`.
pub(crate) fn neg_exp_bracket(num: u128, den: u128, tolerance: f64) -> (f64, f64) {
    debug_assert!(den >= 1 && tolerance >= FAST_TOLERANCE);
    if num == 0 {
        return (1.0, 1.0);
    }
    let x = num as f64 / den as f64;
    if x >= FAST_MAX {
        return (0.0, TINY);
    }
    let e = neg_exp_estimate(x);
    (e * (1.0 - tolerance), e * (1.0 + tolerance))
}

/// `2^s` for `s ≤ 1000`.
fn pow2(s: u32) -> f64 {
    debug_assert!(s <= 1000);
    f64::from_bits(u64::from(1023 + s) << 52)
}

/// Whether `(u + V)·h < 2^shift·e^{−num/den}` for a uniform `V ∈ [0, 1)` drawn as needed
/// (module docs), `h ≥ 1`, `den ≥ 1`; `tolerance` is the fast bracket's ([`FAST_TOLERANCE`]
/// outside tests).
///
/// # Errors
/// [`Error::InvalidParameter`] when `⌊num/den⌋ > 4096` or the comparison is still undecided
/// after 4,096 bits of `V` — both only when the fast bracket cannot decide, with probability
/// below `2^−900` in the samplers here.
pub(crate) fn below_scaled_neg_exp<R: Rng + ?Sized>(
    rng: &mut R,
    (u, h): (u64, u64),
    shift: u32,
    (num, den): (u128, u128),
    tolerance: f64,
) -> Result<bool> {
    let p = u128::from(u) * u128::from(h);
    if shift <= 1000 {
        let (lo, hi) = neg_exp_bracket(num, den, tolerance);
        let scale = pow2(shift);
        let (lo, hi) = (lo * scale, hi * scale);
        // `as u128` rounds down and saturates: `(u + V)·h < (u + 1)·h ≤ ⌊lo⌋ ≤ 2^s e^{−x}`,
        // or `(u + V)·h ≥ u·h > ⌊hi⌋`, so `≥ hi ≥ 2^s e^{−x}`.
        if p + u128::from(h) <= lo as u128 {
            return Ok(true);
        }
        if hi < 3.4e38 && p > hi as u128 {
            return Ok(false);
        }
    }
    decide_exactly(rng, p, h, shift, (num, den))
}

/// The exact comparison of [`below_scaled_neg_exp`] given `p = u·h`: `V`'s bits against big
/// integer brackets of `e^{−x}`, refined together.
fn decide_exactly<R: Rng + ?Sized>(
    rng: &mut R,
    p: u128,
    h: u64,
    shift: u32,
    (num, den): (u128, u128),
) -> Result<bool> {
    let (p, h) = (BigUint::from(p), BigUint::from(h));
    let mut v = BigUint::ZERO;
    for words in 1..=MAX_WORDS {
        v = (v << 64u32) | BigUint::from(rng.next_u64());
        let k = 64 * words;
        let [(lo_n, lo_d), (hi_n, hi_d)] = neg_exp_exact(num, den, 32 * words + 1)?;
        // V ∈ [v/2^k, (v + 1)/2^k): true when (v + 1)·h/2^k + p ≤ 2^s·lo, false when
        // v·h/2^k + p ≥ 2^s·hi; in integers, times 2^k and the brackets' denominators.
        let base = &p << k;
        let scale = |n: BigUint| n << (shift + k);
        if (&base + (&v + 1u32) * &h) * lo_d <= scale(lo_n) {
            return Ok(true);
        }
        if (base + &v * &h) * hi_d >= scale(hi_n) {
            return Ok(false);
        }
    }
    Err(Error::InvalidParameter {
        name: "sigma",
        value: num as f64 / den as f64,
        reason: "the exact comparison with exp(-x) stayed undecided after 4096 bits",
    })
}

/// `[lo, hi]` around `e^{−num/den}` as (numerator, denominator) pairs of big integers, from
/// the alternating Taylor sums of `terms` (odd, at least 3) terms.
///
/// With `x = n + a/den`: for `f = a/den ∈ [0, 1)` (and for `f = 1`) the terms `f^i/i!` do not
/// increase, so the partial sums alternate around `e^{−f}`: `S_terms ≤ e^{−f} ≤ S_{terms−1}`
/// (odd `terms`), and `S_3 > 0`. Then `e^{−x} = (e^{−1})^n·e^{−f}`, bracketed by the products of
/// the brackets (all positive).
///
/// # Errors
/// [`Error::InvalidParameter`] for `⌊num/den⌋ > 4096`.
pub(super) fn neg_exp_exact(num: u128, den: u128, terms: u32) -> Result<[(BigUint, BigUint); 2]> {
    let n = num / den;
    if n > MAX_UNITS {
        return Err(Error::InvalidParameter {
            name: "sigma",
            value: num as f64 / den as f64,
            reason: "exp(-x) beyond the exact comparison's range (x > 4096)",
        });
    }
    let ((lo_f, hi_f), d_f) = alternating_sums(num % den, den, terms);
    let ((lo_1, hi_1), d_1) = alternating_sums(1, 1, terms);
    let n = n as u32;
    let d = d_1.pow(n) * d_f;
    Ok([(lo_1.pow(n) * lo_f, d.clone()), (hi_1.pow(n) * hi_f, d)])
}

/// The odd and even partial sums `S_K ≤ e^{−a/b} ≤ S_{K−1}` (`K = terms`, odd) of
/// `Σ_i (−a/b)^i / i!` over their common denominator `Q = b^K·K!`: `((S_K·Q, S_{K−1}·Q), Q)`.
/// Terms `t_i = a^i·b^{K−i}·K!/i!` by `t_{i+1} = t_i·a / (b·(i + 1))`, an exact division.
fn alternating_sums(a: u128, b: u128, terms: u32) -> ((BigUint, BigUint), BigUint) {
    debug_assert!(terms >= 3 && terms % 2 == 1 && a <= b);
    let (a, b) = (BigUint::from(a), BigUint::from(b));
    let factorial: BigUint = (1..=terms).map(BigUint::from).product();
    let q = b.pow(terms) * factorial;
    let mut t = q.clone();
    let mut even = BigInt::ZERO; // Σ_{i < K} (−1)^i t_i, i.e. S_{K−1}·Q
    for i in 0..terms {
        if i % 2 == 0 {
            even += BigInt::from(t.clone());
        } else {
            even -= BigInt::from(t.clone());
        }
        t = t * &a / (&b * (i + 1));
    }
    // S_{K−1} ≥ S_K = S_{K−1} − t_K/Q ≥ S_3 > 0 (K odd).
    let hi = even.to_biguint().unwrap_or_default();
    let lo = &hi - t.min(hi.clone());
    ((lo, hi), q)
}

#[cfg(test)]
mod tests;
