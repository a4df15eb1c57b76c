//! Losses: derivatives against finite differences, and the stated constants as bounds.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{LabelDomain, Loss};
use proptest::prelude::*;

/// A loss with a label from its domain.
fn loss_and_label() -> impl Strategy<Value = (Loss, f64)> {
    let sign = prop_oneof![Just(-1.0), Just(1.0)];
    prop_oneof![
        sign.clone().prop_map(|y| (Loss::Logistic, y)),
        (-10.0..10.0f64).prop_map(|y| (Loss::Squared, y)),
        (0.05..5.0f64, -10.0..10.0f64).prop_map(|(h, y)| (Loss::Huber { h }, y)),
        (0.01..1.0f64, sign.clone()).prop_map(|(h, y)| (Loss::HuberSvm { h }, y)),
        sign.prop_map(|y| (Loss::Savage, y)),
    ]
}

/// Points where `φ''` jumps (where a finite difference of `φ'` is not meaningful).
fn kinks(loss: &Loss, y: f64) -> Vec<f64> {
    match *loss {
        Loss::Huber { h } => vec![y - h, y + h],
        // Margin m = yz at 1 ± h, so z = (1 ± h)/y.
        Loss::HuberSvm { h } => vec![(1.0 - h) / y, (1.0 + h) / y],
        _ => vec![],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `φ'` is the central difference of `φ`, and `φ''` that of `φ'` (away from the kinks of
    /// `φ''`). Step `e = 1e-6·max(1, |z|)`; truncation error `≤ β e` for the piecewise
    /// quadratic losses and `O(e²)` for the smooth ones, rounding `≈ ε|φ|/e`.
    #[test]
    fn derivatives_match_finite_differences((loss, y) in loss_and_label(), z in -30.0..30.0f64) {
        let e = 1e-6 * z.abs().max(1.0);
        let beta = loss.smoothness();
        let fd1 = (loss.value(z + e, y) - loss.value(z - e, y)) / (2.0 * e);
        let d1 = loss.deriv(z, y);
        let rounding = 1e-15 * loss.value(z, y).abs().max(1.0) / e;
        prop_assert!((fd1 - d1).abs() <= 1e-7 + 2.0 * beta * e + 4.0 * rounding,
            "{loss:?} y={y} z={z}: fd {fd1} vs φ' {d1}");
        let (v, d) = loss.value_deriv(z, y);
        prop_assert!((v - loss.value(z, y)).abs() <= 1e-14 * v.abs().max(1.0));
        prop_assert!((d - d1).abs() <= 1e-15);

        if kinks(&loss, y).iter().all(|k| (z - k).abs() > 4.0 * e) {
            let fd2 = (loss.deriv(z + e, y) - loss.deriv(z - e, y)) / (2.0 * e);
            let d2 = loss.deriv2(z, y);
            prop_assert!((fd2 - d2).abs() <= 1e-7 + 1e-15 / e,
                "{loss:?} y={y} z={z}: fd {fd2} vs φ'' {d2}");
        }
    }

    /// `|φ'| ≤ L`, `|φ''| ≤ β`, `φ'' ≥ 0` for the convex losses, `φ ≥ 0`.
    #[test]
    fn constants_bound_the_derivatives((loss, y) in loss_and_label(), z in -60.0..60.0f64) {
        let d1 = loss.deriv(z, y);
        let d2 = loss.deriv2(z, y);
        if let Some(l) = loss.lipschitz() {
            prop_assert!(d1.abs() <= l * (1.0 + 1e-12), "{loss:?}: |φ'| = {} > {l}", d1.abs());
        }
        prop_assert!(d2.abs() <= loss.smoothness() * (1.0 + 1e-12));
        if loss.is_convex() {
            prop_assert!(d2 >= 0.0);
        }
        prop_assert!(loss.value(z, y) >= 0.0);
        prop_assert!(loss.label_domain().contains(y));
    }
}

/// The constants are attained (they are suprema, not loose bounds).
#[test]
fn constants_are_tight() {
    let grid: Vec<f64> = (-200_000..=200_000).map(|i| i as f64 * 1e-4).collect();
    for loss in [
        Loss::Logistic,
        Loss::Huber { h: 0.7 },
        Loss::HuberSvm { h: 0.1 },
        Loss::Savage,
    ] {
        let max_d1 = grid
            .iter()
            .fold(0.0f64, |m, &z| m.max(loss.deriv(z, 1.0).abs()));
        let max_d2 = grid
            .iter()
            .fold(0.0f64, |m, &z| m.max(loss.deriv2(z, 1.0).abs()));
        let l = loss.lipschitz().unwrap();
        // Logistic's |φ'| → 1 only as z → −∞: at z = −20 it is 1 − 2e−9.
        assert!(
            max_d1 > l * (1.0 - 1e-6) && max_d1 <= l,
            "{loss:?}: {max_d1} vs {l}"
        );
        let b = loss.smoothness();
        assert!(
            max_d2 > b * (1.0 - 1e-6) && max_d2 <= b * (1.0 + 1e-12),
            "{loss:?}: {max_d2} vs {b}"
        );
    }
    assert_eq!(Loss::Squared.lipschitz(), None);
    assert_eq!(Loss::Logistic.label_domain(), LabelDomain::Signs);
    assert_eq!(Loss::Squared.label_domain(), LabelDomain::Real);
}
