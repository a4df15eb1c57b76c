//! AMP's default tolerance `τ = 5e-4·L/√2` and output noise `σ_out = 0.15·√2/L` follow the
//! scale of the data: scaling the rows by `a` (row bound `X → aX`, so `L → aL`, `β → a²β`)
//! maps the minimiser `θ → θ/a`, the same predictions, and the defaults make the whole
//! mechanism the one at `X = 1` rescaled. Paper 001's absolute `τ = 5e-4` and `σ_out = 0.15`
//! are refused at `X = 1e12` and `X = 1e-9`; the defaults fit at every scale, within the
//! target, with the same predictions, and are paper 001's values bit for bit at its `L = √2`.
//! On many public rows a fit raises the defaults to what the release needs: `τ` to the
//! gradient's floating-point floor, `σ_out` to hold the release box.

use dp_accounting::AccountantKind;
use dp_glm::{Amp, Dataset, Error, LinearModel, Loss};
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2};
use rand::RngExt;

/// The target `(ε, δ)`.
const EPSILON: f64 = 1.0;
const DELTA: f64 = 1e-5;

/// Row bounds from tiny to huge, with paper 001's `√2`; 1 is the reference scale.
const SCALES: [f64; 4] = [1e-9, 1.0, std::f64::consts::SQRT_2, 1e12];

/// `n` rows `(u, v, 1/2)` with `u, v` uniform on `[−1/2, 1/2]` (norm at most `√3/2 < 1`)
/// and ±1 labels from a logistic model, drawn with `seed`, then scaled by `a`: the same
/// rows at every scale.
fn rows(n: usize, seed: u64, a: f64) -> Dataset {
    let mut rng = seeded_rng(seed);
    let mut x = Array2::zeros((n, 3));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let (u, v) = (rng.random::<f64>() - 0.5, rng.random::<f64>() - 0.5);
        x[[i, 0]] = u;
        x[[i, 1]] = v;
        x[[i, 2]] = 0.5;
        let z = 8.0 * u - 6.0 * v + 0.5;
        y[i] = if rng.random::<f64>() < 1.0 / (1.0 + (-z).exp()) {
            1.0
        } else {
            -1.0
        };
    }
    Dataset::new(x * a, y).expect("finite rows")
}

/// The training rows at scale `a`.
fn train(a: f64) -> Dataset {
    rows(2000, 7, a)
}

/// AMP for the logistic loss with row bound `x` and the default `τ`, `σ_out`.
fn amp(x: f64) -> Amp {
    let mut a = Amp::new(Loss::Logistic).budget(EPSILON, DELTA);
    a.objpert.x_bound = x;
    a
}

/// The report's noise parameter `name`.
fn noise(m: &LinearModel, name: &str) -> f64 {
    let r = m.privacy();
    r.noise.iter().find(|(k, _)| k == name).expect(name).1
}

/// Asserts whether one of the report's notes contains `part`.
fn assert_note(m: &LinearModel, part: &str, present: bool) {
    let notes = &m.privacy().notes;
    assert_eq!(
        notes.iter().any(|n| n.contains(part)),
        present,
        "{part:?} in {notes:?}"
    );
}

/// Asserts `a` and `b` agree to relative `tol`.
fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * b.abs(),
        "{what}: {a} vs {b} (relative tolerance {tol})"
    );
}

/// Checks the fit's privacy: the report's ε and the ledger priced again (PLD, the default
/// accountant) within the target.
fn assert_within_target(m: &LinearModel, x: f64) {
    let r = m.privacy();
    assert_eq!(r.accountant, AccountantKind::Pld);
    let priced = dp_accounting::price(&r.event, AccountantKind::Pld, DELTA)
        .expect("priced")
        .epsilon;
    assert!(
        r.epsilon <= EPSILON && priced <= EPSILON,
        "x_bound = {x:e}: reported epsilon {}, ledger {priced}",
        r.epsilon
    );
}

/// [`dp_accounting::calibrate_noise`]'s relative precision (1e-6), with room for the
/// rounding of `L` and `β` at each scale (as in `objpert_scale.rs`).
const CAL_TOL: f64 = 1e-5;

/// How far the models at two scales may be apart, relative to the model at `X = 1`: the
/// linear term and the output noise are discrete Gaussians on power-of-two grids, so their
/// draws at two scales are not one draw rescaled but correlated draws of the same law. On
/// these rows (output noise ≈ 0.21 per coordinate of `aθ`, `‖aθ‖₁ ≈ 12`) the models and the
/// held-out scores differ by at most 2% (measured), against 6–12% between two seeds at one
/// scale.
const MODEL_TOL: f64 = 0.04;

/// The least share of held-out rows whose predicted label is the same at every scale
/// (measured: at least 98.8%; between two seeds at one scale, 95–99%). The runs share a seed,
/// but their calibrated noise agrees only within the calibration's tolerance, so their
/// discrete Gaussian draws need not be the same draws rescaled.
const SAME_LABELS: f64 = 0.98;

#[test]
fn the_defaults_fit_at_every_row_bound_with_the_same_predictions() {
    // Held-out rows at scale a: their scores and labels.
    let scored = |m: &LinearModel, a: f64| {
        let held = rows(4000, 8, a);
        let x = held.x();
        let z = m.decision_function(x.view()).expect("scores");
        (z, m.predict(x.view()).expect("labels"))
    };
    let fitted = |x: f64| {
        amp(x)
            .fit(&train(x), &mut seeded_rng(3))
            .unwrap_or_else(|e| panic!("x_bound = {x:e}: {e}"))
    };
    let one = fitted(1.0);
    let b1 = amp(1.0).objpert.bounds().expect("bounds");
    let (z1, labels1) = scored(&one, 1.0);
    for x in SCALES {
        let m = fitted(x);
        assert_within_target(&m, x);
        let b = amp(x).objpert.bounds().expect("bounds");
        // The mechanism is the one at X = 1 rescaled: τ/L, σ_out·L, σ/L and λ/β are the same.
        let at = format!("at x_bound = {x:e}");
        assert_close(
            noise(&m, "tau") / b.lipschitz,
            noise(&one, "tau") / b1.lipschitz,
            1e-12,
            &format!("tau/L {at}"),
        );
        assert_close(
            noise(&m, "sigma_out") * b.lipschitz,
            noise(&one, "sigma_out") * b1.lipschitz,
            1e-12,
            &format!("sigma_out·L {at}"),
        );
        assert_close(
            noise(&m, "sigma") / b.lipschitz,
            noise(&one, "sigma") / b1.lipschitz,
            CAL_TOL,
            &format!("sigma/L {at}"),
        );
        assert_close(
            noise(&m, "lambda") / b.beta,
            noise(&one, "lambda") / b1.beta,
            CAL_TOL,
            &format!("lambda/beta {at}"),
        );
        // θ → θ/a: the model times the scale is the model at X = 1, up to the noise grids.
        let gap = (&m.coef() * x - one.coef()).mapv(f64::abs).sum();
        let size = one.coef().mapv(f64::abs).sum();
        assert!(
            gap <= MODEL_TOL * size,
            "{at}: x_bound·theta = {}, theta at 1 = {}",
            &m.coef() * x,
            one.coef()
        );
        // The same rows scaled get (nearly) the same scores and labels.
        let (z, labels) = scored(&m, x);
        let worst = (&z - &z1).mapv(f64::abs).fold(0.0f64, |w, &v| w.max(v));
        let range = z1.mapv(f64::abs).fold(0.0f64, |w, &v| w.max(v));
        assert!(worst <= MODEL_TOL * range, "{at}: scores differ by {worst}");
        let same = labels.iter().zip(&labels1).filter(|(a, b)| a == b).count();
        let share = same as f64 / labels.len() as f64;
        assert!(share >= SAME_LABELS, "{at}: {share} of the labels agree");
    }
}

#[test]
fn the_defaults_are_paper_001s_at_its_lipschitz_bound() {
    // x_bound = √2, as paper 001's experiment sets it and as the CLI implies it for unit
    // rows plus a bias 1 (the hypotenuse of 1 and 1).
    for x in [std::f64::consts::SQRT_2, 1f64.hypot(1.0)] {
        assert_eq!(amp(x).tau_and_sigma_out().unwrap(), (5e-4, 0.15), "{x}");
    }
    // Twice the bound, exactly twice the tolerance and half the output noise.
    let twice = amp(2.0 * std::f64::consts::SQRT_2)
        .tau_and_sigma_out()
        .unwrap();
    assert_eq!(twice, (1e-3, 0.075));
    // The fit states the values it used.
    let x = std::f64::consts::SQRT_2;
    let m = amp(x).fit(&train(x), &mut seeded_rng(3)).unwrap();
    assert_eq!((noise(&m, "tau"), noise(&m, "sigma_out")), (5e-4, 0.15));
    assert_note(
        &m,
        "tau = 5e-4·L/√2 and sigma_out = 0.15·√2/L: the scale-free",
        true,
    );
}

#[test]
fn given_values_are_used_as_given() {
    let mut a = amp(1.0);
    a.tau = Some(1e-3);
    a.sigma_out = Some(0.3);
    assert_eq!(a.tau_and_sigma_out().unwrap(), (1e-3, 0.3));
    let m = a.fit(&train(1.0), &mut seeded_rng(3)).unwrap();
    assert_within_target(&m, 1.0);
    assert_eq!((noise(&m, "tau"), noise(&m, "sigma_out")), (1e-3, 0.3));
    assert_note(&m, "defaults", false);
    // One given, the other default.
    a.sigma_out = None;
    let (tau, sigma_out) = a.tau_and_sigma_out().unwrap();
    assert_eq!(tau, 1e-3);
    assert_close(
        sigma_out,
        0.15 * 2f64.sqrt(),
        1e-9,
        "default sigma_out at L = 1",
    );
}

/// The failures the defaults replace: paper 001's absolute values given at the extreme
/// bounds are refused, nothing released — `τ = 5e-4` is below the gradient's floating-point
/// error at `X = 1e12`, and at `X = 1e-9` (`λ ∝ X²`) the output sensitivity `2τ/λ` dwarfs
/// `σ_out = 0.15` at every `λ` of the rule.
#[test]
fn paper_001s_absolute_values_are_refused_at_the_extreme_bounds() {
    for x in [1e-9, 1e12] {
        let mut a = amp(x);
        a.tau = Some(5e-4);
        a.sigma_out = Some(0.15);
        match a.fit(&train(x), &mut seeded_rng(3)) {
            Err(Error::Privacy(_)) => {}
            other => panic!("x_bound = {x:e}: {other:?}"),
        }
    }
}

/// AMP with row bound `x`, the default `τ` and `σ_out` and `n` public rows, and its model
/// of the training rows, checked to be within the target.
fn fit_on_public_rows(x: f64, n: usize) -> (Amp, LinearModel) {
    let mut a = amp(x);
    a.objpert.public_n = Some(n);
    let m = a
        .fit(&train(x), &mut seeded_rng(3))
        .unwrap_or_else(|e| panic!("x_bound = {x:e}, n = {n}: {e}"));
    assert_within_target(&m, x);
    (a, m)
}

/// On many public rows the default `τ` is raised to the floor objective perturbation
/// certifies at (`1e-10·(nL + σ(√d + 8))` here, above `5e-4·L/√2` from about 3.5 million
/// rows): the report states the raised value, the ledger prices it, and it scales with `L`.
#[test]
fn the_default_tau_is_raised_to_its_floor_on_many_public_rows() {
    let n = 5_000_000;
    let raised = |x: f64| {
        let (a, m) = fit_on_public_rows(x, n);
        let l = a.objpert.bounds().unwrap().lipschitz;
        let (default, _) = a.tau_and_sigma_out().unwrap();
        let tau = noise(&m, "tau");
        // At least the floor's nL part, and so above the default.
        assert!(
            tau >= 1e-10 * n as f64 * l && tau > default,
            "{tau} vs {default}"
        );
        assert_note(&m, "raised to the gradient's floating-point floor", true);
        tau / l
    };
    let one = raised(1.0);
    assert_close(raised(1e12), one, CAL_TOL, "raised tau/L at x_bound = 1e12");
}

/// The release box's radius `(nL + σ(√d + 8) + τ)/λ` on `n` public rows, from the report.
fn radius(m: &LinearModel, n: usize) -> f64 {
    let d = m.coef().len() as f64;
    (n as f64 * noise(m, "lipschitz") + noise(m, "sigma") * (d.sqrt() + 8.0) + noise(m, "tau"))
        / noise(m, "lambda")
}

/// A public `n` whose release box (radius `≈ nL/λ ≈ 3.8·10⁷/L` at `ε = 1`) the default
/// `σ_out = 0.15·√2/L` cannot hold: its grid `σ_out·2^-24` represents `2^51` steps, `≈ 1.7·10⁷/L`.
const MANY: usize = 50_000_000;

/// On `MANY` public rows the default `σ_out` is raised to the least power of two whose grid
/// holds the release box, and the fit succeeds (before: an error naming `sigma_out`) within
/// the target, its ledger priced again, at two scales; the report says it was raised; the
/// default `τ` is raised too.
#[test]
fn the_default_sigma_out_is_raised_to_hold_the_release_box_on_many_public_rows() {
    for x in [1.0, 1e12] {
        let (a, m) = fit_on_public_rows(x, MANY);
        // Calibrated for the σ_out used: the target is met, not undershot.
        let r = m.privacy();
        assert!(r.epsilon > 0.99 * EPSILON, "x_bound = {x:e}: {}", r.epsilon);
        let (_, default) = a.tau_and_sigma_out().unwrap();
        let sigma_out = noise(&m, "sigma_out");
        assert!(sigma_out > default, "{sigma_out} vs {default}");
        // The least power of two whose grid σ_out·2^-24 holds the box within 2^51 steps.
        assert_eq!(sigma_out.log2().fract(), 0.0, "{sigma_out}");
        let radius = radius(&m, MANY);
        let steps = |s: f64| radius / (s * 2f64.powi(-24));
        assert!(
            steps(sigma_out) < 2f64.powi(51) && steps(0.5 * sigma_out) > 2f64.powi(51),
            "x_bound = {x:e}: radius {radius}, sigma_out {sigma_out}"
        );
        // The ledger's output noise is the σ_out used.
        let output = &r.event.releases()[1].mechanism;
        assert!(
            output.parameters().contains(&("sigma", sigma_out)),
            "{:?}",
            output.parameters()
        );
        assert_note(
            &m,
            "sigma_out = 0.15·√2/L raised to the least power of two",
            true,
        );
        assert_note(&m, "tau = 5e-4·L/√2 raised", true);
    }
}

/// A given `σ_out` is used as given, even on `MANY` public rows: the default's value given
/// is refused before the data is read, naming `sigma_out`; the raised value given fits.
#[test]
fn a_given_sigma_out_too_small_for_the_box_is_refused() {
    let (mut a, m) = fit_on_public_rows(1.0, MANY);
    let raised = noise(&m, "sigma_out");
    let (_, default) = a.tau_and_sigma_out().unwrap();
    a.sigma_out = Some(default);
    match a.fit(&train(1.0), &mut seeded_rng(3)) {
        Err(Error::InvalidHyperParameter { name, value, .. }) => {
            assert_eq!((name, value), ("sigma_out", default));
        }
        other => panic!("{other:?}"),
    }
    a.sigma_out = Some(raised);
    let m = a.fit(&train(1.0), &mut seeded_rng(3)).unwrap();
    assert_within_target(&m, 1.0);
    assert_eq!(noise(&m, "sigma_out"), raised);
    assert_note(&m, "sigma_out = 0.15·√2/L", false);
}
