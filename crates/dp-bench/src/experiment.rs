//! The experiment interface: what an experiment is, what it gets, and what it returns.

use std::fmt;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{Error, Result};
use crate::figure::Figure;
use crate::table::Table;

/// How much work an experiment does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Minutes for the whole registry: fewer grid points, seeds and steps. The default.
    #[default]
    Quick,
    /// The papers' settings.
    Full,
}

impl Mode {
    /// `true` for [`Mode::Quick`].
    pub fn is_quick(self) -> bool {
        self == Self::Quick
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Quick => "quick",
            Self::Full => "full",
        })
    }
}

/// What an experiment produced: a figure or a table.
#[derive(Clone, Debug, PartialEq)]
pub enum ArtifactKind {
    /// Written as `<id>.csv` and `<id>.svg`, shown as an image in the index.
    Figure(Figure),
    /// Written as `<id>.csv`, inlined in the index as a Markdown table.
    Table(Table),
}

/// One output of an experiment, with an optional note for the reader of the index
/// (for example "differs from the paper because ...").
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    /// The figure or table.
    pub kind: ArtifactKind,
    /// Shown under the artifact in the index.
    pub note: Option<String>,
}

impl Artifact {
    /// A figure without a note.
    pub fn figure(figure: Figure) -> Self {
        Self {
            kind: ArtifactKind::Figure(figure),
            note: None,
        }
    }

    /// A table without a note.
    pub fn table(table: Table) -> Self {
        Self {
            kind: ArtifactKind::Table(table),
            note: None,
        }
    }

    /// Attach a note.
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// The figure's or table's id (the file stem of its outputs).
    pub fn id(&self) -> &str {
        match &self.kind {
            ArtifactKind::Figure(f) => &f.id,
            ArtifactKind::Table(t) => &t.id,
        }
    }

    /// The figure's or table's title.
    pub fn title(&self) -> &str {
        match &self.kind {
            ArtifactKind::Figure(f) => &f.title,
            ArtifactKind::Table(t) => &t.title,
        }
    }
}

impl From<Figure> for Artifact {
    fn from(figure: Figure) -> Self {
        Self::figure(figure)
    }
}

impl From<Table> for Artifact {
    fn from(table: Table) -> Self {
        Self::table(table)
    }
}

/// One reproducible figure or table of a paper.
///
/// Implementations live in `experiments/paperNNN.rs` and are listed by
/// [`registry`](crate::registry). The runner runs experiments on several threads (hence
/// `Sync`); an experiment's numbers must not depend on which thread or in which order it runs
/// (every trial's generator is seeded from the trial's index).
pub trait Experiment: Sync {
    /// Stable id, used as the output directory name and by `--only`
    /// (e.g. `001-fig3-rdp-curves`).
    fn id(&self) -> &'static str;

    /// Human-readable title.
    fn title(&self) -> &'static str;

    /// What it reproduces, e.g. `"001 Fig. 3"` (paper number as in `shared/papers`).
    fn paper(&self) -> &'static str;

    /// One sentence on what the result shows (the setting and the methods compared).
    fn description(&self) -> &'static str;

    /// One sentence on how to read the result: what to look at and what the paper's claim
    /// predicts there.
    fn reading(&self) -> &'static str;

    /// Whether the experiment reads datasets from [`RunContext::data_dir`]. When it does and no
    /// data directory was found, the runner skips it instead of running it.
    fn needs_data(&self) -> bool {
        false
    }

    /// Compute the artifacts. Long experiments should report sub-tasks through
    /// [`RunContext::progress`].
    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>>;
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A progress bar on a terminal; one line per finished step when stdout is not a terminal
    /// or the `CI` environment variable is `true`.
    #[default]
    Auto,
    /// One line per finished step.
    Lines,
    /// Nothing (tests).
    Silent,
}

impl ProgressMode {
    /// Resolve [`ProgressMode::Auto`] for the current process.
    pub(crate) fn resolve(self) -> Self {
        match self {
            Self::Auto => {
                let ci =
                    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
                if std::io::stdout().is_terminal() && !ci {
                    Self::Auto
                } else {
                    Self::Lines
                }
            }
            other => other,
        }
    }
}

/// A sub-task counter for one experiment: a progress bar on a terminal, plain lines otherwise.
#[derive(Debug)]
pub struct Progress {
    experiment: String,
    mode: ProgressMode,
    bar: Option<ProgressBar>,
    done: u64,
    total: Option<u64>,
}

impl Progress {
    /// A counter for `experiment`; `mode` should already be resolved (no `Auto` detection is
    /// done here beyond drawing a bar).
    pub(crate) fn new(experiment: &str, mode: ProgressMode) -> Self {
        Self {
            experiment: experiment.to_owned(),
            mode,
            bar: None,
            done: 0,
            total: None,
        }
    }

    /// A counter that shows nothing.
    pub fn silent() -> Self {
        Self::new("", ProgressMode::Silent)
    }

    /// Announce how many steps the experiment will report.
    pub fn set_steps(&mut self, total: u64) {
        self.total = Some(total);
        if self.mode == ProgressMode::Auto {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout());
            let style = ProgressStyle::with_template(
                "  {prefix} [{bar:30}] {pos}/{len} {wide_msg} ({elapsed})",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix(self.experiment.clone());
            bar.set_position(self.done);
            self.bar = Some(bar);
        }
    }

    /// Record one finished step, described by `what` (e.g. `"sigma = 2"`).
    pub fn step(&mut self, what: &str) {
        self.done += 1;
        match (&self.bar, self.mode) {
            (Some(bar), _) => {
                bar.set_message(what.to_owned());
                bar.set_position(self.done);
            }
            (None, ProgressMode::Silent) => {}
            (None, _) => {
                let total = self.total.map_or_else(|| "?".to_owned(), |t| t.to_string());
                println!("  {} {}/{total}: {what}", self.experiment, self.done);
            }
        }
    }

    /// Steps reported so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Remove the bar, if any, from the terminal.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Everything an experiment may use while running.
#[derive(Debug)]
pub struct RunContext {
    mode: Mode,
    out_dir: PathBuf,
    data_dir: Option<PathBuf>,
    progress: Progress,
}

impl RunContext {
    /// A context with silent progress, for running one experiment by hand (tests, benches).
    pub fn new(mode: Mode, out_dir: impl Into<PathBuf>, data_dir: Option<PathBuf>) -> Self {
        Self::with_progress(mode, out_dir.into(), data_dir, Progress::silent())
    }

    pub(crate) fn with_progress(
        mode: Mode,
        out_dir: PathBuf,
        data_dir: Option<PathBuf>,
        progress: Progress,
    ) -> Self {
        Self {
            mode,
            out_dir,
            data_dir,
            progress,
        }
    }

    /// Quick or full.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// This experiment's output directory (`<out>/<experiment-id>`), already created. The
    /// runner writes the artifacts there; experiments may add their own files (logs, raw data).
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// The datasets' directory, if one was found.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// The datasets' directory, or [`Error::DataUnavailable`] (which the runner reports as a
    /// skip, not a failure).
    pub fn require_data(&self) -> Result<&Path> {
        self.data_dir()
            .ok_or_else(|| Error::DataUnavailable(no_data_message()))
    }

    /// The sub-task counter.
    pub fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    pub(crate) fn finish_progress(&mut self) {
        self.progress.finish();
    }
}

/// Environment variable naming the datasets' directory.
pub const DATA_ENV: &str = "DPGLM_DATA";

pub(crate) fn no_data_message() -> String {
    format!(
        "no data directory found: set {DATA_ENV} to the directory holding the datasets \
         (see `dp-repro --help`)"
    )
}

/// Find the datasets' directory: `$DPGLM_DATA` if set (and a directory), else `../shared/data`
/// relative to the workspace root if it exists, else `None`.
pub fn locate_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(DATA_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    // CARGO_MANIFEST_DIR is crates/dp-bench; the workspace root is two levels up.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("../shared/data");
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}
