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

    /// Reading a data file failed (the file, and for text formats the line and field, named).
    #[error(transparent)]
    Data(#[from] dp_data::Error),

    /// A paper dataset parsed but does not have the expected content (row counts or a shape
    /// other than the staged files', a level that never occurs, ...).
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
