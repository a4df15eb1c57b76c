//! `dpglm train` on LIBSVM files keeps the rows sparse for dp-gd, dp-sgd (tuned or not),
//! noisy-gd, objpert, amp (the default for classification, either solver), output-perturbation
//! and ssp
//! (issue 12 §2): the model file equals the one trained on the same rows written as CSV (read dense) with the same seed
//! and flags, byte for byte but for the input's description (format, column names, digest) —
//! coefficients, intercept, the bounds and their estimates, the privacy spent — and so do the
//! scores, with no densify warning; the other algorithms and feature scalings densify with a
//! warning that says why.
//!
//! The values are multiples of 1/8, so the dense row norms are exact in any order (builds with
//! BLAS compute them with `ddot`, see `dp_glm::sparse`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

mod inprocess;
use inprocess::dpglm;

const D: usize = 12;

/// Deterministic sparse rows: about a third of `D` features present, multiples of 1/8 in
/// `[−2, 2)`; rows 5, 18, 31, … empty; a ±1 label from a noisy linear rule, or the rule's
/// value (a multiple of 1/64) with `real`.
fn rows(n: usize, real: bool) -> Vec<(f64, Vec<(usize, f64)>)> {
    (0..n)
        .map(|i| {
            let entries: Vec<(usize, f64)> = (0..D)
                .filter(|j| i % 13 != 5 && (i * 7 + j * 11) % 3 == 0)
                .map(|j| (j, ((i * 31 + j * 17) % 32) as f64 / 8.0 - 2.0))
                .collect();
            let rule: f64 = entries
                .iter()
                .map(|&(j, v)| v * (j as f64 - 5.5) / 8.0)
                .sum();
            let y = match (real, i % 9 == 0) {
                (true, _) => rule,
                (false, flip) if (rule > 0.0) != flip => 1.0,
                (false, _) => -1.0,
            };
            (y, entries)
        })
        .collect()
}

/// The same rows as a LIBSVM file and as a CSV file.
type Files = (PathBuf, PathBuf);

/// The rows as a LIBSVM file and as a CSV file (columns `f1…fD` and `y`) under `dir`.
fn write(dir: &Path, name: &str, n: usize, real: bool) -> Files {
    let (mut svm, mut csv) = (String::new(), String::new());
    let header: Vec<String> = (1..=D).map(|j| format!("f{j}")).collect();
    csv.push_str(&format!("{},y\n", header.join(",")));
    for (y, entries) in rows(n, real) {
        svm.push_str(&y.to_string());
        let mut dense = [0.0; D];
        for &(j, v) in &entries {
            svm.push_str(&format!(" {}:{v}", j + 1));
            dense[j] = v;
        }
        svm.push('\n');
        let cells: Vec<String> = dense.iter().map(f64::to_string).collect();
        csv.push_str(&format!("{},{y}\n", cells.join(",")));
    }
    let (s, c) = (
        dir.join(format!("{name}.svm")),
        dir.join(format!("{name}.csv")),
    );
    std::fs::write(&s, svm).unwrap();
    std::fs::write(&c, csv).unwrap();
    (s, c)
}

/// `dpglm train` with `args`, which must succeed: the JSON answer, the model file written to
/// `out`, and stderr.
fn train(args: &[&str], out: &Path) -> (Value, Value, String) {
    let mut all = vec!["train", "--json", "--out", out.to_str().unwrap()];
    all.extend(args);
    let (code, stdout, stderr) = dpglm(&all);
    assert_eq!(code, 0, "{all:?}: {stderr}");
    let model = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (serde_json::from_str(&stdout).unwrap(), model, stderr)
}

/// `v` without the entries that name how the file was read (format, column names) or time it.
fn fitted(mut v: Value, keys: &[&str]) -> Value {
    for k in keys {
        v.as_object_mut().unwrap().remove(*k);
    }
    v
}

/// The data sets of a test, each as a LIBSVM file and a CSV file.
#[derive(Clone, Copy)]
enum Set {
    /// 300 rows with ±1 labels.
    Class,
    /// `test_rows` rows with ±1 labels ([`sets`]).
    ClassTest,
    /// 300 rows with real labels.
    Real,
    /// `test_rows` rows with real labels.
    RealTest,
}

/// A case: the flags (split at spaces), the training set and the test set.
type Case = (&'static str, Set, Set);

/// The files of every [`Set`] under `dir`, `test_rows` rows in each test set.
fn sets(dir: &Path, test_rows: usize) -> impl Fn(Set) -> Files {
    let class = write(dir, "class", 300, false);
    let class_test = write(dir, "class-test", test_rows, false);
    let real = write(dir, "real", 300, true);
    let real_test = write(dir, "real-test", test_rows, true);
    move |set| match set {
        Set::Class => class.clone(),
        Set::ClassTest => class_test.clone(),
        Set::Real => real.clone(),
        Set::RealTest => real_test.clone(),
    }
}

/// Trains with `base` (the algorithm and its flags) on the LIBSVM file of `files`, `test` the
/// LIBSVM test file, and on the same rows written as CSV (read dense): asserts that the rows
/// stayed sparse (no densify warning), that bounds were estimated exactly for raw rows
/// (`--preprocess none`), that the model files are equal but for the input's description, and
/// the answers but for the time taken, the scores (to rounding) and the public columns.
/// Returns the sparse fit's answer.
fn same_as_dense(dir: &Path, base: &[&str], files: &Files, test: &Files) -> Value {
    let d = D.to_string();
    let ((svm, csv), (svm_test, csv_test)) = (files, test);
    let case = format!("{base:?}");
    let mut sparse = base.to_vec();
    sparse.extend(["--data", svm.to_str().unwrap(), "--n-features", &d]);
    sparse.extend(["--test", svm_test.to_str().unwrap()]);
    let mut dense = base.to_vec();
    dense.extend(["--data", csv.to_str().unwrap(), "--label", "y"]);
    dense.extend(["--scale", "none", "--test", csv_test.to_str().unwrap()]);
    let (s_json, s_model, s_err) = train(&sparse, &dir.join("s.json"));
    let (d_json, d_model, _) = train(&dense, &dir.join("d.json"));
    assert!(!s_err.contains("densified"), "{case}: {s_err}");
    assert_eq!(s_json["warnings"], serde_json::json!([]), "{case}");
    assert!(
        s_model["coefficients"].as_array().unwrap().len() >= D,
        "{case}"
    );
    // Raw rows: every bound estimated privately (the ledger's entries compared below).
    let estimated = s_json["bounds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["source"] == "estimated")
        .count();
    let raw = base.contains(&"none");
    assert_eq!(estimated > 0, raw, "{case}: {}", s_json["bounds"]);
    let model = |v: Value| fitted(v, &["input", "feature_names", "digest"]);
    assert_eq!(model(s_model), model(d_model), "{case}");
    // The dense scores are `x.dot(w)`, BLAS `dgemv` in builds with BLAS (another order of
    // the same products): the mean losses to rounding, the rest below as it is.
    for key in ["train_loss", "test_mse"] {
        let (s, d) = (&s_json[key], &d_json[key]);
        assert_eq!(s.is_null(), d.is_null(), "{case}: {key}");
        if let (Some(s), Some(d)) = (s.as_f64(), d.as_f64()) {
            assert!((s - d).abs() <= 1e-12 * d.abs(), "{case}: {key} {s} {d}");
        }
    }
    // The whole answer but the time taken, the model path and the public columns (by
    // position, by name).
    let answer = |v: &Value| {
        let statement: Vec<&str> = v["statement"].as_str().unwrap().lines().collect();
        let columns = |l: &&str| l.contains("number of features") || l.contains("columns");
        let kept: Vec<&str> = statement.iter().copied().filter(|l| !columns(l)).collect();
        assert_eq!(kept.len() + 1, statement.len(), "{case}: {statement:?}");
        let scored = ["train_loss", "test_mse"];
        let other = ["seconds", "statement", "model"];
        (
            kept.join("\n"),
            fitted(v.clone(), &[&scored[..], &other].concat()),
        )
    };
    assert_eq!(answer(&s_json), answer(&d_json), "{case}");
    s_json
}

/// Each learner with a sparse path trains on the LIBSVM rows kept sparse and writes the dense
/// route's model file ([`same_as_dense`]; ε = 1, δ = 1e-5, seed 7), and its answer names it:
/// DP-GD, DP-SGD (Poisson batches, with `--n`, shuffled and fixed-size; each update rule;
/// tuned, honest and unaccounted) and
/// noisy GD, objective perturbation, AMP (the default algorithm for classification, and with
/// `--solver sag`) and output perturbation; on unit rows with public bounds, and on raw rows
/// whose bounds (the clip, `X`, `Y`) are estimated privately from the same norms and labels,
/// and which the perturbation learners project.
#[test]
fn sparse_rows_give_the_dense_model() {
    use Set::{Class, ClassTest, Real};
    let cases: [Case; 23] = [
        // Unit rows (and a bias): public bounds.
        ("--algorithm dp-gd --steps 20 --bias 1", Class, ClassTest),
        (
            "--algorithm dp-sgd --batch-size 50 --epochs 2 --bias 1",
            Class,
            ClassTest,
        ),
        (
            "--algorithm dp-sgd --batch-size 40 --n 320 --update momentum",
            Class,
            ClassTest,
        ),
        (
            "--algorithm dp-sgd --batch-schedule shuffle --batch-size 30 --epochs 1",
            Class,
            ClassTest,
        ),
        ("--algorithm noisy-gd --steps 20", Class, ClassTest),
        (
            "--algorithm dp-sgd --batch-size 30 --tune honest --learning-rates 0.1,0.5,2 \
             --tune-trials 3",
            Class,
            ClassTest,
        ),
        // Only data, label, ε and δ: the default algorithm, AMP.
        ("", Class, ClassTest),
        ("--algorithm amp --solver sag", Class, ClassTest),
        ("--algorithm objpert --bias 0.5", Class, ClassTest),
        ("--algorithm output-perturbation", Class, ClassTest),
        // Raw rows: bounds estimated privately.
        (
            "--algorithm dp-gd --steps 20 --preprocess none --bias 0.5",
            Class,
            ClassTest,
        ),
        (
            "--algorithm noisy-gd --steps 20 --loss squared --preprocess none",
            Real,
            ClassTest,
        ),
        (
            "--algorithm dp-gd --steps 20 --loss squared --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm dp-sgd --batch-size 40 --update adam --preprocess none --bias 0.5",
            Class,
            ClassTest,
        ),
        (
            "--algorithm dp-sgd --batch-schedule fixed --batch-size 30 --loss squared \
             --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm dp-sgd --batch-size 30 --tune honest --learning-rates 0.05,0.2 \
             --loss squared --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm dp-sgd --batch-size 30 --tune unaccounted --learning-rates 0.1,1 \
             --preprocess none --bias 0.5",
            Class,
            ClassTest,
        ),
        (
            "--algorithm amp --preprocess none --bias 0.5",
            Class,
            ClassTest,
        ),
        (
            "--algorithm objpert --loss squared --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm output-perturbation --preprocess none",
            Class,
            ClassTest,
        ),
        (
            "--algorithm output-perturbation --loss squared --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm ssp --loss squared --preprocess none",
            Real,
            Real,
        ),
        (
            "--algorithm ssp --loss squared --preprocess none --bias 1",
            Real,
            ClassTest,
        ),
    ];
    let dir = TempDir::new().unwrap();
    let files = sets(dir.path(), 40);
    for (case, train_set, test_set) in cases {
        let mut args = vec!["--epsilon", "1", "--delta", "1e-5", "--seed", "7"];
        args.extend(case.split_whitespace());
        let answer = same_as_dense(dir.path(), &args, &files(train_set), &files(test_set));
        let algorithm = args
            .iter()
            .position(|&a| a == "--algorithm")
            .map_or("amp", |k| args[k + 1]);
        assert_eq!(answer["algorithm"], algorithm, "{case}");
        // Not vacuous for the tuned fits: a trial ran (no zero model).
        let model = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
        let model: Value = serde_json::from_str(&model).unwrap();
        let coefficients = model["coefficients"].as_array().unwrap();
        assert!(coefficients.iter().any(|c| c != 0.0), "{case}: {model}");
    }
}

#[test]
fn algorithms_and_scalings_without_a_sparse_path_densify_with_a_warning() {
    let dir = TempDir::new().unwrap();
    let (svm, _) = write(dir.path(), "class", 200, false);
    let d = D.to_string();
    let data = ["--data", svm.to_str().unwrap(), "--n-features", &d];
    let common = ["--epsilon", "1", "--delta", "1e-5", "--seed", "3"];
    for (extra, why) in [
        (
            &["--algorithm", "jl-noisy-gd"][..],
            "--algorithm jl-noisy-gd has no sparse path (dp-gd, dp-sgd, noisy-gd, objpert, amp, \
             output-perturbation and ssp train on sparse rows)",
        ),
        (
            &["--algorithm", "dp-gd", "--scale", "minmax"][..],
            "--scale minmax maps zeros to non-zero values",
        ),
    ] {
        let mut args = data.to_vec();
        args.extend(common);
        args.extend(extra);
        let (json, _, err) = train(&args, &dir.path().join("m.json"));
        let warning = format!("the LIBSVM rows are densified (n × d values in memory): {why}");
        assert!(
            err.contains(&format!("warning: {warning}")),
            "{extra:?}: {err}"
        );
        let warnings = json["warnings"].as_array().unwrap();
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&warning)),
            "{json}"
        );
    }
}

/// `dpglm evaluate` and `dpglm predict` read a LIBSVM file into sparse rows and score it with
/// the model's own steps (unit norm, bias, the projection onto a row bound): the predictions
/// equal, to rounding, the model's decision values on the same file read dense
/// (`LinearModel::decision_function`, what the commands computed before), and the accuracy or
/// MSE and mean loss are those of these values. A model that scales its features scores the
/// LIBSVM rows dense (its scaling moves zeros) and agrees too.
#[test]
fn evaluate_and_predict_score_libsvm_rows_like_dense_ones() {
    use Set::{Class, ClassTest, Real, RealTest};
    let dir = TempDir::new().unwrap();
    let files = sets(dir.path(), 60);
    let cases: [Case; 4] = [
        // Unit rows and a bias.
        ("--algorithm dp-gd --bias 1", Class, ClassTest),
        // AdaSSP: raw rows projected onto the privately estimated row bound.
        ("--algorithm ssp --loss squared", Real, RealTest),
        // Output perturbation on raw rows with a public X bound (its model projects rows).
        (
            "--algorithm output-perturbation --preprocess none --x-bound 1",
            Class,
            ClassTest,
        ),
        // A feature scaling: the LIBSVM rows are read dense.
        ("--algorithm dp-gd --scale minmax", Class, ClassTest),
    ];
    let model_path = dir.path().join("model.json");
    let d = D.to_string();
    for (case, train_set, test_set) in cases {
        let ((svm, _), (svm_test, _)) = (files(train_set), files(test_set));
        let mut args = vec!["--data", svm.to_str().unwrap(), "--n-features", &d];
        args.extend(["--epsilon", "1", "--delta", "1e-5", "--seed", "3"]);
        args.extend(case.split_whitespace());
        let (_, m, _) = train(&args, &model_path);
        let with_bound = !m["preprocessing"]["row_bound"].is_null();
        assert_eq!(with_bound, !case.contains("dp-gd"), "{case}: {m}");
        let model =
            dp_glm::LinearModel::from_json(&std::fs::read_to_string(&model_path).unwrap()).unwrap();
        let dense = dp_data::read_libsvm(&svm_test, Some(D)).unwrap();
        let z = model.decision_function(dense.x.view()).unwrap();
        let run = |command: &str| {
            let (code, stdout, stderr) = dpglm(&[
                command,
                "--json",
                "--model",
                model_path.to_str().unwrap(),
                "--data",
                svm_test.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{case} {command}: {stderr}");
            serde_json::from_str::<Value>(&stdout).unwrap()
        };
        let close = |s: f64, d: f64, what: &str| {
            assert!(
                (s - d).abs() <= 1e-12 * d.abs().max(1.0),
                "{case}: {what} {s} {d}"
            );
        };
        let predicted = run("predict");
        let rows = predicted["predictions"].as_array().unwrap();
        assert_eq!(rows.len(), 60, "{case}");
        let classification = model.loss() != dp_glm::Loss::Squared;
        for (row, &zi) in rows.iter().zip(&z) {
            let p = row["prediction"].as_f64().unwrap();
            match classification {
                true => assert_eq!(p, if zi > 0.0 { 1.0 } else { -1.0 }, "{case}"),
                false => close(p, zi, "prediction"),
            }
        }
        let scored = run("evaluate");
        assert_eq!(scored["n"], 60, "{case}");
        let n = z.len() as f64;
        let y = dense
            .y
            .map(|&v| if classification && v == 0.0 { -1.0 } else { v });
        let loss = z
            .iter()
            .zip(&y)
            .map(|(&zi, &yi)| model.loss().value(zi, yi))
            .sum::<f64>()
            / n;
        close(scored["loss"].as_f64().unwrap(), loss, "loss");
        if classification {
            let right = z
                .iter()
                .zip(&y)
                .filter(|&(&zi, &yi)| (zi > 0.0) == (yi > 0.0))
                .count();
            assert_eq!(
                scored["accuracy"].as_f64().unwrap(),
                right as f64 / n,
                "{case}"
            );
        } else {
            let mse = z
                .iter()
                .zip(&y)
                .map(|(&zi, &yi)| (zi - yi).powi(2))
                .sum::<f64>()
                / n;
            close(scored["mse"].as_f64().unwrap(), mse, "mse");
        }
    }
}
