//! δ at the bottom of the double range (issue 32, §8 item 1): the closed forms are accurate
//! and above the truth down to the smallest normal double, and every entry point refuses a
//! smaller (subnormal) δ, naming it and the smallest accepted δ. References:
//! `tests/fixtures/tiny_delta.json` (mpmath, 60 digits) from
//! `tests/fixtures/generate_tiny_delta.py`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{f, fixture, rel, rows};
use dp_accounting::{
    AccountantKind, DEFAULT_CHAIN, Error, Mechanism, Neighbouring, ObjPertParams, PldConfig, Query,
    Target, answer_with_fallback, calibrate_noise, gaussian_epsilon, gaussian_sigma, kifer_epsilon,
    kifer_parameters, objpert_epsilon, shuffle_delta, shuffle_epsilon, shuffle_epsilon_numerical,
    zcdp_epsilon,
};

/// The smallest δ accepted: `f64::MIN_POSITIVE` (`dp_accounting::DELTA_MIN` once exported).
const FLOOR: f64 = f64::MIN_POSITIVE;

/// Relative distance above the truth allowed: the answers are rounded up by 5e-13 (plus the
/// bisection's 1e-13) on purpose.
const TIGHT: f64 = 2e-12;

fn objpert() -> ObjPertParams {
    ObjPertParams::new(1.0, 1.0, 0.5, 1.0).unwrap()
}

fn exact_epsilon(m: &Mechanism, delta: f64) -> dp_accounting::Result<f64> {
    let mut acc = AccountantKind::Exact.build(Neighbouring::AddRemove);
    acc.compose(m, 1)?;
    acc.epsilon(delta)
}

fn chain_epsilon(m: &Mechanism, delta: f64) -> dp_accounting::Result<f64> {
    answer_with_fallback(
        &DEFAULT_CHAIN,
        Neighbouring::AddRemove,
        PldConfig::default(),
        &[(m.clone(), 1)],
        Query::Epsilon { delta },
    )
    .map(|a| a.value)
}

/// `ours` is at or above `truth` and within [`TIGHT`] of it.
fn check(what: &str, delta: f64, ours: f64, truth: f64) {
    assert!(
        ours >= truth,
        "{what} at delta {delta:e}: {ours} below the true {truth}"
    );
    assert!(
        rel(ours, truth) < TIGHT,
        "{what} at delta {delta:e}: {ours} vs {truth}"
    );
}

#[test]
fn the_closed_forms_are_accurate_down_to_the_smallest_accepted_delta() {
    let fx = fixture("tiny_delta.json");
    let mut lowest = 1.0f64;
    for r in rows(&fx, "gaussian") {
        let (sigma, d, e) = (f(r, "sigma"), f(r, "delta"), f(r, "epsilon"));
        if d < FLOOR {
            continue;
        }
        lowest = lowest.min(d);
        let m = Mechanism::gaussian(sigma, 1.0).unwrap();
        check(
            "gaussian_epsilon",
            d,
            gaussian_epsilon(sigma, 1.0, d).unwrap(),
            e,
        );
        check("exact gaussian", d, exact_epsilon(&m, d).unwrap(), e);
        check(
            "default chain gaussian",
            d,
            chain_epsilon(&m, d).unwrap(),
            e,
        );
        // The calibrated noise for the true ε is at least the true σ (δ(σ) is decreasing).
        let s = gaussian_sigma(e * (1.0 + 1e-11), d, 1.0).unwrap();
        assert!(s >= sigma * (1.0 - 1e-10), "sigma {s} for {sigma} at {d:e}");
    }
    assert_eq!(lowest, FLOOR, "the fixture must reach the floor itself");
    for r in rows(&fx, "objpert") {
        let (d, e) = (f(r, "delta"), f(r, "epsilon"));
        if d < FLOOR {
            continue;
        }
        let m = Mechanism::objective_perturbation(objpert());
        check(
            "objpert_epsilon",
            d,
            objpert_epsilon(&objpert(), d).unwrap(),
            e,
        );
        check("exact objpert", d, exact_epsilon(&m, d).unwrap(), e);
    }
    for r in rows(&fx, "subsampled_gaussian") {
        let (z, q, d, e) = (
            f(r, "noise_multiplier"),
            f(r, "q"),
            f(r, "delta"),
            f(r, "epsilon"),
        );
        if d < FLOOR {
            continue;
        }
        let m = Mechanism::subsampled_gaussian(z, q).unwrap();
        check(
            "exact subsampled gaussian",
            d,
            exact_epsilon(&m, d).unwrap(),
            e,
        );
    }
}

/// `got` is the refusal of `delta`: [`Error::InvalidParameter`] naming `delta` with the given
/// value, whose message shows both the value and the smallest accepted δ.
fn refused<T: std::fmt::Debug>(what: &str, delta: f64, got: dp_accounting::Result<T>) {
    match got {
        Err(e @ Error::InvalidParameter { name: "delta", .. }) => {
            let Error::InvalidParameter { value, .. } = e else {
                unreachable!()
            };
            assert_eq!(value.to_bits(), delta.to_bits(), "{what}: {e}");
            let msg = e.to_string();
            assert!(msg.contains(&format!("{delta:e}")), "{what}: {msg}");
            assert!(msg.contains("2.2250738585072014e-308"), "{what}: {msg}");
        }
        other => panic!("{what} at delta {delta:e}: {other:?}"),
    }
}

#[test]
fn every_entry_point_refuses_a_subnormal_delta() {
    let fx = fixture("tiny_delta.json");
    let mut below: Vec<f64> = rows(&fx, "gaussian")
        .iter()
        .map(|r| f(r, "delta"))
        .filter(|&d| d < FLOOR)
        .collect();
    below.dedup();
    below.push(FLOOR.next_down());
    assert!(below.contains(&5e-324) && below.len() >= 5, "{below:?}");
    let gaussian = Mechanism::gaussian(1.0, 1.0).unwrap();
    let mechanisms = [
        gaussian.clone(),
        Mechanism::objective_perturbation(objpert()),
        Mechanism::subsampled_gaussian(1.0, 0.01).unwrap(),
        Mechanism::laplace(1.0, 1.0).unwrap(),
        Mechanism::zcdp(0.5).unwrap(),
    ];
    for &d in &below {
        refused("gaussian_epsilon", d, gaussian_epsilon(1.0, 1.0, d));
        refused("gaussian_sigma", d, gaussian_sigma(1.0, d, 1.0));
        refused("objpert_epsilon", d, objpert_epsilon(&objpert(), d));
        refused("kifer_parameters", d, kifer_parameters(1.0, d, 0.5, 1.0));
        refused("kifer_epsilon", d, kifer_epsilon(1.0, 1.0, d));
        refused("zcdp_epsilon", d, zcdp_epsilon(0.5, d));
        refused("shuffle_epsilon", d, shuffle_epsilon(1.0, 1000, d));
        refused("shuffle_delta", d, shuffle_delta(1.0, 0.0, 1000, d));
        refused(
            "shuffle_epsilon_numerical",
            d,
            shuffle_epsilon_numerical(1.0, 0.0, 1000, d),
        );
        refused("Target::new", d, Target::new(1.0, d));
        for m in &mechanisms {
            for kind in [
                AccountantKind::Pld,
                AccountantKind::Exact,
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
            ] {
                let mut acc = kind.build(Neighbouring::AddRemove);
                if acc.compose(m, 1).is_ok() {
                    refused(&format!("{kind} {}", m.name()), d, acc.epsilon(d));
                    if kind == AccountantKind::Pld {
                        let low = acc.epsilon_optimistic(d);
                        refused(&format!("pld {} optimistic", m.name()), d, low);
                    }
                }
            }
            refused(
                &format!("default chain {}", m.name()),
                d,
                chain_epsilon(m, d),
            );
        }
        // A grid (discrete Gaussian) release goes through the grid adjustment first.
        let grid = gaussian
            .clone()
            .with_grid(dp_accounting::GridGaussian::new(1.0, 10).unwrap());
        refused("exact grid gaussian", d, exact_epsilon(&grid, d));
    }
    // The floor itself is accepted everywhere.
    assert!(gaussian_epsilon(1.0, 1.0, FLOOR).is_ok());
    assert!(Target::new(1.0, FLOOR).is_ok());
    assert!(zcdp_epsilon(0.5, FLOOR).is_ok());
}

#[test]
fn calibration_at_a_subnormal_delta_is_refused_not_loose() {
    // Before: a σ whose true δ was 1.25–1.5× the target. Target::new refuses such a δ, and so
    // does the accountant if a target were built some other way.
    refused("Target::new", 5e-324, Target::new(38.0, 5e-324));
    let ok = calibrate_noise(
        Target::new(37.9, FLOOR).unwrap(),
        AccountantKind::Exact,
        Neighbouring::AddRemove,
        1,
        |s| Mechanism::gaussian(s, 1.0),
    )
    .unwrap();
    // σ = 1 has ε = 37.922 at the floor (fixture): the calibrated noise for 37.9 is above 1.
    assert!(ok.value > 1.0 && ok.value < 1.001, "{ok:?}");
    assert!(ok.epsilon <= 37.9);
}
