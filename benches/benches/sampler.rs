//! Criterion benchmark of the exact discrete Gaussian sampler at the scale the exact-sum
//! releases use (σ ≈ 2^24 grid units; issue 12): nanoseconds of CPU time per sample
//! ([`cpu_time::CpuTime`]).

use std::hint::black_box;

use cpu_time::CpuTime;
use criterion::{Criterion, criterion_group, criterion_main};
use dp_optim::discrete::DiscreteGaussian;
use dp_optim::{secure_rng, seeded_rng};

mod cpu_time;

fn discrete_gaussian(c: &mut Criterion<CpuTime>) {
    let mut group = c.benchmark_group("discrete_gaussian");
    group.sampling_mode(cpu_time::FLAT);
    // σ² = 2^48 (σ = 2^24) and 3·2^47 (σ ≈ 2^24.3, a scale that is not a power of two), with
    // the seeded generator and (for the second) the default CSPRNG.
    for (name, p, csprng) in [
        ("sigma_2^24", 1u128 << 48, false),
        ("sigma_2^24.3", 3u128 << 47, true),
    ] {
        let law = DiscreteGaussian::new(p, 1).expect("law");
        group.bench_function(name, |b| {
            let mut rng = seeded_rng(3);
            b.iter(|| black_box(law.sample(&mut rng).expect("draw")))
        });
        if csprng {
            group.bench_function(format!("{name}_csprng"), |b| {
                let mut rng = secure_rng().expect("entropy");
                b.iter(|| black_box(law.sample(&mut rng).expect("draw")))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = cpu_time::config();
    targets = discrete_gaussian
}
criterion_main!(benches);
