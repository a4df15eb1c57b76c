//! Differentially private generalised linear models.
//!
//! This crate holds the foundations of the dpglm learners:
//!
//! - [`Dataset`]: features and labels checked once (shapes, finite values, non-empty), with
//!   the row norms `‖x_i‖` cached; [`Dataset::check_labels`] checks a loss's label set.
//! - [`Loss`]: logistic, squared, Huber, Huber-SVM (smoothed hinge) and Savage losses with
//!   `φ`, `φ'`, `φ''`, Lipschitz and smoothness constants and a convexity flag (MATH §11).
//! - [`GlmObjective`]: `J(θ) = s·Σ φ(⟨x_i, θ⟩, y_i) + (λ/2)‖θ‖²` (sum or mean form)
//!   implementing `dp-optim`'s [`Objective`](dp_optim::Objective),
//!   [`FiniteSum`](dp_optim::FiniteSum), [`GlmSum`](dp_optim::GlmSum) and
//!   [`ClippedSum`](dp_optim::ClippedSum). Clipping a GLM gradient needs only the scalar
//!   `φ'(⟨θ, x_i⟩)` and `‖x_i‖`, so a clipped batch gradient is two matrix–vector products;
//!   per-example gradient vectors are never materialised.
//! - [`ClippedLoss`]: the clipping lemma (MATH §5; paper 000, Lemma 5.1) — the Huberised
//!   convex loss whose gradient is exactly the clipped gradient.
//! - [`preprocess`]: row normalisation, min–max scaling, ball projection, bias feature, and a
//!   [`Pipeline`](preprocess::Pipeline) of them (the papers' preprocessing).
//! - [`JlProjection`]: Gaussian, sign and sparse-sign Johnson–Lindenstrauss matrices.
//! - [`LinearModel`] carries its fitted [`Preprocessing`] (scaling, unit-norm rows, bias, row
//!   projection) and the public description of its input, applies them to raw rows in
//!   `predict`, and is saved and read in one versioned format ([`model_file`]).
//!
//! - Private learners ([`learners`]), each a plain-value builder checked at `fit` that
//!   returns a [`LinearModel`] with its [`PrivacyReport`]: [`DpGd`] (paper 000 Alg. 1),
//!   [`NonConvexDpGd`] (000 Thm 4.1), [`DpSgd`] with Gaussian or Gamma-ball noise (000 §6),
//!   [`NoisyProjectedGd`] (003 Alg. 1, 004), [`JlNoisyGd`] (003 Alg. 2), [`DpSsgd`] and
//!   [`DpAmbSsgd`] (002 Alg. 1–3), and [`Ssp`] (AdaSSP, Wang 2018). Noise is calibrated to the
//!   target (ε, δ) by the chosen accountant before the data is read, and the ledger the
//!   optimiser returns is priced again after the run.
//! - [`catalog`]: the one description of the learners that the CLI and the Python package
//!   read — the [`catalog::Fit`] interface, each learner's parameters (names, types, defaults,
//!   docs), the bounds it needs, its relation and accountant, and its constructor from a
//!   parameter map.
//!
//! ```
//! use dp_glm::{Dataset, GlmObjective, Loss, Scale};
//! use dp_optim::{ClippedSum, Objective};
//! use ndarray::array;
//!
//! let data = Dataset::new(array![[1.0, 2.0], [-3.0, 0.5]], array![1.0, -1.0])?;
//! let obj = GlmObjective::new(&data, Loss::Logistic, 0.1, Scale::Mean)?;
//! let theta = array![0.5, -0.25];
//! let mut grad = array![0.0, 0.0];
//! let j = obj.value_grad(theta.view(), grad.view_mut());
//! assert!(j > 0.0);
//! // Per-example gradients clipped to norm ≤ 0.5, summed: the quantity DP-GD perturbs.
//! let mut g = array![0.0, 0.0];
//! obj.clipped_sum(theta.view(), None, 0.5, g.view_mut());
//! assert!(g.dot(&g).sqrt() <= 2.0 * 0.5 + 1e-12);
//! # Ok::<(), dp_glm::Error>(())
//! ```
//!
//! The crate picks no BLAS backend: the `blas` feature (off by default) switches `ndarray`
//! to BLAS and links the system OpenBLAS through `openblas-src`.

pub mod bounds;
pub mod catalog;
mod clipping;
mod data;
mod error;
pub mod frontdoor;
mod glm;
mod glm_rows;
mod jl;
pub mod learners;
mod loss;
mod model;
pub mod model_file;
mod pages;
pub mod pipeline;
mod prefetch;
pub mod preprocess;
mod report;
pub mod row_count;
pub mod scaling;
pub mod selection;
pub mod shared_budget;
pub mod sparse;
mod statement;
pub mod streamed;
pub mod sufficient;

pub use clipping::{ClippedExampleLoss, ClippedLoss};
pub use data::{Dataset, DatasetBuilder, Features, Storage};
pub use error::{Error, Result};
pub use glm::{GlmObjective, Scale};
pub use jl::{JlKind, JlProjection};
pub use learners::{Amp, AmpSolver, ObjPertBounds, ObjectivePerturbation, OutputPerturbation};
pub use learners::{Budget, DpGd, MAX_STEPS, MEMORY_BUDGET_BYTES, Prior};
pub use learners::{DpAmbSsgd, DpSsgd, Ssp};
pub use learners::{DpSgd, JlNoisyGd, NoisyProjectedGd, NonConvexDpGd, SgdNoise};
pub use loss::{DEFAULT_HUBER_SVM_H, LabelDomain, Loss};
pub use model::{LinearModel, positive_probability, prediction};
pub use model_file::{BoundOrigin, BoundRecord, ModelFileError, StoredEvent};
pub use pipeline::Preprocessing;
pub use report::{NoiseSource, PrivacyReport, text_down, text_up};
pub use statement::PrivacyStatement;

#[cfg(feature = "blas")]
use openblas_src as _;
