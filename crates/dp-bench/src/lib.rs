//! dp-bench: reproduction of the dpglm papers' figures and tables.
//!
//! - [`Figure`], [`Series`] and [`Table`] hold results; they are written as CSV (full
//!   precision) and SVG (plotters) or Markdown.
//! - An [`Experiment`] reproduces one figure or table of a paper and returns [`Artifact`]s;
//!   [`registry`] lists them all.
//! - [`run_all`] runs a selection, writes `<out>/<experiment-id>/<artifact-id>.{csv,svg}` and
//!   `<out>/index.md`, and reports failures without stopping the other experiments.
//!
//! The `dp-repro` binary is the command-line front end (`cargo xtask repro`).
//!
//! ```no_run
//! use dp_bench::{Mode, RunOptions, run_all};
//!
//! let options = RunOptions { mode: Mode::Quick, only: vec!["001-fig3-rdp-curves".into()], ..RunOptions::default() };
//! let summary = run_all(&options)?;
//! assert!(summary.success());
//! # Ok::<(), dp_bench::Error>(())
//! ```

pub mod data;
mod error;
mod experiment;
mod experiments;
mod figure;
mod format;
mod papers;
mod plot;
mod runner;
mod table;

pub use data::{LoadedData, PaperDataset, Split};
pub use error::{Error, Result};
pub use experiment::{
    Artifact, ArtifactKind, DATA_ENV, Experiment, Mode, Progress, ProgressMode, RunContext,
    locate_data_dir,
};
pub use experiments::registry;
pub use figure::{Figure, Legend, RefLine, Series, Style};
pub use papers::{PAPERS, Paper, paper_of};
pub use runner::{INDEX_FILE, Outcome, RunOptions, Status, Summary, run_all, run_experiments};
pub use table::{Cell, Table};

// Every binary that links dp-bench with the `blas` feature gets the system OpenBLAS, even when
// it uses none of dp-glm (ndarray's BLAS calls are unified across the workspace).
#[cfg(feature = "blas")]
use openblas_src as _;
