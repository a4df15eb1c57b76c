use super::super::neg_exp::neg_exp_exact;
use super::super::tests::{assert_chi2, dg_pmf, tally};
use super::*;
use crate::rng::seeded_rng;
use num_bigint::BigUint;
use statrs::distribution::{ContinuousCDF, Normal};

#[test]
fn heights_bound_the_law_exactly() {
    for p in [
        1u128,
        2,
        9,
        400,
        1_000_003,
        (1 << 48) + 12_345,
        (1 << 50) - 1,
    ] {
        let t = TableGaussian::new(p).unwrap();
        let l = &*t.layout;
        let w = 1u64 << l.width_bits;
        // H ≥ 2^24·hi ≥ 2^24·f and L ≤ 2^24·lo ≤ 2^24·f, against exact brackets of f(m).
        let f = |m: u64| neg_exp_exact(u128::from(m) * u128::from(m), 2 * p, 41).unwrap();
        let above = |h: u64, m: u64| {
            let [_, (n, d)] = f(m);
            BigUint::from(h) * d >= n << HEIGHT_BITS
        };
        let below = |s: u64, m: u64| {
            let [(n, d), _] = f(m);
            BigUint::from(s) * d <= n << HEIGHT_BITS
        };
        for (k, &(h, s)) in l.boxes.iter().enumerate() {
            let k = k as u64;
            assert!(above(h, k * w), "p = {p}: box {k} height");
            assert!(below(s, (k + 1) * w - 1), "p = {p}: box {k} squeeze");
            // Tight: two units less is below f (where f is above two units).
            assert!(h < 3 || !above(h - 2, k * w), "p = {p}: box {k} loose");
        }
        let (start, step, height) = l.tail;
        assert!(above(height, start), "p = {p}: tail height");
        assert!(
            10 * u128::from(step) * u128::from(start) >= 7 * p,
            "p = {p}: tail step"
        );
        assert!(
            start as f64 >= 7.9 * (p as f64).sqrt(),
            "p = {p}: the boxes reach 7.9σ"
        );
    }
}

#[test]
fn alias_columns_give_each_entry_its_weight() {
    for weights in [
        vec![5u64, 0, 3, 8],
        vec![1, 1],
        vec![7, 0, 0, 0, 0, 0, 0, 1],
    ] {
        let total: u64 = weights.iter().sum();
        let columns = alias_columns(&weights, total);
        let n = weights.len() as u128;
        for (i, &w) in weights.iter().enumerate() {
            let mass: u128 = columns
                .iter()
                .enumerate()
                .map(|(c, &(keep, alias))| {
                    let own = if c == i { u128::from(keep) } else { 0 };
                    let other = if alias == i {
                        u128::from(total - keep)
                    } else {
                        0
                    };
                    own + other
                })
                .sum();
            assert_eq!(mass, n * u128::from(w), "{weights:?}: entry {i}");
        }
    }
}

#[test]
fn small_variances_have_the_discrete_gaussian_law() {
    let n = 200_000u64;
    for (seed, p) in [(1u64, 1u128), (2, 2), (3, 9), (4, 400)] {
        let t = TableGaussian::new(p).unwrap();
        let mut rng = seeded_rng(seed);
        let c = tally((0..n).map(|_| t.sample(&mut rng).unwrap()));
        assert_chi2(&c, dg_pmf(p as f64), n, &format!("table, p = {p}"));
    }
}

#[test]
fn the_tail_and_the_exact_comparisons_have_the_law() {
    // Two boxes and a tolerance of 1/2: most draws go through the tail or the exact path.
    let n = 200_000u64;
    for (seed, p, boxes) in [(5u64, 9u128, 2usize), (6, 1, 1), (7, 400, 3)] {
        let t = TableGaussian::with_layout(p, 0, boxes, 0.5).unwrap();
        let mut rng = seeded_rng(seed);
        let c = tally((0..n).map(|_| t.sample(&mut rng).unwrap()));
        let tail = c
            .iter()
            .filter(|&(&x, _)| x.unsigned_abs() >= boxes as u128)
            .map(|(_, &k)| k)
            .sum::<u64>();
        assert!(tail > n / 20, "p = {p}: {tail} draws in the tail");
        assert_chi2(&c, dg_pmf(p as f64), n, &format!("tail, p = {p}"));
    }
}

#[test]
fn large_variances_match_the_gaussian_in_quantile_bins() {
    // σ = 2^24 and σ ≈ 2^24.6, the scales of the grid releases: 40 equiprobable bins of the
    // continuous N(0, σ²) (the discrete law's bin masses differ from them by O(1/σ)).
    let n = 400_000u64;
    for (seed, p) in [(8u64, 1u128 << 48), (9, 650_000_000_000_000)] {
        let sigma = (p as f64).sqrt();
        let t = TableGaussian::new(p).unwrap();
        let normal = Normal::new(0.0, sigma).unwrap();
        let bins = 40usize;
        let mut counts = vec![0u64; bins];
        let mut rng = seeded_rng(seed);
        for _ in 0..n {
            let x = t.sample(&mut rng).unwrap() as f64;
            let b = ((normal.cdf(x) * bins as f64) as usize).min(bins - 1);
            counts[b] += 1;
        }
        let e = n as f64 / bins as f64;
        let stat: f64 = counts.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
        // χ² on 39 degrees of freedom: P(stat > 90) < 1e-6.
        assert!(stat < 90.0, "p = {p}: chi2 = {stat}, {counts:?}");
    }
}

/// A generator that counts the words drawn from it.
struct Counting<R>(R, u64);

impl<R: Rng> rand::TryRng for Counting<R> {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> std::result::Result<u32, Self::Error> {
        self.1 += 1;
        Ok(self.0.next_u32())
    }
    fn try_next_u64(&mut self) -> std::result::Result<u64, Self::Error> {
        self.1 += 1;
        Ok(self.0.next_u64())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Self::Error> {
        self.1 += dst.len().div_ceil(8) as u64;
        self.0.fill_bytes(dst);
        Ok(())
    }
}

#[test]
fn a_draw_takes_about_three_words() {
    for p in [1u128 << 48, 3 << 48, 100] {
        let t = TableGaussian::new(p).unwrap();
        let mut rng = Counting(seeded_rng(10), 0);
        let n = 100_000;
        for _ in 0..n {
            t.sample(&mut rng).unwrap();
        }
        let per_draw = rng.1 as f64 / f64::from(n);
        assert!(
            (3.0..3.5).contains(&per_draw),
            "p = {p}: {per_draw} words per draw"
        );
    }
}

#[test]
fn bad_variances_are_errors() {
    assert!(TableGaussian::new(0).is_err());
    assert!(TableGaussian::new(MAX_VARIANCE + 1).is_err());
    assert!(TableGaussian::new(MAX_VARIANCE).is_ok());
}
