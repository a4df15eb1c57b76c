//! The clipping lemma (MATH §5; paper 000, Lemma 5.1) and the aggressive-clipping example
//! (paper 000, App. D.2).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{ClippedLoss, Dataset, GlmObjective, LabelDomain, Loss, Scale};
use dp_optim::Objective;
use ndarray::{Array1, Array2};
use proptest::prelude::*;

fn convex_loss() -> impl Strategy<Value = Loss> {
    prop_oneof![
        Just(Loss::Logistic),
        Just(Loss::Squared),
        (0.05..3.0f64).prop_map(|h| Loss::Huber { h }),
        (0.01..1.0f64).prop_map(|h| Loss::HuberSvm { h }),
    ]
}

fn label_for(loss: &Loss, u: f64) -> f64 {
    match loss.label_domain() {
        LabelDomain::Signs => {
            if u < 0.0 {
                -1.0
            } else {
                1.0
            }
        }
        LabelDomain::Real => 4.0 * u,
    }
}

/// `clamp` that is explicit about the order of its bounds.
fn clamp(v: f64, r: f64) -> f64 {
    v.max(-r).min(r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// `g'(z) = clamp(φ'(z), −r, r)` with `r = C/‖x‖`, `g'` is the derivative of `g`
    /// (central differences, also right at the break points), `g` is convex (`g'`
    /// non-decreasing) and the per-example gradient `g'(⟨θ,x⟩)·x` is `clip_C(φ'(⟨θ,x⟩)·x)`.
    #[test]
    fn clipped_derivative_is_the_clipped_derivative(
        loss in convex_loss(),
        u in -1.0..1.0f64,
        clip in 0.01..10.0f64,
        x in prop::collection::vec(-3.0..3.0f64, 1..5),
        theta in prop::collection::vec(-10.0..10.0f64, 5),
        near_break in 0usize..3,
        offset in -1e-3..1e-3f64,
    ) {
        let y = label_for(&loss, u);
        let x = Array1::from(x);
        let x_norm = x.dot(&x).sqrt();
        prop_assume!(x_norm > 1e-3);
        let theta = Array1::from(theta[..x.len()].to_vec());
        let c = ClippedLoss::new(loss, clip).unwrap();
        let g = c.for_example(y, x_norm).unwrap();
        let r = clip / x_norm;
        prop_assert!((g.radius() - r).abs() <= 1e-15 * r);
        let (y1, y2) = g.break_points();
        let mut z = x.dot(&theta);
        // Also probe right next to a finite break point.
        if near_break == 1 && y1.is_finite() { z = y1 + offset; }
        if near_break == 2 && y2.is_finite() { z = y2 + offset; }

        let want = clamp(loss.deriv(z, y), r);
        prop_assert!((g.deriv(z) - want).abs() <= 1e-9 * r.max(1.0),
            "{loss:?} y={y} r={r} z={z}: g' = {} vs clamp(φ') = {want}", g.deriv(z));
        prop_assert_eq!(c.deriv(z, y, x_norm).unwrap(), g.deriv(z));
        prop_assert_eq!(c.value(z, y, x_norm).unwrap(), g.value(z));
        prop_assert!(g.value_deriv(z) == (g.value(z), g.deriv(z)) ||
            ((g.value_deriv(z).0 - g.value(z)).abs() <= 1e-14 * g.value(z).abs().max(1.0)));

        let e = 1e-6 * z.abs().max(1.0);
        let fd = (g.value(z + e) - g.value(z - e)) / (2.0 * e);
        let beta = loss.smoothness();
        prop_assert!((fd - want).abs() <= 1e-7 + 2.0 * beta * e + 1e-14 * g.value(z).abs() / e,
            "{loss:?} y={y} r={r} z={z} (y1={y1}, y2={y2}): fd {fd} vs {want}");

        // Convexity: g' non-decreasing, g'' ≥ 0 and bounded by φ''s bound.
        prop_assert!(g.deriv(z - 0.5) <= g.deriv(z) + 1e-12 && g.deriv(z) <= g.deriv(z + 0.5) + 1e-12);
        prop_assert!(g.deriv2(z) >= 0.0 && g.deriv2(z) <= beta);

        // The lemma itself: ∇_θ g(⟨θ, x⟩) = clip_C(∇_θ φ(⟨θ, x⟩)).
        let z = x.dot(&theta);
        let v = &x * loss.deriv(z, y);
        let nv = v.dot(&v).sqrt();
        let clipped = if nv > clip { &v * (clip / nv) } else { v };
        let lemma = &x * g.deriv(z);
        let diff = &lemma - &clipped;
        prop_assert!(diff.dot(&diff).sqrt() <= 1e-9 * clip.max(1.0));
        prop_assert!(lemma.dot(&lemma).sqrt() <= clip * (1.0 + 1e-12));
    }
}

/// One-dimensional minimiser of a convex objective by bisection on its derivative.
fn argmin_1d(obj: &GlmObjective<'_>, mut lo: f64, mut hi: f64) -> f64 {
    let deriv = |t: f64| {
        let mut g = Array1::zeros(1);
        obj.value_grad(Array1::from_elem(1, t).view(), g.view_mut());
        g[0]
    };
    assert!(deriv(lo) < 0.0 && deriv(hi) > 0.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if deriv(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Paper 000, App. D.2: `D = {(1/2, +1)}^{2m} ∪ {(1, −1)}^m`, logistic loss, scalar θ.
/// The unclipped optimum is θ* = 0; with clip norm B < 1/4 the clipped objective's optimum is
/// `2 log(1/B − 1)` (the (1/2, +1) terms are unclipped there with slope `−B/2` each, the
/// (1, −1) terms clipped at `+B`); its excess risk on the original loss is at least
/// `(2/3) log(1/B − 1) − log 2` (as `L(θ) ≥ θ/3` for θ > 0) and never below ≈ 0.27 for
/// B < 1/4: the bias does not vanish with n.
#[test]
fn aggressive_clipping_example() {
    let m = 5;
    let n = 3 * m;
    let x = Array2::from_shape_fn((n, 1), |(i, _)| if i < 2 * m { 0.5 } else { 1.0 });
    let y = Array1::from_shape_fn(n, |i| if i < 2 * m { 1.0 } else { -1.0 });
    let data = Dataset::new(x, y).unwrap();
    let original = GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean).unwrap();

    let theta_star = argmin_1d(&original, -20.0, 20.0);
    assert!(theta_star.abs() < 1e-12, "θ* = {theta_star}");
    // The closed form of the mean loss, to check the objective too.
    let mean_loss = |t: f64| (2.0 / 3.0) * (-t / 2.0).exp().ln_1p() + (1.0 / 3.0) * t.exp().ln_1p();
    assert!((original.value(Array1::zeros(1).view()) - 2f64.ln()).abs() < 1e-15);

    let mut previous_excess = 0.0;
    for b in [0.24, 0.2, 0.1, 0.05, 0.01, 1e-4] {
        let clipped = ClippedLoss::new(Loss::Logistic, b).unwrap();
        let obj = GlmObjective::clipped(&data, clipped, 0.0, Scale::Mean).unwrap();
        let theta_c = argmin_1d(&obj, -50.0, 50.0);
        let predicted = 2.0 * (1.0 / b - 1.0f64).ln();
        assert!(
            (theta_c - predicted).abs() < 1e-9,
            "B={b}: {theta_c} vs {predicted}"
        );

        let excess = original.value(Array1::from_elem(1, theta_c).view())
            - original.value(Array1::zeros(1).view());
        assert!((excess - (mean_loss(theta_c) - 2f64.ln())).abs() < 1e-12);
        assert!(
            excess >= (2.0 / 3.0) * (1.0 / b - 1.0f64).ln() - 2f64.ln(),
            "B={b}: {excess}"
        );
        assert!(excess > 0.25, "B={b}: excess {excess}");
        assert!(excess > previous_excess, "excess grows as B shrinks");
        previous_excess = excess;
    }
    // At B ≥ 1/4 the example's point breaks down; with B ≥ 1 (= max gradient norm) clipping
    // is inactive and the optimum is θ* = 0 again.
    let obj = GlmObjective::clipped(
        &data,
        ClippedLoss::new(Loss::Logistic, 1.0).unwrap(),
        0.0,
        Scale::Mean,
    )
    .unwrap();
    assert!(argmin_1d(&obj, -20.0, 20.0).abs() < 1e-12);
}
