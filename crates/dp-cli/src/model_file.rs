//! The model file `dpglm train --out` writes and `dpglm evaluate` reads (format
//! `dpglm-model/1`), with every field validated on reading, and atomic writing.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dp_data::{Column, Labels, TableSpec, Task};
use dp_glm::scaling::{FeatureScale, FittedScaling, ScalingMethod};
use dp_glm::{Loss, NoiseSource};
use ndarray::{Array2, ArrayView2, Axis};
use serde_json::{Map, Value, json};

use crate::CliError;
use crate::cli::AlgorithmArg;
use crate::schema::task_of;

/// The `format` field of every model file this version writes and reads.
pub(crate) const FORMAT: &str = "dpglm-model/1";

/// The largest model file read (1 GiB: far above the ≈ 25 bytes per coefficient of any model
/// whose data fit in the readers' memory budget).
const MAX_MODEL_BYTES: u64 = 1 << 30;

/// The preprocessing a model applies before its linear map: an optional per-feature scaling
/// (fitted in training, [`FittedScaling`]), optional unit-norm rows, then an optional bias
/// feature. Each acts on one row at a time with fixed parameters; the scaling's parameters
/// are public values or private estimates recorded in the ledger (dp-glm's `scaling`
/// module, § Privacy), the other steps have none.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Preprocessing {
    /// Per-feature scaling, applied first (absent in files written before it existed).
    pub scaling: Option<FittedScaling>,
    /// Scale every row to unit L2 norm.
    pub unit_norm: bool,
    /// Value of an appended constant feature.
    pub bias: Option<f64>,
}

impl Preprocessing {
    /// The preprocessed rows (one more column with a bias).
    ///
    /// Unit-norm rows are computed scaled by the row's largest magnitude `m`, `x/m / ‖x/m‖`,
    /// so that neither `‖x‖²` overflowing (entries near `1e154` and above would give a zero
    /// row) nor underflowing (entries near `1e-162` would give a norm far from 1) changes the
    /// result; all-zero rows stay zero.
    pub(crate) fn apply(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let extra = usize::from(self.bias.is_some());
        let mut out = Array2::zeros((x.nrows(), x.ncols() + extra));
        let mut scaled = x.to_owned();
        if let Some(s) = &self.scaling {
            // Validated on construction and reading, with one entry per input column.
            for (mut col, f) in scaled.columns_mut().into_iter().zip(&s.features) {
                col.mapv_inplace(|v| f.apply(v));
            }
        }
        let x = scaled.view();
        for (i, row) in x.axis_iter(Axis(0)).enumerate() {
            let m = row.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
            let (pre, post) = if self.unit_norm && m > 0.0 {
                let scaled = row.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt();
                (m, scaled)
            } else {
                (1.0, 1.0)
            };
            for (j, v) in row.iter().enumerate() {
                out[[i, j]] = v / pre / post;
            }
            if let Some(b) = self.bias {
                out[[i, x.ncols()]] = b;
            }
        }
        out
    }

    /// Columns added by the preprocessing.
    pub(crate) fn extra_columns(&self) -> usize {
        usize::from(self.bias.is_some())
    }
}

/// A saved model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelFile {
    /// The algorithm that fitted it.
    pub algorithm: AlgorithmArg,
    /// The loss it was fitted with.
    pub loss: Loss,
    /// Columns of the raw data (before preprocessing).
    pub n_features_in: usize,
    /// The features' names when the training data had them (CSV; categorical columns as
    /// `column=level`), to match scoring data by name.
    pub feature_names: Option<Vec<String>>,
    /// How the data was read: label column, label mapping (class pair), feature columns and
    /// their levels (absent in files written before it was recorded).
    pub input: Option<TableSpec>,
    /// The preprocessing applied before the linear map.
    pub preprocessing: Preprocessing,
    /// `n_features_in` (+1 with a bias) finite coefficients.
    pub coefficients: Vec<f64>,
    /// A finite intercept.
    pub intercept: f64,
    /// Where the noise came from, saved in the privacy report as `privacy.noise_source`
    /// (absent in files written before it was recorded).
    pub noise_source: Option<NoiseSource>,
    /// The privacy report as written, without its `noise_source` (its numbers checked finite
    /// on reading).
    pub privacy: Value,
}

/// A finite number as JSON, or the typed refusal naming what it is (`serde_json` would
/// silently turn NaN and ±∞ into `null`).
pub(crate) fn finite(what: &str, v: f64) -> Result<Value, CliError> {
    if v.is_finite() {
        Ok(json!(v))
    } else {
        Err(CliError::Failure(format!(
            "{what} is {v}, not a finite number; refusing to print or save it"
        )))
    }
}

/// The JSON of the noise source.
pub(crate) fn noise_source_json(s: NoiseSource) -> Value {
    json!({
        "kind": s.kind(),
        "seed": s.seed(),
        "private_release": s.is_private_release(),
        "description": s.to_string(),
    })
}

impl ModelFile {
    /// The file's JSON; every number is checked finite.
    pub(crate) fn to_json(&self) -> Result<Value, CliError> {
        let coefficients = self
            .coefficients
            .iter()
            .enumerate()
            .map(|(i, &c)| finite(&format!("coefficient {i}"), c))
            .collect::<Result<Vec<Value>, CliError>>()?;
        let huber_h = match self.loss {
            Loss::Huber { h } | Loss::HuberSvm { h } => finite("huber_h", h)?,
            _ => Value::Null,
        };
        let bias = match self.preprocessing.bias {
            Some(b) => finite("preprocessing.bias", b)?,
            None => Value::Null,
        };
        let mut privacy = self.privacy.clone();
        if let (Some(s), Some(map)) = (self.noise_source, privacy.as_object_mut()) {
            map.insert("noise_source".into(), noise_source_json(s));
        }
        Ok(json!({
            "format": FORMAT,
            "algorithm": self.algorithm.name(),
            "loss": self.loss.name(),
            "huber_h": huber_h,
            "n_features_in": self.n_features_in,
            "feature_names": self.feature_names,
            "input": self.input,
            "preprocessing": {
                "unit_norm_rows": self.preprocessing.unit_norm,
                "bias": bias,
                "scaling": scaling_json(self.preprocessing.scaling.as_ref())?,
            },
            "coefficients": coefficients,
            "intercept": finite("intercept", self.intercept)?,
            "privacy": privacy,
        }))
    }

    /// Parse and validate a model file's text.
    ///
    /// # Errors
    /// The field at fault and why: not a JSON object, a `format` other than [`FORMAT`], an
    /// unknown or missing field, an unknown algorithm or loss, a non-finite or out-of-range
    /// number, a coefficient count that does not match `n_features_in` and the preprocessing,
    /// a privacy report without finite `epsilon`/`delta`, an inconsistent noise source.
    pub(crate) fn parse(text: &str) -> Result<Self, ModelError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| ModelError::new("", format!("not JSON: {e}")))?;
        let map = v
            .as_object()
            .ok_or_else(|| ModelError::new("", "not a JSON object"))?;
        let format = field(map, "format")?
            .as_str()
            .ok_or_else(|| ModelError::new("format", "not a string"))?;
        if format != FORMAT {
            return Err(ModelError::new(
                "format",
                format!("`{format}` is not `{FORMAT}` (another program's file or version)"),
            ));
        }
        const KNOWN: [&str; 11] = [
            "format",
            "algorithm",
            "loss",
            "huber_h",
            "n_features_in",
            "feature_names",
            "input",
            "preprocessing",
            "coefficients",
            "intercept",
            "privacy",
        ];
        if let Some(k) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ModelError::new(k, "unknown field"));
        }
        let algorithm = field(map, "algorithm")?
            .as_str()
            .and_then(|a| {
                <AlgorithmArg as clap::ValueEnum>::value_variants()
                    .iter()
                    .find(|v| v.name() == a)
                    .copied()
            })
            .ok_or_else(|| ModelError::new("algorithm", "not a dpglm algorithm"))?;
        let huber_h = field(map, "huber_h")?;
        let loss = match (field(map, "loss")?.as_str(), huber_h) {
            (Some("logistic"), Value::Null) => Loss::Logistic,
            (Some("squared"), Value::Null) => Loss::Squared,
            (Some("savage"), Value::Null) => Loss::Savage,
            (Some(name @ ("huber" | "huber-svm")), h) => {
                let h = number(h, "huber_h")?;
                dp_glm::catalog::loss(name, Some(h))
                    .map_err(|e| ModelError::new("huber_h", e.to_string()))?
            }
            (Some("logistic" | "squared" | "savage"), _) => {
                return Err(ModelError::new("huber_h", "must be null for this loss"));
            }
            _ => {
                return Err(ModelError::new(
                    "loss",
                    "not logistic, squared, huber, huber-svm or savage",
                ));
            }
        };
        let n_features_in = field(map, "n_features_in")?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| ModelError::new("n_features_in", "not a positive integer"))?;
        // Optional: absent in files written before names were recorded.
        let feature_names = match map.get("feature_names") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_names(v, n_features_in)?),
        };
        // Optional: absent in files written before the pipeline was recorded.
        let input = match map.get("input") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_input(
                v,
                loss,
                n_features_in,
                feature_names.as_deref(),
            )?),
        };
        let prep = field(map, "preprocessing")?
            .as_object()
            .ok_or_else(|| ModelError::new("preprocessing", "not an object"))?;
        if let Some(k) = prep
            .keys()
            .find(|k| !["unit_norm_rows", "bias", "scaling"].contains(&k.as_str()))
        {
            return Err(ModelError::new(
                format!("preprocessing.{k}"),
                "unknown field",
            ));
        }
        let preprocessing = Preprocessing {
            // Optional: absent in files written before feature scaling existed.
            scaling: match prep.get("scaling") {
                None | Some(Value::Null) => None,
                Some(v) => Some(parse_scaling(v, n_features_in)?),
            },
            unit_norm: field(prep, "unit_norm_rows")
                .map_err(|e| e.within("preprocessing"))?
                .as_bool()
                .ok_or_else(|| ModelError::new("preprocessing.unit_norm_rows", "not a boolean"))?,
            bias: match field(prep, "bias").map_err(|e| e.within("preprocessing"))? {
                Value::Null => None,
                b => Some(number(b, "preprocessing.bias")?).filter(|&b| b != 0.0),
            },
        };
        let coefficients = field(map, "coefficients")?
            .as_array()
            .ok_or_else(|| ModelError::new("coefficients", "not an array"))?
            .iter()
            .enumerate()
            .map(|(i, c)| number(c, &format!("coefficients[{i}]")))
            .collect::<Result<Vec<f64>, ModelError>>()?;
        let expected = n_features_in + preprocessing.extra_columns();
        if coefficients.len() != expected {
            return Err(ModelError::new(
                "coefficients",
                format!(
                    "{} values, but n_features_in = {n_features_in}{} needs {expected}",
                    coefficients.len(),
                    if preprocessing.bias.is_some() {
                        " plus the bias column"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let intercept = number(field(map, "intercept")?, "intercept")?;
        let privacy = field(map, "privacy")?;
        let report = privacy
            .as_object()
            .ok_or_else(|| ModelError::new("privacy", "not an object"))?;
        for key in ["epsilon", "target_epsilon"] {
            let v = number(
                field(report, key).map_err(|e| e.within("privacy"))?,
                &format!("privacy.{key}"),
            )?;
            if v < 0.0 {
                return Err(ModelError::new(format!("privacy.{key}"), "negative"));
            }
        }
        for key in ["delta", "target_delta"] {
            let v = number(
                field(report, key).map_err(|e| e.within("privacy"))?,
                &format!("privacy.{key}"),
            )?;
            if !(0.0..=1.0).contains(&v) {
                return Err(ModelError::new(
                    format!("privacy.{key}"),
                    "not a probability in [0, 1]",
                ));
            }
        }
        let noise_source = match report.get("noise_source") {
            None => None,
            Some(s) => Some(parse_noise_source(s)?),
        };
        let mut privacy = privacy.clone();
        if let Some(map) = privacy.as_object_mut() {
            map.remove("noise_source");
        }
        Ok(Self {
            algorithm,
            loss,
            n_features_in,
            feature_names,
            input,
            preprocessing,
            coefficients,
            intercept,
            noise_source,
            privacy,
        })
    }

    /// How to read data for this model: the stored pipeline, or for a file written before it
    /// was recorded, its feature names as numeric columns (no label column: give `--label`)
    /// with the default labels of its loss (0/1 or −1/1 for classification).
    pub(crate) fn input_spec(&self) -> TableSpec {
        self.input.clone().unwrap_or_else(|| TableSpec {
            label: None,
            labels: match task_of(self.loss) {
                Task::Classification => Labels::Signs,
                Task::Regression => Labels::Numeric,
            },
            columns: self
                .feature_names
                .as_ref()
                .map(|names| names.iter().map(Column::numeric).collect()),
        })
    }

    /// Read and validate the model file at `path` (a regular file of at most 1 GiB).
    ///
    /// # Errors
    /// [`CliError::Usage`] naming the file and the field at fault.
    pub(crate) fn read(path: &Path) -> Result<Self, CliError> {
        let fail = |reason: String| CliError::Usage(format!("{}: {reason}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".into()));
        }
        if meta.len() > MAX_MODEL_BYTES {
            return Err(fail(format!(
                "{} bytes is larger than any model file ({MAX_MODEL_BYTES} bytes at most)",
                meta.len()
            )));
        }
        let mut text = String::new();
        file.take(MAX_MODEL_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        Self::parse(&text).map_err(|e| fail(e.to_string()))
    }
}

/// `n` distinct column names.
fn parse_names(v: &Value, n: usize) -> Result<Vec<String>, ModelError> {
    let names = v
        .as_array()
        .and_then(|a| {
            a.iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
        })
        .ok_or_else(|| ModelError::new("feature_names", "not an array of strings"))?;
    if names.len() != n {
        return Err(ModelError::new(
            "feature_names",
            format!("{} names for n_features_in = {n}", names.len()),
        ));
    }
    if let Some(i) = (1..n).find(|&i| names[..i].contains(&names[i])) {
        return Err(ModelError::new(
            "feature_names",
            format!("`{}` appears twice", names[i]),
        ));
    }
    Ok(names)
}

/// The stored pipeline: a valid [`TableSpec`] whose labels fit the loss and whose features are
/// `feature_names` (`n` of them).
fn parse_input(
    v: &Value,
    loss: Loss,
    n: usize,
    feature_names: Option<&[String]>,
) -> Result<TableSpec, ModelError> {
    let spec: TableSpec = serde_json::from_value(v.clone())
        .map_err(|e| ModelError::new("input", format!("not a data pipeline: {e}")))?;
    spec.validate().map_err(|e| ModelError::new("input", e))?;
    if spec.labels.task() != task_of(loss) {
        return Err(ModelError::new(
            "input.labels",
            format!(
                "{:?} labels do not fit the {} loss",
                spec.labels,
                loss.name()
            ),
        ));
    }
    let names = spec.feature_names();
    if names.as_deref() != feature_names {
        return Err(ModelError::new(
            "input.columns",
            "the columns' output names differ from feature_names",
        ));
    }
    if let Some(names) = names
        && names.len() != n
    {
        return Err(ModelError::new(
            "input.columns",
            format!("{} output features for n_features_in = {n}", names.len()),
        ));
    }
    Ok(spec)
}

/// The scaling as JSON: `method`, and per feature `low`, `high` (null: not clipped),
/// `center`, `scale`, `source` (`public` or `estimated`) and the `epsilon` an estimate cost.
pub(crate) fn scaling_json(s: Option<&FittedScaling>) -> Result<Value, CliError> {
    let Some(s) = s else {
        return Ok(Value::Null);
    };
    let opt = |what: &str, v: Option<f64>| v.map_or(Ok(Value::Null), |v| finite(what, v));
    let features = s
        .features
        .iter()
        .map(|f| {
            Ok(json!({
                "low": opt("scaling low", f.low)?,
                "high": opt("scaling high", f.high)?,
                "center": finite("scaling center", f.center)?,
                "scale": finite("scaling scale", f.scale)?,
                "source": if f.estimated.is_some() { "estimated" } else { "public" },
                "epsilon": opt("scaling epsilon", f.estimated)?,
            }))
        })
        .collect::<Result<Vec<Value>, CliError>>()?;
    Ok(json!({ "method": s.method.name(), "features": features }))
}

/// A stored scaling with one valid entry per input feature.
fn parse_scaling(v: &Value, n: usize) -> Result<FittedScaling, ModelError> {
    let at = "preprocessing.scaling";
    let method = match v.get("method").and_then(Value::as_str) {
        Some("standard") => ScalingMethod::Standard,
        Some("minmax") => ScalingMethod::MinMax,
        _ => {
            return Err(ModelError::new(
                format!("{at}.method"),
                "not `standard` or `minmax`",
            ));
        }
    };
    let list = v
        .get("features")
        .and_then(Value::as_array)
        .filter(|l| l.len() == n)
        .ok_or_else(|| {
            ModelError::new(
                format!("{at}.features"),
                format!("not an array of n_features_in = {n} entries"),
            )
        })?;
    let mut features = Vec::with_capacity(n);
    for (i, f) in list.iter().enumerate() {
        let here = format!("{at}.features[{i}]");
        let get = |k: &str| f.get(k).unwrap_or(&Value::Null);
        let opt = |k: &str| match get(k) {
            Value::Null => Ok(None),
            v => number(v, &format!("{here}.{k}")).map(Some),
        };
        let estimated = match (get("source").as_str(), opt("epsilon")?) {
            (Some("public"), None) => None,
            (Some("estimated"), Some(e)) if e > 0.0 => Some(e),
            _ => {
                return Err(ModelError::new(
                    format!("{here}.source"),
                    "not `public` (epsilon null) or `estimated` (epsilon > 0)",
                ));
            }
        };
        features.push(FeatureScale {
            low: opt("low")?,
            high: opt("high")?,
            center: number(get("center"), &format!("{here}.center"))?,
            scale: number(get("scale"), &format!("{here}.scale"))?,
            estimated,
        });
    }
    let scaling = FittedScaling { method, features };
    scaling
        .validate()
        .map_err(|e| ModelError::new(at, e.to_string()))?;
    Ok(scaling)
}

fn parse_noise_source(v: &Value) -> Result<NoiseSource, ModelError> {
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| ModelError::new("privacy.noise_source.kind", "missing or not a string"))?;
    let source = match kind {
        "secure" => NoiseSource::Secure,
        "seeded" => NoiseSource::Seeded {
            seed: v.get("seed").and_then(Value::as_u64).ok_or_else(|| {
                ModelError::new("privacy.noise_source.seed", "not an unsigned integer")
            })?,
        },
        _ => {
            return Err(ModelError::new(
                "privacy.noise_source.kind",
                "not `secure` or `seeded`",
            ));
        }
    };
    if v.get("private_release").and_then(Value::as_bool) != Some(source.is_private_release()) {
        return Err(ModelError::new(
            "privacy.noise_source.private_release",
            format!(
                "must be {} for a {kind} noise source",
                source.is_private_release()
            ),
        ));
    }
    Ok(source)
}

/// What is wrong with a model file: the field (dotted path) and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelError {
    field: String,
    reason: String,
}

impl ModelError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error for a field inside `parent`.
    fn within(self, parent: &str) -> Self {
        Self {
            field: format!("{parent}.{}", self.field),
            reason: self.reason,
        }
    }
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "not a dpglm model file: {}", self.reason)
        } else {
            write!(
                f,
                "not a valid dpglm model file: field `{}`: {}",
                self.field, self.reason
            )
        }
    }
}

fn field<'a>(map: &'a Map<String, Value>, key: &str) -> Result<&'a Value, ModelError> {
    map.get(key).ok_or_else(|| ModelError::new(key, "missing"))
}

fn number(v: &Value, name: &str) -> Result<f64, ModelError> {
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| ModelError::new(name, "not a finite number"))
}

/// Write `text` to `path` atomically: into a fresh temporary file in the same directory, then
/// renamed over `path`, so a reader never sees a half-written file and a failed write leaves
/// any previous file intact.
///
/// # Errors
/// [`CliError::Failure`] naming the file when it cannot be written.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    let fail =
        |e: std::io::Error| CliError::Failure(format!("cannot write {}: {e}", path.display()));
    let name = path.file_name().ok_or_else(|| {
        CliError::Usage(format!(
            "invalid value for --out: {} is not a file name",
            path.display()
        ))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}

/// The file `path` names once it exists: its canonical path, or its canonical directory joined
/// with its name when the file does not exist yet (`None` when the directory does not exist).
pub(crate) fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.canonicalize().ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use proptest::prelude::*;

    fn valid() -> ModelFile {
        ModelFile {
            algorithm: AlgorithmArg::Objpert,
            loss: Loss::Logistic,
            n_features_in: 2,
            feature_names: Some(vec!["a".into(), "c=u".into()]),
            input: Some(TableSpec {
                label: Some("y".into()),
                labels: Labels::Classes {
                    negative: "no".into(),
                    positive: "yes".into(),
                },
                columns: Some(vec![
                    Column::numeric("a"),
                    Column::categorical("c", &["u".into()]).unwrap(),
                ]),
            }),
            preprocessing: Preprocessing {
                scaling: Some(FittedScaling {
                    method: ScalingMethod::Standard,
                    features: vec![
                        FeatureScale {
                            low: Some(-4.0),
                            high: Some(8.0),
                            center: 2.0,
                            scale: 2.0,
                            estimated: Some(0.025),
                        },
                        FeatureScale {
                            low: None,
                            high: None,
                            center: 0.0,
                            scale: 1.0,
                            estimated: None,
                        },
                    ],
                }),
                unit_norm: true,
                bias: Some(1.0),
            },
            coefficients: vec![0.5, -1.25, 0.125],
            intercept: 0.0,
            noise_source: Some(NoiseSource::Seeded { seed: 3 }),
            privacy: json!({
                "target_epsilon": 1.0, "target_delta": 1e-5, "epsilon": 0.99, "delta": 1e-5,
                "accountant": "rdp", "neighbouring": "add-remove", "noise": {}, "ledger": [],
                "notes": [],
            }),
        }
    }

    fn text(m: &ModelFile) -> String {
        serde_json::to_string_pretty(&m.to_json().unwrap()).unwrap()
    }

    /// The field a modified file is refused for.
    fn refused(edit: impl FnOnce(&mut Map<String, Value>)) -> ModelError {
        let mut v = valid().to_json().unwrap();
        edit(v.as_object_mut().unwrap());
        ModelFile::parse(&v.to_string()).unwrap_err()
    }

    #[test]
    fn unit_norm_rows_survive_extreme_magnitudes() {
        let prep = Preprocessing {
            scaling: None,
            unit_norm: true,
            bias: Some(2.0),
        };
        let x = ndarray::array![
            [1.7e308, 1.7e308, 1.7e308],
            [2.72e-162, 0.0, 0.0],
            [3.0, -4.0, 0.0],
            [0.0, 0.0, 0.0]
        ];
        let out = prep.apply(x.view());
        let third = 1.0 / 3.0_f64.sqrt();
        let expected = ndarray::array![
            [third, third, third, 2.0],
            [1.0, 0.0, 0.0, 2.0],
            [0.6, -0.8, 0.0, 2.0],
            [0.0, 0.0, 0.0, 2.0]
        ];
        for (a, b) in out.iter().zip(&expected) {
            assert!((a - b).abs() <= 1e-15, "{out} vs {expected}");
        }
    }

    #[test]
    fn round_trips() {
        let m = valid();
        assert_eq!(ModelFile::parse(&text(&m)).unwrap(), m);
        let huber = ModelFile {
            loss: Loss::huber(0.5).unwrap(),
            noise_source: Some(NoiseSource::Secure),
            preprocessing: Preprocessing {
                scaling: None,
                unit_norm: false,
                bias: None,
            },
            coefficients: vec![1.0, 2.0],
            feature_names: None,
            input: None,
            ..valid()
        };
        assert_eq!(ModelFile::parse(&text(&huber)).unwrap(), huber);
        // A file written before feature scaling existed (no `scaling` key) still reads.
        let mut old = valid().to_json().unwrap();
        old["preprocessing"]
            .as_object_mut()
            .unwrap()
            .remove("scaling");
        let read = ModelFile::parse(&old.to_string()).unwrap();
        assert_eq!(read.preprocessing.scaling, None);
        assert_eq!(read.coefficients, valid().coefficients);
    }

    /// The stored scaling is applied first, exactly as stored (clipped, centred, scaled).
    #[test]
    fn scaling_is_applied_before_the_row_steps() {
        let prep = Preprocessing {
            unit_norm: false,
            bias: Some(1.0),
            ..valid().preprocessing
        };
        let out = prep.apply(ndarray::array![[100.0, 3.0], [3.0, -2.0]].view());
        assert_eq!(out, ndarray::array![[3.0, 3.0, 1.0], [0.5, -2.0, 1.0]]);
    }

    #[test]
    fn bad_scalings_are_refused() {
        let cases: [(Value, &str); 5] = [
            (
                json!({"method": "zscore", "features": []}),
                "preprocessing.scaling.method",
            ),
            (
                json!({"method": "standard", "features": []}),
                "preprocessing.scaling.features",
            ),
            (
                json!({"method": "standard", "features": [
                    {"low": null, "high": null, "center": 0, "scale": 0, "source": "public", "epsilon": null},
                    {"low": null, "high": null, "center": 0, "scale": 1, "source": "public", "epsilon": null}]}),
                "preprocessing.scaling",
            ),
            (
                json!({"method": "minmax", "features": [
                    {"low": 0, "high": 1, "center": 0, "scale": 1, "source": "estimated", "epsilon": null},
                    {"low": null, "high": null, "center": 0, "scale": 1, "source": "public", "epsilon": null}]}),
                "preprocessing.scaling.features[0].source",
            ),
            (
                json!({"method": "minmax", "features": [
                    {"low": 0, "high": 1, "center": "0", "scale": 1, "source": "public", "epsilon": null},
                    {"low": null, "high": null, "center": 0, "scale": 1, "source": "public", "epsilon": null}]}),
                "preprocessing.scaling.features[0].center",
            ),
        ];
        for (v, field) in cases {
            let e = refused(|m| {
                m["preprocessing"]["scaling"] = v;
            });
            assert_eq!(e.field, field);
        }
        let e = refused(|m| {
            m["preprocessing"]["zscore"] = json!(1);
        });
        assert_eq!(e.field, "preprocessing.zscore");
    }

    #[test]
    fn wrong_format_or_version_is_refused() {
        for f in [
            json!("dpglm-model/2"),
            json!("dpglm-model/0"),
            json!(1),
            json!(""),
        ] {
            assert_eq!(
                refused(|m| drop(m.insert("format".into(), f))).field,
                "format"
            );
        }
        assert_eq!(refused(|m| drop(m.remove("format"))).field, "format");
        assert_eq!(
            refused(|m| drop(m.insert("extra".into(), json!(1)))).field,
            "extra"
        );
    }

    #[test]
    fn coefficient_count_must_match_the_dimension() {
        // The file behind "model expects 18446744073709551615 features": no coefficients
        // with a bias column.
        let e = refused(|m| drop(m.insert("coefficients".into(), json!([]))));
        assert_eq!(e.field, "coefficients");
        assert!(
            e.reason.contains("0 values") && e.reason.contains("needs 3"),
            "{e}"
        );
        let e = refused(|m| drop(m.insert("n_features_in".into(), json!(0))));
        assert_eq!(e.field, "n_features_in");
        let e = refused(|m| drop(m.insert("n_features_in".into(), json!(-1))));
        assert_eq!(e.field, "n_features_in");
    }

    #[test]
    fn every_number_is_validated() {
        let cases: [(&str, Value, &str); 12] = [
            ("input", json!({"label": "y"}), "input"),
            (
                "input",
                json!({"label": "y", "labels": "numeric", "columns": [{"name": "a"}, {"name": "c", "levels": ["u"]}]}),
                "input.labels",
            ),
            (
                "input",
                json!({"label": "y", "labels": "signs", "columns": [{"name": "a"}, {"name": "b"}]}),
                "input.columns",
            ),
            ("intercept", json!("0"), "intercept"),
            ("coefficients", json!([1, null, 2]), "coefficients[1]"),
            ("huber_h", json!(1.0), "huber_h"),
            ("loss", json!("hinge"), "loss"),
            ("algorithm", json!("sgd"), "algorithm"),
            ("feature_names", json!(["a"]), "feature_names"),
            ("feature_names", json!(["a", "a"]), "feature_names"),
            ("feature_names", json!(["a", 2]), "feature_names"),
            (
                "preprocessing",
                json!({"unit_norm_rows": 1, "bias": null}),
                "preprocessing.unit_norm_rows",
            ),
        ];
        for (key, value, field) in cases {
            assert_eq!(
                refused(|m| drop(m.insert(key.into(), value))).field,
                field,
                "{key}"
            );
        }
        for (key, value, field) in [
            ("epsilon", json!(-1.0), "epsilon"),
            ("delta", json!(2.0), "delta"),
            ("target_delta", json!(null), "target_delta"),
            (
                "noise_source",
                json!({"kind": "seeded", "seed": 3, "private_release": true}),
                "noise_source.private_release",
            ),
            (
                "noise_source",
                json!({"kind": "seeded", "private_release": false}),
                "noise_source.seed",
            ),
            ("noise_source", json!({"kind": "os"}), "noise_source.kind"),
        ] {
            let e = refused(|m| {
                m["privacy"][key] = value;
            });
            assert_eq!(e.field, format!("privacy.{field}"));
        }
        // JSON has no NaN or ∞: 1e999 is not a number serde_json accepts.
        assert!(ModelFile::parse(&text(&valid()).replace("0.125", "1e999")).is_err());
    }

    #[test]
    fn non_finite_values_are_never_written() {
        let m = ModelFile {
            intercept: f64::NAN,
            ..valid()
        };
        assert!(m.to_json().is_err());
        let m = ModelFile {
            coefficients: vec![0.0, f64::INFINITY, 1.0],
            ..valid()
        };
        assert!(m.to_json().is_err());
    }

    #[test]
    fn writes_atomically_and_resolves_paths() {
        let dir = std::env::temp_dir().join(format!("dpglm-model-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        write_atomically(&path, "first").unwrap();
        write_atomically(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["m.json"], "no temporary file left behind");
        // A directory cannot be replaced: the error leaves it alone and no temp file.
        assert!(write_atomically(&dir, "x").is_err());
        let odd = dir.join("sub").join("..").join("m.json");
        assert!(resolved(&odd).is_none(), "no `sub` directory");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert_eq!(resolved(&odd), Some(path.canonicalize().unwrap()));
        assert_eq!(
            resolved(&dir.join("new.json")),
            Some(dir.canonicalize().unwrap().join("new.json"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Mutations of a valid file's text: insert, delete or overwrite characters.
    fn mutate(mut s: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
        for &(i, op, b) in edits {
            let i = i % (s.len() + 1);
            match op % 3 {
                0 => s.insert(i, b),
                1 if i < s.len() => {
                    s.remove(i);
                }
                _ if i < s.len() => s[i] = b,
                _ => {}
            }
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Arbitrary text: a typed error or a valid model, never a panic.
        #[test]
        fn arbitrary_text_is_refused_or_valid(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(m) = ModelFile::parse(&String::from_utf8_lossy(&bytes)) {
                prop_assert_eq!(m.coefficients.len(), m.n_features_in + m.preprocessing.extra_columns());
            }
        }

        /// Structured mutations of a valid file: each result is a typed error or a model whose
        /// every field is valid (and which writes back).
        #[test]
        fn mutated_files_are_refused_or_valid(
            edits in prop::collection::vec((any::<usize>(), any::<u8>(), prop::sample::select(b"0123456789.-e,:[]{}\"nul ".to_vec())), 1..5)
        ) {
            let bytes = mutate(text(&valid()).into_bytes(), &edits);
            if let Ok(m) = ModelFile::parse(&String::from_utf8_lossy(&bytes)) {
                prop_assert_eq!(m.coefficients.len(), m.n_features_in + m.preprocessing.extra_columns());
                prop_assert!(m.coefficients.iter().all(|c| c.is_finite()) && m.intercept.is_finite());
                prop_assert!(m.to_json().is_ok());
            }
        }
    }
}
