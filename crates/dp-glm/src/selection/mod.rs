//! Private model selection: the generalised exponential mechanism and paper 003's private
//! grid search over the norm bound.

pub mod gem;
mod grid_search;

pub use grid_search::{PrivateGridSearch, RadiusLearner};
