//! Output perturbation calibrates the scale-free noise multiplier `σ/Δ`, not the absolute
//! noise `σ`: it trains whatever the scale of its sensitivity `Δ = 2G/(λn)` (a huge public
//! row count, a tiny gradient bound, a large or small ridge), the calibrated `σ` follows `Δ`,
//! and the ledger records exactly the released mechanism, priced at the report's ε.

use dp_accounting::{Mechanism, Neighbouring};
use dp_glm::{Dataset, Error, Loss, OutputPerturbation};
use dp_optim::{Noise, seeded_rng};
use ndarray::{Array1, Array2};
use rand::RngExt;

/// The number of features.
const DIM: usize = 3;

/// 40 rows of norm ≤ 1 with labels in `[-1, 1]` (within the squared loss's default `Y = 1`).
fn data() -> Dataset {
    let mut rng = seeded_rng(7);
    let mut x = Array2::from_shape_fn((40, DIM), |_| rng.random::<f64>() - 0.5);
    for mut row in x.rows_mut() {
        let norm = row.dot(&row).sqrt();
        row /= norm.max(1.0);
    }
    let y = Array1::from_shape_fn(40, |i| (x[[i, 0]] - 0.5 * x[[i, 1]]).clamp(-1.0, 1.0));
    Dataset::new(x, y).expect("finite data")
}

/// What a fit released, read from its report.
struct Released {
    /// The released noise's standard deviation σ.
    sigma: f64,
    /// The slack-free distance `Δ` between the releases on neighbours.
    distance: f64,
    /// The ledger's per-record sensitivity: `Δ` plus the grid's rounding slack, per record.
    recorded: f64,
    /// The grid's rounding slack.
    slack: f64,
    /// The report's ε.
    epsilon: f64,
}

/// Fits `l` on [`data`] and checks its report: ε within the target; the ledger one Gaussian
/// that is exactly the release — the report's σ, on the grid `Noise::on_grid` gives σ for
/// values within the radius, the distance plus that grid's slack as its sensitivity (halved
/// per record under replace-one), that grid's discrete Gaussian — and priced again by the
/// accountant at exactly the report's ε.
fn fit_and_check(l: &OutputPerturbation) -> Released {
    let model = l
        .fit(&data(), &mut seeded_rng(1))
        .expect("the fit succeeds");
    let r = model.privacy();
    assert!(r.epsilon <= l.budget.epsilon, "{} > target", r.epsilon);
    let noise = |k: &str| r.noise.iter().find(|(n, _)| n == k).expect(k).1;
    let (sigma, distance) = (noise("sigma"), noise("sensitivity"));
    let grid = Noise::Gaussian { std: sigma }
        .on_grid(Some(l.radius))
        .expect("the release's grid");
    let slack = grid.slack(DIM);
    let recorded = (distance + slack) / r.neighbouring.sum_sensitivity_factor();
    let released = Mechanism::gaussian(sigma, recorded)
        .expect("a valid Gaussian")
        .with_grid(grid.discrete_gaussian(DIM).expect("a Gaussian grid"));
    let entries = r.event.releases();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].count, 1);
    assert_eq!(entries[0].mechanism, released);
    let repriced = dp_accounting::price(&r.event, r.accountant, r.delta)
        .expect("priced")
        .epsilon;
    assert_eq!(repriced, r.epsilon);
    Released {
        sigma,
        distance,
        recorded,
        slack,
        epsilon: r.epsilon,
    }
}

/// Squared loss with ridge `lambda` and the defaults otherwise (`G = √2 + 1`).
fn squared(lambda: f64) -> OutputPerturbation {
    let mut l = OutputPerturbation::new(Loss::Squared);
    l.lambda = lambda;
    l
}

#[test]
fn a_huge_public_row_count_or_a_tiny_gradient_bound_trains() {
    // n = 10¹⁰ public rows: Δ = 2G/(λn) ≈ 5·10⁻⁸, σ ≈ 10⁻⁷ — below the absolute range
    // [10⁻⁶, 10⁹] σ itself was searched in, which refused to train. Under both relations.
    for rel in [Neighbouring::ReplaceOne, Neighbouring::AddRemove] {
        let mut l = squared(0.01);
        l.public_n = Some(10_000_000_000);
        l.budget.neighbouring = rel;
        let r = fit_and_check(&l);
        assert!(r.sigma < 1e-6, "{}", r.sigma);
        let m = r.sigma / r.recorded;
        assert!(m > 1.0 && m < 10.0, "σ/Δ = {m}");
    }
    // A tiny gradient bound: rows of norm ≤ 10⁻⁴, labels ≤ 10⁻⁶ (G ≈ 10⁻⁸).
    let mut l = squared(0.01);
    l.x_bound = 1e-4;
    l.y_bound = 1e-6;
    let r = fit_and_check(&l);
    assert!(r.sigma < 1e-6, "{}", r.sigma);
    // A ridge of 10³⁰: Δ ≈ 10⁻³¹, far below the grid values within the radius need
    // (2^-50 for B = 1): the noise is then sized by the grid's slack, which dominates the
    // recorded sensitivity.
    let r = fit_and_check(&squared(1e30));
    assert!(
        r.distance < 1e-30 && r.slack > 1e12 * r.distance,
        "{}",
        r.distance
    );
    let m = r.sigma / r.recorded;
    assert!(m > 1.0 && m < 10.0, "σ/Δ = {m}");
}

#[test]
fn the_noise_scales_with_the_sensitivity() {
    // λ = 2^-j scales Δ by exactly 2^j (from ≈ 10⁻¹² to ≈ 10¹²): the calibrated σ scales by
    // 2^j, up to the calibration's tolerance and, where the grid is coarsened for values
    // within the radius (σ < 2^-26), its slack's share of the sensitivity. The multiplier
    // σ/Δ_recorded, which fixes ε, does not move; ε is the target's each time.
    let base = fit_and_check(&squared(1.0));
    let multiplier = base.sigma / base.recorded;
    let mut seen = 0;
    for j in (-37..=43).step_by(4) {
        let scale = 2f64.powi(j);
        let l = squared(1.0 / scale);
        let r = fit_and_check(&l);
        assert!(
            r.epsilon > 0.999 * l.budget.epsilon,
            "ε = {} at 2^{j}",
            r.epsilon
        );
        assert_eq!(r.distance, base.distance * scale, "2^{j}");
        let moved = (r.sigma / (base.sigma * scale) - 1.0).abs();
        assert!(
            moved <= 1e-5 + r.slack / r.distance,
            "σ moved by {moved:e} at 2^{j}"
        );
        let m = r.sigma / r.recorded;
        assert!(
            (m / multiplier - 1.0).abs() < 1e-5,
            "σ/Δ = {m} vs {multiplier}"
        );
        seen += 1;
    }
    assert_eq!(seen, 21);
}

#[test]
fn a_radius_no_grid_can_hold_is_a_typed_error() {
    // Values within B = 2^1012 need a grid coarser than the exact release supports (2^960),
    // whatever the noise: refused, naming the radius, nothing released.
    let mut l = squared(1e300);
    l.radius = 2f64.powi(1012);
    match l.fit(&data(), &mut seeded_rng(1)) {
        Err(Error::InvalidHyperParameter { name, value, .. }) => {
            assert_eq!((name, value), ("radius", l.radius));
        }
        other => panic!("{other:?}"),
    }
}
