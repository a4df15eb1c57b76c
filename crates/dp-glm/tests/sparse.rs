//! The sparse GLM objective against the dense one on the same rows (issue 12 §2): exact
//! clipped sums bit-identical (so a seeded private descent gives the same model bit for bit),
//! `f64` sums, values and gradients within `1e-12` relative; the same row norms, label checks
//! and results on 1 and 3 threads; `SparseDataset`'s checks; the LIBSVM reader end to end.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_data::CsrData;
use dp_glm::sparse::{SparseDataset, SparseGlmObjective};
use dp_glm::{ClippedLoss, Dataset, Error, GlmObjective, Loss, Scale};
use dp_optim::{
    ClippedSum, ExactSum, FiniteSum, GlmSum, Lbfgs, Objective, Quantiser, sum_multiplier,
};
use ndarray::{Array1, ArrayView1};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Random sparse rows: `n` rows of `d` features, each entry present with probability
/// `density`, `value()` for its value; every 7th row empty; labels ±1 (or real with `real`).
fn random(
    n: usize,
    d: usize,
    density: f64,
    seed: u64,
    real: bool,
    value: impl Fn(&mut Xoshiro256PlusPlus) -> f64,
) -> SparseDataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut indptr, mut indices, mut values, mut y) = (vec![0], vec![], vec![], vec![]);
    for i in 0..n {
        if i % 7 != 3 {
            for j in 0..d {
                if rng.random::<f64>() < density {
                    let v = value(&mut rng);
                    if v != 0.0 {
                        indices.push(j);
                        values.push(v);
                    }
                }
            }
        }
        indptr.push(values.len());
        y.push(if real {
            rng.random::<f64>() * 4.0 - 2.0
        } else if rng.random::<bool>() {
            1.0
        } else {
            -1.0
        });
    }
    SparseDataset::new(csr(d, indptr, indices, values, y)).unwrap()
}

fn csr(
    n_features: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    values: Vec<f64>,
    y: Vec<f64>,
) -> CsrData {
    CsrData {
        n_features,
        indptr,
        indices,
        values,
        y,
    }
}

/// Values that are multiples of 1/8 below 4 in magnitude: their squares and sums of squares
/// are exact in any order, so the row norms are the same bits in every build (with BLAS too).
fn dyadic(rng: &mut Xoshiro256PlusPlus) -> f64 {
    f64::from(rng.random_range(-31i32..=31)) / 8.0
}

/// Any values of varied magnitude.
fn anything(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.random::<f64>() - 0.5) * 10f64.powi(rng.random_range(-3..3))
}

fn theta(d: usize, seed: u64, size: f64) -> Array1<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    Array1::from_shape_fn(d, |_| (rng.random::<f64>() - 0.5) * size)
}

/// The objectives compared: plain logistic, squared (real labels), Huber SVM, and the clipped
/// logistic loss.
fn objective_pairs<'a>(
    sparse: &'a SparseDataset,
    dense: &'a Dataset,
    real: bool,
    lambda: f64,
    scale: Scale,
) -> Vec<(SparseGlmObjective<'a>, GlmObjective<'a>)> {
    let losses = if real {
        vec![Loss::Squared]
    } else {
        vec![Loss::Logistic, Loss::huber_svm(0.5).unwrap()]
    };
    let mut pairs: Vec<_> = losses
        .into_iter()
        .map(|l| {
            (
                SparseGlmObjective::new(sparse, l, lambda, scale).unwrap(),
                GlmObjective::new(dense, l, lambda, scale).unwrap(),
            )
        })
        .collect();
    if !real {
        let c = ClippedLoss::new(Loss::Logistic, 0.7).unwrap();
        pairs.push((
            SparseGlmObjective::clipped(sparse, c, lambda, scale).unwrap(),
            GlmObjective::clipped(dense, c, lambda, scale).unwrap(),
        ));
    }
    pairs
}

/// `‖a − b‖∞ ≤ 1e-12·scale`.
fn close(a: ArrayView1<'_, f64>, b: ArrayView1<'_, f64>, scale: f64, what: &str) {
    let err = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(err <= 1e-12 * scale, "{what}: {err:e} over {scale:e}");
}

/// The exact sums of `s` and `dd` on the full batch and on `batch`, for every clip and grid
/// given: equal integers.
fn exact_sums_agree(
    s: &impl ClippedSum,
    dd: &impl ClippedSum,
    t: ArrayView1<'_, f64>,
    batch: &[usize],
    grids: &[(f64, f64)],
) {
    for &(clip, gamma) in grids {
        let q = Quantiser::new(clip, gamma, s.dim()).unwrap();
        for b in [None, Some(batch)] {
            let (mut a, mut e) = (ExactSum::new(q), ExactSum::new(q));
            s.exact_clipped_sum(t, b, &mut a);
            dd.exact_clipped_sum(t, b, &mut e);
            let (a, e) = (a.totals().to_vec(), e.totals());
            assert_eq!(a, e, "clip {clip}, grid {gamma}, batch {}", b.is_some());
            assert!(a.iter().any(|&k| k != 0), "a sum of zeros proves nothing");
        }
    }
}

/// A batch with repeats, in random order, of a length that is not a multiple of 4 or 64.
fn batch(n: usize) -> Vec<usize> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
    (0..203).map(|_| rng.random_range(0..n)).collect()
}

/// Clips and grids: tight and loose clips on a fine grid, and a grid so fine (`C/γ = 2⁴⁰`)
/// that every term takes the exact slow path of the quantiser.
const GRIDS: [(f64, f64); 4] = [
    (0.05, 1.0 / 1024.0 / 1024.0),
    (0.5, 1.0 / 65536.0),
    (1e3, 1.0 / 1024.0),
    (1.0, 1.0 / 1_099_511_627_776.0),
];

#[test]
fn exact_sums_are_bit_identical_to_the_dense_ones() {
    // 301 rows (blocks of 64, groups of 4 and a remainder), 37 features (odd, not a multiple
    // of 4 or 8, above BLAS's cutoff of 32), empty rows.
    for (real, seed) in [(false, 1), (true, 2)] {
        let sparse = random(301, 37, 0.2, seed, real, dyadic);
        let dense = sparse.to_dense().unwrap();
        assert_eq!(sparse.row_norms(), dense.row_norms());
        for (s, d) in objective_pairs(&sparse, &dense, real, 0.0, Scale::Mean) {
            for t in [Array1::zeros(37), theta(37, 5, 1.0), theta(37, 6, 40.0)] {
                exact_sums_agree(&s, &d, t.view(), &batch(301), &GRIDS);
            }
        }
    }
}

/// Any values: the row norms and sums agree bit for bit without BLAS (with BLAS, the dense
/// row norms of 32 entries or more come from `ddot`, whose order is unspecified; module docs).
#[cfg(not(feature = "blas"))]
#[test]
fn exact_sums_with_any_values_are_bit_identical() {
    let sparse = random(150, 45, 0.3, 3, false, anything);
    let dense = sparse.to_dense().unwrap();
    assert_eq!(sparse.row_norms(), dense.row_norms());
    for (s, d) in objective_pairs(&sparse, &dense, false, 0.0, Scale::Mean) {
        exact_sums_agree(&s, &d, theta(45, 8, 3.0).view(), &batch(150), &GRIDS);
    }
}

#[test]
fn a_row_at_the_clip_and_extreme_rows_agree() {
    // Row 0 has norm 2 = 2C: at θ = 0 the logistic derivative is ∓1/2, so its term has norm C
    // exactly. Rows 2 and 3 overflow the sum of squares and the margin (the scaled paths);
    // row 4 underflows it.
    let rows: [&[(usize, f64)]; 6] = [
        &[(4, 2.0)],
        &[(0, 0.5), (3, -1.5), (8, 1.0)],
        &[(1, 1e300), (2, -1e300), (7, 3e299)],
        &[(0, 1.7e308), (5, 1.7e308)],
        &[(2, 1e-170), (6, -3e-171)],
        &[],
    ];
    let (mut indptr, mut indices, mut values) = (vec![0], vec![], vec![]);
    for r in rows {
        indices.extend(r.iter().map(|e| e.0));
        values.extend(r.iter().map(|e| e.1));
        indptr.push(values.len());
    }
    let y = vec![1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
    let sparse = SparseDataset::new(csr(9, indptr, indices, values, y)).unwrap();
    let dense = sparse.to_dense().unwrap();
    assert_eq!(sparse.row_norms(), dense.row_norms());
    assert_eq!(sparse.row_norms()[0], 2.0);
    assert_eq!(sparse.row_norms()[3], f64::INFINITY);
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.0, Scale::Sum).unwrap();
    let d = GlmObjective::new(&dense, Loss::Logistic, 0.0, Scale::Sum).unwrap();
    let mut out = Array1::zeros(9);
    s.clipped_sum(Array1::zeros(9).view(), Some(&[0]), 1.0, out.view_mut());
    assert_eq!(out[4], -1.0, "the term at the clip keeps its norm C");
    for t in [
        Array1::zeros(9),
        theta(9, 1, 2.0),
        Array1::from_elem(9, 1e10),
    ] {
        exact_sums_agree(&s, &d, t.view(), &[0, 1, 2, 3, 4, 5, 2], &GRIDS[..2]);
        let (mut a, mut b) = (Array1::zeros(9), Array1::zeros(9));
        s.batch_grad(t.view(), &[1, 2, 3, 4], a.view_mut());
        d.batch_grad(t.view(), &[1, 2, 3, 4], b.view_mut());
        assert_eq!(a, b);
    }
}

#[test]
fn sums_values_and_gradients_agree_to_1e_12() {
    for (real, seed) in [(false, 11), (true, 12)] {
        let sparse = random(260, 53, 0.15, seed, real, anything);
        let dense = sparse.to_dense().unwrap();
        let n = sparse.n_samples() as f64;
        for scale in [Scale::Mean, Scale::Sum] {
            let s_n = if scale == Scale::Sum { n } else { 1.0 };
            for (s, d) in objective_pairs(&sparse, &dense, real, 0.3, scale) {
                for t in [Array1::zeros(53), theta(53, 13, 2.0)] {
                    let (va, vb) = (s.value(t.view()), d.value(t.view()));
                    assert!((va - vb).abs() <= 1e-12 * va.abs().max(1.0), "{va} {vb}");
                    let (mut ga, mut gb) = (Array1::zeros(53), Array1::zeros(53));
                    let (wa, wb) = (
                        s.value_grad(t.view(), ga.view_mut()),
                        d.value_grad(t.view(), gb.view_mut()),
                    );
                    assert!((wa - wb).abs() <= 1e-12 * wa.abs().max(1.0));
                    assert!((wa - va).abs() <= 1e-12 * wa.abs().max(1.0));
                    close(ga.view(), gb.view(), s_n.max(1.0), "gradient");
                    for b in [None, Some(&batch(260)[..])] {
                        s.clipped_sum(t.view(), b, 0.3, ga.view_mut());
                        d.clipped_sum(t.view(), b, 0.3, gb.view_mut());
                        close(ga.view(), gb.view(), n * 0.3, "clipped sum");
                    }
                    s.batch_grad(t.view(), &batch(260), ga.view_mut());
                    d.batch_grad(t.view(), &batch(260), gb.view_mut());
                    close(ga.view(), gb.view(), s_n.max(1.0), "batch gradient");
                    s.regulariser_grad(t.view(), ga.view_mut());
                    d.regulariser_grad(t.view(), gb.view_mut());
                    assert_eq!(ga, gb);
                    for i in [0, 3, 100] {
                        let (a, b) = (s.term_scalar(t.view(), i), d.term_scalar(t.view(), i));
                        // The same margin bits; a clipped loss depends on the row norm too,
                        // which with BLAS may differ in the last place (dp_glm::sparse docs).
                        assert!((a - b).abs() <= 1e-12 * a.abs(), "{a} {b}");
                        if !cfg!(feature = "blas") {
                            assert_eq!(a, b);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn lbfgs_gives_the_dense_model_to_2e_11() {
    let sparse = random(400, 30, 0.1, 21, false, anything);
    let dense = sparse.to_dense().unwrap();
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 1e-2, Scale::Mean).unwrap();
    let d = GlmObjective::new(&dense, Loss::Logistic, 1e-2, Scale::Mean).unwrap();
    let solver = Lbfgs::new().grad_tol(1e-13).max_iters(500);
    let x0 = Array1::zeros(30);
    let a = solver.minimize(&s, x0.view(), None).unwrap().x;
    let b = solver.minimize(&d, x0.view(), None).unwrap().x;
    // Both stop at ‖∇f‖ ≤ 1e-13 on a λ = 1e-2 strongly convex objective, so each is within
    // 1e-11 of the minimiser: the two iterate sequences round differently, the optima agree.
    let err = a
        .iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(err <= 2e-11, "model: {err:e}");
    assert!(b.iter().any(|v| v.abs() > 1e-3));
}

/// Seeded noisy gradient descent on the exact clipped sums (what DP-GD releases): the same
/// model bit for bit from the sparse and the dense rows.
#[test]
fn a_seeded_private_descent_gives_the_same_model_bit_for_bit() {
    let sparse = random(500, 41, 0.1, 31, false, dyadic);
    let dense = sparse.to_dense().unwrap();
    let fit = |f: &dyn Fn(ArrayView1<'_, f64>, &mut ExactSum)| {
        let (release, _) = sum_multiplier(1.0, 0.5, 41).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let (mut w, mut g) = (Array1::zeros(41), Array1::zeros(41));
        let mut sum = ExactSum::new(*release.quantiser());
        for _ in 0..30 {
            f(w.view(), &mut sum);
            release
                .release("test", &mut rng, &mut sum, g.view_mut())
                .unwrap();
            w.scaled_add(-0.5 / 500.0, &g);
        }
        w.mapv(f64::to_bits)
    };
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.0, Scale::Mean).unwrap();
    let d = GlmObjective::new(&dense, Loss::Logistic, 0.0, Scale::Mean).unwrap();
    let a = fit(&|w, sum| s.exact_clipped_sum(w, None, sum));
    let b = fit(&|w, sum| d.exact_clipped_sum(w, None, sum));
    assert_eq!(a, b);
    assert!(a.iter().any(|&v| v != 0));
}

/// DP-GD on sparse rows (`DpGd::fit_sparse`) releases the dense fit's model file, under both
/// relations and with a public n (dyadic values: bit-identical with BLAS too).
#[test]
fn dpgd_on_sparse_rows_is_the_dense_fit() {
    use dp_accounting::Neighbouring;
    let sparse = random(700, 29, 0.08, 37, false, dyadic);
    let dense = sparse.to_dense().unwrap();
    for (relation, public_n) in [
        (Neighbouring::ReplaceOne, None),
        (Neighbouring::AddRemove, Some(800)),
    ] {
        let mut learner = dp_glm::DpGd::new(Loss::Logistic).budget(1.0, 1e-6);
        learner.budget.neighbouring = relation;
        learner.public_n = public_n;
        learner.steps = 20;
        let seeded = || Xoshiro256PlusPlus::seed_from_u64(8);
        let a = learner.fit_sparse(&sparse, &mut seeded()).unwrap();
        let b = learner.fit(&dense, &mut seeded()).unwrap();
        assert_eq!(a.to_json().unwrap(), b.to_json().unwrap(), "{relation:?}");
        assert!(a.coef().iter().any(|&c| c != 0.0));
    }
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn the_same_bits_on_1_and_3_threads() {
    // 20,000 rows: three leaves of 8192, the last one partial.
    let sparse = random(20_000, 40, 0.05, 41, false, anything);
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.1, Scale::Mean).unwrap();
    let t = theta(40, 42, 1.0);
    let run = || {
        let mut g = Array1::zeros(40);
        let v = s.value_grad(t.view(), g.view_mut());
        let mut c = Array1::zeros(40);
        s.clipped_sum(t.view(), None, 0.2, c.view_mut());
        let mut e = ExactSum::new(Quantiser::new(0.2, 1.0 / 65536.0, 40).unwrap());
        s.exact_clipped_sum(t.view(), None, &mut e);
        let bits = |a: &Array1<f64>| a.mapv(f64::to_bits).to_vec();
        (
            v.to_bits(),
            s.value(t.view()).to_bits(),
            bits(&g),
            bits(&c),
            e.totals().to_vec(),
        )
    };
    assert_eq!(on_threads(1, run), on_threads(3, run));
}

#[test]
fn labels_out_of_the_domain_name_the_row() {
    let y = vec![1.0, -1.0, 0.5, 1.0];
    let rows = csr(
        3,
        vec![0, 1, 1, 2, 3],
        vec![0, 2, 1],
        vec![1.0, 2.0, 3.0],
        y,
    );
    let sparse = SparseDataset::new(rows).unwrap();
    let dense = sparse.to_dense().unwrap();
    for loss in [Loss::Logistic, Loss::huber_svm(0.5).unwrap()] {
        let a = SparseGlmObjective::new(&sparse, loss, 0.0, Scale::Mean).unwrap_err();
        let b = GlmObjective::new(&dense, loss, 0.0, Scale::Mean).unwrap_err();
        assert_eq!(a, b);
        assert!(matches!(a, Error::LabelOutOfDomain { row: 2, .. }), "{a:?}");
    }
    let c = ClippedLoss::new(Loss::Logistic, 1.0).unwrap();
    assert!(matches!(
        SparseGlmObjective::clipped(&sparse, c, 0.0, Scale::Mean),
        Err(Error::LabelOutOfDomain { row: 2, .. })
    ));
    assert!(SparseGlmObjective::new(&sparse, Loss::Squared, 0.0, Scale::Mean).is_ok());
    assert!(matches!(
        SparseGlmObjective::new(&sparse, Loss::Squared, -1.0, Scale::Mean),
        Err(Error::InvalidHyperParameter { name: "lambda", .. })
    ));
}

#[test]
fn malformed_rows_are_typed_errors() {
    let y = || vec![1.0, -1.0];
    let new = |d, p: &[usize], i: &[usize], v: &[f64], y| {
        SparseDataset::new(csr(d, p.to_vec(), i.to_vec(), v.to_vec(), y))
    };
    let malformed_at = |r: dp_glm::Result<SparseDataset>, at: usize| match r {
        Err(Error::MalformedSparse { row, reason }) => {
            assert_eq!(row, at, "{reason}");
            reason
        }
        other => panic!("{other:?}"),
    };
    assert!(new(3, &[0, 1, 2], &[0, 2], &[1.0, 2.0], y()).is_ok());
    assert!(matches!(
        new(3, &[0, 1], &[0], &[1.0], y()),
        Err(Error::ShapeMismatch { left: "indptr", .. })
    ));
    assert!(matches!(
        new(3, &[0, 1, 2], &[0, 2], &[1.0], y()),
        Err(Error::ShapeMismatch {
            left: "indices",
            ..
        })
    ));
    assert!(matches!(
        new(3, &[0], &[], &[], vec![]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        new(0, &[0, 0, 0], &[], &[], y()),
        Err(Error::EmptyData { .. })
    ));
    // 2 rows × 2⁴⁰ features: a valid sparse dataset, refused densified before allocating.
    let wide = new(1 << 40, &[0, 1, 2], &[0, (1 << 40) - 1], &[1.0, 2.0], y()).unwrap();
    assert!(matches!(
        wide.to_dense(),
        Err(Error::ResourceLimit {
            name: "n_features",
            ..
        })
    ));
    malformed_at(new(3, &[1, 1, 2], &[0, 2], &[1.0, 2.0], y()), 0);
    malformed_at(new(3, &[0, 2, 1], &[0, 2], &[1.0, 2.0], y()), 1);
    malformed_at(new(3, &[0, 1, 1], &[0, 2], &[1.0, 2.0], y()), 1);
    malformed_at(new(3, &[0, 1, 3], &[0, 2], &[1.0, 2.0], y()), 1);
    let r = malformed_at(new(3, &[0, 1, 2], &[0, 3], &[1.0, 2.0], y()), 1);
    assert!(r.contains("column 3"), "{r}");
    malformed_at(new(3, &[0, 2, 2], &[1, 1], &[1.0, 2.0], y()), 0);
    malformed_at(new(3, &[0, 2, 2], &[2, 1], &[1.0, 2.0], y()), 0);
    assert!(matches!(
        new(3, &[0, 1, 2], &[0, 2], &[1.0, f64::NAN], y()),
        Err(Error::NonFinite {
            array: "x",
            row: 1,
            col: 2,
            ..
        })
    ));
    assert!(matches!(
        new(
            3,
            &[0, 1, 2],
            &[0, 2],
            &[1.0, 2.0],
            vec![1.0, f64::INFINITY]
        ),
        Err(Error::NonFinite {
            array: "y",
            row: 1,
            ..
        })
    ));
}

/// A LIBSVM file with comments, blank lines, trailing whitespace and an empty row, read
/// sparse and dense: the same data and the same exact sums.
#[test]
fn the_libsvm_reader_end_to_end() {
    let text = "1 1:0.5 3:2  \n-1\t2:1 # comment\n\n# a comment line\n1 \n-1 1:-0.75 4:1.25\t\n";
    let rows = dp_data::read_libsvm_sparse_bytes(text.as_bytes(), "e.libsvm", Some(6)).unwrap();
    let sparse = SparseDataset::new(rows).unwrap();
    let loaded = dp_data::read_libsvm_bytes(text.as_bytes(), "e.libsvm", Some(6)).unwrap();
    let dense = Dataset::new(loaded.x, loaded.y).unwrap();
    assert_eq!(sparse.to_dense().unwrap(), dense);
    assert_eq!(
        (sparse.n_samples(), sparse.n_features(), sparse.nnz()),
        (4, 6, 5)
    );
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.0, Scale::Mean).unwrap();
    let d = GlmObjective::new(&dense, Loss::Logistic, 0.0, Scale::Mean).unwrap();
    exact_sums_agree(&s, &d, theta(6, 1, 1.0).view(), &[3, 0, 0, 1], &GRIDS);
}

#[test]
fn relative_to_zero_subtracts_the_value_at_zero() {
    let sparse = random(50, 10, 0.3, 61, false, anything);
    let s = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.2, Scale::Sum).unwrap();
    let r = SparseGlmObjective::new(&sparse, Loss::Logistic, 0.2, Scale::Sum)
        .unwrap()
        .relative_to_zero();
    let t = theta(10, 2, 1.0);
    let zero = s.value(Array1::zeros(10).view());
    assert!((zero - 50.0 * std::f64::consts::LN_2).abs() < 1e-12);
    assert!((r.value(t.view()) - (s.value(t.view()) - zero)).abs() < 1e-12);
    assert_eq!(r.value(Array1::zeros(10).view()), 0.0);
}

/// Each row's margin, seen through an unclipped one-row term (`c_i·x_i`, added once or four
/// times in a row): the same bits as the dense kernel's, alone and in a group of four.
#[test]
fn margins_are_the_dense_kernels_bits_alone_and_in_groups() {
    let sparse = random(60, 45, 0.4, 71, true, anything);
    let dense = sparse.to_dense().unwrap();
    let s = SparseGlmObjective::new(&sparse, Loss::Squared, 0.0, Scale::Mean).unwrap();
    let d = GlmObjective::new(&dense, Loss::Squared, 0.0, Scale::Mean).unwrap();
    let t = theta(45, 72, 3.0);
    let (mut a, mut b) = (Array1::zeros(45), Array1::zeros(45));
    for i in 0..60 {
        for rows in [vec![i], vec![i; 4]] {
            s.clipped_sum(t.view(), Some(&rows), f64::INFINITY, a.view_mut());
            d.clipped_sum(t.view(), Some(&rows), f64::INFINITY, b.view_mut());
            assert_eq!(a, b, "row {i}, {} times", rows.len());
        }
    }
}
