//! The crate's error type.

/// Everything that can go wrong in `dp-accounting`.
///
/// An accountant that cannot answer a question (a parameter out of range, a series that does
/// not converge, δ below the resolution of a discretisation) returns one of these instead of a
/// number it cannot vouch for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside the domain where the guarantee holds.
    #[error("invalid parameter `{name}` = {value}: {reason}")]
    InvalidParameter {
        /// The parameter's name as the user knows it (e.g. `sigma`, `q`, `delta`).
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What the value must satisfy.
        reason: &'static str,
    },
    /// The accountant cannot handle this mechanism or neighbouring relation.
    #[error("the {accountant} accountant does not support {what}")]
    Unsupported {
        /// Accountant name (`pld`, `rdp`, `zcdp`, `exact`).
        accountant: &'static str,
        /// What was asked of it.
        what: String,
    },
    /// The question is outside what the accountant can resolve (e.g. δ below the
    /// discretisation's resolution, or ε beyond what can be represented).
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// A numerical procedure failed (overflow, non-convergence).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// An answer failed a check that every valid upper bound passes (finite, in range, at
    /// least the exact value of one of the composed mechanisms): the accountant could not
    /// vouch for it, so no number is returned.
    #[error(
        "the {accountant} accountant's answer {reported} failed its self-check \"{check}\" \
         (bound {bound}); use another accountant"
    )]
    SelfCheck {
        /// Accountant name.
        accountant: &'static str,
        /// The fact that failed.
        check: &'static str,
        /// The value the accountant computed.
        reported: f64,
        /// The bound it violated.
        bound: f64,
    },
    /// No parameter in the searched range meets the target.
    #[error("calibration failed: {0}")]
    Calibration(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Checks a condition on a parameter, returning [`Error::InvalidParameter`] when it fails.
/// NaN fails every condition written as a positive comparison.
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

/// `value` must be finite and strictly positive.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value.is_finite() && value > 0.0,
        name,
        value,
        "must be finite and > 0",
    )?;
    Ok(value)
}

/// `value` must lie in the open interval (0, 1).
pub(crate) fn open_unit(name: &'static str, value: f64) -> Result<f64> {
    ensure(value > 0.0 && value < 1.0, name, value, "must be in (0, 1)")?;
    Ok(value)
}

/// `value` must lie in (0, 1].
pub(crate) fn rate(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value > 0.0 && value <= 1.0,
        name,
        value,
        "must be in (0, 1]",
    )?;
    Ok(value)
}

/// `value` must be finite and ≥ 0.
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<f64> {
    ensure(
        value.is_finite() && value >= 0.0,
        name,
        value,
        "must be finite and >= 0",
    )?;
    Ok(value)
}
