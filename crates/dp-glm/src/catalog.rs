//! One description of the learners, read by every front door (the `dpglm` CLI, the Python
//! package): the [`Fit`] interface every learner implements, and a registry ([`LEARNERS`],
//! [`learner`]) holding for each learner its name, its parameters ([`Param`]: name, type,
//! default, doc), the bounds it needs (`x_bound`, `y_bound`, `clip`: [`Learner::needs`]), the
//! losses it takes, its default neighbouring relation and accountant, and a constructor from
//! a generic parameter map ([`Params`]: string keys; real, count, choice or list values).
//!
//! A front door builds a [`Params`] from its own vocabulary (flags, keyword arguments),
//! [`Learner::check`]s it (a parameter the learner does not use is refused, never ignored),
//! asks [`Learner::needs`] for the bounds and [`Learner::fit`]s. Errors ([`CatalogError`])
//! name the parameter; [`CatalogError::message`] renders them in the front door's words
//! (e.g. `--learning-rate` for `learning_rate`).
//!
//! Adding a learner: a file with the learner, and one [`Learner`] entry in [`LEARNERS`].
//!
//! ```
//! use dp_glm::catalog::{self, Params, Request, Value};
//! use dp_glm::bounds::PrivateBounds;
//! use dp_glm::{Dataset, Loss};
//! use ndarray::array;
//!
//! let data = Dataset::new(
//!     array![[0.5, 0.1], [-0.4, 0.2], [0.3, -0.1], [-0.2, -0.3]],
//!     array![1.0, -1.0, 1.0, -1.0],
//! )?;
//! let dp_gd = catalog::learner("dp-gd")?;
//! let mut params = Params::new();
//! params.set("steps", Value::Count(20));
//! dp_gd.check(&params)?;
//! let needs = dp_gd.needs(Loss::Logistic, Some(1.0), &params)?;
//! let bounds = PrivateBounds::new(1.0, 1e-5, 0.1, 0)?;
//! let request = Request { loss: Loss::Logistic, delta: 1e-5, params: &params, needs: &needs };
//! let mut rng = dp_optim::seeded_rng(1);
//! let (model, _) = dp_gd.fit(&request, &data, bounds, &mut rng, &mut catalog::NoProgress)?;
//! assert!(model.privacy().epsilon <= 1.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use dp_accounting::{AccountantKind, Neighbouring};
use dp_optim::{IterationInfo, Observer, UpdateRule};
use rand::Rng;

use crate::bounds::{PrivateBounds, Records, Statistic};
use crate::data::Dataset;
use crate::error::{Error, ensure};
use crate::learners::{
    Amp, AmpSolver, Budget, DpAmbSsgd, DpGd, DpSgd, DpSsgd, JlNoisyGd, NoisyProjectedGd,
    NonConvexDpGd, ObjectivePerturbation, OutputPerturbation, SgdSchedule, Ssp,
};
use crate::loss::{DEFAULT_HUBER_SVM_H, LabelDomain, Loss};
use crate::model::LinearModel;
use crate::row_count::PrivateCount;
use crate::selection::{
    ConfidenceBoosting, HonestTuning, PrivateGridSearch, TuningWithoutPrivacyAccounting,
};
use crate::sparse::SparseDataset;

/// A private learner, ready to fit: the one interface the front doors call.
pub trait Fit {
    /// Fits the model on `data` with noise from `rng`; the model carries its privacy report.
    ///
    /// # Errors
    /// The learner's: invalid hyper-parameters or budget, data outside the loss's domain, an
    /// accountant that cannot answer.
    fn fit(&self, data: &Dataset, rng: &mut dyn Rng) -> crate::Result<LinearModel>;

    /// [`Fit::fit`], showing the optimiser's steps to `observer` where the learner runs a
    /// step-by-step optimiser that reports them (DP-GD, DP-SGD, noisy projected GD); the
    /// default ignores it. Observing is post-processing of the released noisy gradients.
    ///
    /// # Errors
    /// As [`Fit::fit`].
    fn fit_observed(
        &self,
        data: &Dataset,
        rng: &mut dyn Rng,
        observer: &mut dyn Observer,
    ) -> crate::Result<LinearModel> {
        let _ = observer;
        self.fit(data, rng)
    }

    /// [`Fit::fit_observed`] on sparse rows, for the learners with a sparse path (DP-GD,
    /// DP-SGD, tuned or not, noisy projected GD, objective perturbation, AMP, output
    /// perturbation and AdaSSP: the same model as on the rows densified,
    /// [`Learner::fits_sparse`]); `None` for the others.
    ///
    /// # Errors
    /// As [`Fit::fit`].
    fn fit_sparse(
        &self,
        data: &SparseDataset,
        rng: &mut dyn Rng,
        observer: &mut dyn Observer,
    ) -> Option<crate::Result<LinearModel>> {
        let _ = (data, rng, observer);
        None
    }
}

/// [`Fit`] for learners with an inherent `fit_with_observer` (and, followed by `: fit_sparse`,
/// an inherent `fit_sparse_with_observer`).
macro_rules! fit_observing {
    ($($t:ty $(: $sparse:ident)?),* $(,)?) => {$(
        impl Fit for $t {
            fn fit(&self, data: &Dataset, rng: &mut dyn Rng) -> crate::Result<LinearModel> {
                <$t>::fit(self, data, rng)
            }

            fn fit_observed(
                &self,
                data: &Dataset,
                rng: &mut dyn Rng,
                observer: &mut dyn Observer,
            ) -> crate::Result<LinearModel> {
                <$t>::fit_with_observer(self, data, rng, Some(observer))
            }
            $(
            fn $sparse(
                &self,
                data: &SparseDataset,
                rng: &mut dyn Rng,
                observer: &mut dyn Observer,
            ) -> Option<crate::Result<LinearModel>> {
                Some(<$t>::fit_sparse_with_observer(self, data, rng, Some(observer)))
            }
            )?
        }
    )*};
}

fit_observing!(DpGd: fit_sparse, DpSgd: fit_sparse, NoisyProjectedGd: fit_sparse);

/// [`Fit`] for learners whose inherent `fit` takes any [`Rng`] (and, followed by
/// `: fit_sparse`, whose inherent `fit_sparse` does too; they show no steps to an observer).
macro_rules! fit_by_inherent {
    ($($t:ty $(: $sparse:ident)?),* $(,)?) => {$(
        impl Fit for $t {
            fn fit(&self, data: &Dataset, rng: &mut dyn Rng) -> crate::Result<LinearModel> {
                <$t>::fit(self, data, rng)
            }
            $(
            fn $sparse(
                &self,
                data: &SparseDataset,
                rng: &mut dyn Rng,
                _: &mut dyn Observer,
            ) -> Option<crate::Result<LinearModel>> {
                Some(<$t>::fit_sparse(self, data, rng))
            }
            )?
        }
    )*};
}

fit_by_inherent!(
    NonConvexDpGd,
    JlNoisyGd,
    Ssp: fit_sparse,
    DpSsgd,
    DpAmbSsgd,
    ObjectivePerturbation: fit_sparse,
    Amp: fit_sparse,
    OutputPerturbation: fit_sparse,
    HonestTuning: fit_sparse,
    TuningWithoutPrivacyAccounting: fit_sparse,
    PrivateGridSearch<NoisyProjectedGd>,
    ConfidenceBoosting<NoisyProjectedGd>,
);

/// The type of a parameter's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A real number (an integer value is accepted too).
    Real,
    /// A non-negative integer.
    Count,
    /// One of the listed names.
    Choice(&'static [&'static str]),
    /// A list of real numbers.
    RealList,
}

impl Kind {
    /// The type in words (`real`, `count`, `one of a|b`, `list of reals`).
    pub fn describe(&self) -> String {
        match self {
            Kind::Real => "real".into(),
            Kind::Count => "count".into(),
            Kind::Choice(c) => format!("one of {}", c.join("|")),
            Kind::RealList => "list of reals".into(),
        }
    }
}

/// A parameter's value in a [`Params`] map.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A real number.
    Real(f64),
    /// A count.
    Count(usize),
    /// A named choice.
    Choice(String),
    /// A list of real numbers.
    RealList(Vec<f64>),
}

impl Value {
    /// The value's type in words.
    fn kind_name(&self) -> &'static str {
        match self {
            Value::Real(_) => "real",
            Value::Count(_) => "count",
            Value::Choice(_) => "choice",
            Value::RealList(_) => "list of reals",
        }
    }
}

/// One parameter of a learner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name (`snake_case`; the CLI's flag is `--` with `-` for `_`).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its default, in words (a value, or how it is derived).
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
}

impl Param {
    /// The parameter `name` of type `kind`, its `default` in words and its `doc`.
    pub const fn new(
        name: &'static str,
        kind: Kind,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            default,
            doc,
        }
    }
}

/// Parameters a front door gives a learner, by name, in the order given (checks report the
/// first bad one). Absent parameters take the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(Vec<(String, Value)>);

impl Params {
    /// No parameters: every default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `value` (replacing an earlier value, in its place).
    pub fn set(&mut self, name: impl Into<String>, value: Value) -> &mut Self {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => self.0.push((name, value)),
        }
        self
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether `name` was given.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The given names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// A real parameter (a count is accepted as a real).
    fn real(&self, name: &str) -> Result<Option<f64>, CatalogError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Real(v)) => Ok(Some(*v)),
            Some(Value::Count(c)) => Ok(Some(*c as f64)),
            Some(v) => Err(wrong_type(name, Kind::Real, v)),
        }
    }

    /// A count parameter.
    pub(crate) fn count(&self, name: &str) -> Result<Option<usize>, CatalogError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Count(c)) => Ok(Some(*c)),
            Some(v) => Err(wrong_type(name, Kind::Count, v)),
        }
    }

    /// A choice parameter among `choices`.
    fn choice(
        &self,
        name: &str,
        choices: &'static [&'static str],
    ) -> Result<Option<&'static str>, CatalogError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Choice(s)) => match choices.iter().find(|c| **c == s.as_str()) {
                Some(c) => Ok(Some(c)),
                None => Err(CatalogError::NotAChoice {
                    param: name.to_string(),
                    value: s.clone(),
                    choices,
                }),
            },
            Some(v) => Err(wrong_type(name, Kind::Choice(choices), v)),
        }
    }

    /// A list parameter.
    fn list(&self, name: &str) -> Result<Option<Vec<f64>>, CatalogError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::RealList(v)) => Ok(Some(v.clone())),
            Some(v) => Err(wrong_type(name, Kind::RealList, v)),
        }
    }
}

fn wrong_type(name: &str, expected: Kind, got: &Value) -> CatalogError {
    CatalogError::WrongType {
        param: name.to_string(),
        expected: expected.describe(),
        got: got.kind_name(),
    }
}

/// A parameter error or a learner's error.
///
/// The [`Display`](std::fmt::Display) text names parameters in backticks; front doors call
/// [`CatalogError::message`] to name them in their own words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// No learner of that name.
    #[error("unknown learner `{name}` (known: {known})")]
    UnknownLearner {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: String,
    },
    /// No loss of that name.
    #[error("unknown loss `{0}` (known: logistic, squared, huber, huber-svm, savage)")]
    UnknownLoss(String),
    /// A parameter the learner does not use (it would be ignored).
    #[error("`{param}` does not apply to {learner} (it uses {})", .uses.join(", "))]
    NotApplicable {
        /// The parameter.
        param: String,
        /// The learner.
        learner: &'static str,
        /// The parameters it uses.
        uses: Vec<&'static str>,
    },
    /// A value of the wrong type.
    #[error("`{param}` must be a {expected}, not a {got}")]
    WrongType {
        /// The parameter.
        param: String,
        /// The type it takes.
        expected: String,
        /// The type given.
        got: &'static str,
    },
    /// A choice that is not among the parameter's.
    #[error("`{param}` must be one of {}, not `{value}`", .choices.join("|"))]
    NotAChoice {
        /// The parameter.
        param: String,
        /// The value given.
        value: String,
        /// The choices.
        choices: &'static [&'static str],
    },
    /// Parameters that do not go together, or a loss the learner does not fit. The text names
    /// parameters as `{name}`; see [`CatalogError::message`].
    #[error("{}", render(.0, &|p| format!("`{p}`")))]
    Conflict(String),
    /// A target ε outside [`EPSILON_RANGE`].
    #[error("{}", epsilon_message(*.0, "`epsilon`"))]
    EpsilonOutOfRange(f64),
    /// The learner's own error (a hyper-parameter outside its range names itself).
    #[error(transparent)]
    Fit(#[from] Error),
}

/// The target ε the learners compute: `2^-20 ≤ ε ≤ 2^20` (about 1e-6 to 1e6).
pub const EPSILON_RANGE: (f64, f64) = (1.0 / (1u64 << 20) as f64, (1u64 << 20) as f64);

/// `epsilon` within [`EPSILON_RANGE`], checked by every front door before anything is
/// derived from it (the CLI before it reads data, [`crate::frontdoor::ArrayFit`] first).
///
/// The learners derive their noise scales, ridge penalties and step counts from ε (scales
/// ∝ 1/ε) without a range of their own (`dp_accounting::Target` only asks for ε > 0): far
/// outside this range those derived values leave what the exact noise grid and the
/// calibrations resolve, and the error would name a derived value (`lambda` = inf, an
/// optimiser's `scale`) instead of ε.
///
/// # Errors
/// [`CatalogError::EpsilonOutOfRange`].
pub fn check_epsilon(epsilon: f64) -> Result<(), CatalogError> {
    let (lo, hi) = EPSILON_RANGE;
    if (lo..=hi).contains(&epsilon) {
        Ok(())
    } else {
        Err(CatalogError::EpsilonOutOfRange(epsilon))
    }
}

/// The message of [`CatalogError::EpsilonOutOfRange`], ε named `name`.
fn epsilon_message(epsilon: f64, name: &str) -> String {
    let (lo, hi) = EPSILON_RANGE;
    format!(
        "{name} = {epsilon:e} is outside the range the learners compute, {lo:e} (2^-20) to \
         {hi:e} (2^20): the noise scales, penalties and step counts are derived from epsilon \
         and beyond it leave the range the noise and its calibration resolve (below 2^-20 the \
         noise drowns any model, above 2^20 nothing is private); give an epsilon in that range"
    )
}

impl CatalogError {
    /// The message with every parameter named by `name` (e.g. the CLI's flag), or `None` for
    /// [`CatalogError::Fit`] (the learner's error, whose parameter names the front door maps
    /// itself).
    pub fn message(&self, name: &dyn Fn(&str) -> String) -> Option<String> {
        Some(match self {
            CatalogError::NotApplicable {
                param,
                learner,
                uses,
            } => format!(
                "{} does not apply to {learner} (it uses {})",
                name(param),
                uses.iter().map(|u| name(u)).collect::<Vec<_>>().join(", ")
            ),
            CatalogError::WrongType {
                param,
                expected,
                got,
            } => format!("{} must be a {expected}, not a {got}", name(param)),
            CatalogError::NotAChoice {
                param,
                value,
                choices,
            } => format!(
                "{} must be one of {}, not `{value}`",
                name(param),
                choices.join("|")
            ),
            CatalogError::Conflict(text) => render(text, name),
            CatalogError::EpsilonOutOfRange(e) => epsilon_message(*e, &name("epsilon")),
            CatalogError::Fit(_) => return None,
            other => other.to_string(),
        })
    }
}

/// `text` with every `{param}` replaced by `name(param)`.
fn render(text: &str, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => {
                out.push_str(&name(&rest[open + 1..open + close]));
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a bound the learner needs is when the caller gives no value for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fallback {
    /// Implied by the public preprocessing (e.g. unit-norm rows plus a bias).
    Preprocessing(f64),
    /// The learner's default, which the preprocessing makes adequate (a clip for a Lipschitz
    /// loss on bounded rows).
    Default(f64),
    /// Estimated privately within the bounds' share of ε ([`PrivateBounds::estimate`]).
    Estimate(Statistic),
}

/// A bound the learner needs (`x_bound`, `y_bound` or `clip`): the value given, and the
/// fallback without one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Need {
    /// The bound's name (also its parameter's).
    pub name: &'static str,
    /// The value given, if any.
    pub given: Option<f64>,
    /// What it is otherwise.
    pub fallback: Fallback,
}

impl Need {
    /// Whether it is to be estimated privately.
    pub fn is_estimated(&self) -> bool {
        self.given.is_none() && matches!(self.fallback, Fallback::Estimate(_))
    }
}

/// What [`Learner::needs`] decides from.
#[derive(Debug, Clone, Copy)]
pub struct NeedContext<'a> {
    /// The loss.
    pub loss: Loss,
    /// The public row-norm bound the preprocessing guarantees, if any.
    pub row_bound: Option<f64>,
    /// The parameters.
    pub params: &'a Params,
}

impl NeedContext<'_> {
    fn x(&self) -> Result<Need, CatalogError> {
        Ok(Need {
            name: "x_bound",
            given: self.params.real("x_bound")?,
            fallback: self.row_bound.map_or(
                Fallback::Estimate(Statistic::RowNorm),
                Fallback::Preprocessing,
            ),
        })
    }

    /// The label bound, for regression or when given.
    fn y(&self) -> Result<Option<Need>, CatalogError> {
        let given = self.params.real("y_bound")?;
        let real = matches!(self.loss.label_domain(), LabelDomain::Real);
        Ok((real || given.is_some()).then_some(Need {
            name: "y_bound",
            given,
            fallback: Fallback::Estimate(Statistic::LabelMagnitude),
        }))
    }

    fn estimated_clip(&self) -> Result<Need, CatalogError> {
        Ok(Need {
            name: "clip",
            given: self.params.real("clip")?,
            fallback: Fallback::Estimate(Statistic::GradientNorm(self.loss)),
        })
    }

    /// Gradient norms are at most `L·‖x‖ ≤ L·row_bound`: the learner's `default` clip is
    /// public when the rows are bounded and the loss Lipschitz; else it is estimated.
    fn clip(&self, default: f64) -> Result<Need, CatalogError> {
        let mut need = self.estimated_clip()?;
        if self.row_bound.is_some() && self.loss.lipschitz().is_some() {
            need.fallback = Fallback::Default(default);
        }
        Ok(need)
    }

    fn x_and_y(&self) -> Result<Vec<Need>, CatalogError> {
        Ok(std::iter::once(self.x()?).chain(self.y()?).collect())
    }
}

/// What a learner's constructor reads.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    /// The loss.
    pub loss: Loss,
    /// The parameters.
    pub params: &'a Params,
    /// The learner's budget: ε its share of the target, δ, relation and accountant resolved.
    pub budget: Budget,
    /// The bounds, public or estimated (`None` where the learner does not need them).
    pub x_bound: Option<f64>,
    /// The label bound.
    pub y_bound: Option<f64>,
    /// The clip.
    pub clip: Option<f64>,
    /// The data's shape `(n, d)`: derived defaults read it, never the values.
    pub shape: (usize, usize),
}

impl Setup<'_> {
    fn real(&self, name: &str) -> Result<Option<f64>, CatalogError> {
        self.params.real(name)
    }

    fn count(&self, name: &str) -> Result<Option<usize>, CatalogError> {
        self.params.count(name)
    }
}

/// Sets `target` from an optional value.
fn set<T>(target: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *target = v;
    }
}

/// The losses a learner fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Losses {
    /// Any loss it can check itself (convexity, Lipschitz constant, label domain).
    Any,
    /// The squared loss only (linear regression).
    Squared,
}

/// One learner's description and constructor.
#[derive(Debug, Clone, Copy)]
pub struct Learner {
    /// Its name (the CLI's `--algorithm`).
    pub name: &'static str,
    /// What it is, with its source.
    pub doc: &'static str,
    /// The losses it fits.
    pub losses: Losses,
    /// Its parameters (besides [`COMMON`]).
    pub params: &'static [Param],
    /// Its default budget for `loss` (the relation and accountant it states).
    pub default_budget: fn(Loss) -> Budget,
    /// The bounds it needs.
    pub bounds: fn(&NeedContext<'_>) -> Result<Vec<Need>, CatalogError>,
    /// Builds it from the parameters.
    pub build: fn(&Setup<'_>) -> Result<Box<dyn Fit>, CatalogError>,
}

/// What [`Learner::fit`] needs besides the data: the loss, the target δ, the parameters and
/// the bounds from [`Learner::needs`].
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The loss.
    pub loss: Loss,
    /// The target δ (ε is the bounds' [`PrivateBounds::learner_epsilon`]).
    pub delta: f64,
    /// The parameters.
    pub params: &'a Params,
    /// The bounds it needs ([`Learner::needs`]).
    pub needs: &'a [Need],
}

/// Observes a fit's progress (a front door's progress bar). Library code never prints.
pub trait Progress {
    /// A new stage begins, with its number of units when known.
    fn stage(&mut self, name: &str, units: Option<u64>);
    /// One more unit of the current stage is done.
    fn advance(&mut self);
    /// The optimiser finished step `iteration` (from 0) of the fit. The default ignores it.
    fn step(&mut self, iteration: usize) {
        let _ = iteration;
    }
}

/// Passes the optimiser's steps to a [`Progress`].
struct Steps<'a>(&'a mut dyn Progress);

impl Observer for Steps<'_> {
    fn observe(&mut self, info: &IterationInfo) -> bool {
        self.0.step(info.iteration);
        true
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&mut self, _: &str, _: Option<u64>) {}
    fn advance(&mut self) {}
}

/// The relation and accountant choices every learner takes.
const NEIGHBOURING: &[&str] = &["add-remove", "replace-one"];
const ACCOUNTANTS: &[&str] = &["pld", "rdp"];

/// The parameters every learner takes.
pub const COMMON: &[Param] = &[
    Param::new(
        "neighbouring",
        Kind::Choice(NEIGHBOURING),
        "the learner's",
        "The neighbouring relation of the guarantee.",
    ),
    Param::new(
        "accountant",
        Kind::Choice(ACCOUNTANTS),
        "the learner's",
        "The accountant that calibrates the noise and prices the ledger.",
    ),
];

impl Learner {
    /// Its default neighbouring relation for `loss`.
    pub fn neighbouring(&self, loss: Loss) -> Neighbouring {
        (self.default_budget)(loss).neighbouring
    }

    /// The neighbouring relation of a fit with `params` for `loss`: the `neighbouring`
    /// parameter, else [`Learner::neighbouring`]. Public: it is known before any data is
    /// read (a [`SharedBudget`](crate::shared_budget::SharedBudget) checks it then).
    ///
    /// # Errors
    /// An invalid `neighbouring` value.
    pub fn relation(&self, loss: Loss, params: &Params) -> Result<Neighbouring, CatalogError> {
        Ok(match params.choice("neighbouring", NEIGHBOURING)? {
            Some("add-remove") => Neighbouring::AddRemove,
            Some(_) => Neighbouring::ReplaceOne,
            // DP-SGD's shuffled and fixed-size batches are analysed under replace-one.
            None if self.name == "dp-sgd"
                && matches!(
                    params.choice("batch_schedule", SCHEDULES)?,
                    Some("shuffle" | "fixed")
                ) =>
            {
                Neighbouring::ReplaceOne
            }
            None => self.neighbouring(loss),
        })
    }

    /// Whether a fit of it with `params` for `loss` counts its rows privately before it
    /// fits: it reads the number of rows (it takes `public_n`), under add/remove, and no
    /// public `n` was given. Public: it is known before any data is read.
    ///
    /// # Privacy
    /// Under add/remove the number of rows is private; such a fit releases it only through
    /// [`PrivateCount`] ([`crate::row_count`]).
    ///
    /// # Errors
    /// As [`Learner::relation`]; a `public_n` that is not a count.
    ///
    /// AdaSSP is the exception: it sizes its exact integer sums' grids and its eigen-solver
    /// allowance for an upper bound on `n`, which a noisy count is only with a failure
    /// probability its δ would have to carry; without a public `n` it reads the data's count
    /// and its report says that `n` is treated as public.
    pub fn rows_to_count(&self, loss: Loss, params: &Params) -> Result<bool, CatalogError> {
        Ok(self.uses("public_n")
            && self.name != "ssp"
            && self.relation(loss, params)? == Neighbouring::AddRemove
            && params.count("public_n")?.is_none())
    }

    /// The private count of `rows` records when a fit with `params` counts them
    /// ([`Learner::rows_to_count`]), at the target `epsilon`; record it with
    /// [`PrivateBounds::count`] before the fit. A front door counts first, before any other
    /// estimate, so that every path draws the same noise in the same order.
    ///
    /// # Privacy
    /// [`PrivateCount::estimate`]: pure DP under add/remove, recorded in the fit's tree.
    ///
    /// # Errors
    /// As [`Learner::rows_to_count`] and [`PrivateCount::estimate`].
    pub fn count_rows(
        &self,
        loss: Loss,
        params: &Params,
        rows: usize,
        epsilon: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<PrivateCount>, CatalogError> {
        if !self.rows_to_count(loss, params)? {
            return Ok(None);
        }
        Ok(Some(PrivateCount::estimate(rows, epsilon, rng)?))
    }

    /// Its default accountant for `loss`.
    pub fn accountant(&self, loss: Loss) -> AccountantKind {
        (self.default_budget)(loss).accountant
    }

    /// Whether its noise is calibrated against the whole ledger when bounds were estimated
    /// ([`PrivateBounds::learner_budget`]): the learners whose whole ledger is one
    /// calibration of `learners::calibrate` (DP-GD, noisy projected GD and its JL form,
    /// untuned DP-SGD, DP-AMBSSGD, output perturbation, SSP) or of objective perturbation's
    /// `(σ, λ)` rule (objective perturbation, AMP). The others (DP-SSGD's shuffling,
    /// non-convex DP-GD's two parts, tuning and selection) are calibrated for the ε the
    /// estimates leave.
    pub fn calibrates_jointly(&self, params: &Params) -> bool {
        match self.name {
            "dp-gd"
            | "noisy-gd"
            | "jl-noisy-gd"
            | "dp-ambssgd"
            | "output-perturbation"
            | "ssp"
            | "objpert"
            | "amp" => true,
            "dp-sgd" => !params.contains("tune"),
            _ => false,
        }
    }

    /// The description of parameter `name`, if the learner uses it (including [`COMMON`]).
    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().chain(COMMON).find(|p| p.name == name)
    }

    /// Whether it uses parameter `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.param(name).is_some()
    }

    /// Checks `params`: every one used by the learner, of the right type.
    ///
    /// # Errors
    /// [`CatalogError::NotApplicable`] for the first parameter it does not use,
    /// [`CatalogError::WrongType`] or [`CatalogError::NotAChoice`] for a bad value.
    pub fn check(&self, params: &Params) -> Result<(), CatalogError> {
        for name in params.names() {
            let Some(p) = self.param(name) else {
                return Err(CatalogError::NotApplicable {
                    param: name.to_string(),
                    learner: self.name,
                    uses: self.params.iter().map(|p| p.name).collect(),
                });
            };
            match p.kind {
                Kind::Real => params.real(name).map(drop)?,
                Kind::Count => params.count(name).map(drop)?,
                Kind::Choice(c) => params.choice(name, c).map(drop)?,
                Kind::RealList => params.list(name).map(drop)?,
            }
        }
        Ok(())
    }

    /// The bounds it needs with `loss`, rows bounded by `row_bound` (public, from the
    /// preprocessing) and `params`: each given, implied, defaulted or to be estimated.
    ///
    /// # Errors
    /// A bound parameter of the wrong type.
    pub fn needs(
        &self,
        loss: Loss,
        row_bound: Option<f64>,
        params: &Params,
    ) -> Result<Vec<Need>, CatalogError> {
        (self.bounds)(&NeedContext {
            loss,
            row_bound,
            params,
        })
    }

    /// Fits it: records or estimates the bounds of `request.needs` in `bounds` (which may
    /// already hold other estimates, e.g. a feature scaling's), builds the learner for the
    /// ε the bounds leave, fits, and composes the bounds' ledger into the model's report.
    ///
    /// # Errors
    /// A loss it does not fit, parameters as [`Learner::check`] or that do not go together
    /// ([`CatalogError::Conflict`]), the bounds' and the learner's errors
    /// ([`CatalogError::Fit`]).
    pub fn fit(
        &self,
        request: &Request<'_>,
        data: &Dataset,
        bounds: PrivateBounds,
        rng: &mut dyn Rng,
        progress: &mut dyn Progress,
    ) -> Result<(LinearModel, PrivateBounds), CatalogError> {
        let shape = (data.n_samples(), data.n_features());
        self.fit_records(request, data, shape, bounds, rng, progress, |l, rng, o| {
            Ok(l.fit_observed(data, rng, o)?)
        })
    }

    /// Whether it fits sparse rows ([`Learner::fit_sparse`]): DP-GD, DP-SGD (tuned too: the
    /// split, the runs and the validation counts read the sparse rows), noisy projected GD,
    /// objective perturbation, AMP (either solver), output perturbation and AdaSSP.
    pub fn fits_sparse(&self) -> bool {
        matches!(
            self.name,
            "dp-gd" | "dp-sgd" | "noisy-gd" | "objpert" | "amp" | "output-perturbation" | "ssp"
        )
    }

    /// The error of a learner without a sparse path.
    fn no_sparse_path(&self) -> CatalogError {
        CatalogError::Conflict(format!(
            "{} has no sparse path: fit the rows densified",
            self.name
        ))
    }

    /// [`Learner::fit`] on sparse rows, never densified: the bounds estimated from the same
    /// row norms and labels, the learner fitted by [`Fit::fit_sparse`] — the same model as
    /// [`Learner::fit`] on the rows densified (for the fits that take sparse rows,
    /// [`Learner::fits_sparse`]).
    ///
    /// # Errors
    /// As [`Learner::fit`]; [`CatalogError::Conflict`] for a learner without a sparse path
    /// ([`Learner::fits_sparse`]).
    pub fn fit_sparse(
        &self,
        request: &Request<'_>,
        data: &SparseDataset,
        bounds: PrivateBounds,
        rng: &mut dyn Rng,
        progress: &mut dyn Progress,
    ) -> Result<(LinearModel, PrivateBounds), CatalogError> {
        // Before any estimate spends budget.
        if !self.fits_sparse() {
            return Err(self.no_sparse_path());
        }
        let shape = (data.n_samples(), data.n_features());
        self.fit_records(request, data, shape, bounds, rng, progress, |l, rng, o| {
            Ok(l.fit_sparse(data, rng, o)
                .ok_or_else(|| self.no_sparse_path())??)
        })
    }

    /// [`Learner::fit`] on `data` of `shape`, the learner fitted by `fit`.
    #[allow(clippy::too_many_arguments)]
    fn fit_records(
        &self,
        request: &Request<'_>,
        data: &dyn Records,
        shape: (usize, usize),
        mut bounds: PrivateBounds,
        rng: &mut dyn Rng,
        progress: &mut dyn Progress,
        fit: impl FnOnce(&dyn Fit, &mut dyn Rng, &mut dyn Observer) -> Result<LinearModel, CatalogError>,
    ) -> Result<(LinearModel, PrivateBounds), CatalogError> {
        let loss = request.loss;
        if self.losses == Losses::Squared && loss != Loss::Squared {
            return Err(CatalogError::Conflict(format!(
                "{} fits linear regression: use {{loss}} squared",
                self.name
            )));
        }
        self.check(request.params)?;
        let estimates = request.needs.iter().filter(|n| n.is_estimated()).count();
        if estimates > 0 {
            progress.stage("estimating bounds", Some(estimates as u64));
        }
        for need in request.needs {
            match (need.given, need.fallback) {
                (Some(v), _) | (None, Fallback::Default(v)) => {
                    bounds.public(need.name, v, false);
                }
                (None, Fallback::Preprocessing(v)) => {
                    bounds.public(need.name, v, true);
                }
                (None, Fallback::Estimate(statistic)) => {
                    bounds.estimate(need.name, statistic, data, rng)?;
                    progress.advance();
                }
            }
        }
        // Under add/remove without a public n the learner reads a private count instead.
        let counted;
        let params = match self.rows_to_count(loss, request.params)? {
            false => request.params,
            true => {
                // Counted here when the front door did not count first.
                let n = match bounds.counted() {
                    Some((n, _)) => n,
                    None => {
                        bounds.count(PrivateCount::estimate(shape.0, bounds.epsilon(), rng)?)?
                    }
                };
                let mut p = request.params.clone();
                p.set("public_n", Value::Count(n));
                counted = p;
                &counted
            }
        };
        let mut budget = (self.default_budget)(loss);
        budget.delta = request.delta;
        budget.neighbouring = self.relation(loss, params)?;
        match request.params.choice("accountant", ACCOUNTANTS)? {
            Some("pld") => budget.accountant = AccountantKind::Pld,
            Some(_) => budget.accountant = AccountantKind::Rdp,
            None => {}
        }
        let budget = bounds.learner_budget(budget, self.calibrates_jointly(request.params));
        let bound = |name: &str| {
            bounds
                .bounds()
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.value)
        };
        let setup = Setup {
            loss,
            params,
            budget,
            x_bound: bound("x_bound"),
            y_bound: bound("y_bound"),
            clip: bound("clip"),
            shape,
        };
        let learner = (self.build)(&setup)?;
        progress.stage(&format!("fitting {}", self.name), None);
        let model = fit(learner.as_ref(), rng, &mut Steps(progress))?;
        let model = bounds.compose(model)?;
        Ok((model, bounds))
    }
}

/// The learner called `name`.
///
/// # Errors
/// [`CatalogError::UnknownLearner`].
pub fn learner(name: &str) -> Result<&'static Learner, CatalogError> {
    LEARNERS
        .iter()
        .find(|l| l.name == name)
        .ok_or_else(|| CatalogError::UnknownLearner {
            name: name.to_string(),
            known: LEARNERS
                .iter()
                .map(|l| l.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The loss called `name` (`logistic`, `squared`, `huber`, `huber-svm`, `savage`), with the
/// threshold `h` of Huber (default 1) and Huber-SVM (default [`DEFAULT_HUBER_SVM_H`]).
///
/// # Errors
/// [`CatalogError::UnknownLoss`]; `h` given for a loss without one
/// ([`CatalogError::Conflict`]); an invalid `h` ([`Error::InvalidHyperParameter`] naming `h`).
pub fn loss(name: &str, h: Option<f64>) -> Result<Loss, CatalogError> {
    let loss = match name {
        "logistic" => Loss::Logistic,
        "squared" => Loss::Squared,
        "savage" => Loss::Savage,
        "huber" => return Ok(Loss::huber(h.unwrap_or(1.0))?),
        "huber-svm" => return Ok(Loss::huber_svm(h.unwrap_or(DEFAULT_HUBER_SVM_H))?),
        other => return Err(CatalogError::UnknownLoss(other.to_string())),
    };
    match h {
        Some(_) => Err(CatalogError::Conflict(format!(
            "{{h}} applies to the huber and huber-svm losses, not {name}"
        ))),
        None => Ok(loss),
    }
}

// The parameters, shared by the learners that use them.
const CLIP: Param = Param::new(
    "clip",
    Kind::Real,
    "the learner's (1) when the preprocessing bounds the rows and the loss is \
              Lipschitz, else estimated privately",
    "Per-example gradient clipping norm.",
);
const OBJPERT_CLIP: Param = Param {
    default: "the learner's; estimated privately for losses with unbounded gradients",
    ..CLIP
};
const ESTIMATED_CLIP: Param = Param {
    default: "estimated privately (a high quantile of the gradient norms at 0)",
    ..CLIP
};
const STEPS: Param = Param::new(
    "steps",
    Kind::Count,
    "the learner's",
    "Number of full-batch steps.",
);
const LEARNING_RATE: Param = Param::new("learning_rate", Kind::Real, "the learner's", "Step size.");
const LAMBDA: Param = Param::new("lambda", Kind::Real, "the learner's", "Ridge penalty λ.");
const RADIUS: Param = Param::new(
    "radius",
    Kind::Real,
    "the learner's",
    "Radius of the constraint ball.",
);
const X_BOUND: Param = Param::new(
    "x_bound",
    Kind::Real,
    "implied by the preprocessing, else estimated privately",
    "Public bound on the row norms; rows beyond it are clipped.",
);
const Y_BOUND: Param = Param::new(
    "y_bound",
    Kind::Real,
    "estimated privately (regression)",
    "Public bound on the labels' magnitude; labels beyond it are clipped.",
);
const PUBLIC_N: Param = Param::new(
    "public_n",
    Kind::Count,
    "under add/remove a private count of the rows (5% of epsilon; AdaSSP: the true count, \
     treated as public); under replace-one the true count, public there",
    "The number of rows as a public value (under add/remove the true count is private): \
     everything the learner derives from n (the divisor of its noisy sums, their grid, \
     default steps, step size, ridge, sampling rate) uses it.",
);
const BATCH_SIZE: Param = Param::new(
    "batch_size",
    Kind::Count,
    "the learner's",
    "(Expected) batch size.",
);
const UPDATES: &[&str] = &["sgd", "momentum", "adam"];
const SCHEDULES: &[&str] = &["poisson", "shuffle", "fixed"];

/// DP-GD, Song et al. 2021 Alg. 1.
fn dp_gd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = DpGd::new(s.loss);
    l.budget = s.budget;
    set(&mut l.clip, s.clip);
    set(&mut l.steps, s.count("steps")?);
    set(&mut l.learning_rate, s.real("learning_rate")?);
    set(&mut l.lambda, s.real("lambda")?);
    l.radius = s.real("radius")?;
    l.public_n = s.count("public_n")?;
    Ok(Box::new(l))
}

/// Non-convex DP-GD, Song et al. 2021 Thm 4.1.
fn nonconvex_dp_gd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = NonConvexDpGd::new(s.loss);
    l.budget = s.budget;
    set(&mut l.clip, s.clip);
    set(&mut l.steps, s.count("steps")?);
    set(&mut l.learning_rate, s.real("learning_rate")?);
    set(&mut l.lambda, s.real("lambda")?);
    l.public_n = s.count("public_n")?;
    Ok(Box::new(l))
}

/// DP-SGD (Abadi et al. 2016) with Gaussian noise and its update rule, optionally tuned. (The
/// library's Gamma-ball noise is not offered: its floating-point noise is not private as
/// computed, and `DpSgd` refuses it outside experiments.)
fn dp_sgd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let p = s.params;
    let mut l = DpSgd::new(s.loss);
    l.budget = s.budget;
    set(&mut l.clip, s.clip);
    set(&mut l.epochs, s.count("epochs")?);
    l.sampling_rate = s.real("sampling_rate")?;
    l.public_n = s.count("public_n")?;
    l.batch_size = match (s.count("batch_size")?, l.public_n) {
        (Some(b), _) => b,
        // The default batch, at most the public (or privately counted) n: q ≤ 1.
        (None, Some(n)) => l.batch_size.min(n),
        (None, None) => l.batch_size,
    };
    l.schedule = match p.choice("batch_schedule", SCHEDULES)? {
        Some("shuffle") => SgdSchedule::Shuffle,
        Some("fixed") => SgdSchedule::Fixed,
        _ => SgdSchedule::Poisson,
    };
    if l.schedule == SgdSchedule::Fixed && !p.contains("accountant") {
        // Only RDP prices sampling without replacement (PLD refuses it, naming rdp).
        l.budget.accountant = AccountantKind::Rdp;
    }
    set(&mut l.learning_rate, s.real("learning_rate")?);
    set(&mut l.lambda, s.real("lambda")?);
    let momentum = s.real("momentum")?;
    l.update = match (p.choice("update", UPDATES)?, momentum) {
        (Some("momentum"), beta) => {
            let beta = beta.unwrap_or(0.9);
            ensure(
                (0.0..1.0).contains(&beta),
                "momentum",
                beta,
                "must be in [0, 1)",
            )?;
            UpdateRule::Momentum { beta }
        }
        (_, Some(_)) => {
            return Err(CatalogError::Conflict(
                "{momentum} applies to {update} momentum only".into(),
            ));
        }
        (Some("adam"), None) => UpdateRule::adam(),
        _ => UpdateRule::Sgd,
    };
    let tune = p.choice("tune", &["honest", "unaccounted"])?;
    let rates = p.list("learning_rates")?;
    let trials = s.real("tune_trials")?;
    let Some(tune) = tune else {
        if rates.is_some() || trials.is_some() {
            return Err(CatalogError::Conflict(
                "{learning_rates} and {tune_trials} need {tune} honest|unaccounted".into(),
            ));
        }
        return Ok(Box::new(l));
    };
    let rates = rates.unwrap_or_else(|| vec![l.learning_rate]);
    if tune == "honest" {
        let mean = trials.unwrap_or(rates.len() as f64);
        return Ok(Box::new(HonestTuning::new(l, rates, mean)));
    }
    if trials.is_some() {
        return Err(CatalogError::Conflict(
            "{tune_trials} applies to {tune} honest only".into(),
        ));
    }
    Ok(Box::new(TuningWithoutPrivacyAccounting::new(l, rates)))
}

/// Noisy projected GD (Arora et al. 2022, Alg. 1) with the bounds and knobs from the
/// parameters.
fn projected(s: &Setup<'_>) -> Result<NoisyProjectedGd, CatalogError> {
    let mut l = NoisyProjectedGd::new(s.loss);
    l.budget = s.budget;
    set(&mut l.radius, s.real("radius")?);
    set(&mut l.x_bound, s.x_bound);
    set(&mut l.y_bound, s.y_bound);
    l.steps = s.count("steps")?.or(l.steps);
    l.learning_rate = s.real("learning_rate")?.or(l.learning_rate);
    l.public_n = s.count("public_n")?;
    Ok(l)
}

fn noisy_gd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    Ok(Box::new(projected(s)?))
}

fn jl_noisy_gd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    Ok(Box::new(JlNoisyGd {
        base: projected(s)?,
        k: s.count("k")?,
    }))
}

/// Private grid search over the radius around noisy projected GD (Arora et al. 2022 Alg. 4).
fn grid_search(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let base = projected(s)?;
    let mut l = PrivateGridSearch::new(base, s.budget.epsilon, s.budget.delta);
    set(&mut l.candidates, s.count("candidates")?);
    set(&mut l.x_bound, s.x_bound);
    set(&mut l.y_bound, s.y_bound);
    Ok(Box::new(l))
}

/// Confidence boosting of noisy projected GD at a radius (Arora et al. 2022 Alg. 3).
fn boosting(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let base = projected(s)?;
    let radius = base.radius;
    let mut l = ConfidenceBoosting::new(base, radius, s.budget.epsilon, s.budget.delta);
    set(&mut l.models, s.count("models")?);
    set(&mut l.x_bound, s.x_bound);
    set(&mut l.y_bound, s.y_bound);
    Ok(Box::new(l))
}

fn ssp(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = Ssp::new(1.0, 1.0);
    l.budget = s.budget;
    set(&mut l.bound_x, s.x_bound);
    set(&mut l.bound_y, s.y_bound);
    l.public_n = s.count("public_n")?;
    Ok(Box::new(l))
}

/// DP-SSGD's step size when none is given: `η = 1/(20·ζ²α²d)`, at most the learner's
/// default. A rule of thumb from public quantities only (the clip ζ, the calibrated noise
/// multiplier α, the dimension d): the noisy iterates of constant-step SGD on a quadratic of
/// curvature `h` spread with variance about `η(2ζα)²d/(2h)` around the minimiser; keeping that
/// near a tenth (at `h ≈ 1/2`) stops the noise from driving the iterates into the clipped
/// region, and the average of the last N/2 iterates removes the rest (Varshney et al.'s
/// `η = 1/(4d)` ignores the noise). The step size is not a privacy parameter.
fn ssgd_learning_rate(l: &DpSsgd, (n, d): (usize, usize)) -> crate::Result<f64> {
    let alpha = l.noise_multiplier(n, d)?;
    let rule = 1.0 / (20.0 * l.clip * l.clip * alpha * alpha * d as f64);
    Ok(rule.min(DpSsgd::new().learning_rate))
}

fn dp_ssgd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = DpSsgd::new();
    l.budget = s.budget;
    set(&mut l.clip, s.clip);
    l.learning_rate = match s.real("learning_rate")? {
        Some(rate) => rate,
        None => ssgd_learning_rate(&l, s.shape)?,
    };
    Ok(Box::new(l))
}

fn dp_ambssgd(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = DpAmbSsgd::new(1.0, s.real("radius")?.unwrap_or(10.0));
    set(&mut l.radius_x, s.x_bound);
    l.budget = s.budget;
    set(&mut l.learning_rate, s.real("learning_rate")?);
    l.batch_size = match s.count("batch_size")? {
        Some(b) => b,
        None => l.batch_size_for(s.shape.0),
    };
    Ok(Box::new(l))
}

fn objective_perturbation(s: &Setup<'_>) -> Result<ObjectivePerturbation, CatalogError> {
    let mut o = ObjectivePerturbation::new(s.loss);
    o.budget = s.budget;
    set(&mut o.x_bound, s.x_bound);
    o.clip = s.clip;
    o.lambda = s.real("lambda")?;
    Ok(o)
}

fn objpert(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut o = objective_perturbation(s)?;
    o.public_n = s.count("public_n")?;
    Ok(Box::new(o))
}

fn amp(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = Amp::new(s.loss);
    l.objpert = objective_perturbation(s)?;
    l.objpert.public_n = s.count("public_n")?;
    l.tau = s.real("tau")?;
    l.sigma_out = s.real("sigma_out")?;
    if s.params.choice("solver", &["lbfgs", "sag"])? == Some("sag") {
        l.solver = AmpSolver::Sag;
    }
    Ok(Box::new(l))
}

fn output_perturbation(s: &Setup<'_>) -> Result<Box<dyn Fit>, CatalogError> {
    let mut l = OutputPerturbation::new(s.loss);
    l.budget = s.budget;
    set(&mut l.x_bound, s.x_bound);
    set(&mut l.radius, s.real("radius")?);
    set(&mut l.y_bound, s.y_bound);
    l.public_n = s.count("public_n")?;
    l.lambda = match s.real("lambda")? {
        Some(lambda) => lambda,
        None => l.default_lambda(s.shape)?,
    };
    Ok(Box::new(l))
}

/// The budget of the selection procedures: PLD, replace-one (Arora et al. 2022).
fn selection_budget(_: Loss) -> Budget {
    Budget::new(1.0, 1e-5, AccountantKind::Pld, Neighbouring::ReplaceOne)
}

/// Every learner. Adding one: its file, and one entry here.
pub static LEARNERS: &[Learner] = &[
    Learner {
        name: "dp-gd",
        doc: "DP gradient descent with clipped full-batch gradients (Song et al. 2021, Alg. 1).",
        losses: Losses::Any,
        params: &[CLIP, STEPS, LEARNING_RATE, LAMBDA, RADIUS, PUBLIC_N],
        default_budget: |loss| DpGd::new(loss).budget,
        bounds: |c| Ok(vec![c.clip(DpGd::new(c.loss).clip)?]),
        build: dp_gd,
    },
    Learner {
        name: "dp-sgd",
        doc: "DP-SGD with Poisson sampling and Gaussian noise (Abadi et al. 2016), optionally \
              tuned over learning rates (Papernot & Steinke \
              2022).",
        losses: Losses::Any,
        params: &[
            CLIP,
            Param::new(
                "epochs",
                Kind::Count,
                "5",
                "Number of epochs: ⌈epochs/q⌉ steps.",
            ),
            BATCH_SIZE,
            Param::new(
                "sampling_rate",
                Kind::Real,
                "batch_size/n",
                "Poisson sampling rate q in (0, 1], a public value.",
            ),
            PUBLIC_N,
            Param::new(
                "batch_schedule",
                Kind::Choice(SCHEDULES),
                "poisson",
                "Batch schedule: poisson (add/remove, subsampled Gaussian), shuffle (one pass \
                 over a random permutation; replace-one, the steps composed sequentially) or \
                 fixed (fixed-size batches without replacement; replace-one, RDP). Shuffle \
                 and fixed default to replace-one and refuse add/remove; fixed defaults to the \
                 rdp accountant, the only one that prices it.",
            ),
            LEARNING_RATE,
            LAMBDA,
            Param::new(
                "update",
                Kind::Choice(UPDATES),
                "sgd",
                "Update rule (post-processing): plain SGD, heavy-ball momentum, or Adam \
                      (β₁ = 0.9, β₂ = 0.999).",
            ),
            Param::new(
                "momentum",
                Kind::Real,
                "0.9",
                "Momentum coefficient β in [0, 1) (update momentum).",
            ),
            Param::new(
                "tune",
                Kind::Choice(&["honest", "unaccounted"]),
                "no tuning",
                "Tune the learning rate: honest (Papernot–Steinke, accounted) or \
                      unaccounted (every rate at the full budget; the report says so).",
            ),
            Param::new(
                "learning_rates",
                Kind::RealList,
                "the learning rate",
                "Candidate learning rates for tune.",
            ),
            Param::new(
                "tune_trials",
                Kind::Real,
                "the number of rates",
                "Mean number of trials of honest tuning (K ~ Poisson).",
            ),
        ],
        default_budget: |loss| DpSgd::new(loss).budget,
        bounds: |c| Ok(vec![c.clip(DpSgd::new(c.loss).clip)?]),
        build: dp_sgd,
    },
    Learner {
        name: "noisy-gd",
        doc: "Noisy projected gradient descent on a ball (Arora et al. 2022, Alg. 1; Nikolov's \
              lecture notes).",
        losses: Losses::Any,
        params: &[STEPS, LEARNING_RATE, RADIUS, X_BOUND, Y_BOUND, PUBLIC_N],
        default_budget: |loss| NoisyProjectedGd::new(loss).budget,
        bounds: |c| c.x_and_y(),
        build: noisy_gd,
    },
    Learner {
        name: "objpert",
        doc: "Objective perturbation (Kifer, Smith & Thakurta 2012; Redberg, Koskela & Wang, \
              Thm 3.1/3.2).",
        losses: Losses::Any,
        params: &[OBJPERT_CLIP, LAMBDA, X_BOUND, PUBLIC_N],
        default_budget: |loss| ObjectivePerturbation::new(loss).budget,
        bounds: objpert_needs,
        build: objpert,
    },
    Learner {
        name: "amp",
        doc: "Approximate minima perturbation (Iyengar et al. 2019; Redberg, Koskela & Wang, \
              Thm 4.1).",
        losses: Losses::Any,
        params: &[
            OBJPERT_CLIP,
            LAMBDA,
            X_BOUND,
            PUBLIC_N,
            Param::new(
                "tau",
                Kind::Real,
                "5e-4·L/√2 (5e-4 at L = √2), raised to the gradient's floating-point floor",
                "Gradient-norm tolerance τ of the approximate minimiser.",
            ),
            Param::new(
                "sigma_out",
                Kind::Real,
                "0.15·√2/L (0.15 at L = √2), raised to hold the release box",
                "Output noise σ_out.",
            ),
            Param::new(
                "solver",
                Kind::Choice(&["lbfgs", "sag"]),
                "lbfgs",
                "The solver tried first (costs no privacy; ‖∇J‖ ≤ τ is enforced).",
            ),
        ],
        default_budget: |loss| Amp::new(loss).objpert.budget,
        bounds: objpert_needs,
        build: amp,
    },
    Learner {
        name: "output-perturbation",
        doc: "Output perturbation of the regularised minimiser (Chaudhuri, Monteleoni & \
              Sarwate 2011).",
        losses: Losses::Any,
        params: &[LAMBDA, RADIUS, X_BOUND, Y_BOUND, PUBLIC_N],
        default_budget: |loss| OutputPerturbation::new(loss).budget,
        bounds: |c| c.x_and_y(),
        build: output_perturbation,
    },
    Learner {
        name: "jl-noisy-gd",
        doc: "Noisy projected GD after a Johnson–Lindenstrauss projection (Arora et al. 2022, \
              Alg. 2).",
        losses: Losses::Any,
        params: &[
            STEPS,
            LEARNING_RATE,
            RADIUS,
            X_BOUND,
            Y_BOUND,
            Param::new(
                "k",
                Kind::Count,
                "the learner's rule from n and d",
                "JL target dimension.",
            ),
            PUBLIC_N,
        ],
        default_budget: |loss| NoisyProjectedGd::new(loss).budget,
        bounds: |c| c.x_and_y(),
        build: jl_noisy_gd,
    },
    Learner {
        name: "dp-ssgd",
        doc: "DP shuffled SGD for linear regression (Varshney et al. 2022, Alg. 1).",
        losses: Losses::Squared,
        params: &[
            ESTIMATED_CLIP,
            Param {
                default: "1/(20·clip²·α²·d), at most the learner's",
                ..LEARNING_RATE
            },
        ],
        default_budget: |_| DpSsgd::new().budget,
        bounds: |c| Ok(vec![c.estimated_clip()?]),
        build: dp_ssgd,
    },
    Learner {
        name: "dp-ambssgd",
        doc: "DP adaptive mini-batch streaming SGD for linear regression (Varshney et al. \
              2022, Alg. 3).",
        losses: Losses::Squared,
        params: &[
            Param {
                default: "n/10 minus the statistics' size, at least 1000",
                ..BATCH_SIZE
            },
            LEARNING_RATE,
            Param {
                default: "10",
                doc: "Public bound B on the parameter domain.",
                ..RADIUS
            },
            X_BOUND,
        ],
        default_budget: |_| DpAmbSsgd::new(1.0, 1.0).budget,
        bounds: |c| Ok(vec![c.x()?]),
        build: dp_ambssgd,
    },
    Learner {
        name: "ssp",
        doc: "Sufficient statistics perturbation (AdaSSP, Wang 2018).",
        losses: Losses::Squared,
        params: &[X_BOUND, Y_BOUND, PUBLIC_N],
        default_budget: |_| Ssp::new(1.0, 1.0).budget,
        bounds: |c| c.x_and_y(),
        build: ssp,
    },
    Learner {
        name: "nonconvex-dp-gd",
        doc: "DP-GD for non-convex losses (e.g. savage) returning a noisy-min selected iterate \
              (Song et al. 2021, Thm 4.1).",
        losses: Losses::Any,
        params: &[CLIP, STEPS, LEARNING_RATE, LAMBDA, PUBLIC_N],
        default_budget: |loss| NonConvexDpGd::new(loss).budget,
        bounds: |c| Ok(vec![c.clip(NonConvexDpGd::new(c.loss).clip)?]),
        build: nonconvex_dp_gd,
    },
    Learner {
        name: "grid-search",
        doc: "Private grid search over the radius of noisy projected GD (Arora et al. 2022, \
              Alg. 4): half the rows fit one model per radius, the other half select one by \
              the generalised exponential mechanism.",
        losses: Losses::Any,
        params: &[
            STEPS,
            LEARNING_RATE,
            X_BOUND,
            Y_BOUND,
            Param::new(
                "candidates",
                Kind::Count,
                "6 (radii 2, 4, …, 64)",
                "Number of radii.",
            ),
        ],
        default_budget: selection_budget,
        bounds: selection_needs,
        build: grid_search,
    },
    Learner {
        name: "confidence-boosting",
        doc: "Confidence boosting of noisy projected GD (Arora et al. 2022, Alg. 3): models \
              fitted on disjoint parts, the best on held-out rows chosen by report-noisy-max.",
        losses: Losses::Any,
        params: &[
            STEPS,
            LEARNING_RATE,
            RADIUS,
            X_BOUND,
            Y_BOUND,
            Param::new("models", Kind::Count, "4", "Number of models (parts)."),
        ],
        default_budget: selection_budget,
        bounds: selection_needs,
        build: boosting,
    },
];

/// ObjPert and AMP: the row bound, and a clip where the loss's gradients are unbounded
/// (squared) or one is given.
fn objpert_needs(c: &NeedContext<'_>) -> Result<Vec<Need>, CatalogError> {
    let clip = c.estimated_clip()?;
    Ok(std::iter::once(c.x()?)
        .chain((c.loss.lipschitz().is_none() || clip.given.is_some()).then_some(clip))
        .collect())
}

/// The selection procedures' loss bound `Λ(B) = (Y + √(H/2)·B·X)²` needs both `X` and `Y`,
/// also for classification (where `Y = 1` bounds `φ(0, y)` of the logistic loss by ln 2 ≤ 1).
fn selection_needs(c: &NeedContext<'_>) -> Result<Vec<Need>, CatalogError> {
    let mut needs = c.x_and_y()?;
    if !needs.iter().any(|n| n.name == "y_bound") {
        needs.push(Need {
            name: "y_bound",
            given: None,
            fallback: Fallback::Default(1.0),
        });
    }
    Ok(needs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::learners::testdata::logistic;

    /// Logistic labels on rows of norm ≤ 1.
    fn classification(n: usize, d: usize, seed: u64) -> Dataset {
        logistic(n, d, 3.0, seed).0
    }

    /// The same rows with a linear response `⟨x, θ⟩`.
    fn regression(n: usize, d: usize, seed: u64) -> Dataset {
        let (data, theta) = logistic(n, d, 1.0, seed);
        let y = data.x().dot(&theta);
        Dataset::new(data.x().to_owned(), y).unwrap()
    }

    fn fit(name: &str, loss: Loss, params: &Params, data: &Dataset) -> LinearModel {
        let l = learner(name).unwrap();
        let needs = l.needs(loss, Some(1.0), params).unwrap();
        let estimates = needs.iter().filter(|n| n.is_estimated()).count();
        let bounds = PrivateBounds::new(1.0, 1e-5, 0.1, estimates).unwrap();
        let request = Request {
            loss,
            delta: 1e-5,
            params,
            needs: &needs,
        };
        let mut rng = dp_optim::seeded_rng(3);
        l.fit(&request, data, bounds, &mut rng, &mut NoProgress)
            .unwrap()
            .0
    }

    #[test]
    fn names_are_unique_and_parameters_documented() {
        for (i, l) in LEARNERS.iter().enumerate() {
            assert!(LEARNERS[..i].iter().all(|o| o.name != l.name), "{}", l.name);
            for p in l.params.iter().chain(COMMON) {
                assert!(!p.doc.is_empty() && !p.default.is_empty(), "{}", p.name);
                assert_eq!(l.params.iter().filter(|q| q.name == p.name).count(), {
                    usize::from(!COMMON.contains(p))
                });
            }
        }
    }

    #[test]
    fn every_learner_fits_within_its_target() {
        let class = classification(400, 3, 11);
        let reg = regression(3000, 3, 12);
        for l in LEARNERS {
            let (loss, data) = match l.losses {
                Losses::Squared => (Loss::Squared, &reg),
                Losses::Any => (Loss::Logistic, &class),
            };
            let model = fit(l.name, loss, &Params::new(), data);
            let r = model.privacy();
            assert!(r.epsilon <= 1.0 && r.delta <= 1e-5, "{}: {r}", l.name);
            assert!(model.coef().iter().all(|c| c.is_finite()), "{}", l.name);
        }
    }

    /// With `public_n` under add/remove, the report (noise parameters, ledger, notes) is the
    /// same on data with one row more: nothing but the coefficients depends on the true n.
    #[test]
    fn with_public_n_the_report_does_not_depend_on_the_true_n() {
        let first = (0..400).collect::<Vec<_>>();
        let class = classification(401, 3, 31);
        let reg = regression(401, 3, 32);
        let (fewer_class, fewer_reg) = (
            class.select_rows(&first).unwrap(),
            reg.select_rows(&first).unwrap(),
        );
        let mut p = Params::new();
        // The public count bounds the true one (SSP refuses more rows than it).
        p.set("public_n", Value::Count(401));
        p.set("neighbouring", Value::Choice("add-remove".into()));
        p.set("x_bound", Value::Real(1.0));
        p.set("y_bound", Value::Real(1.0));
        p.set("clip", Value::Real(1.0));
        for l in LEARNERS.iter().filter(|l| l.uses("public_n")) {
            let mut q = Params::new();
            for name in p.names().filter(|n| l.uses(n)) {
                q.set(name, p.get(name).unwrap().clone());
            }
            let (loss, fewer, all) = match l.losses {
                Losses::Squared => (Loss::Squared, &fewer_reg, &reg),
                Losses::Any if l.name == "nonconvex-dp-gd" => (Loss::Savage, &fewer_class, &class),
                Losses::Any => (Loss::Logistic, &fewer_class, &class),
            };
            let (a, b) = (fit(l.name, loss, &q, fewer), fit(l.name, loss, &q, all));
            let (ra, rb) = (a.privacy(), b.privacy());
            assert_eq!(ra.neighbouring, Neighbouring::AddRemove, "{}", l.name);
            assert_eq!(
                (&ra.noise, &ra.event, &ra.notes),
                (&rb.noise, &rb.event, &rb.notes),
                "{}",
                l.name
            );
            assert!(
                ra.notes.iter().any(|n| n.contains("n = 401")),
                "{}: {:?}",
                l.name,
                ra.notes
            );
            assert_ne!(a.coef(), b.coef(), "{}", l.name);
        }
    }

    /// With a bound estimated, DP-SGD's noise is calibrated against the whole ledger: the run
    /// spends nearly all of ε (the split alone left about a fifth unspent under PLD) and never
    /// more, with less noise than the split's.
    #[test]
    fn estimated_bounds_and_the_learner_are_calibrated_together() {
        let data = classification(400, 3, 41);
        let l = learner("dp-sgd").unwrap();
        let mut p = Params::new();
        p.set("accountant", Value::Choice("rdp".into()));
        let needs = l.needs(Loss::Logistic, None, &p).unwrap();
        assert!(needs.iter().any(Need::is_estimated));
        let model = {
            let bounds = PrivateBounds::new(1.0, 1e-5, 0.1, 1).unwrap();
            let request = Request {
                loss: Loss::Logistic,
                delta: 1e-5,
                params: &p,
                needs: &needs,
            };
            let mut rng = dp_optim::seeded_rng(5);
            l.fit(&request, &data, bounds, &mut rng, &mut NoProgress)
                .unwrap()
                .0
        };
        let r = model.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.99, "{}", r.epsilon);
        assert_eq!(r.event.releases()[0].mechanism.name(), "pure-dp");
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("together meet the target")),
            "{:?}",
            r.notes
        );
        // The split: the learner alone at ε = 0.85 (less the clip's 10% and the row
        // count's 5%) needs more noise.
        let mut split = DpSgd::new(Loss::Logistic);
        split.budget = Budget::new(0.85, 1e-5, AccountantKind::Rdp, Neighbouring::AddRemove);
        let alone = split.fit(&data, &mut dp_optim::seeded_rng(5)).unwrap();
        let sigma = |m: &LinearModel| m.privacy().noise[0].1;
        assert!(
            sigma(&model) < sigma(&alone),
            "{} vs {}",
            sigma(&model),
            sigma(&alone)
        );
    }

    #[test]
    fn parameters_are_checked_and_named() {
        let l = learner("dp-gd").unwrap();
        let mut p = Params::new();
        p.set("k", Value::Count(2));
        let e = l.check(&p).unwrap_err();
        assert!(matches!(&e, CatalogError::NotApplicable { param, .. } if param == "k"));
        let flag = |n: &str| format!("--{}", n.replace('_', "-"));
        assert!(
            e.message(&flag)
                .unwrap()
                .starts_with("--k does not apply to dp-gd")
        );
        let mut p = Params::new();
        p.set("steps", Value::Real(2.5));
        assert!(matches!(
            l.check(&p).unwrap_err(),
            CatalogError::WrongType { param, .. } if param == "steps"
        ));
        let mut p = Params::new();
        p.set("accountant", Value::Choice("exact".into()));
        assert!(matches!(
            l.check(&p).unwrap_err(),
            CatalogError::NotAChoice { param, .. } if param == "accountant"
        ));
        assert!(matches!(
            learner("sgd").unwrap_err(),
            CatalogError::UnknownLearner { .. }
        ));
    }

    #[test]
    fn conflicts_name_their_parameters() {
        let data = classification(200, 2, 5);
        let l = learner("dp-sgd").unwrap();
        let mut p = Params::new();
        p.set("tune_trials", Value::Real(3.0));
        let needs = l.needs(Loss::Logistic, Some(1.0), &p).unwrap();
        let request = Request {
            loss: Loss::Logistic,
            delta: 1e-5,
            params: &p,
            needs: &needs,
        };
        let bounds = PrivateBounds::new(1.0, 1e-5, 0.1, 0).unwrap();
        let mut rng = dp_optim::seeded_rng(1);
        let e = l
            .fit(&request, &data, bounds, &mut rng, &mut NoProgress)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "`learning_rates` and `tune_trials` need `tune` honest|unaccounted"
        );
        assert_eq!(
            loss("squared", Some(1.0)).unwrap_err().to_string(),
            "`h` applies to the huber and huber-svm losses, not squared"
        );
        assert_eq!(
            loss("huber-svm", None).unwrap(),
            Loss::HuberSvm {
                h: DEFAULT_HUBER_SVM_H
            }
        );
    }

    #[test]
    fn options_change_the_model() {
        let data = classification(400, 3, 21);
        let base = fit("dp-sgd", Loss::Logistic, &Params::new(), &data);
        for (name, value) in [
            ("update", Value::Choice("adam".into())),
            ("update", Value::Choice("momentum".into())),
        ] {
            let mut p = Params::new();
            p.set(name, value);
            let m = fit("dp-sgd", Loss::Logistic, &p, &data);
            assert!(m.privacy().epsilon <= 1.0);
            assert_ne!(m.coef(), base.coef(), "{name}");
        }
        let savage = fit("nonconvex-dp-gd", Loss::Savage, &Params::new(), &data);
        assert!(savage.privacy().epsilon <= 1.0);
    }
}
