//! The numerical shuffling bound (Feldman, McMillan & Talwar 2021, Thm 3.2) against a
//! 22-digit evaluation of the same divergence without buckets or tail bounds
//! (`tests/fixtures/generate_shuffle.py` → `shuffle_numerical.json`): ours is never below the
//! truth, within a small factor of it, and never above the closed form.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{f, fixture, rel, rows};
use dp_accounting::{
    ShuffleMethod, shuffle_delta_numerical, shuffle_epsilon, shuffle_epsilon_numerical,
};

#[test]
fn shuffle_numerical_epsilon_is_never_below_the_truth_and_beats_the_closed_form() {
    let fx = fixture("shuffle_numerical.json");
    let (mut amplified, mut worst) = (0, 0.0_f64);
    for r in rows(&fx, "epsilon_rows") {
        let (eps0, n, delta) = (f(r, "eps0"), f(r, "n") as u64, f(r, "delta"));
        let (lo, hi) = (f(r, "epsilon_lo"), f(r, "epsilon_hi"));
        let b = shuffle_epsilon_numerical(eps0, 0.0, n, delta).unwrap();
        let closed = shuffle_epsilon(eps0, n, delta).unwrap();
        // The truth lies in [lo, hi]: ours must not be below lo, and is at most 1e-6 above hi
        // (bisection tolerance, margins; these n are summed without buckets).
        assert!(b.epsilon >= lo, "{r}: {} below the truth", b.epsilon);
        assert!(b.epsilon <= hi * (1.0 + 1e-6), "{r}: {} loose", b.epsilon);
        assert!(
            b.epsilon <= closed && b.epsilon <= eps0,
            "{r}: {b:?} vs {closed}"
        );
        assert!((b.delta - delta).abs() <= 1e-12 * delta, "{b:?}");
        if b.method == ShuffleMethod::Numerical {
            amplified += 1;
        }
        worst = worst.max(b.epsilon / hi - 1.0);
        assert!(
            (f(r, "closed_form") - closed).abs() <= 1e-12 * closed,
            "{r}"
        );
    }
    eprintln!("largest excess over the truth: {worst:e} (relative)");
    assert!(
        amplified >= 10,
        "only {amplified} rows used the numerical bound"
    );
}

#[test]
fn shuffle_numerical_delta_is_never_below_the_truth() {
    let fx = fixture("shuffle_numerical.json");
    for r in rows(&fx, "delta_rows") {
        let (eps0, n, eps, want) = (
            f(r, "eps0"),
            f(r, "n") as u64,
            f(r, "epsilon"),
            f(r, "delta"),
        );
        let got = shuffle_delta_numerical(eps0, 0.0, n, eps).unwrap();
        assert!(got >= want, "{r}: {got} below the truth");
        assert!(rel(got, want) < 1e-6, "{r}: {got} loose");
    }
}

/// The closed form (Thm 3.1) is derived from Thm 3.2 by tail bounds, so the numerical ε is
/// never larger; in the paper's regime it is markedly smaller. Large `n` stays fast
/// (buckets over `C`), and the δ0 term of Thm 3.8 is added as for the closed form.
#[test]
fn shuffle_numerical_is_below_the_closed_form_up_to_n_1e8() {
    for (eps0, n, delta) in [
        (1.0, 100_000, 1e-6),
        (2.0, 1_000_000, 1e-8),
        (0.5, 10_000_000, 1e-10),
        (3.0, 100_000_000, 1e-6),
        (8.0, 100_000_000, 1e-12),
    ] {
        let b = shuffle_epsilon_numerical(eps0, 1e-14, n, delta).unwrap();
        let closed = shuffle_epsilon(eps0, n, delta).unwrap();
        eprintln!("eps0 {eps0} n {n} delta {delta}: numerical {b:?}, closed {closed}");
        assert_eq!(b.method, ShuffleMethod::Numerical);
        assert!(b.epsilon < 0.9 * closed, "{b:?} vs {closed}");
        // δ(ε) at the returned ε meets the pure-DP part of the target (up to the buckets,
        // which δ(ε) places over a wider range of C).
        let d = shuffle_delta_numerical(eps0, 0.0, n, b.epsilon).unwrap();
        assert!(d <= delta * (1.0 + 1e-3), "{d} vs {delta}");
        let extra = (b.epsilon.exp() + 1.0) * (1.0 + 0.5 * (-eps0).exp()) * n as f64 * 1e-14;
        assert!(b.delta >= delta + extra && b.delta <= (delta + extra) * (1.0 + 1e-9));
    }
}

#[test]
fn shuffle_numerical_small_eps0_and_large_n() {
    // e^{−ε0} close to 1: 1 − e^{−ε0} must be computed as −expm1(−ε0).
    let b = shuffle_epsilon_numerical(0.01, 0.0, 1_000_000, 1e-6).unwrap();
    let closed = shuffle_epsilon(0.01, 1_000_000, 1e-6).unwrap();
    assert_eq!(b.method, ShuffleMethod::Numerical);
    assert!(b.epsilon > 0.0 && b.epsilon < closed, "{b:?} vs {closed}");
    let d = shuffle_delta_numerical(0.01, 0.0, 1_000_000, b.epsilon).unwrap();
    assert!(d <= 1e-6 * (1.0 + 1e-3) && d > 0.5e-6, "{d}");
}

#[test]
fn shuffle_numerical_edges_and_errors() {
    // n = 1: nothing to hide among; δ(ε) = (e^ε0 − e^ε)/(e^ε0 + 1), so ε sits just below ε0.
    let b = shuffle_epsilon_numerical(1.0, 0.0, 1, 1e-6).unwrap();
    let exact = (1f64.exp() - 1e-6 * (1f64.exp() + 1.0)).ln();
    assert!(
        b.epsilon >= exact && b.epsilon < exact + 1e-6,
        "{b:?} vs {exact}"
    );
    // ε ≥ ε0: the ε0-DP part is 0, only the δ0 term remains.
    assert_eq!(shuffle_delta_numerical(1.0, 0.0, 1000, 1.0).unwrap(), 0.0);
    // Outside the numerical range, the closed form answers.
    let b = shuffle_epsilon_numerical(1.0, 0.0, 2_000_000_000, 1e-6).unwrap();
    assert_eq!(b.method, ShuffleMethod::ClosedForm);
    assert_eq!(
        b.epsilon,
        shuffle_epsilon(1.0, 2_000_000_000, 1e-6).unwrap()
    );
    assert!(shuffle_delta_numerical(1.0, 0.0, 2_000_000_000, 0.1).is_err());
    for bad in [
        shuffle_epsilon_numerical(0.0, 0.0, 10, 1e-6),
        shuffle_epsilon_numerical(f64::NAN, 0.0, 10, 1e-6),
        shuffle_epsilon_numerical(1.0, 1.0, 10, 1e-6),
        shuffle_epsilon_numerical(1.0, 0.0, 0, 1e-6),
        shuffle_epsilon_numerical(1.0, 0.0, 10, 0.0),
    ] {
        assert!(bad.is_err(), "{bad:?}");
    }
    assert!(shuffle_delta_numerical(1.0, 0.0, 10, f64::NAN).is_err());
    assert!(shuffle_delta_numerical(1.0, 0.0, 10, -0.1).is_err());
}
