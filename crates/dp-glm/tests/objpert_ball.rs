//! Objective perturbation and AMP release a point of a public box (issue 9, §3: no outcome
//! that hangs on one record).
//!
//! The released minimiser is rounded to an output grid whose exactness check refuses values
//! beyond about `2^27·σ_out`. Before the fix the minimiser was put on the grid as computed,
//! so a data set that pulls it far out (labels far from the fit under a clipped squared loss,
//! with a small ridge) made the fit fail while the same data with ordinary labels succeeded:
//! success revealed the data. Now the point is clamped to the public box
//! `|θ_j| ≤ (nL + σ(√d + 8) + τ)/λ` and the grid is checked against the box before the data
//! is read: both data sets succeed, or both fail with the same error naming `sigma_out`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{Amp, Dataset, Error, LinearModel, Loss, ObjectivePerturbation};
use ndarray::{Array1, Array2};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

const N: usize = 20_000;
/// Row norm: small, so that `β = X²` allows a small ridge.
const X: f64 = 1e-3;
/// The ridge: the far labels' minimiser (`≈ 10⁹` per coordinate) is beyond the output grid
/// of `σ_out = 2` (`2^52·2^-23 ≈ 5.4·10⁸`), the ordinary labels' (a few hundred) is not.
const LAMBDA: f64 = 1e-5;

/// `N` rows `(X, 0)` and `(0, X)` alternating, all labelled `label`. With label 0 the
/// minimiser is about `−b_j/((N/2)X² + λ)` (a few hundred); with label 1e12 every clipped
/// gradient is saturated at `C`, pulling each coordinate to `((N/2)C − b_j)/λ ≈ 10⁹`.
fn data(label: f64) -> Dataset {
    let x = Array2::from_shape_fn((N, 2), |(i, j)| if i % 2 == j { X } else { 0.0 });
    Dataset::new(x, Array1::from_elem(N, label)).unwrap()
}

fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// AMP with `τ = 1e-6` and `σ_out = 2`: its output release has sensitivity
/// `(2τ + γ_b√2)/λ ≈ 0.24`, small against `σ_out` (paper 001's `τ = 5e-4` would need
/// `σ_out` in the hundreds at this `λ`).
fn amp(epsilon: f64) -> Amp {
    let mut a = Amp::new(Loss::Squared).budget(epsilon, 1e-5);
    a.tau = Some(1e-6);
    a.sigma_out = Some(2.0);
    a.objpert.x_bound = X;
    a.objpert.clip = Some(1.0);
    a.objpert.lambda = Some(LAMBDA);
    a
}

fn note_with<'a>(m: &'a LinearModel, what: &str) -> &'a str {
    m.privacy()
        .notes
        .iter()
        .find(|n| n.contains(what))
        .unwrap_or_else(|| panic!("no note with {what}: {:?}", m.privacy().notes))
}

fn noise(m: &LinearModel, name: &str) -> f64 {
    m.privacy().noise.iter().find(|(k, _)| k == name).unwrap().1
}

/// The box's radius `(nL + σ(√d + 8) + τ)/λ` for `n` rows, from the model's report.
fn radius(m: &LinearModel, n: f64) -> f64 {
    (n * noise(m, "lipschitz") + noise(m, "sigma") * (2f64.sqrt() + 8.0) + noise(m, "tau")) / LAMBDA
}

/// AMP with `σ_out = 2` and the data's count `n = 20,000`: the box's radius `≈ 2·10⁹` is more
/// than the grid represents, so both data sets get the same error, naming `sigma_out`, raised
/// before the data is read (before the fix: the ordinary labels succeeded and the far labels
/// failed at the grid).
#[test]
fn amp_fails_on_both_data_sets_with_the_same_error_or_succeeds_on_both() {
    let ordinary = amp(1.0).fit(&data(0.0), &mut rng(1));
    let far = amp(1.0).fit(&data(1e12), &mut rng(1));
    match (&ordinary, &far) {
        (
            Err(Error::InvalidHyperParameter { name, value, .. }),
            Err(Error::InvalidHyperParameter {
                name: name2,
                value: value2,
                ..
            }),
        ) => {
            assert_eq!((*name, *name2), ("sigma_out", "sigma_out"));
            assert_eq!((*value, *value2), (2.0, 2.0));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ordinary.unwrap_err().to_string(),
        far.unwrap_err().to_string()
    );
    // A σ_out whose grid holds the box (2^-19·2^51 = 2^32 > 2·10⁹): both succeed. The far
    // labels' minimiser `θ_j = (10⁴C − b_j)/λ ≈ 10⁹` (|b_j|/λ ≲ 5σ/λ ≈ 3·10⁶) is inside the
    // box and released as is.
    let mut wide = amp(1.0);
    wide.sigma_out = Some(32.0);
    let m0 = wide.fit(&data(0.0), &mut rng(2)).unwrap();
    let m1 = wide.fit(&data(1e12), &mut rng(2)).unwrap();
    assert!(
        m1.coef().iter().all(|&c| (c - 1e9).abs() <= 1e-2 * 1e9),
        "{:?}",
        m1.coef()
    );
    assert!(m0.coef().iter().all(|c| c.abs() < 1e4), "{:?}", m0.coef());
    for m in [&m0, &m1] {
        assert!(m.privacy().epsilon <= 1.0);
        assert!(note_with(m, "clamped to the public box").contains("(n·L + sigma"));
        assert!(note_with(m, "number of rows n").contains("treated as public"));
    }
}

/// AMP with a public `n = 1000` below the data's count: the box (radius `≈ 10⁸`) is sized by
/// the public `n`, so `σ_out = 2` holds it; the far labels' minimiser (`≈ 10⁹`) lies outside
/// it and is clamped to its face. Both data sets succeed and the model says which `n` was
/// used.
#[test]
fn amp_with_a_public_n_clamps_a_minimiser_beyond_its_box() {
    let mut a = amp(1.0);
    a.objpert.public_n = Some(1000);
    let m0 = a.fit(&data(0.0), &mut rng(3)).unwrap();
    let m1 = a.fit(&data(1e12), &mut rng(3)).unwrap();
    let r = radius(&m1, 1000.0);
    // Within 8 σ_out of the face (P(|Z| > 8) < 2e-15 per coordinate).
    for &c in m1.coef() {
        assert!((c - r).abs() <= 8.0 * 2.0, "{c} vs {r}");
    }
    assert!(m0.coef().iter().all(|c| c.abs() < 1e4), "{:?}", m0.coef());
    for m in [&m0, &m1] {
        assert!(m.privacy().epsilon <= 1.0);
        assert!(note_with(m, "number of rows n = 1000").contains("not the data's"));
    }
}

/// Objective perturbation chooses its own `σ_out`: at ε = 50 (σ well below 2L) the one its
/// output share asks for is too fine a grid for the box, so it is raised to the least power
/// of two whose grid holds the box. Both data sets succeed and spend at most the target
/// (before the fix the far labels failed at the grid).
#[test]
fn objpert_raises_its_output_noise_to_hold_the_box() {
    let mut o = ObjectivePerturbation::new(Loss::Squared).budget(50.0, 1e-5);
    o.x_bound = X;
    o.clip = Some(1.0);
    o.lambda = Some(LAMBDA);
    let m0 = o.fit(&data(0.0), &mut rng(4)).unwrap();
    let m1 = o.fit(&data(1e12), &mut rng(4)).unwrap();
    for m in [&m0, &m1] {
        let r = m.privacy();
        assert!(r.epsilon <= 50.0, "{}", r.epsilon);
        let radius = radius(m, N as f64);
        // σ_out = 2^(⌊log₂ R⌋ − 26): its grid 2^(⌊log₂ R⌋ − 50) holds R within 2^51 steps.
        let sigma_out = noise(m, "sigma_out");
        assert_eq!(sigma_out, 2f64.powi(radius.log2().floor() as i32 - 26));
        // The output share alone (ratio κL/σ, κ = 0.05) would ask for far less.
        let ratio = 0.05 * noise(m, "lipschitz") / noise(m, "sigma");
        let share = 2.0 * noise(m, "tau") / LAMBDA / ratio;
        assert!(share < 0.1 * sigma_out, "{share} vs {sigma_out}");
    }
    // The far labels' minimiser `(10⁴C − b_j)/λ ≈ 10⁹` is released inside the box, to within
    // `b_j/λ` and the output noise.
    assert!(
        m1.coef().iter().all(|&c| (c - 1e9).abs() <= 1e-4 * 1e9),
        "{:?}",
        m1.coef()
    );
    assert!(m0.coef().iter().all(|c| c.abs() < 1e4), "{:?}", m0.coef());
}
