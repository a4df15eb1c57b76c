//! `--threads N`: a seeded fit gives the same model on 1 and 3 threads; `--threads 0` is a
//! usage error.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

mod inprocess;
use inprocess::dpglm;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The model's coefficients as bits, after training `algorithm` on `threads` threads.
fn fit(dir: &Path, data: &Path, algorithm: &str, threads: &str) -> Vec<u64> {
    let model = dir.join(format!("{algorithm}-{threads}.json"));
    let (code, _, err) = dpglm(&[
        "train",
        "--data",
        s(data),
        "--label",
        "label",
        "--algorithm",
        algorithm,
        "--scale",
        "none",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "5",
        "--threads",
        threads,
        "--out",
        s(&model),
    ]);
    assert_eq!(code, 0, "{err}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    m["coefficients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap().to_bits())
        .collect()
}

#[test]
fn seeded_fits_do_not_depend_on_the_thread_count() {
    let dir = TempDir::new().unwrap();
    // 20,000 rows: three leaves of the full-batch sums' fixed tree.
    let data = dir.path().join("train.csv");
    let mut text = String::from("a,b,c,label\n");
    for i in 0..20_000usize {
        let a = ((i * 37) % 101) as f64 / 101.0 - 0.5;
        let b = ((i * 53) % 97) as f64 / 97.0 - 0.5;
        let c = ((i * 71) % 89) as f64 / 89.0 - 0.5;
        let y = if 2.0 * a - b + 0.3 * c > 0.0 { 1 } else { -1 };
        text.push_str(&format!("{a},{b},{c},{y}\n"));
    }
    std::fs::write(&data, text).unwrap();
    for algorithm in ["dp-gd", "objpert", "amp"] {
        assert_eq!(
            fit(dir.path(), &data, algorithm, "1"),
            fit(dir.path(), &data, algorithm, "3"),
            "{algorithm}"
        );
    }
    let (code, _, err) = dpglm(&["train", "--threads", "0", "--data", s(&data)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--threads"), "{err}");
}
