//! Running experiments, writing their artifacts and the results index.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::experiment::{
    Artifact, ArtifactKind, DATA_ENV, Experiment, Mode, Progress, ProgressMode, RunContext,
    locate_data_dir, no_data_message,
};
use crate::format::{check_id, markdown_cell};
use crate::papers::{PAPERS, paper_of};

/// Name of the index file written in the output directory.
pub const INDEX_FILE: &str = "index.md";

/// What to run and where to write it.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Quick or full.
    pub mode: Mode,
    /// Experiment ids to run, in any order; empty runs all of them (in registry order).
    pub only: Vec<String>,
    /// Output directory; created if missing.
    pub out_dir: PathBuf,
    /// BLAS configuration to record in the index (`None` is recorded as "none").
    pub blas: Option<String>,
    /// Datasets' directory; experiments that need data are skipped when `None`.
    pub data_dir: Option<PathBuf>,
    /// How progress is shown.
    pub progress: ProgressMode,
}

impl Default for RunOptions {
    /// Quick mode, all experiments, `results/`, no BLAS, the data directory from
    /// [`locate_data_dir`], automatic progress display.
    fn default() -> Self {
        Self {
            mode: Mode::Quick,
            only: Vec::new(),
            out_dir: PathBuf::from("results"),
            blas: None,
            data_dir: locate_data_dir(),
            progress: ProgressMode::Auto,
        }
    }
}

/// How an experiment ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Ran and wrote all its artifacts.
    Ok,
    /// Not run (for example, its datasets are missing); the reason.
    Skipped(String),
    /// Returned an error, panicked, or an artifact could not be written; the message.
    Failed(String),
}

/// The record of one experiment in a run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The experiment's id.
    pub id: String,
    /// The experiment's title.
    pub title: String,
    /// What it reproduces (e.g. "001 Fig. 3").
    pub paper: String,
    /// How it ended.
    pub status: Status,
    /// Time spent running it and writing its artifacts.
    pub elapsed: Duration,
    /// Files written, relative to the output directory.
    pub files: Vec<PathBuf>,
}

/// The result of [`run_all`] or [`run_experiments`].
#[derive(Clone, Debug)]
pub struct Summary {
    /// One entry per experiment run, in order.
    pub outcomes: Vec<Outcome>,
    /// Path of the written `index.md`.
    pub index: PathBuf,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

impl Summary {
    /// Ids of the experiments that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.outcomes
            .iter()
            .filter(|o| matches!(o.status, Status::Failed(_)))
            .map(|o| o.id.as_str())
            .collect()
    }

    /// `true` when no experiment failed (skips are not failures).
    pub fn success(&self) -> bool {
        self.failed().is_empty()
    }
}

/// Run the experiments of [`registry`](crate::registry) selected by `options`.
///
/// Errors only when nothing sensible can be written (unknown `--only` id, output directory or
/// index not writable); a failing experiment is recorded in the summary and the index instead.
pub fn run_all(options: &RunOptions) -> Result<Summary> {
    run_experiments(&crate::registry(), options)
}

/// Like [`run_all`], over an explicit list of experiments.
pub fn run_experiments(
    experiments: &[Box<dyn Experiment>],
    options: &RunOptions,
) -> Result<Summary> {
    let selected = select(experiments, &options.only)?;
    let start = Instant::now();
    let out = &options.out_dir;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let progress = options.progress.resolve();
    let say = |line: String| {
        if progress != ProgressMode::Silent {
            println!("{line}");
        }
    };

    let header = index_header(options);
    let index = out.join(INDEX_FILE);
    // Independent experiments run in parallel on the current rayon pool (`--threads`); each
    // one's numbers depend only on its own seeds. The index lists them in registry order.
    let slots: Mutex<Vec<Option<(Outcome, String)>>> = Mutex::new(vec![None; selected.len()]);
    let index_error: Mutex<Option<Error>> = Mutex::new(None);
    selected.par_iter().enumerate().for_each(|(k, exp)| {
        say(format!(
            "[{}/{}] {}: {}",
            k + 1,
            selected.len(),
            exp.id(),
            exp.title()
        ));
        let (outcome, entry) = run_one(*exp, options, progress);
        match &outcome.status {
            Status::Ok => say(format!("  {} ok ({})", exp.id(), seconds(outcome.elapsed))),
            Status::Skipped(why) => say(format!("  {} skipped: {why}", exp.id())),
            Status::Failed(why) => {
                if progress != ProgressMode::Silent {
                    eprintln!("  {} FAILED: {why}", exp.id());
                }
            }
        }
        let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots[k] = Some((outcome, entry));
        // Rewrite the index after each experiment so that an interrupted run keeps its output.
        let (outcomes, entries) = finished(&slots);
        if let Err(e) = write_index(&index, &header, &entries, &outcomes, start.elapsed(), false) {
            index_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(e);
        }
    });
    if let Some(e) = index_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(e);
    }
    let (outcomes, entries) = finished(&slots.into_inner().unwrap_or_else(PoisonError::into_inner));
    write_index(&index, &header, &entries, &outcomes, start.elapsed(), true)?;
    Ok(Summary {
        outcomes,
        index,
        elapsed: start.elapsed(),
    })
}

/// The finished experiments' outcomes and index sections, in registry order.
fn finished(slots: &[Option<(Outcome, String)>]) -> (Vec<Outcome>, Vec<String>) {
    slots.iter().flatten().cloned().unzip()
}

fn select<'a>(
    experiments: &'a [Box<dyn Experiment>],
    only: &[String],
) -> Result<Vec<&'a dyn Experiment>> {
    for id in only {
        if !experiments.iter().any(|e| e.id() == id) {
            return Err(Error::UnknownExperiment {
                id: id.clone(),
                valid: experiments.iter().map(|e| e.id().to_owned()).collect(),
            });
        }
    }
    Ok(experiments
        .iter()
        .filter(|e| only.is_empty() || only.iter().any(|id| id == e.id()))
        .map(|e| e.as_ref())
        .collect())
}

/// Run one experiment and write its artifacts; returns its outcome and its index section.
fn run_one(
    exp: &dyn Experiment,
    options: &RunOptions,
    progress: ProgressMode,
) -> (Outcome, String) {
    let start = Instant::now();
    let id = exp.id();
    let mut files = Vec::new();
    let mut body = String::new();
    let status = 'status: {
        if let Err(e) = check_id(id) {
            break 'status Status::Failed(e.to_string());
        }
        if exp.needs_data() && options.data_dir.is_none() {
            break 'status Status::Skipped(no_data_message());
        }
        let dir = options.out_dir.join(id);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            break 'status Status::Failed(Error::io(&dir, e).to_string());
        }
        let mut ctx = RunContext::with_progress(
            options.mode,
            dir.clone(),
            options.data_dir.clone(),
            Progress::new(id, progress),
        );
        let result = catch_unwind(AssertUnwindSafe(|| exp.run(&mut ctx)));
        ctx.finish_progress();
        let artifacts = match result {
            Ok(Ok(artifacts)) => artifacts,
            Ok(Err(Error::DataUnavailable(why))) => break 'status Status::Skipped(why),
            Ok(Err(e)) => break 'status Status::Failed(e.to_string()),
            Err(panic) => {
                break 'status Status::Failed(format!("panicked: {}", panic_message(&*panic)));
            }
        };
        let mut errors = Vec::new();
        let mut seen = HashSet::new();
        for artifact in &artifacts {
            if !seen.insert(artifact.id().to_owned()) {
                errors.push(
                    Error::InvalidArtifact {
                        id: artifact.id().to_owned(),
                        reason: "two artifacts of this experiment share the id".to_owned(),
                    }
                    .to_string(),
                );
                continue;
            }
            match write_artifact(artifact, &dir) {
                Ok(written) => {
                    let rel: Vec<PathBuf> = written.iter().map(|f| Path::new(id).join(f)).collect();
                    body.push_str(&artifact_markdown(id, artifact, &written));
                    files.extend(rel);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty() {
            Status::Ok
        } else {
            Status::Failed(errors.join("; "))
        }
    };
    let elapsed = start.elapsed();
    let entry = scrub(&experiment_markdown(exp, &status, elapsed, &body), options);
    let outcome = Outcome {
        id: id.to_owned(),
        title: exp.title().to_owned(),
        paper: exp.paper().to_owned(),
        status,
        elapsed,
        files,
    };
    (outcome, entry)
}

/// Write an artifact's files into `dir`; returns their file names.
fn write_artifact(artifact: &Artifact, dir: &Path) -> Result<Vec<String>> {
    let id = artifact.id();
    check_id(id)?;
    let csv = format!("{id}.csv");
    match &artifact.kind {
        ArtifactKind::Figure(fig) => {
            fig.validate()?;
            fig.write_csv(&dir.join(&csv))?;
            let svg = format!("{id}.svg");
            fig.write_svg(&dir.join(&svg))?;
            Ok(vec![svg, csv])
        }
        ArtifactKind::Table(table) => {
            table.write_csv(&dir.join(&csv))?;
            Ok(vec![csv])
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned())
}

fn artifact_markdown(exp_id: &str, artifact: &Artifact, files: &[String]) -> String {
    let mut md = String::new();
    let title = markdown_cell(artifact.title());
    match &artifact.kind {
        ArtifactKind::Figure(_) => {
            let _ = writeln!(md, "**{title}**\n");
            for f in files.iter().filter(|f| f.ends_with(".svg")) {
                let _ = writeln!(md, "![{title}]({exp_id}/{f})\n");
            }
        }
        ArtifactKind::Table(table) => {
            let _ = writeln!(md, "**{title}**\n");
            let _ = writeln!(md, "{}", table.to_markdown());
        }
    }
    let links: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".csv"))
        .map(|f| format!("[{f}]({exp_id}/{f})"))
        .collect();
    if !links.is_empty() {
        let _ = writeln!(md, "Data: {}\n", links.join(", "));
    }
    if let Some(note) = &artifact.note {
        let _ = writeln!(md, "> **Note:** {}\n", note.replace('\n', "\n> "));
    }
    md
}

fn experiment_markdown(
    exp: &dyn Experiment,
    status: &Status,
    elapsed: Duration,
    body: &str,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "<a id=\"{}\"></a>\n", exp.id());
    let _ = writeln!(md, "## `{}` — {}\n", exp.id(), exp.title());
    let cite = paper_of(exp.paper()).map_or(String::new(), |p| format!(" ({})", p.short));
    let _ = writeln!(
        md,
        "*Reproduces:* {}{cite}. {}\n",
        exp.paper(),
        exp.description()
    );
    let _ = writeln!(md, "*How to read it:* {}\n", exp.reading());
    match status {
        Status::Ok => {
            let _ = writeln!(md, "*Status:* ok — runtime {}\n", seconds(elapsed));
        }
        Status::Skipped(why) => {
            let _ = writeln!(md, "*Status:* SKIPPED — {why}\n");
        }
        Status::Failed(why) => {
            let _ = writeln!(
                md,
                "*Status:* **FAILED** after {} — {why}\n",
                seconds(elapsed)
            );
        }
    }
    md.push_str(body);
    md
}

fn index_header(options: &RunOptions) -> String {
    let mut md = String::from("# dpglm: reproduced figures and tables\n\n");
    let _ = writeln!(
        md,
        "Generated by `dp-repro` (dp-bench {}).\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(md, "- Date: {}", utc_now());
    let _ = writeln!(md, "- Mode: {}", options.mode);
    let nproc = std::thread::available_parallelism().map_or(0, usize::from);
    let _ = writeln!(
        md,
        "- Machine: {nproc} logical CPUs (nproc), {}/{}",
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    let _ = writeln!(md, "- Worker threads: {}", rayon::current_num_threads());
    let _ = writeln!(md, "- BLAS: {}", options.blas.as_deref().unwrap_or("none"));
    for var in [
        "OPENBLAS_NUM_THREADS",
        "OPENBLAS_CORETYPE",
        "OMP_NUM_THREADS",
        "RAYON_NUM_THREADS",
    ] {
        if let Ok(v) = std::env::var(var) {
            let _ = writeln!(md, "- `{var}={v}`");
        }
    }
    // The page names no directory outside the output: where the data lives is the reader's
    // own setting.
    let data = match (&options.data_dir, std::env::var_os(DATA_ENV)) {
        (Some(_), Some(_)) => format!("found (the directory named by `{DATA_ENV}`)"),
        (Some(_), None) => "found (the default location beside the workspace)".to_owned(),
        (None, Some(_)) => format!("none (`{DATA_ENV}` is not a directory)"),
        (None, None) => format!("none (`{DATA_ENV}` is not set)"),
    };
    let _ = writeln!(md, "- Datasets: {data}");
    if !options.only.is_empty() {
        let _ = writeln!(md, "- Selection: {}", options.only.join(", "));
    }
    md.push_str(&papers_key());
    md
}

/// The key from paper numbers to authors and titles, and how to read the page.
fn papers_key() -> String {
    let mut md = String::from(
        "\n## The papers\n\nExperiment ids and the *Reproduces* lines start with the paper's \
         number:\n\n| No. | Authors | Title | Venue |\n|---|---|---|---|\n",
    );
    for p in &PAPERS {
        let _ = writeln!(
            md,
            "| {} | {} | *{}* | {} |",
            p.number, p.authors, p.title, p.venue
        );
    }
    md.push_str(
        "\nEach experiment below says what it reproduces and how to read it; figures link \
         their data. CSV files hold every number in full precision; tables on this page show \
         measured values to 4 significant digits and set parameters (ε, δ, sizes) as given.\n\n\
         ## Summary\n\n",
    );
    md
}

/// `text` with the run's directories replaced by names that mean something to a reader of
/// the page: the output directory by `.` and the data directory by `$DPGLM_DATA` (error
/// messages name the files they failed on).
fn scrub(text: &str, options: &RunOptions) -> String {
    let mut dirs: Vec<(String, String)> = Vec::new();
    let mut add = |dir: &Path, name: String| {
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
        for d in [dir.to_owned(), canonical] {
            // Only absolute and upward paths say where the run happened; a plain relative
            // name (`results`) stays, and must not be replaced inside ordinary words.
            if d.is_absolute() || d.starts_with("..") {
                dirs.push((d.display().to_string(), name.clone()));
            }
        }
    };
    add(&options.out_dir, ".".to_owned());
    if let Some(dir) = &options.data_dir {
        add(dir, format!("${DATA_ENV}"));
    }
    // Longest first, so that a directory inside another is replaced whole.
    dirs.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.len()));
    let mut out = text.to_owned();
    for (dir, name) in dirs {
        out = out.replace(&dir, &name);
    }
    out
}

fn write_index(
    path: &Path,
    header: &str,
    entries: &[String],
    outcomes: &[Outcome],
    elapsed: Duration,
    complete: bool,
) -> Result<()> {
    let mut md = header.to_owned();
    let failed = outcomes
        .iter()
        .filter(|o| matches!(o.status, Status::Failed(_)))
        .count();
    let skipped = outcomes
        .iter()
        .filter(|o| matches!(o.status, Status::Skipped(_)))
        .count();
    let state = if complete { "complete" } else { "in progress" };
    let _ = writeln!(
        md,
        "Run {state}: {} experiments, {failed} failed, {skipped} skipped, {}.\n",
        outcomes.len(),
        seconds(elapsed)
    );
    let _ = writeln!(
        md,
        "| Experiment | Reproduces | Status | Runtime |\n|---|---|---|---:|"
    );
    for o in outcomes {
        let status = match &o.status {
            Status::Ok => "ok",
            Status::Skipped(_) => "skipped",
            Status::Failed(_) => "**FAILED**",
        };
        let cite = paper_of(&o.paper).map_or(String::new(), |p| format!(" ({})", p.short));
        let _ = writeln!(
            md,
            "| [`{}`](#{}) | {}{cite} | {status} | {} |",
            o.id,
            o.id,
            markdown_cell(&o.paper),
            seconds(o.elapsed)
        );
    }
    md.push('\n');
    for entry in entries {
        md.push_str(entry);
    }
    std::fs::write(path, md).map_err(|e| Error::io(path, e))
}

/// A runtime in seconds, always to two decimals (one format for the whole page).
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 0.005 {
        "< 0.01 s".to_owned()
    } else {
        format!("{s:.2} s")
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_replaces_only_the_runs_directories() {
        let tmp = std::env::temp_dir();
        let options = RunOptions {
            out_dir: PathBuf::from("results"),
            data_dir: Some(tmp.join("staged-data")),
            ..RunOptions::default()
        };
        let text = format!(
            "the results are in results/x.csv; missing {}",
            tmp.join("staged-data/adult/adult.data").display()
        );
        assert_eq!(
            scrub(&text, &options),
            "the results are in results/x.csv; missing $DPGLM_DATA/adult/adult.data"
        );
        let upward = RunOptions {
            data_dir: Some(PathBuf::from("../shared/data")),
            ..options
        };
        assert_eq!(scrub("in ../shared/data/x", &upward), "in $DPGLM_DATA/x");
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}
