//! Synthetic problems and small numerical helpers shared by the learning experiments
//! (papers 000, 002, 003, 004). Every generator is seeded, so a figure is a function of its
//! seeds.

use dp_glm::{Dataset, GlmObjective, Loss, Scale};
use dp_optim::{GradientDescent, L2Ball, Lbfgs, Objective, StepSize, seeded_rng};
use ndarray::{Array1, Array2, ArrayView1};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Maps a learner's error into the experiment's.
pub(crate) fn glm<T>(r: dp_glm::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Experiment(format!("learner: {e}")))
}

/// Maps an optimiser's error into the experiment's.
fn optim<T>(r: dp_optim::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Experiment(format!("optimiser: {e}")))
}

/// A unit vector in a uniformly random direction of `R^d`.
fn direction(d: usize, seed: u64) -> Array1<f64> {
    let mut rng = seeded_rng(seed);
    let mut w: Array1<f64> = Array1::from_shape_simple_fn(d, || StandardNormal.sample(&mut rng));
    w /= w.dot(&w).sqrt();
    w
}

/// Paper 002's model: `x ~ N(0, I_d)`, `y = ⟨x, w*⟩ + noise·z`, `z ~ N(0, 1)`, `‖w*‖ = 1`.
/// Returns the data and `w*`.
pub(crate) fn gaussian_linreg(
    n: usize,
    d: usize,
    noise: f64,
    seed: u64,
) -> Result<(Dataset, Array1<f64>)> {
    let w = direction(d, seed);
    let mut rng = seeded_rng(seed ^ 0x5eed_0002);
    let mut nrm = || -> f64 { StandardNormal.sample(&mut rng) };
    let x = Array2::from_shape_simple_fn((n, d), &mut nrm);
    let y = x.dot(&w) + Array1::from_shape_simple_fn(n, || noise * nrm());
    Ok((glm(Dataset::new(x, y))?, w))
}

/// `n` examples whose features are `N(0, I_d)` scaled into the unit ball (rows of norm > 1
/// projected to the sphere), drawn with the generator seeded by `seed`.
fn unit_ball_rows(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut rng = seeded_rng(seed);
    let mut x = Array2::from_shape_simple_fn((n, d), || -> f64 { StandardNormal.sample(&mut rng) });
    for mut row in x.rows_mut() {
        let norm = row.dot(&row).sqrt();
        if norm > 1.0 {
            row /= norm;
        }
    }
    x
}

/// A logistic problem with rows in the unit ball: labels `+1` with probability
/// `σ(⟨θ*, x⟩)`, `θ* = theta_norm · u` for a random unit `u` fixed by `model_seed`; the rows
/// and labels come from `sample_seed` (so train and test sets share `θ*`).
pub(crate) fn logistic_ball(
    n: usize,
    d: usize,
    theta_norm: f64,
    model_seed: u64,
    sample_seed: u64,
) -> Result<(Dataset, Array1<f64>)> {
    let theta = direction(d, model_seed) * theta_norm;
    let x = unit_ball_rows(n, d, sample_seed);
    let mut rng = seeded_rng(sample_seed ^ 0x1abe1);
    let y = x.dot(&theta).mapv(|z| {
        let p = 1.0 / (1.0 + (-z).exp());
        if rng.random::<f64>() < p { 1.0 } else { -1.0 }
    });
    Ok((glm(Dataset::new(x, y))?, theta))
}

/// A smooth regression problem with `‖x‖ ≤ 1` and `|y| ≤ 1` (paper 003's bounded setting)
/// whose signal lives in `informative` coordinates: there `x_j ~ N(0, 1/informative)`, in the
/// other `d − informative` coordinates `x_j ~ N(0, 0.01/d)` (rows then projected into the unit
/// ball); `y = clamp(⟨x, w*⟩ + noise·z, −1, 1)` with `w* = norm · u`, `u` a random unit vector
/// of the informative coordinates fixed by `model_seed`.
pub(crate) fn bounded_regression(
    n: usize,
    d: usize,
    informative: usize,
    norm: f64,
    noise: f64,
    (model_seed, sample_seed): (u64, u64),
) -> Result<(Dataset, Array1<f64>)> {
    let k = informative.clamp(1, d);
    let mut w = Array1::zeros(d);
    w.iter_mut()
        .zip(direction(k, model_seed) * norm)
        .for_each(|(w, u)| *w = u);
    let mut rng = seeded_rng(sample_seed);
    let (inf_sd, rest_sd) = ((1.0 / k as f64).sqrt(), (0.01 / d as f64).sqrt());
    let mut x = Array2::from_shape_fn((n, d), |(_, j)| {
        let z: f64 = StandardNormal.sample(&mut rng);
        z * if j < k { inf_sd } else { rest_sd }
    });
    for mut row in x.rows_mut() {
        let r = row.dot(&row).sqrt();
        if r > 1.0 {
            row /= r;
        }
    }
    let y = x.dot(&w).mapv(|z| {
        let e: f64 = StandardNormal.sample(&mut rng);
        (z + noise * e).clamp(-1.0, 1.0)
    });
    Ok((glm(Dataset::new(x, y))?, w))
}

/// The mean loss `(1/n)Σ φ(⟨w, x_i⟩, y_i)`.
pub(crate) fn mean_loss(w: ArrayView1<'_, f64>, data: &Dataset, loss: Loss) -> Result<f64> {
    Ok(glm(GlmObjective::new(data, loss, 0.0, Scale::Mean))?.value(w))
}

/// The non-private minimiser of the mean loss, over the ball of radius `radius` when given
/// (projected GD with step `1/H`, to a gradient-mapping tolerance of 1e-10), else unconstrained
/// (L-BFGS to `‖∇‖ ≤ 1e-10`).
pub(crate) fn minimiser(data: &Dataset, loss: Loss, radius: Option<f64>) -> Result<Array1<f64>> {
    let obj = glm(GlmObjective::new(data, loss, 0.0, Scale::Mean))?;
    let x0 = Array1::zeros(data.n_features());
    let sol = match radius {
        None => optim(Lbfgs::new().max_iters(2000).grad_tol(1e-10).minimize(
            &obj,
            x0.view(),
            None,
        ))?,
        Some(radius) => {
            let h = loss.smoothness() * data.row_norms().fold(0.0_f64, |m, &r| m.max(r * r));
            optim(
                GradientDescent::new(StepSize::Constant(1.0 / h.max(1e-12)))
                    .max_iters(20_000)
                    .grad_tol(1e-10)
                    .minimize_projected(&obj, &L2Ball { radius }, x0.view(), None),
            )?
        }
    };
    Ok(sol.x)
}

/// The mean of `f(seed)` over `seeds`.
pub(crate) fn mean_over(seeds: u64, f: impl Fn(u64) -> Result<f64> + Sync + Send) -> Result<f64> {
    // The trials run in parallel; their results are summed in seed order, so the mean is
    // the serial run's (each trial's generator is seeded from its index by `f`).
    let values: Vec<Result<f64>> = (0..seeds).into_par_iter().map(f).collect();
    let mut total = 0.0;
    for v in values {
        total += v?;
    }
    Ok(total / seeds as f64)
}
