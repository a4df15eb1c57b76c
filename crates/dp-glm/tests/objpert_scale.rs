//! Objective perturbation and AMP calibrate the scale-free multiplier `σ/L`, not the absolute
//! noise `σ`: whatever the row bound `X` (and so the Lipschitz bound `L ∝ X` and the
//! smoothness `β ∝ X²`), a user's `λ` scaled with `β` gives the same multiplier, the
//! calibrated `σ` follows `L`, and the accountant prices exactly that `σ` within the target.
//! With a prior in the budget the reference Gaussian `σ` of the λ rule is found at any scale
//! too, so the joint calibration never silently falls back to basic composition.

use dp_accounting::{Mechanism, ObjPertParams};
use dp_glm::{
    Amp, Budget, Dataset, LinearModel, Loss, ObjPertBounds, ObjectivePerturbation, Prior,
};
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2};

/// Row bounds from tiny to huge; 1 is the reference scale.
const SCALES: [f64; 5] = [1e-9, 1e-3, 1.0, 1e6, 1e12];

/// The user's `λ` at row bound `x`: `x²/2`, i.e. `λ/β = 2` for the logistic loss
/// (`β = X²/4`); at `x = 1e-9` and `1e12` these are the reported failures (`5e-19`, `5e23`).
fn lambda_at(x: f64) -> f64 {
    0.5 * x * x
}

/// Objective perturbation for the logistic loss with row bound `x`, λ given or not.
fn objpert(x: f64, lambda: Option<f64>) -> ObjectivePerturbation {
    let mut l = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
    l.x_bound = x;
    l.lambda = lambda;
    l
}

/// The ε the budget's accountant gives the budget's prior followed by `mech`.
fn priced(budget: &Budget, mech: &Mechanism) -> f64 {
    let mut acc = budget.accountant.build(budget.neighbouring);
    if budget.prior.count > 0 {
        let prior = Mechanism::pure_dp(budget.prior.epsilon).expect("a pure-DP prior");
        acc.compose(&prior, budget.prior.count).expect("composed");
    }
    acc.compose(mech, 1).expect("composed");
    acc.epsilon(budget.delta).expect("priced")
}

/// The ObjPert parameters of `(σ, λ)` under bounds `b`.
fn params(sigma: f64, lambda: f64, b: &ObjPertBounds) -> ObjPertParams {
    ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz).expect("valid parameters")
}

/// Asserts `a` and `b` agree to relative `tol`.
fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * b.abs(),
        "{what}: {a} vs {b} (relative tolerance {tol})"
    );
}

/// [`dp_accounting::calibrate_noise`]'s relative precision (1e-6), with room for the
/// rounding of `L` and `β` at each scale.
const CAL_TOL: f64 = 1e-5;

#[test]
fn objpert_with_a_given_lambda_calibrates_the_same_multiplier_at_every_scale() {
    let mut reference = None;
    for x in SCALES {
        let l = objpert(x, Some(lambda_at(x)));
        let b = l.bounds().expect("bounds");
        let (sigma, lambda) = l
            .calibrate()
            .unwrap_or_else(|e| panic!("x_bound = {x:e}: {e}"));
        assert_eq!(lambda, lambda_at(x), "the given lambda is kept");
        let mech = Mechanism::objective_perturbation(params(sigma, lambda, &b));
        let eps = priced(&l.budget, &mech);
        assert!(eps <= l.budget.epsilon, "x_bound = {x:e}: epsilon {eps}");
        let z = sigma / b.lipschitz;
        assert!(z.is_finite() && z > 0.0, "x_bound = {x:e}: sigma/L = {z}");
        let z1 = *reference.get_or_insert_with(|| {
            let one = objpert(1.0, Some(lambda_at(1.0)));
            one.calibrate().expect("x_bound = 1").0 / one.bounds().expect("bounds").lipschitz
        });
        assert_close(z, z1, CAL_TOL, &format!("sigma/L at x_bound = {x:e}"));
    }
}

/// AMP at row bound `x` with the user's `λ`; with `scaled`, the defaults `τ ∝ L` and
/// `σ_out ∝ 1/L` (the gradient and the minimiser's scales), so the whole mechanism is the one
/// at `X = 1` rescaled; without, paper 001's absolute values given (`τ = 5e-4`,
/// `σ_out = 0.15`).
fn amp(x: f64, scaled: bool) -> Amp {
    let mut a = Amp::new(Loss::Logistic).budget(1.0, 1e-5);
    a.objpert.x_bound = x;
    a.objpert.lambda = Some(lambda_at(x));
    if !scaled {
        a.tau = Some(5e-4);
        a.sigma_out = Some(0.15);
    }
    a
}

/// Calibrates `a` and checks its `(σ, λ)`: `λ` kept, the AMP mechanism priced within the
/// target. Returns `σ/L`.
fn amp_multiplier(a: &Amp) -> f64 {
    let x = a.objpert.x_bound;
    let b = a.objpert.bounds().expect("bounds");
    let (sigma, lambda) = a
        .calibrate()
        .unwrap_or_else(|e| panic!("x_bound = {x:e}: {e}"));
    assert_eq!(Some(lambda), a.objpert.lambda, "the given lambda is kept");
    let (tau, sigma_out) = a.tau_and_sigma_out().expect("tau and sigma_out");
    let mech = Mechanism::amp(params(sigma, lambda, &b), tau, sigma_out).expect("AMP");
    let eps = priced(&a.objpert.budget, &mech);
    assert!(eps <= a.objpert.budget.epsilon, "x_bound = {x:e}: {eps}");
    sigma / b.lipschitz
}

#[test]
fn amp_with_a_given_lambda_calibrates_the_same_multiplier_at_every_scale() {
    // The reported failure: X = 1e12, λ = 5e23, paper 001's absolute τ and σ_out.
    let z = amp_multiplier(&amp(1e12, false));
    assert!(z.is_finite() && z > 0.0, "sigma/L = {z}");
    let z1 = amp_multiplier(&amp(1.0, true));
    for x in SCALES {
        let zx = amp_multiplier(&amp(x, true));
        assert_close(zx, z1, CAL_TOL, &format!("sigma/L at x_bound = {x:e}"));
    }
}

/// With a prior, PLD composes it with the mechanism: the λ rule's reference `σ_Gauss` is
/// calibrated after the prior, and the result needs clearly less noise than the budget basic
/// composition leaves. At every scale `σ/L` and `λ/β` are those at `X = 1` (the joint
/// calibration's precision is `dp_glm::learners::JOINT_TOLERANCE`, 1e-3) and the noise stays
/// below the basic-composition answer, so the reference was found, not given up on.
#[test]
fn objpert_with_a_prior_finds_its_reference_sigma_at_every_scale() {
    let with_prior = |x: f64| {
        let mut l = objpert(x, None);
        l.budget.prior = Prior {
            count: 10,
            epsilon: 0.02,
            one: None,
        };
        l
    };
    let one = with_prior(1.0);
    let b1 = one.bounds().unwrap();
    let (s1, l1) = one.calibrate().expect("x_bound = 1");
    for x in SCALES {
        let l = with_prior(x);
        let b = l.bounds().expect("bounds");
        let (sigma, lambda) = l
            .calibrate()
            .unwrap_or_else(|e| panic!("x_bound = {x:e}: {e}"));
        let mech = Mechanism::objective_perturbation(params(sigma, lambda, &b));
        let eps = priced(&l.budget, &mech);
        assert!(eps <= l.budget.epsilon, "x_bound = {x:e}: epsilon {eps}");
        let mut split = l.clone();
        split.budget = l.budget.split();
        let (alone, _) = split.calibrate().expect("the split budget");
        assert!(
            sigma < 0.98 * alone,
            "x_bound = {x:e}: sigma {sigma} is not below basic composition's {alone}"
        );
        let tol = 2.0 * dp_glm::learners::JOINT_TOLERANCE;
        let at = format!("at x_bound = {x:e}");
        assert_close(
            sigma / b.lipschitz,
            s1 / b1.lipschitz,
            tol,
            &format!("sigma/L {at}"),
        );
        assert_close(
            lambda / b.beta,
            l1 / b1.beta,
            tol,
            &format!("lambda/beta {at}"),
        );
    }
}

/// 30 rows of norm at most `x` with ±1 labels, spread over `[-x/2, x/2]²`.
fn rows(x: f64) -> Dataset {
    let features = Array2::from_shape_fn((30, 2), |(i, j)| {
        x * (((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.5)
    });
    let labels = Array1::from_shape_fn(30, |i| if i % 2 == 0 { 1.0 } else { -1.0 });
    Dataset::new(features, labels).expect("finite data")
}

/// The released fits at the reported scales (AMP with its defaults, `τ` and `σ_out` scaled
/// with `L`: paper 001's absolute `τ = 5e-4` cannot be certified on gradients of size `1e12`,
/// and is refused with nothing released): each within its target, the report's σ over `L` the
/// multiplier the calibration found at `X = 1` (the release's σ is a hair larger than the
/// idealised one, by the grids' slack, itself scale-free).
#[test]
fn objpert_and_amp_fit_at_extreme_row_bounds() {
    let sigma_over_l = |m: &LinearModel, x: f64| {
        let r = m.privacy();
        let noise = |k: &str| r.noise.iter().find(|(n, _)| n == k).expect(k).1;
        assert!(r.epsilon <= 1.0, "x_bound = {x:e}: epsilon {}", r.epsilon);
        noise("sigma") / noise("lipschitz")
    };
    let fitted = |x: f64| {
        let o = objpert(x, Some(lambda_at(x)))
            .fit(&rows(x), &mut seeded_rng(1))
            .unwrap_or_else(|e| panic!("objpert, x_bound = {x:e}: {e}"));
        let a = amp(x, true)
            .fit(&rows(x), &mut seeded_rng(1))
            .unwrap_or_else(|e| panic!("AMP, x_bound = {x:e}: {e}"));
        (sigma_over_l(&o, x), sigma_over_l(&a, x))
    };
    let (o1, a1) = fitted(1.0);
    for x in [1e-9, 1e12] {
        let (o, a) = fitted(x);
        assert_close(
            o,
            o1,
            CAL_TOL,
            &format!("objpert sigma/L at x_bound = {x:e}"),
        );
        assert_close(a, a1, CAL_TOL, &format!("AMP sigma/L at x_bound = {x:e}"));
    }
}
