//! Private model selection: the generalised exponential mechanism, paper 003's private grid
//! search over the norm bound, confidence boosting, and hyper-parameter tuning of DP-SGD (honest, and a baseline
//! that is not accounted).

mod boosting;
pub mod gem;
mod grid_search;
mod tuning;

pub use boosting::ConfidenceBoosting;
pub use grid_search::{PrivateGridSearch, RadiusLearner};
pub use tuning::{HonestTuning, TuningWithoutPrivacyAccounting};

use ndarray::ArrayView1;

use crate::data::Dataset;
use crate::loss::Loss;

/// `Λ(B) = (Y + √(H/2)·B·X)²`: the bound on a non-negative `H`-smooth loss on the ball of
/// radius `B` when `‖x‖ ≤ X` and `φ(0, y) ≤ Y²` (paper 003, by the self-bounding property).
pub(crate) fn loss_bound(loss: Loss, radius: f64, x_bound: f64, y_bound: f64) -> f64 {
    (y_bound + (loss.smoothness() / 2.0).sqrt() * radius * x_bound).powi(2)
}

/// The mean over `data` of the loss of `coef`, each example's loss clipped to `[0, cap]`: a
/// score of sensitivity `cap/n` whatever the data.
pub(crate) fn clipped_mean_loss(
    coef: ArrayView1<'_, f64>,
    data: &Dataset,
    loss: Loss,
    cap: f64,
) -> f64 {
    let z = data.x().dot(&coef);
    z.iter()
        .zip(data.y())
        .map(|(&z, &y)| loss.value(z, y).clamp(0.0, cap))
        .sum::<f64>()
        / data.n_samples() as f64
}
