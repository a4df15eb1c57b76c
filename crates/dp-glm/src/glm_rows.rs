//! [`GlmRows`]: the rows a gradient learner fits on, dense ([`Dataset`]) or sparse
//! ([`SparseDataset`]), and the mean-form GLM objective each builds, so that one fit body
//! serves both (and one tuning body: a subset of the rows, their margins).

use dp_optim::ClippedSum;
use ndarray::{Array1, ArrayView1};

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

    /// The labels, length `n`.
    fn y(&self) -> ArrayView1<'_, f64>;

    /// The rows `idx` with their labels, in that order: a new dataset of the same kind.
    ///
    /// # Errors
    /// As the dataset's constructor (no rows when `idx` is empty).
    ///
    /// # Panics
    /// If an index is `≥ n`.
    fn select_rows(&self, idx: &[usize]) -> Result<Self>
    where
        Self: Sized;

    /// `⟨x_i, w⟩` for every row, `w` of length `d`: the dense `x.dot(w)`, and on sparse rows
    /// the products added in the same order ([`SparseDataset::margins`]; the same numbers
    /// but in builds with BLAS, whose `dgemv` adds in an order of its own).
    ///
    /// # Errors
    /// `w` not of length `d` (sparse rows; the dense product panics).
    fn margins(&self, w: ArrayView1<'_, f64>) -> Result<Array1<f64>>;
}

/// `GlmRows` for `$rows`, whose inherent methods of the same names it forwards to, with the
/// objective `$objective` and the margins `$margins(rows, w)`.
macro_rules! glm_rows {
    ($rows:ty, $objective:ident, $margins:expr) => {
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

            fn y(&self) -> ArrayView1<'_, f64> {
                <$rows>::y(self)
            }

            fn select_rows(&self, idx: &[usize]) -> Result<Self> {
                <$rows>::select_rows(self, idx)
            }

            fn margins(&self, w: ArrayView1<'_, f64>) -> Result<Array1<f64>> {
                $margins(self, w)
            }
        }
    };
}

glm_rows!(
    Dataset,
    GlmObjective,
    |rows: &Dataset, w: ArrayView1<'_, f64>| Ok(rows.x().dot(&w))
);
glm_rows!(SparseDataset, SparseGlmObjective, SparseDataset::margins);
