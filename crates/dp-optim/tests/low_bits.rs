//! Mironov's low-order-bits attack (Mironov, "On significance of the least significant bits
//! for differential privacy", CCS 2012) on the old sampler — `μ + std·Z` in `f64` with `Z` a
//! Ziggurat draw — and on the grid release that replaced it.
//!
//! For each output `y` produced under input `μ₀` we decide *exactly* whether `y` can be produced
//! under the neighbouring input `μ₁` by **any** double `z`: `z ↦ fl(μ₁ + fl(std·z))` is
//! monotone, so its preimage of `y` is an interval of doubles, found by bisection over the
//! ordered bit patterns. An output with an empty preimage is impossible under `μ₁` whatever
//! the sampler: it identifies the input with certainty (ε = ∞ for that output).

use dp_optim::{Noise, seeded_rng};
use ndarray::Array1;
use rand_distr::{Distribution, StandardNormal};

/// Order-preserving map from finite doubles to integers.
fn key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    if b < 0 { i64::MIN - b } else { b }
}

/// Inverse of [`key`].
fn unkey(k: i64) -> f64 {
    let b = if k < 0 { i64::MIN - k } else { k };
    f64::from_bits(b as u64)
}

/// Whether some double `z` gives `fl(mu + fl(std·z)) == y` (the old sampler's arithmetic).
fn possible_under(y: f64, mu: f64, std: f64) -> bool {
    let g = |z: f64| mu + std * z;
    // Smallest z (in the order of doubles) with g(z) >= y, within ±1e300.
    let (mut lo, mut hi) = (key(-1e300), key(1e300));
    if g(unkey(hi)) < y {
        return false;
    }
    while lo < hi {
        // Floor of the midpoint: lo <= mid < hi.
        let mid = (i128::from(lo) + i128::from(hi)).div_euclid(2) as i64;
        if g(unkey(mid)) >= y {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    g(unkey(lo)) == y
}

const N: usize = 100_000;

/// The old sampler: `μ + std·Z` with a Ziggurat `Z`. Outputs under `μ₀ = 0` that no double
/// noise can produce under `μ₁ = 0.1` (and vice versa) are a large share of all outputs: with
/// `std = 1.3` (not a power of two) the products `fl(1.3·z)` skip about a quarter of the doubles
/// in some binades, and `fl(0.1 + w)` cannot reach doubles finer than 0.1's ulp. The seed is
/// fixed, so the counts are deterministic (25.0% and 17.0% here); the test asserts more than
/// 5% each way.
#[test]
fn old_sampler_leaks_through_low_bits() {
    let std = 1.3;
    let (mu0, mu1) = (0.0f64, 0.1f64);
    let mut rng = seeded_rng(2012);
    let mut impossible = [0usize; 2];
    for _ in 0..N {
        let z0: f64 = StandardNormal.sample(&mut rng);
        let z1: f64 = StandardNormal.sample(&mut rng);
        let y0 = mu0 + std * z0;
        let y1 = mu1 + std * z1;
        impossible[0] += usize::from(!possible_under(y0, mu1, std));
        impossible[1] += usize::from(!possible_under(y1, mu0, std));
    }
    let frac = impossible.map(|c| c as f64 / N as f64);
    eprintln!("old sampler: impossible under the neighbour: {frac:?}");
    assert!(frac[0] > 0.05, "{frac:?}");
    assert!(frac[1] > 0.05, "{frac:?}");
    // The checker itself: a value the old arithmetic produced under μ is possible under μ.
    let y = mu1 + std * 0.123_456_789;
    assert!(possible_under(y, mu1, std));
}

/// The grid release: every output is a grid point `γk`, `|k| < 2^53`, and every grid point has
/// positive probability under both inputs (the discrete Gaussian has full support on ℤ), so
/// no output is impossible under the neighbour. The log-likelihood ratio of each output is the
/// discrete Gaussian's `((k − r₁)² − (k − r₀)²)/(2σ_g²)` with `r_i = round(μ_i/γ)`; the shift
/// `|r₁ − r₀|` is within the ledger's `(Δ + slack)/γ`, and the ratio's mean under `μ₀` matches
/// `η = (r₁ − r₀)²/(2σ_g²)` (z-test, |z| ≤ 5.5, false-failure rate ≈ 4e-8).
#[test]
fn grid_release_closes_the_low_bits() {
    let std = 1.3;
    let (mu0, mu1) = (0.0f64, 0.1f64);
    let noise = Noise::Gaussian { std };
    let grid = noise.on_grid(None).unwrap();
    let gamma = grid.gamma();
    let slack = grid.slack(1);
    let (r0, r1) = ((mu0 / gamma).round(), (mu1 / gamma).round());
    let shift = r1 - r0;
    assert!(shift.abs() * gamma <= (mu1 - mu0).abs() + slack);
    let s2 = (std / gamma).powi(2);
    let mut rng = seeded_rng(2013);
    let mut out = Array1::zeros(1);
    let mut losses = Vec::with_capacity(N);
    for i in 0..N {
        let mu = if i % 2 == 0 { mu0 } else { mu1 };
        out[0] = mu;
        grid.add_to("test", &mut rng, out.view_mut()).unwrap();
        let y = out[0];
        // On the grid, exactly, with an integer index below 2^53: possible under both inputs.
        let k = y / gamma;
        assert_eq!(k, k.round(), "off-grid output {y}");
        assert!(k.abs() < 2f64.powi(53));
        assert!(possible_on_grid(y, gamma));
        if i % 2 == 0 {
            // Privacy loss ln p₀(y)/p₁(y) of this output.
            losses.push(((k - r1).powi(2) - (k - r0).powi(2)) / (2.0 * s2));
        }
    }
    let m = losses.len() as f64;
    let mean = losses.iter().sum::<f64>() / m;
    let eta = shift * shift / (2.0 * s2);
    // Var of the loss is 2η for a Gaussian; the discrete one's is at most that (its variance
    // is at most σ_g², CKS §2).
    let se = (2.0 * eta / m).sqrt();
    assert!((mean - eta).abs() <= 5.5 * se, "mean loss {mean} vs {eta}");
    // The ledger's η with the slack is at least the realised one.
    let eta_ledger = ((mu1 - mu0).abs() + slack).powi(2) / (2.0 * std * std);
    assert!(eta <= eta_ledger * (1.0 + 1e-12));
}

/// A grid point `y = γk` is reachable from any start `round(μ/γ)` by the integer noise
/// `k − round(μ/γ)`, whose probability under `N_ℤ(0, σ_g²)` is positive.
fn possible_on_grid(y: f64, gamma: f64) -> bool {
    let k = y / gamma;
    k.is_finite() && k == k.round()
}

/// Large values are refused, not silently rounded: `|v|/γ ≥ 2^52` is an error.
#[test]
fn grid_release_refuses_values_it_cannot_round_exactly() {
    let grid = Noise::Gaussian { std: 1.0 }.on_grid(None).unwrap();
    let mut rng = seeded_rng(1);
    for bad in [f64::NAN, f64::INFINITY, 2f64.powi(52) * grid.gamma()] {
        let mut v = Array1::from_elem(1, bad);
        assert!(
            grid.add_to("test", &mut rng, v.view_mut()).is_err(),
            "{bad}"
        );
    }
    // With a value bound, the grid is coarsened so that the bound fits.
    let bounded = Noise::Gaussian { std: 1e-9 }.on_grid(Some(1e6)).unwrap();
    assert!(1e6 / bounded.gamma() < 2f64.powi(51));
    let mut v = Array1::from_elem(3, 1e6);
    bounded.add_to("test", &mut rng, v.view_mut()).unwrap();
    assert!(v.iter().all(|x| (x - 1e6).abs() < 1e-3));
}
