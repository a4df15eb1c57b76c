//! Closed forms against high-precision references (mpmath, 40–60 digits) computed by
//! `tests/fixtures/generate.py`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{f, fixture, rel, rows};
use dp_accounting::{
    ObjPertParams, gaussian_delta, gaussian_epsilon, objpert_delta, objpert_rdp, shuffle_epsilon,
    zcdp_epsilon,
};

#[test]
fn gaussian_profile_to_1e10_relative_down_to_1e_minus_50() {
    let fx = fixture("gaussian_profile.json");
    let mut smallest = 1.0f64;
    for r in rows(&fx, "points") {
        let (s, e, d) = (f(r, "sigma"), f(r, "epsilon"), f(r, "delta"));
        let ours = gaussian_delta(s, f(r, "sensitivity"), e).unwrap();
        // Within 1e-10: every ratio is rounded up by 8 ulps and δ by its rounding margin, on
        // purpose (answers are upper bounds), which moves δ deep in the tail by ~1e-12.
        assert!(rel(ours, d) < 1e-10, "sigma {s} eps {e}: {ours} vs {d}");
        assert!(
            ours >= d,
            "rounded down: sigma {s} eps {e}: {}",
            ours / d - 1.0
        );
        smallest = smallest.min(d);
    }
    assert!(smallest < 1e-49, "the fixture must reach delta ~ 1e-50");
    for r in rows(&fx, "inverse") {
        let (s, d, e) = (f(r, "sigma"), f(r, "delta"), f(r, "epsilon"));
        let ours = gaussian_epsilon(s, f(r, "sensitivity"), d).unwrap();
        assert!(
            ours >= e * (1.0 - 1e-14),
            "eps below the truth: {ours} < {e}"
        );
        assert!(rel(ours, e) < 1e-11, "sigma {s} delta {d}: {ours} vs {e}");
    }
}

#[test]
fn objective_perturbation_profile_and_rdp() {
    let fx = fixture("objpert.json");
    for r in rows(&fx, "profile") {
        let p = ObjPertParams::new(f(r, "sigma"), f(r, "lambda"), f(r, "beta"), f(r, "L")).unwrap();
        let want = f(r, "delta_numeric");
        let ours = objpert_delta(&p, f(r, "epsilon")).unwrap();
        assert!(rel(ours, want) < 1e-12, "{r}: {ours}");
    }
    for r in rows(&fx, "rdp") {
        let p = ObjPertParams::new(f(r, "sigma"), f(r, "lambda"), f(r, "beta"), f(r, "L")).unwrap();
        let want = f(r, "rdp_numeric");
        let ours = objpert_rdp(&p, f(r, "alpha"));
        assert!(rel(ours, want) < 1e-12, "{r}: {ours}");
    }
}

#[test]
fn zcdp_conversions_are_valid_and_best() {
    let fx = fixture("conversions.json");
    for r in rows(&fx, "rows") {
        let (rho, delta) = (f(r, "rho"), f(r, "delta"));
        let ours = zcdp_epsilon(rho, delta).unwrap();
        assert!(
            ours >= f(r, "eps_gaussian_exact"),
            "below the exact Gaussian: {r}"
        );
        assert!(ours <= f(r, "eps_best") * (1.0 + 1e-9), "{r}: {ours}");
        assert!(rel(ours, f(r, "eps_best")) < 1e-8, "{r}: {ours}");
    }
}

#[test]
fn shuffling_closed_form() {
    let fx = fixture("shuffle.json");
    for r in rows(&fx, "rows") {
        let n = f(r, "n") as u64;
        let ours = shuffle_epsilon(f(r, "eps0"), n, f(r, "delta")).unwrap();
        let want = f(r, "epsilon");
        assert!(ours >= want && rel(ours, want) < 1e-12, "{r}: {ours}");
    }
}
