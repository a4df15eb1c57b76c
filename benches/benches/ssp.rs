//! Criterion benchmark of AdaSSP (issue 12): one fit at d = 100, 300 and 800 on n = 2000
//! rows — the Gram matrix, faer's smallest eigenvalue and the Cholesky solve of
//! `(X̂ᵀX + λI) w = X̂ᵀy` (the hand-written Jacobi took 12.9 s at d = 800).
//!
//! `cargo xtask bench ssp`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dp_glm::{Dataset, Ssp};
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2};
use rand::RngExt;

const N: usize = 2000;

fn data(d: usize) -> Dataset {
    let mut rng = seeded_rng(1);
    let x = Array2::from_shape_fn((N, d), |_| rng.random::<f64>() - 0.5);
    let y = Array1::from_shape_fn(N, |i| x.row(i).sum() / d as f64);
    Dataset::new(x, y).expect("valid data")
}

fn adassp(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("adassp_fit_{N}_rows"));
    group.sample_size(10);
    for d in [100, 300, 800] {
        let data = data(d);
        let ssp = Ssp::new((d as f64).sqrt(), 1.0);
        group.bench_function(format!("d{d}"), |b| {
            let mut rng = seeded_rng(2);
            b.iter(|| black_box(ssp.fit(&data, &mut rng).expect("fits")))
        });
    }
    group.finish();
}

criterion_group!(benches, adassp);
criterion_main!(benches);
