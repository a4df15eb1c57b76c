//! Criterion benchmark of the exact discrete Gaussian sampler at the scale the exact-sum
//! releases use (σ ≈ 2^24 grid units; issue 12): nanoseconds per sample.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dp_optim::{discrete, seeded_rng};

fn discrete_gaussian(c: &mut Criterion) {
    let mut group = c.benchmark_group("discrete_gaussian");
    // σ² = 2^48 (σ = 2^24) and 3·2^47 (σ ≈ 2^24.3, a scale that is not a power of two).
    for (name, p) in [("sigma_2^24", 1u128 << 48), ("sigma_2^24.3", 3u128 << 47)] {
        group.bench_function(name, |b| {
            let mut rng = seeded_rng(3);
            b.iter(|| black_box(discrete::discrete_gaussian(&mut rng, p, 1).expect("draw")))
        });
    }
    group.finish();
}

criterion_group!(benches, discrete_gaussian);
criterion_main!(benches);
