//! The clipped sums the private solvers release are exact (dp_optim's `exact` module): an
//! adversarial pair of neighbouring batches whose `f64` sums differ by more than the clip
//! plus the old grid slack, while the exact integer sums differ by exactly the added term,
//! within the recorded sensitivity; and exact sums independent of the order of the rows.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{Dataset, DpGd, GlmObjective, Loss, Scale};
use dp_optim::{ClippedSum, ExactSum, grid_multiplier, seeded_rng, sum_multiplier};
use ndarray::{Array1, Array2, Axis};
use rand::seq::SliceRandom;

/// One feature equal to 1 and the squared loss at `θ = 0`: row `i`'s clipped term is `−y_i`
/// (clip 1, so `|y_i| ≤ 1` is not clipped). The rows are
/// * one term `+1` (the record the neighbour adds),
/// * `2^16 − 1` terms `+1`, then one `+2U` (`U = 2^-36`, the spacing of doubles at `2^16`),
/// * `m = 2^16` groups of a term `−U/2` and three zero terms.
///
/// Without the first row the partial sum stays below `2^16`, where `U/2` is representable, and
/// every `−U/2` is added exactly. With it the partial sum is `2^16 + 2U`, where `−U/2` is half
/// a spacing and rounds back to the even `2^16 + 2U`: every one is lost (the kernel adds rows
/// in groups of four, each group here summing exactly to its one small term). So the computed
/// sums differ by `1 + m·U/2 = 1 + 2^-21`, more than `C = 1` plus the grid slack `γ√d = 2^-24`
/// the old release recorded: the value the old path released had a larger sensitivity than
/// its ledger said.
fn adversarial() -> Dataset {
    let u = 2f64.powi(-36);
    let m = 1usize << 16;
    let mut y = vec![-1.0; 1 << 16];
    y.push(-2.0 * u);
    for _ in 0..m {
        y.extend([0.5 * u, 0.0, 0.0, 0.0]);
    }
    let n = y.len();
    Dataset::new(Array2::ones((n, 1)), Array1::from(y)).unwrap()
}

#[test]
fn float_sums_exceed_the_sensitivity_and_exact_sums_do_not() {
    let data = adversarial();
    let n = data.n_samples();
    let obj = GlmObjective::new(&data, Loss::Squared, 0.0, Scale::Sum).unwrap();
    let theta = Array1::zeros(1);
    let clip = 1.0;
    let with: Vec<usize> = (0..n).collect();
    let without = &with[1..];
    // The added record's term is +1 = C.
    let mut t = Array1::zeros(1);
    obj.clipped_sum(theta.view(), Some(&[0]), clip, t.view_mut());
    assert_eq!(t[0], clip);

    // The old path: f64 sums, then rounded to the grid with slack γ√d in the ledger.
    let f64_sum = |batch: &[usize]| {
        let mut s = Array1::zeros(1);
        obj.clipped_sum(theta.view(), Some(batch), clip, s.view_mut());
        s[0]
    };
    let (a, b) = (f64_sum(&with), f64_sum(without));
    let diff = a - b;
    assert_eq!(diff, 1.0 + 2f64.powi(-21), "{a} - {b}");
    let (grid, _) = grid_multiplier(1.0, clip, n, 1).unwrap();
    let gamma = grid.gamma();
    assert!(diff > clip + grid.slack(1));
    // Rounded to the old grid, the shift exceeds the ledger's (C + slack)/γ by 7 grid units.
    let shift = (a / gamma).round() - (b / gamma).round();
    assert!(shift * gamma > clip + grid.slack(1), "{shift}");

    // The exact path: the sums differ by the added record's quantised term, within the
    // recorded sensitivity.
    let (release, _) = sum_multiplier(1.0, clip, 1).unwrap();
    let q = *release.quantiser();
    let exact_sum = |batch: &[usize]| {
        let mut s = ExactSum::new(q);
        obj.exact_clipped_sum(theta.view(), Some(batch), &mut s);
        s.totals()[0]
    };
    let k = exact_sum(&with) - exact_sum(without);
    assert_eq!(k, exact_sum(&[0]));
    assert_eq!(k as f64 * q.gamma(), clip);
    assert!((k.unsigned_abs() as f64) * q.gamma() <= release.sensitivity());
    assert!(k.unsigned_abs() * k.unsigned_abs() <= q.radius2());
    // And the exact sum is the exact value of Σ terms on the grid: 65,536 + 2U − m·U/2
    // = 65,536 + 2^-35 − 2^-21, in units of γ = 2^-24 rounded term by term (2U and U/2 round
    // to 0), i.e. 65,536·2^24.
    assert_eq!(exact_sum(&with), 65_536i128 << 24);
}

/// Rows in any order give bit-identical exact sums, full batch and batch, and bit-identical
/// DP-GD models (same seed): the release depends on the set of rows only.
#[test]
fn exact_sums_and_dp_gd_do_not_depend_on_row_order() {
    let mut rng = seeded_rng(9);
    let (n, d) = (12_000, 5);
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        let v = ((i * 31 + j * 17) % 97) as f64 / 97.0 - 0.5;
        // Magnitudes over 12 binades, so that f64 sums depend on the order.
        v * 2f64.powi(((i + j) % 12) as i32 - 6)
    });
    let y = Array1::from_shape_fn(n, |i| if (i * 7) % 5 < 2 { 1.0 } else { -1.0 });
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let permuted = Dataset::new(x.select(Axis(0), &order), y.select(Axis(0), &order)).unwrap();
    let theta = Array1::from_shape_fn(d, |j| 0.4 - 0.2 * j as f64);
    let clip = 0.3;
    let (release, _) = sum_multiplier(1.0, clip, d).unwrap();
    let exact = |data: &Dataset, batch: Option<&[usize]>| {
        let obj = GlmObjective::new(data, Loss::Logistic, 0.0, Scale::Mean).unwrap();
        let mut s = ExactSum::new(*release.quantiser());
        obj.exact_clipped_sum(theta.view(), batch, &mut s);
        s.totals().to_vec()
    };
    let full = exact(&data, None);
    assert!(full.iter().any(|&k| k != 0));
    assert_eq!(exact(&permuted, None), full);
    assert_eq!(exact(&data, Some(&order)), full);
    // The f64 sums of the same rows do depend on the order (what the exact sum removes).
    let float = |data: &Dataset| {
        let obj = GlmObjective::new(data, Loss::Logistic, 0.0, Scale::Mean).unwrap();
        let mut s = Array1::zeros(d);
        obj.clipped_sum(theta.view(), None, clip, s.view_mut());
        s.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    assert_ne!(float(&data), float(&permuted));

    let mut gd = DpGd::new(Loss::Logistic);
    gd.steps = 10;
    let fit = |data: &Dataset| gd.fit(data, &mut seeded_rng(3)).unwrap();
    let (a, b) = (fit(&data), fit(&permuted));
    let bits = |m: &dp_glm::LinearModel| m.coef().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.privacy().epsilon, b.privacy().epsilon);
}
