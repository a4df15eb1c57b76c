//! One private fit from in-memory arrays, for front doors that hold the data already (the
//! Python package): the steps of the CLI's `train` pipeline around a [`catalog`](crate::catalog) learner —
//! feature scaling (public ranges, or private estimates within the bounds' share of ε),
//! unit-norm rows, a bias feature, the learner's bounds (given, implied, defaulted or
//! estimated) — and the model returned with its preprocessing, feature names, bounds, noise
//! source and plain-language [`PrivacyStatement`].
//!
//! The rows come as a float64 array ([`ArrayFit::fit`]), a float32 array kept in `f32`
//! storage ([`ArrayFit::fit_f32`]) or sparse rows kept sparse ([`ArrayFit::fit_sparse`]); the
//! last two take no feature scaling (it would change every value, or make the rows dense) and
//! otherwise run the same steps in the same order, so that on the same values they fit the
//! same model.
//!
//! ```
//! use dp_glm::catalog::{self, Params};
//! use dp_glm::frontdoor::{ArrayFit, Scaling};
//! use dp_glm::Loss;
//! use ndarray::array;
//!
//! let x = array![[0.5, 0.1], [-0.4, 0.2], [0.3, -0.1], [-0.2, -0.3]];
//! let y = array![1.0, -1.0, 1.0, -1.0];
//! let params = Params::new();
//! let run = ArrayFit {
//!     learner: catalog::learner("amp")?,
//!     loss: Loss::Logistic,
//!     epsilon: 1.0,
//!     delta: 1e-5,
//!     params: &params,
//!     scaling: Scaling::None,
//!     unit_norm: None,
//!     bias: Some(1.0),
//!     bounds_budget: None,
//!     seed: Some(7),
//!     classes: None,
//! };
//! let fitted = run.fit(x.view(), y, None)?;
//! assert!(fitted.model.privacy().epsilon <= 1.0);
//! assert!(!fitted.statement.is_private_release()); // seeded: an experiment, not a release
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use dp_data::CsrData;
use ndarray::{Array1, ArrayView2, Axis, Slice};

use crate::bounds::{Bound, BoundSource, PrivateBounds};
use crate::catalog::{CatalogError, Learner, NoProgress, Params, Request};
use crate::data::{Dataset, DatasetBuilder, Features, Storage, WIDEN_ROWS};
use crate::loss::{LabelDomain, Loss};
use crate::model::LinearModel;
use crate::model_file::BoundRecord;
use crate::pipeline::Preprocessing;
use crate::report::{NoiseSource, text_down, text_up};
use crate::scaling::{PublicScale, SCALING_SHARE, ScalingMethod, ScalingPlan, min_rows_for_ranges};
use crate::sparse::SparseDataset;
use crate::statement::PrivacyStatement;

/// The feature scaling of a fit.
#[derive(Debug, Clone, PartialEq)]
pub enum Scaling {
    /// None.
    None,
    /// The CLI's default for files with named columns ([`Scaling::auto`]): min–max with
    /// every range estimated privately for classification when there are rows enough for
    /// the estimates, none otherwise.
    Auto,
    /// This method, each feature's public values where given (`None`: estimated privately).
    Plan(ScalingPlan),
}

impl Scaling {
    /// The rule of [`Scaling::Auto`] for `d` numeric features, `n` rows (public, or a private count),
    /// ε `epsilon` of which the fraction `share` goes to the estimates: min–max when
    /// `classification` and `n` reaches [`min_rows_for_ranges`] at each estimate's ε; else
    /// `Err` with a warning saying why the features are not scaled (none for regression).
    ///
    /// # Errors
    /// The warning, when classification data has too few rows.
    pub fn auto(
        classification: bool,
        d: usize,
        n: usize,
        epsilon: f64,
        share: f64,
    ) -> Result<Option<ScalingMethod>, String> {
        if !classification || d == 0 {
            return Ok(None);
        }
        let each = share * epsilon / (2 * d) as f64;
        let need = min_rows_for_ranges(each);
        if (n as f64) < need {
            return Err(format!(
                "features not scaled: with n = {n} rows (public, or a private count under \
                 add/remove) the {} private \
                 feature ranges at epsilon {} each are unreliable below about {} rows; give \
                 public feature ranges, or choose a scaling to estimate them anyway, or none \
                 to silence this",
                2 * d,
                text_down(each, 3),
                need.ceil()
            ));
        }
        Ok(Some(ScalingMethod::MinMax))
    }
}

/// One fit: the learner, loss, target and parameters, and the pipeline's public choices.
#[derive(Debug, Clone)]
pub struct ArrayFit<'a> {
    /// The learner ([`catalog::learner`](crate::catalog::learner)).
    pub learner: &'static Learner,
    /// The loss.
    pub loss: Loss,
    /// The target ε (bounds and scaling estimates included).
    pub epsilon: f64,
    /// The target δ.
    pub delta: f64,
    /// The learner's parameters ([`Learner::check`]ed at fit).
    pub params: &'a Params,
    /// The feature scaling.
    pub scaling: Scaling,
    /// Scale rows to unit norm; `None`: for classification without a scaling (the CLI's
    /// default).
    pub unit_norm: Option<bool>,
    /// The value of an appended bias feature (`None`: no bias).
    pub bias: Option<f64>,
    /// The share of ε for private estimates; `None`: [`SCALING_SHARE`] with scaling
    /// estimates, else [`crate::bounds::DEFAULT_SHARE`].
    pub bounds_budget: Option<f64>,
    /// The seed of a reproducible (not private) noise stream; `None`: the CSPRNG.
    pub seed: Option<u64>,
    /// The public class pair (negative, positive) as the caller names it, for the statement.
    pub classes: Option<(String, String)>,
}

/// A fitted model and what its front door reports.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The model: its preprocessing, feature names, bounds, noise source and algorithm
    /// attached; [`LinearModel::predict`] takes raw rows.
    pub model: LinearModel,
    /// The plain-language privacy statement.
    pub statement: PrivacyStatement,
    /// Warnings (e.g. features left unscaled).
    pub warnings: Vec<String>,
}

impl ArrayFit<'_> {
    /// The share of ε for private estimates with `scaling_estimates` of them for scaling.
    fn share(&self, scaling_estimates: usize) -> f64 {
        self.bounds_budget.unwrap_or(if scaling_estimates > 0 {
            SCALING_SHARE
        } else {
            crate::bounds::DEFAULT_SHARE
        })
    }

    /// Fits on the raw rows `x` and labels `y` (±1 for classification losses), features named
    /// `feature_names` (public).
    ///
    /// # Privacy
    /// The model's report composes the learner's ledger with the pure-DP estimates of the
    /// bounds and feature ranges ([`PrivateBounds`]; AboveThreshold, Dwork & Roth, "The
    /// Algorithmic Foundations of Differential Privacy", Thm 3.23), priced by the learner's
    /// accountant; ε spent ≤ `epsilon`. With a `seed` the noise is reproducible and the
    /// model is not a private release (the statement says so).
    ///
    /// # Errors
    /// [`CatalogError`]: parameters the learner does not use or of the wrong type; invalid
    /// data (shapes, non-finite values, labels outside the loss's domain), target or bounds
    /// share; the learner's errors.
    pub fn fit(
        &self,
        x: ArrayView2<'_, f64>,
        y: Array1<f64>,
        feature_names: Option<Vec<String>>,
    ) -> Result<Fitted, CatalogError> {
        self.fit_rows(Rows::F64(x, y), feature_names)
    }

    /// [`ArrayFit::fit`] on float32 rows `x`, kept in `f32` storage ([`Storage::F32`]): the
    /// row steps (unit norm, bias) applied to a block of rows widened to `f64` at a time, each
    /// value then narrowed toward zero to `f32` — the rows are never held whole as `f64`. When
    /// no step changes a value (no unit norm, and a bias `f32` holds exactly) the learner
    /// reads the float32 values as given, and the model is that of [`ArrayFit::fit`] on the
    /// same values widened (but for rows a learner projects onto its row bound, stored in
    /// `f32` again). The statement records the storage as public.
    ///
    /// # Privacy
    /// As [`ArrayFit::fit`]. Narrowing to `f32` ([`Storage::F32`]) is a fixed, public map of
    /// each row on its own, applied before anything reads the row: neighbouring datasets stay
    /// neighbouring under it, so the mechanism run on the stored rows keeps its guarantee
    /// (the neighbouring-dataset definition of Dwork & Roth, "The Algorithmic Foundations of
    /// Differential Privacy"), and clipping and every norm bound are checked on the stored
    /// values widened to `f64`.
    ///
    /// # Errors
    /// As [`ArrayFit::fit`]; [`CatalogError::Conflict`] when the fit would fit a feature
    /// scaling ([`Scaling::Plan`], or [`Scaling::Auto`] where it scales: widen the rows and
    /// call [`ArrayFit::fit`]); a value beyond `f32`'s range after the row steps
    /// ([`crate::Error::OutOfStorageRange`]).
    pub fn fit_f32(
        &self,
        x: ArrayView2<'_, f32>,
        y: Array1<f64>,
        feature_names: Option<Vec<String>>,
    ) -> Result<Fitted, CatalogError> {
        self.fit_rows(Rows::F32(x, y), feature_names)
    }

    /// [`ArrayFit::fit`] on the sparse rows and labels of `csr`, never densified: the row
    /// steps applied to the stored entries ([`SparseDataset::preprocessed`]), the learner
    /// fitted by [`Learner::fit_sparse`] — the model of [`ArrayFit::fit`] on the same rows
    /// dense, for the learners that [`Learner::fits_sparse`].
    ///
    /// # Privacy
    /// As [`ArrayFit::fit`].
    ///
    /// # Errors
    /// As [`ArrayFit::fit`]; [`CatalogError::Conflict`] when the fit would fit a feature
    /// scaling (it maps zeros to non-zero values: [`Scaling::Plan`], or [`Scaling::Auto`]
    /// where it scales) or the learner has no sparse path; malformed rows
    /// ([`SparseDataset::new`]).
    pub fn fit_sparse(
        &self,
        csr: CsrData,
        feature_names: Option<Vec<String>>,
    ) -> Result<Fitted, CatalogError> {
        self.fit_rows(Rows::Sparse(csr), feature_names)
    }

    /// The feature scaling to fit on `d` features of `n` rows (treated as public), and the
    /// warning of a [`Scaling::Auto`] that leaves them unscaled.
    fn plan(&self, d: usize, n: usize) -> (Option<ScalingPlan>, Option<String>) {
        match &self.scaling {
            Scaling::None => (None, None),
            Scaling::Plan(plan) => (Some(plan.clone()), None),
            Scaling::Auto => {
                let share = self.share(2 * d);
                match Scaling::auto(self.classification(), d, n, self.epsilon, share) {
                    Ok(method) => (
                        method.map(|method| ScalingPlan {
                            method,
                            public: vec![None; d],
                        }),
                        None,
                    ),
                    Err(w) => (None, Some(w)),
                }
            }
        }
    }

    /// Whether the loss is a classification loss (labels ±1).
    fn classification(&self) -> bool {
        matches!(self.loss.label_domain(), LabelDomain::Signs)
    }

    /// The pipeline on `rows`: the scaling decided, the row steps, the learner's bounds, the
    /// rows preprocessed as they are stored, the learner fitted, the model and its statement.
    fn fit_rows(
        &self,
        rows: Rows<'_>,
        feature_names: Option<Vec<String>>,
    ) -> Result<Fitted, CatalogError> {
        crate::catalog::check_epsilon(self.epsilon)?;
        self.learner.check(self.params)?;
        let (n_rows, d) = rows.dim();
        let mut rng: Box<dyn rand::Rng> = match self.seed {
            Some(s) => Box::new(dp_optim::seeded_rng(s)),
            None => Box::new(dp_optim::secure_rng().map_err(crate::Error::from)?),
        };
        // The scaling decision reads the row count: the public n where one is given, or
        // the private count under add/remove, so that nothing in the release depends on the
        // true n.
        let count =
            self.learner
                .count_rows(self.loss, self.params, n_rows, self.epsilon, &mut *rng)?;
        let n = match &count {
            Some(c) => c.value(),
            None => self.params.count("public_n")?.unwrap_or(n_rows),
        };
        let (plan, warning) = self.plan(d, n);
        if let (Some(plan), Some(kind)) = (&plan, rows.unscalable()) {
            return Err(CatalogError::Conflict(format!(
                "a feature scaling ({}) is not fitted on {kind}: fit float64 rows, or choose \
                 no scaling",
                plan.method.name()
            )));
        }
        let mut prep = Preprocessing {
            scaling: None,
            row_bound: None,
            unit_norm: self
                .unit_norm
                .unwrap_or(self.classification() && plan.is_none()),
            bias: self.bias,
        };
        let row_norm = if prep.unit_norm {
            Some(1.0)
        } else {
            plan.as_ref().and_then(ScalingPlan::row_bound)
        };
        let row_bound = row_norm.map(|r| r.hypot(prep.bias.unwrap_or(0.0)));
        let needs = self.learner.needs(self.loss, row_bound, self.params)?;
        let scaling_estimates = plan.as_ref().map_or(0, ScalingPlan::estimates);
        let planned = needs.iter().filter(|n| n.is_estimated()).count() + scaling_estimates;
        let mut bounds = PrivateBounds::new(
            self.epsilon,
            self.delta,
            self.share(scaling_estimates),
            planned,
        )?;
        if let Some(count) = count {
            bounds.count(count)?;
        }
        let storage = rows.storage_note(&prep);
        let data = match rows {
            Rows::F64(x, y) => {
                if let Some(plan) = &plan {
                    let names = feature_names.as_deref();
                    prep.scaling = Some(plan.fit(x, names, &mut bounds, &mut *rng)?);
                }
                Prepared::Dense(Dataset::new(prep.apply(x)?, y)?)
            }
            Rows::F32(x, y) => Prepared::Dense(f32_rows(x, &y, &prep)?),
            Rows::Sparse(csr) => Prepared::Sparse(SparseDataset::preprocessed(csr, &prep)?),
        };
        let request = Request {
            loss: self.loss,
            delta: self.delta,
            params: self.params,
            needs: &needs,
        };
        let (model, bounds) = match &data {
            Prepared::Dense(data) => {
                self.learner
                    .fit(&request, data, bounds, &mut *rng, &mut NoProgress)?
            }
            Prepared::Sparse(data) => {
                self.learner
                    .fit_sparse(&request, data, bounds, &mut *rng, &mut NoProgress)?
            }
        };
        let source = match self.seed {
            Some(seed) => NoiseSource::Seeded { seed },
            None => NoiseSource::Secure,
        };
        let mut statement =
            self.statement(&model, source, &bounds, &prep, feature_names.as_deref());
        if let Some(note) = storage {
            statement.assume_public(note);
        }
        let records = bounds
            .bounds()
            .iter()
            .map(|b| BoundRecord::of(b, self.params.contains(b.name)))
            .collect();
        let learned = Preprocessing {
            row_bound: model.preprocessing().row_bound,
            ..prep
        };
        let model = model
            .with_preprocessing(learned)?
            .with_input(feature_names, None)?
            .with_bounds(records)?
            .with_noise_source(source)
            .with_algorithm(self.learner.name);
        Ok(Fitted {
            model,
            statement,
            warnings: warning.into_iter().collect(),
        })
    }

    /// The statement of a fit: the report's guarantee, and what was treated as public.
    fn statement(
        &self,
        model: &LinearModel,
        source: NoiseSource,
        bounds: &PrivateBounds,
        prep: &Preprocessing,
        names: Option<&[String]>,
    ) -> PrivacyStatement {
        let mut s = model.privacy().statement(source);
        let d = model.coef().len() - prep.extra_columns();
        match names {
            Some(names) => s.assume_public(format!(
                "the feature names and their order ({})",
                names.join(", ")
            )),
            None => s.assume_public(format!("the number of features d = {d}")),
        };
        if self.classification() {
            s.assume_public(match &self.classes {
                Some((neg, pos)) => format!("the class pair (negative {neg}, positive {pos})"),
                None => "the class pair (negative, positive)".to_string(),
            });
        }
        assume_preprocessing(&mut s, prep);
        s.assume_public(format!(
            "the algorithm ({}) and its hyper-parameters (as given, or the defaults the report \
             above records)",
            self.learner.name
        ));
        let (given, other): (Vec<Bound>, Vec<Bound>) = bounds
            .bounds()
            .iter()
            .partition(|b| b.source == BoundSource::Public && self.params.contains(b.name));
        for b in &given {
            s.assume_public(format!(
                "the bound {} = {}, given as a public value; values beyond it are clipped",
                b.name, b.value
            ));
        }
        s.bounds(&other).count(bounds.counted());
        s
    }
}

/// Adds a fit's preprocessing to its statement: the feature scaling (public ranges as
/// assumptions, estimated ranges as releases paid from ε) and the row steps (unit norm, bias)
/// as public assumptions.
pub fn assume_preprocessing(s: &mut PrivacyStatement, prep: &Preprocessing) {
    if let Some(sc) = &prep.scaling {
        let estimated = sc.features.iter().filter(|f| f.estimated.is_some()).count();
        let public = sc.features.len() - estimated;
        if public > 0 {
            s.assume_public(format!(
                "the feature scaling ({}) and its public ranges for {public} feature(s), \
                 every value clipped to its range",
                sc.method.name()
            ));
        }
        if estimated > 0 {
            s.estimated(format!(
                "the ranges of the feature scaling ({}) for {estimated} feature(s): \
                 private quartiles for epsilon {} in all (included in the total above); \
                 every value is clipped to its range",
                sc.method.name(),
                text_up(sc.estimated_epsilon(), 6)
            ));
        }
    }
    let mut steps = Vec::new();
    if prep.unit_norm {
        steps.push("every row scaled to unit norm".to_string());
    }
    if let Some(b) = prep.bias {
        steps.push(format!("a bias feature {b} appended"));
    }
    if !steps.is_empty() {
        s.assume_public(format!(
            "the preprocessing ({}), applied to each row on its own",
            steps.join(", ")
        ));
    }
}

/// The rows of a fit as the caller holds them, with their labels.
enum Rows<'x> {
    /// float64 rows.
    F64(ArrayView2<'x, f64>, Array1<f64>),
    /// float32 rows, kept in `f32` storage.
    F32(ArrayView2<'x, f32>, Array1<f64>),
    /// Sparse rows, kept sparse.
    Sparse(CsrData),
}

impl Rows<'_> {
    /// `(n, d)`: the labels' count for sparse rows (whose shape [`SparseDataset::new`]
    /// checks).
    fn dim(&self) -> (usize, usize) {
        match self {
            Rows::F64(x, _) => x.dim(),
            Rows::F32(x, _) => x.dim(),
            Rows::Sparse(csr) => (csr.n_samples(), csr.n_features),
        }
    }

    /// What these rows are called when they cannot take a feature scaling, or `None`.
    fn unscalable(&self) -> Option<&'static str> {
        match self {
            Rows::F64(..) => None,
            Rows::F32(..) => Some("float32 rows kept in f32 storage"),
            Rows::Sparse(_) => Some("sparse rows (it maps zeros to non-zero values)"),
        }
    }

    /// What the statement records as public about the rows' storage after the row steps
    /// `prep`: `f32` storage, of the float32 values as given when no step changes them.
    fn storage_note(&self, prep: &Preprocessing) -> Option<&'static str> {
        let Rows::F32(..) = self else {
            return None;
        };
        let exact = !prep.unit_norm && prep.bias.is_none_or(|b| f64::from(b as f32) == b);
        Some(if exact {
            "the feature storage f32: the float32 values as given (rows a learner projects \
             onto its row bound are rounded toward zero to f32 again; sums in f64)"
        } else {
            "the feature storage f32: each value after the row steps rounded toward zero to \
             f32 (and again for rows a learner projects onto its row bound; sums in f64)"
        })
    }
}

/// The rows a learner reads.
enum Prepared {
    /// Dense rows.
    Dense(Dataset),
    /// Sparse rows.
    Sparse(SparseDataset),
}

/// The float32 rows `x` with labels `y`, the row steps of `prep` applied, in `f32` storage:
/// widened and preprocessed [`WIDEN_ROWS`] rows at a time.
fn f32_rows(
    x: ArrayView2<'_, f32>,
    y: &Array1<f64>,
    prep: &Preprocessing,
) -> crate::Result<Dataset> {
    if x.nrows() != y.len() {
        return Err(crate::Error::ShapeMismatch {
            left: "x",
            left_shape: x.shape().to_vec(),
            right: "y",
            right_shape: y.shape().to_vec(),
        });
    }
    let mut data = DatasetBuilder::new(x.ncols() + prep.extra_columns(), Storage::F32);
    for (range, block) in Features::F32(x).f64_blocks(WIDEN_ROWS) {
        let block = prep.apply(block.view())?;
        data.push(block.view(), y.slice_axis(Axis(0), Slice::from(range)))?;
    }
    data.finish()
}

/// [`PublicScale`]s from public per-feature ranges `(min, max)` (min–max scaling).
pub fn public_ranges(ranges: &[(f64, f64)]) -> Vec<Option<PublicScale>> {
    ranges
        .iter()
        .map(|&(min, max)| {
            Some(PublicScale {
                min: Some(min),
                max: Some(max),
                ..PublicScale::default()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{self, Value};
    use crate::learners::testdata::logistic;
    use ndarray::Array2;

    /// Logistic labels on rows of norm ≤ 5 (raw features that want scaling).
    fn classification(n: usize, d: usize) -> (Array2<f64>, Array1<f64>) {
        let data = logistic(n, d, 3.0, 3).0;
        (data.x().mapv(|v| 5.0 * v), data.y().to_owned())
    }

    fn run<'a>(name: &str, params: &'a Params, scaling: Scaling, seed: u64) -> ArrayFit<'a> {
        ArrayFit {
            learner: catalog::learner(name).expect("registered"),
            loss: Loss::Logistic,
            epsilon: 1.0,
            delta: 1e-5,
            params,
            scaling,
            unit_norm: None,
            bias: Some(1.0),
            bounds_budget: None,
            seed: Some(seed),
            classes: Some(("no".into(), "yes".into())),
        }
    }

    #[test]
    fn auto_scaling_estimates_ranges_within_the_target() {
        let (x, y) = classification(5000, 3);
        let params = Params::new();
        let f = run("amp", &params, Scaling::Auto, 1)
            .fit(x.view(), y, None)
            .expect("fits");
        let report = f.model.privacy();
        assert!(report.epsilon <= 1.0, "spent {}", report.epsilon);
        let sc = f.model.preprocessing().scaling.as_ref().expect("scaled");
        assert_eq!(sc.features.len(), 3);
        assert!(sc.estimated_epsilon() > 0.0);
        assert!(!f.model.preprocessing().unit_norm);
        assert!(f.warnings.is_empty());
        assert!(
            f.statement.text().contains("estimated privately")
                || f.statement.text().contains("private quartiles")
        );
    }

    #[test]
    fn too_few_rows_leave_features_unscaled_with_a_warning() {
        let (x, y) = classification(50, 3);
        let params = Params::new();
        let f = run("amp", &params, Scaling::Auto, 1)
            .fit(x.view(), y, None)
            .expect("fits");
        assert!(f.model.preprocessing().scaling.is_none());
        assert!(f.model.preprocessing().unit_norm);
        assert_eq!(f.warnings.len(), 1);
        // The private count of the 50 rows (AMP under add/remove without a public n).
        assert!(f.warnings[0].contains("with n = "), "{}", f.warnings[0]);
    }

    /// The scaling decision reads the public n where one is given, not the rows' count.
    #[test]
    fn the_scaling_decision_follows_the_public_n() {
        let (x, y) = classification(50, 3);
        let mut params = Params::new();
        params.set("public_n", Value::Count(1_000_000));
        let f = run("amp", &params, Scaling::Auto, 1)
            .fit(x.view(), y, None)
            .expect("fits");
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        assert!(f.model.preprocessing().scaling.is_some());
    }

    #[test]
    fn public_ranges_spend_nothing_on_scaling_and_same_seed_is_reproducible() {
        let (x, y) = classification(500, 2);
        let mut params = Params::new();
        params.set("clip", Value::Real(1.0));
        let plan = || {
            Scaling::Plan(ScalingPlan {
                method: ScalingMethod::MinMax,
                public: public_ranges(&[(-5.0, 5.0), (-5.0, 5.0)]),
            })
        };
        let a = run("dp-sgd", &params, plan(), 9)
            .fit(x.view(), y.clone(), Some(vec!["a".into(), "b".into()]))
            .expect("fits");
        let b = run("dp-sgd", &params, plan(), 9)
            .fit(x.view(), y, Some(vec!["a".into(), "b".into()]))
            .expect("fits");
        assert_eq!(a.model, b.model);
        let sc = a.model.preprocessing().scaling.as_ref().expect("scaled");
        assert_eq!(sc.estimated_epsilon(), 0.0);
        assert_eq!(
            a.model.feature_names(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
        let text = a.statement.text();
        assert!(text.contains("clip = 1"), "{text}");
        assert!(text.contains("(negative no, positive yes)"), "{text}");
    }

    #[test]
    fn parameters_the_learner_does_not_use_are_refused() {
        let (x, y) = classification(100, 2);
        let mut params = Params::new();
        params.set("steps", Value::Count(10));
        let e = run("ssp", &params, Scaling::None, 1)
            .fit(x.view(), y, None)
            .expect_err("ssp takes no steps");
        assert!(matches!(e, CatalogError::NotApplicable { .. }), "{e}");
    }
    /// Logistic labels on rows of norm ≤ 0.9 that `f32` holds exactly, with some zeros.
    fn exact_rows(n: usize, d: usize) -> (Array2<f64>, Array1<f64>) {
        let (x, y) = classification(n, d);
        let x = x.mapv(|v| {
            if v.abs() < 0.5 {
                0.0
            } else {
                f64::from((v / 6.0) as f32)
            }
        });
        (x, y)
    }

    /// The rows of `x` with labels `y` in CSR form.
    fn csr(x: &Array2<f64>, y: &Array1<f64>) -> CsrData {
        let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
        for row in x.rows() {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                indices.push(j);
                values.push(v);
            }
            indptr.push(indices.len());
        }
        CsrData {
            n_features: x.ncols(),
            indptr,
            indices,
            values,
            y: y.to_vec(),
        }
    }

    /// On values `f32` holds, with no step that changes them, `fit_f32` fits the model of
    /// `fit` bit for bit; only the statement adds the storage.
    #[test]
    fn float32_rows_fit_the_float64_model() {
        let (x, y) = exact_rows(400, 3);
        let mut params = Params::new();
        params.set("clip", Value::Real(1.0));
        let mut fit = run("dp-gd", &params, Scaling::None, 4);
        fit.unit_norm = Some(false);
        let a = fit
            .fit_f32(x.mapv(|v| v as f32).view(), y.clone(), None)
            .expect("fits");
        let b = fit.fit(x.view(), y, None).expect("fits");
        assert_eq!(a.model.coef(), b.model.coef());
        assert_eq!(a.model.intercept(), b.model.intercept());
        assert_eq!(a.model.privacy(), b.model.privacy());
        let (sa, sb) = (a.statement.text(), b.statement.text());
        assert!(
            sa.contains("feature storage f32: the float32 values as given"),
            "{sa}"
        );
        assert!(!sb.contains("feature storage"), "{sb}");
    }

    /// With unit-norm rows the statement says the steps' values are rounded to `f32`.
    #[test]
    fn float32_rows_after_unit_norm_are_recorded_as_rounded() {
        let (x, y) = exact_rows(300, 2);
        let params = Params::new();
        let f = run("amp", &params, Scaling::None, 2)
            .fit_f32(x.mapv(|v| v as f32).view(), y, None)
            .expect("fits");
        assert!(f.model.preprocessing().unit_norm);
        let text = f.statement.text();
        assert!(
            text.contains("after the row steps rounded toward zero"),
            "{text}"
        );
    }

    /// Sparse rows fit the model (and statement) of the same rows dense: DP-GD, and tuned
    /// DP-SGD.
    #[test]
    fn sparse_rows_fit_the_dense_model() {
        let (x, y) = exact_rows(400, 4);
        let mut tuned = Params::new();
        tuned.set("tune", Value::Choice("honest".into()));
        tuned.set("batch_size", Value::Count(40));
        for (name, params) in [("dp-gd", Params::new()), ("dp-sgd", tuned)] {
            let fit = run(name, &params, Scaling::None, 5);
            let a = fit.fit_sparse(csr(&x, &y), None).expect("fits");
            let b = fit.fit(x.view(), y.clone(), None).expect("fits");
            assert_eq!(a.model, b.model, "{name}");
            assert_eq!(a.statement.text(), b.statement.text(), "{name}");
        }
    }

    /// A feature scaling is refused on float32 and sparse rows before anything is spent, and
    /// so is a learner without a sparse path.
    #[test]
    fn rows_that_cannot_take_the_fit_are_refused_by_name() {
        let (x, y) = exact_rows(100, 2);
        let params = Params::new();
        let plan = Scaling::Plan(ScalingPlan {
            method: ScalingMethod::MinMax,
            public: public_ranges(&[(-1.0, 1.0), (-1.0, 1.0)]),
        });
        let fit = run("dp-gd", &params, plan, 1);
        let e = fit
            .fit_f32(x.mapv(|v| v as f32).view(), y.clone(), None)
            .expect_err("no scaling on f32 storage");
        assert!(matches!(e, CatalogError::Conflict(_)), "{e}");
        assert!(e.to_string().contains("(minmax)"), "{e}");
        assert!(e.to_string().contains("float32 rows"), "{e}");
        let e = fit
            .fit_sparse(csr(&x, &y), None)
            .expect_err("no scaling on sparse rows");
        assert!(e.to_string().contains("sparse rows"), "{e}");
        let e = run("jl-noisy-gd", &params, Scaling::None, 1)
            .fit_sparse(csr(&x, &y), None)
            .expect_err("jl-noisy-gd has no sparse path");
        assert!(e.to_string().contains("no sparse path"), "{e}");
    }

    /// Labels that do not match the float32 rows are an error, not a panic.
    #[test]
    fn float32_rows_and_labels_of_other_lengths_are_an_error() {
        let (x, y) = exact_rows(100, 2);
        let params = Params::new();
        let e = run("amp", &params, Scaling::None, 1)
            .fit_f32(
                x.mapv(|v| v as f32).view(),
                y.iter().take(90).copied().collect(),
                None,
            )
            .expect_err("90 labels for 100 rows");
        assert!(
            matches!(e, CatalogError::Fit(crate::Error::ShapeMismatch { .. })),
            "{e}"
        );
    }
}
