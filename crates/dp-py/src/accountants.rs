//! The accountants: events composed into them, ε(δ) and δ(ε) asked of them.
//!
//! dp-accounting's accountants cache their work in cells and so cannot cross threads; a
//! Python accountant therefore keeps the composed mechanisms (plain data) and builds the
//! Rust accountant afresh, with the GIL released, for each question.

use dp_accounting::{
    Accountant, AccountantKind, Mechanism, Neighbouring, PldConfig, PrivacyEvent, RdpAccountant,
    Repetitions, price_with, tuned,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple, PyType};

use crate::errors::{to_py, unsupported};
use crate::events::{Event, MechanismRows, event_of, rows};

/// An RDP curve for Python: `(orders, epsilons)`.
type Curve<'py> = (
    Bound<'py, numpy::PyArray1<f64>>,
    Bound<'py, numpy::PyArray1<f64>>,
);

/// The neighbouring relation of a guarantee (dp_accounting's `NeighboringRelation`).
///
/// `ADD_OR_REMOVE_ONE`: datasets differ by one record added or removed. `REPLACE_ONE`: one
/// record replaced by another (a sum's sensitivity doubles). Anywhere a relation is taken,
/// the strings `"add-remove"` and `"replace-one"` are accepted too.
#[pyclass(eq, eq_int, frozen, module = "dpglm.accounting")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NeighboringRelation {
    /// Add or remove one record.
    #[pyo3(name = "ADD_OR_REMOVE_ONE")]
    AddOrRemoveOne,
    /// Replace one record.
    #[pyo3(name = "REPLACE_ONE")]
    ReplaceOne,
}

impl From<NeighboringRelation> for Neighbouring {
    fn from(r: NeighboringRelation) -> Self {
        match r {
            NeighboringRelation::AddOrRemoveOne => Neighbouring::AddRemove,
            NeighboringRelation::ReplaceOne => Neighbouring::ReplaceOne,
        }
    }
}

impl From<Neighbouring> for NeighboringRelation {
    fn from(r: Neighbouring) -> Self {
        match r {
            Neighbouring::AddRemove => NeighboringRelation::AddOrRemoveOne,
            Neighbouring::ReplaceOne => NeighboringRelation::ReplaceOne,
        }
    }
}

/// A relation given as a `NeighboringRelation` or its string name.
pub(crate) fn relation_of(obj: &Bound<'_, PyAny>) -> PyResult<Neighbouring> {
    if let Ok(r) = obj.cast::<NeighboringRelation>() {
        return Ok((*r.get()).into());
    }
    let s: String = obj.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "neighboring_relation must be a NeighboringRelation or \"add-remove\" / \"replace-one\"",
        )
    })?;
    s.parse::<Neighbouring>()
        .map_err(crate::errors::InvalidParameterError::new_err)
}

/// An accountant name (`"pld"`, `"rdp"`, `"zcdp"`, `"exact"`).
pub(crate) fn kind_of(name: &str) -> PyResult<AccountantKind> {
    name.parse::<AccountantKind>()
        .map_err(crate::errors::InvalidParameterError::new_err)
}

/// Everything needed to build an accountant and compose into it: plain data that crosses
/// threads.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) kind: AccountantKind,
    pub(crate) rel: Neighbouring,
    pub(crate) pld: PldConfig,
    /// RDP orders (`None`: dp-accounting's default grid).
    pub(crate) orders: Option<Vec<f64>>,
    pub(crate) parts: Vec<(Mechanism, u64)>,
    /// A repeat-and-select of the composition (RDP only).
    pub(crate) reps: Option<Repetitions>,
    /// Models' event trees composed after the parts (each with its count).
    pub(crate) trees: Vec<dp_accounting::Event>,
}

impl Spec {
    /// An empty composition.
    pub(crate) fn new(kind: AccountantKind, rel: Neighbouring) -> Self {
        Self {
            kind,
            rel,
            pld: PldConfig::default(),
            orders: None,
            parts: Vec::new(),
            reps: None,
            trees: Vec::new(),
        }
    }

    /// Builds the accountant, composes the parts and gives it to `f`.
    pub(crate) fn run<T>(
        &self,
        f: impl FnOnce(&dyn Accountant) -> dp_accounting::Result<T>,
    ) -> dp_accounting::Result<T> {
        if !self.trees.is_empty() {
            return Err(dp_accounting::Error::Unsupported {
                accountant: self.kind.as_str(),
                what: "this question of a composition holding a model's event tree (only \
                       get_epsilon answers for it)"
                    .into(),
            });
        }
        if self.kind == AccountantKind::Rdp {
            f(&self.rdp()?)
        } else {
            let mut acc = self.kind.build_with(self.rel, self.pld);
            for (m, c) in &self.parts {
                acc.compose(m, *c)?;
            }
            f(acc.as_ref())
        }
    }

    /// The RDP accountant on the orders with the parts composed (tuned by the
    /// repeat-and-select, if any).
    fn rdp(&self) -> dp_accounting::Result<RdpAccountant> {
        let mut rdp = match &self.orders {
            Some(o) => RdpAccountant::with_orders(self.rel, o.clone())?,
            None => RdpAccountant::new(self.rel),
        };
        for (m, c) in &self.parts {
            rdp.compose(m, *c)?;
        }
        match self.reps {
            Some(reps) => tuned(&rdp, reps),
            None => Ok(rdp),
        }
    }

    /// ε at `delta` of the composition: the accountant's answer, or, when it holds models'
    /// event trees, [`dp_accounting::price_with`] on the parts and trees composed (RDP on
    /// dp-accounting's default orders).
    ///
    /// # Privacy
    /// An upper bound, rounded up, under the accountant's relation.
    pub(crate) fn epsilon(&self, delta: f64) -> dp_accounting::Result<f64> {
        if self.trees.is_empty() {
            return self.run(|a| a.epsilon(delta));
        }
        let mut nodes: Vec<dp_accounting::Event> = self
            .parts
            .iter()
            .map(|(m, c)| dp_accounting::Event::release(m.clone(), *c, "composed"))
            .collect();
        nodes.extend(self.trees.iter().cloned());
        let tree = PrivacyEvent::new(self.rel, dp_accounting::Event::Composed(nodes))?;
        Ok(price_with(&tree, self.kind, self.pld, delta)?.epsilon)
    }

    /// Adds `count` applications of `event` (a repeat-and-select only to an empty RDP
    /// composition, once; a model's tree only under its own relation).
    pub(crate) fn add(&mut self, event: &Event, count: u64) -> PyResult<()> {
        if self.reps.is_some() {
            return Err(unsupported(
                "composing after a RepeatAndSelectDpEvent (its guarantee covers only the \
                 tuned runs)"
                    .into(),
            ));
        }
        match event {
            Event::Tree(t) => {
                if t.neighbouring() != self.rel {
                    return Err(unsupported(format!(
                        "a model's event tree stated under {} in an accountant under {} \
                         (neighbouring relations must not be mixed)",
                        t.neighbouring(),
                        self.rel
                    )));
                }
                let root = t.root().clone();
                self.trees.push(if count == 1 {
                    root
                } else {
                    dp_accounting::Event::SelfComposed {
                        event: Box::new(root),
                        count,
                    }
                });
            }
            Event::RepeatAndSelect { inner, reps } => {
                if self.kind != AccountantKind::Rdp
                    || !self.parts.is_empty()
                    || !self.trees.is_empty()
                    || count != 1
                {
                    return Err(unsupported(
                        "a RepeatAndSelectDpEvent except composed once, alone, into an \
                         RdpAccountant"
                            .into(),
                    ));
                }
                self.parts = inner.parts()?;
                self.reps = Some(*reps);
            }
            e => {
                let overflow = || {
                    to_py(dp_accounting::Error::OutOfRange(
                        "the composition count overflows u64".into(),
                    ))
                };
                for (m, c) in e.parts()? {
                    let c = c.checked_mul(count).ok_or_else(overflow)?;
                    // Repeats of one mechanism (composing step by step) merge into one part.
                    match self.parts.iter_mut().find(|(p, _)| *p == m) {
                        Some((_, n)) => *n = n.checked_add(c).ok_or_else(overflow)?,
                        None => self.parts.push((m, c)),
                    }
                }
            }
        }
        Ok(())
    }
}

/// The base class of the accountants: compose events, then ask ε(δ) or δ(ε).
///
/// Every answer is an upper bound on the composition's privacy loss under the accountant's
/// neighbouring relation, rounded up; a question the accountant cannot answer raises a
/// `DPGLMError` rather than returning a number it cannot vouch for. The GIL is released
/// while an answer is computed.
#[pyclass(subclass, module = "dpglm.accounting")]
pub(crate) struct PrivacyAccountant {
    spec: Spec,
    /// The composed events with their counts (for pickling and `events`).
    events: Vec<(Py<PyAny>, u64)>,
}

impl PrivacyAccountant {
    fn with_spec(spec: Spec) -> Self {
        Self {
            spec,
            events: Vec::new(),
        }
    }

    /// The constructor's arguments (for pickling).
    fn ctor_args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rel = self.spec.rel.as_str().into_pyobject(py)?.into_any();
        match self.spec.kind {
            AccountantKind::Pld => {
                let c = self.spec.pld;
                (
                    rel,
                    c.discretisation,
                    c.epsilon_error,
                    c.tail_mass,
                    c.max_grid,
                )
                    .into_pyobject(py)
            }
            AccountantKind::Rdp => (self.spec.orders.clone(), rel).into_pyobject(py),
            AccountantKind::Zcdp | AccountantKind::Exact => (rel,).into_pyobject(py),
        }
    }

    /// Runs `f` on the built accountant with the GIL released.
    fn ask<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn Accountant) -> dp_accounting::Result<T> + Send,
    ) -> PyResult<T> {
        let spec = self.spec.clone();
        py.detach(move || spec.run(f)).map_err(to_py)
    }
}

#[pymethods]
impl PrivacyAccountant {
    /// Adds `count` independent applications of `event` and returns the accountant (so
    /// calls chain: `PLDAccountant().compose(event).get_epsilon(1e-5)`).
    ///
    /// Raises `UnsupportedError` when the accountant cannot analyse the event under its
    /// relation (the accountant is then unchanged), `TypeError` for a non-event.
    #[pyo3(signature = (event, count = 1))]
    fn compose<'py>(
        slf: Bound<'py, Self>,
        event: &Bound<'py, PyAny>,
        count: u64,
    ) -> PyResult<Bound<'py, Self>> {
        let ev = event_of(event)?;
        let py = slf.py();
        {
            let mut this = slf.borrow_mut();
            let mut next = this.spec.clone();
            next.add(&ev, count)?;
            // Check that the accountant analyses the new event (relation, kind) on its own:
            // composing step by step stays linear in the number of steps.
            let mut probe = Spec {
                parts: Vec::new(),
                reps: None,
                trees: Vec::new(),
                ..this.spec.clone()
            };
            probe.add(&ev, 1)?;
            // Mechanisms already composed were checked then.
            probe
                .parts
                .retain(|(m, _)| !this.spec.parts.iter().any(|(p, _)| p == m));
            if !probe.parts.is_empty() || probe.reps.is_some() {
                py.detach(move || probe.run(|_| Ok(()))).map_err(to_py)?;
            }
            this.spec = next;
            this.events.push((event.clone().unbind(), count));
        }
        Ok(slf)
    }

    /// Whether the accountant can analyse `event` under its relation.
    fn supports(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<bool> {
        let ev = event_of(event)?;
        let mut next = Spec {
            parts: Vec::new(),
            reps: None,
            trees: Vec::new(),
            ..self.spec.clone()
        };
        if self.spec.clone().add(&ev, 1).is_err() || next.add(&ev, 1).is_err() {
            return Ok(false);
        }
        // A tree is checked by pricing it (at a typical δ: its analyses do not depend on δ).
        Ok(py
            .detach(move || match next.trees.is_empty() {
                true => next.run(|_| Ok(())),
                false => next.epsilon(1e-5).map(drop),
            })
            .is_ok())
    }

    /// The smallest ε such that the composition is (ε, δ)-DP, rounded up.
    ///
    /// Raises `InvalidParameterError` for δ ∉ (0, 1), `OutOfRangeError` when δ is below
    /// what the accountant resolves.
    fn get_epsilon(&self, py: Python<'_>, target_delta: f64) -> PyResult<f64> {
        let spec = self.spec.clone();
        py.detach(move || spec.epsilon(target_delta)).map_err(to_py)
    }

    /// δ(ε) of the composition, rounded up.
    fn get_delta(&self, py: Python<'_>, target_epsilon: f64) -> PyResult<f64> {
        self.ask(py, move |a| a.delta(target_epsilon))
    }

    /// An optimistic (lower) estimate of ε(δ) where the accountant has one (the PLD
    /// accountant's rounded-down grid), else `None`. Not a privacy guarantee: it shows how
    /// tight `get_epsilon` is.
    fn get_epsilon_lower(&self, py: Python<'_>, target_delta: f64) -> PyResult<Option<f64>> {
        self.ask(py, move |a| a.epsilon_optimistic(target_delta))
    }

    /// How the answer ε(δ) is computed (the PLD grid and its error estimate, the RDP order),
    /// as a dict.
    fn notes(&self, py: Python<'_>, target_delta: f64) -> PyResult<Py<PyAny>> {
        let notes = self.ask(py, move |a| {
            a.epsilon(target_delta)?;
            Ok(a.notes())
        })?;
        crate::functions::notes_dict(py, &notes)
    }

    /// The accountant's name (`"pld"`, `"rdp"`, `"zcdp"`, `"exact"`).
    #[getter]
    fn name(&self) -> &'static str {
        self.spec.kind.as_str()
    }

    /// The neighbouring relation of every answer.
    #[getter]
    fn neighboring_relation(&self) -> NeighboringRelation {
        self.spec.rel.into()
    }

    /// The composed events, as `(event, count)` pairs in the order composed.
    #[getter]
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.events
                .iter()
                .map(|(e, c)| (e.clone_ref(py), *c))
                .collect::<Vec<_>>(),
        )
    }

    /// The composed mechanisms as `(name, parameters, count)` triples.
    fn mechanisms(&self) -> MechanismRows {
        rows(&self.spec.parts)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>, Bound<'py, PyList>)> {
        let py = slf.py();
        let this = slf.borrow();
        Ok((slf.get_type(), this.ctor_args(py)?, this.events(py)?))
    }

    fn __setstate__(slf: Bound<'_, Self>, state: Vec<(Bound<'_, PyAny>, u64)>) -> PyResult<()> {
        let mut acc = slf;
        for (e, c) in state {
            acc = Self::compose(acc, &e, c)?;
        }
        Ok(())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.borrow();
        Ok(format!(
            "{}(neighboring_relation={}, {} composed events)",
            slf.get_type().name()?,
            this.spec.rel,
            this.events.len()
        ))
    }
}

/// The privacy-loss-distribution accountant (connect-the-dots discretisation, FFT
/// composition): the tightest general method.
///
/// `value_discretization_interval` is the coarsest grid width of privacy-loss values
/// (default 2e-4); with `epsilon_error` set (default 1e-3, relative) the grid is refined until
/// the estimated discretisation error of ε meets it (`None`: keep the width). `tail_mass` is
/// added to δ; `max_grid` bounds the grid size (memory).
///
/// # Privacy
/// Pessimistic connect-the-dots PLDs (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi,
/// *Connect the dots: tighter discrete approximations of privacy loss distributions*);
/// Gaussian compositions in closed form (Balle & Wang, *Improving the Gaussian mechanism for
/// differential privacy*).
#[pyclass(extends = PrivacyAccountant, module = "dpglm.accounting")]
pub(crate) struct PLDAccountant;

#[pymethods]
impl PLDAccountant {
    #[new]
    #[pyo3(signature = (
        neighboring_relation = None,
        value_discretization_interval = 2e-4,
        epsilon_error = Some(1e-3),
        tail_mass = 1e-15,
        max_grid = 1 << 22,
    ), text_signature = "(neighboring_relation=None, value_discretization_interval=2e-4, \
        epsilon_error=1e-3, tail_mass=1e-15, max_grid=4194304)")]
    fn new(
        neighboring_relation: Option<&Bound<'_, PyAny>>,
        value_discretization_interval: f64,
        epsilon_error: Option<f64>,
        tail_mass: f64,
        max_grid: usize,
    ) -> PyResult<PyClassInitializer<Self>> {
        let mut spec = Spec::new(
            AccountantKind::Pld,
            relation_or_default(neighboring_relation)?,
        );
        spec.pld = pld_config(
            value_discretization_interval,
            tail_mass,
            max_grid,
            epsilon_error,
        )?;
        Ok(PyClassInitializer::from(PrivacyAccountant::with_spec(spec)).add_subclass(Self))
    }
}

/// The PLD settings, validated now (issue 32: a zero width was accepted and failed only at the
/// first question), with a refusal naming the Python argument.
pub(crate) fn pld_config(
    value_discretization_interval: f64,
    tail_mass: f64,
    max_grid: usize,
    epsilon_error: Option<f64>,
) -> PyResult<PldConfig> {
    PldConfig::new(
        value_discretization_interval,
        tail_mass,
        max_grid,
        epsilon_error,
    )
    .map_err(|e| match e {
        dp_accounting::Error::InvalidParameter {
            name: "discretisation",
            value,
            reason,
        } => to_py(dp_accounting::Error::InvalidParameter {
            name: "value_discretization_interval",
            value,
            reason,
        }),
        other => to_py(other),
    })
}

/// The Rényi-DP accountant over a grid of orders (default: dp-accounting's grid), converted
/// to (ε, δ) with the best of three conversions. The only accountant for sampling without
/// replacement and for `RepeatAndSelectDpEvent`.
///
/// # Privacy
/// Mironov, *Rényi differential privacy*; Mironov, Talwar & Zhang, *Rényi differential
/// privacy of the sampled Gaussian mechanism*; Wang, Balle & Kasiviswanathan, *Subsampled
/// Rényi differential privacy and analytical moments accountant*; conversion by Balle et al.,
/// *Hypothesis testing interpretations and Rényi differential privacy*.
#[pyclass(extends = PrivacyAccountant, module = "dpglm.accounting", name = "RdpAccountant")]
pub(crate) struct PyRdpAccountant;

#[pymethods]
impl PyRdpAccountant {
    #[new]
    #[pyo3(signature = (orders = None, neighboring_relation = None))]
    fn new(
        orders: Option<Vec<f64>>,
        neighboring_relation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let rel = relation_or_default(neighboring_relation)?;
        if let Some(o) = &orders {
            RdpAccountant::with_orders(rel, o.clone()).map_err(to_py)?;
        }
        let mut spec = Spec::new(AccountantKind::Rdp, rel);
        spec.orders = orders;
        Ok(PyClassInitializer::from(PrivacyAccountant::with_spec(spec)).add_subclass(Self))
    }

    /// The composed RDP curve as two numpy arrays `(orders, epsilons)` (+inf where an order
    /// could not be computed). With a `RepeatAndSelectDpEvent`, the tuned curve.
    ///
    /// # Privacy
    /// Upper bounds on the composition's Rényi divergences at each order.
    fn get_rdp_curve<'py>(slf: PyRef<'py, Self>, py: Python<'py>) -> PyResult<Curve<'py>> {
        let spec = slf.as_super().spec.clone();
        let (orders, curve) = py
            .detach(move || {
                let rdp = spec.rdp()?;
                Ok((rdp.orders().to_vec(), rdp.curve().to_vec()))
            })
            .map_err(to_py)?;
        Ok((
            numpy::PyArray1::from_vec(py, orders),
            numpy::PyArray1::from_vec(py, curve),
        ))
    }
}

/// The zero-concentrated-DP accountant (Bun & Steinke, *Concentrated differential privacy:
/// simplifications, extensions, and lower bounds*): Gaussian and zCDP events.
#[pyclass(extends = PrivacyAccountant, module = "dpglm.accounting")]
pub(crate) struct ZCdpAccountant;

#[pymethods]
impl ZCdpAccountant {
    #[new]
    #[pyo3(signature = (neighboring_relation = None))]
    fn new(neighboring_relation: Option<&Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        Ok(empty(AccountantKind::Zcdp, neighboring_relation)?.add_subclass(Self))
    }
}

/// Closed forms where they are tight: compositions of Gaussians (Balle & Wang, *Improving the
/// Gaussian mechanism for differential privacy*, Thm 8) and one objective perturbation.
#[pyclass(extends = PrivacyAccountant, module = "dpglm.accounting")]
pub(crate) struct ExactAccountant;

#[pymethods]
impl ExactAccountant {
    #[new]
    #[pyo3(signature = (neighboring_relation = None))]
    fn new(neighboring_relation: Option<&Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        Ok(empty(AccountantKind::Exact, neighboring_relation)?.add_subclass(Self))
    }
}

/// An empty accountant of `kind` under the given relation (or add/remove), default settings.
fn empty(
    kind: AccountantKind,
    rel: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyClassInitializer<PrivacyAccountant>> {
    let spec = Spec::new(kind, relation_or_default(rel)?);
    Ok(PyClassInitializer::from(PrivacyAccountant::with_spec(spec)))
}

/// The given relation, or add/remove (dp_accounting's default).
fn relation_or_default(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Neighbouring> {
    obj.map_or(Ok(Neighbouring::AddRemove), relation_of)
}
