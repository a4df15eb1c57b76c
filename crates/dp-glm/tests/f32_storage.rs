//! `f32` feature storage ([`Storage::F32`]): the objective, its gradient and its clipped sums
//! on `f32` rows agree with `f64` — exactly on `f32`-representable data (every stored value
//! widens to the same `f64`, and the kernels are the same), within 1e-5 relative on general
//! data — the sums do not depend on the rayon pool, and the fits run (bit-identical to `f64`
//! on representable data). Narrowing rounds toward zero, so no row's norm grows.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{
    Amp, Dataset, DatasetBuilder, DpGd, Error, Features, GlmObjective, LinearModel, Loss,
    NoisyProjectedGd, ObjectivePerturbation, OutputPerturbation, Scale, Storage,
};
use dp_optim::{ClippedSum, ExactSum, Objective, sum_multiplier};
use ndarray::{Array1, Array2, array};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

/// 20,000 rows (3 leaves of 8192, the last one partial) of 9 features, labels ±1; rows of
/// norm about 1.
fn general() -> (Array2<f64>, Array1<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut g = || -> f64 { StandardNormal.sample(&mut rng) };
    let w: Vec<f64> = (0..9).map(|_| g()).collect();
    let x = Array2::from_shape_simple_fn((20_000, 9), &mut g) / 3.0;
    let y = Array1::from_shape_fn(20_000, |i| {
        let z: f64 = x.row(i).iter().zip(&w).map(|(a, b)| a * b).sum();
        if z + 0.5 * g() > 0.0 { 1.0 } else { -1.0 }
    });
    (x, y)
}

/// The general data with every value rounded to `f32` (so `f32` holds it exactly); in
/// [`fits_run_on_f32_and_match_f64_on_representable_data`] scaled by 1/4 first, so that every
/// row is within the learners' default row bound and none is projected.
fn representable(scale: f64) -> (Array2<f64>, Array1<f64>) {
    let (x, y) = general();
    (x.mapv(|v| f64::from((scale * v) as f32)), y)
}

/// The same rows stored as `f64` and as `f32`.
fn pair((x, y): (Array2<f64>, Array1<f64>)) -> (Dataset, Dataset) {
    let f32s = Dataset::with_storage(x.clone(), y.clone(), Storage::F32).unwrap();
    (Dataset::new(x, y).unwrap(), f32s)
}

/// `J`, `∇J`, the `f64` clipped sum and the exact clipped sum's totals at `theta`.
fn sums(obj: &GlmObjective<'_>, theta: &Array1<f64>) -> (f64, Array1<f64>, Array1<f64>, Vec<i128>) {
    let d = theta.len();
    let mut g = Array1::zeros(d);
    let v = obj.value_grad(theta.view(), g.view_mut());
    assert_eq!(v.to_bits(), obj.value(theta.view()).to_bits());
    let mut c = Array1::zeros(d);
    obj.clipped_sum(theta.view(), None, 0.5, c.view_mut());
    let (release, _) = sum_multiplier(1.0, 0.5, d).unwrap();
    let mut exact = ExactSum::new(*release.quantiser());
    obj.exact_clipped_sum(theta.view(), None, &mut exact);
    (v, g, c, exact.totals().to_vec())
}

fn objectives<'a>(data: &'a Dataset) -> Vec<(&'static str, GlmObjective<'a>)> {
    vec![
        (
            "logistic, mean, ridge",
            GlmObjective::new(data, Loss::Logistic, 0.1, Scale::Mean).unwrap(),
        ),
        (
            "huber, sum",
            GlmObjective::new(data, Loss::Huber { h: 0.5 }, 0.0, Scale::Sum).unwrap(),
        ),
        (
            "clipped logistic",
            GlmObjective::clipped(
                data,
                dp_glm::ClippedLoss::new(Loss::Logistic, 0.3).unwrap(),
                0.01,
                Scale::Mean,
            )
            .unwrap(),
        ),
    ]
}

fn thetas() -> Vec<Array1<f64>> {
    vec![
        Array1::from_shape_fn(9, |j| 0.3 - 0.1 * j as f64),
        Array1::from_shape_fn(9, |j| if j % 2 == 0 { 2.5 } else { -1.5 }),
    ]
}

fn bits(a: &Array1<f64>) -> Vec<u64> {
    a.iter().map(|v| v.to_bits()).collect()
}

/// On data `f32` holds exactly, `f32` storage gives the `f64` objective bit for bit (the same
/// `f64` values through the same kernels) — in particular within 1e-5 relative.
#[test]
fn representable_data_gives_the_f64_objective_exactly() {
    let (d64, d32) = pair(representable(1.0));
    assert_eq!(d32.storage(), Storage::F32);
    assert_eq!(d64.storage(), Storage::F64);
    assert_eq!(d32.row_norms(), d64.row_norms());
    for ((name, a), (_, b)) in objectives(&d64).iter().zip(objectives(&d32).iter()) {
        for theta in thetas() {
            let (v64, g64, c64, e64) = sums(a, &theta);
            let (v32, g32, c32, e32) = sums(b, &theta);
            assert_eq!(v64.to_bits(), v32.to_bits(), "{name}");
            assert_eq!(bits(&g64), bits(&g32), "{name}");
            assert_eq!(bits(&c64), bits(&c32), "{name}");
            assert_eq!(e64, e32, "{name}");
        }
    }
}

/// On general data, `f32` storage (each value within a relative 2⁻²³ of the `f64` one) gives
/// the objective and its gradient within 1e-5 relative of `f64`.
#[test]
fn general_data_is_within_1e_5_relative() {
    let (d64, d32) = pair(general());
    for ((name, a), (_, b)) in objectives(&d64).iter().zip(objectives(&d32).iter()) {
        for theta in thetas() {
            let (v64, g64, c64, _) = sums(a, &theta);
            let (v32, g32, c32, _) = sums(b, &theta);
            let rel = (v32 - v64).abs() / v64.abs();
            assert!(rel <= 1e-5, "{name}: value {v32} vs {v64} ({rel:e})");
            assert!(rel > 0.0, "{name}: the data was not rounded");
            let norm = |a: &Array1<f64>| a.dot(a).sqrt();
            let rel = norm(&(&g32 - &g64)) / norm(&g64);
            assert!(rel <= 1e-5, "{name}: gradient {rel:e}");
            let rel = norm(&(&c32 - &c64)) / norm(&c64);
            assert!(rel <= 1e-5, "{name}: clipped sum {rel:e}");
        }
    }
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// The full-batch sums on `f32` storage are the same on 1, 2 and 4 threads.
#[test]
fn f32_sums_do_not_depend_on_the_pool() {
    let (_, d32) = pair(general());
    let theta = thetas().remove(0);
    for (name, obj) in objectives(&d32) {
        let run = || {
            let (v, g, c, e) = sums(&obj, &theta);
            (v.to_bits(), bits(&g), bits(&c), e)
        };
        let one = on_threads(1, run);
        assert_eq!(one, on_threads(2, run), "{name}");
        assert_eq!(one, on_threads(4, run), "{name}");
    }
}

/// A seeded fit of a dataset.
type Fit<'a> = dyn Fn(&Dataset) -> LinearModel + Sync + 'a;

fn coef_bits(m: &LinearModel) -> Vec<u64> {
    m.coef().iter().map(|v| v.to_bits()).collect()
}

/// DP-GD, noisy GD, ObjPert, AMP and output perturbation fit `f32` storage: with the same seed,
/// bit-identical to the `f64` fit on representable data (rows within the learners' bounds),
/// on 1 and 4 threads; on general data (rounded, and rows beyond the bound projected and
/// stored as `f32` again), close to it.
#[test]
fn fits_run_on_f32_and_match_f64_on_representable_data() {
    let (d64, d32) = pair(representable(0.25));
    let (g64, g32) = pair(general());
    let rng = || Xoshiro256PlusPlus::seed_from_u64(3);
    let mut gd = DpGd::new(Loss::Logistic);
    gd.steps = 10;
    let mut noisy = NoisyProjectedGd::new(Loss::Logistic);
    noisy.steps = Some(10);
    noisy.x_bound = 2.0;
    let fits: Vec<(&str, Box<Fit<'_>>)> = vec![
        ("dp-gd", Box::new(|d| gd.fit(d, &mut rng()).unwrap())),
        ("noisy-gd", Box::new(|d| noisy.fit(d, &mut rng()).unwrap())),
        (
            "objpert",
            Box::new(|d| {
                ObjectivePerturbation::new(Loss::Logistic)
                    .fit(d, &mut rng())
                    .unwrap()
            }),
        ),
        (
            "amp",
            Box::new(|d| Amp::new(Loss::Logistic).fit(d, &mut rng()).unwrap()),
        ),
        (
            "output-perturbation",
            Box::new(|d| {
                OutputPerturbation::new(Loss::Logistic)
                    .fit(d, &mut rng())
                    .unwrap()
            }),
        ),
    ];
    for (name, fit) in &fits {
        let m64 = fit(&d64);
        let m32 = on_threads(1, || fit(&d32));
        assert!(m32.coef().iter().all(|v| v.is_finite()), "{name}");
        assert_eq!(coef_bits(&m64), coef_bits(&m32), "{name}");
        assert_eq!(m64.privacy().epsilon, m32.privacy().epsilon, "{name}");
        assert_eq!(
            coef_bits(&m32),
            coef_bits(&on_threads(4, || fit(&d32))),
            "{name}"
        );
        let (m64, m32) = (fit(&g64), fit(&g32));
        let diff =
            (&m64.coef() - &m32.coef()).mapv(f64::abs).sum() / m64.coef().mapv(f64::abs).sum();
        println!("{name}: general data, relative L1 difference {diff:e}");
        assert!(diff <= 1e-5, "{name}: {diff:e}");
    }
}

/// Narrowing rounds toward zero: no stored value, and no row norm, exceeds its `f64` original;
/// each value is the nearest `f32` below it in magnitude (within a relative 2⁻²³).
#[test]
fn narrowing_rounds_toward_zero() {
    let (x, y) = general();
    let d32 = Dataset::with_storage(x.clone(), y.clone(), Storage::F32).unwrap();
    let d64 = Dataset::new(x.clone(), y).unwrap();
    let Features::F32(s) = d32.features() else {
        panic!("f32 storage expected")
    };
    let mut below = 0;
    for (&v, &f) in x.iter().zip(s.iter()) {
        let w = f64::from(f);
        assert!(w.abs() <= v.abs() && w * v >= 0.0, "{v} → {f}");
        assert!(
            (v - w).abs() <= v.abs() * f64::from(f32::EPSILON),
            "{v} → {f}"
        );
        // The next f32 away from zero would exceed |v|.
        let up = if f > 0.0 { f.next_up() } else { f.next_down() };
        assert!(f64::from(up).abs() > v.abs() || v == w, "{v} → {f}");
        below += usize::from(w != v);
    }
    assert!(
        below > x.len() / 2,
        "most values of general data are not f32"
    );
    for (a, b) in d32.row_norms().iter().zip(d64.row_norms()) {
        assert!(a <= b, "norm {a} > {b}");
    }
    // The norms are those of the stored values, widened.
    let widened = Dataset::new(d32.x().into_owned(), d32.y().to_owned()).unwrap();
    assert_eq!(widened.row_norms(), d32.row_norms());
}

/// The builder appends blocks, names a bad value's row in the whole dataset, refuses values
/// beyond f32's range (never ±∞ or a silent f32::MAX), and keeps nothing of a failed block.
#[test]
fn builder_blocks_and_errors() {
    let mut b = DatasetBuilder::new(2, Storage::F32);
    b.push(
        array![[1.0, 2.0], [3.0, 4.0]].view(),
        array![1.0, -1.0].view(),
    )
    .unwrap();
    let e = b
        .push(array![[0.5, 1e39]].view(), array![1.0].view())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfStorageRange {
                row: 2,
                col: 1,
                storage: "f32",
                ..
            }
        ),
        "{e:?}"
    );
    let e = b
        .push(array![[f64::NAN, 0.0]].view(), array![1.0].view())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFinite {
                array: "x",
                row: 2,
                col: 0,
                ..
            }
        ),
        "{e:?}"
    );
    let e = b
        .push(array![[0.0, 0.0]].view(), array![f64::INFINITY].view())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFinite {
                array: "y",
                row: 2,
                ..
            }
        ),
        "{e:?}"
    );
    let e = b
        .push(array![[0.0]].view(), array![1.0].view())
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert_eq!(b.n_samples(), 2);
    b.push(array![[-0.1, 3.4e38]].view(), array![1.0].view())
        .unwrap();
    let d = b.finish().unwrap();
    assert_eq!((d.n_samples(), d.n_features()), (3, 2));
    // The nearest f32 to 0.1 is above it: toward zero takes the one below.
    assert!(f64::from(0.1f32) > 0.1);
    assert_eq!(d.x()[[2, 0]], -f64::from(0.1f32.next_down()));
    assert_eq!(d.x()[[1, 1]], 4.0);
    assert!(d.x()[[2, 1]] <= 3.4e38);
    assert_eq!(d.row_norms()[0], 5f64.sqrt());

    // f64 storage through the builder is Dataset::new.
    let mut b = DatasetBuilder::new(2, Storage::F64);
    b.push(array![[0.1, 0.2]].view(), array![1.0].view())
        .unwrap();
    b.push(array![[1e300, -0.3]].view(), array![-1.0].view())
        .unwrap();
    let built = b.finish().unwrap();
    let direct = Dataset::new(array![[0.1, 0.2], [1e300, -0.3]], array![1.0, -1.0]).unwrap();
    assert_eq!(built, direct);

    assert!(matches!(
        DatasetBuilder::new(3, Storage::F32).finish().unwrap_err(),
        Error::EmptyData { .. }
    ));
    assert!(matches!(
        Dataset::new_f32(array![[1.0f32, f32::INFINITY]], array![1.0]).unwrap_err(),
        Error::NonFinite {
            array: "x",
            row: 0,
            col: 1,
            ..
        }
    ));
    assert!(matches!(
        Dataset::new_f32(Array2::zeros((2, 1)), array![1.0]).unwrap_err(),
        Error::ShapeMismatch { .. }
    ));
}

/// `into_parts`, `x` and row slices widen exactly.
#[test]
fn widening_is_exact() {
    let d = Dataset::new_f32(array![[0.1f32, 2.0], [3.0, -0.25]], array![1.0, -1.0]).unwrap();
    let (x, y) = d.clone().into_parts();
    assert_eq!(x, array![[f64::from(0.1f32), 2.0], [3.0, -0.25]]);
    assert_eq!(y, array![1.0, -1.0]);
    assert_eq!(d.features().slice_rows(1..2).to_f64(), array![[3.0, -0.25]]);
    assert_eq!(d.features().dim(), (2, 2));
}

/// Privacy: the rows are narrowed before their norms are computed, and the clip is applied to
/// the row actually used. A row of values whose nearest `f32` is larger (0.1, −0.3, 0.2: rounding
/// to nearest would lengthen it) is stored no longer than its `f64` original; with the clip just
/// below the stored row's norm, the row's clipped gradient (squared loss at `θ = 0`, `y = 1`: the
/// gradient is `−x_i`, of norm `‖x_i‖`) is still clipped, to norm at most the clip; with the
/// clip at the `f64` row's norm it is within the clip too.
#[test]
fn a_row_just_above_the_clip_after_narrowing_is_clipped() {
    let x: Array2<f64> = array![[0.1, -0.3, 0.2]];
    for v in &x {
        assert!(
            f64::from(*v as f32).abs() > v.abs(),
            "{v} rounds up to nearest"
        );
    }
    let original = x.row(0).dot(&x.row(0)).sqrt();
    let data = Dataset::with_storage(x, array![1.0], Storage::F32).unwrap();
    let stored = data.x().row(0).to_owned();
    let norm = stored.dot(&stored).sqrt();
    assert_eq!(data.row_norms()[0].to_bits(), norm.to_bits());
    assert!(norm <= original);
    let obj = GlmObjective::new(&data, Loss::Squared, 0.0, Scale::Sum).unwrap();
    let theta = Array1::zeros(3);
    let mut grad = Array1::zeros(3);
    obj.value_grad(theta.view(), grad.view_mut());
    assert_eq!(bits(&grad), bits(&stored.mapv(|v| -v)));
    for clip in [norm.next_down(), norm * (1.0 - 1e-7), original] {
        let mut c = Array1::zeros(3);
        obj.clipped_sum(theta.view(), None, clip, c.view_mut());
        let len = c.dot(&c).sqrt();
        assert!(len <= clip, "clip {clip:e}: clipped norm {len:e}");
        assert!(
            len >= clip.min(norm) * (1.0 - 1e-12),
            "clip {clip:e}: {len:e} not the clip"
        );
    }
}

/// L-BFGS's first-step curvature bound `s·β·Σ⟨x_i, p⟩² + λ‖p‖²` reads the stored rows too: bit
/// for bit the `f64` one on representable data, within 1e-5 relative on general data; `None`
/// for clipped losses either way.
#[test]
fn curvature_bound_on_f32_storage() {
    for (data, exact) in [(representable(1.0), true), (general(), false)] {
        let (d64, d32) = pair(data);
        for ((name, a), (_, b)) in objectives(&d64).iter().zip(objectives(&d32).iter()) {
            for p in thetas() {
                let (c64, c32) = (a.curvature_bound(p.view()), b.curvature_bound(p.view()));
                assert_eq!(c64.is_some(), !name.starts_with("clipped"), "{name}");
                let (Some(c64), Some(c32)) = (c64, c32) else {
                    assert_eq!(c32, None, "{name}");
                    continue;
                };
                if exact {
                    assert_eq!(c64.to_bits(), c32.to_bits(), "{name}");
                } else {
                    let rel = (c32 - c64).abs() / c64;
                    assert!(rel <= 1e-5 && rel > 0.0, "{name}: {c32} vs {c64} ({rel:e})");
                }
            }
        }
    }
}

/// AdaSSP on `f32` storage (its statistics read in blocks of 2^14 rows, widened one block at a
/// time): on representable data the model is the `f64` one bit for bit (the statistics are
/// exact integer sums), on 1 and 4 threads; on general data it is close.
#[test]
fn ssp_reads_f32_storage_in_blocks() {
    let ssp = dp_glm::Ssp::new(2.0, 1.5);
    // Regression labels: the first feature plus a little of the second.
    let with_targets = |(x, _): (Array2<f64>, Array1<f64>)| {
        let y = x.column(0).to_owned() + &(0.1 * &x.column(1));
        (x, y)
    };
    let fit = |d: &Dataset| {
        ssp.fit(d, &mut Xoshiro256PlusPlus::seed_from_u64(9))
            .unwrap()
    };
    let (d64, d32) = pair(with_targets(representable(1.0)));
    assert!(d32.n_samples() > 1 << 14);
    let want = coef_bits(&fit(&d64));
    assert_eq!(coef_bits(&on_threads(1, || fit(&d32))), want);
    assert_eq!(coef_bits(&on_threads(4, || fit(&d32))), want);
    let (g64, g32) = pair(with_targets(general()));
    let (a, b) = (fit(&g64), fit(&g32));
    let diff = (&a.coef() - &b.coef()).mapv(f64::abs).sum();
    assert!(
        diff <= 1e-3 * a.coef().mapv(f64::abs).sum(),
        "{a:?} vs {b:?}"
    );
}
