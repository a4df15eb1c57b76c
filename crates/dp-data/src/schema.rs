//! The column pipeline of a table with named columns (CSV): which columns are features,
//! which categorical columns are one-hot encoded over which public levels, which column is the
//! label and how its values map to classes.
//!
//! A [`Schema`] is what the user writes (a JSON file, or `dpglm` flags, which override it);
//! [`Schema::resolve`] fixes it against a file's header into a [`TableSpec`]: the ordered
//! feature columns, the label column and the label mapping. The spec is stored with a model
//! so that data scored later is read the same way, its columns found by name
//! ([`read_scoring_data`]).
//!
//! # Privacy
//!
//! Everything in a schema is public by assumption: the column names (a file's header is its
//! layout, not a record), the categorical levels and the class pair come from the user (from
//! documentation of the data, not from the data's rows).
//! Nothing here reads a level set or a label set from the data — a value outside the given
//! levels or classes is an input error, not a new level — so a model's stored pipeline does
//! not depend on which values occur in the training rows. [`draft_schema`](crate::draft_schema)
//! is the one exception, for a person to review, and says so.

use std::collections::BTreeMap;
use std::path::Path;

use ndarray::Array1;
use serde::{Deserialize, Serialize};

use crate::blocks::{RowBlocks, WHOLE_FILE_BLOCK};
use crate::csv::{CsvRows, read_header, read_rows};
use crate::libsvm::LibsvmRows;
use crate::npy::{LabelSource, NpyRows};
use crate::parquet::ParquetTable;
use crate::source::{Lines, Source, parse_finite};
use crate::{
    CsrData, Error, Format, LoadedData, MEMORY_BUDGET_BYTES, NpyLabels, ParseErrorKind, Result,
    no_label_option, read_dataset_with_width, read_libsvm_sparse, read_npy_2d, read_npy_dataset,
};

/// The largest schema file read (16 MiB).
const MAX_SCHEMA_BYTES: u64 = 16 << 20;

/// The level that stands for "any value outside the listed levels" when it ends a level list
/// (`--categorical 'country=US|CA|*'`): it gets its own column `country=*`.
pub const OTHER_LEVEL: &str = "*";

/// Whether labels are classes or numbers (from the loss: logistic and the other
/// classification losses take classes, squared and Huber losses numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Two classes, mapped to −1 and +1.
    Classification,
    /// Any finite number, as is.
    Regression,
}

/// How a label cell becomes a number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Labels {
    /// Regression: any finite number, as is.
    Numeric,
    /// Classification without a class pair: the label is a number, 1 for the positive class
    /// (→ +1) and 0 or −1 for the negative class (→ −1); `{0, 1}` and `{−1, 1}` labels are
    /// accepted as they are. One file must not write the negative class both as 0 and as −1
    /// (three classes?).
    Signs,
    /// Classification with a public class pair: the negative class maps to −1, the positive to
    /// +1, any other value is an input error. Cells are compared as text, or as numbers when
    /// both the cell and the class parse as numbers (`1.0` is class `1`).
    Classes {
        /// The negative class as written in the data.
        negative: String,
        /// The positive class as written in the data.
        positive: String,
    },
}

impl Labels {
    /// The mapping for `task`, with the class pair `classes` (negative, positive) if given.
    ///
    /// # Errors
    ///
    /// A message when a class pair is given for regression, or the pair is not two distinct
    /// non-empty values.
    pub fn for_task(task: Task, classes: Option<&[String]>) -> std::result::Result<Self, String> {
        match (task, classes) {
            (Task::Regression, None) => Ok(Self::Numeric),
            (Task::Regression, Some(_)) => Err(
                "a class pair applies to classification losses only (regression labels are \
                 numbers)"
                    .into(),
            ),
            (Task::Classification, None) => Ok(Self::Signs),
            (Task::Classification, Some([negative, positive])) => {
                if negative.trim().is_empty() || positive.trim().is_empty() {
                    Err("a class name is empty".into())
                } else if same_class(negative, positive) {
                    Err(format!(
                        "the two classes must differ (got `{negative}` twice)"
                    ))
                } else {
                    Ok(Self::Classes {
                        negative: negative.trim().to_owned(),
                        positive: positive.trim().to_owned(),
                    })
                }
            }
            (Task::Classification, Some(other)) => Err(format!(
                "expected two classes NEGATIVE,POSITIVE, got {}",
                other.len()
            )),
        }
    }

    /// The task these labels are for.
    pub fn task(&self) -> Task {
        match self {
            Self::Numeric => Task::Regression,
            Self::Signs | Self::Classes { .. } => Task::Classification,
        }
    }

    /// A mapper that also checks a file's labels are consistent ([`Labels::Signs`]).
    pub(crate) fn mapper(&self) -> LabelMapper<'_> {
        LabelMapper {
            labels: self,
            negative: None,
        }
    }

    /// Maps the labels read from a file without column names (LIBSVM, NPY), naming the 1-based
    /// row of a label that does not map.
    ///
    /// # Errors
    ///
    /// [`Error::Label`] naming `path`, the row and the value.
    pub fn map_values(&self, y: &Array1<f64>, path: &Path) -> Result<Array1<f64>> {
        let mut mapper = self.mapper();
        let mut out = Vec::with_capacity(y.len());
        for (i, &v) in y.iter().enumerate() {
            out.push(mapper.map_value(v, i, path)?);
        }
        Ok(Array1::from_vec(out))
    }

    /// What a label may be, for error messages.
    fn expected(&self) -> String {
        match self {
            Self::Numeric => "a finite number".into(),
            Self::Signs => "1 for the positive class, 0 or -1 for the negative class; for other \
                            labels give the public class pair (--classes NEGATIVE,POSITIVE, or \
                            \"classes\" in the schema)"
                .into(),
            Self::Classes { negative, positive } => {
                format!("one of the classes `{negative}` (negative) and `{positive}` (positive)")
            }
        }
    }
}

/// Whether two class names are the same class: equal text, or equal numbers.
fn same_class(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a == b
        || matches!(
            (a.parse::<f64>(), b.parse::<f64>()),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Maps label cells, remembering how the negative class is written ([`Labels::Signs`]).
pub(crate) struct LabelMapper<'a> {
    labels: &'a Labels,
    /// The negative label seen first under [`Labels::Signs`] (0 or −1).
    negative: Option<f64>,
}

impl<'a> LabelMapper<'a> {
    /// A mapper that continues another's pass (blocks read one after the other): `negative`
    /// is what [`LabelMapper::negative`] returned.
    pub(crate) fn resume(labels: &'a Labels, negative: Option<f64>) -> Self {
        Self { labels, negative }
    }

    /// The label `v` read as a number from the 0-based `row` of a file without column names
    /// (LIBSVM, NPY).
    ///
    /// # Errors
    ///
    /// [`Error::Label`] naming `path`, the row (1-based) and the value.
    pub(crate) fn map_value(&mut self, v: f64, row: usize, path: &Path) -> Result<f64> {
        // A number maps as its text would (the shortest text that reads back as `v`), without
        // writing the text, except against a class pair.
        let mapped = match self.labels {
            Labels::Numeric if v.is_finite() => Ok(v),
            Labels::Signs => self.sign(v, || v.to_string()),
            _ => self.map_text(&v.to_string()),
        };
        mapped.map_err(|kind| Error::Label {
            path: path.into(),
            reason: format!("row {} (1-based): label: {kind}", row + 1),
        })
    }

    /// The negative class as first written in this pass ([`Labels::Signs`]).
    pub(crate) fn negative(&self) -> Option<f64> {
        self.negative
    }

    /// The label of the number `v` under [`Labels::Signs`] (`cell`: its text, for errors).
    fn sign(
        &mut self,
        v: f64,
        cell: impl FnOnce() -> String,
    ) -> std::result::Result<f64, ParseErrorKind> {
        let unexpected = |expected: String| ParseErrorKind::UnexpectedValue {
            value: cell(),
            expected,
        };
        if v == 1.0 {
            Ok(1.0)
        } else if v == 0.0 || v == -1.0 {
            match self.negative {
                Some(seen) if seen != v => Err(unexpected(format!(
                    "the negative class written as earlier rows write it ({seen}): a file \
                     with both 0 and -1 labels may hold three classes; give the public class \
                     pair (--classes NEGATIVE,POSITIVE)"
                ))),
                _ => {
                    self.negative = Some(v);
                    Ok(-1.0)
                }
            }
        } else {
            Err(unexpected(self.labels.expected()))
        }
    }

    /// The label of one cell.
    pub(crate) fn map_text(&mut self, cell: &str) -> std::result::Result<f64, ParseErrorKind> {
        let unexpected = |expected: String| ParseErrorKind::UnexpectedValue {
            value: cell.to_owned(),
            expected,
        };
        match self.labels {
            Labels::Numeric => parse_finite(cell),
            Labels::Signs => match cell.trim().parse::<f64>() {
                Ok(v) => self.sign(v, || cell.to_owned()),
                Err(_) => Err(unexpected(self.labels.expected())),
            },
            Labels::Classes { negative, positive } => {
                if same_class(cell, positive) {
                    Ok(1.0)
                } else if same_class(cell, negative) {
                    Ok(-1.0)
                } else {
                    Err(unexpected(self.labels.expected()))
                }
            }
        }
    }
}

/// One feature column of a table: numeric, or categorical with public levels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// The column's name in the header.
    pub name: String,
    /// The public levels of a categorical column, in encoding order (one output column
    /// `name=level` each); `None` for a numeric column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<Vec<String>>,
    /// A categorical column's catch-all: values outside `levels` set the column `name=*`
    /// instead of being an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other: bool,
}

impl Column {
    /// A numeric column.
    pub fn numeric(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            levels: None,
            other: false,
        }
    }

    /// A categorical column from a level list, whose last entry may be [`OTHER_LEVEL`].
    ///
    /// # Errors
    ///
    /// A message for an empty list, an empty or repeated level, or [`OTHER_LEVEL`] anywhere but
    /// last.
    pub fn categorical(
        name: impl Into<String>,
        levels: &[String],
    ) -> std::result::Result<Self, String> {
        let name = name.into();
        let other = levels.last().is_some_and(|l| l == OTHER_LEVEL);
        let levels = &levels[..levels.len() - usize::from(other)];
        if levels.is_empty() {
            return Err(format!("categorical column `{name}` has no levels"));
        }
        for (i, level) in levels.iter().enumerate() {
            if level.is_empty() {
                return Err(format!(
                    "categorical column `{name}` has an empty level (encode empty cells with a \
                     last level `{OTHER_LEVEL}`)"
                ));
            }
            if level == OTHER_LEVEL {
                return Err(format!(
                    "categorical column `{name}`: `{OTHER_LEVEL}` (any other value) must be the \
                     last level"
                ));
            }
            if levels[..i].contains(level) {
                return Err(format!(
                    "categorical column `{name}`: level `{level}` appears twice"
                ));
            }
        }
        Ok(Self {
            name,
            levels: Some(levels.to_vec()),
            other,
        })
    }

    /// Output columns: 1 for a numeric column, one per level (and one for `*`) otherwise.
    pub fn width(&self) -> usize {
        self.levels
            .as_ref()
            .map_or(1, |l| l.len() + usize::from(self.other))
    }

    /// The output columns' names: the name, or `name=level` per level (and `name=*`).
    pub fn output_names(&self) -> Vec<String> {
        match &self.levels {
            None => vec![self.name.clone()],
            Some(levels) => levels
                .iter()
                .map(String::as_str)
                .chain(self.other.then_some(OTHER_LEVEL))
                .map(|l| format!("{}={l}", self.name))
                .collect(),
        }
    }

    /// What a categorical value may be, for error messages.
    pub(crate) fn levels_hint(&self) -> String {
        let levels = self.levels.as_deref().unwrap_or_default();
        format!(
            "one of the {} levels given for `{}`: {}; add the value to the levels, or end them \
             with `{OTHER_LEVEL}` to encode other values as `{}={OTHER_LEVEL}`",
            levels.len(),
            self.name,
            levels.join("|"),
            self.name
        )
    }
}

/// A table's pipeline resolved against its header: the label column, the label mapping and
/// the feature columns in output order. Stored with a model so that scoring data is read the
/// same way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// The label column (CSV), the label column index (NPY, e.g. `-1`), or `None`.
    pub label: Option<String>,
    /// How labels map to numbers.
    pub labels: Labels,
    /// The feature columns in output order (CSV); `None` for formats without column names,
    /// whose columns are taken by position.
    pub columns: Option<Vec<Column>>,
}

impl TableSpec {
    /// The output features' names (categorical columns as `name=level`), when columns are named.
    pub fn feature_names(&self) -> Option<Vec<String>> {
        self.columns
            .as_ref()
            .map(|c| c.iter().flat_map(Column::output_names).collect())
    }

    /// Checks a spec read back from a file: distinct column names, valid levels, the label not
    /// a feature.
    ///
    /// # Errors
    ///
    /// A message naming the column at fault.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if let Labels::Classes { negative, positive } = &self.labels {
            Labels::for_task(
                Task::Classification,
                Some(&[negative.clone(), positive.clone()]),
            )?;
        }
        let Some(columns) = &self.columns else {
            return Ok(());
        };
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(format!("column `{}` appears twice", c.name));
            }
            if self.label.as_deref() == Some(c.name.as_str()) {
                return Err(format!("the label column `{}` is also a feature", c.name));
            }
            match &c.levels {
                Some(levels) => {
                    let mut list = levels.clone();
                    if c.other {
                        list.push(OTHER_LEVEL.into());
                    }
                    Column::categorical(c.name.clone(), &list)?;
                }
                None if c.other => {
                    return Err(format!("numeric column `{}` cannot have `other`", c.name));
                }
                None => {}
            }
        }
        Ok(())
    }
}

/// Public scaling values of one numeric feature (schema field `scaling`): a range
/// `[min, max]` (min–max scaling maps it to `[−1, 1]`; standardisation clips to it), and/or a
/// `center` and `scale` (standardisation: `(v − center)/scale`). Every field is optional here;
/// which ones a scaling method needs is the learner pipeline's to check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Range {
    /// Lower end of the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Upper end of the range (> `min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Centre for standardisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<f64>,
    /// Scale (> 0) for standardisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
}

impl Range {
    /// Why the values are invalid, if they are: a value that is not finite, `min ≥ max`,
    /// `scale ≤ 0`, or no value at all.
    pub fn problem(&self) -> Option<String> {
        let values = [self.min, self.max, self.center, self.scale];
        if values.iter().all(Option::is_none) {
            return Some("gives none of min, max, center, scale".into());
        }
        if let Some(v) = values.iter().flatten().find(|v| !v.is_finite()) {
            return Some(format!("{v} is not a finite number"));
        }
        if let (Some(a), Some(b)) = (self.min, self.max)
            && a >= b
        {
            return Some(format!("needs min < max, got [{a}, {b}]"));
        }
        match self.scale {
            Some(s) if s <= 0.0 => Some(format!("needs scale > 0, got {s}")),
            _ => None,
        }
    }
}

/// The text format of a schema file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaFormat {
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
    Toml,
}

impl SchemaFormat {
    /// The format of a schema file: by its extension (`.json`, `.toml`, any case), otherwise
    /// JSON when its text starts with `{` and TOML when not.
    pub fn of(path: &Path, text: &str) -> Self {
        match Self::of_name(path) {
            Some(f) => f,
            None if text.trim_start().starts_with('{') => Self::Json,
            None => Self::Toml,
        }
    }

    /// The format a file name asks for (`None` without a `.json`/`.toml` extension).
    pub fn of_name(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Self::Json),
            "toml" => Some(Self::Toml),
            _ => None,
        }
    }
}

/// What the user says about a table: written once as a JSON or TOML file and/or given as
/// `dpglm` flags (which override it, see [`Schema::overridden_by`]). Every field is optional.
///
/// ```json
/// {
///   "label": "income",
///   "classes": ["<=50K", ">50K"],
///   "drop": ["fnlwgt"],
///   "categorical": { "sex": ["Female", "Male"], "country": ["US", "CA", "*"] }
/// }
/// ```
///
/// The same schema in TOML:
///
/// ```toml
/// label = "income"
/// classes = ["<=50K", ">50K"]
/// drop = ["fnlwgt"]
///
/// [categorical]
/// sex = ["Female", "Male"]
/// country = ["US", "CA", "*"]
///
/// [scaling.age]
/// min = 17
/// max = 90
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Free text for people (a drafted schema says here that it was read from the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The label column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The public class pair `[NEGATIVE, POSITIVE]` (classification); without it labels must
    /// be 0/1 or −1/1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
    /// The feature columns, in this order (default: every column but the label and `drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// Columns not read (only without `features`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop: Option<Vec<String>>,
    /// Categorical columns and their public levels, one-hot encoded in this order; a last level
    /// `*` collects every other value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub categorical: BTreeMap<String, Vec<String>>,
    /// Public scaling values of numeric features, by column name (`{"min", "max"}` for
    /// min–max scaling, `{"center", "scale"}` for standardisation). Carried and checked here;
    /// applying them is the learner pipeline's (dp-glm's) job, and a program that does not
    /// apply them must refuse a schema that has them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scaling: BTreeMap<String, Range>,
    /// The public number of features. Required to train on a LIBSVM file, whose width would
    /// otherwise be its largest feature index that occurs — a fact about the rows (one row
    /// with a rare high index would show in the model's width). Files that state their width
    /// (CSV and Parquet headers after encoding, NPY shapes) must have this many features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_features: Option<usize>,
}

impl Schema {
    /// Parses a schema's JSON text; `origin` names it in errors.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] for text that is not a schema (unknown fields included) or an invalid
    /// one ([`Schema::validate`]).
    pub fn from_json(text: &str, origin: &str) -> Result<Self> {
        let schema: Self = serde_json::from_str(text).map_err(|e| Error::Schema {
            origin: origin.to_owned(),
            reason: format!("not a valid schema: {e}"),
        })?;
        schema.validate(origin)?;
        Ok(schema)
    }

    /// Parses a schema's TOML text; `origin` names it in errors.
    ///
    /// # Errors
    ///
    /// As [`Schema::from_json`].
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let schema: Self = toml::from_str(text).map_err(|e| Error::Schema {
            origin: origin.to_owned(),
            reason: format!("not a valid schema: {e}"),
        })?;
        schema.validate(origin)?;
        Ok(schema)
    }

    /// Parses a schema in the given text format.
    ///
    /// # Errors
    ///
    /// As [`Schema::from_json`].
    pub fn parse(text: &str, format: SchemaFormat, origin: &str) -> Result<Self> {
        match format {
            SchemaFormat::Json => Self::from_json(text, origin),
            SchemaFormat::Toml => Self::from_toml(text, origin),
        }
    }

    /// Reads a schema file (a regular file of at most 16 MiB), JSON or TOML as
    /// [`SchemaFormat::of`] tells from its name and text.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read; as [`Schema::from_json`].
    pub fn read(path: &Path) -> Result<Self> {
        use std::io::Read;
        let mut text = String::new();
        let mut reader = crate::open(path)?.take(MAX_SCHEMA_BYTES + 1);
        reader
            .read_to_string(&mut text)
            .map_err(|e| Error::io(path, e))?;
        let origin = format!("schema {}", path.display());
        if text.len() as u64 > MAX_SCHEMA_BYTES {
            return Err(Error::Schema {
                origin,
                reason: format!("larger than {MAX_SCHEMA_BYTES} bytes"),
            });
        }
        Self::parse(&text, SchemaFormat::of(path, &text), &origin)
    }

    /// The schema as pretty JSON.
    pub fn to_json(&self) -> String {
        // Every field is a string, a list, a map of them or a finite range: serialisable.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The schema as TOML.
    pub fn to_toml(&self) -> String {
        // As `to_json`: every value is representable (finite numbers, strings, lists, maps).
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// The schema's text in `format`.
    pub fn to_text(&self, format: SchemaFormat) -> String {
        match format {
            SchemaFormat::Json => self.to_json(),
            SchemaFormat::Toml => self.to_toml(),
        }
    }

    /// This schema with `flags` laid over it: each setting given in `flags` wins; `features`
    /// and `drop` count as one setting (giving either replaces both); categorical columns and
    /// scaling ranges are merged, the flags' levels winning for a column named in both.
    pub fn overridden_by(mut self, flags: Self) -> Self {
        if flags.label.is_some() {
            self.label = flags.label;
        }
        if flags.classes.is_some() {
            self.classes = flags.classes;
        }
        if flags.features.is_some() || flags.drop.is_some() {
            self.features = flags.features;
            self.drop = flags.drop;
        }
        self.categorical.extend(flags.categorical);
        self.scaling.extend(flags.scaling);
        if flags.n_features.is_some() {
            self.n_features = flags.n_features;
        }
        self
    }

    /// Checks the schema alone (without data): a class pair of two distinct values, not both
    /// `features` and `drop`, no name twice, valid level lists, ranges with `min < max`, the
    /// label neither a feature nor dropped nor categorical.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming `origin` and the setting at fault.
    pub fn validate(&self, origin: &str) -> Result<()> {
        let bad = |reason: String| {
            Err(Error::Schema {
                origin: origin.to_owned(),
                reason,
            })
        };
        if let Some(classes) = &self.classes
            && let Err(reason) = Labels::for_task(Task::Classification, Some(classes))
        {
            return bad(format!("classes: {reason}"));
        }
        if self.features.is_some() && self.drop.is_some() {
            return bad("give either the features to keep or the columns to drop, not both".into());
        }
        if self.n_features == Some(0) {
            return bad("n_features: must be at least 1".into());
        }
        for (what, list) in [("features", &self.features), ("drop", &self.drop)] {
            let list = list.as_deref().unwrap_or_default();
            if let Some(i) = (1..list.len()).find(|&i| list[..i].contains(&list[i])) {
                return bad(format!("{what}: `{}` appears twice", list[i]));
            }
            if let Some(label) = &self.label
                && list.contains(label)
            {
                return bad(format!("{what}: `{label}` is the label column"));
            }
        }
        for (name, levels) in &self.categorical {
            if let Err(reason) = Column::categorical(name.clone(), levels) {
                return bad(reason);
            }
            if self.label.as_ref() == Some(name) {
                return bad(format!("categorical: `{name}` is the label column"));
            }
        }
        for (name, r) in &self.scaling {
            if let Some(problem) = r.problem() {
                return bad(format!("scaling: `{name}` {problem}"));
            }
            if self.categorical.contains_key(name) {
                return bad(format!(
                    "scaling: `{name}` is categorical (its one-hot columns are not scaled)"
                ));
            }
        }
        Ok(())
    }

    /// Fixes the schema against a CSV header (read from `path`) for `task`.
    ///
    /// Features are `features` in its order, or else every column but the label and `drop` in
    /// file order; those named in `categorical` are one-hot encoded over their levels (a
    /// categorical column that is not a feature is declared, not read: a schema may describe
    /// every column while the flags choose some).
    ///
    /// # Errors
    ///
    /// [`Error::MissingLabelColumn`] without a label or with one not in the header;
    /// [`Error::UnknownColumn`] for a feature, dropped, categorical or scaled column not in it;
    /// [`Error::Schema`] for an invalid schema or a class pair for regression.
    pub fn resolve(&self, header: &[String], path: &Path, task: Task) -> Result<TableSpec> {
        let origin = path.display().to_string();
        self.validate(&origin)?;
        let labels = self.labels(task, &origin)?;
        let Some(label) = self.label.as_ref().filter(|l| header.contains(l)) else {
            return Err(Error::MissingLabelColumn {
                path: path.into(),
                label: self.label.clone(),
                available: header.to_vec(),
            });
        };
        let known = |name: &String, named_by: &str| {
            if header.contains(name) {
                Ok(())
            } else {
                Err(Error::UnknownColumn {
                    path: path.into(),
                    column: name.clone(),
                    named_by: named_by.into(),
                    available: header.to_vec(),
                })
            }
        };
        for name in self.features.iter().flatten() {
            known(name, "the features (--features)")?;
        }
        for name in self.drop.iter().flatten() {
            known(name, "the columns to drop (--drop)")?;
        }
        for name in self.categorical.keys() {
            known(name, "the categorical columns (--categorical)")?;
        }
        for name in self.scaling.keys() {
            known(name, "the scaling ranges")?;
        }
        let names: Vec<&String> = match &self.features {
            Some(features) => features.iter().collect(),
            None => {
                let drop = self.drop.as_deref().unwrap_or_default();
                header
                    .iter()
                    .filter(|h| *h != label && !drop.contains(h))
                    .collect()
            }
        };
        let columns = names
            .into_iter()
            .map(|name| match self.categorical.get(name) {
                // Validated above.
                Some(levels) => {
                    Column::categorical(name.clone(), levels).map_err(|reason| Error::Schema {
                        origin: origin.clone(),
                        reason,
                    })
                }
                None => Ok(Column::numeric(name.clone())),
            })
            .collect::<Result<Vec<Column>>>()?;
        Ok(TableSpec {
            label: Some(label.clone()),
            labels,
            columns: Some(columns),
        })
    }

    /// Fixes the schema for a file without column names (LIBSVM, NPY): only the label (NPY's
    /// label column index or file) and the class pair apply.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming `path` when features, drop, categorical columns or scaling
    /// ranges are given (they need named columns), or for a class pair with regression.
    pub fn resolve_unnamed(&self, path: &Path, format: Format, task: Task) -> Result<TableSpec> {
        let origin = path.display().to_string();
        self.validate(&origin)?;
        let named = [
            ("features (--features)", self.features.is_some()),
            ("drop (--drop)", self.drop.is_some()),
            ("categorical (--categorical)", !self.categorical.is_empty()),
            ("scaling", !self.scaling.is_empty()),
        ];
        if let Some((what, _)) = named.iter().find(|(_, given)| *given) {
            return Err(Error::Schema {
                origin,
                reason: format!(
                    "{what} selects columns by name, and {format} files have no column names; \
                     use a CSV file with a header"
                ),
            });
        }
        if format == Format::Libsvm && self.n_features.is_none() {
            return Err(Error::Schema {
                origin,
                reason: "training on a LIBSVM file needs its public number of features \
                         (--n-features, or n_features in the schema): read from the file, the \
                         width would be the largest feature index that occurs, which depends \
                         on the rows"
                    .into(),
            });
        }
        Ok(TableSpec {
            label: self.label.clone(),
            labels: self.labels(task, &origin)?,
            columns: None,
        })
    }

    fn labels(&self, task: Task, origin: &str) -> Result<Labels> {
        Labels::for_task(task, self.classes.as_deref()).map_err(|reason| Error::Schema {
            origin: origin.to_owned(),
            reason: format!("classes: {reason}"),
        })
    }
}

/// Parses one `--categorical` value, `COLUMN=LEVEL1|LEVEL2|...` (a last level `*` collects
/// every other value), into the column and its levels.
///
/// # Errors
///
/// A message when there is no `=`, the column is empty, or the level list is invalid.
pub fn parse_categorical(text: &str) -> std::result::Result<(String, Vec<String>), String> {
    let Some((name, levels)) = text.rsplit_once('=') else {
        return Err(format!(
            "`{text}` is not COLUMN=LEVEL1|LEVEL2|... (the public levels, `|`-separated)"
        ));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("`{text}`: the column name is empty"));
    }
    let levels: Vec<String> = levels.split('|').map(|l| l.trim().to_owned()).collect();
    Column::categorical(name, &levels)?;
    Ok((name.to_owned(), levels))
}

/// Reads a CSV file with a resolved spec (labels required): columns found by name.
///
/// # Errors
///
/// As the rows reader: [`Error::UnknownColumn`], [`Error::MissingLabelColumn`],
/// [`Error::Parse`] naming line and column (text in a numeric feature, a categorical value
/// outside its levels, a label outside the class pair, ...), [`Error::EmptyData`],
/// [`Error::Io`].
pub fn read_table(path: impl AsRef<Path>, spec: &TableSpec) -> Result<LoadedData> {
    read_table_lines(Lines::open(path.as_ref())?, spec, true)
}

/// [`read_table`] on bytes in memory (plain or gzip), named `name` in errors.
///
/// # Errors
///
/// As [`read_table`].
pub fn read_table_bytes(
    bytes: &[u8],
    name: impl AsRef<Path>,
    spec: &TableSpec,
) -> Result<LoadedData> {
    read_table_lines(
        Lines::new(Source::from_bytes(bytes, name.as_ref())?),
        spec,
        true,
    )
}

/// A Parquet file in memory (named `name` in errors) read with a resolved spec (labels
/// required): columns found by name, as [`read_table`] reads CSV.
///
/// # Errors
///
/// [`Error::Parquet`] for a file that is not Parquet, corrupt or truncated, or a read column
/// of an unsupported type; [`Error::Value`] naming the row group, row and column of a value
/// that cannot be used (a null, a non-finite number, a categorical value outside its levels,
/// a label outside the class pair); the [`read_table`] errors for columns.
pub fn read_parquet_bytes(
    bytes: &[u8],
    name: impl AsRef<Path>,
    spec: &TableSpec,
) -> Result<LoadedData> {
    ParquetTable::from_bytes(bytes, name.as_ref())?.read_all(spec, true)
}

fn read_table_lines(mut lines: Lines<'_>, spec: &TableSpec, labels: bool) -> Result<LoadedData> {
    let header = read_header(&mut lines)?;
    read_rows(lines, &header, spec, labels)
}

/// Reads training data under `schema` for `task`, and returns it with the resolved spec to
/// store with the model.
///
/// - CSV, Parquet: the schema is resolved against the header (Parquet: the top-level column
///   names) ([`Schema::resolve`]) and the rows read by it (features chosen and one-hot
///   encoded, labels mapped).
/// - LIBSVM, NPY: only the label and the class pair apply ([`Schema::resolve_unnamed`]); the
///   file is read by [`read_dataset`](crate::read_dataset) and its labels mapped. The spec
///   keeps an NPY label only when it is a column index (a label file belongs to this file).
///
/// # Errors
///
/// [`Error::FormatNotInferred`], the schema's errors, the readers' errors, and
/// [`Error::Label`] for a label of a LIBSVM/NPY file outside the class pair (naming the row).
pub fn read_training_data(
    path: &Path,
    format: Option<Format>,
    schema: &Schema,
    task: Task,
) -> Result<(LoadedData, TableSpec)> {
    let format = Format::infer(path, format)?;
    if format.has_column_names() {
        let (blocks, spec) = open_blocks(path, Some(format), schema, task, WHOLE_FILE_BLOCK)?;
        return Ok((blocks.collect_all(MEMORY_BUDGET_BYTES / 8, path)?, spec));
    }
    let spec = schema.resolve_unnamed(path, format, task)?;
    let mut data =
        read_dataset_with_width(path, Some(format), spec.label.as_deref(), schema.n_features)?;
    check_width(data.n_features(), schema.n_features, path)?;
    data.y = spec.labels.map_values(&data.y, path)?;
    Ok((data, stored_spec(spec, format)))
}

/// [`read_training_data`] for a LIBSVM file, into compressed sparse rows
/// ([`read_libsvm_sparse`]): the same rules (the schema's public
/// width, required; no label option; labels mapped for `task`) and the same spec, with
/// memory growing with the stored entries rather than `n × d`.
///
/// # Errors
///
/// As [`read_training_data`] on a LIBSVM file.
pub fn read_training_sparse(
    path: &Path,
    schema: &Schema,
    task: Task,
) -> Result<(CsrData, TableSpec)> {
    let spec = schema.resolve_unnamed(path, Format::Libsvm, task)?;
    no_label_option(path, spec.label.as_deref())?;
    let mut data = read_libsvm_sparse(path, schema.n_features)?;
    data.y = spec
        .labels
        .map_values(&Array1::from(data.y), path)?
        .to_vec();
    Ok((data, stored_spec(spec, Format::Libsvm)))
}

/// [`read_scoring_data`] for a LIBSVM file, into compressed sparse rows of `width` features (a
/// model's): an index beyond it is a parse error naming the line. The labels are mapped when
/// `with_labels`; otherwise they are left as the file writes them (a prediction does not read
/// them).
///
/// # Errors
///
/// As [`read_scoring_data`] on a LIBSVM file.
pub fn read_scoring_sparse(
    path: &Path,
    spec: &TableSpec,
    width: usize,
    with_labels: bool,
) -> Result<CsrData> {
    no_label_option(path, spec.label.as_deref())?;
    let mut data = read_libsvm_sparse(path, Some(width))?;
    if with_labels {
        data.y = spec
            .labels
            .map_values(&Array1::from(data.y), path)?
            .to_vec();
    }
    Ok(data)
}

/// The spec a model stores for a file without column names: an NPY label only when it is a
/// column index (a label file belongs to the file it was read with).
fn stored_spec(mut spec: TableSpec, format: Format) -> TableSpec {
    spec.label = spec
        .label
        .filter(|l| format == Format::Npy && l.trim().parse::<isize>().is_ok());
    spec
}

/// Opens training data under `schema` for `task` as [`RowBlocks`] of at most `block_rows`
/// rows — the streaming twin of [`read_training_data`]: the blocks, stacked, equal (bitwise)
/// the data it returns, and the spec is the same. Memory stays bounded by the block size
/// (module [`blocks`](crate::RowBlocks)); a LIBSVM file is read once more first to find its
/// width. For the next pass over the same file, call [`read_blocks`] with the spec.
///
/// # Errors
///
/// As [`read_training_data`]: the schema's errors when opening; the readers' errors with the
/// block where they occur.
pub fn open_blocks(
    path: &Path,
    format: Option<Format>,
    schema: &Schema,
    task: Task,
    block_rows: usize,
) -> Result<(RowBlocks<'static>, TableSpec)> {
    let format = Format::infer(path, format)?;
    match format {
        Format::Csv => {
            let mut lines = Lines::open(path)?;
            let header = read_header(&mut lines)?;
            let spec = schema.resolve(&header, path, task)?;
            let names = spec.feature_names();
            let rows = CsvRows::new(lines, header, &spec, true)?;
            let blocks = RowBlocks::new(Box::new(rows), block_rows, names);
            check_width(blocks.n_features(), schema.n_features, path)?;
            Ok((blocks, spec))
        }
        Format::Parquet => {
            let table = ParquetTable::open(path)?;
            let spec = schema.resolve(&table.header(), path, task)?;
            let blocks = table.blocks(&spec, true, block_rows)?;
            check_width(blocks.n_features(), schema.n_features, path)?;
            Ok((blocks, spec))
        }
        Format::Libsvm | Format::Npy => {
            let spec = schema.resolve_unnamed(path, format, task)?;
            let blocks = read_blocks(
                path,
                Some(format),
                &spec,
                schema.n_features,
                true,
                block_rows,
            )?;
            Ok((blocks, stored_spec(spec, format)))
        }
    }
}

/// Opens data as [`RowBlocks`] of at most `block_rows` rows with a resolved `spec` (a pass
/// after the first, or data to score): the streaming twin of [`read_scoring_data`], with
/// `width` features when given (a LIBSVM file is then that wide; other formats must be).
/// Labels are read and mapped when `with_labels` (otherwise the blocks' `y` are empty).
///
/// # Errors
///
/// As [`read_scoring_data`]; [`Error::DataMismatch`] for a width other than `width`.
pub fn read_blocks(
    path: &Path,
    format: Option<Format>,
    spec: &TableSpec,
    width: Option<usize>,
    with_labels: bool,
    block_rows: usize,
) -> Result<RowBlocks<'static>> {
    let format = Format::infer(path, format)?;
    let names = spec.feature_names();
    let blocks = match (format, &spec.columns) {
        (Format::Csv, Some(_)) => {
            let mut lines = Lines::open(path)?;
            let header = read_header(&mut lines)?;
            let rows = CsvRows::new(lines, header, spec, with_labels)?;
            RowBlocks::new(Box::new(rows), block_rows, names)
        }
        (Format::Parquet, Some(_)) => {
            ParquetTable::open(path)?.blocks(spec, with_labels, block_rows)?
        }
        (Format::Csv | Format::Parquet, None) => return Err(unnamed_model(path, format)),
        (Format::Libsvm, _) => {
            let d = crate::libsvm::width(path, width)?;
            let rows = LibsvmRows::open(path, d, spec.labels.clone(), with_labels)?;
            RowBlocks::new(Box::new(rows), block_rows, None)
        }
        (Format::Npy, _) => {
            let column = spec
                .label
                .as_deref()
                .and_then(|l| l.trim().parse::<isize>().ok());
            let labels = match (with_labels, column) {
                (true, _) => Some(LabelSource::find(path, spec.label.as_deref())?),
                (false, Some(c)) => Some(LabelSource::Column(c)),
                (false, None) => None,
            };
            let rows = NpyRows::open(path, labels.as_ref(), spec.labels.clone(), with_labels)?;
            RowBlocks::new(Box::new(rows), block_rows, None)
        }
    };
    check_width(blocks.n_features(), width, path)?;
    Ok(blocks)
}

/// [`Error::DataMismatch`] when a file's `n` features are not the `width` expected (the
/// model's, or the public number of features given for training).
fn check_width(n: usize, width: Option<usize>, path: &Path) -> Result<()> {
    match width {
        Some(w) if n != w => Err(Error::DataMismatch {
            path: path.into(),
            reason: format!("{n} features, but {w} were expected (the model's or --n-features)"),
        }),
        _ => Ok(()),
    }
}

/// The error for a file with column names scored with a model trained without them.
fn unnamed_model(path: &Path, format: Format) -> Error {
    Error::Schema {
        origin: path.display().to_string(),
        reason: format!(
            "the model was trained on a file without column names, so a {format} file cannot \
             be matched to its features by name"
        ),
    }
}

/// Reads data to score with a model: the features as `spec` says (CSV and Parquet columns
/// found by name,
/// in any order; extra columns ignored), `width` of them, and the labels mapped as in training
/// when `with_labels` (otherwise the label column need not exist and `y` is empty).
///
/// # Errors
///
/// [`Error::UnknownColumn`] for a model column missing from a CSV file; the readers' errors;
/// [`Error::Label`] / [`Error::Parse`] for a label outside the class pair;
/// [`Error::DataMismatch`] when a file without column names has another width than `width`.
pub fn read_scoring_data(
    path: &Path,
    format: Option<Format>,
    spec: &TableSpec,
    width: usize,
    with_labels: bool,
) -> Result<LoadedData> {
    let format = Format::infer(path, format)?;
    let data = match (format, &spec.columns) {
        (Format::Csv, Some(_)) => read_table_lines(Lines::open(path)?, spec, with_labels)?,
        (Format::Parquet, Some(_)) => ParquetTable::open(path)?.read_all(spec, with_labels)?,
        (Format::Csv | Format::Parquet, None) => return Err(unnamed_model(path, format)),
        (Format::Npy, _) if !with_labels => {
            let column = spec
                .label
                .as_deref()
                .and_then(|l| l.trim().parse::<isize>().ok());
            match column {
                Some(c) => {
                    let mut d = read_npy_dataset(path, NpyLabels::Column(c))?;
                    d.y = Array1::zeros(0);
                    d
                }
                None => LoadedData {
                    x: read_npy_2d(path)?,
                    y: Array1::zeros(0),
                    feature_names: None,
                },
            }
        }
        _ => {
            let mut d =
                read_dataset_with_width(path, Some(format), spec.label.as_deref(), Some(width))?;
            d.y = if with_labels {
                spec.labels.map_values(&d.y, path)?
            } else {
                Array1::zeros(0)
            };
            d
        }
    };
    if data.n_features() != width {
        return Err(Error::DataMismatch {
            path: path.into(),
            reason: format!("{} features, but the model has {width}", data.n_features()),
        });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    /// Scaling entries: any of min, max, center, scale; each finite, min < max, scale > 0;
    /// not for a categorical column; unknown keys refused.
    #[test]
    fn scaling_values_are_checked() {
        let ok = Schema::from_json(
            r#"{"scaling": {"a": {"min": 0, "max": 2}, "b": {"center": 5, "scale": 0.5}}}"#,
            "s",
        )
        .unwrap();
        assert_eq!(ok.scaling["a"].max, Some(2.0));
        assert_eq!(ok.scaling["b"].center, Some(5.0));
        assert_eq!(ok.scaling["b"].min, None);
        for bad in [
            r#"{"scaling": {"a": {}}}"#,
            r#"{"scaling": {"a": {"min": 2, "max": 2}}}"#,
            r#"{"scaling": {"a": {"center": 0, "scale": 0}}}"#,
            r#"{"scaling": {"a": {"center": 0, "scale": -1}}}"#,
            r#"{"scaling": {"a": {"mean": 0}}}"#,
            r#"{"scaling": {"c": {"min": 0, "max": 1}}, "categorical": {"c": ["u", "v"]}}"#,
        ] {
            assert!(
                matches!(Schema::from_json(bad, "s"), Err(Error::Schema { .. })),
                "{bad}"
            );
        }
    }

    fn example() -> Schema {
        Schema::from_json(
            r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["fnlwgt"],
                "categorical": {"sex": ["Female", "Male"], "country": ["US", "CA", "*"]},
                "scaling": {"age": {"min": 17, "max": 90}, "hours": {"center": 40, "scale": 12.5}}}"#,
            "s",
        )
        .unwrap()
    }

    /// A TOML schema means the same as its JSON twin, and both texts round-trip.
    #[test]
    fn toml_and_json_agree() {
        let json = example();
        let toml = Schema::from_toml(
            r#"
label = "income"
classes = ["<=50K", ">50K"]
drop = ["fnlwgt"]

[categorical]
sex = ["Female", "Male"]
country = ["US", "CA", "*"]

[scaling.age]
min = 17
max = 90

[scaling.hours]
center = 40
scale = 12.5
"#,
            "t",
        )
        .unwrap();
        assert_eq!(toml, json);
        for f in [SchemaFormat::Json, SchemaFormat::Toml] {
            assert_eq!(
                Schema::parse(&json.to_text(f), f, "r").unwrap(),
                json,
                "{f:?}"
            );
        }
    }

    /// TOML is checked as JSON is: unknown keys, wrong types and invalid values are schema
    /// errors naming the file.
    #[test]
    fn toml_errors_are_schema_errors() {
        for bad in [
            "lable = \"y\"",
            "label = 3",
            "classes = \"a\"",
            "[scaling.a]\nmin = 2\nmax = 1",
            "[scaling.a]\nmean = 0",
            "label = ",
        ] {
            match Schema::from_toml(bad, "schema s.toml") {
                Err(Error::Schema { origin, .. }) => assert_eq!(origin, "schema s.toml"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    /// The format comes from the extension, else from the text.
    #[test]
    fn format_from_name_or_text() {
        let of = |p: &str, t: &str| SchemaFormat::of(Path::new(p), t);
        assert_eq!(of("s.toml", "{"), SchemaFormat::Toml);
        assert_eq!(of("s.JSON", "label = 1"), SchemaFormat::Json);
        assert_eq!(of("schema", "  {\"label\": \"y\"}"), SchemaFormat::Json);
        assert_eq!(of("schema", "label = \"y\""), SchemaFormat::Toml);
    }
}
