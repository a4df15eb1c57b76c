//! [`GlmRows`]: the rows a gradient learner fits on, dense ([`Dataset`]) or sparse
//! ([`SparseDataset`]), and the mean-form GLM objective each builds, so that one fit body
//! serves both.

use dp_optim::ClippedSum;

use crate::data::Dataset;
use crate::error::Result;
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::sparse::{SparseDataset, SparseGlmObjective};

/// Rows with labels that build the unregularised mean objective `(1/n)Σ φ(⟨x_i, θ⟩, y_i)`
/// of a loss: [`GlmObjective`] on a [`Dataset`], [`SparseGlmObjective`] on a
/// [`SparseDataset`] (equal exact clipped sums on the same rows).
pub(crate) trait GlmRows {
    /// The objective over these rows.
    type Objective<'a>: ClippedSum
    where
        Self: 'a;

    /// Number of examples `n`.
    fn n_samples(&self) -> usize;

    /// Number of features `d`.
    fn n_features(&self) -> usize;

    /// Checks that every label is in `loss`'s label domain.
    fn check_labels(&self, loss: &Loss) -> Result<()>;

    /// The objective of `loss` with no ridge, in mean form ([`Scale::Mean`]).
    fn mean_objective(&self, loss: Loss) -> Result<Self::Objective<'_>>;
}

/// `GlmRows` for `$rows`, whose inherent methods of the same names it forwards to, with the
/// objective `$objective`.
macro_rules! glm_rows {
    ($rows:ty, $objective:ident) => {
        impl GlmRows for $rows {
            type Objective<'a> = $objective<'a>;

            fn n_samples(&self) -> usize {
                <$rows>::n_samples(self)
            }

            fn n_features(&self) -> usize {
                <$rows>::n_features(self)
            }

            fn check_labels(&self, loss: &Loss) -> Result<()> {
                <$rows>::check_labels(self, loss)
            }

            fn mean_objective(&self, loss: Loss) -> Result<$objective<'_>> {
                $objective::new(self, loss, 0.0, Scale::Mean)
            }
        }
    };
}

glm_rows!(Dataset, GlmObjective);
glm_rows!(SparseDataset, SparseGlmObjective);
