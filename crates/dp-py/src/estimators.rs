//! The native side of `dpglm.LogisticRegression` and `dpglm.LinearRegression`: the learner
//! registry ([`dp_glm::catalog`]) described to Python, one fit through
//! [`dp_glm::frontdoor::ArrayFit`] (the CLI's pipeline: scaling, unit-norm rows, bias, bounds
//! given or estimated) with the GIL released — float32 rows kept in `f32` storage and sparse
//! rows kept sparse where the fit allows ([`ArrayFit::fit_f32`], [`ArrayFit::fit_sparse`]; the
//! choice in [`crate::unscaled`]) — and the fitted
//! [`LinearModel`] (scoring, its `dpglm-model/3` JSON for pickling).

use dp_glm::LinearModel;
use dp_glm::catalog::{self, CatalogError, Kind, Params, Value};
use dp_glm::frontdoor::{self, ArrayFit, Scaling, public_ranges};
use dp_glm::scaling::{ScalingMethod, ScalingPlan};
use dp_glm::shared_budget::Plan;
use dp_glm::sparse::SparseDataset;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::budget::{Budget, Charged, budget_err, charged};
use crate::errors::{invalid, invalid_input};
use crate::rows::Rows;
use crate::unscaled;

/// The Python exception for a catalog error: input errors (shapes, non-finite values,
/// labels, empty data) as `InvalidInputError` (a `ValueError`), the rest as
/// `InvalidParameterError`, with the message naming parameters as Python keywords.
fn catalog_err(py: Python<'_>, e: CatalogError) -> PyErr {
    use dp_glm::Error as E;
    match e {
        CatalogError::Fit(
            e @ (E::ShapeMismatch { .. }
            | E::NonFinite { .. }
            | E::LabelOutOfDomain { .. }
            | E::EmptyData { .. }
            | E::MalformedSparse { .. }),
        ) => invalid_input(py, e.to_string()),
        CatalogError::Fit(E::Accounting(e)) => crate::errors::to_py(e),
        e => invalid(&e.message(&keyword).unwrap_or_else(|| e.to_string())),
    }
}

/// A catalog parameter's Python keyword (`lambda` is a Python keyword: `lambda_`).
fn keyword(name: &str) -> String {
    if name == "lambda" {
        "lambda_".into()
    } else {
        name.into()
    }
}

/// The learners of [`catalog::LEARNERS`] described for Python: for each, its name, doc, the
/// losses it fits (`"any"` or `"squared"`), whether it fits sparse rows
/// ([`catalog::Learner::fits_sparse`]) and its parameters (`name`, `kind`, `default`,
/// `doc`; [`catalog::COMMON`] included), as dicts.
#[pyfunction]
pub(crate) fn learners(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for l in catalog::LEARNERS {
        let params = PyList::empty(py);
        for p in l.params.iter().chain(catalog::COMMON) {
            let d = PyDict::new(py);
            d.set_item("name", keyword(p.name))?;
            d.set_item("kind", p.kind.describe())?;
            d.set_item("default", p.default)?;
            d.set_item("doc", p.doc)?;
            params.append(d)?;
        }
        let d = PyDict::new(py);
        d.set_item("name", l.name)?;
        d.set_item("doc", l.doc)?;
        let squared = l.losses == catalog::Losses::Squared;
        d.set_item("losses", if squared { "squared" } else { "any" })?;
        d.set_item("sparse", l.fits_sparse())?;
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The catalog parameters from Python keyword arguments (`None` values left out), each
/// converted to its declared kind; a name the learner does not use is kept so that
/// [`catalog::Learner::check`] refuses it by name.
fn params_of(learner: &catalog::Learner, given: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut params = Params::new();
    for (k, v) in given.iter() {
        if v.is_none() {
            continue;
        }
        let key: String = k.extract()?;
        let name = if key == "lambda_" { "lambda" } else { &key };
        let wrong = |_| {
            invalid(&format!(
                "`{key}` must be a {}, not {}",
                learner
                    .param(name)
                    .map_or(String::new(), |p| p.kind.describe()),
                v.repr()
                    .map_or_else(|_| "this value".into(), |r| r.to_string())
            ))
        };
        let value = match learner.param(name).map(|p| p.kind) {
            Some(Kind::Real) => Value::Real(v.extract().map_err(wrong)?),
            Some(Kind::Count) => Value::Count(v.extract().map_err(wrong)?),
            Some(Kind::Choice(_)) => Value::Choice(v.extract().map_err(wrong)?),
            Some(Kind::RealList) => Value::RealList(v.extract().map_err(wrong)?),
            // Not the learner's: refused by `check`, naming it.
            _ => Value::Choice(String::new()),
        };
        params.set(name, value);
    }
    Ok(params)
}

/// The scaling asked for: `"auto"`, `"none"`, `"minmax"` or `"standard"`, with public
/// per-feature `(min, max)` ranges (then min–max, every feature public).
fn scaling_of(scale: &str, ranges: Option<Vec<(f64, f64)>>, d: usize) -> PyResult<Scaling> {
    let method = match scale {
        "auto" | "minmax" => ScalingMethod::MinMax,
        "standard" => ScalingMethod::Standard,
        "none" if ranges.is_none() => return Ok(Scaling::None),
        "none" => {
            return Err(invalid(
                "scale='none' with feature_ranges (they would be ignored): remove them or \
                 choose scale='minmax'",
            ));
        }
        other => {
            return Err(invalid(&format!(
                "`scale` must be one of auto|none|minmax|standard, not {other:?}"
            )));
        }
    };
    match ranges {
        Some(r) if r.len() != d => Err(invalid(&format!(
            "feature_ranges has {} (min, max) pairs for {d} features",
            r.len()
        ))),
        Some(r) if method == ScalingMethod::Standard => Err(invalid(&format!(
            "feature_ranges ({} pairs) are min-max ranges: use scale='minmax' or 'auto'",
            r.len()
        ))),
        Some(r) => Ok(Scaling::Plan(ScalingPlan {
            method,
            public: public_ranges(&r),
        })),
        None if scale == "auto" => Ok(Scaling::Auto),
        None => Ok(Scaling::Plan(ScalingPlan {
            method,
            public: vec![None; d],
        })),
    }
}

/// A fitted model: [`LinearModel`] with its preprocessing; scores raw rows.
#[pyclass(frozen, module = "dpglm._dpglm")]
pub(crate) struct Model {
    inner: LinearModel,
}

/// The result of [`fit`]: the model, the privacy statement's text and warnings.
type Fitted = (Model, String, bool, Vec<String>);

/// Fits `algorithm` on rows `x` and labels `y` (±1 for classification) through
/// [`ArrayFit::fit`], with the GIL released: float64 rows read in place; float32 rows in `f32`
/// storage when the fit keeps their values ([`unscaled::keeps_f32`], [`ArrayFit::fit_f32`]),
/// else widened; CSR rows
/// kept sparse when the learner has a sparse path and no feature scaling is asked
/// (`scale="auto"` is none for them), else densified with a warning saying why. Returns the
/// model, the statement, whether it is a private release, and warnings.
#[pyfunction]
#[pyo3(signature = (x, y, *, algorithm, loss, epsilon, delta, params, scale, feature_ranges,
    unit_norm, bias, bounds_budget, random_state, feature_names, classes, budget = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit(
    py: Python<'_>,
    x: Rows<'_>,
    y: PyReadonlyArray1<'_, f64>,
    algorithm: &str,
    loss: &str,
    epsilon: f64,
    delta: f64,
    params: &Bound<'_, PyDict>,
    scale: &str,
    feature_ranges: Option<Vec<(f64, f64)>>,
    unit_norm: Option<bool>,
    bias: Option<f64>,
    bounds_budget: Option<f64>,
    random_state: Option<u64>,
    feature_names: Option<Vec<String>>,
    classes: Option<(String, String)>,
    budget: Option<Bound<'_, Budget>>,
) -> PyResult<Fitted> {
    let learner = catalog::learner(algorithm).map_err(|e| catalog_err(py, e))?;
    let loss = catalog::loss(loss, None).map_err(|e| catalog_err(py, e))?;
    let params = params_of(learner, params)?;
    // Sparse rows are not scaled by default (min-max would make them dense), as `dpglm
    // train` on a LIBSVM file.
    let ranges = feature_ranges.is_some();
    let scale = match (&x, scale) {
        (Rows::Csr(_), "auto") if !ranges => "none",
        _ => scale,
    };
    let scaling = scaling_of(scale, feature_ranges, x.n_features())?;
    let y = y.as_array().to_owned();
    let run = ArrayFit {
        learner,
        loss,
        epsilon,
        delta,
        params: &params,
        scaling,
        unit_norm,
        bias,
        bounds_budget,
        seed: random_state,
        classes,
    };
    let names = feature_names;
    let mut warnings = Vec::new();
    // A budget admits the fit from its public target before it touches the rows.
    let shared = budget.map(|b| b.get().inner.clone());
    let plan = Plan {
        epsilon,
        delta,
        neighbouring: learner
            .relation(loss, &params)
            .map_err(|e| catalog_err(py, e))?,
    };
    let label = format!("{algorithm} (Python)");
    let b = shared.as_ref();
    let spent = |f: &frontdoor::Fitted| {
        let report = f.model.privacy();
        (report.event.clone(), report.accountant)
    };
    let fitted = match x {
        Rows::F64(a) => {
            let x = a.as_array();
            py.detach(|| charged(b, &plan, &label, || run.fit(x, y, names), spent))
        }
        Rows::F32(a) if unscaled::keeps_f32(&run) => {
            let x = a.as_array();
            py.detach(|| charged(b, &plan, &label, || run.fit_f32(x, y, names), spent))
        }
        Rows::F32(a) => {
            let x = a.as_array().mapv(f64::from);
            py.detach(|| charged(b, &plan, &label, || run.fit(x.view(), y, names), spent))
        }
        Rows::Csr(c) => {
            let csr = c
                .with_labels(y.to_vec())
                .map_err(|e| catalog_err(py, e.into()))?;
            let asked = if ranges {
                "feature_ranges".to_string()
            } else {
                format!("scale='{scale}'")
            };
            match unscaled::densified(&run, &asked) {
                None => {
                    py.detach(|| charged(b, &plan, &label, || run.fit_sparse(csr, names), spent))
                }
                Some(why) => {
                    warnings.push(why);
                    let dense = SparseDataset::new(csr)
                        .and_then(|rows| rows.to_dense())
                        .map_err(|e| catalog_err(py, e.into()))?;
                    py.detach(|| {
                        charged(
                            b,
                            &plan,
                            &label,
                            || run.fit(dense.x().view(), y, names),
                            spent,
                        )
                    })
                }
            }
        }
    };
    let fitted = fitted.map_err(|e| match e {
        Charged::Fit(e) => catalog_err(py, e),
        Charged::Budget(e) => budget_err(e),
    })?;
    let private = fitted.statement.is_private_release();
    warnings.extend(fitted.warnings);
    Ok((
        Model {
            inner: fitted.model,
        },
        fitted.statement.text(),
        private,
        warnings,
    ))
}

#[pymethods]
impl Model {
    /// `⟨w, φ(x)⟩ + b` for each raw row (the model's preprocessing `φ` applied; sparse rows
    /// scored with sparse dot products).
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: Rows<'_>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let out = x
            .decision_function(&self.inner)
            .map_err(|e| catalog_err(py, e.into()))?;
        Ok(out.into_pyarray(py))
    }

    /// The probability of the positive class for each raw row (logistic loss only; `None`
    /// otherwise).
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: Rows<'_>,
    ) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
        let loss = self.inner.loss();
        if dp_glm::positive_probability(loss, 0.0).is_none() {
            return Ok(None);
        }
        let z = x
            .decision_function(&self.inner)
            .map_err(|e| catalog_err(py, e.into()))?;
        let p: Vec<f64> = z
            .iter()
            .filter_map(|&z| dp_glm::positive_probability(loss, z))
            .collect();
        Ok(Some(p.into_pyarray(py)))
    }

    /// The coefficients on the raw features' preprocessed values (a bias feature's last).
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.coef().to_owned().into_pyarray(py)
    }

    /// The intercept.
    #[getter]
    fn intercept(&self) -> f64 {
        self.inner.intercept()
    }

    /// The number of raw features.
    #[getter]
    fn n_features_in(&self) -> usize {
        self.inner.n_features_in()
    }

    /// The model file's text (`dpglm-model/3`; its `privacy` holds the event tree).
    fn to_json(&self) -> PyResult<String> {
        self.inner
            .to_json()
            .map_err(|e| invalid(&format!("cannot write the model: {e}")))
    }

    /// Reads a model file's text (validated, digest checked).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        LinearModel::from_json(text)
            .map(|inner| Self { inner })
            .map_err(|e| invalid(&format!("cannot read the model: {e}")))
    }
}
