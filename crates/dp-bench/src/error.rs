//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while running experiments and writing their artifacts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file or directory failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Drawing a plot failed.
    #[error("could not draw {}: {message}", path.display())]
    Plot {
        /// The SVG file being drawn.
        path: PathBuf,
        /// What the plotting library reported.
        message: String,
    },

    /// `--only` named an experiment that is not in the registry.
    #[error("unknown experiment `{id}`; valid ids: {}", valid.join(", "))]
    UnknownExperiment {
        /// The id that was asked for.
        id: String,
        /// Every registered id, in registry order.
        valid: Vec<String>,
    },

    /// A figure or table is malformed (bad id, ragged table, duplicate artifact id, ...).
    #[error("invalid artifact `{id}`: {reason}")]
    InvalidArtifact {
        /// The artifact's id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The experiment needs the datasets but no data directory was found.
    ///
    /// The runner reports the experiment as skipped, not failed.
    #[error("needs the datasets: {0}")]
    DataUnavailable(String),

    /// An experiment's own computation failed.
    #[error("{0}")]
    Experiment(String),

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
        kind: crate::data::ParseErrorKind,
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

    /// A format name is not one of `csv`, `libsvm`, `npy`.
    #[error("unknown data format `{name}`; expected csv, libsvm or npy")]
    UnknownFormat {
        /// The name given.
        name: String,
    },

    /// The format could not be inferred from the file name.
    #[error(
        "cannot infer the data format of {} from its extension (.csv, .libsvm, .svm, .npy, \
         optionally followed by .gz); give the format explicitly (--format csv|libsvm|npy)",
        path.display()
    )]
    FormatNotInferred {
        /// The data file.
        path: PathBuf,
    },

    /// A data file parsed but does not have the expected content (row counts that disagree
    /// between features and labels, a paper dataset with an unexpected shape, ...).
    #[error("{}: {reason}", path.display())]
    DataMismatch {
        /// The data file.
        path: PathBuf,
        /// What was expected and what was found.
        reason: String,
    },

    /// A numeric parameter is out of its domain (e.g. a non-positive clipping radius).
    #[error("invalid {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// A staged data file's size or SHA-256 digest differs from the one recorded in the data
    /// README.
    #[error("{}: {what} mismatch: expected {expected}, found {found}", path.display())]
    Checksum {
        /// The data file.
        path: PathBuf,
        /// What was compared (`compressed size`, `uncompressed size`, `sha256`).
        what: &'static str,
        /// The recorded value.
        expected: String,
        /// The value computed from the file.
        found: String,
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
