//! `dpglm train` and `dpglm evaluate`.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use dp_accounting::{AccountantKind, Neighbouring};
use dp_bench::data::{Format, LoadedData, read_dataset};
use dp_glm::selection::{HonestTuning, TuningWithoutPrivacyAccounting};
use dp_glm::{
    Amp, Budget, Dataset, DpAmbSsgd, DpGd, DpSgd, DpSsgd, JlNoisyGd, LinearModel, Loss,
    NoisyProjectedGd, ObjectivePerturbation, OutputPerturbation, PrivacyReport, Ssp,
};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use serde_json::{Value, json};

use crate::CliError;
use crate::cli::{EvaluateArgs, LossArg, PreprocessArg, TrainArgs};
use crate::mechanism_args::show;

fn io(e: std::io::Error) -> CliError {
    CliError::Failure(format!("cannot write output: {e}"))
}

/// Errors reading data are the user's input: exit 2, with the reader's file/line/field.
fn data_error(e: dp_bench::Error) -> CliError {
    CliError::Usage(e.to_string())
}

/// Learner errors: invalid hyper-parameters and labels are usage errors, the rest failures.
fn glm_error(e: dp_glm::Error) -> CliError {
    match e {
        dp_glm::Error::InvalidHyperParameter {
            name,
            value,
            reason,
        } => CliError::Usage(format!(
            "invalid value for --{}: {} ({reason})",
            name.replace('_', "-"),
            show(value)
        )),
        dp_glm::Error::Accounting(dp_accounting::Error::InvalidParameter {
            name,
            value,
            reason,
        }) => CliError::Usage(format!(
            "invalid value for --{name}: {} ({reason})",
            show(value)
        )),
        e @ dp_glm::Error::UnsupportedNeighbouring { .. } => {
            CliError::Usage(format!("invalid value for --neighbouring: {e}"))
        }
        e @ (dp_glm::Error::LabelOutOfDomain { .. }
        | dp_glm::Error::NonFinite { .. }
        | dp_glm::Error::EmptyData { .. }
        | dp_glm::Error::ShapeMismatch { .. }) => CliError::Usage(e.to_string()),
        other => CliError::Failure(other.to_string()),
    }
}

/// The per-row preprocessing a model applies before its linear map: optional unit-norm rows,
/// then an optional bias feature. Both act on one row at a time (no data-dependent
/// parameters), so they cost no privacy.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Preprocessing {
    unit_norm: bool,
    bias: Option<f64>,
}

impl Preprocessing {
    fn apply(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let extra = usize::from(self.bias.is_some());
        let mut out = Array2::zeros((x.nrows(), x.ncols() + extra));
        for (i, row) in x.axis_iter(Axis(0)).enumerate() {
            let norm = row.dot(&row).sqrt();
            let scale = if self.unit_norm && norm > 0.0 {
                1.0 / norm
            } else {
                1.0
            };
            for (j, v) in row.iter().enumerate() {
                out[[i, j]] = v * scale;
            }
            if let Some(b) = self.bias {
                out[[i, x.ncols()]] = b;
            }
        }
        out
    }

    fn to_json(self) -> Value {
        json!({ "unit_norm_rows": self.unit_norm, "bias": self.bias })
    }

    fn from_json(v: &Value, path: &Path) -> Result<Self, CliError> {
        let unit_norm = v["unit_norm_rows"]
            .as_bool()
            .ok_or_else(|| bad_model(path, "preprocessing.unit_norm_rows"))?;
        let bias = match &v["bias"] {
            Value::Null => None,
            b => Some(
                b.as_f64()
                    .ok_or_else(|| bad_model(path, "preprocessing.bias"))?,
            ),
        };
        Ok(Self { unit_norm, bias })
    }
}

fn bad_model(path: &Path, field: &str) -> CliError {
    CliError::Usage(format!(
        "{}: not a dpglm model file (field `{field}` missing or invalid)",
        path.display()
    ))
}

fn loss_of(arg: LossArg, huber_h: f64) -> Result<Loss, CliError> {
    match arg {
        LossArg::Logistic => Ok(Loss::Logistic),
        LossArg::Squared => Ok(Loss::Squared),
        LossArg::Huber => Loss::huber(huber_h).map_err(glm_error),
    }
}

fn read(path: &Path, format: Option<Format>, label: Option<&str>) -> Result<LoadedData, CliError> {
    read_dataset(path, format, label).map_err(data_error)
}

/// Mean loss, and accuracy (classification) or MSE (regression).
struct Scores {
    loss: f64,
    accuracy: Option<f64>,
    mse: Option<f64>,
}

fn score(
    model_coef: &Array1<f64>,
    intercept: f64,
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &Array1<f64>,
) -> Scores {
    let z = x.dot(model_coef) + intercept;
    let n = y.len().max(1) as f64;
    let mean_loss = z
        .iter()
        .zip(y)
        .map(|(&zi, &yi)| loss.value(zi, yi))
        .sum::<f64>()
        / n;
    match loss.label_domain() {
        dp_glm::LabelDomain::Signs => {
            let right = z
                .iter()
                .zip(y)
                .filter(|(zi, yi)| (if **zi >= 0.0 { 1.0 } else { -1.0 }) == **yi)
                .count();
            Scores {
                loss: mean_loss,
                accuracy: Some(right as f64 / n),
                mse: None,
            }
        }
        dp_glm::LabelDomain::Real => {
            let mse = z
                .iter()
                .zip(y)
                .map(|(zi, yi)| (zi - yi) * (zi - yi))
                .sum::<f64>()
                / n;
            Scores {
                loss: mean_loss,
                accuracy: None,
                mse: Some(mse),
            }
        }
    }
}

fn report_json(r: &PrivacyReport) -> Value {
    let ledger: Vec<Value> = r
        .ledger
        .entries()
        .iter()
        .map(|e| {
            let params: serde_json::Map<String, Value> = e
                .mechanism
                .parameters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({ "mechanism": e.mechanism.name(), "parameters": params, "count": e.count, "label": e.label })
        })
        .collect();
    let noise: serde_json::Map<String, Value> =
        r.noise.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({
        "target_epsilon": r.target.0,
        "target_delta": r.target.1,
        "epsilon": r.epsilon,
        "delta": r.delta,
        "accountant": r.accountant.as_str(),
        "neighbouring": r.neighbouring.as_str(),
        "noise": noise,
        "ledger": ledger,
        "notes": r.notes,
    })
}

/// Applies the budget flags to a learner's default budget.
fn budget(a: &TrainArgs, mut b: Budget) -> Budget {
    b.epsilon = a.epsilon;
    b.delta = a.delta;
    if let Some(r) = a.neighbouring {
        b.neighbouring = Neighbouring::from(r);
    }
    if let Some(k) = a.accountant {
        b.accountant = match k {
            crate::cli::CalibrationAccountantArg::Pld => AccountantKind::Pld,
            crate::cli::CalibrationAccountantArg::Rdp => AccountantKind::Rdp,
        };
    }
    b
}

/// Sets `target` from an optional flag.
fn set<T: Copy>(target: &mut T, flag: Option<T>) {
    if let Some(v) = flag {
        *target = v;
    }
}

/// Refuses flags the chosen algorithm does not use, so nothing is silently ignored.
fn unused(a: &TrainArgs, flags: &[(&str, bool)]) -> Result<(), CliError> {
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(CliError::Usage(format!(
            "{flag} does not apply to --algorithm {}",
            a.algorithm.name()
        ))),
        None => Ok(()),
    }
}

/// The squared-loss-only algorithms refuse other losses.
fn squared_only(a: &TrainArgs, loss: Loss) -> Result<(), CliError> {
    if loss == Loss::Squared {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "--algorithm {} fits linear regression: use --loss squared",
            a.algorithm.name()
        )))
    }
}

/// Builds the chosen learner from the flags and fits it.
///
/// `row_bound` is the row-norm bound the preprocessing guarantees (unit rows plus a bias `b`:
/// `√(1 + b²)`), the default `X` of the algorithms that need one.
fn fit_model(
    a: &TrainArgs,
    loss: Loss,
    data: &Dataset,
    row_bound: Option<f64>,
    rng: &mut dyn rand::Rng,
) -> Result<LinearModel, CliError> {
    use crate::cli::AlgorithmArg as A;
    if a.algorithm != A::Amp {
        unused(
            a,
            &[
                ("--tau", a.tau.is_some()),
                ("--sigma-out", a.sigma_out.is_some()),
            ],
        )?;
    }
    if a.algorithm != A::DpSgd {
        unused(
            a,
            &[
                ("--tune", a.tune.is_some()),
                ("--learning-rates", a.learning_rates.is_some()),
                ("--tune-trials", a.tune_trials.is_some()),
            ],
        )?;
    }
    let x_bound = a.x_bound.or(row_bound).unwrap_or(1.0);
    let sgd_flags = [
        ("--epochs", a.epochs.is_some()),
        ("--batch-size", a.batch_size.is_some()),
    ];
    let bound_flags = [
        ("--x-bound", a.x_bound.is_some()),
        ("--y-bound", a.y_bound.is_some()),
    ];
    let fitted = match a.algorithm {
        A::DpGd => {
            unused(a, &sgd_flags)?;
            unused(a, &bound_flags)?;
            let mut l = DpGd::new(loss);
            l.budget = budget(a, l.budget);
            set(&mut l.clip, a.clip);
            set(&mut l.steps, a.steps);
            set(&mut l.learning_rate, a.learning_rate);
            set(&mut l.lambda, a.lambda);
            l.radius = a.radius;
            l.fit(data, rng)
        }
        A::DpSgd => {
            unused(
                a,
                &[
                    ("--steps", a.steps.is_some()),
                    ("--radius", a.radius.is_some()),
                ],
            )?;
            unused(a, &bound_flags)?;
            let mut l = DpSgd::new(loss);
            l.budget = budget(a, l.budget);
            set(&mut l.clip, a.clip);
            set(&mut l.epochs, a.epochs);
            set(&mut l.batch_size, a.batch_size);
            set(&mut l.learning_rate, a.learning_rate);
            set(&mut l.lambda, a.lambda);
            tuned_sgd(a, l, data, rng)
        }
        A::NoisyGd | A::JlNoisyGd => {
            unused(a, &sgd_flags)?;
            unused(
                a,
                &[
                    ("--clip", a.clip.is_some()),
                    ("--lambda", a.lambda.is_some()),
                ],
            )?;
            let mut l = NoisyProjectedGd::new(loss);
            l.budget = budget(a, l.budget);
            set(&mut l.radius, a.radius);
            set(&mut l.x_bound, a.x_bound);
            set(&mut l.y_bound, a.y_bound);
            l.steps = a.steps.or(l.steps);
            l.learning_rate = a.learning_rate.or(l.learning_rate);
            if a.algorithm == A::NoisyGd {
                l.fit(data, rng)
            } else {
                JlNoisyGd { base: l, k: a.k }.fit(data, rng)
            }
        }
        A::Ssp => {
            squared_only(a, loss)?;
            unused(a, &sgd_flags)?;
            let mut l = Ssp::new(a.x_bound.unwrap_or(1.0), a.y_bound.unwrap_or(1.0));
            l.budget = budget(a, l.budget);
            l.fit(data, rng)
        }
        A::DpSsgd => {
            squared_only(a, loss)?;
            unused(a, &sgd_flags)?;
            let mut l = DpSsgd::new();
            l.budget = budget(a, l.budget);
            set(&mut l.clip, a.clip);
            set(&mut l.learning_rate, a.learning_rate);
            l.fit(data, rng)
        }
        A::DpAmbssgd => {
            squared_only(a, loss)?;
            unused(a, &[("--epochs", a.epochs.is_some())])?;
            let mut l = DpAmbSsgd::new(a.x_bound.unwrap_or(1.0), a.radius.unwrap_or(10.0));
            l.budget = budget(a, l.budget);
            set(&mut l.learning_rate, a.learning_rate);
            set(&mut l.batch_size, a.batch_size);
            l.fit(data, rng)
        }
        A::Objpert | A::Amp => {
            unused(a, &sgd_flags)?;
            unused(
                a,
                &[
                    ("--steps", a.steps.is_some()),
                    ("--learning-rate", a.learning_rate.is_some()),
                    ("--radius", a.radius.is_some()),
                    ("--y-bound", a.y_bound.is_some()),
                ],
            )?;
            let mut o = ObjectivePerturbation::new(loss);
            o.x_bound = x_bound;
            o.clip = a.clip;
            o.lambda = a.lambda;
            if a.algorithm == A::Objpert {
                o.budget = budget(a, o.budget);
                o.fit(data, rng)
            } else {
                let mut l = Amp::new(loss);
                o.budget = budget(a, l.objpert.budget);
                l.objpert = o;
                set(&mut l.tau, a.tau);
                set(&mut l.sigma_out, a.sigma_out);
                l.fit(data, rng)
            }
        }
        A::OutputPerturbation => {
            unused(a, &sgd_flags)?;
            unused(
                a,
                &[
                    ("--clip", a.clip.is_some()),
                    ("--steps", a.steps.is_some()),
                    ("--learning-rate", a.learning_rate.is_some()),
                ],
            )?;
            let mut l = OutputPerturbation::new(loss);
            l.budget = budget(a, l.budget);
            l.x_bound = x_bound;
            set(&mut l.radius, a.radius);
            set(&mut l.y_bound, a.y_bound);
            set(&mut l.lambda, a.lambda);
            l.fit(data, rng)
        }
    };
    fitted.map_err(glm_error)
}

/// DP-SGD, tuned over `--learning-rates` when `--tune` is given.
fn tuned_sgd(
    a: &TrainArgs,
    l: DpSgd,
    data: &Dataset,
    rng: &mut dyn rand::Rng,
) -> dp_glm::Result<LinearModel> {
    use crate::cli::TuneArg;
    let Some(tune) = a.tune else {
        if a.learning_rates.is_some() || a.tune_trials.is_some() {
            return Err(dp_glm::Error::InvalidHyperParameter {
                name: "tune",
                value: f64::NAN,
                reason: "--learning-rates and --tune-trials need --tune honest|unaccounted",
            });
        }
        return l.fit(data, rng);
    };
    let rates = a
        .learning_rates
        .clone()
        .unwrap_or_else(|| vec![l.learning_rate]);
    match tune {
        TuneArg::Honest => {
            let mean = a.tune_trials.unwrap_or(rates.len() as f64);
            HonestTuning::new(l, rates, mean).fit(data, rng)
        }
        TuneArg::Unaccounted => {
            if a.tune_trials.is_some() {
                return Err(dp_glm::Error::InvalidHyperParameter {
                    name: "tune_trials",
                    value: a.tune_trials.unwrap_or(f64::NAN),
                    reason: "applies to --tune honest only",
                });
            }
            TuningWithoutPrivacyAccounting::new(l, rates).fit(data, rng)
        }
    }
}

/// `dpglm train`.
pub(crate) fn train(a: &TrainArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let start = Instant::now();
    let loss = loss_of(a.loss, a.huber_h)?;
    let classification = matches!(loss.label_domain(), dp_glm::LabelDomain::Signs);
    let prep = Preprocessing {
        unit_norm: match a.preprocess {
            Some(PreprocessArg::UnitNorm) => true,
            Some(PreprocessArg::None) => false,
            None => classification,
        },
        bias: (a.bias != 0.0).then_some(a.bias),
    };
    if !a.bias.is_finite() {
        return Err(CliError::Usage(format!(
            "invalid value for --bias: {}",
            a.bias
        )));
    }
    let train = read(&a.data, a.format_arg.map(Format::from), a.label.as_deref())?;
    let x = prep.apply(train.x.view());
    let data = Dataset::new(x, train.y.clone()).map_err(glm_error)?;
    let mut rng: Box<dyn rand::Rng> = match a.seed {
        Some(s) => Box::new(dp_optim::seeded_rng(s)),
        None => Box::new(dp_optim::secure_rng().map_err(|e| CliError::Failure(e.to_string()))?),
    };
    let row_bound = prep
        .unit_norm
        .then(|| (1.0 + prep.bias.map_or(0.0, |b| b * b)).sqrt());
    let model = fit_model(a, loss, &data, row_bound, &mut *rng)?;
    let coef = model.coef().to_owned();
    let tr = score(&coef, model.intercept(), loss, data.x(), &train.y);
    let test = match &a.test {
        Some(p) => {
            let t = read(p, a.format_arg.map(Format::from), a.label.as_deref())?;
            let xt = prep.apply(t.x.view());
            if xt.ncols() != coef.len() {
                return Err(CliError::Usage(format!(
                    "{}: {} features, but the training data has {}",
                    p.display(),
                    t.x.ncols(),
                    train.x.ncols()
                )));
            }
            Some(score(&coef, model.intercept(), loss, xt.view(), &t.y))
        }
        None => None,
    };
    let report = model.privacy();
    if let Some(path) = &a.out {
        let file = json!({
            "format": "dpglm-model/1",
            "algorithm": a.algorithm.name(),
            "loss": loss.name(),
            "huber_h": if let Loss::Huber { h } = loss { Some(h) } else { None },
            "n_features_in": train.x.ncols(),
            "preprocessing": prep.to_json(),
            "coefficients": coef.to_vec(),
            "intercept": model.intercept(),
            "privacy": report_json(report),
        });
        let text =
            serde_json::to_string_pretty(&file).map_err(|e| CliError::Failure(e.to_string()))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::Failure(format!("cannot write {}: {e}", path.display())))?;
    }
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        let v = json!({
            "algorithm": a.algorithm.name(),
            "loss": loss.name(),
            "n": data.n_samples(),
            "d": train.x.ncols(),
            "epsilon": report.epsilon,
            "delta": report.delta,
            "train_loss": tr.loss,
            "train_accuracy": tr.accuracy,
            "test_accuracy": test.as_ref().and_then(|t| t.accuracy),
            "test_mse": test.as_ref().and_then(|t| t.mse),
            "seconds": seconds,
            "model": a.out.as_ref().map(|p| p.display().to_string()),
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{} on {} x {} ({} loss): train loss {:.5}{}{}",
            a.algorithm.name(),
            data.n_samples(),
            train.x.ncols(),
            loss.name(),
            tr.loss,
            tr.accuracy
                .map(|v| format!(", train accuracy {:.4}", v))
                .unwrap_or_default(),
            test.as_ref()
                .map(|t| match (t.accuracy, t.mse) {
                    (Some(acc), _) => format!(", test accuracy {acc:.4}"),
                    (_, Some(m)) => format!(", test mse {m:.5}"),
                    _ => String::new(),
                })
                .unwrap_or_default()
        )
        .map_err(io)?;
        write!(out, "{report}").map_err(io)?;
    }
    Ok(())
}

/// `dpglm evaluate`.
pub(crate) fn evaluate(a: &EvaluateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&a.model)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", a.model.display())))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Usage(format!("{}: not valid JSON: {e}", a.model.display())))?;
    let path = a.model.as_path();
    let loss = match (v["loss"].as_str(), v["huber_h"].as_f64()) {
        (Some("logistic"), _) => Loss::Logistic,
        (Some("squared"), _) => Loss::Squared,
        (Some("huber"), Some(h)) => Loss::huber(h).map_err(glm_error)?,
        _ => return Err(bad_model(path, "loss")),
    };
    let coef: Vec<f64> = v["coefficients"]
        .as_array()
        .ok_or_else(|| bad_model(path, "coefficients"))?
        .iter()
        .map(|c| c.as_f64().filter(|c| c.is_finite()))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| bad_model(path, "coefficients"))?;
    let intercept = v["intercept"]
        .as_f64()
        .ok_or_else(|| bad_model(path, "intercept"))?;
    let prep = Preprocessing::from_json(&v["preprocessing"], path)?;
    let data = read(&a.data, a.format_arg.map(Format::from), a.label.as_deref())?;
    let x = prep.apply(data.x.view());
    if x.ncols() != coef.len() {
        return Err(CliError::Usage(format!(
            "{}: {} features, but the model expects {}",
            a.data.display(),
            data.x.ncols(),
            coef.len() - usize::from(prep.bias.is_some())
        )));
    }
    let s = score(&Array1::from(coef), intercept, loss, x.view(), &data.y);
    if a.json {
        let v = json!({ "n": data.y.len(), "loss": s.loss, "accuracy": s.accuracy, "mse": s.mse });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{} rows: mean loss {:.5}{}{}",
            data.y.len(),
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
