//! A parallel run gives the serial run's numbers: the experiments, their trials (seeded by
//! index, averaged in seed order) and the gradients (fixed summation tree) do not depend on
//! the number of threads.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use dp_bench::{Mode, ProgressMode, RunOptions, Status, run_all};

/// Every CSV file under `dir` (one level of experiment directories): path relative to `dir`
/// and contents, sorted by path.
fn csv_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for exp in std::fs::read_dir(dir).unwrap() {
        let exp = exp.unwrap().path();
        if !exp.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&exp).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "csv") {
                let rel = file.strip_prefix(dir).unwrap().to_owned();
                out.push((rel, std::fs::read_to_string(&file).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Runs the experiments `only` in quick mode on a pool of `threads` threads.
fn run_on(threads: usize, only: &[&str]) -> Vec<(PathBuf, String)> {
    let out = tempfile::TempDir::new().unwrap();
    let options = RunOptions {
        mode: Mode::Quick,
        only: only.iter().map(|s| (*s).to_owned()).collect(),
        out_dir: out.path().to_owned(),
        blas: None,
        data_dir: None,
        progress: ProgressMode::Silent,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let summary = pool.install(|| run_all(&options)).unwrap();
    assert!(
        summary.outcomes.iter().all(|o| o.status == Status::Ok),
        "{:?}",
        summary.outcomes
    );
    csv_files(out.path())
}

/// Three randomised experiments (trials averaged by `mean_over`, flat (ε, seed) tasks, noisy
/// gradients), run side by side: byte-identical CSVs on 1 and 3 threads.
#[test]
fn parallel_run_writes_the_serial_numbers() {
    let only = [
        "002-excess-risk",
        "003-grid-search-vs-oracle",
        "004-error-vs-t",
    ];
    let serial = run_on(1, &only);
    assert!(serial.len() >= 4, "{serial:?}");
    let parallel = run_on(3, &only);
    assert_eq!(serial.len(), parallel.len());
    for ((p, a), (q, b)) in serial.iter().zip(&parallel) {
        assert_eq!(p, q);
        assert_eq!(a, b, "{} differs", p.display());
    }
}
