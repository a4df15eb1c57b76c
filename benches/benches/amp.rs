//! Criterion benchmarks of issue 4's solvers on Adult-sized data (45,000 × 104, unit rows plus
//! a bias feature, as paper 001 prepares Adult): one AMP fit at ε = 1 (calibration included),
//! one L-BFGS iteration against one full gradient pass.
//!
//! `cargo xtask bench amp`; the peer is `benches/peers/amp_peers.py` (diffprivlib's
//! LogisticRegression on the same shape). The fit's `(σ, λ)` calibration is memoised per
//! process by its public inputs, so `fit_eps1` (repeated fits) measures it once;
//! `calibrate_eps1` measures the idealised calibration, which is not memoised.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dp_glm::{Amp, Dataset, GlmObjective, Loss, Scale};
use dp_optim::{Lbfgs, Objective, seeded_rng};
use ndarray::{Array1, Array2};
use rand::RngExt;

const N: usize = 45_000;
const D: usize = 104;

/// Random rows scaled to unit norm, then a bias feature 1; labels from a fixed linear rule
/// with 10% flips.
fn data() -> Dataset {
    let mut rng = seeded_rng(3);
    let mut x = Array2::from_shape_fn((N, D), |(_, j)| {
        if j == D - 1 {
            0.0
        } else {
            rng.random::<f64>() - 0.5
        }
    });
    let w = Array1::from_shape_fn(D, |j| ((j * 7) % 5) as f64 - 2.0);
    let mut y = Array1::zeros(N);
    for i in 0..N {
        let mut row = x.row_mut(i);
        let norm = row.dot(&row).sqrt();
        row /= norm;
        row[D - 1] = 1.0;
        let flip = rng.random::<f64>() < 0.1;
        y[i] = if (row.dot(&w) >= 0.0) != flip {
            1.0
        } else {
            -1.0
        };
    }
    Dataset::new(x, y).expect("valid data")
}

fn amp_fit(c: &mut Criterion) {
    let data = data();
    let mut amp = Amp::new(Loss::Logistic).budget(1.0, 1e-5);
    amp.objpert.x_bound = 2f64.sqrt();
    let mut group = c.benchmark_group("amp_45000x104");
    group.sample_size(10);
    group.bench_function("fit_eps1", |b| {
        let mut rng = seeded_rng(4);
        b.iter(|| black_box(amp.fit(&data, &mut rng).expect("fits")))
    });
    group.bench_function("calibrate_eps1", |b| {
        b.iter(|| black_box(amp.calibrate().expect("calibrates")))
    });
    let obj = GlmObjective::new(&data, Loss::Logistic, 1.0, Scale::Sum).expect("objective");
    let theta = Array1::from_elem(D, 0.01);
    let mut grad = Array1::zeros(D);
    group.bench_function("full_gradient", |b| {
        b.iter(|| black_box(obj.value_grad(theta.view(), grad.view_mut())))
    });
    // Ten iterations from 0, divided by ten in the report.
    group.bench_function("lbfgs_10_iterations", |b| {
        let x0 = Array1::zeros(D);
        b.iter(|| {
            black_box(
                Lbfgs::new()
                    .max_iters(10)
                    .grad_tol(0.0)
                    .minimize(&obj, x0.view(), None)
                    .expect("runs"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, amp_fit);
criterion_main!(benches);
