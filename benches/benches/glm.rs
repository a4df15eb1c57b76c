//! Criterion benchmarks of the GLM hot path: one full gradient, the two gemv it is made of,
//! and one DP-SGD epoch with Poisson sampling (issue 3's shapes: 50,000 × 100 and
//! 50,000 × 1000, batch 256).
//!
//! `cargo xtask bench glm` (BLAS on) — the ratios to report are gradient / two-gemv at
//! d = 100, examples per second of the epoch at d = 100, and epoch / two-gemv at d = 1000.
//! The thread scaling of one full gradient at 10⁶ × 100 (issue 12) is the group
//! `glm_gradient_1000000x100_threads`: the time on 1 thread over the time on 2 (and 4 where
//! the machine has them).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dp_glm::{Dataset, GlmObjective, Loss, Scale};
use dp_optim::{
    BatchSchedule, DpSgd, L2Regulariser, Length, Objective, StepSize, Unconstrained, seeded_rng,
};
use ndarray::{Array1, Array2};
use rand::RngExt;

const N: usize = 50_000;
const D: usize = 100;
const D_WIDE: usize = 1000;

fn data(d: usize) -> Dataset {
    data_of(N, d)
}

fn data_of(n: usize, d: usize) -> Dataset {
    let mut rng = seeded_rng(1);
    let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>() - 0.5);
    let y = Array1::from_shape_fn(n, |i| if (i * 7919) % 3 == 0 { 1.0 } else { -1.0 });
    Dataset::new(x, y).expect("valid data")
}

/// One pass of the two gemv a full gradient is made of: `z = Xθ`, then `Xᵀc`.
fn two_gemv(data: &Dataset, theta: &Array1<f64>, coeffs: &Array1<f64>) -> f64 {
    let z = data.x().dot(theta);
    data.x().t().dot(coeffs).sum() + z.sum()
}

fn full_gradient(c: &mut Criterion) {
    let data = data(D);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let theta = Array1::from_elem(D, 0.01);
    let mut grad = Array1::zeros(D);
    let mut group = c.benchmark_group("glm_50000x100");
    group.bench_function("value_and_gradient", |b| {
        b.iter(|| black_box(obj.value_grad(theta.view(), grad.view_mut())))
    });
    let coeffs = Array1::from_elem(N, 0.5);
    group.bench_function("two_gemv", |b| {
        b.iter(|| black_box(two_gemv(&data, &theta, &coeffs)))
    });
    group.finish();
}

/// One full value and gradient at 10⁶ × 100 on rayon pools of 1, 2 (and 4 when the machine
/// has 4 cores) threads.
fn gradient_threads(c: &mut Criterion) {
    const ROWS: usize = 1_000_000;
    let data = data_of(ROWS, D);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let theta = Array1::from_elem(D, 0.01);
    let mut grad = Array1::zeros(D);
    let mut group = c.benchmark_group(format!("glm_gradient_{ROWS}x{D}_threads"));
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(10);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, 2, 4].into_iter().filter(|&t| t <= cores.max(2)) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        group.bench_function(format!("{threads}_threads"), |b| {
            b.iter(|| pool.install(|| black_box(obj.value_grad(theta.view(), grad.view_mut()))))
        });
    }
    group.finish();
}

/// One DP-SGD epoch (Poisson sampling, batch 256, Gaussian noise, plain SGD) at dimension `d`;
/// at `d = 1000` also the two-gemv pass it is compared with.
fn dpsgd_epoch_at(c: &mut Criterion, d: usize) {
    let data = data(d);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).expect("objective");
    let q = 256.0 / N as f64;
    let sgd = DpSgd::new(
        BatchSchedule::Poisson { q },
        Length::Epochs(1),
        StepSize::Constant(0.1),
        1.0,
        1.0,
    );
    let x0 = Array1::zeros(d);
    let mut group = c.benchmark_group(format!("dpsgd_epoch_{N}x{d}_b256"));
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(if d > D { 10 } else { 20 });
    group.bench_function("poisson_gaussian_sgd", |b| {
        let mut rng = seeded_rng(2);
        b.iter(|| {
            black_box(
                sgd.minimize(
                    &obj,
                    &L2Regulariser { lambda: 0.0 },
                    &Unconstrained,
                    x0.view(),
                    &mut rng,
                    None,
                )
                .expect("runs"),
            )
        })
    });
    if d > D {
        let theta = Array1::from_elem(d, 0.01);
        let coeffs = Array1::from_elem(N, 0.5);
        group.bench_function("two_gemv", |b| {
            b.iter(|| black_box(two_gemv(&data, &theta, &coeffs)))
        });
    }
    group.finish();
}

fn dpsgd_epoch(c: &mut Criterion) {
    dpsgd_epoch_at(c, D);
    dpsgd_epoch_at(c, D_WIDE);
}

criterion_group!(benches, full_gradient, gradient_threads, dpsgd_epoch);
criterion_main!(benches);
