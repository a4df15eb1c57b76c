//! Criterion benchmark of the exact discrete Gaussian samplers at the scale the exact-sum
//! releases use (σ ≈ 2^24 grid units; issue 12): nanoseconds of CPU time per sample
//! ([`cpu_time::CpuTime`]). `table_*` is the sampler the releases draw with
//! ([`TableGaussian`]), `cks_*` the rejection sampler of Canonne, Kamath & Steinke
//! ([`DiscreteGaussian`]) it replaced, for reference.

use std::hint::black_box;

use cpu_time::CpuTime;
use criterion::measurement::Measurement;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use dp_optim::discrete::{DiscreteGaussian, TableGaussian};
use dp_optim::{secure_rng, seeded_rng};
use rand::Rng;

mod cpu_time;

/// A sampler of the discrete Gaussian.
trait Law {
    /// One draw.
    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> i128;
}

impl Law for TableGaussian {
    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> i128 {
        self.sample(rng).expect("draw")
    }
}

impl Law for DiscreteGaussian {
    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> i128 {
        self.sample(rng).expect("draw")
    }
}

/// One case per generator: the seeded one, and the default CSPRNG when `csprng`.
fn cases<M: Measurement, L: Law>(
    group: &mut BenchmarkGroup<'_, M>,
    name: &str,
    csprng: bool,
    law: &L,
) {
    group.bench_function(name, |b| {
        let mut rng = seeded_rng(3);
        b.iter(|| black_box(law.draw(&mut rng)))
    });
    if csprng {
        group.bench_function(format!("{name}_csprng"), |b| {
            let mut rng = secure_rng().expect("entropy");
            b.iter(|| black_box(law.draw(&mut rng)))
        });
    }
}

fn discrete_gaussian(c: &mut Criterion<CpuTime>) {
    let mut group = c.benchmark_group("discrete_gaussian");
    group.sampling_mode(cpu_time::FLAT);
    // σ² = 2^48 (σ = 2^24) and 3·2^47 (σ ≈ 2^24.3, a scale that is not a power of two), with
    // the seeded generator and (for the second) the default CSPRNG.
    for (name, p, csprng) in [
        ("sigma_2^24", 1u128 << 48, false),
        ("sigma_2^24.3", 3u128 << 47, true),
    ] {
        let table = TableGaussian::new(p).expect("law");
        cases(&mut group, &format!("table_{name}"), csprng, &table);
        // Building the table: once per release law (calibrations build one per trial noise).
        group.bench_function(format!("table_build_{name}"), |b| {
            b.iter(|| black_box(TableGaussian::new(black_box(p)).expect("law")))
        });
        let cks = DiscreteGaussian::new(p, 1).expect("law");
        cases(&mut group, &format!("cks_{name}"), csprng, &cks);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = cpu_time::config();
    targets = discrete_gaussian
}
criterion_main!(benches);
