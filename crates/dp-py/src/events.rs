//! Privacy events (dp_accounting's `DpEvent` vocabulary) and their translation into
//! dp-accounting's [`Mechanism`]s.

use std::fmt;

use dp_accounting::{Mechanism, Neighbouring, ObjPertParams, PrivacyEvent, Repetitions};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{to_py, unsupported};

/// Mechanisms as `(name, parameters, count)` triples, for Python.
pub(crate) type MechanismRows = Vec<(&'static str, Vec<(&'static str, f64)>, u64)>;

/// The rows of composed mechanisms.
pub(crate) fn rows(parts: &[(Mechanism, u64)]) -> MechanismRows {
    parts
        .iter()
        .map(|(m, c)| (m.name(), m.parameters(), *c))
        .collect()
}

/// What an event describes, with the parameters as given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    Gaussian {
        sigma: f64,
        sensitivity: f64,
    },
    Laplace {
        scale: f64,
        sensitivity: f64,
    },
    PureDp {
        epsilon: f64,
    },
    Zcdp {
        rho: f64,
    },
    GammaBall {
        scale: f64,
        dim: u64,
        sensitivity: f64,
    },
    ObjPert(ObjPertParams),
    Amp {
        params: ObjPertParams,
        tau: f64,
        sigma_out: f64,
    },
    PoissonSampled {
        q: f64,
        inner: Box<Event>,
    },
    SampledWithoutReplacement {
        n: u64,
        batch: u64,
        inner: Box<Event>,
    },
    SelfComposed {
        inner: Box<Event>,
        count: u64,
    },
    Composed(Vec<Event>),
    RepeatAndSelect {
        inner: Box<Event>,
        reps: Repetitions,
    },
    /// A fitted model's whole privacy event tree (dp-accounting's vocabulary), priced by
    /// [`dp_accounting::price_with`].
    Tree(PrivacyEvent),
}

/// The noise multiplier `σ/Δ` of a Gaussian with standard deviation `σ` on a sum of
/// contributions bounded by `Δ`, rounded down (less noise: the safe side) when `Δ ≠ 1`.
fn noise_multiplier(sigma: f64, sensitivity: f64) -> f64 {
    if sensitivity == 1.0 {
        sigma
    } else {
        (sigma / sensitivity).next_down()
    }
}

impl Event {
    /// The mechanisms the event composes, each with its count.
    ///
    /// # Errors
    /// Invalid parameters (dp-accounting's validation), or a nesting dp-accounting has no
    /// analysis for (e.g. Poisson sampling of a composition), as `UnsupportedError`.
    pub(crate) fn parts(&self) -> PyResult<Vec<(Mechanism, u64)>> {
        let one = |m: dp_accounting::Result<Mechanism>| Ok(vec![(m.map_err(to_py)?, 1)]);
        match self {
            Event::Gaussian { sigma, sensitivity } => {
                one(Mechanism::gaussian(*sigma, *sensitivity))
            }
            Event::Laplace { scale, sensitivity } => one(Mechanism::laplace(*scale, *sensitivity)),
            Event::PureDp { epsilon } => one(Mechanism::pure_dp(*epsilon)),
            Event::Zcdp { rho } => one(Mechanism::zcdp(*rho)),
            Event::GammaBall {
                scale,
                dim,
                sensitivity,
            } => one(Mechanism::gamma_ball(*scale, 1.0, *dim, *sensitivity)),
            Event::ObjPert(p) => one(Ok(Mechanism::objective_perturbation(*p))),
            Event::Amp {
                params,
                tau,
                sigma_out,
            } => one(Mechanism::amp(*params, *tau, *sigma_out)),
            Event::PoissonSampled { q, inner } => match inner.as_ref() {
                Event::Gaussian { sigma, sensitivity } => {
                    // Validate the inner event's own parameters first (its names).
                    inner.parts()?;
                    one(Mechanism::subsampled_gaussian(
                        noise_multiplier(*sigma, *sensitivity),
                        *q,
                    ))
                }
                Event::GammaBall {
                    scale,
                    dim,
                    sensitivity,
                } => one(Mechanism::gamma_ball(*scale, *q, *dim, *sensitivity)),
                other => Err(unsupported(format!(
                    "Poisson sampling of {} (dp-accounting analyses Poisson-sampled Gaussian \
                     and Gamma-ball steps)",
                    other.kind()
                ))),
            },
            Event::SampledWithoutReplacement { n, batch, inner } => match inner.as_ref() {
                Event::Gaussian { sigma, sensitivity } => {
                    inner.parts()?;
                    one(Mechanism::subsampled_gaussian_without_replacement(
                        noise_multiplier(*sigma, *sensitivity),
                        *batch,
                        *n,
                    ))
                }
                other => Err(unsupported(format!(
                    "sampling without replacement of {} (dp-accounting analyses a sampled \
                     Gaussian step)",
                    other.kind()
                ))),
            },
            Event::SelfComposed { inner, count } => inner
                .parts()?
                .into_iter()
                .map(|(m, c)| {
                    c.checked_mul(*count).map(|c| (m, c)).ok_or_else(|| {
                        to_py(dp_accounting::Error::OutOfRange(
                            "the composition count overflows u64".into(),
                        ))
                    })
                })
                .collect(),
            Event::Composed(events) => {
                let mut all = Vec::new();
                for e in events {
                    all.extend(e.parts()?);
                }
                Ok(all)
            }
            Event::RepeatAndSelect { .. } => Err(unsupported(
                "a RepeatAndSelectDpEvent inside another event (compose it alone into an \
                 RdpAccountant)"
                    .into(),
            )),
            Event::Tree(_) => Err(unsupported(
                "a model's privacy event tree inside another event (compose it into an \
                 accountant directly)"
                    .into(),
            )),
        }
    }

    /// The relation the event's analysis is natural for: replace-one when some part is
    /// analysed only under it (sampling without replacement), else add/remove.
    pub(crate) fn natural_relation(&self) -> PyResult<Neighbouring> {
        let parts = match self {
            Event::Tree(t) => return Ok(t.neighbouring()),
            Event::RepeatAndSelect { inner, .. } => inner.parts()?,
            _ => self.parts()?,
        };
        Ok(
            if parts
                .iter()
                .all(|(m, _)| m.supports(Neighbouring::AddRemove))
            {
                Neighbouring::AddRemove
            } else {
                Neighbouring::ReplaceOne
            },
        )
    }

    /// A short description of the event's kind, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Event::Gaussian { .. } => "a Gaussian",
            Event::Laplace { .. } => "a Laplace mechanism",
            Event::PureDp { .. } => "a pure-DP mechanism",
            Event::Zcdp { .. } => "a zCDP mechanism",
            Event::GammaBall { .. } => "a Gamma-ball mechanism",
            Event::ObjPert(_) => "objective perturbation",
            Event::Amp { .. } => "approximate minima perturbation",
            Event::PoissonSampled { .. } => "a Poisson-sampled event",
            Event::SampledWithoutReplacement { .. } => "a sampled event",
            Event::SelfComposed { .. } | Event::Composed(_) => "a composition",
            Event::RepeatAndSelect { .. } => "a repeat-and-select event",
            Event::Tree(_) => "a model's privacy event tree",
        }
    }
}

/// The base class of every privacy event.
///
/// An event describes what was released; compose it into an accountant
/// (`PLDAccountant().compose(event)`) or ask `dpglm.accounting.epsilon(event, delta)`.
/// Events are immutable, picklable and validated when constructed (an invalid parameter
/// raises `InvalidParameterError`).
#[pyclass(subclass, frozen, module = "dpglm.accounting", name = "DpEvent")]
pub(crate) struct DpEvent {
    pub(crate) event: Event,
    /// The constructor's arguments, for pickling and `repr`.
    args: Py<PyTuple>,
}

impl DpEvent {
    /// A validated event (its parts computed once, errors raised as Python exceptions).
    fn new(py: Python<'_>, event: Event, args: Vec<Py<PyAny>>) -> PyResult<Self> {
        match &event {
            Event::RepeatAndSelect { inner, .. } => inner.parts().map(drop)?,
            Event::Tree(_) => {} // validated when read
            other => other.parts().map(drop)?,
        }
        Ok(Self {
            event,
            args: PyTuple::new(py, args)?.unbind(),
        })
    }
}

/// The event held by a Python object, which must be a `DpEvent`.
pub(crate) fn event_of(obj: &Bound<'_, PyAny>) -> PyResult<Event> {
    let ev = obj.cast::<DpEvent>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a dpglm.accounting DpEvent, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "an object".into())
        ))
    })?;
    Ok(ev.get().event.clone())
}

#[pymethods]
impl DpEvent {
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, Bound<'py, PyTuple>)> {
        Ok((slf.get_type(), slf.get().args.bind(slf.py()).clone()))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let args: Vec<String> = slf
            .get()
            .args
            .bind(slf.py())
            .iter()
            .map(|a| a.repr().map(|r| r.to_string()))
            .collect::<PyResult<_>>()?;
        Ok(format!("{}({})", slf.get_type().name()?, args.join(", ")))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<DpEvent>()
            .is_ok_and(|o| o.get().event == self.event)
    }

    /// The mechanisms the event composes, as `(name, parameters, count)` triples.
    ///
    /// For a model's event tree: every release in it, depth first, each with its count
    /// within its enclosing node.
    fn mechanisms(&self) -> PyResult<MechanismRows> {
        let parts = match &self.event {
            Event::RepeatAndSelect { inner, .. } => inner.parts()?,
            Event::Tree(t) => t
                .releases()
                .into_iter()
                .map(|r| (r.mechanism, r.count))
                .collect(),
            e => e.parts()?,
        };
        Ok(rows(&parts))
    }

    /// The event as Google's `dp_accounting` objects (that package must be importable), for
    /// a check by an implementation dpglm did not write. Raises `UnsupportedError` naming
    /// the part dp_accounting has no event for (objective perturbation, AMP, shuffling,
    /// Gamma-ball noise, a grid release's rounding slack). With `without_grid_slack=True` a
    /// grid release (dpglm's sampler of Gaussian noise on a grid) converts to its continuous
    /// Gaussian: dp_accounting's price is then a lower reference, which dpglm's must reach.
    #[pyo3(signature = (without_grid_slack = false))]
    fn to_dp_accounting<'py>(
        slf: &Bound<'py, Self>,
        without_grid_slack: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("dpglm.accounting")?
            .getattr("_to_dp_accounting")?
            .call1((slf, without_grid_slack))
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// Builds a subclass instance: the `DpEvent` base carrying `event` and the arguments.
fn base(
    py: Python<'_>,
    event: Event,
    args: Vec<Py<PyAny>>,
) -> PyResult<PyClassInitializer<DpEvent>> {
    Ok(PyClassInitializer::from(DpEvent::new(py, event, args)?))
}

/// Converts arguments to Python objects for the pickled constructor call.
macro_rules! args {
    ($py:expr; $($a:expr),*) => {
        vec![$($a.into_pyobject($py)?.into_any().unbind()),*]
    };
}

/// The Gaussian mechanism: `N(0, σ²)` noise added to a query whose per-record contribution
/// has norm at most `sensitivity`.
///
/// As in dp_accounting, `noise_multiplier` is σ with sensitivity 1. Analysed under both
/// relations (replace-one doubles the sensitivity of a sum).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct GaussianDpEvent;

#[pymethods]
impl GaussianDpEvent {
    #[new]
    #[pyo3(signature = (noise_multiplier, sensitivity = 1.0))]
    fn new(
        py: Python<'_>,
        noise_multiplier: f64,
        sensitivity: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let event = Event::Gaussian {
            sigma: noise_multiplier,
            sensitivity,
        };
        Ok(base(py, event, args!(py; noise_multiplier, sensitivity))?.add_subclass(Self))
    }
}

/// The Laplace mechanism with scale `noise_multiplier` on a query of L1 sensitivity
/// `sensitivity` (both relations).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct LaplaceDpEvent;

#[pymethods]
impl LaplaceDpEvent {
    #[new]
    #[pyo3(signature = (noise_multiplier, sensitivity = 1.0))]
    fn new(
        py: Python<'_>,
        noise_multiplier: f64,
        sensitivity: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let event = Event::Laplace {
            scale: noise_multiplier,
            sensitivity,
        };
        Ok(base(py, event, args!(py; noise_multiplier, sensitivity))?.add_subclass(Self))
    }
}

/// Any ε-DP mechanism (accounted as the randomized-response pair, which dominates every
/// pure ε-DP mechanism) under the accountant's relation.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct PureDpEvent;

#[pymethods]
impl PureDpEvent {
    #[new]
    fn new(py: Python<'_>, epsilon: f64) -> PyResult<PyClassInitializer<Self>> {
        Ok(base(py, Event::PureDp { epsilon }, args!(py; epsilon))?.add_subclass(Self))
    }
}

/// A mechanism known only to be ρ-zCDP (Rényi DP `ε(α) = ρα`) under the accountant's
/// relation. Only the RDP and zCDP accountants analyse it.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct ZCdpDpEvent;

#[pymethods]
impl ZCdpDpEvent {
    #[new]
    fn new(py: Python<'_>, rho: f64) -> PyResult<PyClassInitializer<Self>> {
        Ok(base(py, Event::Zcdp { rho }, args!(py; rho))?.add_subclass(Self))
    }
}

/// One step of noise with density `∝ exp(−‖z‖/scale)` in dimension `dim` (the Gamma-ball
/// mechanism of DP-SGD with pure DP), per-record bound `sensitivity`. Wrap it in
/// `PoissonSampledDpEvent` for a sampled step.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct GammaBallDpEvent;

#[pymethods]
impl GammaBallDpEvent {
    #[new]
    #[pyo3(signature = (scale, dim, sensitivity = 1.0))]
    fn new(
        py: Python<'_>,
        scale: f64,
        dim: u64,
        sensitivity: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let event = Event::GammaBall {
            scale,
            dim,
            sensitivity,
        };
        Ok(base(py, event, args!(py; scale, dim, sensitivity))?.add_subclass(Self))
    }
}

/// Objective perturbation releasing the exact minimiser of
/// `Σ ℓ + (λ/2)‖θ‖² + bᵀθ`, `b ~ N(0, σ²I)`, for losses with gradient norm `≤ lipschitz`
/// and Hessian eigenvalues `≤ beta < lam` (add/remove relation; Redberg, Koskela & Wang,
/// *Improving the privacy and practicality of objective perturbation for differentially
/// private linear learners*).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct ObjectivePerturbationDpEvent;

#[pymethods]
impl ObjectivePerturbationDpEvent {
    #[new]
    fn new(
        py: Python<'_>,
        sigma: f64,
        lam: f64,
        beta: f64,
        lipschitz: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let p = ObjPertParams::new(sigma, lam, beta, lipschitz).map_err(to_py)?;
        Ok(base(
            py,
            Event::ObjPert(p),
            args!(py; sigma, lam, beta, lipschitz),
        )?
        .add_subclass(Self))
    }
}

/// Approximate minima perturbation: objective perturbation solved to gradient norm `≤ tau`,
/// then `N(0, sigma_out²I)` added to the output (add/remove relation; Iyengar et al.,
/// *Towards practical differentially private convex optimization*).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct ApproximateMinimaPerturbationDpEvent;

#[pymethods]
impl ApproximateMinimaPerturbationDpEvent {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        sigma: f64,
        lam: f64,
        beta: f64,
        lipschitz: f64,
        tau: f64,
        sigma_out: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let params = ObjPertParams::new(sigma, lam, beta, lipschitz).map_err(to_py)?;
        let event = Event::Amp {
            params,
            tau,
            sigma_out,
        };
        let args = args!(py; sigma, lam, beta, lipschitz, tau, sigma_out);
        Ok(base(py, event, args)?.add_subclass(Self))
    }
}

/// `event` applied to a batch in which each record is included independently with
/// probability `sampling_probability` (add/remove relation). dp-accounting analyses a
/// sampled `GaussianDpEvent` (a DP-SGD step) and a sampled `GammaBallDpEvent`.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct PoissonSampledDpEvent;

#[pymethods]
impl PoissonSampledDpEvent {
    #[new]
    fn new(
        py: Python<'_>,
        sampling_probability: f64,
        event: &Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let inner = Box::new(event_of(event)?);
        let ev = Event::PoissonSampled {
            q: sampling_probability,
            inner,
        };
        let args = vec![
            sampling_probability.into_pyobject(py)?.into_any().unbind(),
            event.clone().unbind(),
        ];
        Ok(base(py, ev, args)?.add_subclass(Self))
    }
}

/// `event` applied to a batch of `sample_size` records drawn without replacement from
/// `source_dataset_size` (replace-one relation; the RDP accountant analyses a sampled
/// `GaussianDpEvent`).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct SampledWithoutReplacementDpEvent;

#[pymethods]
impl SampledWithoutReplacementDpEvent {
    #[new]
    fn new(
        py: Python<'_>,
        source_dataset_size: u64,
        sample_size: u64,
        event: &Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let ev = Event::SampledWithoutReplacement {
            n: source_dataset_size,
            batch: sample_size,
            inner: Box::new(event_of(event)?),
        };
        let mut args = args!(py; source_dataset_size, sample_size);
        args.push(event.clone().unbind());
        Ok(base(py, ev, args)?.add_subclass(Self))
    }
}

/// `count` independent applications of `event`.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct SelfComposedDpEvent;

#[pymethods]
impl SelfComposedDpEvent {
    #[new]
    fn new(
        py: Python<'_>,
        event: &Bound<'_, PyAny>,
        count: u64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let ev = Event::SelfComposed {
            inner: Box::new(event_of(event)?),
            count,
        };
        let args = vec![
            event.clone().unbind(),
            count.into_pyobject(py)?.into_any().unbind(),
        ];
        Ok(base(py, ev, args)?.add_subclass(Self))
    }
}

/// The composition of a list of events (each applied once, independently).
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct ComposedDpEvent;

#[pymethods]
impl ComposedDpEvent {
    #[new]
    fn new(py: Python<'_>, events: Vec<Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        let inner: Vec<Event> = events.iter().map(event_of).collect::<PyResult<_>>()?;
        let list = pyo3::types::PyList::new(py, &events)?;
        let args = vec![list.into_any().unbind()];
        Ok(base(py, Event::Composed(inner), args)?.add_subclass(Self))
    }
}

/// Runs `event` a random number `K` of times and releases the best run (private
/// hyper-parameter tuning; Papernot & Steinke, *Hyperparameter tuning with Rényi
/// differential privacy*). `shape = inf` (default): `K ~ Poisson(mean)`. A finite shape η
/// (> −1) is the truncated negative binomial `TNB(η, γ)` (η = 1 geometric, η = 0
/// logarithmic): give its `gamma` ∈ (0, 1) and no `mean`. Only the `RdpAccountant` analyses
/// it, composed alone.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct RepeatAndSelectDpEvent;

#[pymethods]
impl RepeatAndSelectDpEvent {
    #[new]
    #[pyo3(signature = (event, mean = None, shape = f64::INFINITY, gamma = None))]
    fn new(
        py: Python<'_>,
        event: &Bound<'_, PyAny>,
        mean: Option<f64>,
        shape: f64,
        gamma: Option<f64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let reps = match (shape == f64::INFINITY, mean, gamma) {
            (true, Some(mean), None) => Repetitions::Poisson { mean },
            (false, None, Some(gamma)) => {
                Repetitions::TruncatedNegativeBinomial { eta: shape, gamma }
            }
            (true, _, _) => {
                return Err(crate::errors::invalid(
                    "RepeatAndSelectDpEvent with shape = inf (Poisson) takes mean and no gamma",
                ));
            }
            (false, _, _) => {
                return Err(crate::errors::invalid(
                    "RepeatAndSelectDpEvent with a finite shape (truncated negative binomial) \
                     takes gamma and no mean",
                ));
            }
        };
        reps.mean().map_err(to_py)?;
        let ev = Event::RepeatAndSelect {
            inner: Box::new(event_of(event)?),
            reps,
        };
        let mut args = vec![event.clone().unbind()];
        args.extend(args!(py; mean, shape, gamma));
        Ok(base(py, ev, args)?.add_subclass(Self))
    }
}

/// A fitted model's whole privacy event tree (`model.privacy_event_`): compose it into an
/// accountant with other events under the same relation, or ask `epsilon(event, delta)`.
///
/// Built from the tree's JSON as a model file stores it (`{"neighbouring": ..., "event":
/// ...}`), every mechanism rebuilt through its validating constructor. Accountants price it
/// with dp-accounting's event pricing (the model's own reported ε at its δ and accountant);
/// only `get_epsilon` answers for a composition holding one.
#[pyclass(extends = DpEvent, frozen, module = "dpglm.accounting")]
pub(crate) struct ModelDpEvent;

#[pymethods]
impl ModelDpEvent {
    #[new]
    fn new(py: Python<'_>, tree_json: &str) -> PyResult<PyClassInitializer<Self>> {
        let stored: dp_glm::StoredEvent = serde_json::from_str(tree_json)
            .map_err(|e| crate::errors::invalid(&format!("not a valid privacy event tree: {e}")))?;
        let ev = Event::Tree(stored.0);
        Ok(base(py, ev, args!(py; tree_json))?.add_subclass(Self))
    }

    /// The tree's neighbouring relation (`"add-remove"` or `"replace-one"`).
    #[getter]
    fn neighbouring(slf: &Bound<'_, Self>) -> &'static str {
        match &slf.as_super().get().event {
            Event::Tree(t) => t.neighbouring().as_str(),
            _ => "",
        }
    }

    /// The tree's JSON, as the model file stores it.
    fn to_json(slf: &Bound<'_, Self>) -> PyResult<String> {
        match &slf.as_super().get().event {
            Event::Tree(t) => serde_json::to_string(&dp_glm::StoredEvent(t.clone()))
                .map_err(|e| crate::errors::invalid(&e.to_string())),
            _ => Err(crate::errors::invalid("not a tree")),
        }
    }
}
