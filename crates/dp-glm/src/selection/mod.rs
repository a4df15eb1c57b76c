//! Private model selection: the generalised exponential mechanism, paper 003's private grid
//! search over the norm bound, confidence boosting, and hyper-parameter tuning of DP-SGD (honest, and a baseline
//! that is not accounted).

mod boosting;
pub mod gem;
mod grid_search;
mod tuning;

pub use boosting::ConfidenceBoosting;
pub use grid_search::{MAX_CANDIDATES, PrivateGridSearch, RadiusLearner};
pub use tuning::{HonestTuning, MAX_MEAN_TRIALS, TuningWithoutPrivacyAccounting};

use dp_optim::numeric;
use ndarray::ArrayView1;

use crate::data::Dataset;
use crate::loss::Loss;

/// `Λ(B) = (Y + √(H/2)·B·X)²`: the bound on a non-negative `H`-smooth loss on the ball of
/// radius `B` when `‖x‖ ≤ X` and `φ(0, y) ≤ Y²` (paper 003, by the self-bounding property).
pub(crate) fn loss_bound(loss: Loss, radius: f64, x_bound: f64, y_bound: f64) -> f64 {
    (y_bound + (loss.smoothness() / 2.0).sqrt() * radius * x_bound).powi(2)
}

/// The mean over `data` of the loss of `coef`, each example's loss clipped to `[0, cap]`: a
/// score of sensitivity `cap/n` whatever the data. Margins that overflow are recomputed
/// scaled ([`numeric::dot`]: `±∞`, never NaN), and a loss that is not a number counts as
/// `cap`, so one extreme row moves the score by at most `cap/n` and never makes it NaN.
pub(crate) fn clipped_mean_loss(
    coef: ArrayView1<'_, f64>,
    data: &Dataset,
    loss: Loss,
    cap: f64,
) -> f64 {
    let x = data.x();
    let z = x.dot(&coef);
    z.iter()
        .zip(data.y())
        .enumerate()
        .map(|(i, (&z, &y))| {
            let z = if z.is_finite() {
                z
            } else {
                numeric::dot(x.row(i), coef)
            };
            let v = loss.value(z, y);
            if v.is_nan() { cap } else { v.clamp(0.0, cap) }
        })
        .sum::<f64>()
        / data.n_samples() as f64
}
