use super::*;
use crate::rng::seeded_rng;
use rand::RngExt;

/// `c = mantissa / 2^shift` exactly, for a positive normal `c < 2`.
fn as_ratio(c: f64) -> (BigUint, u32) {
    let bits = c.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    assert!(exponent < 0, "{c}");
    (BigUint::from(mantissa), (-exponent) as u32)
}

/// Whether `lo ≤ c/e^{−x}·… `: `lo·(1 − rel) ≤ c` and `c ≤ hi·(1 + rel)` against the exact
/// bracket `[lo, hi]` of `e^{−num/den}`, with `rel = 2^−rel_bits`.
fn within(c: f64, (num, den): (u128, u128), rel_bits: u32) -> bool {
    let [(lo_n, lo_d), (hi_n, hi_d)] = neg_exp_exact(num, den, 61).unwrap();
    let (m, sh) = as_ratio(c);
    let one = BigUint::from(1u8) << rel_bits;
    // m/2^sh ≥ lo_n/lo_d·(1 − 2^−r)  ⇔  m·lo_d·2^r ≥ lo_n·(2^r − 1)·2^sh
    let above = &m * lo_d * &one >= (lo_n * (&one - 1u8)) << sh;
    let below = m * hi_d * &one <= (hi_n * (&one + 1u8)) << sh;
    above && below
}

#[test]
fn constants_are_within_one_ulp() {
    for (i, &c) in EXP_NEG_POW2.iter().enumerate() {
        assert!(within(c, (1 << i, 1), 53), "e^-2^{i}: {c}");
    }
    for (j, &c) in EXP_NEG_64THS.iter().enumerate().skip(1) {
        assert!(within(c, (j as u128, 64), 53), "e^-{j}/64: {c}");
    }
    assert!(
        !within(0.367_879_441_171_442_4, (1, 1), 53),
        "the check can fail"
    );
}

#[test]
fn estimate_is_within_its_proven_bound_and_bracket_holds() {
    let mut rng = seeded_rng(11);
    let mut cases: Vec<(u128, u128)> = vec![(1, 1), (1, 64), (63, 64), (699, 1), (1, 1 << 60)];
    for _ in 0..400 {
        let bits = rng.random_range(0..63);
        let den = u128::from(rng.random_range(1..=u64::MAX >> bits));
        let x: f64 = rng.random_range(0.0..700.0) * if rng.random::<bool>() { 1.0 } else { 1e-3 };
        cases.push(((x * den as f64) as u128, den));
    }
    for (num, den) in cases {
        let x = num as f64 / den as f64;
        if x >= FAST_MAX || num == 0 {
            continue;
        }
        // The proof's 2^−41 for the argument and estimate together.
        assert!(within(neg_exp_estimate(x), (num, den), 41), "{num}/{den}");
        let (lo, hi) = neg_exp_bracket(num, den, FAST_TOLERANCE);
        let [(lo_n, lo_d), (hi_n, hi_d)] = neg_exp_exact(num, den, 61).unwrap();
        let (a, sa) = as_ratio(lo);
        let (b, sb) = as_ratio(hi);
        assert!(a * lo_d <= lo_n << sa, "lo above e^-x at {num}/{den}");
        assert!(b * hi_d >= hi_n << sb, "hi below e^-x at {num}/{den}");
    }
}

#[test]
fn exact_brackets_contain_and_narrow() {
    for (num, den) in [
        (0u128, 1u128),
        (1, 3),
        (5, 2),
        (2_000, 7),
        (1 << 70, 1 << 70),
    ] {
        let wide = neg_exp_exact(num, den, 5).unwrap();
        let narrow = neg_exp_exact(num, den, 41).unwrap();
        let value = (-(num as f64 / den as f64)).exp();
        let ratio = |(n, d): &(BigUint, BigUint)| {
            let top = |v: &BigUint| {
                let shift = v.bits().saturating_sub(60);
                (
                    (v >> shift).to_string().parse::<f64>().unwrap(),
                    shift as i32,
                )
            };
            let ((a, sa), (b, sb)) = (top(n), top(d));
            a / b * 2f64.powi(sa - sb)
        };
        // Each bracket contains e^−x (to the f64 comparison's accuracy) and the later is
        // inside the earlier.
        for [lo, hi] in [&wide, &narrow] {
            assert!(ratio(lo) <= value * (1.0 + 1e-12) && value <= ratio(hi) * (1.0 + 1e-12));
        }
        assert!(&narrow[0].0 * &wide[0].1 >= &wide[0].0 * &narrow[0].1);
        assert!(&narrow[1].0 * &wide[1].1 <= &wide[1].0 * &narrow[1].1);
    }
    assert!(neg_exp_exact(4097, 1, 5).is_err());
}

/// The frequency of `(u + V) < 2^64·e^{−x}` for a uniform word `u`, i.e. of a uniform real
/// below `e^{−x}`, with the fast bracket's tolerance `tolerance`.
fn frequency(seed: u64, x: (u128, u128), tolerance: f64, trials: u32) -> f64 {
    let mut rng = seeded_rng(seed);
    let hits = (0..trials)
        .filter(|_| {
            let u = rng.next_u64();
            below_scaled_neg_exp(&mut rng, (u, 1), 64, x, tolerance).unwrap()
        })
        .count();
    hits as f64 / f64::from(trials)
}

#[test]
fn comparisons_have_the_exact_law_fast_or_exact() {
    // A tolerance of 0.9 sends most comparisons to the exact path.
    let trials = 40_000;
    for (seed, x) in [
        (1u64, (3u128, 10u128)),
        (2, (17, 10)),
        (3, (5, 2)),
        (4, (0, 1)),
    ] {
        let p = (-(x.0 as f64) / x.1 as f64).exp();
        let sd = (p * (1.0 - p) / f64::from(trials)).sqrt().max(1e-9);
        for tolerance in [FAST_TOLERANCE, 0.9] {
            let f = frequency(seed, x, tolerance, trials);
            assert!(
                (f - p).abs() < 5.0 * sd + 1e-12,
                "x = {x:?}, tol {tolerance}: {f} vs {p}"
            );
        }
    }
}

#[test]
fn the_exact_path_decides_as_the_fast_one_and_reads_further_bits() {
    let mut rng = seeded_rng(5);
    for _ in 0..2_000 {
        let x = (u128::from(rng.random_range(1..5_000u64)), 1_000u128);
        let (u, h) = (rng.next_u64(), rng.random_range(1..1u64 << 24));
        let shift = 88;
        let (lo, hi) = neg_exp_bracket(x.0, x.1, FAST_TOLERANCE);
        let p = u128::from(u) * u128::from(h);
        let fast = if p + u128::from(h) <= (lo * pow2(shift)) as u128 {
            Some(true)
        } else if p > (hi * pow2(shift)) as u128 {
            Some(false)
        } else {
            None
        };
        if let Some(answer) = fast {
            assert_eq!(decide_exactly(&mut rng, p, h, shift, x).unwrap(), answer);
        }
    }
    // At the word where 2^64·e^−x falls, the answer depends on V: it is true with
    // probability frac(2^64·e^−x).
    let x = (7u128, 5u128);
    let value = (-1.4f64).exp() * 2f64.powi(64);
    let u = value.floor() as u64;
    let frac = value - value.floor();
    let mut rng = seeded_rng(6);
    let trials = 20_000;
    let hits = (0..trials)
        .filter(|_| below_scaled_neg_exp(&mut rng, (u, 1), 64, x, FAST_TOLERANCE).unwrap())
        .count() as f64;
    let f = hits / f64::from(trials);
    let sd = (frac * (1.0 - frac) / f64::from(trials)).sqrt();
    assert!((f - frac).abs() < 5.0 * sd + 0.01, "{f} vs {frac}");
}

#[test]
fn beyond_the_exact_range_is_an_error() {
    let mut rng = seeded_rng(7);
    // u = 0: (0 + V) < 2^64·e^−5000 is not decided by the fast bracket.
    assert!(below_scaled_neg_exp(&mut rng, (0, 1), 64, (5_000, 1), FAST_TOLERANCE).is_err());
    // Any other word is decided: false.
    assert!(!below_scaled_neg_exp(&mut rng, (1, 1), 64, (5_000, 1), FAST_TOLERANCE).unwrap());
}
