//! The crate's error type: every failure names the file (and, for text formats, the line
//! and the field at fault).

use std::path::PathBuf;

/// Everything that can go wrong while reading a data file or applying a schema to it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading a file failed (missing, unreadable, not a regular file, corrupt gzip).
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A data file has a malformed entry: the file, the 1-based line, the field at fault and
    /// what is wrong with it.
    #[error("{}:{line}: {field}: {kind}", path.display())]
    Parse {
        /// The data file.
        path: PathBuf,
        /// 1-based line number (physical lines, blank ones included).
        line: usize,
        /// The field at fault: a CSV column name, `label`, or a LIBSVM token.
        field: String,
        /// What is wrong.
        kind: crate::ParseErrorKind,
    },

    /// The label column asked for is not in the CSV header (or no label column was given).
    #[error("{}", missing_label_message(path, label.as_deref(), available))]
    MissingLabelColumn {
        /// The CSV file.
        path: PathBuf,
        /// The column asked for; `None` when none was given.
        label: Option<String>,
        /// The header's columns, in file order.
        available: Vec<String>,
    },

    /// A column named by a schema, a flag or a model is not in the CSV header.
    #[error(
        "{}: no column `{column}` (named by {named_by}); available columns: {}",
        path.display(),
        available.join(", ")
    )]
    UnknownColumn {
        /// The CSV file.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// What named it (e.g. `--features`, `the model`).
        named_by: String,
        /// The header's columns, in file order.
        available: Vec<String>,
    },

    /// A schema (file or flags) is invalid or does not fit the data: the origin (a schema
    /// file, a flag, a data file) and why.
    #[error("{origin}: {reason}")]
    Schema {
        /// Where the schema or the setting at fault comes from.
        origin: String,
        /// What is wrong.
        reason: String,
    },

    /// The labels cannot be determined (a label option that does not apply to the format, no
    /// label file next to an NPY feature file, a label column out of range, ...).
    #[error("{}: {reason}", path.display())]
    Label {
        /// The data file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A data file holds no samples (empty, or a header only).
    #[error("{}: no data rows", path.display())]
    EmptyData {
        /// The data file.
        path: PathBuf,
    },

    /// A NumPy `.npy` file is malformed or uses a layout or dtype that is not supported.
    #[error("{}: invalid .npy file: {reason}", path.display())]
    Npy {
        /// The `.npy` file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A Parquet file is malformed or truncated, or a column it would read has a type that
    /// is not supported.
    #[error("{}: Parquet: {reason}", path.display())]
    Parquet {
        /// The Parquet file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A value of a file without text lines (Parquet) that cannot be used: the row group and
    /// the row (both 0-based; rows counted over the whole file), the column and what is wrong.
    #[error(
        "{}: row group {row_group}, row {row} (0-based): column `{column}`: {kind}",
        path.display()
    )]
    Value {
        /// The data file.
        path: PathBuf,
        /// The row group (0-based).
        row_group: usize,
        /// The row over the whole file (0-based).
        row: usize,
        /// The column's name.
        column: String,
        /// What is wrong.
        kind: crate::ParseErrorKind,
    },

    /// A format name is not one of `csv`, `libsvm`, `npy`, `parquet`.
    #[error("unknown data format `{name}`; expected csv, libsvm, npy or parquet")]
    UnknownFormat {
        /// The name given.
        name: String,
    },

    /// The format could not be inferred from the file name.
    #[error(
        "cannot infer the data format of {} from its extension (.csv, .libsvm, .svm, .npy, \
         optionally followed by .gz; .parquet, .pq) or its content; give the format explicitly \
         (--format csv|libsvm|npy|parquet)",
        path.display()
    )]
    FormatNotInferred {
        /// The data file.
        path: PathBuf,
    },

    /// A file read as text (CSV, LIBSVM) that starts with the magic bytes of a binary format
    /// this crate reads (Parquet's `PAR1`, NumPy's `\x93NUMPY`): it was named or given the
    /// wrong format, and the fix is the right name or `--format`.
    #[error("{}", binary_format_message(path, *format))]
    BinaryFormat {
        /// The data file.
        path: PathBuf,
        /// The format its first bytes indicate.
        format: crate::Format,
    },

    /// A data file parsed but does not have the expected content (row counts that disagree
    /// between features and labels, a width other than a model's, ...).
    #[error("{}: {reason}", path.display())]
    DataMismatch {
        /// The data file.
        path: PathBuf,
        /// What was expected and what was found.
        reason: String,
    },
}

fn missing_label_message(
    path: &std::path::Path,
    label: Option<&str>,
    available: &[String],
) -> String {
    let columns = available.join(", ");
    match label {
        Some(label) => format!(
            "{}: no label column `{label}`; available columns: {columns}",
            path.display()
        ),
        None => format!(
            "{}: CSV data needs a label column (--label COLUMN); available columns: {columns}",
            path.display()
        ),
    }
}

fn binary_format_message(path: &std::path::Path, format: crate::Format) -> String {
    let (what, magic) = match format {
        crate::Format::Npy => ("a NumPy .npy", "\\x93NUMPY"),
        _ => ("a Parquet", "PAR1"),
    };
    format!(
        "{} looks like {what} file (it starts with the magic bytes {magic}), not text: name it \
         .{name} or pass --format {name}",
        path.display(),
        name = format.name()
    )
}

impl Error {
    /// An [`Error::Io`] naming `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
