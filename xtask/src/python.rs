//! The Python package step of `cargo xtask test`: a virtual environment under `target/`,
//! the `dpglm` wheel built with maturin and installed into it, and its pytest suite.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Failure, Result, Totals, root, run, run_tests, target_dir};

/// What pip installs into the environment (from the registry; once, then reused):
/// scikit-learn for its estimator checks, pandas for the DataFrame tests, scipy for the
/// sparse-input tests, Google's dp-accounting to price converted model events
/// (`to_dp_accounting`) by an implementation we did not write.
const PIP_PACKAGES: [&str; 7] = [
    "maturin>=1.9.4,<2",
    "numpy",
    "pytest",
    "scikit-learn>=1.6,<2",
    "pandas>=1.5,<4",
    "scipy>=1.8",
    "dp-accounting==0.6.0",
];

/// How to get a Python that can make virtual environments, for messages.
const INSTALL_HINT: &str = "Install Python 3.9 or newer with venv and pip, e.g. \
     `sudo apt-get install python3 python3-venv python3-pip` on Debian/Ubuntu, then run this \
     command again (`cargo xtask test --no-python` skips the Python package).";

/// The interpreter inside the virtual environment at `venv`.
fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// Creates the virtual environment with the system `python3` unless it exists.
fn ensure_venv(venv: &Path) -> Result<PathBuf> {
    const STEP: &str = "python-venv";
    let python = venv_python(venv);
    if python.exists() {
        return Ok(python);
    }
    let found = Command::new("python3")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        return Err(Failure::new(
            STEP,
            format!("`python3` was not found on PATH. {INSTALL_HINT}"),
        ));
    }
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "venv"]).arg(venv);
    run(STEP, cmd).map_err(|f| {
        Failure::new(
            STEP,
            format!(
                "{} (a missing `ensurepip` means the venv module is not installed). \
                 {INSTALL_HINT}",
                f.detail
            ),
        )
    })?;
    Ok(python)
}

/// `python -m <args>` in the environment, run at the workspace root.
fn python_m(python: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg("-m").args(args).current_dir(root());
    cmd
}

/// Builds the wheel into a fresh `dir` and returns its path.
fn build_wheel(python: &Path, dir: &Path) -> Result<PathBuf> {
    const STEP: &str = "python-build";
    // A stale wheel must not be the one installed.
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| Failure::new(STEP, format!("cannot clear {}: {e}", dir.display())))?;
    }
    // The release profile, as users get it (the test profile would build a test harness).
    let mut cmd = python_m(
        python,
        &[
            "maturin",
            "build",
            "--release",
            "--manifest-path",
            "crates/dp-py/Cargo.toml",
            "--interpreter",
        ],
    );
    cmd.arg(python).arg("--out").arg(dir);
    run(STEP, cmd)?;
    let wheel = std::fs::read_dir(dir)
        .map_err(|e| Failure::new(STEP, format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"));
    wheel.ok_or_else(|| Failure::new(STEP, format!("maturin left no wheel in {}", dir.display())))
}

/// Adds the counts of pytest's summary line (`3 passed, 1 skipped in 0.52s`, possibly
/// framed by `=`) to `totals`: passed, failed (with errors) and skipped.
pub(crate) fn add_pytest_line(totals: &mut Totals, line: &str) {
    let line = line.trim().trim_matches('=').trim();
    let Some((counts, time)) = line.rsplit_once(" in ") else {
        return;
    };
    if !time.trim_end().ends_with('s') {
        return;
    }
    for part in counts.split(", ") {
        let mut words = part.split_whitespace();
        if let (Some(n), Some(what), None) = (words.next(), words.next(), words.next())
            && let Ok(n) = n.parse::<u64>()
        {
            match what {
                "passed" => totals.passed += n,
                "failed" | "error" | "errors" => totals.failed += n,
                "skipped" => totals.ignored += n,
                _ => {}
            }
        }
    }
}

/// The Python step: environment, wheel, install, pytest.
pub(crate) fn test(totals: &mut Totals) -> Result<()> {
    let target = target_dir();
    let python = ensure_venv(&target.join("python-venv"))?;
    let mut pip = vec!["pip", "install", "--disable-pip-version-check", "--quiet"];
    pip.extend(PIP_PACKAGES);
    run("python-deps", python_m(&python, &pip))?;
    let wheel = build_wheel(&python, &target.join("wheels-xtask"))?;
    let mut install = python_m(
        &python,
        &[
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            "--force-reinstall",
            "--no-deps",
        ],
    );
    install.arg(&wheel);
    run("python-install", install)?;
    let pytest = python_m(
        &python,
        &[
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "crates/dp-py/tests",
        ],
    );
    run_tests("pytest", pytest, totals, add_pytest_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pytest_summaries() {
        let mut t = Totals::default();
        add_pytest_line(&mut t, "30 passed, 2 skipped in 4.10s");
        add_pytest_line(&mut t, "===== 1 failed, 5 passed, 1 error in 0.52s =====");
        add_pytest_line(&mut t, "tests/test_accounting.py ....F..");
        add_pytest_line(&mut t, "the answer was found in 3 steps");
        assert_eq!(
            t,
            Totals {
                passed: 35,
                failed: 2,
                ignored: 2
            }
        );
    }
}
