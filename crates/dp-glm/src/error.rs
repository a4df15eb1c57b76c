//! The crate's error type.

/// Everything that can go wrong in `dp-glm`.
///
/// Bad input (a shape that does not fit, a NaN in the data, a label the loss cannot take, a
/// hyper-parameter outside its range) is reported with one of these, never with a panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two arrays that must agree in shape do not.
    #[error(
        "shape mismatch: {left} has shape {left_shape:?} but {right} has shape {right_shape:?}"
    )]
    ShapeMismatch {
        /// Name of the first array (e.g. `x`).
        left: &'static str,
        /// Shape of the first array.
        left_shape: Vec<usize>,
        /// Name of the second array (e.g. `y`).
        right: &'static str,
        /// Shape of the second array (or the shape it was expected to have).
        right_shape: Vec<usize>,
    },
    /// An entry is NaN or infinite.
    #[error("non-finite value {value} in {array} at row {row}, column {col}")]
    NonFinite {
        /// Name of the array (`x`, `y`, ...).
        array: &'static str,
        /// Row of the entry (for a vector: its index).
        row: usize,
        /// Column of the entry (0 for a vector).
        col: usize,
        /// The offending value.
        value: f64,
    },
    /// A finite value the requested feature storage cannot hold (beyond `±f32::MAX` for `f32`
    /// storage; see [`Storage`](crate::Storage)).
    #[error(
        "value {value} in x at row {row}, column {col} is outside the range of {storage} \
         storage"
    )]
    OutOfStorageRange {
        /// Row of the entry.
        row: usize,
        /// Column of the entry.
        col: usize,
        /// The offending value.
        value: f64,
        /// The storage (`f32`).
        storage: &'static str,
    },
    /// A label is outside the loss's label domain (e.g. `y = 0` for the logistic loss, which
    /// takes `y ∈ {−1, +1}`).
    #[error("label {value} at row {row} is outside the {loss} loss's label set {expected}")]
    LabelOutOfDomain {
        /// Row of the label.
        row: usize,
        /// The offending label.
        value: f64,
        /// The loss's name.
        loss: &'static str,
        /// The labels the loss accepts (e.g. `{-1, +1}`).
        expected: &'static str,
    },
    /// The data has no rows or no columns.
    #[error("empty data: {what}")]
    EmptyData {
        /// What is empty.
        what: &'static str,
    },
    /// Compressed sparse rows that break their invariants (row pointers not increasing from 0
    /// to the number of entries, a column index not below the number of features or not
    /// strictly increasing within its row).
    #[error("malformed sparse rows at row {row}: {reason}")]
    MalformedSparse {
        /// The row at fault.
        row: usize,
        /// What is wrong.
        reason: String,
    },
    /// A hyper-parameter is outside its domain.
    #[error("invalid hyper-parameter `{name}` = {value}: {reason}")]
    InvalidHyperParameter {
        /// The hyper-parameter's name as the user knows it (e.g. `lambda`, `clip`, `h`).
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What the value must satisfy.
        reason: &'static str,
    },
    /// A hyper-parameter asks for more memory or more work than the documented limit
    /// ([`MEMORY_BUDGET_BYTES`](crate::learners::MEMORY_BUDGET_BYTES) for buffers; a cap
    /// stated on the hyper-parameter for loop counts). Checked before anything is allocated
    /// or run.
    #[error("`{name}` = {value} needs {needed:e} {unit}, above the limit of {limit:e} {unit}")]
    ResourceLimit {
        /// The hyper-parameter's name as the user knows it (e.g. `k`, `mean_trials`).
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What it would need.
        needed: f64,
        /// The limit.
        limit: f64,
        /// The unit of `needed` and `limit` (`bytes`, `trials`, ...).
        unit: &'static str,
    },
    /// The operation needs a convex loss (e.g. the clipping lemma) and this one is not.
    #[error("the {loss} loss is not convex, and {what} needs a convex loss")]
    NotConvex {
        /// The loss's name.
        loss: &'static str,
        /// What needed convexity.
        what: &'static str,
    },
    /// The learner's privacy analysis is stated under one neighbouring relation and the
    /// budget asks for the other.
    #[error(
        "{learner}'s guarantee is stated under {supported} neighbours only; the budget asks \
         for {requested}"
    )]
    UnsupportedNeighbouring {
        /// The learner.
        learner: &'static str,
        /// The relation the budget asks for.
        requested: dp_accounting::Neighbouring,
        /// The only relation the learner's analysis covers.
        supported: dp_accounting::Neighbouring,
    },
    /// A privacy check failed: the model is not released.
    #[error("privacy check failed: {0}")]
    Privacy(String),
    /// The accountant could not answer (invalid budget, unsupported mechanism, ...).
    #[error("accounting: {0}")]
    Accounting(#[from] dp_accounting::Error),
    /// The optimiser rejected its input.
    #[error("optimiser: {0}")]
    Optim(#[from] dp_optim::Error),
    /// A model file, or a model's description of its input, is refused: another version, a
    /// field invalid or inconsistent with the others, content that does not match its digest,
    /// a number that cannot be written.
    #[error("{0}")]
    ModelFile(#[from] crate::model_file::ModelFileError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Checks a condition on a hyper-parameter, returning [`Error::InvalidHyperParameter`] when
/// it fails. NaN fails every condition written as a positive comparison.
pub(crate) fn ensure(
    cond: bool,
    name: &'static str,
    value: f64,
    reason: &'static str,
) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(Error::InvalidHyperParameter {
            name,
            value,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = Error::ShapeMismatch {
            left: "x",
            left_shape: vec![3, 2],
            right: "y",
            right_shape: vec![4],
        };
        assert_eq!(
            e.to_string(),
            "shape mismatch: x has shape [3, 2] but y has shape [4]"
        );
        let e = Error::UnsupportedNeighbouring {
            learner: "objective perturbation",
            requested: dp_accounting::Neighbouring::ReplaceOne,
            supported: dp_accounting::Neighbouring::AddRemove,
        };
        assert_eq!(
            e.to_string(),
            "objective perturbation's guarantee is stated under add-remove neighbours only; the \
             budget asks for replace-one"
        );
        let nan = f64::NAN;
        assert!(ensure(nan.max(-1.0) > 0.0, "clip", nan, "must be > 0").is_err());
        assert!(ensure(1.0 > 0.0, "clip", 1.0, "must be > 0").is_ok());
    }
}
