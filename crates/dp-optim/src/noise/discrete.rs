//! Exact samplers on the integers: Bernoulli(exp(−x)), the discrete Laplace and the discrete
//! Gaussian of Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy"
//! (NeurIPS 2020; CKS below), Algorithms 1–3, and [`TableGaussian`], the same discrete
//! Gaussian (integer variance) by rejection from a table of boxes in about three random words
//! per draw instead of a dozen — the sampler the grid releases use.
//!
//! Every probability is a ratio of integers and every random choice is a comparison of a
//! uniform integer (drawn by rejection from whole 64-bit words, so exactly uniform) with such a
//! ratio: the laws below hold exactly, not up to floating-point error. Arithmetic is in `u128`
//! with overflow checks; an overflow is an error, never a wrapped value. For the parameters
//! [`super::Noise`] uses (scale in grid units below `2^25`) the first overflow needs a draw of
//! magnitude beyond `2^38` grid units, an event of probability below `exp(−2^13)`.

use rand::{Rng, RngExt};

use crate::error::{Error, Result};

mod neg_exp;
mod table;

pub use table::TableGaussian;

/// The error for an exact computation that does not fit in `u128`.
fn overflow(value: f64) -> Error {
    Error::InvalidParameter {
        name: "sigma",
        value,
        reason: "the exact sampler's integer arithmetic overflowed (scale in grid units too large)",
    }
}

/// A uniform integer in `[0, n)`, `n ≥ 1`, exactly: for `n < 2^64` by
/// [`uniform_below_u64`] (one word almost always); above, by rejection of two-word draws
/// outside the smallest enclosing power of two (fewer than two draws on average).
fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    debug_assert!(n >= 1);
    if let Ok(small) = u64::try_from(n) {
        return u128::from(uniform_below_u64(rng, small));
    }
    let bits = 128 - (n - 1).leading_zeros();
    let mask = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let word = u128::from(rng.next_u64()) | (u128::from(rng.next_u64()) << 64);
        let v = word & mask;
        if v < n {
            return v;
        }
    }
}

/// A uniform integer in `[0, n)`, `n ≥ 1`, by Lemire's multiply-and-reject (D. Lemire, "Fast
/// random integer generation in an interval", ACM TOMACS 29(1), 2019, Algorithm 5): for a
/// uniform word `x`, `m = x·n` (128 bits); reject when `m mod 2^64 < 2^64 mod n`, else return
/// `⌊m / 2^64⌋`. Each `j < n` is returned by exactly `⌊2^64/n⌋` accepted words (Lemire,
/// §4), so the law is exactly uniform; a word is rejected with probability `< n/2^64`.
fn uniform_below_u64<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        // 2^64 mod n, computed in 64 bits as (2^64 − n) mod n.
        let threshold = n.wrapping_neg() % n;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as u64
}

/// Bernoulli(`num/den`) for `den ≥ 1` (certain when `num ≥ den`): whether a uniform integer
/// `V` on `[0, den)` is below `num`.
///
/// For `den < 2^64`, `V` by [`uniform_below_u64`]. Above, `V = h·2^64 + l` by rejection
/// from `h` uniform on `[0, 2^b)` (`2^b` the smallest power of two above `⌊(den−1)/2^64⌋`)
/// and `l` a whole word, drawn lazily: `h` alone rejects (`h > ⌊(den−1)/2^64⌋`) or, when
/// below that and `≠ ⌊num/2^64⌋`, decides `V < num`; only the remaining ties draw `l`. The
/// draws that decide are exactly those of the full comparison, so the law is exactly
/// Bernoulli(`num/den`), in one word per attempt almost always (fewer than two attempts on
/// average).
fn bernoulli<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    if num >= den {
        return true;
    }
    if let Ok(small) = u64::try_from(den) {
        // num < den < 2^64.
        return u128::from(uniform_below_u64(rng, small)) < num;
    }
    let top = ((den - 1) >> 64) as u64;
    let num_hi = (num >> 64) as u64;
    let mask = u64::MAX.checked_shr(top.leading_zeros()).unwrap_or(0);
    loop {
        let h = rng.next_u64() & mask;
        if h > top {
            continue; // V ≥ (top + 1)·2^64 ≥ den
        }
        if h < top && h != num_hi {
            return h < num_hi; // V < top·2^64 < den, and V < num iff h < num_hi
        }
        let v = (u128::from(h) << 64) | u128::from(rng.next_u64());
        if v < den {
            return v < num;
        }
    }
}

/// Bernoulli(`exp(−num/den)`) for `num/den ∈ [0, 1]` (CKS Alg. 1, first part): draw
/// `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first `A_k = 0`; return whether that
/// `k` is odd. `P(k odd) = Σ_j (−1)^j γ^j / j! = exp(−γ)`.
fn bernoulli_exp_unit<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> Result<bool> {
    bernoulli_exp_unit_from(rng, num, den, 1)
}

/// [`bernoulli_exp_unit`] from its `k`-th trial on (the earlier ones having succeeded).
fn bernoulli_exp_unit_from<R: Rng + ?Sized>(
    rng: &mut R,
    num: u128,
    den: u128,
    mut k: u128,
) -> Result<bool> {
    // `d = den·k`, then one `den` more per trial (an addition, not a `u128` product).
    let mut d = den.checked_mul(k).ok_or_else(|| overflow(k as f64))?;
    loop {
        if !bernoulli(rng, num, d) {
            return Ok(k % 2 == 1);
        }
        k += 1;
        d = d.checked_add(den).ok_or_else(|| overflow(k as f64))?;
    }
}

/// [`bernoulli_exp_unit`] for `num, den < 2^64`, the same draws in `u64` arithmetic while
/// `den·k < 2^64` (then `Bernoulli(num/(den·k))` is whether a uniform integer on `[0, den·k)`
/// is below `num`, drawn as [`bernoulli`] draws it), handing over to the `u128` trials at the
/// first `k` where it is not.
fn bernoulli_exp_unit_u64<R: Rng + ?Sized>(rng: &mut R, num: u64, den: u64) -> Result<bool> {
    let mut k: u64 = 1;
    while let Some(d) = den.checked_mul(k) {
        if num < d && uniform_below_u64(rng, d) >= num {
            return Ok(k % 2 == 1);
        }
        k += 1;
    }
    bernoulli_exp_unit_from(rng, num.into(), den.into(), k.into())
}

/// Bernoulli(`e^{−1}`): [`bernoulli_exp_unit`] with `γ = 1`, the same draws in `u64`
/// arithmetic. `A_1 ~ Bernoulli(1)` is certain (no draw); for `k ≥ 2`, `A_k ~ Bernoulli(1/k)`
/// is whether a uniform integer on `[0, k)` is 0.
fn bernoulli_exp_one<R: Rng + ?Sized>(rng: &mut R) -> bool {
    let mut k: u64 = 2;
    while uniform_below_u64(rng, k) == 0 {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(`exp(−num/den)`), `den ≥ 1` (CKS Alg. 1): `⌊γ⌋` independent Bernoulli(`e^{−1}`)
/// draws (stopping at the first failure) and one Bernoulli(`exp(−(γ − ⌊γ⌋))`).
///
/// # Errors
/// [`Error::InvalidParameter`] for `den = 0` or an arithmetic overflow.
pub fn bernoulli_exp<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> Result<bool> {
    if den == 0 {
        return Err(Error::InvalidParameter {
            name: "denominator",
            value: 0.0,
            reason: "must be >= 1",
        });
    }
    // One Bernoulli(e^{−1}) per whole unit of γ, subtracting the unit after each success: the
    // same draws in the same order as computing `⌊γ⌋` and `γ mod 1` by division, without the
    // two `u128` divisions (the loop runs at most as often as the draws succeed).
    let mut rest = num;
    while rest >= den {
        if !bernoulli_exp_one(rng) {
            return Ok(false);
        }
        rest -= den;
    }
    bernoulli_exp_unit(rng, rest, den)
}

/// One draw of the discrete Laplace law with integer scale `t ≥ 1`:
/// `P(X = x) = (e^{1/t} − 1)/(e^{1/t} + 1) · e^{−|x|/t}`, `x ∈ ℤ` (CKS Alg. 2 with `s = 1`).
///
/// `U` uniform on `{0, …, t−1}` kept with probability `e^{−U/t}`, `V` geometric with
/// `P(V = v) ∝ e^{−v}`; `|X| = U + tV` then has `P ∝ e^{−|X|/t}`; a fair sign, rejecting
/// "−0" so that 0 is not counted twice.
///
/// # Errors
/// [`Error::InvalidParameter`] for `t = 0` or an arithmetic overflow (probability below
/// `exp(−2^13)` for `t < 2^25`).
pub fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, t: u128) -> Result<i128> {
    if t == 0 {
        return Err(Error::InvalidParameter {
            name: "scale",
            value: 0.0,
            reason: "the discrete Laplace scale must be an integer >= 1",
        });
    }
    // `U < t`, so `bernoulli_exp(U, t)` is `bernoulli_exp_unit(U, t)`, in `u64` for `t < 2^64`.
    let small = u64::try_from(t).ok();
    loop {
        let u = uniform_below(rng, t);
        let keep = match small {
            Some(t) => bernoulli_exp_unit_u64(rng, u as u64, t)?,
            None => bernoulli_exp_unit(rng, u, t)?,
        };
        if !keep {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_one(rng) {
            v += 1;
        }
        let x = t
            .checked_mul(v)
            .and_then(|tv| tv.checked_add(u))
            .filter(|&x| x <= i128::MAX as u128)
            .ok_or_else(|| overflow(t as f64))?;
        let negative = rng.random::<bool>();
        if negative && x == 0 {
            continue;
        }
        let x = x as i128;
        return Ok(if negative { -x } else { x });
    }
}

/// `⌊√(p/q)⌋` for `q ≥ 1` (exact: a floating estimate corrected by integer comparisons).
fn floor_sqrt_ratio(p: u128, q: u128) -> u128 {
    // a² q ≤ p, computed without overflow (None means "greater").
    let fits = |a: u128| {
        a.checked_mul(a)
            .and_then(|s| s.checked_mul(q))
            .is_some_and(|v| v <= p)
    };
    let mut a = ((p as f64) / (q as f64)).sqrt() as u128;
    while a > 0 && !fits(a) {
        a -= 1;
    }
    while fits(a + 1) {
        a += 1;
    }
    a
}

/// One draw of the discrete Gaussian `N_ℤ(0, σ²)` with `σ² = p/q` (`p, q ≥ 1`):
/// `P(X = x) = e^{−x²/(2σ²)} / Σ_{y∈ℤ} e^{−y²/(2σ²)}` (CKS Alg. 3).
///
/// Proposal `Y` discrete Laplace with scale `t = ⌊σ⌋ + 1`, accepted with probability
/// `exp(−(|Y| − σ²/t)²/(2σ²))`; with `σ² = p/q` the exponent is the ratio of integers
/// `(|Y|·t·q − p)² / (2·p·q·t²)`. Fewer than two proposals on average (CKS, §5).
///
/// # Errors
/// [`Error::InvalidParameter`] for `p = 0` or `q = 0`, or an arithmetic overflow (see the
/// module docs).
pub fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, p: u128, q: u128) -> Result<i128> {
    DiscreteGaussian::new(p, q)?.sample(rng)
}

/// The discrete Gaussian `N_ℤ(0, p/q)` of [`discrete_gaussian`] with its proposal scale and
/// acceptance denominator computed once, for many draws at one scale (a release draws one per
/// coordinate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteGaussian {
    p: u128,
    q: u128,
    /// The discrete Laplace proposal's scale `t = ⌊σ⌋ + 1`.
    t: u128,
    /// The acceptance exponent's denominator `2·p·q·t²`.
    den: u128,
}

impl DiscreteGaussian {
    /// The law `N_ℤ(0, p/q)`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `p = 0` or `q = 0`, or `2·p·q·t²` beyond `u128`.
    pub fn new(p: u128, q: u128) -> Result<Self> {
        if p == 0 || q == 0 {
            return Err(Error::InvalidParameter {
                name: "sigma",
                value: 0.0,
                reason: "the discrete Gaussian's variance p/q needs p, q >= 1",
            });
        }
        let t = floor_sqrt_ratio(p, q) + 1;
        let den = t
            .checked_mul(t)
            .and_then(|tt| tt.checked_mul(p))
            .and_then(|v| v.checked_mul(q))
            .and_then(|v| v.checked_mul(2))
            .ok_or_else(|| overflow(p as f64 / q as f64))?;
        Ok(Self { p, q, t, den })
    }

    /// One draw (CKS Alg. 3, as [`discrete_gaussian`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an arithmetic overflow (see the module docs).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i128> {
        let Self { p, q, t, den } = *self;
        let too_big = || overflow((p as f64 / q as f64).sqrt());
        loop {
            let y = discrete_laplace(rng, t)?;
            let scaled = match (u64::try_from(y.unsigned_abs()), u64::try_from(t), q) {
                // One 64 × 64 → 128-bit product (it cannot overflow) for the usual `q = 1`.
                (Ok(a), Ok(b), 1) => u128::from(a) * u128::from(b),
                _ => y
                    .unsigned_abs()
                    .checked_mul(t)
                    .and_then(|v| v.checked_mul(q))
                    .ok_or_else(too_big)?,
            };
            let gap = scaled.abs_diff(p);
            let num = gap.checked_mul(gap).ok_or_else(too_big)?;
            if bernoulli_exp(rng, num, den)? {
                return Ok(y);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded_rng;
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    use std::collections::BTreeMap;

    /// Pearson χ² of `counts` against the probabilities `pmf(x)` over all integers, with every
    /// cell of expected count < 20 merged into the two tails; panics when the p-value is below
    /// 1e-6 (the false-failure rate of each call).
    pub(super) fn assert_chi2(
        counts: &BTreeMap<i128, u64>,
        pmf: impl Fn(i128) -> f64,
        n: u64,
        what: &str,
    ) {
        let n_f = n as f64;
        // Central cells: the contiguous range around 0 where n·pmf ≥ 20.
        let mut hi = 0i128;
        while n_f * pmf(hi + 1) >= 20.0 {
            hi += 1;
        }
        let lo = -hi;
        let central: f64 = (lo..=hi).map(&pmf).sum();
        let tail = ((1.0 - central) / 2.0).max(0.0);
        let mut stat = 0.0;
        let mut cells = 0usize;
        for x in lo..=hi {
            let e = n_f * pmf(x);
            let o = *counts.get(&x).unwrap_or(&0) as f64;
            stat += (o - e) * (o - e) / e;
            cells += 1;
        }
        for side in [-1i128, 1] {
            let o: u64 = counts
                .iter()
                .filter(|&(&x, _)| if side < 0 { x < lo } else { x > hi })
                .map(|(_, &c)| c)
                .sum();
            let e = n_f * tail;
            if e >= 5.0 {
                stat += (o as f64 - e).powi(2) / e;
                cells += 1;
            } else {
                // A tail too thin for χ²: its count must stay small (P(count > e + 12√e + 12)
                // is far below 1e-6 for a Poisson count of mean e ≤ 5).
                assert!(
                    (o as f64) <= e + 12.0 * e.sqrt() + 12.0,
                    "{what}: tail count {o}"
                );
            }
        }
        let p = 1.0 - ChiSquared::new((cells - 1) as f64).unwrap().cdf(stat);
        assert!(
            p > 1e-6,
            "{what}: chi2 = {stat} on {} dof, p = {p}",
            cells - 1
        );
    }

    pub(super) fn tally(draws: impl Iterator<Item = i128>) -> BTreeMap<i128, u64> {
        let mut m = BTreeMap::new();
        for x in draws {
            *m.entry(x).or_insert(0) += 1;
        }
        m
    }

    /// The discrete Gaussian's pmf with variance `s2`, normalised over `|x| ≤ 60σ + 60`.
    pub(super) fn dg_pmf(s2: f64) -> impl Fn(i128) -> f64 {
        let r = (60.0 * s2.sqrt() + 60.0) as i128;
        let z: f64 = (-r..=r).map(|y| (-(y * y) as f64 / (2.0 * s2)).exp()).sum();
        move |x| (-(x * x) as f64 / (2.0 * s2)).exp() / z
    }

    #[test]
    fn discrete_gaussian_matches_its_pmf() {
        // σ² = p/q in grid units: 0.25 (σ = 0.5), 1, 9 (σ = 3), 2/3 (a non-dyadic ratio), 400.
        for (seed, p, q, n) in [
            (1u64, 1u128, 4u128, 200_000u64),
            (2, 1, 1, 200_000),
            (3, 9, 1, 200_000),
            (4, 2, 3, 200_000),
            (5, 400, 1, 200_000),
            // The same laws as ratios of large integers: acceptance denominators 2pqt² of
            // about 2^98, so every trial takes the two-word path of `bernoulli`.
            (14, 400 << 40, 1 << 40, 200_000),
            (15, 2 * 3u128.pow(30), 3u128.pow(31), 200_000),
        ] {
            let mut rng = seeded_rng(seed);
            let c = tally((0..n).map(|_| discrete_gaussian(&mut rng, p, q).unwrap()));
            assert_chi2(
                &c,
                dg_pmf(p as f64 / q as f64),
                n,
                &format!("N_Z(0, {p}/{q})"),
            );
        }
    }

    /// At the scale `Noise` uses (σ ≈ 2^24 grid units) cells are too fine for χ², so test the
    /// law through its standardised values: mean 0, variance σ² (z-tests), and the fraction of
    /// |X| ≤ σ against the continuous value (they agree to ~1e-7 at this σ).
    #[test]
    fn discrete_gaussian_at_grid_scale() {
        let mut rng = seeded_rng(6);
        let p: u128 = 3 << 47; // σ² = 3·2^47, σ ≈ 2^24.3
        let s = (p as f64).sqrt();
        let n = 40_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| discrete_gaussian(&mut rng, p, 1).unwrap() as f64 / s)
            .collect();
        let (m, v) = crate::testutil::mean_var(&xs);
        crate::testutil::assert_z(m, 0.0, (1.0 / n as f64).sqrt(), "mean");
        crate::testutil::assert_z(v, 1.0, (2.0 / n as f64).sqrt(), "variance");
        let inside = xs.iter().filter(|x| x.abs() <= 1.0).count() as f64 / n as f64;
        let p1 = 0.682_689_492_137_085_9;
        crate::testutil::assert_z(inside, p1, (p1 * (1.0 - p1) / n as f64).sqrt(), "P(|X|<=σ)");
    }

    #[test]
    fn discrete_laplace_matches_its_pmf() {
        for (seed, t) in [(7u64, 1u128), (8, 3), (9, 20)] {
            let mut rng = seeded_rng(seed);
            let n = 200_000;
            let c = tally((0..n).map(|_| discrete_laplace(&mut rng, t).unwrap()));
            let a = (-1.0 / t as f64).exp();
            let pmf = move |x: i128| (1.0 - a) / (1.0 + a) * a.powi(x.unsigned_abs() as i32);
            assert_chi2(&c, pmf, n, &format!("DLap({t})"));
        }
    }

    /// Frequencies of Bernoulli(exp(−x)) for x ∈ {0, 1/3, 1, 5/2, 7}: binomial z-tests
    /// (|z| ≤ 5.5, false-failure rate ≈ 4e-8 each); exp(−0) is certain.
    #[test]
    fn bernoulli_exp_frequencies() {
        let mut rng = seeded_rng(10);
        let n = 200_000;
        for (num, den) in [(0u128, 1u128), (1, 3), (1, 1), (5, 2), (7, 1)] {
            let hits = (0..n)
                .filter(|_| bernoulli_exp(&mut rng, num, den).unwrap())
                .count();
            let p = (-(num as f64) / den as f64).exp();
            if num == 0 {
                assert_eq!(hits, n);
                continue;
            }
            let f = hits as f64 / n as f64;
            crate::testutil::assert_z(f, p, (p * (1.0 - p) / n as f64).sqrt(), "bernoulli_exp");
        }
    }

    /// `uniform_below` for `n = 7` (exact cells) and for `n = 3·2^62 + 1` and `2^64 + 3` (where
    /// Lemire's method rejects a quarter of the words, and the two-word path): χ² of the 7
    /// values, or of 9 equal-width bins, each with false-failure rate 1e-6 (`assert_chi2`).
    #[test]
    fn uniform_below_is_uniform() {
        let mut rng = seeded_rng(12);
        let n = 120_000u64;
        let c = tally((0..n).map(|_| uniform_below(&mut rng, 7) as i128 - 3));
        assert_chi2(
            &c,
            |x| if x.abs() <= 3 { 1.0 / 7.0 } else { 0.0 },
            n,
            "U[0,7)",
        );
        for big in [(3u128 << 62) + 1, (1u128 << 64) + 3] {
            let bins = tally((0..n).map(|_| {
                let v = uniform_below(&mut rng, big);
                assert!(v < big);
                // 9 bins of width ⌈big/9⌉ (the last short by < 9 values of ~2^60).
                (v / big.div_ceil(9)) as i128 - 4
            }));
            assert_chi2(
                &bins,
                |x| if x.abs() <= 4 { 1.0 / 9.0 } else { 0.0 },
                n,
                "bins",
            );
        }
    }

    /// `bernoulli` with denominators of two words, where the high word decides or ties:
    /// binomial z-tests (|z| ≤ 5.5, false-failure rate ≈ 4e-8 each).
    #[test]
    fn wide_bernoulli_frequencies() {
        let mut rng = seeded_rng(13);
        let n = 200_000;
        let two64 = 1u128 << 64;
        for (num, den) in [
            (two64 + 7, 3 * two64 + 5),        // high words 1 of 3: frequent ties
            (5 * two64 / 2, 3 * two64),        // a tie at the boundary word itself
            (3 << 62, two64),                  // den = 2^64: one word, no high part
            (1u128 << 99, (1u128 << 100) + 1), // wide: ties almost never
            (7 * (two64 - 1), 7 * two64),      // num close to den
        ] {
            let hits = (0..n).filter(|_| bernoulli(&mut rng, num, den)).count();
            let p = num as f64 / den as f64;
            let sd = (p * (1.0 - p) / n as f64).sqrt().max(1.0 / n as f64);
            crate::testutil::assert_z(hits as f64 / n as f64, p, sd, "bernoulli");
        }
        assert!(bernoulli(&mut rng, 3 * two64, 3 * two64));
    }

    /// `bernoulli_exp_one` is `bernoulli_exp_unit(1, 1)` draw for draw: the same outcomes from
    /// the same stream, which is left in the same state.
    #[test]
    fn bernoulli_exp_one_draws_as_the_general_path() {
        let (mut a, mut b) = (seeded_rng(16), seeded_rng(16));
        let mut hits = 0;
        for _ in 0..20_000 {
            let one = bernoulli_exp_one(&mut a);
            assert_eq!(one, bernoulli_exp_unit(&mut b, 1, 1).unwrap());
            hits += usize::from(one);
        }
        assert_eq!(a.next_u64(), b.next_u64());
        // e^{-1} ≈ 0.3679: both outcomes occur.
        assert!((6_000..8_700).contains(&hits), "{hits}");
    }

    /// `bernoulli_exp_unit_u64` is `bernoulli_exp_unit` draw for draw, including denominators
    /// where `den·k` leaves `u64` after a few trials and the `u128` trials take over.
    #[test]
    fn bernoulli_exp_unit_u64_draws_as_the_general_path() {
        let (mut a, mut b) = (seeded_rng(17), seeded_rng(17));
        let mut src = seeded_rng(18);
        let big = u64::MAX / 3;
        let mut outcomes = [0usize; 2];
        for i in 0..20_000u64 {
            let den = match i % 4 {
                0 => 1 + src.random_range(0..1000),
                1 => 1 + src.random_range(0..1u64 << 25),
                2 => big - src.random_range(0..1000),
                _ => u64::MAX - src.random_range(0..1000),
            };
            let num = src.random_range(0..=den);
            let fast = bernoulli_exp_unit_u64(&mut a, num, den).unwrap();
            let general = bernoulli_exp_unit(&mut b, num.into(), den.into()).unwrap();
            assert_eq!(fast, general, "{num}/{den}");
            outcomes[usize::from(fast)] += 1;
        }
        assert_eq!(a.next_u64(), b.next_u64());
        assert!(outcomes.iter().all(|&c| c > 2_000), "{outcomes:?}");
    }

    #[test]
    fn rejects_degenerate_parameters() {
        let mut rng = seeded_rng(11);
        assert!(bernoulli_exp(&mut rng, 1, 0).is_err());
        assert!(discrete_laplace(&mut rng, 0).is_err());
        assert!(discrete_gaussian(&mut rng, 0, 1).is_err());
        assert!(discrete_gaussian(&mut rng, 1, 0).is_err());
        assert_eq!(floor_sqrt_ratio(8, 2), 2);
        assert_eq!(floor_sqrt_ratio(1, 4), 0);
        assert_eq!(floor_sqrt_ratio(u128::MAX, 1), u64::MAX as u128);
        // Uniform integers hit every value of a small range.
        let mut seen = [false; 5];
        for _ in 0..200 {
            seen[uniform_below(&mut rng, 5) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
