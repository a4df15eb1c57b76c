use super::*;
use crate::rng::seeded_rng;
use ndarray::Array1;
use rand::RngExt;
use rand::seq::SliceRandom;

/// `Σ k_j²` of an integer vector, exactly.
fn norm2(k: &[i128]) -> u128 {
    k.iter().map(|&v| v.unsigned_abs() * v.unsigned_abs()).sum()
}

/// The quantised term of one vector, alone in a sum.
fn single(q: Quantiser, v: &[f64]) -> Vec<i128> {
    let mut s = ExactSum::new(q);
    s.add_term(ArrayView1::from(v));
    s.totals().to_vec()
}

/// A random vector of norm exactly `norm` (up to rounding) in dimension `d`.
fn on_sphere(rng: &mut crate::SeededRng, d: usize, norm: f64) -> Vec<f64> {
    let v: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
    let n = v.iter().map(|a| a * a).sum::<f64>().sqrt();
    v.iter().map(|a| a * norm / n).collect()
}

/// `R² = ⌊(C/γ + √d/2)²⌋`, the sensitivity `γR` rounded up and at most `C + γ√d/2` (up to
/// a relative 1e-15), and the checks of the parameters.
#[test]
fn quantiser_bound_and_sensitivity() {
    let (clip, gamma, d) = (1.5, 2f64.powi(-20), 100);
    let q = Quantiser::new(clip, gamma, d).unwrap();
    let r = clip / gamma;
    let expected = ((r + 5.0) * (r + 5.0)).floor() as u128;
    assert_eq!(q.radius2(), expected);
    assert_eq!((q.clip(), q.gamma(), q.dim()), (clip, gamma, d));
    let s = q.sensitivity();
    assert!(s >= gamma * (expected as f64).sqrt());
    assert!(s <= (clip + gamma * 5.0) * (1.0 + 1e-15), "{s}");
    for bad in [0.0, -1.0, f64::NAN, 3.0, 1e-320] {
        assert!(matches!(
            Quantiser::new(1.0, bad, 2),
            Err(Error::InvalidParameter { name: "grid", .. })
        ));
    }
    assert!(matches!(
        Quantiser::new(f64::INFINITY, 1.0, 2),
        Err(Error::InvalidParameter { name: "clip", .. })
    ));
    // clip/γ must stay below 2^51.
    assert!(Quantiser::new(2f64.powi(51), 1.0, 2).is_err());
    assert!(Quantiser::new(2f64.powi(50), 1.0, 2).is_ok());
}

/// Terms of norm exactly `C` (random directions, several grids including one with
/// `R² ≥ 2^53`, where the exact path decides) are rounded to nearest, coordinate by
/// coordinate, and satisfy the bound exactly.
#[test]
fn clipped_terms_round_to_nearest_within_the_bound() {
    let mut rng = seeded_rng(1);
    for (clip, gamma, d) in [
        (1.0, 2f64.powi(-24), 100),
        (0.3, 2f64.powi(-10), 7),
        (1.0, 2f64.powi(-40), 5),
        (2.0, 2f64.powi(-2), 1),
    ] {
        let q = Quantiser::new(clip, gamma, d).unwrap();
        for _ in 0..200 {
            let v = on_sphere(&mut rng, d, clip);
            let k = single(q, &v);
            assert!(norm2(&k) <= q.radius2());
            for (&kj, &vj) in k.iter().zip(&v) {
                assert_eq!(kj as f64, (vj / gamma).round_ties_even(), "{vj}");
            }
        }
    }
}

/// Terms far over the bound, or not finite, are enforced: scaled to norm `C` (then within
/// `R²`, and within `√d` of `C/γ` in norm) or replaced by zero.
#[test]
fn terms_over_the_bound_are_enforced() {
    let (clip, gamma, d) = (1.0, 2f64.powi(-24), 6);
    let q = Quantiser::new(clip, gamma, d).unwrap();
    let r = clip / gamma;
    let mut rng = seeded_rng(2);
    for scale in [1.0 + 1e-9, 10.0, 1e300] {
        let v = on_sphere(&mut rng, d, clip * scale);
        let k = single(q, &v);
        assert!(norm2(&k) <= q.radius2(), "{scale}");
        let norm = (norm2(&k) as f64).sqrt();
        assert!(norm >= r - (d as f64).sqrt(), "{scale}: {norm}");
    }
    let huge = vec![f64::MAX; d];
    assert!(norm2(&single(q, &huge)) <= q.radius2());
    for bad in [f64::NAN, f64::INFINITY] {
        let mut v = vec![0.1; d];
        v[3] = bad;
        assert_eq!(single(q, &v), vec![0; d]);
    }
    // A term just over the bound by rounding alone: every coordinate at a half-integer
    // beyond C/γ/√d is accepted or shrunk, never over.
    let v = vec![(r / (d as f64).sqrt()).floor() * gamma + 0.5 * gamma; d];
    assert!(norm2(&single(q, &v)) <= q.radius2());
}

/// The sum is exact: equal to the sum of the terms' integers computed one by one, for any
/// order and any split into merged parts — here with a grid where blocks flush every few
/// terms (`R ≈ 2^50`) and one where they never do, and terms that cancel.
#[test]
fn sums_are_exact_and_order_free() {
    let mut rng = seeded_rng(3);
    for gamma in [2f64.powi(-50), 2f64.powi(-24)] {
        let (clip, d) = (1.0, 3);
        let q = Quantiser::new(clip, gamma, d).unwrap();
        let terms: Vec<Vec<f64>> = (0..600)
            .map(|i| {
                let s = if i % 2 == 0 { clip } else { 1e-9 };
                on_sphere(&mut rng, d, s)
            })
            .collect();
        let mut reference = vec![0i128; d];
        for t in &terms {
            for (r, k) in reference.iter_mut().zip(single(q, t)) {
                *r += k;
            }
        }
        let mut order: Vec<usize> = (0..terms.len()).collect();
        for split in [1, 7, 600] {
            order.shuffle(&mut rng);
            let mut total = ExactSum::new(q);
            for part in order.chunks(split) {
                let mut s = ExactSum::new(q);
                part.iter()
                    .for_each(|&i| s.add_term(ArrayView1::from(&terms[i][..])));
                total.merge(s);
            }
            assert_eq!(total.totals(), &reference[..], "split {split}");
        }
        let mut again = ExactSum::new(q);
        terms.iter().rev().for_each(|t| again.add_scaled(1.0, t));
        assert_eq!(again.totals(), &reference[..]);
        again.clear();
        assert_eq!(again.totals(), &vec![0; d][..]);
    }
}

/// The one-pass path adds exactly the integers of the generic path, for `f64` rows and `f32`
/// rows (widened exactly): the same totals after every few terms, in every dimension up to
/// 101 (whole vectors, tails, shorter than one vector), with terms within the bound, over it
/// (enforced by the exact path, which must find the partial sums untouched by the rejected
/// pass), not finite, and with coefficients of either sign; on a grid that flushes every few
/// terms, one that never does, and one where `R² ≥ 2^53` (every term takes the exact path).
/// Every other term goes through the hinting pass, whose hints cover the row once, in order.
/// A third sum takes the same terms four at a time in one pass
/// ([`ExactSum::add_scaled_four_hinting`]; a group with a rejected term, or one the block has no
/// room for, is added a term at a time) and holds the same totals after every group.
#[test]
fn one_pass_path_adds_the_same_integers() {
    one_pass_adds_the_same_integers(|v| v);
    one_pass_adds_the_same_integers(|v| v as f32);
}

/// [`one_pass_path_adds_the_same_integers`] for rows of `T`, `narrow` mapping the test's
/// `f64` entries to `T`.
fn one_pass_adds_the_same_integers<T: Widen>(narrow: fn(f64) -> T) {
    let mut rng = seeded_rng(5);
    for (clip, gamma) in [
        (1.0, 2f64.powi(-50)),
        (1.0, 2f64.powi(-24)),
        (1.0, 2f64.powi(-40)),
    ] {
        for d in 1..=101 {
            let q = Quantiser::new(clip, gamma, d).unwrap();
            let (mut generic, mut one_pass) = (ExactSum::new(q), ExactSum::new(q));
            let mut four = ExactSum::new(q);
            let mut waiting: Vec<(f64, Vec<T>)> = Vec::new();
            for i in 0..300 {
                let norm = match i % 6 {
                    0 => clip * 10.0,
                    1 => clip * 1e300,
                    _ => clip * rng.random::<f64>(),
                };
                let mut v = on_sphere(&mut rng, d, norm);
                if i % 50 == 7 {
                    v[i % d] = [f64::NAN, f64::INFINITY][i % 2];
                }
                let v: Vec<T> = v.into_iter().map(narrow).collect();
                let c = if i % 3 == 0 { -1.0 } else { 1.0 };
                generic.add_scaled(c, &v);
                if i % 2 == 0 {
                    one_pass.add_scaled_one_pass(c, &v);
                } else {
                    // The hints cover the entries in order, once.
                    let mut reached = 0;
                    one_pass.add_scaled_one_pass_hinting(c, &v, |r| {
                        assert_eq!(r.start, reached, "d {d}");
                        reached = r.end;
                    });
                    assert_eq!(reached, d);
                }
                waiting.push((c, v));
                if waiting.len() == 4 {
                    let group = std::mem::take(&mut waiting);
                    // Four terms in one pass; its hints cover the entries in order, once.
                    let mut reached = 0;
                    four.add_scaled_four_hinting(
                        std::array::from_fn(|t| group[t].0),
                        std::array::from_fn(|t| &group[t].1[..]),
                        |r| {
                            assert_eq!(r.start, reached, "d {d}");
                            reached = r.end;
                        },
                    );
                    assert_eq!(reached, d);
                }
                if i % 17 == 0 {
                    assert_eq!(
                        generic.totals(),
                        one_pass.totals(),
                        "γ {gamma}, d {d}, term {i}"
                    );
                }
                if i % 4 == 3 {
                    assert_eq!(
                        four.totals(),
                        generic.totals(),
                        "γ {gamma}, d {d}, term {i}"
                    );
                }
            }
            assert_eq!(generic.totals(), one_pass.totals(), "γ {gamma}, d {d}");
            assert_eq!(generic.totals(), four.totals(), "γ {gamma}, d {d}");
            assert!(generic.totals().iter().any(|&t| t != 0), "γ {gamma}, d {d}");
        }
    }
}

/// The release is `γ·(S + K)`: on the grid, `S` recovered in the mean over many releases
/// (z-test |z| ≤ 5.5, false-failure rate ≈ 4e-8), the ledger's mechanism is the Gaussian of
/// std `σC` and the quantiser's sensitivity, and the multiplier a relative `σ√d·2^-25` (at
/// most) below `σ`.
#[test]
fn release_adds_discrete_noise_to_the_exact_sum() {
    let (sigma, clip, d) = (1.3, 0.7, 4);
    let (release, z) = sum_multiplier(sigma, clip, d).unwrap();
    let gamma = release.grid().gamma();
    assert_eq!(gamma, Noise::Gaussian { std: sigma * clip }.grid().unwrap());
    assert!(z < sigma && z >= sigma * (1.0 - sigma * (d as f64).sqrt() * 2f64.powi(-25) * 1.01));
    assert_eq!(
        release.mechanism().unwrap(),
        Mechanism::gaussian(sigma * clip, release.sensitivity())
            .unwrap()
            .with_grid(release.discrete_gaussian().unwrap())
    );
    let (zz, g) = sum_noise_multiplier(sigma, clip, d).unwrap();
    assert_eq!((zz, g), (z, release.discrete_gaussian().unwrap()));
    let mut sum = ExactSum::new(*release.quantiser());
    let term = [0.3, -0.2, 0.1, 0.5];
    sum.add_term(ArrayView1::from(&term[..]));
    let exact: Vec<f64> = sum.totals().iter().map(|&k| k as f64 * gamma).collect();
    let mut rng = seeded_rng(4);
    let reps = 20_000;
    let mut mean = Array1::<f64>::zeros(d);
    let mut out = Array1::zeros(d);
    for _ in 0..reps {
        release
            .release("test", &mut rng, &mut sum, out.view_mut())
            .unwrap();
        assert!(out.iter().all(|&v| (v / gamma).fract() == 0.0));
        mean += &out;
    }
    mean /= reps as f64;
    let se = sigma * clip / (reps as f64).sqrt();
    for (m, e) in mean.iter().zip(&exact) {
        assert!((m - e).abs() <= 5.5 * se, "{m} vs {e}");
    }
    // A sum of another quantiser or an output of another length is refused.
    let other = Quantiser::new(clip, gamma, d + 1).unwrap();
    assert!(
        release
            .release("test", &mut rng, &mut ExactSum::new(other), out.view_mut())
            .is_err()
    );
    assert!(
        release
            .release("test", &mut rng, &mut sum, Array1::zeros(d + 1).view_mut())
            .is_err()
    );
    for bad in [0.0, f64::NAN] {
        assert!(sum_multiplier(bad, clip, d).is_err());
        assert!(sum_multiplier(sigma, bad, d).is_err());
        assert!(sum_noise_multiplier(bad, clip, d).is_err());
    }
}
