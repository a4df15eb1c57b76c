//! `dpglm train` and `predict` on inputs that used to end a run late or damage a path (issue
//! 32, §8): one record with a huge label (the non-private diagnostics overflowed and stopped
//! the release), output paths that are not regular files (renamed over), a table with no
//! feature column (fitted, budget spent, then "cannot save the model"), and a Parquet file
//! named `.csv` (reported as "not valid UTF-8").

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod inprocess;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use inprocess::dpglm;
use serde_json::Value;
use tempfile::TempDir;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The label of the one huge record: finite, but its squared residual is past `f64::MAX`.
const HUGE: f64 = 1e200;

/// `n` regression rows `a,b,y` on a fixed grid (|a|, |b| ≤ 1, y = a − b/2), the row `huge`
/// (if any) with the label [`HUGE`].
fn regression_csv(n: usize, huge: Option<usize>) -> String {
    let mut text = String::from("a,b,y\n");
    for i in 0..n {
        let (a, b) = ((i % 13) as f64 / 6.0 - 1.0, (i % 7) as f64 / 3.0 - 1.0);
        let y = if huge == Some(i) { HUGE } else { a - b / 2.0 };
        text.push_str(&format!("{a},{b},{y}\n"));
    }
    text
}

/// The arguments of `train` on `data` (label `y`, `--loss squared` unless `extra` gives a
/// loss, ε = 1, δ = 1e-5, seed 3) with `extra`.
fn train_args<'a>(data: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "train",
        "--data",
        s(data),
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ];
    args.extend(["--seed", "3"]);
    if data.extension().is_none_or(|e| e != "libsvm") {
        args.extend(["--label", "y"]);
    }
    if !extra.contains(&"--loss") {
        args.extend(["--loss", "squared"]);
    }
    args.extend(extra);
    args
}

/// `train --json` ([`train_args`]).
fn train(data: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = train_args(data, extra);
    args.push("--json");
    dpglm(&args)
}

/// `predict --model MODEL --data DATA --output OUTPUT`.
fn predict(model: &Path, data: &Path, output: &Path) -> (i32, String, String) {
    dpglm(&[
        "predict",
        "--model",
        s(model),
        "--data",
        s(data),
        "--output",
        s(output),
    ])
}

/// Each regression learner with every bound public (none estimated from the data).
const PUBLIC: &[&[&str]] = &[
    &["--algorithm", "ssp", "--x-bound", "2", "--y-bound", "2"],
    &["--algorithm", "dp-gd", "--clip", "1"],
    &["--algorithm", "amp", "--x-bound", "2", "--clip", "1"],
    &[
        "--algorithm",
        "output-perturbation",
        "--x-bound",
        "2",
        "--y-bound",
        "2",
    ],
    &[
        "--algorithm",
        "noisy-gd",
        "--x-bound",
        "2",
        "--y-bound",
        "2",
    ],
    &["--algorithm", "dp-ssgd", "--clip", "1"],
    &["--algorithm", "dp-ambssgd", "--x-bound", "2"],
    &["--algorithm", "dp-gd", "--loss", "huber", "--clip", "1"],
    &["--algorithm", "amp", "--loss", "huber", "--x-bound", "2"],
];

/// Checks a run that had the huge record: exit 0, the model written, the training loss
/// reported as overflowed (`f64::MAX`, named in `overflowed`; the Huber loss, linear in the
/// residual, stays finite), and nothing about the row in the output.
fn released_with_overflow(case: &str, (code, out, err): (i32, String, String), model: &Path) {
    assert_eq!(code, 0, "{case}: {err}");
    assert!(!err.contains("row"), "{case}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let bounds = v["bounds"].as_array().unwrap();
    assert!(
        bounds.iter().all(|b| b["source"] != "estimated"),
        "{case}: every bound public: {bounds:?}"
    );
    let loss = v["train_loss"].as_f64().unwrap();
    if case.contains("huber") {
        // h·|r| − h²/2 with r ≈ 1e200 over 1200 rows.
        assert!((1e196..1e198).contains(&loss), "{case}: {loss}");
        assert_eq!(v["overflowed"], serde_json::json!([]), "{case}");
    } else {
        assert_eq!(loss, f64::MAX, "{case}: {out}");
        assert_eq!(v["overflowed"], serde_json::json!(["train_loss"]), "{case}");
    }
    assert!(
        v["not_private"]
            .as_array()
            .unwrap()
            .contains(&Value::from("overflowed")),
        "{case}"
    );
    let file = std::fs::read_to_string(model).unwrap();
    let saved: Value = serde_json::from_str(&file).unwrap();
    assert!(
        saved["coefficients"].as_array().unwrap().len() >= 2,
        "{case}"
    );
    for diagnostic in ["train_loss", "overflowed", "1e200"] {
        assert!(
            !file.contains(diagnostic),
            "{case}: {diagnostic} in the model"
        );
    }
    std::fs::remove_file(model).unwrap();
}

#[test]
fn one_huge_label_does_not_stop_a_release() {
    let dir = TempDir::new().unwrap();
    let (data, clean) = (dir.path().join("huge.csv"), dir.path().join("clean.csv"));
    // Row 417 of 1200 (dp-ambssgd's batches need a few thousand-row-scale n).
    std::fs::write(&data, regression_csv(1200, Some(417))).unwrap();
    std::fs::write(&clean, regression_csv(1200, None)).unwrap();
    let model = dir.path().join("m.json");
    for flags in PUBLIC {
        let case = flags.join(" ");
        let mut args = flags.to_vec();
        args.extend(["--out", s(&model)]);
        // With the record: released all the same.
        released_with_overflow(&case, train(&data, &args), &model);
        // Without it: a finite loss, nothing overflowed.
        let (code, out, err) = train(&clean, &args);
        assert_eq!(code, 0, "{case}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let loss = v["train_loss"].as_f64().unwrap();
        assert!(loss < 1e3, "{case}: {loss}");
        assert_eq!(v["overflowed"], serde_json::json!([]), "{case}");
        std::fs::remove_file(&model).unwrap();
    }
    // The human summary says so, without the row.
    let ssp = ["--algorithm", "ssp", "--x-bound", "2", "--y-bound", "2"];
    let (code, text, err) = dpglm(&train_args(&data, &ssp));
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("train loss overflowed"), "{text}");
    assert!(!text.contains("417"), "{text}");
}

#[test]
fn a_huge_label_overflows_only_its_diagnostic_on_every_route() {
    let dir = TempDir::new().unwrap();
    let (data, clean) = (dir.path().join("huge.csv"), dir.path().join("clean.csv"));
    std::fs::write(&data, regression_csv(300, Some(5))).unwrap();
    std::fs::write(&clean, regression_csv(300, None)).unwrap();
    let model = dir.path().join("m.json");
    let ssp = ["--algorithm", "ssp", "--x-bound", "2", "--y-bound", "2"];
    // Streamed in blocks (ssp and dp-gd).
    for flags in [&ssp[..], &["--algorithm", "dp-gd", "--clip", "1"]] {
        let mut args = flags.to_vec();
        args.extend(["--stream", "--out", s(&model)]);
        released_with_overflow("--stream", train(&data, &args), &model);
    }
    // Sparse LIBSVM rows.
    let libsvm = dir.path().join("huge.libsvm");
    let rows: String = (0..300)
        .map(|i| {
            let a = (i % 13) as f64 / 6.0 - 1.0;
            let y = if i == 5 { HUGE } else { a };
            format!("{y} 1:{a}\n")
        })
        .collect();
    std::fs::write(&libsvm, rows).unwrap();
    let mut args = ssp.to_vec();
    args.extend(["--n-features", "1", "--out", s(&model)]);
    released_with_overflow("libsvm", train(&libsvm, &args), &model);
    // A huge label in --test: the model is released, the test MSE overflowed.
    let mut args = ssp.to_vec();
    args.extend(["--test", s(&data), "--out", s(&model)]);
    let (code, out, err) = train(&clean, &args);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("row"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["test_mse"].as_f64(), Some(f64::MAX), "{out}");
    assert_eq!(v["overflowed"], serde_json::json!(["test_mse"]));
    assert!(v["train_loss"].as_f64().unwrap() < 1e3);
    assert!(model.is_file());
    // `evaluate` answers with the scores themselves: it still refuses, naming the row.
    let (code, _, err) = dpglm(&["evaluate", "--model", s(&model), "--data", s(&data)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("row 5 (0-based)"), "{err}");
    assert!(!err.contains("1e200"), "{err}");
}

/// The paths that must never be replaced, made in `dir`, with what the refusal calls them: a
/// FIFO, a symbolic link to a regular file (`target.json`, holding `kept`) and a dangling one.
fn special_paths(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("out.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let target = dir.join("target.json");
    std::fs::write(&target, "kept").unwrap();
    let link = dir.join("out-link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = dir.join("dangling.json");
    std::os::unix::fs::symlink(dir.join("nowhere.json"), &dangling).unwrap();
    vec![
        (fifo, "is a FIFO (named pipe), not a regular file"),
        (link, "is a symbolic link to"),
        (dangling, "is a symbolic link to"),
    ]
}

/// Checks that `special_paths` are as they were made and nothing else appeared in `dir`.
fn unchanged(dir: &Path, names: &[&str]) {
    let fifo = std::fs::symlink_metadata(dir.join("out.fifo")).unwrap();
    assert!(fifo.file_type().is_fifo());
    for link in ["out-link.json", "dangling.json"] {
        let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("target.json")).unwrap(),
        "kept"
    );
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    let mut expected: Vec<String> = ["dangling.json", "out-link.json", "out.fifo", "target.json"]
        .iter()
        .chain(names)
        .map(|n| n.to_string())
        .collect();
    expected.sort();
    assert_eq!(found, expected, "no temporary file left, nothing replaced");
}

#[test]
fn outputs_that_are_not_regular_files_are_refused_before_reading() {
    let dir = TempDir::new().unwrap();
    let special = special_paths(dir.path());
    let data = dir.path().join("train.csv");
    std::fs::write(&data, regression_csv(200, None)).unwrap();
    let missing = dir.path().join("missing.csv");
    let ssp = ["--algorithm", "ssp", "--x-bound", "2", "--y-bound", "2"];
    for (path, what) in &special {
        // Refused before the data is read: a missing --data file is not what is reported.
        for input in [&missing, &data] {
            let mut args = ssp.to_vec();
            args.extend(["--out", s(path)]);
            let (code, out, err) = train(input, &args);
            assert_eq!(code, 2, "{path:?}: {out} {err}");
            assert!(
                err.contains(&format!("invalid value for --out: {}", path.display())),
                "{err}"
            );
            assert!(err.contains(what), "{err}");
            assert!(!err.contains("missing.csv"), "{err}");
        }
    }
    unchanged(dir.path(), &["train.csv"]);
    // A model to predict with, then the same for `predict --output` (before the model is read).
    let model = dir.path().join("m.json");
    let mut args = ssp.to_vec();
    args.extend(["--out", s(&model)]);
    assert_eq!(train(&data, &args).0, 0);
    for (path, what) in &special {
        for m in [&missing, &model] {
            let (code, _, err) = predict(m, &data, path);
            assert_eq!(code, 2, "{err}");
            assert!(
                err.contains(&format!("invalid value for --output: {}", path.display())),
                "{err}"
            );
            assert!(err.contains(what), "{err}");
        }
    }
    unchanged(dir.path(), &["train.csv", "m.json"]);
    // A regular file is still replaced, and a new path written.
    let preds = dir.path().join("preds.csv");
    std::fs::write(&preds, "old").unwrap();
    for _ in 0..2 {
        let (code, _, err) = predict(&model, &data, &preds);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(&preds).unwrap();
        assert!(text.starts_with("prediction\n"), "{text}");
        assert_eq!(text.lines().count(), 201);
    }
}

#[test]
fn a_table_without_feature_columns_is_refused_before_fitting() {
    let dir = TempDir::new().unwrap();
    let only_label = dir.path().join("label.csv");
    let rows: String = (0..200).map(|i| format!("{}\n", i % 2)).collect();
    std::fs::write(&only_label, format!("y\n{rows}")).unwrap();
    let two = dir.path().join("two.csv");
    std::fs::write(&two, regression_csv(200, None)).unwrap();
    let model = dir.path().join("m.json");
    let needle = "has no feature column besides the label `y`";
    let classify = ["--loss", "logistic", "--scale", "none"];
    let cases: Vec<(&Path, Vec<&str>)> = vec![
        (
            &only_label,
            vec!["--algorithm", "ssp", "--x-bound", "1", "--y-bound", "1"],
        ),
        (&only_label, vec!["--algorithm", "ssp"]),
        (&only_label, vec!["--algorithm", "dp-gd", "--clip", "1"]),
        (
            &only_label,
            [&classify[..], &["--algorithm", "amp"]].concat(),
        ),
        (
            &only_label,
            [&classify[..], &["--algorithm", "dp-sgd"]].concat(),
        ),
        (
            &only_label,
            [&classify[..], &["--algorithm", "objpert"]].concat(),
        ),
        (&only_label, vec!["--algorithm", "noisy-gd"]),
        (&only_label, vec!["--algorithm", "output-perturbation"]),
        (&only_label, vec!["--algorithm", "dp-ssgd"]),
        (&only_label, vec!["--algorithm", "dp-ambssgd"]),
        (&only_label, vec!["--algorithm", "jl-noisy-gd"]),
        (&only_label, vec!["--algorithm", "ssp", "--storage", "f32"]),
        (
            &only_label,
            vec![
                "--algorithm",
                "ssp",
                "--x-bound",
                "1",
                "--y-bound",
                "1",
                "--stream",
            ],
        ),
        (&two, vec!["--algorithm", "ssp", "--drop", "a,b"]),
    ];
    for (data, flags) in cases {
        let mut args = flags.clone();
        args.extend(["--out", s(&model)]);
        let (code, out, err) = train(data, &args);
        assert_eq!(code, 2, "{flags:?}: {out} {err}");
        assert!(err.contains(needle), "{flags:?}: {err}");
        assert!(err.contains(&format!("--data {}", data.display())), "{err}");
        assert!(!model.exists(), "{flags:?}");
    }
    // An NPY matrix whose one column is the label (`--label 0`), in memory and streamed.
    let npy = dir.path().join("label.npy");
    let mut header = "{'descr': '<f8', 'fortran_order': False, 'shape': (200, 1), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend(header.as_bytes());
    for i in 0..200 {
        bytes.extend(f64::from(i % 3).to_le_bytes());
    }
    std::fs::write(&npy, bytes).unwrap();
    for extra in [&[][..], &["--stream"]] {
        let mut args = vec!["--algorithm", "ssp", "--x-bound", "1", "--y-bound", "1"];
        args.extend(extra);
        args.extend(["--out", s(&model)]);
        let mut argv = vec![
            "train",
            "--data",
            s(&npy),
            "--label",
            "0",
            "--loss",
            "squared",
        ];
        argv.extend(["--epsilon", "1", "--delta", "1e-5"]);
        argv.extend(args);
        let (code, _, err) = dpglm(&argv);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(
            err.contains(&format!(
                "--data {} has no feature column besides the label",
                npy.display()
            )),
            "{err}"
        );
        assert!(!model.exists());
    }
}

#[test]
fn a_parquet_file_named_csv_is_named_as_such() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.csv");
    let a: Vec<f64> = (0..100).map(|i| f64::from(i % 7) / 7.0).collect();
    let y: Vec<f64> = a.iter().map(|v| v / 2.0).collect();
    let columns = [
        ("a", dp_data::ParquetColumn::Double(a)),
        ("y", dp_data::ParquetColumn::Double(y)),
    ];
    dp_data::write_parquet(std::fs::File::create(&data).unwrap(), &data, &columns, 50).unwrap();
    let ssp = ["--algorithm", "ssp", "--x-bound", "1", "--y-bound", "1"];
    let (code, _, err) = train(&data, &ssp);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{} looks like a Parquet file (it starts with the magic bytes PAR1), not text: \
             name it .parquet or pass --format parquet",
            data.display()
        )),
        "{err}"
    );
    assert!(!err.contains("UTF-8"), "{err}");
    // The fix it names works.
    let mut args = ssp.to_vec();
    args.extend(["--format", "parquet"]);
    let (code, _, err) = train(&data, &args);
    assert_eq!(code, 0, "{err}");
}
