//! Project automation for dpglm: `cargo xtask repro | test | bench | ci | help`.
//!
//! Standard library only, so it builds in seconds on a fresh clone. Every message of
//! xtask itself goes to stderr; stdout carries only the output of the commands it runs, so
//! the closing lines of a `cargo xtask test` log are cargo test's own summary.
//!
//! Exit codes: 0 on success, 1 when a step fails (the message names the step), 2 for an
//! unknown task or flag.

mod args;
mod python;

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use args::{Mode, ReproArgs, Task, TestArgs, UsageError};

/// Every `blas` feature of the workspace. Features are unified across the workspace, so
/// `dpglm-tests/blas` alone would switch on the rest; listing them all checks that each
/// forwarding feature still exists.
const BLAS_FEATURES: &str =
    "dp-optim/blas,dp-glm/blas,dp-bench/blas,dp-cli/blas,dpglm-tests/blas,dpglm-benches/blas";

/// Debian/Ubuntu packages that provide the system OpenBLAS `openblas-src` links to.
const APT_PACKAGES: [&str; 2] = ["libopenblas-dev", "pkg-config"];

fn main() -> ExitCode {
    let argv: std::result::Result<Vec<String>, UsageError> = env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .map_err(|a| UsageError(format!("argument {a:?} is not valid UTF-8")))
        })
        .collect();
    let task = match argv.and_then(|a| args::parse(&a)) {
        Ok(task) => task,
        Err(e) => {
            eprintln!("xtask: {e}\n");
            eprint!("{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let result = match task {
        Task::Help => {
            print!("{}", args::USAGE);
            Ok(())
        }
        Task::Test(t) => test(t),
        Task::Repro(r) => repro(&r),
        Task::Bench(b) => bench(&b),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("\nxtask: {f}");
            ExitCode::FAILURE
        }
    }
}

/// A failed step: its name and why.
#[derive(Debug)]
struct Failure {
    step: String,
    detail: String,
}

impl Failure {
    fn new(step: &str, detail: impl Into<String>) -> Self {
        Failure {
            step: step.to_owned(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step `{}` failed: {}", self.step, self.detail)
    }
}

type Result<T> = std::result::Result<T, Failure>;

/// The workspace root (the parent of `xtask/`).
fn root() -> PathBuf {
    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or(manifest_dir)
}

/// `cargo` (the rustup proxy on PATH, so rust-toolchain files are honoured), run at the root.
fn cargo<const N: usize>(args: [&str; N]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.args(args).current_dir(root());
    cmd
}

/// `cargo` for a step of `cargo xtask test`. On CI (`CI` set) incremental compilation is off:
/// a clean clone never reuses its caches, which otherwise take gigabytes of the CI disk.
fn test_cargo<const N: usize>(args: [&str; N]) -> Command {
    let mut cmd = cargo(args);
    if env::var_os("CI").is_some() {
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    cmd
}

/// How a command is shown in step headers: environment overrides, program, arguments.
fn render(cmd: &Command) -> String {
    let mut parts: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| v.map(|v| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())))
        .collect();
    parts.push(cmd.get_program().to_string_lossy().into_owned());
    parts.extend(cmd.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(char::is_whitespace) {
            format!("'{a}'")
        } else {
            a.into_owned()
        }
    }));
    parts.join(" ")
}

fn header(step: &str, text: &str) {
    eprintln!("\n==> [{step}] {text}");
}

/// Run `cmd` with inherited stdout/stderr; failure is reported under `step`.
fn run(step: &str, mut cmd: Command) -> Result<()> {
    header(step, &render(&cmd));
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .map_err(|e| Failure::new(step, format!("could not start `{}`: {e}", render(&cmd))))?;
    if status.success() {
        Ok(())
    } else {
        let how = match status.code() {
            Some(code) => format!("exit code {code}"),
            None => "killed by a signal".to_owned(),
        };
        Err(Failure::new(
            step,
            format!("`{}` ended with {how}", render(&cmd)),
        ))
    }
}

/// Test counts summed over every `test result:` line cargo printed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Totals {
    /// Adds the counts of one `test result: ok. 3 passed; 0 failed; 1 ignored; …` line.
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result:") else {
            return;
        };
        for part in rest.split([';', '.']) {
            let mut words = part.split_whitespace();
            if let (Some(n), Some(what)) = (words.next(), words.next())
                && let Ok(n) = n.parse::<u64>()
            {
                match what {
                    "passed" => self.passed += n,
                    "failed" => self.failed += n,
                    "ignored" => self.ignored += n,
                    _ => {}
                }
            }
        }
    }
}

/// Like [`run`] for a test runner: passes its stdout through line by line and adds up its
/// summary lines into `totals` with `count` (for cargo test, [`Totals::add_line`]).
fn run_tests(
    step: &str,
    mut cmd: Command,
    totals: &mut Totals,
    count: fn(&mut Totals, &str),
) -> Result<()> {
    use std::io::{BufRead, BufReader, Write};
    header(step, &render(&cmd));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::new(step, format!("could not start `{}`: {e}", render(&cmd))))?;
    if let Some(out) = child.stdout.take() {
        let stdout = std::io::stdout();
        for line in BufReader::new(out)
            .lines()
            .map_while(std::result::Result::ok)
        {
            count(totals, &line);
            let mut lock = stdout.lock();
            let _ = writeln!(lock, "{line}");
            let _ = lock.flush();
        }
    }
    let status = child.wait().map_err(|e| {
        Failure::new(
            step,
            format!("`{}` could not be waited on: {e}", render(&cmd)),
        )
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(
            step,
            format!("`{}` failed ({status})", render(&cmd)),
        ))
    }
}

/// Does `pkg-config` exist and know `openblas`?
fn openblas_found() -> bool {
    Command::new("pkg-config")
        .args(["--exists", "openblas"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Make sure the system OpenBLAS is installed (what `openblas-src`'s `system` feature links
/// to). As root, install it with apt-get; otherwise print the command and fail.
fn ensure_openblas() -> Result<()> {
    const STEP: &str = "openblas";
    header(STEP, "pkg-config --exists openblas");
    if openblas_found() {
        eprintln!("OpenBLAS found by pkg-config.");
        return Ok(());
    }
    let packages = APT_PACKAGES.join(" ");
    if !is_root() {
        return Err(Failure::new(
            STEP,
            format!(
                "OpenBLAS is not installed (or pkg-config is missing) and we are not root.\n\
                 Install it with:\n\n    \
                 sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y --no-install-recommends {packages}\n\n\
                 then run this command again (`cargo xtask test --no-blas` skips BLAS)."
            ),
        ));
    }
    eprintln!("OpenBLAS not found by pkg-config; installing {packages} with apt-get.");
    let apt = |args: &[&str]| {
        let mut cmd = Command::new("apt-get");
        cmd.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        cmd
    };
    run(STEP, apt(&["update"]))?;
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(APT_PACKAGES);
    run(STEP, apt(&install))?;
    if openblas_found() {
        Ok(())
    } else {
        Err(Failure::new(
            STEP,
            format!("installed {packages}, but `pkg-config --exists openblas` still fails"),
        ))
    }
}

fn test(t: TestArgs) -> Result<()> {
    if t.blas {
        ensure_openblas()?;
    }
    run("fmt", test_cargo(["fmt", "--all", "--", "--check"]))?;
    if !t.quick {
        run(
            "clippy",
            test_cargo([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        )?;
        // Docs run before the tests so that the closing lines of the log are cargo test's.
        let mut doc = test_cargo(["doc", "--workspace", "--no-deps"]);
        doc.env("RUSTDOCFLAGS", "-D warnings");
        run("doc", doc)?;
    }
    let mut totals = Totals::default();
    run_tests(
        "test",
        test_cargo(["test", "--workspace"]),
        &mut totals,
        Totals::add_line,
    )?;
    if t.blas {
        run_tests(
            "test-blas",
            test_cargo(["test", "--workspace", "--features", BLAS_FEATURES]),
            &mut totals,
            Totals::add_line,
        )?;
    }
    if t.python {
        python::test(&mut totals)?;
    }
    // The accounting campaign's summary (cases, under-reports), written by its test.
    if let Ok(summary) =
        std::fs::read_to_string(target_dir().join("tmp").join("campaign-summary.txt"))
    {
        eprint!("\n{summary}");
    }
    eprintln!("\nxtask test: all steps passed.");
    // The closing line CI reads: the totals over both test runs.
    println!(
        "tests: {} passed, {} failed, {} skipped",
        totals.passed, totals.failed, totals.ignored
    );
    Ok(())
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, else `target/` at the root.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// An absolute path for a user-given `--out`, relative to where xtask was started.
fn absolute(dir: &str) -> PathBuf {
    let p = PathBuf::from(dir);
    if p.is_absolute() {
        p
    } else {
        env::current_dir().map(|cwd| cwd.join(&p)).unwrap_or(p)
    }
}

fn repro(r: &ReproArgs) -> Result<()> {
    ensure_openblas()?;
    let mut cmd = cargo([
        "run",
        "--release",
        "-p",
        "dp-bench",
        "--features",
        "blas",
        "--bin",
        "dp-repro",
        "--",
    ]);
    let out = match &r.out {
        Some(dir) => absolute(dir),
        None => root().join("results"),
    };
    if r.list {
        cmd.arg("--list");
    } else {
        cmd.arg(match r.mode {
            Mode::Quick => "--quick",
            Mode::Full => "--full",
        });
        if let Some(id) = &r.only {
            cmd.args(["--only", id]);
        }
        if let Some(n) = r.threads {
            cmd.arg("--threads").arg(n.to_string());
        }
        cmd.arg("--out").arg(&out);
    }
    // dp-repro runs experiments on rayon workers, some of which call BLAS: OpenBLAS's own
    // threads would oversubscribe the cores (set OPENBLAS_NUM_THREADS yourself to override).
    let blas_threads = env::var("OPENBLAS_NUM_THREADS").unwrap_or_else(|_| "1".to_owned());
    cmd.env("OPENBLAS_NUM_THREADS", &blas_threads);
    run("repro", cmd)?;
    if !r.list {
        eprintln!(
            "\nResults in {}; index: {}",
            out.display(),
            out.join("index.md").display()
        );
    }
    Ok(())
}

fn bench(criterion_args: &[String]) -> Result<()> {
    ensure_openblas()?;
    let mut cmd = cargo(["bench", "-p", "dpglm-benches", "--features", "blas", "--"]);
    cmd.args(criterion_args);
    // The benches measure one core: OpenBLAS's own threads only add contention on the small
    // per-batch products (set OPENBLAS_NUM_THREADS yourself to measure otherwise).
    let threads = env::var("OPENBLAS_NUM_THREADS").unwrap_or_else(|_| "1".to_owned());
    cmd.env("OPENBLAS_NUM_THREADS", &threads);
    eprintln!("OPENBLAS_NUM_THREADS={threads}");
    run("bench", cmd)?;
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(|t| absolute(&t.to_string_lossy()))
        .unwrap_or_else(|| root().join("target"));
    let criterion = target.join("criterion");
    eprintln!("\nCriterion reports: {}", criterion.display());
    let index = criterion.join("report").join("index.html");
    if index.exists() {
        eprintln!("HTML summary: {}", index.display());
    }
    Ok(())
}

#[cfg(test)]
mod totals_tests {
    use super::Totals;

    #[test]
    fn adds_cargo_test_result_lines() {
        let mut t = Totals::default();
        t.add_line(
            "test result: ok. 29 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.39s",
        );
        t.add_line("test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured");
        t.add_line("running 3 tests");
        assert_eq!(
            t,
            Totals {
                passed: 32,
                failed: 1,
                ignored: 2
            }
        );
    }
}
