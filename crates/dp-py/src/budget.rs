//! `dpglm.Budget`: a privacy budget shared by many fits on the same rows
//! ([`dp_glm::shared_budget`]), in memory or in a file the CLI's `train --budget` shares.

use std::path::PathBuf;

use dp_accounting::{AccountantKind, PrivacyEvent};
use dp_glm::shared_budget::{BudgetError, Plan, SharedBudget};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{BudgetExceededError, DPGLMError, InvalidParameterError, to_py};

/// A budget error as a Python exception: `BudgetExceededError` when a fit is refused.
pub(crate) fn budget_err(e: BudgetError) -> PyErr {
    let msg = e.to_string();
    match e {
        BudgetError::Exceeded { .. } => BudgetExceededError::new_err(msg),
        BudgetError::Invalid(_) | BudgetError::Relation { .. } => {
            InvalidParameterError::new_err(msg)
        }
        BudgetError::Pricing(p) => to_py(p),
        _ => DPGLMError::new_err(msg),
    }
}

/// What `Budget.__reduce__` returns: the class and its constructor's arguments.
type Reduced<'py> = (
    Bound<'py, pyo3::types::PyType>,
    (f64, f64, PathBuf, &'static str),
);

/// A privacy budget of `(epsilon, delta)` shared by the fits given it (`budget=` of the
/// estimators).
///
/// Each fit is admitted before it touches the data, from its own public `epsilon` and
/// `delta`: a fit that would take the recorded fits past the budget raises
/// `BudgetExceededError`, saying what is left, and reads nothing. An admitted fit's privacy
/// event tree is recorded before the fitted model is returned.
///
/// With `path`, the budget lives in that file (format `dpglm-budget/1`, as `dpglm budget new`
/// makes and `dpglm train --budget` uses): an existing file is opened (its totals must equal
/// `epsilon` and `delta`), a missing one created. Processes sharing the file lock it, and it
/// is replaced atomically, so no entry is lost. Without `path` it lives in this object.
/// Copies of a budget (`copy.deepcopy`, scikit-learn's `clone`) are the same budget.
///
/// # Privacy
/// The recorded fits and an admitted one are `(epsilon, delta)`-DP together under one
/// neighbouring relation, by basic composition with the recorded events priced at
/// `delta − delta_fit` (the `shared_budget` module of the `dp-glm` crate).
#[pyclass(frozen, module = "dpglm", name = "Budget")]
pub(crate) struct Budget {
    pub(crate) inner: SharedBudget,
}

#[pymethods]
impl Budget {
    #[new]
    #[pyo3(signature = (epsilon, delta, path = None, accountant = "pld"))]
    fn new(epsilon: f64, delta: f64, path: Option<PathBuf>, accountant: &str) -> PyResult<Self> {
        let kind: AccountantKind = accountant.parse().map_err(|_| {
            InvalidParameterError::new_err(format!(
                "accountant must be one of pld|rdp|zcdp|exact, not {accountant:?}"
            ))
        })?;
        let inner = match path {
            None => SharedBudget::in_memory(epsilon, delta),
            Some(p) if p.symlink_metadata().is_ok() => {
                let b = SharedBudget::open(&p).map_err(budget_err)?;
                if (b.epsilon(), b.delta()) != (epsilon, delta) {
                    return Err(InvalidParameterError::new_err(format!(
                        "the budget file {} holds epsilon = {}, delta = {:e}, not the \
                         epsilon = {epsilon}, delta = {delta:e} given: give its totals, or a \
                         new path for a new budget",
                        p.display(),
                        b.epsilon(),
                        b.delta()
                    )));
                }
                Ok(b)
            }
            Some(p) => SharedBudget::create(&p, epsilon, delta, kind),
        }
        .map_err(budget_err)?;
        Ok(Self { inner })
    }

    /// The total epsilon.
    #[getter]
    fn epsilon(&self) -> f64 {
        self.inner.epsilon()
    }

    /// The total delta.
    #[getter]
    fn delta(&self) -> f64 {
        self.inner.delta()
    }

    /// The budget file, or None.
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.inner.path().map(PathBuf::from)
    }

    /// The epsilon the recorded fits spend together at the budget's delta (an upper bound).
    fn spent(&self, py: Python<'_>) -> PyResult<f64> {
        py.detach(|| self.inner.spent())
            .map(|s| s.epsilon)
            .map_err(budget_err)
    }

    /// The most epsilon a fit at `delta` may still ask for (0 when none is left).
    fn left(&self, py: Python<'_>, delta: f64) -> PyResult<f64> {
        py.detach(|| self.inner.left_for(delta))
            .map(|l| l.unwrap_or(0.0))
            .map_err(budget_err)
    }

    /// The recorded fits, as dicts of their label and target epsilon and delta.
    fn fits<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let fits = py.detach(|| self.inner.fits()).map_err(budget_err)?;
        fits.iter()
            .map(|f| {
                let d = PyDict::new(py);
                d.set_item("label", &f.label)?;
                d.set_item("epsilon", f.epsilon)?;
                d.set_item("delta", f.delta)?;
                Ok(d)
            })
            .collect()
    }

    /// A file budget pickles as its path (unpickling opens the same file); an in-memory one
    /// cannot be pickled (a copy would be a second budget over the same rows).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let b = &slf.get().inner;
        match b.path() {
            Some(p) => Ok((
                slf.get_type(),
                (
                    b.epsilon(),
                    b.delta(),
                    p.to_path_buf(),
                    b.accountant().as_str(),
                ),
            )),
            None => Err(pyo3::exceptions::PyTypeError::new_err(
                "an in-memory dpglm.Budget cannot be pickled (a copy would be a second budget \
                 over the same rows): give it a path to share it",
            )),
        }
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __repr__(&self) -> String {
        match self.inner.path() {
            Some(p) => format!(
                "Budget(epsilon={}, delta={:e}, path={:?})",
                self.inner.epsilon(),
                self.inner.delta(),
                p.display().to_string()
            ),
            None => format!(
                "Budget(epsilon={}, delta={:e})",
                self.inner.epsilon(),
                self.inner.delta()
            ),
        }
    }
}

/// Why a charged fit failed: the fit itself, or the budget.
pub(crate) enum Charged<E> {
    /// The fit's own error.
    Fit(E),
    /// The budget refused or could not record it.
    Budget(BudgetError),
}

/// Runs `fit` charged to `budget` (when given): admitted from `plan` first, and its event
/// (priced by its reporting accountant) recorded under `label` before it is returned. Call it
/// with the GIL released: it may wait for another fit holding the budget.
pub(crate) fn charged<T, E>(
    budget: Option<&SharedBudget>,
    plan: &Plan,
    label: &str,
    fit: impl FnOnce() -> Result<T, E>,
    event: impl Fn(&T) -> (PrivacyEvent, AccountantKind),
) -> Result<T, Charged<E>> {
    let Some(budget) = budget else {
        return fit().map_err(Charged::Fit);
    };
    let reservation = budget.reserve(plan).map_err(Charged::Budget)?;
    let fitted = fit().map_err(Charged::Fit)?;
    let (tree, accountant) = event(&fitted);
    reservation
        .record(&tree, accountant, label)
        .map_err(Charged::Budget)?;
    Ok(fitted)
}
