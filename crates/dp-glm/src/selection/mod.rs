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
