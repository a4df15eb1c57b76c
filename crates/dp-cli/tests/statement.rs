//! The plain-language privacy statement of `dpglm train`: printed in the human summary and
//! given as `statement` in `train --json`; it names the relation, the (ε, δ) spent and the
//! accountant, what was assumed public (columns, class pair, preprocessing, bounds and the
//! flag that gave them), whether the run is a private release, and the caveats.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod inprocess;

use std::path::{Path, PathBuf};

use inprocess::dpglm;
use serde_json::Value;
use tempfile::TempDir;

/// 400 rows `a,b,label` with labels `no`/`yes` from the sign of `a − b`.
fn write_data(dir: &Path) -> PathBuf {
    let path = dir.join("train.csv");
    let mut text = String::from("a,b,label\n");
    for i in 0..400 {
        let (a, b) = ((i % 17) as f64 / 17.0 - 0.5, (i % 13) as f64 / 13.0 - 0.5);
        let label = if a >= b { "yes" } else { "no" };
        text.push_str(&format!("{a},{b},{label}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// `dpglm train` on `data` with the flags `extra`: stdout (the run must succeed).
fn train(data: &Path, extra: &str) -> String {
    let base = format!(
        "train --data {} --label label --classes no,yes --epsilon 1 --delta 1e-5",
        data.display()
    );
    let args: Vec<&str> = base
        .split_whitespace()
        .chain(extra.split_whitespace())
        .collect();
    let (code, out, err) = dpglm(&args);
    assert_eq!(code, 0, "{extra}: {err}");
    out
}

#[test]
fn the_statement_is_printed_and_in_the_json() {
    let dir = TempDir::new().unwrap();
    let data = write_data(dir.path());
    let human = train(&data, "--algorithm dp-gd --seed 3 --scale minmax");
    let v: Value = serde_json::from_str(&train(
        &data,
        "--algorithm dp-gd --seed 3 --scale minmax --json",
    ))
    .unwrap();
    let statement = v["statement"].as_str().unwrap();
    // The same text in both outputs.
    assert!(human.contains(statement), "{human}\n---\n{statement}");
    let epsilon = v["epsilon"].as_f64().unwrap();
    assert!(epsilon > 0.0 && epsilon <= 1.0);
    for expected in [
        "Privacy statement:",
        // DP-GD's default relation.
        "under replace-one neighbouring",
        "the number of rows is not hidden",
        // ε rounded up to 6 decimals.
        &format!(
            "(epsilon, delta) = ({:.6}, 1e-5)",
            (epsilon * 1e6).ceil() / 1e6
        ),
        "exact accountant",
        // --seed: not a private release.
        "Private release: NO",
        "seed 3",
        "the feature columns and their order (a, b) and the label column label",
        "the class pair (negative no, positive yes)",
        // Logistic on a CSV with --scale minmax (the file is too small for the default to
        // scale): the features are min-max scaled over privately estimated ranges
        // (paid from epsilon), then a bias feature is appended.
        "the ranges of the feature scaling (minmax) for 2 feature(s): private quartiles",
        "the preprocessing (a bias feature 1 appended)",
        "the bound clip = 1, public (the learner's default",
        "group privacy",
    ] {
        assert!(statement.contains(expected), "{expected}: {statement}");
    }
    assert!(!statement.contains("NOT ACCOUNTED"), "{statement}");
}

#[test]
fn the_statement_follows_the_relation_the_source_and_the_tuning() {
    let dir = TempDir::new().unwrap();
    let data = write_data(dir.path());
    // DP-SGD under add/remove, secure noise, a clip given by flag, tuning not accounted.
    let out = train(
        &data,
        "--algorithm dp-sgd --neighbouring add-remove --clip 0.5 --tune unaccounted \
         --learning-rates 0.1,1",
    );
    let statement = &out[out.find("Privacy statement:").unwrap()..];
    for expected in [
        "under add/remove neighbouring",
        "hides whether a given row was in the training data",
        "Private release: yes",
        "is a private count (discrete Laplace), estimated for epsilon",
        "the bound clip = 0.5, public (given by --clip)",
        "NOT ACCOUNTED",
    ] {
        assert!(statement.contains(expected), "{expected}: {statement}");
    }
    assert!(!statement.contains("replace-one"), "{statement}");
    let caveats = statement.find("Caveats:").unwrap();
    assert!(
        statement.find("NOT ACCOUNTED").unwrap() > caveats,
        "{statement}"
    );
}
