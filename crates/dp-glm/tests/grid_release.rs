//! The learners whose last step is an additive Gaussian release return values on the noise
//! grid (dp_optim's noise docs): every released coefficient is an integer multiple of the grid
//! `γ` of the learner's noise, so its low-order bits are the same under every input.

use dp_glm::{Amp, Dataset, Loss, OutputPerturbation};
use dp_optim::{Noise, seeded_rng};
use ndarray::{Array1, Array2};
use rand::RngExt;

/// Separable-ish logistic data, rows of norm ≤ 1, labels ±1.
fn data(n: usize, d: usize) -> Dataset {
    let mut rng = seeded_rng(5);
    let mut x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>() - 0.5);
    for mut row in x.rows_mut() {
        let norm = row.dot(&row).sqrt();
        row /= norm.max(1.0);
    }
    let y = Array1::from_shape_fn(n, |i| {
        if x[[i, 0]] + 0.3 * x[[i, 1]] >= 0.0 {
            1.0
        } else {
            -1.0
        }
    });
    Dataset::new(x, y).expect("finite data")
}

fn on_grid(coef: &Array1<f64>, gamma: f64) -> bool {
    coef.iter().all(|&c| {
        let k = c / gamma;
        k == k.round() && k.abs() < 2f64.powi(53)
    })
}

#[test]
fn amp_releases_grid_points() {
    let data = data(2000, 5);
    let amp = Amp::new(Loss::Logistic);
    let m = amp.fit(&data, &mut seeded_rng(1)).unwrap();
    let (_, sigma_out) = amp.tau_and_sigma_out().unwrap();
    let gamma = Noise::Gaussian { std: sigma_out }.grid().unwrap();
    assert!(on_grid(&m.coef().to_owned(), gamma), "{:?}", m.coef());
    // Not trivially: the coefficients are not all zero.
    assert!(m.coef().iter().any(|&c| c != 0.0));
}

#[test]
fn output_perturbation_releases_grid_points() {
    let data = data(2000, 5);
    let op = OutputPerturbation::new(Loss::Logistic);
    let m = op.fit(&data, &mut seeded_rng(2)).unwrap();
    let sigma = m
        .privacy()
        .noise
        .iter()
        .find(|(k, _)| k == "sigma")
        .unwrap()
        .1;
    let gamma = Noise::Gaussian { std: sigma }
        .on_grid(Some(op.radius))
        .unwrap()
        .gamma();
    assert!(on_grid(&m.coef().to_owned(), gamma), "{:?}", m.coef());
    assert!(m.coef().iter().any(|&c| c != 0.0));
}
