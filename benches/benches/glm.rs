//! Criterion benchmarks of the GLM hot path: one full gradient and the two gemv it is made of
//! (50,000 × 100). The DP-SGD epochs are in the `dpsgd` bench.
//!
//! `cargo xtask bench glm` (BLAS on) — the ratio to report is gradient / two-gemv at d = 100.
//! The thread scaling of one full gradient at 10⁶ × 100 (issue 12) is the group
//! `glm_gradient_1000000x100_threads`: the time on 1 thread over the time on 2 (and 4 where
//! the machine has them).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dp_glm::{Dataset, GlmObjective, Loss, Scale};
use dp_optim::Objective;
use ndarray::Array1;

mod common;
use common::{data_of, two_gemv};

const N: usize = 50_000;
const D: usize = 100;

fn data(d: usize) -> Dataset {
    data_of(N, d)
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

criterion_group!(benches, full_gradient, gradient_threads);
criterion_main!(benches);
