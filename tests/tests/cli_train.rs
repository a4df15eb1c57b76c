//! The command-line contract of `dpglm train` and `dpglm evaluate` (spec/CLI.md), in-process
//! through [`dp_cli::run`]: JSON fields, the model file with its privacy report, agreement of
//! `evaluate` with `train`, and located errors for bad files.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../../crates/dp-cli/tests/saved/mod.rs"]
mod saved;

use std::path::PathBuf;

use serde_json::Value;
use tempfile::TempDir;

fn dpglm(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["dpglm".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = dp_cli::run(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// A logistic CSV: y = sign(2a − b + small deterministic jitter).
fn write_csv(path: &PathBuf, n: usize) {
    let mut s = String::from("a,b,label\n");
    for i in 0..n {
        let a = ((i * 37) % 101) as f64 / 50.0 - 1.0;
        let b = ((i * 53) % 97) as f64 / 48.0 - 1.0;
        let y = if 2.0 * a - b > 0.0 { 1 } else { -1 };
        s.push_str(&format!("{a},{b},{y}\n"));
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn train_writes_the_contract_json_and_a_model_that_evaluate_reproduces() {
    let dir = TempDir::new().unwrap();
    let (train, test, model) = (
        dir.path().join("train.csv"),
        dir.path().join("test.csv"),
        dir.path().join("m.json"),
    );
    write_csv(&train, 3000);
    write_csv(&test, 500);
    let (code, out, err) = dpglm(&[
        "train",
        "--data",
        train.to_str().unwrap(),
        "--label",
        "label",
        "--test",
        test.to_str().unwrap(),
        "--algorithm",
        "dp-gd",
        "--loss",
        "logistic",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--seed",
        "11",
        "--out",
        model.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "algorithm",
        "loss",
        "d",
        "epsilon",
        "delta",
        "model",
        "not_private",
    ] {
        assert!(keys.contains(&k), "missing {k} in {out}");
    }
    // What was computed from the data without noise is named by `not_private`.
    let np: Vec<&str> = v["not_private"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for k in [
        "n",
        "train_loss",
        "train_accuracy",
        "test_accuracy",
        "test_mse",
        "seconds",
    ] {
        assert!(np.contains(&k), "{k} not listed in not_private: {out}");
        assert!(keys.contains(&k), "missing {k} in {out}");
    }
    assert_eq!(v["n"], 3000);
    assert_eq!(v["d"], 2);
    assert!(v["epsilon"].as_f64().unwrap() <= 2.0);
    assert!(v["test_mse"].is_null());
    let acc = v["test_accuracy"].as_f64().unwrap();
    assert!(acc > 0.8, "test accuracy {acc}");
    // The model file holds coefficients, preprocessing and the full privacy report.
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let p = &m["privacy"];
    assert_eq!(p["target_epsilon"], 2.0);
    assert!(p["epsilon"].as_f64().unwrap() <= 2.0);
    assert_eq!(p["neighbouring"], "replace-one");
    // The default feature scaling's range estimates (two per feature) come first.
    let ledger = saved::releases(p);
    for entry in ledger.iter().take(4) {
        assert_eq!(entry["mechanism"], "pure-dp");
        assert!(entry["label"].as_str().unwrap().starts_with("scaling of"));
    }
    assert_eq!(ledger[4]["mechanism"], "gaussian");
    assert_eq!(ledger[4]["count"], 100);
    assert!(p["noise"]["noise_multiplier"].as_f64().unwrap() > 0.0);
    // evaluate on the test file reproduces train's test accuracy.
    let (code, out, err) = dpglm(&[
        "evaluate",
        "--model",
        model.to_str().unwrap(),
        "--data",
        test.to_str().unwrap(),
        "--label",
        "label",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let e: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(e["n"], 500);
    assert_eq!(e["accuracy"].as_f64().unwrap(), acc);
    assert!(e["mse"].is_null());
}

#[test]
fn bad_files_exit_2_naming_file_line_and_field() {
    let dir = TempDir::new().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "a,b,label\n0.1,0.2,1\n0.3,oops,-1\n").unwrap();
    let (code, out, err) = dpglm(&[
        "train",
        "--data",
        bad.to_str().unwrap(),
        "--label",
        "label",
        "--algorithm",
        "dp-gd",
        "--loss",
        "logistic",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("bad.csv") && err.contains('3') && err.contains("oops"),
        "{err}"
    );
    // Labels outside the class pair ({0,1} and {-1,1} are mapped; 2 is neither).
    let labels = dir.path().join("labels.csv");
    std::fs::write(&labels, "a,label\n0.1,0\n0.3,2\n").unwrap();
    let (code, _, err) = dpglm(&[
        "train",
        "--data",
        labels.to_str().unwrap(),
        "--label",
        "label",
        "--algorithm",
        "dp-gd",
        "--loss",
        "logistic",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("labels.csv:3") && err.contains("`2`"), "{err}");
    // A missing file, a non-model file.
    let (code, _, err) = dpglm(&[
        "evaluate",
        "--model",
        dir.path().join("none.json").to_str().unwrap(),
        "--data",
        labels.to_str().unwrap(),
        "--label",
        "label",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("none.json"), "{err}");
}

#[test]
fn every_implemented_algorithm_trains_within_budget() {
    let dir = TempDir::new().unwrap();
    let train = dir.path().join("train.csv");
    write_csv(&train, 400);
    let reg = dir.path().join("reg.csv");
    let mut s = String::from("a,b,label\n");
    for i in 0..2000 {
        let a = ((i * 37) % 101) as f64 / 100.0 - 0.5;
        let b = ((i * 53) % 97) as f64 / 96.0 - 0.5;
        s.push_str(&format!("{a},{b},{}\n", 0.6 * a - 0.2 * b));
    }
    std::fs::write(&reg, s).unwrap();
    let cases: [(&str, &str, &PathBuf); 10] = [
        ("dp-gd", "logistic", &train),
        ("objpert", "logistic", &train),
        ("amp", "logistic", &train),
        ("output-perturbation", "logistic", &train),
        ("dp-sgd", "logistic", &train),
        ("noisy-gd", "logistic", &train),
        ("jl-noisy-gd", "logistic", &train),
        ("ssp", "squared", &reg),
        ("dp-ssgd", "squared", &reg),
        ("dp-ambssgd", "squared", &reg),
    ];
    for (alg, loss, data) in cases {
        let (code, out, err) = dpglm(&[
            "train",
            "--data",
            data.to_str().unwrap(),
            "--label",
            "label",
            "--algorithm",
            alg,
            "--loss",
            loss,
            "--bias",
            "0",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--seed",
            "5",
            "--json",
        ]);
        assert_eq!(code, 0, "{alg}: {err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["algorithm"], alg);
        assert!(v["epsilon"].as_f64().unwrap() <= 2.0, "{alg}: {out}");
        assert!(v["delta"].as_f64().unwrap() <= 1e-5, "{alg}: {out}");
        assert!(
            v["train_loss"].as_f64().unwrap().is_finite(),
            "{alg}: {out}"
        );
    }
    // AMP's own flags: accepted by amp, refused elsewhere; the report carries τ and σ_out.
    let model = dir.path().join("amp.json");
    let base = [
        "train",
        "--data",
        train.to_str().unwrap(),
        "--label",
        "label",
        "--loss",
        "logistic",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "3",
        "--tau",
        "1e-4",
        "--sigma-out",
        "0.1",
    ];
    let with = |alg: &str, extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(&["--algorithm", alg]);
        args.extend_from_slice(extra);
        dpglm(&args)
    };
    let (code, _, err) = with("amp", &["--out", model.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let text = m.to_string();
    assert!(text.contains("sigma_out") && text.contains("0.1"), "{text}");
    assert!(text.contains("objective perturbation"), "{text}");
    let (code, _, err) = with("objpert", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("--tau does not apply"), "{err}");
    // AMP's analysis covers add/remove only: replace-one is refused, naming the flag.
    let (code, _, err) = with("amp", &["--neighbouring", "replace-one"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--neighbouring") && err.contains("add-remove"),
        "{err}"
    );

    // DP-SGD tuning: honest (accounted) and unaccounted (said so in the model file).
    let tune = |mode: &str, extra: &[&str], out: &PathBuf| {
        let mut args = vec![
            "train",
            "--data",
            train.to_str().unwrap(),
            "--label",
            "label",
            "--loss",
            "logistic",
            "--algorithm",
            "dp-sgd",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--seed",
            "9",
            "--epochs",
            "2",
            "--batch-size",
            "50",
            "--tune",
            mode,
            "--learning-rates",
            "0.01,0.5",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(extra);
        dpglm(&args)
    };
    let honest = dir.path().join("honest.json");
    let (code, out, err) = tune("honest", &["--tune-trials", "3"], &honest);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v["epsilon"].as_f64().unwrap() <= 2.0, "{out}");
    let text = std::fs::read_to_string(&honest).unwrap();
    assert!(
        text.contains("Papernot") && text.contains("Poisson(3)"),
        "{text}"
    );
    let dishonest = dir.path().join("dishonest.json");
    let (code, _, err) = tune("unaccounted", &[], &dishonest);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&dishonest).unwrap();
    assert!(text.contains("NOT ACCOUNTED"), "{text}");
    let (code, _, err) = tune("unaccounted", &["--tune-trials", "3"], &dishonest);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = with("amp", &["--tune", "honest"]);
    assert_eq!(code, 2);
    assert!(err.contains("--tune does not apply"), "{err}");
}
