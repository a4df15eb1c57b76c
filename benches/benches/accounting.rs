//! Criterion benchmarks of the privacy accountants, on the shapes peers are measured on
//! (see `benches/peers/accounting_peers.py` for the same cases in Google's dp_accounting).
//!
//! `cargo xtask bench accounting`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dp_accounting::{
    Accountant, AccountantKind, Event, Mechanism, Neighbouring, PldAccountant, PldConfig,
    PrivacyEvent, RdpAccountant, Repetitions, Target, calibrate_noise, price,
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

/// A typical model's event tree: six private feature ranges (pure DP) before DP-SGD, 2,500
/// Poisson-sampled steps; `tuned`: the training and a noisy score repeated K ~ Poisson(3)
/// times (honest tuning, Papernot & Steinke 2022).
fn model_tree(tuned: bool) -> PrivacyEvent {
    let ranges = Event::release(Mechanism::pure_dp(0.0333).expect("valid"), 6, "ranges");
    let steps = Event::release(
        Mechanism::subsampled_gaussian(1.1, Q).expect("valid"),
        2500,
        "steps",
    );
    let learner = if tuned {
        let score = Event::release(Mechanism::gaussian(40.0, 1.0).expect("valid"), 1, "score");
        Event::RepeatAndSelect {
            event: Box::new(Event::Composed(vec![steps, score])),
            repetitions: Repetitions::Poisson { mean: 3.0 },
        }
    } else {
        steps
    };
    PrivacyEvent::new(
        Neighbouring::AddRemove,
        Event::Composed(vec![ranges, learner]),
    )
    .expect("one relation")
}

/// Pricing a model's stored tree again (`dpglm account --model`; issue 32 asks ≤ 50 ms).
fn price_model_tree(c: &mut Criterion) {
    let mut group = c.benchmark_group("price_tree");
    group.sample_size(20);
    for (name, tuned, kind) in [
        ("dpsgd_ranges_pld", false, AccountantKind::Pld),
        ("dpsgd_ranges_rdp", false, AccountantKind::Rdp),
        ("dpsgd_honest_tuning_ranges_rdp", true, AccountantKind::Rdp),
    ] {
        let tree = model_tree(tuned);
        group.bench_function(name, |b| {
            b.iter(|| black_box(price(black_box(&tree), kind, 1e-5).expect("priced")))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    pld_epsilon,
    rdp_epsilon,
    pld_calibration,
    price_model_tree
);
criterion_main!(benches);
