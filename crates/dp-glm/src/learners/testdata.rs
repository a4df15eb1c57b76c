//! Synthetic problems shared by the learners' tests.

use dp_optim::{Lbfgs, Objective};
use ndarray::{Array1, Array2};
use rand::{Rng, RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::data::Dataset;
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::model::LinearModel;

/// A logistic problem: features `N(0, I_d)` with rows scaled to norm `≤ 1`, a true `θ*`
/// (uniform direction, norm `theta_norm`), labels `+1` with probability `σ(⟨θ*, x⟩)`.
pub(crate) fn logistic(n: usize, d: usize, theta_norm: f64, seed: u64) -> (Dataset, Array1<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut theta: Array1<f64> = Array1::from_shape_simple_fn(d, || gauss(&mut rng));
    theta *= theta_norm / theta.dot(&theta).sqrt();
    (logistic_with(&theta, n, &mut rng), theta)
}

/// `n` examples of the logistic problem with true parameter `theta`.
pub(crate) fn logistic_with<R: Rng>(theta: &Array1<f64>, n: usize, rng: &mut R) -> Dataset {
    let d = theta.len();
    let mut x = Array2::zeros((n, d));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let mut row: Array1<f64> = Array1::from_shape_simple_fn(d, || gauss(rng));
        let norm = row.dot(&row).sqrt();
        row /= norm.max(1.0);
        let z = row.dot(theta);
        let p = 1.0 / (1.0 + (-z).exp());
        let u: f64 = rng.random();
        y[i] = if u < p { 1.0 } else { -1.0 };
        x.row_mut(i).assign(&row);
    }
    Dataset::new(x, y).unwrap()
}

/// The seeded generator of the tests.
pub(crate) fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Asserts that `fit(seed)` is a function of the seed: equal for equal seeds, different
/// coefficients for different ones.
pub(crate) fn assert_reproducible(fit: impl Fn(u64) -> LinearModel) {
    assert_eq!(fit(5), fit(5));
    assert_ne!(fit(5).coef(), fit(6).coef());
}

fn gauss<R: Rng>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// Two well separated classes in `R^2` (rows of norm < 1).
pub(crate) fn separable(n: usize) -> Dataset {
    let mut x = Array2::zeros((n, 2));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let s = if i % 2 == 0 { 1.0 } else { -1.0 };
        let t = (i as f64 / n as f64) - 0.5;
        x[[i, 0]] = 0.5 * s + 0.1 * t;
        x[[i, 1]] = t;
        y[i] = s;
    }
    Dataset::new(x, y).unwrap()
}

/// The fraction of rows whose predicted sign matches the label.
pub(crate) fn accuracy(m: &LinearModel, data: &Dataset) -> f64 {
    let p = m.predict(data.x().view()).unwrap();
    let right = p.iter().zip(data.y()).filter(|(a, b)| *a == *b).count();
    right as f64 / data.n_samples() as f64
}

/// Accuracy of a raw parameter vector.
pub(crate) fn accuracy_of(theta: &Array1<f64>, data: &Dataset) -> f64 {
    let z = data.x().dot(theta);
    let right = z
        .iter()
        .zip(data.y())
        .filter(|(z, y)| (if **z >= 0.0 { 1.0 } else { -1.0 }) == **y)
        .count();
    right as f64 / data.n_samples() as f64
}

/// The empirical risk `(1/n)Σ φ(⟨θ, x_i⟩, y_i)`.
pub(crate) fn risk(theta: &Array1<f64>, data: &Dataset, loss: Loss) -> f64 {
    GlmObjective::new(data, loss, 0.0, Scale::Mean)
        .unwrap()
        .value(theta.view())
}

/// The non-private minimiser of the empirical risk (L-BFGS), optionally with ridge `lambda`.
pub(crate) fn non_private(data: &Dataset, loss: Loss, lambda: f64) -> Array1<f64> {
    let obj = GlmObjective::new(data, loss, lambda, Scale::Mean).unwrap();
    let x0 = Array1::zeros(data.n_features());
    Lbfgs::new()
        .max_iters(500)
        .grad_tol(1e-9)
        .minimize(&obj, x0.view(), None)
        .unwrap()
        .x
}
