//! `dpglm train --storage f32`: the features held as `f32` (read block by block, narrowed after
//! the preprocessing). On data `f32` holds exactly, without preprocessing, the model file is
//! the `--storage f64` one byte for byte (NPY `<f4` over two blocks, Parquet); with the default
//! preprocessing (unit-norm rows rounded toward zero) the coefficients are within 1e-5
//! relative; the JSON answer and the statement record the storage; what it does not support is
//! a usage error with no model file.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

mod inprocess;
use inprocess::dpglm;
use tempfile::TempDir;

/// Rows: three features (f32 values) and a ±1 label from a noisy linear rule.
fn rows(n: usize) -> Vec<[f32; 4]> {
    let f = |i: usize, m: usize, p: usize| ((i * m) % p) as f32 / (p as f32 / 2.0) - 1.0 + 1e-3;
    (0..n)
        .map(|i| {
            let (a, b, c) = (f(i, 37, 101), f(i, 53, 97), 3.0 * f(i, 29, 89));
            let y = if (a - b + 0.3 * c > 0.0) != (i % 11 == 0) {
                1.0
            } else {
                -1.0
            };
            [a, b, c, y]
        })
        .collect()
}

/// An NPY file (version 1.0, C order) of `dtype` (`<f4` or `<f8`) with the `n × 4` rows, the
/// label in column 3.
fn write_npy(path: &Path, rows: &[[f32; 4]], dtype: &str) {
    let n = rows.len();
    let mut header = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': ({n}, 4), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend(header.as_bytes());
    for &v in rows.iter().flatten() {
        match dtype {
            "<f4" => bytes.extend(v.to_le_bytes()),
            _ => bytes.extend(f64::from(v).to_le_bytes()),
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// `train` on `data` with `--seed 5 --epsilon 1 --delta 1e-5` and `extra`; returns (code,
/// stdout, stderr).
fn train(data: &Path, out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "train",
        "--data",
        data.to_str().unwrap(),
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    dpglm(&args)
}

fn coefficients(model: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(model).unwrap();
    let c = v["coefficients"].as_array().unwrap();
    c.iter().map(|x| x.as_f64().unwrap()).collect()
}

/// Fits `data` with `--storage f64` and `f32` under `extra`; returns both model files.
fn both(dir: &Path, data: &Path, extra: &[&str]) -> (String, String) {
    let mut models = Vec::new();
    for storage in ["f64", "f32"] {
        let out = dir.join(format!("model-{storage}.json"));
        let mut args = extra.to_vec();
        args.extend(["--storage", storage]);
        let (code, stdout, stderr) = train(data, &out, &args);
        assert_eq!(code, 0, "{extra:?} {storage}: {stdout}{stderr}");
        models.push(std::fs::read_to_string(&out).unwrap());
    }
    (models.remove(0), models.remove(0))
}

/// Without preprocessing, the rows are exactly `f32`: the fit is the `f64` one, model file
/// byte for byte, from an `<f4` file over two blocks of 2^14 rows and from an `<f8` one.
#[test]
fn f32_data_without_preprocessing_gives_the_f64_model() {
    let dir = TempDir::new().unwrap();
    let rows = rows(20_000);
    for dtype in ["<f4", "<f8"] {
        let data = dir.path().join("train.npy");
        write_npy(&data, &rows, dtype);
        for algorithm in ["dp-gd", "noisy-gd", "amp", "objpert"] {
            let extra = [
                "--algorithm",
                algorithm,
                "--label",
                "3",
                "--preprocess",
                "none",
                "--x-bound",
                "4",
                "--clip",
                "1",
                "--steps",
                "8",
            ];
            let extra: Vec<&str> = match algorithm {
                // Each learner takes the flags it uses.
                "dp-gd" => [&extra[..6], &extra[8..]].concat(),
                "noisy-gd" => [&extra[..8], &extra[10..]].concat(),
                _ => extra[..8].to_vec(),
            };
            let (m64, m32) = both(dir.path(), &data, &extra);
            assert_eq!(m64, m32, "{dtype} {algorithm}");
        }
    }
}

/// With the default preprocessing (unit-norm rows and a bias, computed in f64 and rounded
/// toward zero to f32), the coefficients are within 1e-5 relative of the `f64` fit's.
#[test]
fn default_preprocessing_is_within_1e_5() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.npy");
    write_npy(&data, &rows(3_000), "<f4");
    for algorithm in ["dp-gd", "noisy-gd", "amp", "objpert", "output-perturbation"] {
        let (m64, m32) = both(
            dir.path(),
            &data,
            &["--algorithm", algorithm, "--label", "3"],
        );
        let (c64, c32) = (coefficients(&m64), coefficients(&m32));
        let diff: f64 = c64.iter().zip(&c32).map(|(a, b)| (a - b).abs()).sum();
        let size: f64 = c64.iter().map(|a| a.abs()).sum();
        assert!(diff <= 1e-5 * size, "{algorithm}: {c64:?} vs {c32:?}");
    }
}

/// Parquet with `FLOAT` feature columns (and a `DOUBLE` label), whose named columns make
/// min–max scaling the default for classification: estimated ranges are refused with f32
/// storage (naming the flags); `--scale none` fits, the same model as f64 (the `FLOAT` values
/// are stored exactly).
#[test]
fn parquet_with_and_without_scaling() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.parquet");
    let rows = rows(5_000);
    let col = |j: usize| dp_data::ParquetColumn::Float(rows.iter().map(|r| r[j]).collect());
    let y = dp_data::ParquetColumn::Double(rows.iter().map(|r| f64::from(r[3])).collect());
    let file = std::fs::File::create(&data).unwrap();
    dp_data::write_parquet(
        file,
        &data,
        &[("a", col(0)), ("b", col(1)), ("c", col(2)), ("y", y)],
        1_000,
    )
    .unwrap();
    let out = dir.path().join("model.json");
    let common = ["--algorithm", "dp-gd", "--label", "y", "--steps", "5"];
    let mut args = common.to_vec();
    args.extend(["--storage", "f32"]);
    let (code, _, stderr) = train(&data, &out, &args);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--storage f32") && stderr.contains("--scale none"),
        "{stderr}"
    );
    assert!(!out.exists());
    let mut extra = common.to_vec();
    extra.extend(["--scale", "none", "--preprocess", "none", "--clip", "1"]);
    let (m64, m32) = both(dir.path(), &data, &extra);
    assert_eq!(m64, m32);
}

/// The JSON answer and the statement record the storage (a public choice); the summary says
/// it on its first line.
#[test]
fn the_report_records_the_storage() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.npy");
    write_npy(&data, &rows(500), "<f4");
    let out = dir.path().join("model.json");
    let base = ["--algorithm", "dp-gd", "--label", "3", "--steps", "3"];
    let mut args = base.to_vec();
    args.extend(["--storage", "f32", "--json"]);
    let (code, stdout, stderr) = train(&data, &out, &args);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["storage"], "f32");
    assert!(
        v["statement"]
            .as_str()
            .unwrap()
            .contains("feature storage f32")
    );
    let (code, stdout, _) = train(&data, &out, &[&base[..], &["--json"]].concat());
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["storage"], "f64");
    assert!(!v["statement"].as_str().unwrap().contains("feature storage"));
    let (code, stdout, _) = train(&data, &out, &[&base[..], &["--storage", "f32"]].concat());
    assert_eq!(code, 0);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .contains("features stored as f32"),
        "{stdout}"
    );
}

/// Refused with a usage error and no model file: `--stream --storage f32`, a value beyond f32's
/// range (naming the file and `--storage f64`), LIBSVM rows kept sparse, an unknown storage.
#[test]
fn unsupported_uses_are_usage_errors() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.npy");
    let mut rows = rows(100);
    write_npy(&data, &rows, "<f4");
    let out = dir.path().join("model.json");
    let dp_gd = ["--algorithm", "dp-gd", "--label", "3"];
    let stream = [&dp_gd[..], &["--stream", "--storage", "f32"]].concat();
    let (code, _, stderr) = train(&data, &out, &stream);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--stream") && stderr.contains("--storage f32"),
        "{stderr}"
    );
    assert!(!out.exists());

    // 1e39 in an f8 file: f32 cannot hold it.
    let big = dir.path().join("big.npy");
    rows[7][1] = 1.0;
    write_npy(&big, &rows, "<f8");
    let mut bytes = std::fs::read(&big).unwrap();
    let at = bytes.len() - (100 - 7) * 32 + 8;
    bytes[at..at + 8].copy_from_slice(&1e39f64.to_le_bytes());
    std::fs::write(&big, bytes).unwrap();
    let args = [
        &dp_gd[..],
        &["--preprocess", "none", "--clip", "1", "--storage", "f32"],
    ]
    .concat();
    let (code, _, stderr) = train(&big, &out, &args);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("big.npy") && stderr.contains("row 7") && stderr.contains("--storage f64"),
        "{stderr}"
    );
    assert!(!out.exists());
    // The same file fits with f64 storage.
    let (code, _, stderr) = train(&big, &out, &args[..8]);
    assert_eq!(code, 0, "{stderr}");

    // dp-gd keeps LIBSVM rows sparse (f64 entries).
    std::fs::remove_file(&out).unwrap();
    let libsvm = dir.path().join("train.libsvm");
    std::fs::write(&libsvm, "1 1:0.5 3:0.25\n-1 2:0.75\n1 1:0.125\n").unwrap();
    let args = [&dp_gd[..2], &["--n-features", "3", "--storage", "f32"]].concat();
    let (code, _, stderr) = train(&libsvm, &out, &args);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("sparse") && stderr.contains("--storage"),
        "{stderr}"
    );
    assert!(!out.exists());
    let (code, _, stderr) = train(&libsvm, &out, &args[..4]);
    assert_eq!(code, 0, "{stderr}");

    let (code, _, stderr) = train(&data, &out, &["--storage", "f16"]);
    assert_eq!(code, 2, "{stderr}");
}

/// The `f32` model scores like the `f64` one: the training loss (scored on the stored rows)
/// within 1e-5 relative, and the accuracy on a test file (read as `f64`) within one row of
/// 1,000.
#[test]
fn the_f32_model_scores_like_the_f64_one() {
    let dir = TempDir::new().unwrap();
    let (data, test) = (dir.path().join("train.npy"), dir.path().join("test.npy"));
    let all = rows(4_000);
    write_npy(&data, &all[..3_000], "<f4");
    write_npy(&test, &all[3_000..], "<f8");
    let mut scores = Vec::new();
    for storage in ["f64", "f32"] {
        let out = dir.path().join(format!("model-{storage}.json"));
        let args = [
            "--algorithm",
            "dp-gd",
            "--label",
            "3",
            "--test",
            test.to_str().unwrap(),
            "--json",
            "--storage",
            storage,
        ];
        let (code, stdout, stderr) = train(&data, &out, &args);
        assert_eq!(code, 0, "{storage}: {stderr}");
        let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap();
        scores.push((f("train_loss"), f("train_accuracy"), f("test_accuracy")));
    }
    let ((l64, a64, t64), (l32, a32, t32)) = (scores[0], scores[1]);
    assert!((l32 - l64).abs() <= 1e-5 * l64, "train loss {l32} vs {l64}");
    assert!(
        (a32 - a64).abs() <= 1.0 / 3_000.0,
        "train accuracy {a32} vs {a64}"
    );
    assert!(
        (t32 - t64).abs() <= 1.0 / 1_000.0,
        "test accuracy {t32} vs {t64}"
    );
    assert!(t64 > 0.7, "the rule is learned: {t64}");
}
