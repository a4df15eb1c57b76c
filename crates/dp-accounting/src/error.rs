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
    #[error("invalid parameter `{name}` = {}: {reason}", Num(*.value))]
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

/// The smallest δ any privacy question accepts: [`f64::MIN_POSITIVE`] ≈ 2.2250738585072014e-308,
/// the smallest normal double.
///
/// Below it δ is subnormal, and so are the profiles' values near it: the closed forms lose
/// relative precision there (against 60-digit references, `tests/fixtures/tiny_delta.json`,
/// the Gaussian ε was 1.1e-12 low at δ = 1e-315, 1.7e-7 low at 1e-320 and 2.7e-4 low at
/// 5e-324, more than the rounding margin covers), while down to this floor every closed form
/// tested is within 6e-13 above the truth. Every ε(δ), calibration and [`Target`](crate::Target)
/// refuses a smaller δ.
pub const DELTA_MIN: f64 = f64::MIN_POSITIVE;

/// What [`valid_delta`] requires, with [`DELTA_MIN`] written out (checked by a test).
const DELTA_RANGE: &str = "must be in [2.2250738585072014e-308, 1): the smallest accepted delta \
                           is 2.2250738585072014e-308 (the smallest normal double; below it the \
                           closed forms lose precision)";

/// `value` is a δ a privacy question may ask about: in `[DELTA_MIN, 1)` (see [`DELTA_MIN`]).
/// Every δ entering an accountant's `epsilon(delta)`, a closed form's `*_epsilon(…, delta)`,
/// a calibration or a [`Target`](crate::Target) is checked here.
pub(crate) fn valid_delta(value: f64) -> Result<f64> {
    ensure(
        (DELTA_MIN..1.0).contains(&value),
        "delta",
        value,
        DELTA_RANGE,
    )?;
    Ok(value)
}

/// A number in messages: exponent form outside `[1e-3, 1e6)` (a subnormal δ in plain decimal
/// would print 324 digits).
pub(crate) struct Num(pub(crate) f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.0.abs();
        if a != 0.0 && a.is_finite() && !(1e-3..1e6).contains(&a) {
            write!(f, "{:e}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delta_message_states_the_floor_and_the_given_delta() {
        assert!(DELTA_RANGE.contains(&format!("[{DELTA_MIN:e}, 1)")));
        assert!(DELTA_RANGE.contains(&format!("smallest accepted delta is {DELTA_MIN:e}")));
        let e = valid_delta(5e-324).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid parameter `delta` = 5e-324: must be in [2.2"),
            "{e}"
        );
        assert_eq!(valid_delta(DELTA_MIN), Ok(DELTA_MIN));
        assert!(valid_delta(DELTA_MIN.next_down()).is_err());
        assert!(valid_delta(1.0).is_err() && valid_delta(f64::NAN).is_err());
        // Plain numbers keep their plain form.
        let e = positive("sigma", -0.5).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid parameter `sigma` = -0.5: must be finite and > 0"
        );
    }
}
