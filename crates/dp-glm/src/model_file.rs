//! The model file: one versioned JSON format for the library and the `dpglm` command line,
//! written by [`LinearModel::to_json`] (or `serde` with any format) and read by
//! [`LinearModel::from_json`], which validates every field.
//!
//! Format `dpglm-model/3` (this version writes it):
//!
//! ```text
//! { "format": "dpglm-model/2",
//!   "algorithm": str|null, "loss": "logistic"|"squared"|"huber"|"huber-svm"|"savage",
//!   "huber_h": f64|null (the h of huber and huber-svm),
//!   "n_features_in": u64, "feature_names": [str]|null, "input": TableSpec|null,
//!   "preprocessing": { "unit_norm_rows": bool, "bias": f64|null,
//!                      "scaling": {"method", "features": [{low, high, center, scale,
//!                                  source: "public"|"estimated", epsilon}]}|null,
//!                      "row_bound": f64|null },
//!   "coefficients": [f64] (n_features_in, +1 with a bias), "intercept": f64,
//!   "privacy": { "target_epsilon", "target_delta", "epsilon", "delta", "accountant",
//!                "neighbouring", "noise": {name: f64}, "event": Event, "notes": [str],
//!                "noise_source": {"kind", "seed", "private_release", "description"},
//!                "bounds": [BoundRecord] },
//!   "digest": "sha256:<hex>" }
//! ```
//!
//! `event` is the privacy event tree everything released composes into (its layout in
//! `model_file/events.rs`); the reported `epsilon` is its price, which `dpglm account
//! --model` computes again.
//!
//! Files of format `dpglm-model/2` (a flat `"ledger": [{"mechanism", "parameters", "count",
//! "label"}]` in place of `event`, read as one composition) and `dpglm-model/1` (written
//! before this module existed: no `digest`, no `row_bound`) are still read. Any other
//! `format` is [`ModelFileError::UnsupportedFormat`].
//!
//! **Integrity.** `digest` is the SHA-256 of the file's content in canonical form (the
//! compact JSON of every other field, in the order above, `noise` sorted by name). Reading recomputes it, so a file
//! edited after it was written (a changed coefficient, ε or noise parameter) or damaged is
//! refused ([`ModelFileError::DigestMismatch`]); layout (whitespace) does not matter. This
//! detects accidents and edits, not forgery: anyone can recompute the digest of an edited
//! file. It is not a signature, and proves nothing about who wrote the file.
//!
//! Every number must be finite: JSON has no NaN or ∞ (`serde_json` would write `null`), so a
//! model holding one is refused when written ([`ModelFileError::NonFinite`]). Reading refuses
//! text longer than [`MAX_MODEL_BYTES`], unknown fields, and fields inconsistent with each
//! other ([`ModelFileError::Invalid`], naming the field).
//!
//! # Privacy
//! A model file holds the released coefficients and intercept, public settings, and the
//! privacy report (see [`PrivacyReport`]: nothing in it is a statistic of the training data
//! computed without noise); reading or writing it is post-processing.

use std::collections::HashSet;

use dp_accounting::{Event, GridGaussian, Ledger, Mechanism, ObjPertParams, PrivacyEvent};
use dp_data::{TableSpec, Task};
use ndarray::Array1;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::bounds::{Bound, BoundSource};
use crate::error::{Error, Result};
use crate::loss::{LabelDomain, Loss};
use crate::model::LinearModel;
use crate::pipeline::Preprocessing;
use crate::report::{NoiseSource, PrivacyReport};
use crate::scaling::{FeatureScale, FittedScaling, ScalingMethod};

mod events;

pub use events::StoredEvent;
use events::WireEvent;

/// The `format` this version writes.
pub const FORMAT: &str = "dpglm-model/3";

/// The format with a flat ledger in place of the event tree, still read.
pub const FORMAT_V2: &str = "dpglm-model/2";

/// The earliest format, still read.
pub const FORMAT_V1: &str = "dpglm-model/1";

/// Which format a text is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
    V3,
}

impl Version {
    fn of(format: &str) -> Option<Self> {
        match format {
            FORMAT => Some(Version::V3),
            FORMAT_V2 => Some(Version::V2),
            FORMAT_V1 => Some(Version::V1),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Version::V1 => FORMAT_V1,
            Version::V2 => FORMAT_V2,
            Version::V3 => FORMAT,
        }
    }
}

/// The longest model text read (1 GiB: far above the ≈ 25 bytes per coefficient of any model
/// whose data fit in the readers' memory budget).
pub const MAX_MODEL_BYTES: usize = 1 << 30;

/// Why a model file is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileError {
    /// The `format` field is missing or names another program's file or another version.
    #[error(
        "not a dpglm model file this version reads: field `format`: {}, not `{FORMAT}`, \
         `{FORMAT_V2}` or `{FORMAT_V1}` (another program's file or version)",
        found.as_deref().map_or("missing".to_string(), |f| format!("`{f}`"))
    )]
    UnsupportedFormat {
        /// The `format` found (`None`: missing or not a string).
        found: Option<String>,
    },
    /// A field is malformed, out of range, unknown, or inconsistent with the others.
    #[error(
        "{}{reason}",
        if field.is_empty() {
            "not a dpglm model file: ".to_string()
        } else {
            format!("not a valid dpglm model file: field `{field}`: ")
        }
    )]
    Invalid {
        /// The field's dotted path (`privacy.ledger[2].count`; empty: the whole text).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The content does not match its digest: edited or damaged after it was written.
    #[error(
        "not a valid dpglm model file: field `digest`: the content's digest is {computed}, \
         not the stored {stored}: the file was edited or damaged after it was written"
    )]
    DigestMismatch {
        /// The digest stored in the file.
        stored: String,
        /// The digest of the content as read.
        computed: String,
    },
    /// A number to be written is NaN or infinite.
    #[error("field `{field}` is {value}, not a finite number: refusing to save the model")]
    NonFinite {
        /// The field's dotted path.
        field: String,
        /// The value.
        value: f64,
    },
    /// The text is longer than [`MAX_MODEL_BYTES`].
    #[error("{bytes} bytes is larger than any model file ({limit} bytes at most)")]
    TooLarge {
        /// The text's length.
        bytes: u64,
        /// [`MAX_MODEL_BYTES`].
        limit: u64,
    },
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::ModelFile(ModelFileError::Invalid {
        field: field.into(),
        reason: reason.into(),
    })
}

/// Where a bound a learner used came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundOrigin {
    /// Given by the user (a flag or an argument): public.
    Flag,
    /// The learner's default: public.
    Default,
    /// Implied by a public preprocessing step (unit-norm rows plus a bias).
    Preprocessing,
    /// Estimated privately (its cost is in the ledger).
    Estimated,
}

/// A bound a learner used, as saved with the model: its value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundRecord {
    /// The learner's name for it (`x_bound`, `y_bound`, `clip`).
    pub name: String,
    /// Its value (finite, `> 0`).
    pub value: f64,
    /// Where it came from.
    pub source: BoundOrigin,
    /// An estimate's quantile, in `(0, 1)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantile: Option<f64>,
    /// An estimate's statistic, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<String>,
    /// An estimate's cost ε, `> 0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
}

impl BoundRecord {
    /// The record of `b`; a public bound is [`BoundOrigin::Flag`] when `given` by the user,
    /// [`BoundOrigin::Default`] otherwise.
    pub fn of(b: &Bound, given: bool) -> Self {
        let (source, quantile, statistic, epsilon) = match b.source {
            BoundSource::Public if given => (BoundOrigin::Flag, None, None, None),
            BoundSource::Public => (BoundOrigin::Default, None, None, None),
            BoundSource::Preprocessing => (BoundOrigin::Preprocessing, None, None, None),
            BoundSource::Estimated {
                statistic,
                quantile,
                epsilon,
            } => (
                BoundOrigin::Estimated,
                Some(quantile),
                Some(statistic.describe().to_string()),
                Some(epsilon),
            ),
        };
        Self {
            name: b.name.to_string(),
            value: b.value,
            source,
            quantile,
            statistic,
            epsilon,
        }
    }

    /// Checks the record: a finite positive value; an estimate has a quantile in `(0, 1)`, a
    /// statistic and a finite `ε > 0`, a public bound none of these.
    ///
    /// # Errors
    /// [`ModelFileError::Invalid`] naming `bounds`.
    pub fn validate(&self) -> Result<()> {
        let fail = |reason: &str| invalid("privacy.bounds", format!("`{}`: {reason}", self.name));
        if !(self.value.is_finite() && self.value > 0.0) {
            return Err(fail("the value must be finite and > 0"));
        }
        let estimate = (self.quantile, self.statistic.as_ref(), self.epsilon);
        match (self.source, estimate) {
            (BoundOrigin::Estimated, (Some(q), Some(_), Some(e)))
                if q > 0.0 && q < 1.0 && e.is_finite() && e > 0.0 =>
            {
                Ok(())
            }
            (BoundOrigin::Estimated, _) => Err(fail(
                "an estimate needs a quantile in (0, 1), a statistic and epsilon > 0",
            )),
            (_, (None, None, None)) => Ok(()),
            _ => Err(fail(
                "only an estimate has a quantile, statistic and epsilon",
            )),
        }
    }
}

/// A JSON object of numbers kept in its order (`noise`, a mechanism's `parameters`).
mod ordered {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        v: &[(String, f64)],
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, x) in v {
            m.serialize_entry(k, x)?;
        }
        m.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Vec<(String, f64)>, D::Error> {
        struct Numbers;
        impl<'de> Visitor<'de> for Numbers {
            type Value = Vec<(String, f64)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of numbers")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut out: Vec<(String, f64)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, f64>()? {
                    if out.iter().any(|(o, _)| *o == k) {
                        return Err(de::Error::custom(format!("`{k}` appears twice")));
                    }
                    out.push((k, v));
                }
                Ok(out)
            }
        }
        d.deserialize_map(Numbers)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    format: String,
    #[serde(default)]
    algorithm: Option<String>,
    loss: String,
    #[serde(default)]
    huber_h: Option<f64>,
    n_features_in: u64,
    #[serde(default)]
    feature_names: Option<Vec<String>>,
    #[serde(default)]
    input: Option<TableSpec>,
    preprocessing: WirePreprocessing,
    coefficients: Vec<f64>,
    intercept: f64,
    privacy: WirePrivacy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePreprocessing {
    unit_norm_rows: bool,
    #[serde(default)]
    bias: Option<f64>,
    #[serde(default)]
    scaling: Option<WireScaling>,
    #[serde(default)]
    row_bound: Option<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireScaling {
    method: String,
    features: Vec<WireFeatureScale>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireFeatureScale {
    low: Option<f64>,
    high: Option<f64>,
    center: f64,
    scale: f64,
    source: String,
    epsilon: Option<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePrivacy {
    target_epsilon: f64,
    target_delta: f64,
    epsilon: f64,
    delta: f64,
    accountant: String,
    neighbouring: String,
    #[serde(with = "ordered")]
    noise: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ledger: Option<Vec<WireEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<WireEvent>,
    notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noise_source: Option<WireNoiseSource>,
    #[serde(default)]
    bounds: Vec<BoundRecord>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEntry {
    mechanism: String,
    #[serde(with = "ordered")]
    parameters: Vec<(String, f64)>,
    count: u64,
    label: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireNoiseSource {
    kind: String,
    #[serde(default)]
    seed: Option<u64>,
    private_release: bool,
    #[serde(default)]
    description: Option<String>,
}

/// `v` when finite, else [`ModelFileError::NonFinite`] naming `field`.
fn finite(field: &str, v: f64) -> Result<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Error::ModelFile(ModelFileError::NonFinite {
            field: field.to_string(),
            value: v,
        }))
    }
}

fn finite_opt(field: &str, v: Option<f64>) -> Result<Option<f64>> {
    v.map(|v| finite(field, v)).transpose()
}

/// A list of named numbers, each finite and named once (it is written as a JSON object).
fn finite_list(field: &str, list: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
    let mut seen = HashSet::with_capacity(list.len());
    list.iter()
        .map(|(k, v)| {
            if !seen.insert(k.as_str()) {
                return Err(invalid(field, format!("`{k}` appears twice")));
            }
            Ok((k.clone(), finite(&format!("{field}.{k}"), *v)?))
        })
        .collect()
}

impl From<&FittedScaling> for WireScaling {
    fn from(s: &FittedScaling) -> Self {
        Self {
            method: s.method.name().to_string(),
            features: s
                .features
                .iter()
                .map(|f| WireFeatureScale {
                    low: f.low,
                    high: f.high,
                    center: f.center,
                    scale: f.scale,
                    source: if f.estimated.is_some() {
                        "estimated"
                    } else {
                        "public"
                    }
                    .into(),
                    epsilon: f.estimated,
                })
                .collect(),
        }
    }
}

/// The scaling as saved: `method`, and per feature `low`, `high` (null: not clipped),
/// `center`, `scale`, `source` (`public` or `estimated`) and the `epsilon` an estimate cost.
impl Serialize for FittedScaling {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        WireScaling::from(self).serialize(s)
    }
}

impl WireScaling {
    fn fitted(self, n: usize) -> Result<FittedScaling> {
        let at = "preprocessing.scaling";
        let method = match self.method.as_str() {
            "standard" => ScalingMethod::Standard,
            "minmax" => ScalingMethod::MinMax,
            _ => {
                return Err(invalid(
                    format!("{at}.method"),
                    "not `standard` or `minmax`",
                ));
            }
        };
        if self.features.len() != n {
            return Err(invalid(
                format!("{at}.features"),
                format!("{} entries for n_features_in = {n}", self.features.len()),
            ));
        }
        let mut features = Vec::with_capacity(n);
        for (i, f) in self.features.into_iter().enumerate() {
            let estimated = match (f.source.as_str(), f.epsilon) {
                ("public", None) => None,
                ("estimated", Some(e)) if e.is_finite() && e > 0.0 => Some(e),
                _ => {
                    return Err(invalid(
                        format!("{at}.features[{i}].source"),
                        "not `public` (epsilon null) or `estimated` (epsilon > 0)",
                    ));
                }
            };
            features.push(FeatureScale {
                low: f.low,
                high: f.high,
                center: f.center,
                scale: f.scale,
                estimated,
            });
        }
        let scaling = FittedScaling { method, features };
        scaling.validate().map_err(|e| invalid(at, e.to_string()))?;
        Ok(scaling)
    }
}

/// Checks a model's description of its input: one distinct name per raw feature, and a
/// valid table pipeline whose labels fit `loss` and whose columns' names are those names.
pub(crate) fn check_input(
    loss: Loss,
    n: usize,
    names: Option<&[String]>,
    input: Option<&TableSpec>,
) -> Result<()> {
    if let Some(names) = names {
        if names.len() != n {
            return Err(invalid(
                "feature_names",
                format!("{} names for n_features_in = {n}", names.len()),
            ));
        }
        let mut seen = HashSet::with_capacity(n);
        if let Some(twice) = names.iter().find(|s| !seen.insert(s.as_str())) {
            return Err(invalid("feature_names", format!("`{twice}` appears twice")));
        }
    }
    if let Some(spec) = input {
        spec.validate().map_err(|e| invalid("input", e))?;
        let task = match loss.label_domain() {
            LabelDomain::Signs => Task::Classification,
            LabelDomain::Real => Task::Regression,
        };
        if spec.labels.task() != task {
            return Err(invalid(
                "input.labels",
                format!(
                    "{:?} labels do not fit the {} loss",
                    spec.labels,
                    loss.name()
                ),
            ));
        }
        if spec.feature_names().as_deref() != names {
            return Err(invalid(
                "input.columns",
                "the columns' output names differ from feature_names",
            ));
        }
    }
    Ok(())
}

/// A count stored as a number in a mechanism's parameters.
fn count(k: &str, v: f64) -> std::result::Result<u64, String> {
    if v >= 0.0 && v.fract() == 0.0 && v <= 2f64.powi(53) {
        Ok(v as u64)
    } else {
        Err(format!("parameter `{k}` = {v} is not a count"))
    }
}

/// The mechanism `name` with parameters `p` (as [`Mechanism::name`] and
/// [`Mechanism::parameters`] give them), rebuilt through its validating constructor; the
/// rebuilt mechanism's parameters must be exactly `p` (in any order).
fn mechanism(name: &str, p: &[(String, f64)]) -> std::result::Result<Mechanism, String> {
    let get = |k: &str| {
        p.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("missing parameter `{k}`"))
    };
    let has = |k: &str| p.iter().any(|(n, _)| n == k);
    let op = || {
        ObjPertParams::new(
            get("sigma")?,
            get("lambda")?,
            get("beta")?,
            get("lipschitz")?,
        )
        .map_err(|e| e.to_string())
    };
    let m = match name {
        "gaussian" => Mechanism::gaussian(get("sigma")?, get("sensitivity")?),
        "laplace" => Mechanism::laplace(get("scale")?, get("sensitivity")?),
        "subsampled-gaussian" if has("n") => {
            let n = count("n", get("n")?)?;
            let batch = (get("q")? * n as f64).round() as u64;
            Mechanism::subsampled_gaussian_without_replacement(get("noise_multiplier")?, batch, n)
        }
        "subsampled-gaussian" => {
            Mechanism::subsampled_gaussian(get("noise_multiplier")?, get("q")?)
        }
        "pure-dp" => Mechanism::pure_dp(get("epsilon")?),
        "gamma-ball" => Mechanism::gamma_ball(
            get("scale")?,
            get("q")?,
            count("dim", get("dim")?)?,
            get("sensitivity")?,
        ),
        "objpert" => Ok(Mechanism::objective_perturbation(op()?)),
        "amp" => Mechanism::amp(op()?, get("tau")?, get("sigma_out")?),
        "zcdp" => Mechanism::zcdp(get("rho")?),
        other => return Err(format!("unknown mechanism `{other}`")),
    }
    .map_err(|e| e.to_string())?;
    let m = if has("grid_sigma") || has("grid_dim") {
        let grid = GridGaussian::new(get("grid_sigma")?, count("grid_dim", get("grid_dim")?)?)
            .map_err(|e| e.to_string())?;
        m.with_grid(grid)
    } else {
        m
    };
    let rebuilt = m.parameters();
    let same = rebuilt.len() == p.len()
        && rebuilt
            .iter()
            .all(|(k, v)| p.iter().any(|(n, x)| n == k && x == v));
    if same {
        Ok(m)
    } else {
        Err(format!(
            "the parameters do not describe one {name} mechanism exactly (it would have {rebuilt:?})"
        ))
    }
}

impl WirePrivacy {
    /// The report, noise source and bounds; `v1`: a format-1 file, whose noise source's
    /// description may be worded as that version wrote it.
    fn report(
        self,
        version: Version,
    ) -> Result<(PrivacyReport, Option<NoiseSource>, Vec<BoundRecord>)> {
        let v1 = version == Version::V1;
        let at = |k: &str| format!("privacy.{k}");
        for (k, v) in [
            ("target_epsilon", self.target_epsilon),
            ("epsilon", self.epsilon),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(at(k), "not a finite number >= 0"));
            }
        }
        for (k, v) in [("target_delta", self.target_delta), ("delta", self.delta)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(invalid(at(k), "not a probability in [0, 1]"));
            }
        }
        let accountant = self
            .accountant
            .parse()
            .map_err(|e: String| invalid(at("accountant"), e))?;
        let neighbouring = self
            .neighbouring
            .parse()
            .map_err(|e: String| invalid(at("neighbouring"), e))?;
        if let Some((k, _)) = self.noise.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(at(&format!("noise.{k}")), "not a finite number"));
        }
        let event = match (version, self.ledger, self.event) {
            (Version::V3, None, Some(event)) => event.tree(neighbouring, &at("event"))?,
            (Version::V1 | Version::V2, Some(entries), None) => {
                let mut ledger = Ledger::new(neighbouring);
                for (i, e) in entries.into_iter().enumerate() {
                    let here = at(&format!("ledger[{i}]"));
                    let m =
                        mechanism(&e.mechanism, &e.parameters).map_err(|r| invalid(&here, r))?;
                    ledger.record(m, e.count, &e.label);
                    if ledger.entries().len() != i + 1 {
                        return Err(invalid(here, "repeats the entry before it"));
                    }
                }
                PrivacyEvent::new(neighbouring, ledger_tree(&ledger))
                    .map_err(|e| invalid(at("ledger"), e.to_string()))?
            }
            (Version::V3, _, _) => {
                return Err(invalid(
                    at("event"),
                    format!("format `{FORMAT}` holds an `event` tree and no `ledger`"),
                ));
            }
            (_, _, _) => {
                return Err(invalid(
                    at("ledger"),
                    format!(
                        "format `{}` holds a `ledger` and no `event`",
                        version.name()
                    ),
                ));
            }
        };
        let noise_source = self
            .noise_source
            .map(|s| {
                let source = match (s.kind.as_str(), s.seed) {
                    ("secure", None) => NoiseSource::Secure,
                    ("seeded", Some(seed)) => NoiseSource::Seeded { seed },
                    ("seeded", None) => {
                        return Err(invalid(at("noise_source.seed"), "not an unsigned integer"));
                    }
                    _ => {
                        return Err(invalid(
                            at("noise_source.kind"),
                            "not `secure` (seed null) or `seeded`",
                        ));
                    }
                };
                if s.private_release != source.is_private_release() {
                    return Err(invalid(
                        at("noise_source.private_release"),
                        format!(
                            "must be {} for a {} noise source",
                            source.is_private_release(),
                            s.kind
                        ),
                    ));
                }
                // The digest is of the model, which holds no description: the text must be
                // the source's own.
                if !v1 && s.description != Some(source.to_string()) {
                    return Err(invalid(
                        at("noise_source.description"),
                        format!("must be {:?}", source.to_string()),
                    ));
                }
                Ok(source)
            })
            .transpose()?;
        self.bounds.iter().try_for_each(BoundRecord::validate)?;
        let report = PrivacyReport {
            target: (self.target_epsilon, self.target_delta),
            epsilon: self.epsilon,
            delta: self.delta,
            accountant,
            neighbouring,
            noise: self.noise,
            event,
            notes: self.notes,
        };
        Ok((report, noise_source, self.bounds))
    }
}

/// `"sha256:"` and the hex SHA-256 of the content's canonical form (its compact JSON
/// without the digest, `noise` sorted by name).
fn digest(w: &Wire) -> Result<String> {
    let bytes = serde_json::to_vec(w).map_err(|e| invalid("", e.to_string()))?;
    let hash = Sha256::digest(&bytes);
    Ok(format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// A format-1 or -2 ledger as a tree: its leading pure-DP entries (the bounds' estimates,
/// which those formats' writers recorded first) and the rest as two compositions, so that
/// basic composition can price them apart as those writers did. The same releases in the same
/// order: any grouping of one composition is a valid tree of it.
fn ledger_tree(ledger: &Ledger) -> Event {
    let entries = ledger.entries();
    let pure = entries
        .iter()
        .take_while(|e| e.mechanism.name() == "pure-dp")
        .count();
    let group = |part: &[dp_accounting::LedgerEntry]| {
        Event::Composed(part.iter().cloned().map(Event::Release).collect())
    };
    if pure == 0 || pure == entries.len() {
        group(entries)
    } else {
        Event::Composed(vec![group(&entries[..pure]), group(&entries[pure..])])
    }
}

/// The releases of a tree of compositions and releases only, in order; `None` for any other
/// node.
fn plain_releases(e: &Event, out: &mut Vec<dp_accounting::LedgerEntry>) -> Option<()> {
    match e {
        Event::Release(r) => {
            out.push(r.clone());
            Some(())
        }
        Event::Composed(events) => events.iter().try_for_each(|e| plain_releases(e, out)),
        _ => None,
    }
}

/// The entries of an event tree of compositions and releases, as format 2 saved them (the
/// canonical form of a format-2 file, for its digest).
fn flat_ledger(event: &PrivacyEvent) -> Result<Vec<WireEntry>> {
    let mut entries = Vec::new();
    plain_releases(event.root(), &mut entries)
        .ok_or_else(|| invalid("privacy.event", "not a flat ledger"))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let params: Vec<(String, f64)> = e
                .mechanism
                .parameters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            Ok(WireEntry {
                mechanism: e.mechanism.name().to_string(),
                parameters: finite_list(&format!("privacy.ledger[{i}]"), &params)?,
                count: e.count,
                label: e.label.clone(),
            })
        })
        .collect()
}

impl Wire {
    /// The model as saved in format `version` (this version writes [`FORMAT`]; the older
    /// forms are the canonical forms of files read in them, for their digests).
    fn of(m: &LinearModel, version: Version) -> Result<Self> {
        let r = m.privacy();
        let prep = m.preprocessing();
        let huber_h = match m.loss() {
            Loss::Huber { h } | Loss::HuberSvm { h } => Some(finite("huber_h", h)?),
            _ => None,
        };
        let privacy = WirePrivacy {
            target_epsilon: finite("privacy.target_epsilon", r.target.0)?,
            target_delta: finite("privacy.target_delta", r.target.1)?,
            epsilon: finite("privacy.epsilon", r.epsilon)?,
            delta: finite("privacy.delta", r.delta)?,
            accountant: r.accountant.as_str().to_string(),
            neighbouring: r.neighbouring.as_str().to_string(),
            noise: finite_list("privacy.noise", &r.noise)?,
            ledger: match version {
                Version::V3 => None,
                Version::V1 | Version::V2 => Some(flat_ledger(&r.event)?),
            },
            event: match version {
                Version::V3 => Some(WireEvent::of(r.event.root(), "privacy.event")?),
                Version::V1 | Version::V2 => None,
            },
            notes: r.notes.clone(),
            noise_source: m.noise_source().map(|s| WireNoiseSource {
                kind: s.kind().to_string(),
                seed: s.seed(),
                private_release: s.is_private_release(),
                description: Some(s.to_string()),
            }),
            bounds: m
                .bounds()
                .iter()
                .map(|b| {
                    b.validate()?;
                    Ok(b.clone())
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let mut w = Self {
            format: version.name().to_string(),
            algorithm: m.algorithm().map(str::to_string),
            loss: m.loss().name().to_string(),
            huber_h,
            n_features_in: m.n_features_in() as u64,
            feature_names: m.feature_names().map(<[String]>::to_vec),
            input: m.input().cloned(),
            preprocessing: WirePreprocessing {
                unit_norm_rows: prep.unit_norm,
                bias: finite_opt("preprocessing.bias", prep.bias)?,
                scaling: prep.scaling.as_ref().map(WireScaling::from),
                row_bound: finite_opt("preprocessing.row_bound", prep.row_bound)?,
            },
            coefficients: m.coef().to_vec(),
            intercept: m.intercept(),
            privacy,
            digest: None,
        };
        // The canonical form lists `noise` by name, so that a tool that sorts a JSON object's
        // keys changes no digest.
        let listed = w.privacy.noise.clone();
        w.privacy.noise.sort_by(|a, b| a.0.cmp(&b.0));
        w.digest = Some(digest(&w)?);
        w.privacy.noise = listed;
        Ok(w)
    }

    fn model(self) -> Result<LinearModel> {
        let Some(version) = Version::of(&self.format) else {
            return Err(Error::ModelFile(ModelFileError::UnsupportedFormat {
                found: Some(self.format),
            }));
        };
        let v1 = version == Version::V1;
        let stored = self.digest;
        let loss = match (self.loss.as_str(), self.huber_h) {
            ("logistic", None) => Loss::Logistic,
            ("squared", None) => Loss::Squared,
            ("savage", None) => Loss::Savage,
            ("huber", Some(h)) => Loss::huber(h).map_err(|e| invalid("huber_h", e.to_string()))?,
            ("huber-svm", Some(h)) => {
                Loss::huber_svm(h).map_err(|e| invalid("huber_h", e.to_string()))?
            }
            ("logistic" | "squared" | "savage", Some(_)) => {
                return Err(invalid("huber_h", "must be null for this loss"));
            }
            ("huber" | "huber-svm", None) => {
                return Err(invalid("huber_h", "missing for this loss"));
            }
            _ => {
                return Err(invalid(
                    "loss",
                    "not logistic, squared, huber, huber-svm or savage",
                ));
            }
        };
        let n = usize::try_from(self.n_features_in)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| invalid("n_features_in", "not a positive integer"))?;
        let p = &self.preprocessing;
        let preprocessing = Preprocessing {
            scaling: None,
            unit_norm: p.unit_norm_rows,
            // Files of format 1 may write no bias as 0.
            bias: p.bias.filter(|&b| !(v1 && b == 0.0)),
            row_bound: p.row_bound,
        };
        let expected = n + preprocessing.extra_columns();
        if self.coefficients.len() != expected {
            return Err(invalid(
                "coefficients",
                format!(
                    "{} values, but n_features_in = {n}{} needs {expected}",
                    self.coefficients.len(),
                    if preprocessing.bias.is_some() {
                        " plus the bias column"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if let Some(i) = self.coefficients.iter().position(|c| !c.is_finite()) {
            return Err(invalid(format!("coefficients[{i}]"), "not a finite number"));
        }
        if !self.intercept.is_finite() {
            return Err(invalid("intercept", "not a finite number"));
        }
        let preprocessing = Preprocessing {
            scaling: self
                .preprocessing
                .scaling
                .map(|s| s.fitted(n))
                .transpose()?,
            ..preprocessing
        };
        preprocessing
            .validate(n)
            .map_err(|e| invalid("preprocessing", e.to_string()))?;
        let (report, noise_source, bounds) = self.privacy.report(version)?;
        let mut model = LinearModel::new(
            Array1::from(self.coefficients),
            self.intercept,
            loss,
            report,
        )?
        .with_preprocessing(preprocessing)
        .map_err(|e| invalid("preprocessing", e.to_string()))?
        .with_input(self.feature_names, self.input)?
        .with_bounds(bounds)?;
        if let Some(s) = noise_source {
            model = model.with_noise_source(s);
        }
        if let Some(a) = self.algorithm {
            model = model.with_algorithm(a);
        }
        match (v1, stored) {
            (true, None) => {}
            (true, Some(_)) => {
                return Err(invalid(
                    "digest",
                    format!("files of format `{FORMAT_V1}` have none"),
                ));
            }
            (false, None) => return Err(invalid("digest", "missing")),
            (false, Some(stored)) => {
                // The canonical form of the content as read: what the model writes (so the
                // digest covers exactly what is used).
                let computed = Wire::of(&model, version)?.digest.unwrap_or_default();
                if stored != computed {
                    return Err(Error::ModelFile(ModelFileError::DigestMismatch {
                        stored,
                        computed,
                    }));
                }
            }
        }
        Ok(model)
    }
}

impl Serialize for LinearModel {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Wire::of(self, Version::V3)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LinearModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Wire::deserialize(d)?.model().map_err(de::Error::custom)
    }
}

/// Only the `format` field, to refuse another version before reading its fields.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    format: Option<serde_json::Value>,
}

impl LinearModel {
    /// The model file's text (format [`FORMAT`], indented; [module docs](self)).
    ///
    /// # Errors
    /// [`ModelFileError::NonFinite`] naming a number that is NaN or infinite (JSON has none).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(&Wire::of(self, Version::V3)?)
            .map_err(|e| invalid("", e.to_string()))
    }

    /// Reads a model file's text (format [`FORMAT`], [`FORMAT_V2`] or [`FORMAT_V1`]), validating every
    /// field, their consistency, and the digest.
    ///
    /// # Errors
    /// [`Error::ModelFile`]: [`ModelFileError::TooLarge`] beyond [`MAX_MODEL_BYTES`];
    /// [`ModelFileError::UnsupportedFormat`] for another program's file or version;
    /// [`ModelFileError::Invalid`] naming the field at fault (not JSON, an unknown or
    /// missing field, a wrong type, a number out of range, fields inconsistent with each
    /// other, an unknown mechanism in the ledger); [`ModelFileError::DigestMismatch`] for
    /// content edited after it was written.
    pub fn from_json(text: &str) -> Result<Self> {
        if text.len() > MAX_MODEL_BYTES {
            return Err(Error::ModelFile(ModelFileError::TooLarge {
                bytes: text.len() as u64,
                limit: MAX_MODEL_BYTES as u64,
            }));
        }
        let peek: Peek = serde_json::from_str(text).map_err(|e| {
            let what = if e.is_data() {
                "not a JSON object"
            } else {
                "not JSON"
            };
            invalid("", format!("{what}: {e}"))
        })?;
        match peek.format {
            Some(serde_json::Value::String(f)) if Version::of(&f).is_some() => {}
            Some(serde_json::Value::String(f)) => {
                return Err(Error::ModelFile(ModelFileError::UnsupportedFormat {
                    found: Some(f),
                }));
            }
            _ => {
                return Err(Error::ModelFile(ModelFileError::UnsupportedFormat {
                    found: None,
                }));
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let wire: Wire = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            invalid(field, e.into_inner().to_string())
        })?;
        de.end().map_err(|e| invalid("", e.to_string()))?;
        wire.model()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::bounds::Statistic;
    use dp_accounting::{AccountantKind, Neighbouring};
    use dp_data::{Column, Labels};
    use ndarray::array;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A model using every part of the format: each add/remove mechanism kind in the event
    /// (a grid release; sampling without replacement and shuffling are replace-one, in the
    /// bare model below), a repeat-and-select and a self-composed node, scaling, unit-norm
    /// rows, bias, projection, categorical input, a seeded source, an estimated and a public
    /// bound.
    fn full() -> LinearModel {
        let mut ledger = Ledger::new(Neighbouring::AddRemove);
        let op = ObjPertParams::new(2.0, 1.0, 0.25, 1.5).unwrap();
        let grid = GridGaussian::new(1e6, 3).unwrap();
        for (m, c) in [
            (Mechanism::pure_dp(0.05).unwrap(), 2),
            (Mechanism::gaussian(3.0, 1.0).unwrap().with_grid(grid), 100),
            (Mechanism::laplace(2.0, 1.0).unwrap(), 1),
            (Mechanism::subsampled_gaussian(1.1, 0.01).unwrap(), 500),
            (Mechanism::gamma_ball(0.5, 0.1, 4, 1.0).unwrap(), 9),
            (Mechanism::objective_perturbation(op), 1),
            (Mechanism::amp(op, 1e-6, 0.01).unwrap(), 1),
            (Mechanism::zcdp(0.125).unwrap(), 1),
        ] {
            ledger.record(m, c, "step");
        }
        let report = PrivacyReport {
            target: (1.0, 1e-5),
            epsilon: 0.99,
            delta: 1e-5,
            accountant: AccountantKind::Rdp,
            neighbouring: Neighbouring::AddRemove,
            // Not in alphabetical order: the order is kept.
            noise: vec![("steps".into(), 100.0), ("clip".into(), 0.5)],
            event: PrivacyEvent::from(ledger)
                .then(
                    PrivacyEvent::new(
                        Neighbouring::AddRemove,
                        Event::Composed(vec![
                            Event::RepeatAndSelect {
                                event: Box::new(Event::release(
                                    Mechanism::subsampled_gaussian(2.0, 0.1).unwrap(),
                                    50,
                                    "trial",
                                )),
                                repetitions: dp_accounting::Repetitions::Poisson { mean: 3.0 },
                            },
                            Event::SelfComposed {
                                event: Box::new(Event::release(
                                    Mechanism::gaussian(9.0, 1.0).unwrap(),
                                    1,
                                    "count",
                                )),
                                count: 4,
                            },
                        ]),
                    )
                    .unwrap(),
                )
                .unwrap(),
            notes: vec!["a note".into()],
        };
        let scaling = crate::pipeline::example_scaling();
        let input = TableSpec {
            label: Some("y".into()),
            labels: Labels::Classes {
                negative: "no".into(),
                positive: "yes".into(),
            },
            columns: Some(vec![
                Column::numeric("a"),
                Column::categorical("c", &["u".into()]).unwrap(),
            ]),
        };
        let x_bound = Bound {
            name: "x_bound",
            value: 2.5,
            source: BoundSource::Estimated {
                statistic: Statistic::RowNorm,
                quantile: 0.99,
                epsilon: 0.05,
            },
        };
        let clip = Bound {
            name: "clip",
            value: 1.0,
            source: BoundSource::Public,
        };
        LinearModel::new(array![0.5, -1.25, 0.1], 0.0, Loss::Logistic, report)
            .unwrap()
            .with_preprocessing(Preprocessing {
                scaling: Some(scaling),
                unit_norm: true,
                bias: Some(1.0),
                row_bound: Some(2.5),
            })
            .unwrap()
            .with_input(Some(vec!["a".into(), "c=u".into()]), Some(input))
            .unwrap()
            .with_noise_source(NoiseSource::Seeded { seed: 3 })
            .with_algorithm("objpert")
            .with_bounds(vec![
                BoundRecord::of(&x_bound, false),
                BoundRecord::of(&clip, true),
            ])
            .unwrap()
    }

    fn field_of(e: Error) -> String {
        match e {
            Error::ModelFile(ModelFileError::Invalid { field, .. }) => field,
            other => panic!("not a field error: {other}"),
        }
    }

    /// The error reading `full()`'s file after `edit`.
    fn edited(edit: impl FnOnce(&mut Value)) -> Error {
        let mut v: Value = serde_json::from_str(&full().to_json().unwrap()).unwrap();
        edit(&mut v);
        LinearModel::from_json(&v.to_string()).unwrap_err()
    }

    #[test]
    fn every_part_round_trips() {
        let m = full();
        let text = m.to_json().unwrap();
        let back = LinearModel::from_json(&text).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.privacy().event.releases().len(), 10);
        assert_eq!(back.privacy().noise[0].0, "steps");
        // Layout does not matter: the compact text with its keys sorted reads as the same
        // model (but for the order of `noise`).
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(&text).unwrap());
        let mut sorted = m.clone();
        sorted.privacy_mut().noise.reverse();
        assert_eq!(LinearModel::from_json(&compact.unwrap()).unwrap(), sorted);
        // Through serde with the model type itself.
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["format"], FORMAT);
        assert_eq!(v["privacy"]["bounds"][0]["source"], "estimated");
        assert_eq!(v["privacy"]["bounds"][1]["source"], "flag");
        assert_eq!(serde_json::from_value::<LinearModel>(v).unwrap(), sorted);
        // A bare model (what a learner returns) too.
        let bare = LinearModel::new(array![1.0], -0.5, Loss::huber(0.5).unwrap(), {
            let mut r = m.privacy().clone();
            r.event = PrivacyEvent::new(
                Neighbouring::ReplaceOne,
                Event::Composed(vec![
                    Event::release(
                        Mechanism::subsampled_gaussian_without_replacement(1.1, 7, 1000).unwrap(),
                        3,
                        "step",
                    ),
                    Event::Shuffled {
                        local: Mechanism::gaussian(4.0, 2.0).unwrap(),
                        n: 1000,
                        delta0: 1e-9,
                        label: "local".into(),
                    },
                ]),
            )
            .unwrap();
            r.neighbouring = Neighbouring::ReplaceOne;
            r
        })
        .unwrap();
        assert_eq!(
            LinearModel::from_json(&bare.to_json().unwrap()).unwrap(),
            bare
        );
    }

    /// A file written by main before this format (`dpglm-model/1`, fixture made by
    /// `tests/fixtures/make_model_v1.sh`) reads, and predicts as that version's pipeline did.
    #[test]
    fn version_1_files_still_read() {
        let text = include_str!("../tests/fixtures/model-v1.json");
        let m = LinearModel::from_json(text).unwrap();
        assert_eq!(m.algorithm(), Some("dp-gd"));
        assert_eq!(m.n_features_in(), 3);
        assert_eq!(m.feature_names().unwrap(), ["a", "c=u", "c=v"]);
        assert_eq!(m.noise_source(), Some(NoiseSource::Seeded { seed: 7 }));
        assert_eq!(m.coef()[3], 2.9147099905014047);
        let prep = m.preprocessing();
        assert_eq!(prep.bias, Some(1.0));
        assert!(!prep.unit_norm && prep.row_bound.is_none());
        let s = prep.scaling.as_ref().unwrap();
        assert_eq!(s.features[1].center, 0.5);
        assert_eq!(s.features[0].estimated, Some(0.1999998092655005));
        let r = m.privacy();
        assert_eq!(r.event.releases().len(), 3);
        assert_eq!(r.event.releases()[2].count, 100);
        assert!(r.event.releases()[2].mechanism.grid().is_some());
        assert_eq!(m.bounds()[0].source, BoundOrigin::Default);
        // c=u: 1 → 1 and c=v: 0 → −1 after minmax on [0, 1]; a = 0 is above its (noisy)
        // range and clipped to its high end, 1.
        let z = m.decision_function(array![[0.0, 1.0, 0.0]].view()).unwrap();
        let want = -2.192907957649229 * 1.0 + 0.9552187999725339 * 1.0 - 0.0006291910171509274
            + 2.9147099905014047;
        assert!((z[0] - want).abs() <= 1e-12, "{z} vs {want}");
        // Written again, it is a version 2 file of the same model.
        let again = LinearModel::from_json(&m.to_json().unwrap()).unwrap();
        assert_eq!(again, m);
        // A version 1 file has no digest.
        let mut v: Value = serde_json::from_str(text).unwrap();
        v["digest"] = json!("sha256:00");
        let e = LinearModel::from_json(&v.to_string()).unwrap_err();
        assert_eq!(field_of(e), "digest");
    }

    #[test]
    fn other_formats_and_versions_are_refused() {
        for f in [
            json!("dpglm-model/4"),
            json!("dpglm-model/0"),
            json!(2),
            json!(null),
        ] {
            let e = edited(|v| v["format"] = f.clone());
            assert!(
                matches!(
                    e,
                    Error::ModelFile(ModelFileError::UnsupportedFormat { .. })
                ),
                "{f}: {e}"
            );
            assert!(e.to_string().contains("`format`"), "{e}");
        }
        let e = edited(|v| drop(v.as_object_mut().unwrap().remove("format")));
        assert!(matches!(
            e,
            Error::ModelFile(ModelFileError::UnsupportedFormat { found: None })
        ));
        for text in ["", "[1, 2]", "{", "nul", "\"dpglm-model/2\""] {
            assert!(LinearModel::from_json(text).is_err(), "{text}");
        }
    }

    /// A file of format 2 (a flat ledger; fixture made by `tests/fixtures/make_model_v2.sh`)
    /// reads as one composition whose price is the reported ε, and is written again as
    /// format 3.
    #[test]
    fn version_2_files_still_read_and_price_as_reported() {
        let text = include_str!("../tests/fixtures/model-v2.json");
        let m = LinearModel::from_json(text).unwrap();
        let r = m.privacy();
        let releases = r.event.releases();
        assert_eq!(releases.len(), 3);
        assert_eq!(releases[0].mechanism.name(), "pure-dp");
        assert_eq!(releases[2].count, 100);
        // Format 2's writer added the bounds' ε to the learner's by basic composition; the
        // tree prices the same grouping, never below it (its sums carry a margin of ulps).
        let priced = dp_accounting::price(&r.event, r.accountant, r.delta).unwrap();
        assert_eq!(priced.method, dp_accounting::Method::BasicComposition);
        assert!(
            priced.epsilon >= r.epsilon && priced.epsilon <= r.epsilon * (1.0 + 1e-14),
            "{} vs {}",
            priced.epsilon,
            r.epsilon
        );
        let again = m.to_json().unwrap();
        assert!(again.contains(FORMAT), "{again}");
        assert_eq!(LinearModel::from_json(&again).unwrap(), m);
        // Its digest covers the ledger as format 2 wrote it.
        let edited = text.replacen("\"count\": 100", "\"count\": 99", 1);
        assert!(matches!(
            LinearModel::from_json(&edited),
            Err(Error::ModelFile(ModelFileError::DigestMismatch { .. }))
        ));
    }

    /// An edited number is caught by the digest once every field is valid on its own.
    #[test]
    fn edits_are_detected_by_the_digest() {
        for edit in [
            (|v: &mut Value| v["coefficients"][0] = json!(0.5000001)) as fn(&mut Value),
            |v| v["intercept"] = json!(1.0),
            |v| v["privacy"]["epsilon"] = json!(0.5),
            |v| v["privacy"]["event"]["events"][0]["events"][1]["count"] = json!(10),
            |v| v["privacy"]["noise"]["clip"] = json!(5.0),
            |v| v["privacy"]["notes"] = json!([]),
            |v| v["preprocessing"]["row_bound"] = json!(3.0),
            |v| v["algorithm"] = json!("dp-sgd"),
        ] {
            let e = edited(edit);
            assert!(
                matches!(e, Error::ModelFile(ModelFileError::DigestMismatch { .. })),
                "{e}"
            );
            assert!(e.to_string().contains("`digest`"), "{e}");
        }
        assert_eq!(
            field_of(edited(|v| drop(
                v.as_object_mut().unwrap().remove("digest")
            ))),
            "digest"
        );
    }

    #[test]
    fn invalid_or_inconsistent_fields_are_named() {
        type Edit = fn(&mut Value);
        let cases: Vec<(Edit, &str)> = vec![
            (|v| v["intercept"] = json!("0"), "intercept"),
            (|v| v["intercept"] = Value::Null, "intercept"),
            (
                |v| v["coefficients"] = json!([1, null, 2]),
                "coefficients[1]",
            ),
            (|v| v["coefficients"] = json!([]), "coefficients"),
            (|v| v["n_features_in"] = json!(1e18 as u64), "coefficients"),
            (|v| v["n_features_in"] = json!(0), "n_features_in"),
            (|v| v["n_features_in"] = json!(-1), "n_features_in"),
            (|v| v["huber_h"] = json!(1.0), "huber_h"),
            (|v| v["loss"] = json!("hinge"), "loss"),
            (|v| v["feature_names"] = json!(["a"]), "feature_names"),
            (|v| v["feature_names"] = json!(["a", "a"]), "feature_names"),
            (|v| v["feature_names"] = json!(["a", 2]), "feature_names[1]"),
            (|v| v["feature_names"] = Value::Null, "input.columns"),
            (|v| v["input"]["labels"] = json!("numeric"), "input.labels"),
            (
                |v| v["preprocessing"]["unit_norm_rows"] = json!(1),
                "preprocessing.unit_norm_rows",
            ),
            (|v| v["preprocessing"]["bias"] = json!(0.0), "preprocessing"),
            (
                |v| v["preprocessing"]["row_bound"] = json!(-1.0),
                "preprocessing",
            ),
            (
                |v| v["preprocessing"]["scaling"]["method"] = json!("zscore"),
                "preprocessing.scaling.method",
            ),
            (
                |v| v["preprocessing"]["scaling"]["features"] = json!([]),
                "preprocessing.scaling.features",
            ),
            (
                |v| v["preprocessing"]["scaling"]["features"][1]["scale"] = json!(0),
                "preprocessing.scaling",
            ),
            (
                |v| v["preprocessing"]["scaling"]["features"][0]["epsilon"] = Value::Null,
                "preprocessing.scaling.features[0].source",
            ),
            (
                |v| v["privacy"]["epsilon"] = json!("small"),
                "privacy.epsilon",
            ),
            (|v| v["privacy"]["epsilon"] = json!(-1.0), "privacy.epsilon"),
            (|v| v["privacy"]["delta"] = json!(2.0), "privacy.delta"),
            (
                |v| v["privacy"]["accountant"] = json!("moments"),
                "privacy.accountant",
            ),
            (
                |v| v["privacy"]["event"]["events"][0]["events"][0]["mechanism"] = json!("magic"),
                "privacy.event.events[0].events[0]",
            ),
            (
                |v| {
                    v["privacy"]["event"]["events"][0]["events"][0]["parameters"]["epsilon"] =
                        json!(-1.0)
                },
                "privacy.event.events[0].events[0]",
            ),
            (
                |v| {
                    v["privacy"]["event"]["events"][0]["events"][0]["parameters"]["extra"] =
                        json!(1.0)
                },
                "privacy.event.events[0].events[0]",
            ),
            (
                |v| {
                    v["privacy"]["event"]["events"][0]["events"][1]["parameters"]["grid_dim"] =
                        json!(2.5)
                },
                "privacy.event.events[0].events[1]",
            ),
            (
                |v| v["privacy"]["event"]["events"][0]["events"][1]["kind"] = json!("composed"),
                "privacy.event",
            ),
            (
                |v| v["privacy"]["noise_source"]["private_release"] = json!(true),
                "privacy.noise_source.private_release",
            ),
            (
                |v| v["privacy"]["noise_source"]["kind"] = json!("os"),
                "privacy.noise_source.kind",
            ),
            (
                |v| v["privacy"]["noise_source"]["description"] = json!("a private release"),
                "privacy.noise_source.description",
            ),
            (
                |v| v["privacy"]["bounds"][0]["epsilon"] = Value::Null,
                "privacy.bounds",
            ),
            (
                |v| v["privacy"]["bounds"][1]["value"] = json!(0),
                "privacy.bounds",
            ),
        ];
        for (edit, field) in cases {
            let e = edited(edit);
            let text = e.to_string();
            assert_eq!(field_of(e), field, "{text}");
            assert!(text.contains(&format!("`{field}`")), "{text}");
        }
        // Unknown fields anywhere.
        let e = edited(|v| v["extra"] = json!(1));
        assert!(e.to_string().contains("unknown field `extra`"), "{e}");
        let e = edited(|v| v["preprocessing"]["zscore"] = json!(1));
        assert_eq!(field_of(e), "preprocessing.zscore");
        // JSON has no NaN or ∞: 1e999 is not a number serde_json accepts.
        let text = full().to_json().unwrap().replace("-1.25", "1e999");
        assert!(LinearModel::from_json(&text).is_err());
    }

    #[test]
    fn non_finite_numbers_are_never_written() {
        let mut m = full();
        m.privacy_mut().epsilon = f64::INFINITY;
        match m.to_json().unwrap_err() {
            Error::ModelFile(ModelFileError::NonFinite { field, .. }) => {
                assert_eq!(field, "privacy.epsilon")
            }
            e => panic!("{e}"),
        }
        let mut m = full();
        m.privacy_mut().noise.push(("sigma".into(), f64::NAN));
        assert!(m.to_json().is_err());
        assert!(serde_json::to_string(&m).is_err());
        // A name given twice would be lost in a JSON object: refused too.
        let mut m = full();
        m.privacy_mut().noise.push(("clip".into(), 2.0));
        assert_eq!(field_of(m.to_json().unwrap_err()), "privacy.noise");
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

    /// What every model read must satisfy.
    fn valid(m: &LinearModel) -> bool {
        m.coef().len() == m.n_features_in() + m.preprocessing().extra_columns()
            && m.coef().iter().all(|c| c.is_finite())
            && m.intercept().is_finite()
            && m.to_json().is_ok()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Arbitrary text: a typed error or a valid model, never a panic.
        #[test]
        fn arbitrary_text_is_refused_or_valid(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(m) = LinearModel::from_json(&String::from_utf8_lossy(&bytes)) {
                prop_assert!(valid(&m));
            }
        }

        /// Structured mutations of valid files (version 2, and version 1 without a digest):
        /// each result is a typed error or a valid model.
        #[test]
        fn mutated_files_are_refused_or_valid(
            v1 in any::<bool>(),
            edits in prop::collection::vec((any::<usize>(), any::<u8>(), prop::sample::select(b"0123456789.-e,:[]{}\"nul ".to_vec())), 1..5)
        ) {
            let text = if v1 {
                include_str!("../tests/fixtures/model-v1.json").to_string()
            } else {
                full().to_json().unwrap()
            };
            let bytes = mutate(text.into_bytes(), &edits);
            if let Ok(m) = LinearModel::from_json(&String::from_utf8_lossy(&bytes)) {
                prop_assert!(valid(&m));
            }
        }
    }
}
