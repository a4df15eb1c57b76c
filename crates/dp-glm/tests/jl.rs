//! Johnson–Lindenstrauss projections: shapes, adjointness, unbiasedness and concentration
//! of `‖Φx‖²`.
//!
//! Seeds are fixed, so the statistical assertions are deterministic; the stated false-failure
//! rates are what a fresh seed would risk.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{Error, JlKind, JlProjection};
use ndarray::{Array1, Array2, ArrayView1};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

fn kinds() -> [JlKind; 4] {
    [
        JlKind::Gaussian,
        JlKind::Sign,
        JlKind::SparseSign { density: 1.0 / 3.0 },
        JlKind::SparseSign { density: 0.1 },
    ]
}

fn gaussian_vec(d: usize, rng: &mut Xoshiro256PlusPlus) -> Array1<f64> {
    Array1::from_shape_simple_fn(d, || {
        let g: f64 = StandardNormal.sample(rng);
        g
    })
}

fn sq(v: ArrayView1<'_, f64>) -> f64 {
    v.dot(&v)
}

#[test]
fn shapes_entries_and_errors() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    for kind in kinds() {
        let p = JlProjection::new(kind, 7, 30, &mut rng).unwrap();
        assert_eq!((p.k(), p.d(), p.kind()), (7, 30, kind));
        assert_eq!(p.matrix().shape(), &[7, 30]);
        let x = Array2::from_shape_fn((11, 30), |(i, j)| (i * j) as f64 * 0.01);
        assert_eq!(p.apply(x.view()).unwrap().shape(), &[11, 7]);
        assert_eq!(p.lift(Array1::ones(7).view()).unwrap().len(), 30);
        assert!(matches!(
            p.apply(Array2::zeros((3, 29)).view()),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            p.lift(Array1::ones(30).view()),
            Err(Error::ShapeMismatch { .. })
        ));
        // Entries take the stated values.
        let k = 7.0f64;
        let allowed: Vec<f64> = match kind {
            JlKind::Sign => vec![1.0 / k.sqrt()],
            JlKind::SparseSign { density } => vec![0.0, 1.0 / (k * density).sqrt()],
            _ => vec![],
        };
        if !allowed.is_empty() {
            assert!(
                p.matrix()
                    .iter()
                    .all(|v| allowed.iter().any(|a| (v.abs() - a).abs() < 1e-15))
            );
        }
    }
    assert!(JlProjection::gaussian(0, 3, &mut rng).is_err());
    assert!(JlProjection::sign(3, 0, &mut rng).is_err());
    assert!(JlProjection::sparse_sign(3, 3, 0.0, &mut rng).is_err());
    assert!(JlProjection::sparse_sign(3, 3, 1.5, &mut rng).is_err());
}

/// `apply` is `XΦᵀ` and `lift` is `Φᵀw`: `⟨Φᵀw, x⟩ = ⟨w, Φx⟩`.
#[test]
fn apply_and_lift_are_adjoint() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
    for kind in kinds() {
        let p = JlProjection::new(kind, 12, 40, &mut rng).unwrap();
        let x = Array2::from_shape_fn((5, 40), |(i, j)| ((i + 3 * j) % 7) as f64 - 3.0);
        let px = p.apply(x.view()).unwrap();
        let w = gaussian_vec(12, &mut rng);
        let lifted = p.lift(w.view()).unwrap();
        for i in 0..5 {
            let direct = p.matrix().dot(&x.row(i));
            assert!((&direct - &px.row(i)).iter().all(|d| d.abs() < 1e-12));
            let a = lifted.dot(&x.row(i));
            let b = w.dot(&px.row(i));
            assert!((a - b).abs() < 1e-12 * (1.0 + a.abs()));
        }
    }
}

/// `E‖Φx‖² = ‖x‖²`: the mean of `‖Φx‖²/‖x‖²` over M = 2000 independent draws of Φ (k = 5)
/// is within 0.07 of 1. Per draw the ratio has standard deviation `√(2/k) ≈ 0.63` for the
/// Gaussian and sign kinds and ≈ 0.70 for density 0.1 (fourth moment `1/(k²s)`), so the
/// mean's is ≤ 0.016 and 0.07 is > 4 standard deviations (false-failure rate < 1e-4 per kind).
#[test]
fn squared_norm_is_unbiased() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let x = gaussian_vec(50, &mut rng);
    let nx = sq(x.view());
    let xm = x.clone().insert_axis(ndarray::Axis(0));
    for kind in kinds() {
        let m = 2000;
        let mean = (0..m)
            .map(|_| {
                let p = JlProjection::new(kind, 5, 50, &mut rng).unwrap();
                sq(p.apply(xm.view()).unwrap().row(0)) / nx
            })
            .sum::<f64>()
            / m as f64;
        assert!((mean - 1.0).abs() < 0.07, "{kind:?}: mean ratio {mean}");
    }
}

/// Concentration at k = 200 (d = 1000): for 100 vectors and one draw of Φ,
/// `|‖Φx‖²/‖x‖² − 1| ≤ ε = 0.6`. The JL tail bound
/// `P(|ratio − 1| > ε) ≤ 2 exp(−k(ε²/2 − ε³/3)/2) ≈ 4e−5` (Gaussian; Achlioptas 2003 for
/// the sign and density-1/3 kinds) gives a false-failure rate ≤ 0.4% over the 100 vectors;
/// the exact χ²₂₀₀ tail is far smaller. The typical deviation `√(2/k) = 0.1` is checked via
/// the sample standard deviation of the ratios (within [0.05, 0.2]).
#[test]
fn squared_norm_concentrates_at_k_200() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let (k, d) = (200, 1000);
    let x = Array2::from_shape_fn((100, d), |_| {
        let g: f64 = StandardNormal.sample(&mut rng);
        g
    });
    for kind in kinds().into_iter().take(3) {
        let p = JlProjection::new(kind, k, d, &mut rng).unwrap();
        let px = p.apply(x.view()).unwrap();
        let ratios: Vec<f64> = (0..100).map(|i| sq(px.row(i)) / sq(x.row(i))).collect();
        for r in &ratios {
            assert!((r - 1.0).abs() <= 0.6, "{kind:?}: ratio {r}");
        }
        let mean = ratios.iter().sum::<f64>() / 100.0;
        let sd = (ratios.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / 99.0).sqrt();
        assert!((0.05..=0.2).contains(&sd), "{kind:?}: sd {sd}");
        assert!((mean - 1.0).abs() < 0.1, "{kind:?}: mean {mean}");
    }
}

/// The same seed gives the same matrix (experiments are reproducible).
#[test]
fn reproducible_from_seed() {
    for kind in kinds() {
        let a = JlProjection::new(kind, 4, 9, &mut Xoshiro256PlusPlus::seed_from_u64(5)).unwrap();
        let b = JlProjection::new(kind, 4, 9, &mut Xoshiro256PlusPlus::seed_from_u64(5)).unwrap();
        assert_eq!(a, b);
    }
}
