//! Criterion benchmarks of the privacy accountants, on the shapes peers are measured on
//! (see `benches/peers/accounting_peers.py` for the same cases in Google's dp_accounting).
//!
//! `cargo xtask bench accounting`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dp_accounting::{
    Accountant, AccountantKind, Mechanism, Neighbouring, PldAccountant, PldConfig, RdpAccountant,
    Target, calibrate_noise,
};

/// DP-SGD with q = 0.004, σ = 1, T = 10⁴, δ = 1e-5.
const Q: f64 = 0.004;
const STEPS: u64 = 10_000;

fn pld_epsilon(c: &mut Criterion) {
    c.bench_function("pld_epsilon_dpsgd_q0.004_s1_T1e4", |b| {
        b.iter(|| {
            let mut acc = PldAccountant::new(PldConfig::default(), Neighbouring::AddRemove);
            let step = Mechanism::subsampled_gaussian(1.0, Q).expect("valid");
            acc.compose(&step, STEPS).expect("composes");
            black_box(acc.epsilon(black_box(1e-5)).expect("epsilon"))
        })
    });
}

fn rdp_epsilon(c: &mut Criterion) {
    c.bench_function("rdp_epsilon_dpsgd_q0.004_s1_T1e4", |b| {
        b.iter(|| {
            let mut acc = RdpAccountant::new(Neighbouring::AddRemove);
            let step = Mechanism::subsampled_gaussian(1.0, Q).expect("valid");
            acc.compose(&step, STEPS).expect("composes");
            black_box(acc.epsilon(black_box(1e-5)).expect("epsilon"))
        })
    });
}

fn pld_calibration(c: &mut Criterion) {
    let mut group = c.benchmark_group("calibration");
    group.sample_size(10);
    group.bench_function("pld_sigma_eps1_q0.004_T2500", |b| {
        b.iter(|| {
            let target = Target::new(1.0, 1e-5).expect("valid");
            black_box(
                calibrate_noise(
                    target,
                    AccountantKind::Pld,
                    Neighbouring::AddRemove,
                    2500,
                    |s| Mechanism::subsampled_gaussian(s, Q),
                )
                .expect("calibrates"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, pld_epsilon, rdp_epsilon, pld_calibration);
criterion_main!(benches);
