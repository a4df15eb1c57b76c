//! dp-accounting's errors as Python exceptions, carrying the Rust message.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    dpglm,
    DPGLMError,
    PyException,
    "Base class of every error dpglm raises: the question has no answer it can vouch for."
);
create_exception!(
    dpglm,
    InvalidParameterError,
    DPGLMError,
    "A parameter is outside the domain where the guarantee holds (the message names it)."
);
create_exception!(
    dpglm,
    UnsupportedError,
    DPGLMError,
    "The accountant cannot analyse this event or neighbouring relation."
);
create_exception!(
    dpglm,
    OutOfRangeError,
    DPGLMError,
    "The question is outside what the accountant can resolve (e.g. δ below its resolution)."
);
create_exception!(
    dpglm,
    NumericalError,
    DPGLMError,
    "A numerical procedure failed (overflow, non-convergence)."
);
create_exception!(
    dpglm,
    SelfCheckError,
    DPGLMError,
    "An answer failed a check every valid upper bound passes, so no number is returned."
);
create_exception!(
    dpglm,
    CalibrationError,
    DPGLMError,
    "No parameter in the searched range meets the target."
);

create_exception!(
    dpglm,
    BudgetExceededError,
    DPGLMError,
    "A fit would take a Budget's recorded fits past its total: nothing was read or fitted."
);

/// The Python exception for a dp-accounting error, with its message.
pub(crate) fn to_py(e: dp_accounting::Error) -> PyErr {
    use dp_accounting::Error as E;
    let msg = e.to_string();
    match e {
        E::InvalidParameter { .. } => InvalidParameterError::new_err(msg),
        E::Unsupported { .. } => UnsupportedError::new_err(msg),
        E::OutOfRange(_) => OutOfRangeError::new_err(msg),
        E::Numerical(_) => NumericalError::new_err(msg),
        E::SelfCheck { .. } => SelfCheckError::new_err(msg),
        E::Calibration(_) => CalibrationError::new_err(msg),
        _ => DPGLMError::new_err(msg),
    }
}

/// An `UnsupportedError` for an event dp-accounting has no analysis for.
pub(crate) fn unsupported(what: String) -> PyErr {
    UnsupportedError::new_err(format!("dp-accounting does not support {what}"))
}

/// An `InvalidParameterError` for arguments that do not fit together.
pub(crate) fn invalid(msg: &str) -> PyErr {
    InvalidParameterError::new_err(msg.to_owned())
}

/// `dpglm.InvalidInputError(DPGLMError, ValueError)`: created at module start (a class with
/// two bases, which `create_exception!` cannot make).
static INVALID_INPUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// An `InvalidInputError` (a `DPGLMError` and a `ValueError`, as scikit-learn expects of bad
/// data) with `msg`.
pub(crate) fn invalid_input(py: Python<'_>, msg: String) -> PyErr {
    match INVALID_INPUT.get(py) {
        Some(t) => PyErr::from_type(t.bind(py).clone(), msg),
        None => PyValueError::new_err(msg),
    }
}

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("DPGLMError", py.get_type::<DPGLMError>())?;
    m.add(
        "InvalidParameterError",
        py.get_type::<InvalidParameterError>(),
    )?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("OutOfRangeError", py.get_type::<OutOfRangeError>())?;
    m.add("NumericalError", py.get_type::<NumericalError>())?;
    m.add("SelfCheckError", py.get_type::<SelfCheckError>())?;
    m.add("CalibrationError", py.get_type::<CalibrationError>())?;
    m.add("BudgetExceededError", py.get_type::<BudgetExceededError>())?;
    let bases = PyTuple::new(
        py,
        [py.get_type::<DPGLMError>(), py.get_type::<PyValueError>()],
    )?;
    let dict = PyDict::new(py);
    dict.set_item("__module__", "dpglm")?;
    dict.set_item(
        "__doc__",
        "Invalid data (shapes, non-finite values, labels outside the public class pair): \
         the message names the value.",
    )?;
    let t = py
        .get_type::<PyType>()
        .call1(("InvalidInputError", bases, dict))?
        .cast_into::<PyType>()?;
    m.add("InvalidInputError", &t)?;
    let _ = INVALID_INPUT.set(py, t.unbind());
    Ok(())
}
