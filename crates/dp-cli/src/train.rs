//! `dpglm train` and `dpglm evaluate`.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use dp_data::{Format, LoadedData, Schema, TableSpec};
use dp_glm::bounds::{Bound, BoundSource, PrivateBounds};
use dp_glm::catalog::{self, CatalogError, Learner, Need, Params, Progress, Request};
use dp_glm::row_count::PrivateCount;
use dp_glm::scaling::{FittedScaling, PublicScale, ScalingMethod, ScalingPlan};
use dp_glm::shared_budget::Reservation;
use dp_glm::{
    BoundRecord, Dataset, LinearModel, Loss, NoiseSource, Preprocessing, PrivacyReport, text_up,
};
use serde_json::{Value, json};

use crate::CliError;
use crate::cli::{AlgorithmArg, EvaluateArgs, PreprocessArg, ScaleArg, ScoringArgs, TrainArgs};
use crate::mechanism_args::show;
use crate::model_file::{
    finite, input_spec, noise_source_json, not_replaceable, read_model, resolved, write_atomically,
};
use crate::schema::{data_error, schema_of, task_of};

mod sparse;
mod storage;
mod stream;

pub(crate) fn io(e: std::io::Error) -> CliError {
    CliError::Failure(format!("cannot write output: {e}"))
}

/// The command-line flag a learner's hyper-parameter name comes from, when it comes from one
/// (learners also check quantities they derive, e.g. a sampling rate, which no flag names):
/// the names learners use in their errors, then every parameter of the catalog
/// ([`dp_glm::catalog`]: `--` and the name with `-` for `_`). `algorithm` tells the names
/// two learners use apart (`candidates`: grid-search's radii, or the rates of DP-SGD's tuning).
fn flag_of(name: &str, algorithm: Option<AlgorithmArg>) -> Option<String> {
    let flag = match name {
        "epsilon" | "target_epsilon" => "--epsilon",
        "delta" | "target_delta" => "--delta",
        "domain" => "--radius",
        "bound_x" | "radius_x" => "--x-bound",
        "bound_y" => "--y-bound",
        "h" => "--huber-h",
        "mean_trials" => "--tune-trials",
        "candidates" if algorithm != Some(AlgorithmArg::GridSearch) => "--learning-rates",
        "bias" => "--bias",
        "bounds_budget" => "--bounds-budget",
        _ if catalog::LEARNERS.iter().any(|l| l.uses(name)) => return Some(flag(name)),
        _ => return None,
    };
    Some(flag.to_string())
}

/// A parameter the learner rejected: naming the flag it came from — as the flag's default
/// when the user did not give it (`given` says which flags were given) — or, for a derived
/// quantity no flag names, saying so.
fn parameter_error(
    name: &str,
    value: f64,
    reason: &str,
    algorithm: Option<AlgorithmArg>,
    given: &dyn Fn(&str) -> bool,
) -> CliError {
    match flag_of(name, algorithm) {
        Some(flag) if given(&flag) => CliError::Usage(format!(
            "invalid value for {flag}: {} ({reason})",
            show(value)
        )),
        Some(flag) => CliError::Usage(format!(
            "{flag} was not given and its default, derived from the other flags and the data, \
             is invalid: {} ({reason}); give {flag} explicitly or change the flags it depends on",
            show(value)
        )),
        None => CliError::Usage(format!(
            "the flags and data lead to an invalid derived parameter `{name}` = {} ({reason})",
            show(value)
        )),
    }
}

/// Learner errors: invalid hyper-parameters are usage errors naming their flag (see
/// [`parameter_error`]; `algorithm` the learner's, when known), data errors name `data`, the
/// rest are failures.
fn glm_error(
    e: dp_glm::Error,
    data: &Path,
    algorithm: Option<AlgorithmArg>,
    given: &dyn Fn(&str) -> bool,
) -> CliError {
    match e {
        dp_glm::Error::InvalidHyperParameter {
            name,
            value,
            reason,
        } => parameter_error(name, value, reason, algorithm, given),
        dp_glm::Error::Accounting(dp_accounting::Error::InvalidParameter {
            name,
            value,
            reason,
        }) => parameter_error(name, value, reason, algorithm, given),
        e @ dp_glm::Error::ResourceLimit { name, .. } => match flag_of(name, algorithm) {
            Some(flag) => CliError::Usage(format!("invalid value for {flag}: {e}")),
            None => CliError::Usage(format!("the flags and data exceed a resource limit: {e}")),
        },
        e @ dp_glm::Error::UnsupportedNeighbouring { .. } => {
            CliError::Usage(format!("invalid value for --neighbouring: {e}"))
        }
        // The chosen accountant has no analysis of the learner's mechanism under the chosen
        // relation: the user's combination of flags, refused before anything is released.
        e @ dp_glm::Error::Accounting(dp_accounting::Error::Unsupported { .. }) => CliError::Usage(
            format!("{e}: choose another --accountant or --neighbouring for this algorithm"),
        ),
        e @ (dp_glm::Error::LabelOutOfDomain { .. }
        | dp_glm::Error::EmptyData { .. }
        | dp_glm::Error::ShapeMismatch { .. }) => {
            CliError::Usage(format!("{}: {e}", data.display()))
        }
        e @ dp_glm::Error::NonFinite {
            array: "x" | "y", ..
        } => CliError::Usage(format!("{}: {e}", data.display())),
        e @ dp_glm::Error::OutOfStorageRange { .. } => CliError::Usage(format!(
            "{}: {e} (after the preprocessing); use --storage f64",
            data.display()
        )),
        other => CliError::Failure(other.to_string()),
    }
}

/// [`glm_error`] for an error about the data file `path` (every flag counts as given).
pub(crate) fn data_glm_error(path: &Path, e: dp_glm::Error) -> CliError {
    glm_error(e, path, None, &|_| true)
}

/// Whether a flag with an algorithm-dependent default was given on the command line: a
/// parameter of the catalog, or `--bounds-budget` (flags with a fixed default, such as
/// `--epsilon` or `--bias`, always count as given).
fn given(a: &TrainArgs, flag: &str) -> bool {
    if flag == "--bounds-budget" {
        return a.bounds_budget.is_some();
    }
    let params = params_of(a);
    let mut names = catalog::LEARNERS
        .iter()
        .flat_map(|l| l.params)
        .chain(catalog::COMMON)
        .map(|p| p.name);
    match names.find(|n| flag_of(n, Some(a.algorithm())).as_deref() == Some(flag)) {
        Some(name) => params.contains(name),
        None => true,
    }
}

/// A learner's error in `dpglm train`, naming the flag or the data file.
fn fit_error(a: &TrainArgs, e: dp_glm::Error) -> CliError {
    glm_error(e, &a.data, Some(a.algorithm()), &|flag| given(a, flag))
}

/// Checks every numeric flag before anything is read or fitted: floats finite (a NaN or ∞
/// would otherwise reach the learner or the report), ε > 0, δ ∈ [0, 1), counts ≥ 1. Ranges
/// that depend on the algorithm are the learner's to check (and name, via [`fit_error`]).
fn check_flags(a: &TrainArgs) -> Result<(), CliError> {
    let bad = |flag: &str, v: f64, why: &str| {
        Err(CliError::Usage(format!(
            "invalid value for {flag}: {} ({why})",
            show(v)
        )))
    };
    let floats = [
        ("--epsilon", Some(a.epsilon)),
        ("--delta", Some(a.delta)),
        ("--huber-h", a.huber_h),
        ("--momentum", a.momentum),
        ("--bias", Some(a.bias)),
        ("--clip", a.clip),
        ("--learning-rate", a.learning_rate),
        ("--lambda", a.lambda),
        ("--radius", a.radius),
        ("--x-bound", a.x_bound),
        ("--y-bound", a.y_bound),
        ("--tau", a.tau),
        ("--sigma-out", a.sigma_out),
        ("--tune-trials", a.tune_trials),
        ("--sample-rate", a.sample_rate),
        ("--bounds-budget", a.bounds_budget),
    ];
    let rates = a
        .learning_rates
        .iter()
        .flatten()
        .map(|&r| ("--learning-rates", Some(r)));
    for (flag, v) in floats.into_iter().chain(rates) {
        if let Some(v) = v
            && !v.is_finite()
        {
            return bad(flag, v, "must be a finite number");
        }
    }
    if a.epsilon <= 0.0 {
        return bad("--epsilon", a.epsilon, "must be > 0");
    }
    if let Err(e) = catalog::check_epsilon(a.epsilon) {
        let named = e.message(&|p| format!("--{p}"));
        return Err(CliError::Usage(named.unwrap_or_else(|| e.to_string())));
    }
    if !(0.0..1.0).contains(&a.delta) {
        return bad("--delta", a.delta, "must be in [0, 1)");
    }
    let counts = [
        ("--steps", a.steps),
        ("--epochs", a.epochs),
        ("--batch-size", a.batch_size),
        ("--k", a.k),
        ("--n", a.public_n),
        ("--candidates", a.candidates),
        ("--models", a.models),
    ];
    for (flag, v) in counts {
        if v == Some(0) {
            return bad(flag, 0.0, "must be >= 1");
        }
    }
    Ok(())
}

/// Refuses an `--out` that is the same file as an input (`--data`, `--test`): the training
/// data is never overwritten. Paths are compared after resolving links, `.` and `..`.
fn check_out(a: &TrainArgs) -> Result<(), CliError> {
    match &a.out {
        Some(out) => check_output(
            "--out",
            out,
            &[("--data", Some(&a.data)), ("--test", a.test.as_ref())],
        ),
        None => Ok(()),
    }
}

/// Refuses an output file `out` (given as `flag`) whose directory does not exist, that exists
/// and is not a regular file (a directory, a symbolic link, a FIFO, a device:
/// [`not_replaceable`]), or that is the same file as one of the `inputs` (flag, path).
pub(crate) fn check_output(
    flag: &str,
    out: &Path,
    inputs: &[(&str, Option<&std::path::PathBuf>)],
) -> Result<(), CliError> {
    let Some(target) = resolved(out) else {
        return Err(CliError::Usage(format!(
            "invalid value for {flag}: {}: its directory does not exist",
            out.display()
        )));
    };
    let target = Some(target);
    for (input_flag, input) in inputs {
        if let Some(input) = input
            && input.canonicalize().ok() == target
        {
            return Err(CliError::Usage(format!(
                "invalid value for {flag}: {} is the same file as {input_flag} {}; refusing to \
                 overwrite an input",
                out.display(),
                input.display()
            )));
        }
    }
    match not_replaceable(out) {
        Some(reason) => Err(CliError::Usage(format!(
            "invalid value for {flag}: {reason}"
        ))),
        None => Ok(()),
    }
}

/// Refuses training data with no feature column (`d = 0` features as read, before the bias
/// column), before anything is estimated or fitted: every route (in memory, sparse,
/// streamed) calls it once the data's width is known, so no budget is spent on a model that
/// has nothing to weigh and could not be saved.
///
/// # Errors
/// [`CliError::Usage`] naming `--data`, the label column and the flags that select columns.
fn check_has_features(a: &TrainArgs, d: usize, spec: &TableSpec) -> Result<(), CliError> {
    if d > 0 {
        return Ok(());
    }
    let data = a.data.display();
    let besides = match (&spec.columns, spec.label.as_deref()) {
        (Some(_), Some(label)) => format!(
            "the table --data {data} has no feature column besides the label `{label}` (after \
             the schema, --features and --drop)"
        ),
        _ => format!("--data {data} has no feature column besides the label"),
    };
    Err(CliError::Usage(format!(
        "{besides}: a model needs at least one feature"
    )))
}

/// The noise source `--seed` selects and its generator: the seeded Xoshiro256++ stream
/// (reproducible, not a private release) or the OS-seeded CSPRNG.
fn noise(a: &TrainArgs) -> Result<(NoiseSource, Box<dyn rand::Rng>), CliError> {
    Ok(match a.seed {
        Some(seed) => (
            NoiseSource::Seeded { seed },
            Box::new(dp_optim::seeded_rng(seed)),
        ),
        None => (
            NoiseSource::Secure,
            Box::new(dp_optim::secure_rng().map_err(|e| CliError::Failure(e.to_string()))?),
        ),
    })
}

fn loss_of(a: &TrainArgs) -> Result<Loss, CliError> {
    catalog::loss(a.loss.name(), a.huber_h).map_err(|e| catalog_error(a, e))
}

/// Reads the training data under the schema the flags give (`--schema` overridden by
/// `--label`, `--features`, `--drop`, `--categorical`, `--classes`): the data, with labels
/// mapped to ±1 for classification, and the resolved pipeline to store with the model.
fn read(a: &TrainArgs, loss: Loss) -> Result<(LoadedData, TableSpec, Schema), CliError> {
    let schema: Schema = schema_of(a.label.as_deref(), &a.columns)?;
    let (data, spec) = dp_data::read_training_data(
        &a.data,
        a.format_arg.map(Format::from),
        &schema,
        task_of(loss),
    )
    .map_err(data_error)?;
    Ok((data, spec, schema))
}

/// The per-feature scaling to fit (`None`: no scaling): the method from `--scale`, else from
/// the schema's `scaling` values (standard if any gives a centre or scale, else minmax), else
/// minmax for classification on a file with named columns (CSV) when its `n` rows (`--n`, or
/// the count, treated as public) are enough for the private ranges
/// ([`dp_glm::scaling::min_rows_for_ranges`]; fewer: none, with a warning), and none
/// otherwise; each numeric feature's public values
/// from the schema or else estimated privately; one-hot columns from their public range
/// `[0, 1]` (min–max: to `[−1, 1]`; standard: kept).
///
/// # Errors
/// [`CliError::Usage`] for `--scale none` with scaling values in the schema, or values for a
/// column that is not a numeric feature (they would be ignored), or public values that do not
/// fit the method, naming the column.
fn scaling_plan(
    a: &TrainArgs,
    classification: bool,
    schema: &Schema,
    spec: &TableSpec,
    (n, d): (usize, usize),
    warnings: &mut Vec<String>,
) -> Result<Option<ScalingPlan>, CliError> {
    let method = match a.scale {
        Some(ScaleArg::None) if !schema.scaling.is_empty() => {
            return Err(CliError::Usage(
                "--scale none, but the schema gives scaling values (they would be ignored): \
                 remove them or choose --scale standard|minmax"
                    .into(),
            ));
        }
        Some(ScaleArg::None) => return Ok(None),
        Some(ScaleArg::Standard) => ScalingMethod::Standard,
        Some(ScaleArg::Minmax) => ScalingMethod::MinMax,
        None if schema
            .scaling
            .values()
            .any(|r| r.center.is_some() || r.scale.is_some()) =>
        {
            ScalingMethod::Standard
        }
        None if !schema.scaling.is_empty() => ScalingMethod::MinMax,
        // Files with named columns (CSV); LIBSVM and NPY data are often high-dimensional,
        // sparse and already scaled: 2d estimates would cost much and gain little. Too few
        // rows for the estimates' share: none, with a warning saying what to give.
        None if classification && spec.columns.is_some() => {
            let numeric = spec
                .columns
                .iter()
                .flatten()
                .filter(|c| c.levels.is_none())
                .count();
            let each = share(a, 2 * numeric) * a.epsilon / (2 * numeric).max(1) as f64;
            let need = dp_glm::scaling::min_rows_for_ranges(each);
            if numeric > 0 && (n as f64) < need {
                warnings.push(format!(
                    "features not scaled: with n = {n} rows (public, or a private count under \
                     add/remove) the \
                     {} private feature ranges at epsilon {} each are unreliable below about \
                     {} rows; give the ranges as public values in the schema's \"scaling\" \
                     (e.g. from the data's documentation), or --scale minmax|standard to \
                     estimate them anyway, or --scale none to silence this",
                    2 * numeric,
                    dp_glm::text_down(each, 3),
                    need.ceil()
                ));
                return Ok(None);
            }
            ScalingMethod::MinMax
        }
        None => return Ok(None),
    };
    let one_hot = PublicScale {
        min: Some(0.0),
        max: Some(1.0),
        center: (method == ScalingMethod::Standard).then_some(0.0),
        scale: (method == ScalingMethod::Standard).then_some(1.0),
    };
    let public = match &spec.columns {
        None => vec![None; d],
        Some(columns) => {
            if let Some(name) = schema
                .scaling
                .keys()
                .find(|k| !columns.iter().any(|c| &c.name == *k && c.levels.is_none()))
            {
                return Err(CliError::Usage(format!(
                    "the schema gives scaling values for `{name}`, which is not a numeric \
                     feature of this run (dropped or not selected); remove them (nothing is \
                     ignored silently)"
                )));
            }
            let mut public = Vec::with_capacity(d);
            for c in columns {
                if c.levels.is_some() {
                    public.extend(std::iter::repeat_n(Some(one_hot), c.output_names().len()));
                    continue;
                }
                let given = schema.scaling.get(&c.name).map(|r| PublicScale {
                    min: r.min,
                    max: r.max,
                    center: r.center,
                    scale: r.scale,
                });
                if let Some(p) = given
                    && let Err(reason) = p.fitted(method)
                {
                    return Err(CliError::Usage(format!(
                        "invalid scaling values for column `{}` with --scale {}: {reason}",
                        c.name,
                        method.name()
                    )));
                }
                public.push(given);
            }
            public
        }
    };
    Ok(Some(ScalingPlan { method, public }))
}

/// Rows read for `evaluate` or `predict`: sparse for a LIBSVM file (unless the model scales
/// its features, which moves zeros), otherwise dense. Raw: the model applies its own steps.
pub(crate) enum Scored {
    /// Compressed sparse rows, `O(nnz)` in memory.
    Sparse(dp_glm::sparse::SparseDataset),
    /// An `n × d` matrix.
    Dense(LoadedData),
}

impl Scored {
    /// The number of rows.
    pub(crate) fn n_samples(&self) -> usize {
        match self {
            Scored::Sparse(s) => s.n_samples(),
            Scored::Dense(d) => d.n_samples(),
        }
    }

    /// `model`'s decision values on the rows.
    pub(crate) fn decision_function(
        &self,
        model: &LinearModel,
    ) -> dp_glm::Result<ndarray::Array1<f64>> {
        match self {
            Scored::Sparse(s) => s.decision_function(model),
            Scored::Dense(d) => model.decision_function(d.x.view()),
        }
    }
}

/// Reads the model and the data to score with it (`evaluate`, `predict`): the model's pipeline
/// (`--label` overriding its label column), CSV columns matched by name in any order (a
/// missing column is an input error naming it), labels mapped as in training when
/// `with_labels` (a label outside the class pair is an input error naming its row and value).
/// A LIBSVM file is read into sparse rows when the model has no feature scaling. Returns the
/// model, the pipeline used and the rows.
pub(crate) fn scored(
    a: &ScoringArgs,
    with_labels: bool,
) -> Result<(LinearModel, TableSpec, Scored), CliError> {
    let model = read_model(&a.model)?;
    let mut spec = input_spec(&model);
    if a.label.is_some() {
        spec.label.clone_from(&a.label);
    }
    let format = a.format_arg.map(Format::from);
    let width = model.n_features_in();
    let sparse = matches!(Format::infer(&a.data, format), Ok(Format::Libsvm))
        && model.preprocessing().scaling.is_none();
    let data = if sparse {
        let csr =
            dp_data::read_scoring_sparse(&a.data, &spec, width, with_labels).map_err(data_error)?;
        dp_glm::sparse::SparseDataset::new(csr)
            .map(Scored::Sparse)
            .map_err(|e| data_glm_error(&a.data, e))?
    } else {
        dp_data::read_scoring_data(&a.data, format, &spec, width, with_labels)
            .map(Scored::Dense)
            .map_err(data_error)?
    };
    Ok((model, spec, data))
}

/// Mean loss, and accuracy (classification) or MSE (regression). A mean that does not fit in
/// an `f64` — a row's decision value or loss is not finite, or finite terms sum past
/// `f64::MAX` — is `+∞`, "overflowed": `train` reports it so (its diagnostics never stop a
/// release), `evaluate` refuses it ([`Scores::finite`]).
struct Scores {
    loss: f64,
    accuracy: Option<f64>,
    mse: Option<f64>,
    /// The first row (0-based) whose decision value or loss is not finite.
    overflowed_row: Option<usize>,
}

impl Scores {
    /// The scores when every one is finite, for `evaluate` (whose answer they are).
    ///
    /// # Errors
    /// [`CliError::Usage`] naming `path` and the first row that overflowed, or the metric
    /// whose sum did.
    fn finite(self, path: &Path) -> Result<Self, CliError> {
        if let Some(row) = self.overflowed_row {
            return Err(CliError::Usage(format!(
                "{}: row {row} (0-based): the model's decision value or its loss is not finite: \
                 the features, label or coefficients are too large for a finite score",
                path.display(),
            )));
        }
        for (what, v) in [("mean loss", Some(self.loss)), ("mse", self.mse)] {
            if let Some(v) = v
                && !v.is_finite()
            {
                return Err(CliError::Usage(format!(
                    "{}: the {what} overflows ({v}): the features, labels or coefficients are \
                     too large for a finite score",
                    path.display()
                )));
            }
        }
        Ok(self)
    }
}

/// Scores `model` on `data` (read from `path`; rows as the model takes them, its own steps
/// applied by it), after checking its labels are in the loss's domain; see [`Scores`] for
/// values that overflow.
///
/// # Errors
/// [`CliError::Usage`] naming `path`: labels outside the loss's domain (e.g. 0/1 for the
/// logistic loss, which would silently count every 0 as an error).
fn score(model: &LinearModel, data: &Dataset, path: &Path) -> Result<Scores, CliError> {
    data.check_labels(&model.loss())
        .map_err(|e| data_glm_error(path, e))?;
    let z = storage::decision_values(model, data).map_err(|e| data_glm_error(path, e))?;
    Ok(scores(model.loss(), &z, data.y()))
}

/// [`score`]'s metrics from the decision values `z` of rows labelled `y` (in `loss`'s domain):
/// a loss or MSE that is not finite saturates to `+∞` ([`Scores`]); never NaN.
fn scores(loss: Loss, z: &ndarray::Array1<f64>, y: ndarray::ArrayView1<'_, f64>) -> Scores {
    let losses: Vec<f64> = z
        .iter()
        .zip(y)
        .map(|(&zi, &yi)| loss.value(zi, yi))
        .collect();
    let overflowed_row = (0..losses.len()).find(|&i| !z[i].is_finite() || !losses[i].is_finite());
    let n = y.len() as f64;
    let mean_loss = match overflowed_row {
        Some(_) => f64::INFINITY,
        None => mean(&losses),
    };
    let (accuracy, mse) = match loss.label_domain() {
        dp_glm::LabelDomain::Signs => {
            let right = z
                .iter()
                .zip(y)
                // A NaN decision value (∞ − ∞) predicts neither class: wrong.
                .filter(|(zi, yi)| !zi.is_nan() && (if **zi >= 0.0 { 1.0 } else { -1.0 }) == **yi)
                .count();
            (Some(right as f64 / n), None)
        }
        dp_glm::LabelDomain::Real => {
            let sq: Vec<f64> = z
                .iter()
                .zip(y)
                .map(|(zi, yi)| (zi - yi) * (zi - yi))
                .collect();
            let mse = match overflowed_row {
                Some(_) => f64::INFINITY,
                None => mean(&sq),
            };
            (None, Some(mse))
        }
    };
    Scores {
        loss: mean_loss,
        accuracy,
        mse,
        overflowed_row,
    }
}

/// The mean of the finite terms `t ≥ 0` (or `+∞`): their sum over their number, or when the sum
/// passes `f64::MAX`, the sum of each term over the number (finite whenever the mean is).
fn mean(t: &[f64]) -> f64 {
    let n = t.len() as f64;
    match t.iter().sum::<f64>() / n {
        m if m.is_finite() => m,
        _ => t.iter().map(|v| v / n).sum(),
    }
}

/// What `train` measured on the data without noise, for the operator only: NOT private (the
/// exact number of rows, the training loss and accuracy, the scores on the test file, the
/// wall time, which grows with the data, and the warnings, which may quote the row count).
/// Printed under "not private" (the warnings on stderr); in JSON these are the contract's
/// top-level fields and `warnings`, named in the `not_private` list; never written to the
/// model file.
struct NotPrivate {
    n: usize,
    train: Scores,
    test: Option<Scores>,
    seconds: f64,
    warnings: Vec<String>,
}

impl NotPrivate {
    /// The diagnostics of a fit that started at `start`, timed now.
    fn since(
        start: Instant,
        n: usize,
        train: Scores,
        test: Option<Scores>,
        warnings: Vec<String>,
    ) -> Self {
        NotPrivate {
            n,
            train,
            test,
            seconds: start.elapsed().as_secs_f64(),
            warnings,
        }
    }

    /// The fields, and the list of their names (`not_private`). A score that overflowed
    /// ([`Scores`]) is `f64::MAX`, a lower bound, and named in `overflowed`.
    fn to_json(&self) -> Result<serde_json::Map<String, Value>, CliError> {
        let test = self.test.as_ref();
        let mut overflowed = Vec::new();
        let mut saturated = |name: &'static str, v: Option<f64>| match v {
            Some(v) if v == f64::INFINITY => {
                overflowed.push(name);
                json!(f64::MAX)
            }
            v => json!(v),
        };
        let train_loss = saturated("train_loss", Some(self.train.loss));
        let test_mse = saturated("test_mse", test.and_then(|t| t.mse));
        let mut fields = json!({
            "n": self.n,
            "train_loss": train_loss,
            "train_accuracy": metric("train accuracy", self.train.accuracy)?,
            "test_accuracy": metric("test accuracy", test.and_then(|t| t.accuracy))?,
            "test_mse": test_mse,
            "seconds": finite("seconds", self.seconds)?,
            "warnings": self.warnings,
            "overflowed": overflowed,
        });
        let names: Vec<Value> = fields
            .as_object()
            .map(|m| m.keys().map(|k| Value::String(k.clone())).collect())
            .unwrap_or_default();
        fields["not_private"] = Value::Array(names);
        Ok(match fields {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        })
    }
}

impl std::fmt::Display for NotPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "not private (computed from the data without noise; for the operator, not in the \
             model file):"
        )?;
        let shown = |v: f64| match v {
            f64::INFINITY => "overflowed (beyond the f64 range)".to_string(),
            v => format!("{v:.5}"),
        };
        write!(f, "  n = {}, train loss {}", self.n, shown(self.train.loss))?;
        if let Some(acc) = self.train.accuracy {
            write!(f, ", train accuracy {acc:.4}")?;
        }
        match self.test.as_ref().map(|t| (t.accuracy, t.mse)) {
            Some((Some(acc), _)) => write!(f, ", test accuracy {acc:.4}")?,
            Some((_, Some(m))) => write!(f, ", test mse {}", shown(m))?,
            _ => {}
        }
        writeln!(f, ", {:.3} s", self.seconds)?;
        if self.train.loss == f64::INFINITY
            || self.test.as_ref().and_then(|t| t.mse) == Some(f64::INFINITY)
        {
            writeln!(
                f,
                "  (a score overflowed: a label, feature or decision value is too large for \
                 it; diagnostics never decide whether the model is released)"
            )?;
        }
        Ok(())
    }
}

/// An optional metric as JSON (`null` only where it does not apply).
fn metric(what: &str, v: Option<f64>) -> Result<Value, CliError> {
    v.map_or(Ok(Value::Null), |v| finite(what, v))
}

/// The catalog's learner for `--algorithm` (every [`AlgorithmArg`] is registered; a test
/// checks it).
pub(crate) fn learner_of(a: &TrainArgs) -> Result<&'static Learner, CliError> {
    catalog::learner(a.algorithm().name()).map_err(|e| CliError::Failure(e.to_string()))
}

/// The name of a value as on the command line.
fn value_name<T: clap::ValueEnum>(v: &T) -> Option<String> {
    v.to_possible_value().map(|p| p.get_name().to_string())
}

/// The learner's parameters ([`catalog::Params`]): every hyper-parameter, bound, relation and
/// accountant flag that was given, under the catalog's name (`--learning-rate`:
/// `learning_rate`, `--n`: `public_n`, `--sample-rate`: `sampling_rate`).
pub(crate) fn params_of(a: &TrainArgs) -> Params {
    use catalog::Value::{Choice, Count, Real, RealList};
    let name = |v: Option<String>| v.map(Choice);
    // In the order of the flags' help, so a refusal names the first.
    let given = [
        ("clip", a.clip.map(Real)),
        ("steps", a.steps.map(Count)),
        ("epochs", a.epochs.map(Count)),
        ("batch_size", a.batch_size.map(Count)),
        ("sampling_rate", a.sample_rate.map(Real)),
        ("public_n", a.public_n.map(Count)),
        ("batch_schedule", name(a.batch_schedule.clone())),
        ("learning_rate", a.learning_rate.map(Real)),
        ("lambda", a.lambda.map(Real)),
        ("radius", a.radius.map(Real)),
        ("x_bound", a.x_bound.map(Real)),
        ("y_bound", a.y_bound.map(Real)),
        ("k", a.k.map(Count)),
        ("tau", a.tau.map(Real)),
        ("sigma_out", a.sigma_out.map(Real)),
        ("solver", name(a.solver.clone())),
        ("update", name(a.update.clone())),
        ("momentum", a.momentum.map(Real)),
        ("candidates", a.candidates.map(Count)),
        ("models", a.models.map(Count)),
        ("tune", name(a.tune.as_ref().and_then(value_name))),
        ("learning_rates", a.learning_rates.clone().map(RealList)),
        ("tune_trials", a.tune_trials.map(Real)),
        (
            "neighbouring",
            name(a.neighbouring.as_ref().and_then(value_name)),
        ),
        (
            "accountant",
            name(a.accountant.as_ref().and_then(value_name)),
        ),
    ];
    let mut p = Params::new();
    for (n, v) in given {
        if let Some(v) = v {
            p.set(n, v);
        }
    }
    p
}

/// The flag of the catalog's parameter `name`: `--` and the name with `-` for `_`, but for
/// `--n` (`public_n`), `--sample-rate` (`sampling_rate`) and `--huber-h` (the loss's `h`).
fn flag(name: &str) -> String {
    match name {
        "public_n" => "--n".into(),
        "sampling_rate" => "--sample-rate".into(),
        "h" => "--huber-h".into(),
        _ => format!("--{}", name.replace('_', "-")),
    }
}

/// A catalog error in `dpglm train`, naming flags.
fn catalog_error(a: &TrainArgs, e: CatalogError) -> CliError {
    match e {
        CatalogError::Fit(e) => fit_error(a, e),
        CatalogError::NotApplicable { param, uses, .. } => CliError::Usage(format!(
            "{} does not apply to --algorithm {} (it uses {})",
            flag(&param),
            a.algorithm().name(),
            uses.iter().map(|u| flag(u)).collect::<Vec<_>>().join(", ")
        )),
        e => CliError::Usage(e.message(&flag).unwrap_or_else(|| e.to_string())),
    }
}

/// Refuses flags the chosen algorithm does not use (the catalog's [`Learner::check`]), so
/// nothing is silently ignored (spec/CLI.md: exit 2).
fn check_applicable(a: &TrainArgs) -> Result<(), CliError> {
    learner_of(a)?
        .check(&params_of(a))
        .map_err(|e| catalog_error(a, e))
}

/// The flag that gives the bound `name`.
fn bound_flag(name: &str) -> String {
    flag_of(name, None).unwrap_or_else(|| "--clip".into())
}

/// Where a bound came from, in words: the flag, the learner's default, the preprocessing, or
/// the private estimate and its cost.
fn bound_origin(a: &TrainArgs, b: &Bound) -> String {
    match b.source {
        BoundSource::Public if given(a, &bound_flag(b.name)) => {
            format!("public (given by {})", bound_flag(b.name))
        }
        BoundSource::Public if b.name == "clip" => "public (the learner's default; rows are \
                                                    bounded by the preprocessing)"
            .to_string(),
        BoundSource::Public => "public (the learner's default)".to_string(),
        BoundSource::Preprocessing => {
            "public (implied by the unit-norm preprocessing and bias)".to_string()
        }
        BoundSource::Estimated {
            statistic,
            quantile,
            epsilon,
        } => format!(
            "estimated privately (the {quantile} quantile of {}, epsilon {epsilon:.6} of the \
             budget; give {} to make it public)",
            statistic.describe(),
            bound_flag(b.name)
        ),
    }
}

/// The feature scaling in words: the method, and how many features' values were public or
/// estimated privately (and at what ε).
fn scaling_summary(s: &FittedScaling) -> String {
    let estimated = s.features.iter().filter(|f| f.estimated.is_some()).count();
    let public = s.features.len() - estimated;
    let mut text = format!("feature scaling: {}", s.method.name());
    if public > 0 {
        text.push_str(&format!(", {public} feature(s) from public values"));
    }
    if estimated > 0 {
        text.push_str(&format!(
            ", {estimated} feature(s) with ranges estimated privately (quartiles, epsilon \
             {} of the budget in all; give them in the schema's \"scaling\" to make them \
             public)",
            text_up(s.estimated_epsilon(), 6)
        ));
    }
    text
}

/// The budget for this run's private estimates: the bounds among `needs` that are to be
/// estimated, and `more` others (the feature scaling's), within `--bounds-budget` of ε.
fn bounds_budget(a: &TrainArgs, needs: &[Need], more: usize) -> Result<PrivateBounds, CliError> {
    let planned = needs.iter().filter(|n| n.is_estimated()).count() + more;
    PrivateBounds::new(a.epsilon, a.delta, share(a, more), planned).map_err(|e| fit_error(a, e))
}

/// The share of ε for private estimates: `--bounds-budget`, or by default 10%, 20% when the
/// feature scaling's ranges are among the `scaling_estimates`
/// ([`dp_glm::scaling::SCALING_SHARE`]).
fn share(a: &TrainArgs, scaling_estimates: usize) -> f64 {
    a.bounds_budget.unwrap_or(if scaling_estimates > 0 {
        dp_glm::scaling::SCALING_SHARE
    } else {
        dp_glm::bounds::DEFAULT_SHARE
    })
}

/// The run's plain-language privacy statement ([`dp_glm::PrivacyStatement`]) with what the
/// CLI treated as public: the columns and label mapping, the preprocessing, the bounds (and
/// which flag gave them), and the flags themselves.
fn statement(
    a: &TrainArgs,
    report: &PrivacyReport,
    source: NoiseSource,
    bounds: &PrivateBounds,
    spec: &TableSpec,
    prep: &Preprocessing,
    d: usize,
) -> dp_glm::PrivacyStatement {
    let mut s = report.statement(source);
    match spec.feature_names() {
        Some(names) => s.assume_public(format!(
            "the feature columns and their order ({}) and the label column {}",
            names.join(", "),
            spec.label.as_deref().unwrap_or("(none)")
        )),
        None => s.assume_public(format!("the number of features d = {d}")),
    };
    match &spec.labels {
        dp_data::Labels::Classes { negative, positive } => {
            s.assume_public(format!(
                "the class pair (negative {negative}, positive {positive}), from --classes or \
                 the schema"
            ));
        }
        dp_data::Labels::Signs => {
            s.assume_public("the label set: 0 or -1 for the negative class, 1 for the positive");
        }
        dp_data::Labels::Numeric => {}
    }
    dp_glm::frontdoor::assume_preprocessing(&mut s, prep);
    if let Some(storage) = storage::assumption(a) {
        s.assume_public(storage);
    }
    s.assume_public(
        "the algorithm and its hyper-parameters (flags and defaults, as the report above \
         records them)",
    );
    // Public bounds in the CLI's words (which flag gave them), the rest in the library's.
    let (public, other): (Vec<Bound>, Vec<Bound>) = bounds
        .bounds()
        .iter()
        .partition(|b| b.source == BoundSource::Public);
    for b in &public {
        s.assume_public(format!(
            "the bound {} = {}, {}; values beyond it are clipped",
            b.name,
            b.value,
            bound_origin(a, b)
        ));
    }
    s.bounds(&other).count(bounds.counted());
    s
}

/// The progress of a `train` run on the terminal (indicatif, on stderr): a spinner naming the
/// stage, with a bar for stages of known length and the optimiser's step for learners that
/// report them (DP-GD, DP-SGD, noisy projected GD); hidden with `--json` or when stderr is not
/// a terminal.
struct Bar(Option<indicatif::ProgressBar>, String);

impl Bar {
    fn new(json: bool) -> Self {
        use std::io::IsTerminal;
        Self(
            (!json && std::io::stderr().is_terminal()).then(|| {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.set_message("starting");
                bar.enable_steady_tick(std::time::Duration::from_millis(120));
                bar
            }),
            String::new(),
        )
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn stage(&mut self, name: &str, units: Option<u64>) {
        if let Some(bar) = &self.0 {
            let style = match units {
                Some(_) => indicatif::ProgressStyle::with_template(
                    "{spinner} {msg} [{bar:20}] {pos}/{len} ({elapsed})",
                ),
                None => indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})"),
            };
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.set_length(units.unwrap_or(0));
            bar.set_position(0);
            bar.set_message(name.to_string());
        }
        self.1 = name.to_string();
    }

    fn step(&mut self, iteration: usize) {
        if let Some(bar) = &self.0 {
            bar.set_message(format!("{}: step {}", self.1, iteration + 1));
        }
    }

    fn advance(&mut self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }
}

/// The per-row preprocessing of `--preprocess` (unit norm when `unit_by_default` and the flag
/// is not given) and `--bias`, without a feature scaling.
fn row_steps(a: &TrainArgs, unit_by_default: bool) -> Preprocessing {
    Preprocessing {
        scaling: None,
        row_bound: None,
        unit_norm: match a.preprocess {
            Some(PreprocessArg::UnitNorm) => true,
            Some(PreprocessArg::None) => false,
            None => unit_by_default,
        },
        bias: (a.bias != 0.0).then_some(a.bias),
    }
}

/// `dpglm train`.
pub(crate) fn train(
    a: &TrainArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let start = Instant::now();
    check_flags(a)?;
    check_applicable(a)?;
    check_out(a)?;
    let loss = loss_of(a)?;
    // The budget admits this run from its public target before any data is read.
    let shared = crate::budget::open(a)?;
    let budget = crate::budget::reserve(a, loss, shared.as_ref())?;
    if a.stream {
        storage::check_stream(a)?;
        return stream::train(a, loss, budget, out);
    }
    // LIBSVM rows stay sparse where the algorithm and flags allow (else the reason is a warning).
    let mut warnings = Vec::new();
    match sparse::route(a)? {
        sparse::Route::Sparse => {
            storage::check_sparse(a)?;
            return sparse::train(a, loss, budget, out);
        }
        sparse::Route::Dense(why) => warnings.extend(why),
    }
    let classification = matches!(loss.label_domain(), dp_glm::LabelDomain::Signs);
    let format = a.format_arg.map(Format::from);
    let (train, spec, schema) = storage::open(a, loss)?;
    check_has_features(a, train.n_features(), &spec)?;
    let (noise_source, mut rng) = noise(a)?;
    let learner = learner_of(a)?;
    let params = params_of(a);
    // Under add/remove without --n the plan reads the private count (the learner then reads
    // it too); not yet counted (f32 storage): as if many rows, so the plan is the one data
    // would get, and the learner counts them.
    let count = match train.n_rows() {
        Some(rows) => learner
            .count_rows(loss, &params, rows, a.epsilon, &mut *rng)
            .map_err(|e| catalog_error(a, e))?,
        None => None,
    };
    let n = count
        .as_ref()
        .map(PrivateCount::value)
        .or(a.public_n)
        .or(train.n_rows())
        .unwrap_or(usize::MAX);
    let plan = scaling_plan(
        a,
        classification,
        &schema,
        &spec,
        (n, train.n_features()),
        &mut warnings,
    )?;
    storage::check_plan(a, plan.as_ref())?;
    for w in &warnings {
        writeln!(err, "warning: {w}").map_err(io)?;
    }
    let mut prep = row_steps(a, classification && plan.is_none());
    // Read before fitting, so a bad test file fails fast.
    let test = match &a.test {
        Some(p) => Some((
            p,
            dp_data::read_scoring_data(p, format, &spec, train.n_features(), true)
                .map_err(data_error)?,
        )),
        None => None,
    };
    // The public row bound the preprocessing guarantees (unit rows, or every feature clipped
    // by the scaling, plus a bias `b`), the default `X` of the algorithms that need one.
    let rows = if prep.unit_norm {
        Some(1.0)
    } else {
        plan.as_ref().and_then(ScalingPlan::row_bound)
    };
    let row_bound = rows.map(|r| r.hypot(prep.bias.unwrap_or(0.0)));
    let needs = learner
        .needs(loss, row_bound, &params)
        .map_err(|e| catalog_error(a, e))?;
    let mut bounds = bounds_budget(a, &needs, plan.as_ref().map_or(0, ScalingPlan::estimates))?;
    if let Some(count) = count {
        bounds.count(count).map_err(|e| fit_error(a, e))?;
    }
    if let Some(plan) = &plan {
        let names = train.feature_names();
        let fitted = plan
            .fit(
                train.for_scaling().view(),
                names.as_deref(),
                &mut bounds,
                &mut *rng,
            )
            .map_err(|e| match e {
                dp_glm::Error::Optim(e) => CliError::Usage(format!(
                    "the feature ranges of --scale cannot be estimated privately with \
                     --bounds-budget {} of --epsilon {} ({e}); give public scaling values in \
                     the schema, or --scale none",
                    share(a, plan.estimates()),
                    a.epsilon
                )),
                e => fit_error(a, e),
            })?;
        prep.scaling = Some(fitted);
    }
    let names = train.feature_names();
    let data = train.into_dataset(a, &prep)?;
    if let Some(k) = a.k
        && k > data.n_features()
    {
        return Err(CliError::Usage(format!(
            "invalid value for --k: {k} (the JL dimension must be at most the data's dimension \
             {} after preprocessing: projecting to k >= d gains nothing)",
            data.n_features()
        )));
    }
    let test = match test {
        Some((p, t)) => Some((
            p,
            prep.apply(t.x.view())
                .and_then(|x| Dataset::new(x, t.y))
                .map_err(|e| data_glm_error(p, e))?,
        )),
        None => None,
    };
    let request = Request {
        loss,
        delta: a.delta,
        params: &params,
        needs: &needs,
    };
    let mut progress = Bar::new(a.json);
    let fitted = learner.fit(&request, &data, bounds, &mut *rng, &mut progress);
    progress.finish();
    let (model, bounds) = fitted.map_err(|e| catalog_error(a, e))?;
    let fit = Fit {
        model,
        bounds,
        noise_source,
        spec,
        prep,
        names,
        headline: storage::headline(a),
        budget,
    };
    // The learner's model takes the rows it was given (and applies its own steps).
    let test = test
        .as_ref()
        .map(|(p, t)| (p.as_path(), t as &dyn Scorable));
    conclude(a, start, fit, &data, test, warnings, out)
}

/// What a fit hands to [`release`]: the model and the ledger's bounds, and the public
/// settings the model file and the summary record.
struct Fit<'b> {
    model: LinearModel,
    bounds: PrivateBounds,
    noise_source: NoiseSource,
    spec: TableSpec,
    prep: Preprocessing,
    names: Option<Vec<String>>,
    /// Added to the summary's first line (how the data was read).
    headline: String,
    /// The `--budget` reservation that records the model before it is written.
    budget: Option<Reservation<'b>>,
}

/// Rows `train` scores its model on for the operator (not private): dense rows, sparse rows
/// or a stream of blocks.
trait Scorable {
    /// The number of rows and `model`'s [`Scores`] on them (read from `path`).
    ///
    /// # Errors
    /// As [`score`].
    fn scores(&self, model: &LinearModel, path: &Path) -> Result<(usize, Scores), CliError>;
}

impl Scorable for Dataset {
    fn scores(&self, model: &LinearModel, path: &Path) -> Result<(usize, Scores), CliError> {
        Ok((self.n_samples(), score(model, self, path)?))
    }
}

/// The end of every `train` path (in memory, sparse, streamed): the model of `fit` scored on
/// the training rows `train` and on the `test` rows (read from its path), for the operator
/// only, then [`release`]d with those diagnostics and `warnings`, timed from `start`.
fn conclude(
    a: &TrainArgs,
    start: Instant,
    fit: Fit<'_>,
    train: &dyn Scorable,
    test: Option<(&Path, &dyn Scorable)>,
    warnings: Vec<String>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let (n, tr) = train.scores(&fit.model, &a.data)?;
    let test = match test {
        Some((p, t)) => Some(t.scores(&fit.model, p)?.1),
        None => None,
    };
    let diagnostics = NotPrivate::since(start, n, tr, test, warnings);
    release(a, fit, diagnostics, out)
}

/// Completes a fitted model with the pipeline, input and bounds, records its event in the
/// `--budget` file, writes it to `--out` (atomically, only once ε and δ are finite), and
/// prints the summary or the JSON answer with the not-private `diagnostics`. Nothing is
/// written or printed when the budget cannot record it.
fn release(
    a: &TrainArgs,
    fit: Fit<'_>,
    diagnostics: NotPrivate,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let Fit {
        model,
        bounds,
        noise_source,
        spec,
        prep,
        names,
        headline,
        budget,
    } = fit;
    let loss = model.loss();
    let d_in = model.coef().len() - prep.extra_columns();
    let report = model.privacy();
    let statement = statement(
        a,
        report,
        noise_source,
        &bounds,
        &spec,
        &prep,
        model.coef().len(),
    );
    let records = bounds
        .bounds()
        .iter()
        .map(|b| BoundRecord::of(b, given(a, &bound_flag(b.name))))
        .collect();
    let saved = |e: dp_glm::Error| CliError::Failure(format!("cannot save the model: {e}"));
    let epsilon = finite("epsilon spent", report.epsilon)?;
    let delta = finite("delta spent", report.delta)?;
    // The learner's own step (rows projected to its X) comes after the CLI's.
    let learned = Preprocessing {
        row_bound: model.preprocessing().row_bound,
        ..prep.clone()
    };
    let model = model
        .with_preprocessing(learned)
        .and_then(|m| m.with_input(names, Some(spec)))
        .and_then(|m| m.with_bounds(records))
        .map_err(saved)?
        .with_noise_source(noise_source)
        .with_algorithm(a.algorithm().name());
    let text = model.to_json().map_err(saved)?;
    let spent = match budget {
        Some(r) => {
            let label = a.out.as_ref().map_or_else(
                || a.algorithm().name().to_owned(),
                |p| p.display().to_string(),
            );
            let report = model.privacy();
            Some(
                r.record(&report.event, report.accountant, &label)
                    .map_err(|e| CliError::Failure(format!("{e} (no model was written)")))?,
            )
        }
        None => None,
    };
    if let Some(path) = &a.out {
        write_atomically(path, &text)?;
    }
    let report = model.privacy();
    if a.json {
        // The public settings and what the mechanisms released (as in the model file), and
        // the contract's diagnostics computed from the data without noise, which
        // `not_private` names.
        let mut v = json!({
            "algorithm": a.algorithm().name(),
            "loss": loss.name(),
            "d": d_in,
            "epsilon": epsilon,
            "delta": delta,
            "model": a.out.as_ref().map(|p| p.display().to_string()),
            "noise_source": noise_source_json(noise_source),
            "private_release": noise_source.is_private_release(),
            "bounds": model.bounds(),
            "statement": statement.text(),
            "scaling": prep.scaling,
            "streamed": a.stream,
            "storage": value_name(&a.storage),
        });
        if let Value::Object(m) = &mut v {
            if let (Some(s), Some(p)) = (&spent, &a.budget) {
                m.insert(
                    "budget".to_owned(),
                    json!({"path": p.display().to_string(), "fits": s.fits,
                           "spent_epsilon": s.epsilon}),
                );
            }
            m.extend(diagnostics.to_json()?);
        }
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{} on {d_in} features ({} loss){headline}",
            a.algorithm().name(),
            loss.name(),
        )
        .map_err(io)?;
        write!(out, "{report}").map_err(io)?;
        for b in bounds.bounds() {
            writeln!(
                out,
                "  bound {} = {}: {}",
                b.name,
                b.value,
                bound_origin(a, b)
            )
            .map_err(io)?;
        }
        if let Some(s) = &prep.scaling {
            writeln!(out, "  {}", scaling_summary(s)).map_err(io)?;
        }
        writeln!(out, "  noise source: {noise_source}").map_err(io)?;
        if let (Some(s), Some(p)) = (&spent, &a.budget) {
            writeln!(
                out,
                "  budget {}: {} fit(s) recorded, together epsilon = {}",
                p.display(),
                s.fits,
                text_up(s.epsilon, 6)
            )
            .map_err(io)?;
        }
        write!(out, "{statement}").map_err(io)?;
        write!(out, "{diagnostics}").map_err(io)?;
    }
    Ok(())
}

/// `dpglm evaluate`.
pub(crate) fn evaluate(a: &EvaluateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let a = &a.scoring;
    let (model, _, data) = scored(a, true)?;
    let n = data.n_samples();
    let s = match data {
        Scored::Sparse(rows) => sparse::score_sparse(&model, &rows, &a.data)?,
        Scored::Dense(data) => {
            let data = Dataset::new(data.x, data.y).map_err(|e| data_glm_error(&a.data, e))?;
            score(&model, &data, &a.data)?
        }
    }
    .finite(&a.data)?;
    if a.json {
        let v = json!({
            "n": n,
            "loss": finite("loss", s.loss)?,
            "accuracy": metric("accuracy", s.accuracy)?,
            "mse": metric("mse", s.mse)?,
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{n} rows: mean loss {:.5}{}{}",
            s.loss,
            s.accuracy
                .map(|v| format!(", accuracy {v:.4}"))
                .unwrap_or_default(),
            s.mse.map(|v| format!(", mse {v:.5}")).unwrap_or_default()
        )
        .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use clap::ValueEnum;

    use super::*;

    #[test]
    fn every_algorithm_is_a_registered_learner_and_back() {
        for a in AlgorithmArg::value_variants() {
            assert_eq!(catalog::learner(a.name()).unwrap().name, a.name());
        }
        assert_eq!(
            AlgorithmArg::value_variants().len(),
            catalog::LEARNERS.len()
        );
    }
}
