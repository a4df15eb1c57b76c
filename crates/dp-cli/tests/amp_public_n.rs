//! AMP with a public number of rows (issue 10, §1): under add/remove the true `n` is private,
//! and AMP sizes its release box by `n`. With `--n N` the box, the grid check and every field
//! of the model file other than the released coefficients are fixed by public values: two
//! datasets differing by one added row, fitted with the same seed and the same `--n`, give
//! model files that differ only in the coefficients, the intercept and the digest over them.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

mod inprocess;
use inprocess::dpglm;

/// Rows of the smaller dataset.
const N: usize = 600;

/// Row `i`: three features in [-1, 1] and a ±1 label from a fixed linear rule.
fn row(i: usize) -> String {
    let a = ((i * 37) % 101) as f64 / 50.0 - 1.0;
    let b = ((i * 53) % 97) as f64 / 48.0 - 1.0;
    let c = ((i * 29) % 89) as f64 / 44.0 - 1.0;
    let y = if 0.5 * a - 0.3 * b + 0.2 * c >= 0.0 {
        1
    } else {
        -1
    };
    format!("{a},{b},{c},{y}")
}

/// Writes rows `0..n` as a CSV with a header.
fn write(path: &Path, n: usize) {
    let rows: Vec<String> = (0..n).map(row).collect();
    std::fs::write(path, format!("a,b,c,label\n{}\n", rows.join("\n"))).unwrap();
}

/// Trains AMP on `data` with `extra` flags; returns the exit code, stderr and the model file
/// (`Null` when none was written).
fn train(data: &Path, model: &Path, extra: &[&str]) -> (i32, String, Value) {
    let data = data.display().to_string();
    let out = model.display().to_string();
    let mut args: Vec<&str> = "train --algorithm amp --loss logistic --label label --epsilon 1 \
                               --delta 1e-5 --seed 11 --preprocess none --scale none"
        .split_whitespace()
        .collect();
    args.extend(["--data", &data, "--out", &out]);
    args.extend(extra);
    let (code, _, err) = dpglm(&args);
    let file = std::fs::read_to_string(model)
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap_or(Value::Null);
    (code, err, file)
}

/// The model file without the released values (coefficients, intercept, and the digest, a
/// function of them and the rest).
fn public_part(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    for k in ["coefficients", "intercept", "digest"] {
        assert!(o.remove(k).is_some() || k == "intercept", "no {k} in {o:?}");
    }
    v
}

#[test]
fn amp_with_public_n_writes_nothing_that_depends_on_the_true_n() {
    let dir = TempDir::new().unwrap();
    let (d0, d1) = (dir.path().join("d0.csv"), dir.path().join("d1.csv"));
    write(&d0, N);
    write(&d1, N + 1);
    let public = N.to_string();
    let (c0, e0, m0) = train(&d0, &dir.path().join("m0.json"), &["--n", &public]);
    let (c1, e1, m1) = train(&d1, &dir.path().join("m1.json"), &["--n", &public]);
    assert_eq!((c0, c1), (0, 0), "{e0}\n{e1}");
    // The added row moved the released coefficients ...
    assert_ne!(m0["coefficients"], m1["coefficients"]);
    // ... and nothing else.
    assert_eq!(public_part(m0.clone()), public_part(m1));
    // The report says which n the release box used, and that it was given.
    let notes = m0["privacy"]["notes"].to_string();
    assert!(
        notes.contains(&format!("public number of rows n = {N}")),
        "{notes}"
    );
    assert!(notes.contains("release box"), "{notes}");
    // Without --n a private count is used and the report says so.
    let (c, e, m) = train(&d0, &dir.path().join("m2.json"), &[]);
    assert_eq!(c, 0, "{e}");
    let notes = m["privacy"]["notes"].to_string();
    assert!(notes.contains("a private count"), "{notes}");
    assert!(!notes.contains("treated as public"), "{notes}");
    // A public n so large that the grid of a given σ_out cannot hold the release box
    // (radius ≈ nL/λ ≈ 10¹², against 2^51 steps of 0.15's grid 2^-27, 1.7·10⁷) is refused
    // before the data is read, with the same message whatever the data (the default σ_out
    // would be raised to hold it).
    let huge = ["--n", "1000000000000", "--sigma-out", "0.15"];
    let (c0, e0, m0) = train(&d0, &dir.path().join("m3.json"), &huge);
    let (c1, e1, _) = train(&d1, &dir.path().join("m4.json"), &huge);
    assert_ne!(c0, 0);
    assert_eq!((c0, &e0), (c1, &e1));
    assert!(e0.contains("sigma_out"), "{e0}");
    assert_eq!(m0, Value::Null, "no model file is written");
}
