//! The functional API: one call from an event (or closed-form parameters) to a number.

use std::sync::Mutex;

use dp_accounting::{
    AccountantKind, DEFAULT_CHAIN, Mechanism, Neighbouring, Note, NoteValue, PldConfig, Query,
    Target, answer_with_fallback, calibrate_noise as cal_noise,
    calibrate_sampling_rate as cal_rate, calibrate_steps as cal_steps,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::accountants::{NeighboringRelation, Spec, kind_of, relation_of};
use crate::errors::{invalid, to_py, unsupported};
use crate::events::{Event, event_of};

/// Notes of an accountant as a dict (numbers, lists of numbers, booleans).
pub(crate) fn notes_dict(py: Python<'_>, notes: &[Note]) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    for n in notes {
        match &n.value {
            NoteValue::Number(x) => d.set_item(n.name, x)?,
            NoteValue::Numbers(xs) => d.set_item(n.name, xs.clone())?,
            NoteValue::Flag(b) => d.set_item(n.name, b)?,
        }
    }
    Ok(d.into_any().unbind())
}

/// The answer of `account`: the value asked for and how it was obtained.
#[pyclass(frozen, get_all, module = "dpglm.accounting")]
pub(crate) struct Answer {
    /// ε of the guarantee (the answer when δ was given).
    epsilon: f64,
    /// δ of the guarantee (the answer when ε was given).
    delta: f64,
    /// The accountant that answered (`"pld"`, `"exact"`, `"rdp"`, `"zcdp"`).
    accountant: &'static str,
    /// The neighbouring relation of the guarantee.
    neighboring_relation: NeighboringRelation,
    /// The accountants tried first and why each could not answer: `(name, reason)` pairs.
    fallback: Vec<(&'static str, String)>,
    /// How the answering accountant computed it (grid width, RDP order, …).
    notes: Py<PyAny>,
}

#[pymethods]
impl Answer {
    fn __repr__(&self) -> String {
        format!(
            "Answer(epsilon={}, delta={:e}, accountant={:?}, neighboring_relation={})",
            self.epsilon,
            self.delta,
            self.accountant,
            Neighbouring::from(self.neighboring_relation)
        )
    }
}

/// The relation to account under: the given one, or the event's natural one.
fn relation_for(event: &Event, given: Option<&Bound<'_, PyAny>>) -> PyResult<Neighbouring> {
    match given {
        Some(r) => relation_of(r),
        None => event.natural_relation(),
    }
}

/// The answer to `query` about `event`: the named accountant, or the first of PLD, exact and
/// RDP that can answer (a repeat-and-select goes to RDP).
fn answer(
    py: Python<'_>,
    event: &Bound<'_, PyAny>,
    query: Query,
    accountant: Option<&str>,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
    pld: PldConfig,
) -> PyResult<Answer> {
    let ev = event_of(event)?;
    let rel = relation_for(&ev, neighboring_relation)?;
    let kind = accountant.map(kind_of).transpose()?;
    let ask = move |a: &dyn dp_accounting::Accountant| {
        let v = match query {
            Query::Epsilon { delta } => a.epsilon(delta)?,
            Query::Delta { epsilon } => a.delta(epsilon)?,
        };
        Ok((v, a.notes()))
    };
    let (value, kind, fallback, notes) = if let Event::Tree(tree) = &ev {
        // A model's tree: dp-accounting's event pricing (ε at δ only), PLD by default.
        let Query::Epsilon { delta } = query else {
            return Err(crate::errors::unsupported(
                "delta(epsilon) of a model's event tree (ask its epsilon at a delta)".into(),
            ));
        };
        if rel != tree.neighbouring() {
            return Err(crate::errors::unsupported(format!(
                "pricing a model's event tree stated under {} under {rel} (neighbouring \
                 relations must not be mixed)",
                tree.neighbouring()
            )));
        }
        let kind = kind.unwrap_or(AccountantKind::Pld);
        let tree = tree.clone();
        let p = py
            .detach(move || dp_accounting::price_with(&tree, kind, pld, delta))
            .map_err(to_py)?;
        (p.epsilon, kind, Vec::new(), p.notes)
    } else if let Event::RepeatAndSelect { .. } = ev {
        let kind = kind.unwrap_or(AccountantKind::Rdp);
        let mut spec = Spec::new(kind, rel);
        spec.add(&ev, 1)?;
        let (v, notes) = py.detach(move || spec.run(ask)).map_err(to_py)?;
        (v, kind, Vec::new(), notes)
    } else {
        let parts = ev.parts()?;
        let chain: Vec<AccountantKind> = kind.map_or_else(|| DEFAULT_CHAIN.to_vec(), |k| vec![k]);
        let a = py
            .detach(move || answer_with_fallback(&chain, rel, pld, &parts, query))
            .map_err(to_py)?;
        let fallback = a
            .skipped
            .iter()
            .map(|(k, e)| (k.as_str(), e.to_string()))
            .collect();
        (a.value, a.accountant, fallback, a.notes)
    };
    let (epsilon, delta) = match query {
        Query::Epsilon { delta } => (value, delta),
        Query::Delta { epsilon } => (epsilon, value),
    };
    Ok(Answer {
        epsilon,
        delta,
        accountant: kind.as_str(),
        neighboring_relation: rel.into(),
        fallback,
        notes: notes_dict(py, &notes)?,
    })
}

/// Accounts for `event` and answers ε at `delta` or δ at `epsilon` (give exactly one), with
/// the named accountant or, by default, the first of PLD, exact and RDP that can answer (the
/// answer says which, and why the others could not). The relation defaults to the event's
/// natural one (replace-one for sampling without replacement, else add/remove). `delta` must
/// be in `[2.2250738585072014e-308, 1)`: a smaller (subnormal) δ cannot be computed safely and
/// raises `InvalidParameterError`, as everywhere in `dpglm.accounting`.
///
/// # Privacy
/// The answering accountant's upper bound; falling back never replaces a bound by a guess.
#[pyfunction]
#[pyo3(signature = (event, *, delta = None, epsilon = None, accountant = None,
    neighboring_relation = None, epsilon_error = Some(1e-3), max_grid = 1 << 22),
    text_signature = "(event, *, delta=None, epsilon=None, accountant=None, \
        neighboring_relation=None, epsilon_error=1e-3, max_grid=4194304)")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn account(
    py: Python<'_>,
    event: &Bound<'_, PyAny>,
    delta: Option<f64>,
    epsilon: Option<f64>,
    accountant: Option<&str>,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
    epsilon_error: Option<f64>,
    max_grid: usize,
) -> PyResult<Answer> {
    let query = match (delta, epsilon) {
        (Some(delta), None) => Query::Epsilon { delta },
        (None, Some(epsilon)) => Query::Delta { epsilon },
        _ => return Err(invalid("give exactly one of delta and epsilon")),
    };
    let d = PldConfig::default();
    let pld =
        crate::accountants::pld_config(d.discretisation, d.tail_mass, max_grid, epsilon_error)?;
    answer(py, event, query, accountant, neighboring_relation, pld)
}

/// ε of `event` at `delta` (see `account`).
#[pyfunction]
#[pyo3(signature = (event, delta, *, accountant = None, neighboring_relation = None))]
pub(crate) fn epsilon(
    py: Python<'_>,
    event: &Bound<'_, PyAny>,
    delta: f64,
    accountant: Option<&str>,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    let q = Query::Epsilon { delta };
    answer(
        py,
        event,
        q,
        accountant,
        neighboring_relation,
        PldConfig::default(),
    )
    .map(|a| a.epsilon)
}

/// δ of `event` at `epsilon` (see `account`).
#[pyfunction]
#[pyo3(signature = (event, epsilon, *, accountant = None, neighboring_relation = None))]
pub(crate) fn delta(
    py: Python<'_>,
    event: &Bound<'_, PyAny>,
    epsilon: f64,
    accountant: Option<&str>,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    let q = Query::Delta { epsilon };
    answer(
        py,
        event,
        q,
        accountant,
        neighboring_relation,
        PldConfig::default(),
    )
    .map(|a| a.delta)
}

/// ε of the Gaussian mechanism (noise σ, sensitivity Δ) at δ, exact (analytic Gaussian).
///
/// # Privacy
/// Balle & Wang, *Improving the Gaussian mechanism for differential privacy*, Thm 8; rounded
/// up.
#[pyfunction]
#[pyo3(signature = (sigma, delta, sensitivity = 1.0))]
pub(crate) fn gaussian_epsilon(sigma: f64, delta: f64, sensitivity: f64) -> PyResult<f64> {
    dp_accounting::gaussian_epsilon(sigma, sensitivity, delta).map_err(to_py)
}

/// δ of the Gaussian mechanism at ε (Balle & Wang, Thm 8), rounded up.
#[pyfunction]
#[pyo3(signature = (sigma, epsilon, sensitivity = 1.0))]
pub(crate) fn gaussian_delta(sigma: f64, epsilon: f64, sensitivity: f64) -> PyResult<f64> {
    dp_accounting::gaussian_delta(sigma, sensitivity, epsilon).map_err(to_py)
}

/// The least σ for which the Gaussian mechanism is (ε, δ)-DP (Balle & Wang, Thm 8), rounded
/// up.
#[pyfunction]
#[pyo3(signature = (epsilon, delta, sensitivity = 1.0))]
pub(crate) fn gaussian_sigma(epsilon: f64, delta: f64, sensitivity: f64) -> PyResult<f64> {
    dp_accounting::gaussian_sigma(epsilon, delta, sensitivity).map_err(to_py)
}

/// ε at δ of a ρ-zCDP mechanism (Bun & Steinke, *Concentrated differential privacy*), rounded
/// up.
#[pyfunction]
pub(crate) fn zcdp_epsilon(rho: f64, delta: f64) -> PyResult<f64> {
    dp_accounting::zcdp_epsilon(rho, delta).map_err(to_py)
}

/// δ at ε of a ρ-zCDP mechanism, rounded up.
#[pyfunction]
pub(crate) fn zcdp_delta(rho: f64, epsilon: f64) -> PyResult<f64> {
    dp_accounting::zcdp_delta(rho, epsilon).map_err(to_py)
}

/// ε of one shuffled round of `n` (ε0, δ0)-DP local randomisers at the shuffle's δ, under
/// replace-one: `(epsilon, total_delta, method)`, the total δ adding the δ0 term and method
/// naming the bound that answered.
///
/// # Privacy
/// Feldman, McMillan & Talwar, *Hiding among the clones: a simple and nearly optimal analysis
/// of privacy amplification by shuffling*: Thm 3.2 (numerical), Thm 3.1 (closed form),
/// Thm 3.8 (δ0 > 0); rounded up.
#[pyfunction]
#[pyo3(signature = (eps0, n, delta, delta0 = 0.0))]
pub(crate) fn shuffle_epsilon(
    py: Python<'_>,
    eps0: f64,
    n: u64,
    delta: f64,
    delta0: f64,
) -> PyResult<(f64, f64, &'static str)> {
    let b = py
        .detach(move || dp_accounting::shuffle_epsilon_numerical(eps0, delta0, n, delta))
        .map_err(to_py)?;
    Ok((b.epsilon, b.delta, b.method.name()))
}

/// δ at ε of one shuffled round of `n` (ε0, δ0)-DP local randomisers (Feldman, McMillan &
/// Talwar, Thm 3.2 and 3.8; replace-one), rounded up.
#[pyfunction]
#[pyo3(signature = (eps0, n, epsilon, delta0 = 0.0))]
pub(crate) fn shuffle_delta(
    py: Python<'_>,
    eps0: f64,
    n: u64,
    epsilon: f64,
    delta0: f64,
) -> PyResult<f64> {
    py.detach(move || dp_accounting::shuffle_delta_numerical(eps0, delta0, n, epsilon))
        .map_err(to_py)
}

/// The result of a calibration.
#[pyclass(frozen, get_all, module = "dpglm.accounting")]
pub(crate) struct Calibration {
    /// The calibrated parameter (noise, sampling rate or number of steps).
    value: f64,
    /// The accountant's ε at `value` for the target δ (never above the target).
    epsilon: f64,
}

#[pymethods]
impl Calibration {
    fn __repr__(&self) -> String {
        format!(
            "Calibration(value={}, epsilon={})",
            self.value, self.epsilon
        )
    }
}

/// The single mechanism an event repeats: `(mechanism, count)`.
fn single(event: &Event) -> PyResult<(Mechanism, u64)> {
    let mut parts = event.parts()?;
    match (parts.pop(), parts.is_empty()) {
        (Some(p), true) => Ok(p),
        _ => Err(unsupported(
            "calibrating an event that composes several different mechanisms (calibrate one \
             mechanism, possibly self-composed)"
                .into(),
        )),
    }
}

/// Calls `make(x)` with the GIL and returns the one mechanism its event repeats; a Python
/// error is kept in `failed` and reported to the search as an error it does not swallow.
fn made(
    make: &Py<PyAny>,
    x: f64,
    steps: u64,
    failed: &Mutex<Option<PyErr>>,
) -> dp_accounting::Result<Mechanism> {
    let got = Python::attach(|py| -> PyResult<Mechanism> {
        let ev = make.bind(py).call1((x,))?;
        let (m, c) = single(&event_of(&ev)?)?;
        if c != steps {
            return Err(unsupported(format!(
                "an event whose number of steps depends on the parameter ({c} at {x}, \
                 {steps} at 1)"
            )));
        }
        Ok(m)
    });
    got.map_err(|e| {
        let msg = e.to_string();
        *failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
        dp_accounting::Error::Unsupported {
            accountant: "calibration",
            what: msg,
        }
    })
}

/// Runs a calibration of `make`'s parameter with the GIL released (it is taken back to call
/// `make`); a Python error from `make` is raised as itself.
fn calibrate_with(
    py: Python<'_>,
    make: Py<PyAny>,
    target_epsilon: f64,
    target_delta: f64,
    accountant: &str,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
    rate: bool,
) -> PyResult<Calibration> {
    let kind = kind_of(accountant)?;
    let target = Target::new(target_epsilon, target_delta).map_err(to_py)?;
    // The event at parameter 1 fixes the step count and the natural relation.
    let probe = event_of(make.bind(py).call1((1.0,))?.as_ref())?;
    let (_, steps) = single(&probe)?;
    let rel = relation_for(&probe, neighboring_relation)?;
    let failed = Mutex::new(None);
    let got = py.detach(|| {
        let mk = |x: f64| made(&make, x, steps, &failed);
        if rate {
            cal_rate(target, kind, rel, steps, mk)
        } else {
            cal_noise(target, kind, rel, steps, mk)
        }
    });
    match got {
        Ok(c) => Ok(Calibration {
            value: c.value,
            epsilon: c.epsilon,
        }),
        Err(e) => Err(failed
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .unwrap_or_else(|| to_py(e))),
    }
}

/// The least noise `x` in [1e-6, 1e9] such that `make_event(x)` is (ε, δ)-DP under the
/// accountant: `make_event` maps the noise to an event repeating one mechanism a fixed number
/// of times (e.g. `lambda s: SelfComposedDpEvent(PoissonSampledDpEvent(q,
/// GaussianDpEvent(s)), steps)`).
///
/// # Privacy
/// The returned noise is the feasible end of the final bracket; its ε is computed again and
/// checked to be at most the target. Every answer seen is checked to be monotone in the noise.
#[pyfunction]
#[pyo3(signature = (make_event, target_epsilon, target_delta, *, accountant = "pld",
    neighboring_relation = None))]
pub(crate) fn calibrate_noise(
    py: Python<'_>,
    make_event: Py<PyAny>,
    target_epsilon: f64,
    target_delta: f64,
    accountant: &str,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
) -> PyResult<Calibration> {
    let rel = neighboring_relation;
    calibrate_with(
        py,
        make_event,
        target_epsilon,
        target_delta,
        accountant,
        rel,
        false,
    )
}

/// The largest sampling rate `q` in [1e-9, 1] such that `make_event(q)` is (ε, δ)-DP under
/// the accountant (as `calibrate_noise`, ε rising with `q`).
///
/// # Privacy
/// As `calibrate_noise`: the feasible end, its ε checked again.
#[pyfunction]
#[pyo3(signature = (make_event, target_epsilon, target_delta, *, accountant = "pld",
    neighboring_relation = None))]
pub(crate) fn calibrate_sampling_rate(
    py: Python<'_>,
    make_event: Py<PyAny>,
    target_epsilon: f64,
    target_delta: f64,
    accountant: &str,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
) -> PyResult<Calibration> {
    let rel = neighboring_relation;
    calibrate_with(
        py,
        make_event,
        target_epsilon,
        target_delta,
        accountant,
        rel,
        true,
    )
}

/// The largest number of steps `T` (up to 2^40) such that `T` applications of `event` (one
/// mechanism) are (ε, δ)-DP under the accountant.
///
/// # Privacy
/// Exponential then binary search; the result's ε is computed again and checked.
#[pyfunction]
#[pyo3(signature = (event, target_epsilon, target_delta, *, accountant = "pld",
    neighboring_relation = None))]
pub(crate) fn calibrate_steps(
    py: Python<'_>,
    event: &Bound<'_, PyAny>,
    target_epsilon: f64,
    target_delta: f64,
    accountant: &str,
    neighboring_relation: Option<&Bound<'_, PyAny>>,
) -> PyResult<Calibration> {
    let kind = kind_of(accountant)?;
    let target = Target::new(target_epsilon, target_delta).map_err(to_py)?;
    let ev = event_of(event)?;
    let (m, count) = single(&ev)?;
    if count != 1 {
        return Err(unsupported(
            "calibrating the steps of a self-composed event (give the single step)".into(),
        ));
    }
    let rel = relation_for(&ev, neighboring_relation)?;
    let c = py
        .detach(move || cal_steps(target, kind, rel, &m))
        .map_err(to_py)?;
    Ok(Calibration {
        value: c.value,
        epsilon: c.epsilon,
    })
}
