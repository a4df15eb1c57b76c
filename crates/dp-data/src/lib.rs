//! dp-data: reading data files for dpglm — CSV, LIBSVM, NumPy `.npy` and Apache Parquet — and
//! the public
//! schema that turns a table with named columns into features and labels (feature selection,
//! one-hot encoding of categorical columns with public levels, labels mapped from a public
//! class pair).
//!
//! All readers return a [`LoadedData`]: an `n × d` feature matrix and `n` labels as `f64`
//! (except the sparse LIBSVM reader, whose [`CsrData`] holds only the non-zero entries).
//! Files may be gzip-compressed (detected from their first bytes, whatever their name). Errors
//! name the file and, for text formats, the 1-based line and the field at fault
//! ([`Error::Parse`] with a [`ParseErrorKind`]).
//!
//! - [`read_dataset`]: what `dpglm train --data FILE [--format F] [--label L]` reads
//!   (spec/CLI.md); the format is inferred from the extension when not given;
//!   [`read_dataset_with_width`] for data scored with a model of known width.
//! - [`read_csv`], [`read_libsvm`], [`read_npy`] / [`read_npy_2d`] / [`read_npy_1d`] /
//!   [`read_npy_dataset`]: the individual readers; [`read_csv_bytes`], [`read_libsvm_bytes`],
//!   [`read_npy_bytes`]: the same readers on bytes in memory.
//! - [`read_libsvm_sparse`] / [`read_libsvm_sparse_bytes`]: LIBSVM into compressed sparse rows
//!   ([`CsrData`]), memory growing with the non-zero entries rather than `n × d`.
//! - [`Schema`], [`TableSpec`], [`read_table`], [`read_training_data`],
//!   [`read_scoring_data`]: the column pipeline (module [`schema`]); [`draft_schema`] drafts a
//!   schema from a file for a person to review (what it reads from the data is not private).
//! - Parquet ([`Format::Parquet`]): flat columns found by name, as CSV's, through the same
//!   schema; booleans, integers, floats and decimals as numbers (`INT64` beyond ±2⁵³ refused),
//!   strings for categorical columns and class labels (booleans compare as `true`/`false`
//!   against a class pair, as 1/0 otherwise). A null or non-finite value is
//!   [`Error::Value`] naming row group, row and column; a corrupt file or a read column of an
//!   unsupported type (nested, binary, dates and times, `INT96`) is [`Error::Parquet`].
//!   [`read_parquet_bytes`] reads one in memory; [`write_parquet`] writes a flat table (for
//!   tests and benchmarks).
//! - [`open_blocks`], [`read_blocks`], [`LoadedData::blocks`]: [`RowBlocks`], data read at
//!   most `B` rows at a time for data larger than memory (every format; bounded memory).
//! - [`Lines`], [`open`], [`parse_finite`]: the bounded building blocks, for readers of other
//!   text layouts (dp-bench's Adult loader).
//!
//! Every whole-file reader is bounded: only regular files are opened (not devices such as `/dev/zero`,
//! pipes or directories), a text line is at most [`MAX_LINE_BYTES`] long, and the values of
//! one file must fit in [`MEMORY_BUDGET_BYTES`] — checked against the shape a file claims (and,
//! for NPY, against the file's real size) before anything is allocated.
//!
//! # Privacy
//!
//! Nothing here is a private mechanism. What the schema carries — column names, categorical
//! levels, the class pair — is treated as public: it must come from the user, never from the
//! data (reading the set of levels or labels from the data reveals which values occur). The
//! readers never derive it from the data; [`draft_schema`] does, and says so in its output.
//!
//! ```no_run
//! use dp_data::read_dataset;
//!
//! let data = read_dataset("train.csv", None, Some("income"))?;
//! println!("{} samples, {} features", data.n_samples(), data.n_features());
//! # Ok::<(), dp_data::Error>(())
//! ```

mod blocks;
mod csv;
mod draft;
mod error;
mod libsvm;
mod npy;
mod parquet;
pub mod schema;
mod source;
mod table;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use ndarray::{Array1, Array2, Axis};
use rand::Rng;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub use blocks::{RowBlock, RowBlocks};
pub use csv::{read_csv, read_csv_bytes};
pub use draft::{MAX_DRAFT_LEVELS, draft_schema};
pub use error::{Error, Result};
pub use libsvm::{
    CsrData, read_libsvm, read_libsvm_bytes, read_libsvm_sparse, read_libsvm_sparse_bytes,
};
pub use npy::{NpyLabels, read_npy, read_npy_1d, read_npy_2d, read_npy_bytes, read_npy_dataset};
pub use parquet::{ParquetColumn, write_parquet};
pub use schema::{
    Column, Labels, Schema, SchemaFormat, TableSpec, Task, open_blocks, read_blocks,
    read_parquet_bytes, read_scoring_data, read_scoring_sparse, read_table, read_table_bytes,
    read_training_data, read_training_sparse,
};
pub use source::{Lines, MAX_LINE_BYTES, MEMORY_BUDGET_BYTES, open, parse_error, parse_finite};

/// What is wrong with one field of a text data file (inside [`Error::Parse`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A cell or value that does not parse as a number (the text is kept; empty for an empty
    /// cell).
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// A number that is NaN or infinite.
    #[error("`{0}` is not finite")]
    NonFinite(String),
    /// A CSV row with a different number of fields than the header.
    #[error("expected {expected} fields (as in the header), found {found}")]
    RaggedRow {
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A double-quoted CSV field without its closing quote.
    #[error("unterminated quoted field")]
    UnterminatedQuote,
    /// A CSV header naming the same column twice.
    #[error("duplicate column name")]
    DuplicateColumn,
    /// A LIBSVM token that is not `index:value` with an unsigned integer index.
    #[error("malformed token `{0}` (expected index:value with a 1-based integer index)")]
    MalformedToken(String),
    /// A LIBSVM feature index 0 (indices are 1-based).
    #[error("feature index 0 (LIBSVM indices are 1-based)")]
    ZeroIndex,
    /// A LIBSVM feature index not larger than the previous one on its line.
    #[error("feature index {index} does not increase (previous index {previous})")]
    NonIncreasingIndex {
        /// The previous index on the line.
        previous: usize,
        /// This index.
        index: usize,
    },
    /// A LIBSVM feature index larger than the number of features asked for.
    #[error("feature index {index} exceeds the number of features {d}")]
    IndexOutOfRange {
        /// This index.
        index: usize,
        /// The number of features.
        d: usize,
    },
    /// A LIBSVM feature index so large that a dense matrix with that many columns could not
    /// fit in [`MEMORY_BUDGET_BYTES`], even for one row.
    #[error(
        "feature index {index} is too large: a dense row holds at most {max} features within \
         the memory budget"
    )]
    IndexTooLarge {
        /// This index.
        index: usize,
        /// The largest index the budget allows.
        max: usize,
    },
    /// The values read so far exceed [`MEMORY_BUDGET_BYTES`].
    #[error("the file holds more than {values} values, over the memory budget")]
    OverMemoryBudget {
        /// How many values had been read when the budget ran out.
        values: usize,
    },
    /// A physical line longer than [`MAX_LINE_BYTES`] (e.g. a binary file read as text).
    #[error("the line is longer than {limit} bytes")]
    LineTooLong {
        /// The limit, [`MAX_LINE_BYTES`].
        limit: usize,
    },
    /// A line that is not valid UTF-8.
    #[error("not valid UTF-8")]
    InvalidUtf8,
    /// Text in a column read as a numeric feature (a string column that is neither dropped
    /// nor declared categorical).
    #[error(
        "`{value}` is not a number: column `{column}` holds text; drop it (--drop {column}, or \
         \"drop\" in the schema) or one-hot encode it with its public levels \
         (--categorical '{column}=LEVEL1|LEVEL2|...', or \"categorical\" in the schema)"
    )]
    TextInNumericColumn {
        /// The cell's text.
        value: String,
        /// The column's name.
        column: String,
    },
    /// A missing value (a Parquet null).
    #[error("missing value (null); fill or drop the rows with missing values first")]
    Null,
    /// A value outside the set allowed: a categorical value outside its public levels, a label
    /// outside the class pair (or an Adult category or label).
    #[error("unexpected value `{value}` (expected {expected})")]
    UnexpectedValue {
        /// The value found.
        value: String,
        /// What was expected.
        expected: String,
    },
}

/// A file format [`read_dataset`] understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Comma-separated values with a header row ([`read_csv`]).
    Csv,
    /// LIBSVM / SVMlight sparse text ([`read_libsvm`]).
    Libsvm,
    /// NumPy `.npy` ([`read_npy_dataset`]).
    Npy,
    /// Apache Parquet, flat columns found by name like CSV's ([`read_table`]).
    Parquet,
}

impl Format {
    /// Every format, in CLI order.
    pub const ALL: [Self; 4] = [Self::Csv, Self::Libsvm, Self::Npy, Self::Parquet];

    /// The CLI name: `csv`, `libsvm`, `npy` or `parquet`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Libsvm => "libsvm",
            Self::Npy => "npy",
            Self::Parquet => "parquet",
        }
    }

    /// Whether files of this format name their columns (CSV's header, Parquet's schema), so
    /// that a schema selects them by name.
    pub fn has_column_names(self) -> bool {
        matches!(self, Self::Csv | Self::Parquet)
    }

    /// The format a file name's extension indicates, ignoring a final `.gz`: `.csv`;
    /// `.libsvm`, `.svm`, `.svmlight`; `.npy`; `.parquet`, `.pq` (case-insensitive). `None`
    /// otherwise.
    pub fn from_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let (_, ext) = name.rsplit_once('.')?;
        match ext {
            "csv" => Some(Self::Csv),
            "libsvm" | "svm" | "svmlight" => Some(Self::Libsvm),
            "npy" => Some(Self::Npy),
            "parquet" | "pq" => Some(Self::Parquet),
            _ => None,
        }
    }

    /// `format` when given, else the format of `path`'s extension ([`Format::from_path`]),
    /// else Parquet for a file that starts with the magic bytes `PAR1`.
    ///
    /// # Errors
    ///
    /// [`Error::FormatNotInferred`] when none of these says.
    pub fn infer(path: &Path, format: Option<Self>) -> Result<Self> {
        if let Some(f) = format.or_else(|| Self::from_path(path)) {
            return Ok(f);
        }
        let mut head = [0u8; 4];
        let magic = source::open_regular(path)
            .ok()
            .and_then(|(mut file, _)| std::io::Read::read_exact(&mut file, &mut head).ok())
            .is_some_and(|()| &head == parquet::MAGIC);
        if magic {
            Ok(Self::Parquet)
        } else {
            Err(Error::FormatNotInferred { path: path.into() })
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    /// Parse a CLI name (`csv`, `libsvm`, `npy`, `parquet`; case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownFormat { name: s.to_owned() })
    }
}

/// Features and labels read from a file, before any model-specific checks.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedData {
    /// `n × d` features, one sample per row.
    pub x: Array2<f64>,
    /// `n` labels (±1 for the classification datasets; any finite value from the readers).
    pub y: Array1<f64>,
    /// The features' names when the source has them (CSV header, Adult's one-hot levels).
    pub feature_names: Option<Vec<String>>,
}

impl LoadedData {
    /// Number of samples `n`.
    pub fn n_samples(&self) -> usize {
        self.x.nrows()
    }

    /// Number of features `d`.
    pub fn n_features(&self) -> usize {
        self.x.ncols()
    }

    /// The given rows, in the given order (indices may repeat).
    ///
    /// # Panics
    ///
    /// When an index is out of bounds.
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        Self {
            x: self.x.select(Axis(0), rows),
            y: self.y.select(Axis(0), rows),
            feature_names: self.feature_names.clone(),
        }
    }

    /// The first `n_train` rows as the training set and the rest as the test set
    /// (`n_train` is capped at `n`).
    pub fn split_at(&self, n_train: usize) -> Split {
        let n_train = n_train.min(self.n_samples());
        let (x_train, x_test) = self.x.view().split_at(Axis(0), n_train);
        let (y_train, y_test) = self.y.view().split_at(Axis(0), n_train);
        Split {
            train: Self {
                x: x_train.to_owned(),
                y: y_train.to_owned(),
                feature_names: self.feature_names.clone(),
            },
            test: Self {
                x: x_test.to_owned(),
                y: y_test.to_owned(),
                feature_names: self.feature_names.clone(),
            },
        }
    }

    /// The rows shuffled by [`permutation`] with a Xoshiro256++ stream seeded by `seed`.
    pub fn shuffled(&self, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        self.select_rows(&permutation(self.n_samples(), &mut rng))
    }
}

/// A train/test split of one dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// The training set.
    pub train: LoadedData,
    /// The test set.
    pub test: LoadedData,
}

/// A uniformly random permutation of `0..n`: a Fisher–Yates shuffle drawing each index by
/// rejection sampling from `rng.next_u64()`.
///
/// Written out here rather than taken from `rand::seq` so that a seed keeps giving the same
/// permutation whatever `rand` version is in use (only the generator's own stream matters).
pub fn permutation<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        // i + 1 ≤ n ≤ usize::MAX fits in u64 on every supported platform.
        let j = uniform_below(rng, i as u64 + 1);
        p.swap(i, j as usize);
    }
    p
}

/// A uniform draw from `0..bound` (`bound ≥ 1`) without modulo bias.
fn uniform_below<R: Rng + ?Sized>(rng: &mut R, bound: u64) -> u64 {
    // Accept draws below the largest multiple of `bound` that fits in u64.
    let limit = u64::MAX - u64::MAX % bound;
    loop {
        let v = rng.next_u64();
        if v < limit {
            return v % bound;
        }
    }
}

/// Read a dataset for `dpglm train` / `dpglm evaluate` (`--data FILE [--format F]
/// [--label L]`, spec/CLI.md).
///
/// The format is `format`, or else inferred by [`Format::from_path`]. The label:
/// - CSV: `label` names the label column and is required (all other columns are features);
/// - LIBSVM: the first token of each line; `label` must be `None`;
/// - NPY: `label` is a column index of the feature matrix (0-based, negative from the end;
///   the column is removed) or the path of a label `.npy` file (relative paths are tried as
///   given, then next to `path`); when `None`, a label file next to the features is used:
///   `NAME_X.npy[.gz]` → `NAME_y.npy[.gz]`, `x_NAME.npy` → `y_NAME.npy`, `X.npy` → `y.npy`.
///
/// # Errors
///
/// [`Error::FormatNotInferred`] when the extension says nothing; [`Error::MissingLabelColumn`]
/// for a CSV without (or with an unknown) `label`; [`Error::Label`] for a `label` given to
/// LIBSVM or an NPY file whose labels cannot be found; and the errors of the readers.
pub fn read_dataset(
    path: impl AsRef<Path>,
    format: Option<Format>,
    label: Option<&str>,
) -> Result<LoadedData> {
    read_dataset_with_width(path, format, label, None)
}

/// [`read_dataset`] for data that must have `n_features` feature columns (a test set scored
/// with a model): a LIBSVM file then has that many columns even when its largest index is
/// smaller, and an index beyond it is a parse error naming the line. CSV and NPY files state
/// their width, so `n_features` does not change how they are read (compare
/// [`LoadedData::n_features`] with it).
///
/// # Errors
///
/// As [`read_dataset`], and [`ParseErrorKind::IndexOutOfRange`] for a LIBSVM index beyond
/// `n_features`.
pub fn read_dataset_with_width(
    path: impl AsRef<Path>,
    format: Option<Format>,
    label: Option<&str>,
    n_features: Option<usize>,
) -> Result<LoadedData> {
    let path = path.as_ref();
    match Format::infer(path, format)? {
        Format::Csv => csv::read_csv_impl(path, label),
        Format::Parquet => {
            let table = parquet::ParquetTable::open(path)?;
            let schema = Schema {
                label: label.map(str::to_owned),
                ..Schema::default()
            };
            let spec = schema.resolve(&table.header(), path, Task::Regression)?;
            table.read_all(&spec, true)
        }
        Format::Libsvm => {
            no_label_option(path, label)?;
            read_libsvm(path, n_features)
        }
        Format::Npy => {
            let labels = npy::LabelSource::find(path, label)?;
            read_npy_dataset(path, labels.as_labels())
        }
    }
}

/// Refuses a label option for a LIBSVM file, whose label is the first token of each line.
fn no_label_option(path: &Path, label: Option<&str>) -> Result<()> {
    match label {
        None => Ok(()),
        Some(label) => Err(Error::Label {
            path: path.into(),
            reason: format!(
                "LIBSVM files hold the label as the first token of each line; the label \
                 option (`{label}`) does not apply"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_permutation_and_reproducible() {
        let mut a = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut b = Xoshiro256PlusPlus::seed_from_u64(7);
        let p = permutation(1000, &mut a);
        assert_eq!(p, permutation(1000, &mut b));
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_ne!(p, sorted);
        assert!(permutation(0, &mut a).is_empty());
        assert_eq!(permutation(1, &mut a), [0]);
    }

    #[test]
    fn uniform_below_covers_its_range() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            counts[uniform_below(&mut rng, 3) as usize] += 1;
        }
        // Each count is Binomial(3000, 1/3): mean 1000, sd ≈ 26; 8 sd either side.
        assert!(
            counts.iter().all(|&c| (790..1210).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn formats_from_names_and_paths() {
        assert_eq!("CSV".parse::<Format>().unwrap(), Format::Csv);
        assert!(matches!(
            "arff".parse::<Format>(),
            Err(Error::UnknownFormat { .. })
        ));
        for (name, format) in [
            ("a.csv", Some(Format::Csv)),
            ("a.CSV.gz", Some(Format::Csv)),
            ("dir.v2/a.svm", Some(Format::Libsvm)),
            ("a.libsvm.gz", Some(Format::Libsvm)),
            ("synthetic-L_X.npy.gz", Some(Format::Npy)),
            ("cod-rna", None),
            ("cod-rna.t", None),
            ("a.gz", None),
        ] {
            assert_eq!(Format::from_path(Path::new(name)), format, "{name}");
        }
    }
}
