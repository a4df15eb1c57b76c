//! Empirical privacy audits: run a private mechanism many times (seeded) on two neighbouring
//! datasets built to be as hard to hide as possible, estimate a lower bound on ε from a
//! threshold test with Clopper–Pearson intervals (`dp_accounting::audit`), and check it never
//! exceeds the claimed ε — and is not trivially zero, so the audit has power.
//!
//! The datasets, under the relation each learner is analysed for: `D` holds rows whose
//! gradient is zero at every θ (zero features) and, under add/remove, `D' = D ∪ {canary}`;
//! under replace-one, `D` and `D'` both end with the canary row and differ only in its label
//! (±1), which flips its gradient — twice the clip norm apart, the worst case. The canary's
//! gradient is (or is clipped to) the clip norm along `e₁`. The statistic is `θ₁` of the
//! released model; the threshold is chosen on a first batch of runs and the bound computed on
//! fresh runs, so the choice does not bias it. The private bounds (a private quantile of a
//! list of values) are audited the same way on two neighbouring lists.
//!
//! False-failure rate: each audit's bound holds with probability ≥ 1 − ALPHA = 0.99 (the two
//! Clopper–Pearson bounds at α/2 each), so a correct claim fails an audit with probability
//! ≤ 1% per (learner, setting); the seeds are fixed, so a given build passes or fails
//! deterministically. The power checks (`found > fraction · claimed`) are calibrated on these
//! seeds with a margin of about 2× below the measured fraction.

use dp_accounting::audit::{TestCounts, epsilon_lower_bound};
use dp_accounting::{AccountantKind, Ledger};
use dp_glm::{Dataset, GlmObjective, LinearModel, Loss, Scale};
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

/// The add/remove pair: 9 zero rows, and the same plus the canary.
fn add_remove() -> (Dataset, Dataset) {
    (neighbour(9, false), neighbour(9, true))
}

/// The replace-one pair: `zeros` zero rows and the canary `(x1, 0)` with label −1 (`D`) or
/// +1 (`D'`).
fn replace_one(x1: f64, zeros: usize) -> (Dataset, Dataset) {
    let with_label = |label: f64| {
        let mut x = Array2::zeros((zeros + 1, 2));
        x[[zeros, 0]] = x1;
        let mut y = Array1::from_elem(zeros + 1, 1.0);
        y[zeros] = label;
        Dataset::new(x, y).expect("valid data")
    };
    (with_label(-1.0), with_label(1.0))
}

/// The fewest selection runs on the rare side of a threshold for it to be considered.
const MIN_TAIL: u64 = 20;

/// The threshold maximising the point-estimate bound on the selection runs, among those with
/// at least [`MIN_TAIL`] runs on the side whose rate is the ratio's denominator.
fn choose_threshold(on_d: &[f64], on_d_prime: &[f64]) -> f64 {
    let mut candidates: Vec<f64> = on_d.iter().chain(on_d_prime).copied().collect();
    candidates.sort_by(f64::total_cmp);
    let mut best = (f64::NEG_INFINITY, candidates[0]);
    for &t in candidates.iter().step_by(7) {
        let c = TestCounts::from_statistics(on_d, on_d_prime, t);
        let fpr = (c.false_positives as f64 + 0.5) / c.negatives as f64;
        let fnr = (c.false_negatives as f64 + 0.5) / c.positives as f64;
        // A ratio is scored only where its small side counts MIN_TAIL runs: further out the
        // point estimate is mostly noise, the threshold it picks overfits the selection runs
        // and the fresh runs then often bound nothing.
        let tail = |count: u64| {
            if count >= MIN_TAIL {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        };
        let score = (((1.0 - fnr) / fpr).ln() + tail(c.false_positives))
            .max(((1.0 - fpr) / fnr).ln() + tail(c.false_negatives));
        if score > best.0 {
            best = (score, t);
        }
    }
    best.1
}

/// Audits `run(input, seed) -> statistic` on the neighbouring pair `(D, D')` (datasets, or the
/// lists of values the private bounds read): threshold from `select` runs per side, bound
/// from `measure` fresh runs per side.
fn audit<T>((d, d_prime): (T, T), run: impl Fn(&T, u64) -> f64, select: u64, measure: u64) -> f64 {
    let stats = |data: &T, seeds: std::ops::Range<u64>| -> Vec<f64> {
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
        let found = audit(
            add_remove(),
            |data, s| dpsgd(data, s, q, steps, sigma).0,
            4_000,
            20_000,
        );
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

/// Audits a learner's release on `(D, D')` with `select`/`measure` runs per side: the claim
/// is the ε its privacy report states for a fit on `D'`; the audit must not exceed it and
/// must find at least `power` of it.
fn audit_learner(
    name: &str,
    (d, d_prime): (Dataset, Dataset),
    fit: impl Fn(&Dataset, u64) -> LinearModel,
    (select, measure): (u64, u64),
    power: f64,
) {
    let claimed = fit(&d_prime, 0).privacy().epsilon;
    let found = audit(
        (d, d_prime),
        |data, s| fit(data, s).coef()[0],
        select,
        measure,
    );
    check(name, found, claimed, power);
}

/// The audit's verdict: `found` never above `claimed`, and at least `power` of it.
fn check(name: &str, found: f64, claimed: f64, power: f64) {
    eprintln!("{name}: claimed {claimed}, audit {found}");
    assert!(
        found <= claimed,
        "{name}: audit {found} > claimed {claimed}"
    );
    assert!(
        found > power * claimed,
        "{name}: audit {found} has no power (claimed {claimed})"
    );
}

#[test]
fn objective_perturbation_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::ObjectivePerturbation;
    // The RDP accountant prices the claim (with the grids' adjustment): the default PLD
    // accountant recalibrates (σ, λ) at every fit, too slow for 2.4·10⁴ fits.
    let mut learner = ObjectivePerturbation::new(Loss::Logistic).budget(2.0, DELTA);
    learner.lambda = Some(1.0);
    learner.budget.accountant = AccountantKind::Rdp;
    // The canary (10, 0) is scaled to the row bound X = 1 by the learner itself.
    let fit = |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits");
    audit_learner(
        "ObjPert lambda = 1",
        add_remove(),
        fit,
        (2_000, 10_000),
        0.15,
    );
}

#[test]
fn amp_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::Amp;
    // The RDP accountant (paper 001's own analysis) prices the claim: the default PLD
    // accountant recalibrates (σ, λ) at every fit, too slow for 2.4·10⁴ fits.
    let mut learner = Amp::new(Loss::Logistic).budget(2.0, DELTA);
    learner.objpert.lambda = Some(1.0);
    learner.objpert.budget.accountant = AccountantKind::Rdp;
    // The canary (10, 0) is scaled to the row bound X = 1 by the learner itself.
    let fit = |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits");
    audit_learner("AMP lambda = 1", add_remove(), fit, (2_000, 10_000), 0.15);
}

#[test]
fn output_perturbation_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::OutputPerturbation;
    // Replace-one. With Y = 0.1 the enforced gradient bound is G = √(2·¼)·0.1 + ¼·1·1 ≈ 0.32,
    // below the canary's logistic gradient near θ = 0 (≈ 0.5), so the canary's clipped gradient
    // is exactly G and the two minimisers are ±G/(λn): the full claimed sensitivity 2G/(λn)
    // (measured: the released means differ by 0.64 = 2G/(λn)). The learner passes that
    // replace-one sensitivity to `Mechanism::gaussian`, which takes a per-record bound and
    // doubles it under replace-one, so σ is twice what the target needs and the true ε is
    // well below the claim: the audit can only find a small share of it. ε = 8 gives the
    // test a signal it can see.
    let mut learner = OutputPerturbation::new(Loss::Logistic).budget(8.0, DELTA);
    learner.y_bound = 0.1;
    learner.lambda = 0.1;
    let fit = |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits");
    let pair = replace_one(1.0, 9);
    audit_learner("output perturbation", pair, fit, (2_000, 10_000), 0.05);
}

#[test]
fn dpgd_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::DpGd;
    // Replace-one; the canary (10, 0)'s logistic gradient has norm 10·σ(∓10θ₁) ≥ 1 while
    // |θ₁| ≤ 0.2, which the small step keeps, so it is clipped to exactly the clip norm 1 and
    // flips sign with the label: each step sees the full sensitivity 2. ε = 4 (noise
    // multiplier ≈ 1 per step): at ε = 2 the per-run signal is too weak for 10⁴ runs to
    // resolve more than ~12% of the claim.
    let mut learner = DpGd::new(Loss::Logistic).budget(4.0, DELTA);
    learner.steps = 3;
    learner.learning_rate = 0.1;
    let fit = |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits");
    let pair = replace_one(10.0, 9);
    audit_learner("DP-GD T = 3", pair, fit, (2_000, 10_000), 0.15);
}

#[test]
fn dpssgd_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::DpSsgd;
    // Replace-one, squared loss, n = 2 (one zero row and the canary (10, 0) with label ∓1):
    // the canary's gradient 10(10θ₁ ∓ 1) is clipped to the clip norm 1 with the sign of the
    // label while |θ₁| < 0.09, and the released average of the last ⌊n/2⌋ = 1 iterates is
    // the final one, which carries the canary's step whatever the order. With n = 2 shuffling
    // amplifies almost nothing, so the claim is close to the per-step ε0; the final iterate
    // also carries the other step's noise, so the audit sees ~0.7 of the per-step signal.
    // ε = 8 (per-step noise multiplier ≈ 0.7): at ε = 4 the signal is too weak for 10⁴ runs.
    let mut learner = DpSsgd::new().budget(8.0, DELTA);
    learner.learning_rate = 0.002;
    let fit = |data: &Dataset, s: u64| learner.fit(data, &mut seeded_rng(s)).expect("fits");
    let pair = replace_one(10.0, 1);
    audit_learner("DP-SSGD n = 2", pair, fit, (2_000, 10_000), 0.08);
}

#[test]
fn private_bounds_audit_never_exceeds_the_claimed_epsilon() {
    use dp_glm::bounds::private_quantile;
    // The private quantile behind the bounds the CLI estimates (AboveThreshold over the
    // public grid of candidates 2^(k/8)). Two values 1 and 1.1; the neighbour replaces 1.1 by
    // 10^6 (replace-one) or adds 10^6 (add/remove). Every candidate in [1.19, 10^6) then sees
    // its query drop by the full sensitivity (1 for the median under replace-one; 0.99 for
    // the 0.99-quantile under add/remove), so AboveThreshold stops later; the statistic is
    // ln of the estimate. ε = 4 per estimate.
    let base = [1.0, 1.1];
    let replaced = [1.0, 1e6];
    let added = [1.0, 1.1, 1e6];
    let eps = 4.0;
    // Power floors: over 8 seed offsets (and another stream of the same law) the audit found
    // 0.43–0.78 of the claimed 4 for the median and 1.0–1.22 for the 0.99 quantile, with the
    // threshold chosen on 2·10⁴ runs per side; the floors are about half the least of those.
    // With 4·10³ selection runs the threshold overfits them (MIN_TAIL runs of 4·10³ on its
    // rare side) and the median's bound ranged 0.24–0.57, below any floor with a margin.
    for (name, pair, quantile, power) in [
        ("replace-one, median", (&base[..], &replaced[..]), 0.5, 0.05),
        ("add/remove, 0.99", (&base[..], &added[..]), 0.99, 0.12),
    ] {
        let run = |values: &&[f64], s: u64| {
            private_quantile(values, quantile, eps, &mut seeded_rng(s))
                .expect("estimates")
                .0
                .ln()
        };
        let (_, claimed) =
            private_quantile(pair.1, quantile, eps, &mut seeded_rng(0)).expect("estimates");
        let found = audit(pair, run, 20_000, 40_000);
        check(&format!("private bound ({name})"), found, claimed, power);
    }
}
