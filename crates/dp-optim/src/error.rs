//! The crate's error type.
//!
//! Hyper-parameters are plain values; they are checked when a solver runs, and a bad one is
//! reported as one of these variants (never a panic).

/// Everything that can go wrong in `dp-optim`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A hyper-parameter is non-finite or outside its domain (e.g. a step size, clipping
    /// norm or noise multiplier that is not finite and positive, a sampling rate outside
    /// `(0, 1]`).
    #[error("invalid hyper-parameter `{name}` = {value}: {reason}")]
    InvalidParameter {
        /// The parameter's name as the user knows it (e.g. `step_size`, `clip`, `sigma`).
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What the value must satisfy.
        reason: &'static str,
    },
    /// A batch larger than the dataset.
    #[error("batch size {batch} exceeds the number of examples {n}")]
    BatchTooLarge {
        /// The requested batch size.
        batch: usize,
        /// The number of examples.
        n: usize,
    },
    /// The objective or oracle has no terms or examples.
    #[error("empty data: the objective has no examples")]
    EmptyData,
    /// A vector has the wrong length.
    #[error("dimension mismatch: {what} has length {got}, expected {expected}")]
    DimensionMismatch {
        /// Which vector (e.g. `x0`).
        what: &'static str,
        /// The required length.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The objective's value or gradient is not finite where the solver needs it (e.g. at
    /// the starting point).
    #[error("the objective is not finite at {0}")]
    NonFinite(&'static str),
    /// A combination of settings the solver does not support (e.g. Gamma-ball noise without
    /// Poisson sampling).
    #[error("unsupported configuration: {0}")]
    Unsupported(&'static str),
    /// The operating system could not provide entropy to seed the CSPRNG.
    #[error("cannot seed the CSPRNG from the operating system: {0}")]
    Entropy(String),
    /// Building a ledger entry failed (the accounting crate rejected a parameter).
    #[error(transparent)]
    Accounting(#[from] dp_accounting::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Checks `cond`, else returns [`Error::InvalidParameter`]. NaN fails every condition written
/// as a positive comparison.
pub(crate) fn ensure(
    cond: bool,
    name: &'static str,
    value: f64,
    reason: &'static str,
) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            reason,
        })
    }
}

/// `value` finite and `> 0`.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value.is_finite() && value > 0.0,
        name,
        value,
        "must be finite and positive",
    )?;
    Ok(value)
}

/// `value` finite and `≥ 0`.
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value.is_finite() && value >= 0.0,
        name,
        value,
        "must be finite and non-negative",
    )?;
    Ok(value)
}

/// `value ∈ (0, 1]`.
pub(crate) fn unit_rate(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value > 0.0 && value <= 1.0,
        name,
        value,
        "must be in (0, 1]",
    )?;
    Ok(value)
}

/// `value ∈ [0, 1)`.
pub(crate) fn decay(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        (0.0..1.0).contains(&value),
        name,
        value,
        "must be in [0, 1)",
    )?;
    Ok(value)
}

/// An iteration count `≥ 1`.
pub(crate) fn count(name: &'static str, value: usize) -> Result<usize> {
    ensure(value >= 1, name, value as f64, "must be at least 1")?;
    Ok(value)
}

/// `got == expected`, else [`Error::DimensionMismatch`].
pub(crate) fn same_dim(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::DimensionMismatch {
            what,
            expected,
            got,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_parameter() {
        assert!(positive("clip", 1.0).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                positive("clip", bad),
                Err(Error::InvalidParameter { name: "clip", .. })
            ));
        }
        assert!(non_negative("tol", 0.0).is_ok());
        assert!(non_negative("tol", f64::NAN).is_err());
        assert!(unit_rate("q", 1.0).is_ok());
        assert!(unit_rate("q", 0.0).is_err());
        assert!(unit_rate("q", 1.5).is_err());
        assert!(decay("beta", 0.0).is_ok());
        assert!(decay("beta", 1.0).is_err());
        assert!(count("steps", 0).is_err());
        assert_eq!(
            same_dim("x0", 3, 2),
            Err(Error::DimensionMismatch {
                what: "x0",
                expected: 3,
                got: 2
            })
        );
        let msg = positive("sigma", -2.0).unwrap_err().to_string();
        assert!(msg.contains("sigma") && msg.contains("-2"));
    }
}
