//! The tiny hand-written argument parser of `cargo xtask`.
//!
//! Parsing is pure (a slice of strings in, a [`Task`] or a [`UsageError`] out) so it is
//! unit-tested below without running anything.

use std::fmt;

/// Usage text printed by `cargo xtask help` and after a usage error.
pub const USAGE: &str = "\
Usage: cargo xtask <task> [flags]

Tasks:
  repro [--quick|--full] [--only ID] [--out DIR] [--threads N] [--list]
        Regenerate the papers' figures and tables (default: --quick --out results).
        Index of the results: <DIR>/index.md. Installs OpenBLAS if missing (root).
        --threads N: worker threads (default: RAYON_NUM_THREADS, else one per CPU); the
        numbers do not depend on it.
  test [--no-blas] [--quick] [--no-python]
        fmt check, clippy (-D warnings), rustdoc (-D warnings), cargo test without BLAS,
        cargo test with BLAS, then the Python package: a virtual environment in
        target/python-venv (pip installs maturin, numpy, pytest, scikit-learn, pandas,
        scipy), the dpglm wheel built and installed, pytest on crates/dp-py/tests. --no-blas
        skips OpenBLAS and the BLAS test run; --quick skips clippy and rustdoc; --no-python
        skips the Python package.
  bench [CRITERION ARGS...]
        cargo bench -p dpglm-benches --features blas -- <ARGS>; reports in target/criterion.
  ci    What .ci/run calls: the same as `test`.
  help  This message.
";

/// What `cargo xtask` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// Print usage and exit successfully.
    Help,
    /// Formatting, lints, docs and the test suite (`test` and `ci`).
    Test(TestArgs),
    /// Regenerate the papers' results with the `dp-repro` binary.
    Repro(ReproArgs),
    /// Criterion benchmarks; the arguments go to criterion unchanged.
    Bench(Vec<String>),
}

/// Flags of `cargo xtask test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestArgs {
    /// Ensure OpenBLAS and run the test suite a second time with BLAS on.
    pub blas: bool,
    /// Skip clippy and rustdoc (local iteration).
    pub quick: bool,
    /// Build the Python package in a virtual environment and run its pytest suite.
    pub python: bool,
}

impl Default for TestArgs {
    fn default() -> Self {
        TestArgs {
            blas: true,
            quick: false,
            python: true,
        }
    }
}

/// Size of a reproduction run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Small settings that finish in minutes and need no download.
    #[default]
    Quick,
    /// The papers' full settings.
    Full,
}

/// Flags of `cargo xtask repro`, forwarded to `dp-repro`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReproArgs {
    /// `--quick` (default) or `--full`.
    pub mode: Mode,
    /// `--only ID`: a single experiment.
    pub only: Option<String>,
    /// `--out DIR`; `None` means `results/` at the repository root.
    pub out: Option<String>,
    /// `--list`: list the experiments and exit.
    pub list: bool,
    /// `--threads N`: worker threads for `dp-repro` (a positive integer).
    pub threads: Option<usize>,
}

/// A command line that does not parse; `cargo xtask` exits with code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_help(arg: &str) -> bool {
    matches!(arg, "-h" | "--help")
}

/// Parse the arguments that follow `cargo xtask`.
pub fn parse(args: &[String]) -> Result<Task, UsageError> {
    let Some((task, rest)) = args.split_first() else {
        return Ok(Task::Help);
    };
    match task.as_str() {
        "help" | "-h" | "--help" => Ok(Task::Help),
        "test" => parse_test(rest),
        "ci" => match rest.first() {
            None => Ok(Task::Test(TestArgs::default())),
            Some(a) if is_help(a) => Ok(Task::Help),
            Some(a) => Err(UsageError(format!("`ci` takes no flags, got `{a}`"))),
        },
        "repro" => parse_repro(rest),
        "bench" => {
            // Everything is criterion's; a leading `--` is accepted and dropped.
            let rest = match rest.split_first() {
                Some((first, tail)) if first == "--" => tail,
                _ => rest,
            };
            Ok(Task::Bench(rest.to_vec()))
        }
        other => Err(UsageError(format!("unknown task `{other}`"))),
    }
}

fn parse_test(args: &[String]) -> Result<Task, UsageError> {
    let mut out = TestArgs::default();
    for arg in args {
        match arg.as_str() {
            "--no-blas" => out.blas = false,
            "--quick" => out.quick = true,
            "--no-python" => out.python = false,
            a if is_help(a) => return Ok(Task::Help),
            a => return Err(UsageError(format!("unknown flag `{a}` for `test`"))),
        }
    }
    Ok(Task::Test(out))
}

/// Split `--flag=value` into its parts; other arguments are returned whole.
fn split_eq(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

fn parse_repro(args: &[String]) -> Result<Task, UsageError> {
    let mut out = ReproArgs::default();
    let mut mode: Option<Mode> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = split_eq(arg);
        match flag {
            "--quick" | "--full" | "--list" if inline.is_some() => {
                return Err(UsageError(format!("`{flag}` takes no value")));
            }
            "--quick" | "--full" => {
                let m = if flag == "--quick" {
                    Mode::Quick
                } else {
                    Mode::Full
                };
                if mode.is_some_and(|prev| prev != m) {
                    return Err(UsageError(
                        "`--quick` and `--full` exclude each other".to_owned(),
                    ));
                }
                mode = Some(m);
            }
            "--list" => out.list = true,
            "--threads" => {
                let value = match inline {
                    Some(v) => v,
                    None => it.next().map(String::as_str).unwrap_or(""),
                };
                let n = value
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| {
                        UsageError(format!("`--threads` needs an integer >= 1, got `{value}`"))
                    })?;
                if out.threads.replace(n).is_some() {
                    return Err(UsageError("`--threads` given twice".to_owned()));
                }
            }
            "--only" | "--out" => {
                let value = match inline {
                    Some(v) => v,
                    None => it.next().map(String::as_str).unwrap_or(""),
                };
                if value.is_empty() || value.starts_with('-') {
                    let what = if flag == "--only" { "ID" } else { "DIR" };
                    return Err(UsageError(format!("`{flag}` needs a value ({what})")));
                }
                let slot = if flag == "--only" {
                    &mut out.only
                } else {
                    &mut out.out
                };
                if slot.is_some() {
                    return Err(UsageError(format!("`{flag}` given twice")));
                }
                *slot = Some(value.to_owned());
            }
            a if is_help(a) => return Ok(Task::Help),
            a => return Err(UsageError(format!("unknown flag `{a}` for `repro`"))),
        }
    }
    out.mode = mode.unwrap_or_default();
    Ok(Task::Repro(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Task, UsageError> {
        let owned: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse(&owned)
    }

    fn test_task(blas: bool, quick: bool) -> Result<Task, UsageError> {
        Ok(Task::Test(TestArgs {
            blas,
            quick,
            python: true,
        }))
    }

    #[test]
    fn no_args_and_help_print_usage() {
        assert_eq!(p(&[]), Ok(Task::Help));
        assert_eq!(p(&["help"]), Ok(Task::Help));
        assert_eq!(p(&["--help"]), Ok(Task::Help));
        assert_eq!(p(&["-h"]), Ok(Task::Help));
        assert_eq!(p(&["test", "--help"]), Ok(Task::Help));
        assert_eq!(p(&["repro", "-h"]), Ok(Task::Help));
    }

    #[test]
    fn test_flags() {
        assert_eq!(p(&["test"]), test_task(true, false));
        assert_eq!(p(&["test", "--no-blas"]), test_task(false, false));
        assert_eq!(p(&["test", "--quick"]), test_task(true, true));
        assert_eq!(p(&["test", "--quick", "--no-blas"]), test_task(false, true));
        assert_eq!(
            p(&["test", "--no-python", "--no-blas"]),
            Ok(Task::Test(TestArgs {
                blas: false,
                quick: false,
                python: false
            }))
        );
        assert!(p(&["test", "--fast"]).is_err());
        assert!(p(&["test", "extra"]).is_err());
    }

    #[test]
    fn ci_is_the_full_test() {
        assert_eq!(p(&["ci"]), test_task(true, false));
        assert!(p(&["ci", "--quick"]).is_err());
    }

    #[test]
    fn repro_defaults_to_quick() {
        assert_eq!(p(&["repro"]), Ok(Task::Repro(ReproArgs::default())));
        assert_eq!(ReproArgs::default().mode, Mode::Quick);
        assert_eq!(ReproArgs::default().out, None);
    }

    #[test]
    fn repro_flags() {
        let want = ReproArgs {
            mode: Mode::Full,
            only: Some("fig1".to_owned()),
            out: Some("/tmp/r".to_owned()),
            list: false,
            threads: None,
        };
        assert_eq!(
            p(&["repro", "--full", "--only", "fig1", "--out", "/tmp/r"]),
            Ok(Task::Repro(want.clone()))
        );
        assert_eq!(
            p(&["repro", "--out=/tmp/r", "--only=fig1", "--full"]),
            Ok(Task::Repro(want))
        );
        assert_eq!(
            p(&["repro", "--list"]),
            Ok(Task::Repro(ReproArgs {
                list: true,
                ..ReproArgs::default()
            }))
        );
        assert_eq!(
            p(&["repro", "--quick", "--quick"]),
            Ok(Task::Repro(ReproArgs::default()))
        );
    }

    #[test]
    fn repro_threads() {
        let want = |n| {
            Ok(Task::Repro(ReproArgs {
                threads: Some(n),
                ..ReproArgs::default()
            }))
        };
        assert_eq!(p(&["repro", "--threads", "2"]), want(2));
        assert_eq!(p(&["repro", "--threads=1"]), want(1));
        for bad in [
            &["repro", "--threads"][..],
            &["repro", "--threads", "0"],
            &["repro", "--threads", "two"],
            &["repro", "--threads=-1"],
            &["repro", "--threads", "2", "--threads", "3"],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn repro_errors() {
        assert!(p(&["repro", "--quick", "--full"]).is_err());
        assert!(p(&["repro", "--only"]).is_err());
        assert!(p(&["repro", "--only", "--full"]).is_err());
        assert!(p(&["repro", "--only="]).is_err());
        assert!(p(&["repro", "--out"]).is_err());
        assert!(p(&["repro", "--only", "a", "--only", "b"]).is_err());
        assert!(p(&["repro", "--full=yes"]).is_err());
        assert!(p(&["repro", "--no-blas"]).is_err());
        assert!(p(&["repro", "fig1"]).is_err());
    }

    #[test]
    fn bench_forwards_everything() {
        assert_eq!(p(&["bench"]), Ok(Task::Bench(vec![])));
        assert_eq!(
            p(&["bench", "pld", "--save-baseline", "main"]),
            Ok(Task::Bench(vec![
                "pld".to_owned(),
                "--save-baseline".to_owned(),
                "main".to_owned()
            ]))
        );
        assert_eq!(
            p(&["bench", "--", "pld"]),
            Ok(Task::Bench(vec!["pld".to_owned()]))
        );
    }

    #[test]
    fn unknown_task_is_an_error() {
        let err = p(&["deploy"]);
        assert_eq!(err, Err(UsageError("unknown task `deploy`".to_owned())));
        assert!(p(&["--quick"]).is_err());
    }
}
