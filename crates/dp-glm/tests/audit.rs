//! Empirical privacy audits: run a private mechanism many times (seeded) on two neighbouring
//! datasets built to be as hard to hide as possible, estimate a lower bound on ε from a
//! threshold test with Clopper–Pearson intervals (`dp_accounting::audit`), and check it never
//! exceeds the claimed ε — and is not trivially zero, so the audit has power.
//!
//! The datasets (add/remove): `D` holds rows whose gradient is zero at every θ (zero features)
//! and `D' = D ∪ {canary}`, where the canary's gradient is clipped to exactly the clip norm
//! along `e₁`. The statistic is `θ₁` of the released model; the threshold is chosen on a first
//! batch of runs and the bound computed on fresh runs, so the choice does not bias it.

use dp_accounting::audit::{TestCounts, epsilon_lower_bound};
use dp_accounting::{AccountantKind, Ledger};
use dp_glm::{Dataset, GlmObjective, Loss, Scale};
use dp_optim::{BatchSchedule, DpSgd, L2Regulariser, Length, StepSize, Unconstrained, seeded_rng};
use ndarray::{Array1, Array2};

const DELTA: f64 = 1e-5;
/// Confidence of the lower bound: it holds with probability ≥ 0.99.
const ALPHA: f64 = 0.01;

/// `zeros` rows of zero features, plus the canary `(10, 0)` with label +1 when `canary`.
fn neighbour(zeros: usize, canary: bool) -> Dataset {
    let n = zeros + usize::from(canary);
    let mut x = Array2::zeros((n, 2));
    if canary {
        x[[zeros, 0]] = 10.0;
    }
    Dataset::new(x, Array1::from_elem(n, 1.0)).expect("valid data")
}

/// The threshold maximising the point-estimate bound on the selection runs.
fn choose_threshold(on_d: &[f64], on_d_prime: &[f64]) -> f64 {
    let mut candidates: Vec<f64> = on_d.iter().chain(on_d_prime).copied().collect();
    candidates.sort_by(f64::total_cmp);
    let mut best = (f64::NEG_INFINITY, candidates[0]);
    for &t in candidates.iter().step_by(7) {
        let c = TestCounts::from_statistics(on_d, on_d_prime, t);
        let fpr = (c.false_positives as f64 + 0.5) / c.negatives as f64;
        let fnr = (c.false_negatives as f64 + 0.5) / c.positives as f64;
        let score = ((1.0 - fnr) / fpr).ln().max(((1.0 - fpr) / fnr).ln());
        if score > best.0 {
            best = (score, t);
        }
    }
    best.1
}

/// Audits `run(dataset, seed) -> statistic`: threshold from `select` runs per side, bound
/// from `measure` fresh runs per side.
fn audit(run: impl Fn(&Dataset, u64) -> f64, select: u64, measure: u64) -> f64 {
    let (d, d_prime) = (neighbour(9, false), neighbour(9, true));
    let stats = |data: &Dataset, seeds: std::ops::Range<u64>| -> Vec<f64> {
        seeds.map(|s| run(data, s)).collect()
    };
    let t = choose_threshold(&stats(&d, 0..select), &stats(&d_prime, 0..select));
    let (m0, m1) = (1_000_000, 2_000_000);
    let counts = TestCounts::from_statistics(
        &stats(&d, m0..m0 + measure),
        &stats(&d_prime, m1..m1 + measure),
        t,
    );
    epsilon_lower_bound(counts, DELTA, ALPHA).expect("bound")
}

/// One DP-SGD run: Poisson rate `q`, `steps` steps, clip 1, noise multiplier `sigma`;
/// returns `θ₁` and the ledger.
fn dpsgd(data: &Dataset, seed: u64, q: f64, steps: usize, sigma: f64) -> (f64, Ledger) {
    let obj = GlmObjective::new(data, Loss::Logistic, 0.0, Scale::Sum).expect("objective");
    let sgd = DpSgd::new(
        BatchSchedule::Poisson { q },
        Length::Steps(steps),
        StepSize::Constant(1.0),
        1.0,
        sigma,
    );
    let sol = sgd
        .minimize(
            &obj,
            &L2Regulariser { lambda: 0.0 },
            &Unconstrained,
            Array1::zeros(2).view(),
            &mut seeded_rng(seed),
            None,
        )
        .expect("runs");
    (sol.x[0], sol.ledger.expect("ledger"))
}

#[test]
fn dpsgd_audit_never_exceeds_the_claimed_epsilon() {
    // Power floors: the audit's bound varies a lot with the stream at q = 0.5 (0.29 to 1.23
    // over four seed offsets with the grid-safe sampler), so its floor is 5% of the claim.
    for (q, steps, sigma, power) in [(1.0, 1, 1.0, 0.15), (0.5, 1, 0.8, 0.05)] {
        let (_, ledger) = dpsgd(&neighbour(9, true), 0, q, steps, sigma);
        let claimed = ledger.epsilon(AccountantKind::Pld, DELTA).expect("epsilon");
        let found = audit(|data, s| dpsgd(data, s, q, steps, sigma).0, 4_000, 20_000);
        eprintln!("DP-SGD q = {q}, T = {steps}, sigma = {sigma}: claimed {claimed}, audit {found}");
        assert!(found <= claimed, "audit {found} > claimed {claimed}");
        // Power: the test detects a real part of the claimed leakage (about 50% at q = 1 and
        // 6–25% at q = 0.5, where the canary is missing from half the batches).
        assert!(
            found > power * claimed,
            "audit {found} has no power (claimed {claimed})"
        );
    }
}

#[test]
fn objective_perturbation_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::ObjectivePerturbation;
    let mut learner = ObjectivePerturbation::new(Loss::Logistic).budget(2.0, DELTA);
    learner.lambda = Some(1.0);
    // The canary (10, 0) is scaled to the row bound X = 1 by the learner itself.
    let fit =
        |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits").coef()[0];
    let claimed = learner
        .fit(&neighbour(9, true), &mut seeded_rng(0))
        .expect("fits")
        .privacy()
        .epsilon;
    let found = audit(fit, 2_000, 10_000);
    eprintln!("ObjPert lambda = 1: claimed {claimed}, audit {found}");
    assert!(found <= claimed, "audit {found} > claimed {claimed}");
    assert!(
        found > 0.15 * claimed,
        "audit {found} has no power (claimed {claimed})"
    );
}
