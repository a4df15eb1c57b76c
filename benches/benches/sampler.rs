//! Criterion benchmark of the exact discrete Gaussian sampler at the scale the exact-sum
//! releases use (σ ≈ 2^24 grid units; issue 12): nanoseconds of CPU time per sample
//! ([`cpu_time::CpuTime`]).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use cpu_time::CpuTime;
use dp_optim::{discrete, seeded_rng};

mod cpu_time;

fn discrete_gaussian(c: &mut Criterion<CpuTime>) {
    let mut group = c.benchmark_group("discrete_gaussian");
    group.sampling_mode(cpu_time::FLAT);
    // σ² = 2^48 (σ = 2^24) and 3·2^47 (σ ≈ 2^24.3, a scale that is not a power of two).
    for (name, p) in [("sigma_2^24", 1u128 << 48), ("sigma_2^24.3", 3u128 << 47)] {
        group.bench_function(name, |b| {
            let mut rng = seeded_rng(3);
            b.iter(|| black_box(discrete::discrete_gaussian(&mut rng, p, 1).expect("draw")))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = cpu_time::config();
    targets = discrete_gaussian
}
criterion_main!(benches);
