//! `dpglm train` / `dpglm evaluate` on malformed input (issue 9, "Bad input"), in-process
//! through [`dp_cli::run`]: every case exits 2 with a message naming the flag, file, line or
//! field (never a panic, a `null` metric or an overwritten input), and a seeded run says it is
//! not a private release.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use serde_json::Value;

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

/// A fresh directory under the system temp dir.
fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpglm-bad-input-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A separable logistic CSV with labels ±1.
fn csv(n: usize) -> String {
    let mut s = String::from("a,b,label\n");
    for i in 0..n {
        let a = ((i * 37) % 101) as f64 / 50.0 - 1.0;
        let b = ((i * 53) % 97) as f64 / 48.0 - 1.0;
        let y = if 2.0 * a - b > 0.0 { 1 } else { -1 };
        s.push_str(&format!("{a},{b},{y}\n"));
    }
    s
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `train` with objective perturbation on `data`, plus `extra` flags (which may replace the
/// default `--epsilon 1 --delta 1e-5`).
fn train(data: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "train",
        "--data",
        p(data),
        "--label",
        "label",
        "--algorithm",
        "objpert",
        "--loss",
        "logistic",
    ];
    for (flag, default) in [("--epsilon", "1"), ("--delta", "1e-5")] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend_from_slice(extra);
    dpglm(&args)
}

/// Exit 2, nothing on stdout, and every `needle` in the message.
fn usage(r: (i32, String, String), needles: &[&str]) {
    let (code, out, err) = r;
    assert_eq!(code, 2, "{needles:?}: stdout {out} stderr {err}");
    assert!(out.is_empty(), "{needles:?}: stdout {out}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

#[test]
fn out_equal_to_data_or_test_is_refused_and_the_data_kept() {
    let dir = tempdir("out");
    let data = dir.join("train.csv");
    let text = csv(200);
    std::fs::write(&data, &text).unwrap();
    usage(
        train(&data, &["--out", p(&data)]),
        &["--out", "--data", "overwrite"],
    );
    // Another spelling of the same file.
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let other = dir.join("sub").join("..").join("train.csv");
    usage(train(&data, &["--out", p(&other)]), &["--out", "--data"]);
    let test = dir.join("test.csv");
    std::fs::write(&test, &text).unwrap();
    let test_other = dir.join("sub").join("..").join("test.csv");
    usage(
        train(
            &data,
            &["--test", p(&test), "--out", p(&test_other), "--seed", "1"],
        ),
        &["--out", "--test"],
    );
    assert_eq!(std::fs::read_to_string(&test).unwrap(), text);
    assert_eq!(std::fs::read_to_string(&data).unwrap(), text);
    usage(train(&data, &["--out", p(&dir)]), &["--out", "directory"]);
    usage(
        train(&data, &["--out", p(&dir.join("nowhere").join("m.json"))]),
        &["--out", "directory does not exist"],
    );
    // A good --out is written whole, with no temporary file left.
    let (code, _, err) = train(&data, &["--out", p(&dir.join("m.json")), "--seed", "1"]);
    assert_eq!(code, 0, "{err}");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["m.json", "sub", "test.csv", "train.csv"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn seeded_runs_are_marked_not_a_private_release() {
    let dir = tempdir("seed");
    let data = dir.join("train.csv");
    std::fs::write(&data, csv(200)).unwrap();
    let model = dir.join("m.json");
    let (code, out, err) = train(&data, &["--seed", "42", "--json", "--out", p(&model)]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["private_release"], Value::Bool(false));
    assert_eq!(v["noise_source"]["kind"], "seeded");
    assert_eq!(v["noise_source"]["seed"], 42);
    let description = v["noise_source"]["description"].as_str().unwrap();
    assert!(
        description.contains("Xoshiro256++") && description.contains("not a private release"),
        "{description}"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["privacy"]["noise_source"], v["noise_source"]);
    // Human output says it too.
    let (code, out, _) = train(&data, &["--seed", "42"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("noise source: reproducible seeded stream (Xoshiro256++"),
        "{out}"
    );
    assert!(out.contains("not a private release"), "{out}");
    // Without a seed: the CSPRNG, a private release.
    let (code, out, _) = train(&data, &["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["private_release"], Value::Bool(true));
    assert_eq!(v["noise_source"]["kind"], "secure");
    assert_eq!(v["noise_source"]["seed"], Value::Null);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn metrics_are_finite_or_refused_never_null() {
    let dir = tempdir("metrics");
    let data = dir.join("train.csv");
    std::fs::write(&data, csv(200)).unwrap();
    let model = dir.join("m.json");
    let (code, _, err) = train(
        &data,
        &["--seed", "1", "--out", p(&model), "--preprocess", "none"],
    );
    assert_eq!(code, 0, "{err}");
    // Features near f64::MAX: ⟨w, x⟩ overflows (before: NaN/∞ metrics printed as null).
    let huge = dir.join("huge.csv");
    std::fs::write(&huge, "a,b,label\n1,1,1\n1e308,-1e308,-1\n").unwrap();
    for json in [true, false] {
        let mut args = vec![
            "evaluate",
            "--model",
            p(&model),
            "--data",
            p(&huge),
            "--label",
            "label",
        ];
        if json {
            args.push("--json");
        }
        usage(
            dpglm(&args),
            &["huge.csv", "row 1", "too large for a finite score"],
        );
    }
    usage(
        train(
            &data,
            &[
                "--seed",
                "1",
                "--preprocess",
                "none",
                "--test",
                p(&huge),
                "--json",
            ],
        ),
        &["huge.csv", "row 1"],
    );
    // A good evaluation prints only finite numbers.
    let (code, out, err) = dpglm(&[
        "evaluate",
        "--model",
        p(&model),
        "--data",
        p(&data),
        "--label",
        "label",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["loss"].as_f64().unwrap().is_finite());
    assert!((0.0..=1.0).contains(&v["accuracy"].as_f64().unwrap()));
    assert_eq!(v["mse"], Value::Null, "not applicable to a classifier");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn labels_outside_the_loss_domain_are_refused_in_every_file() {
    let dir = tempdir("labels");
    let data = dir.join("train.csv");
    std::fs::write(&data, csv(200)).unwrap();
    let zero_one = dir.join("01.csv");
    std::fs::write(&zero_one, "a,b,label\n1,2,1\n3,4,0\n").unwrap();
    usage(
        train(&zero_one, &["--seed", "1"]),
        &["01.csv", "label 0", "row 1"],
    );
    usage(
        train(&data, &["--seed", "1", "--test", p(&zero_one)]),
        &["01.csv", "label 0"],
    );
    let model = dir.join("m.json");
    assert_eq!(train(&data, &["--seed", "1", "--out", p(&model)]).0, 0);
    usage(
        dpglm(&[
            "evaluate",
            "--model",
            p(&model),
            "--data",
            p(&zero_one),
            "--label",
            "label",
        ]),
        &["01.csv", "label 0"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tampered_model_files_are_refused_naming_the_field() {
    let dir = tempdir("model");
    let data = dir.join("train.csv");
    std::fs::write(&data, csv(200)).unwrap();
    let model = dir.join("m.json");
    assert_eq!(train(&data, &["--seed", "1", "--out", p(&model)]).0, 0);
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let evaluate = |v: &Value| {
        let path = dir.join("bad.json");
        std::fs::write(&path, v.to_string()).unwrap();
        dpglm(&[
            "evaluate",
            "--model",
            p(&path),
            "--data",
            p(&data),
            "--label",
            "label",
        ])
    };
    let mut v = good.clone();
    v["format"] = "other-model/1".into();
    usage(evaluate(&v), &["bad.json", "`format`"]);
    // No coefficients with a bias column: before, "model expects 18446744073709551615".
    let mut v = good.clone();
    v["coefficients"] = Value::Array(vec![]);
    let (code, out, err) = evaluate(&v);
    usage((code, out, err.clone()), &["bad.json", "`coefficients`"]);
    assert!(!err.contains("18446744073709551615"), "{err}");
    let mut v = good.clone();
    v["intercept"] = Value::Null;
    usage(evaluate(&v), &["`intercept`"]);
    let mut v = good.clone();
    v["privacy"]["epsilon"] = "small".into();
    usage(evaluate(&v), &["`privacy.epsilon`"]);
    // The data's width against the model's.
    let wide = dir.join("wide.csv");
    std::fs::write(&wide, "a,b,c,label\n1,2,3,1\n").unwrap();
    usage(
        dpglm(&[
            "evaluate",
            "--model",
            p(&model),
            "--data",
            p(&wide),
            "--label",
            "label",
        ]),
        &["wide.csv", "3 features", "expects 2"],
    );
    if Path::new("/dev/zero").exists() {
        usage(
            dpglm(&[
                "evaluate",
                "--model",
                "/dev/zero",
                "--data",
                p(&data),
                "--label",
                "label",
            ]),
            &["/dev/zero", "not a regular file"],
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_flag_values_name_the_flag() {
    let dir = tempdir("flags");
    let data = dir.join("train.csv");
    std::fs::write(&data, csv(100)).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--epsilon", "nan"], "--epsilon"),
        (&["--epsilon", "inf"], "--epsilon"),
        (&["--epsilon", "0"], "--epsilon"),
        (&["--epsilon", "-1"], "--epsilon"),
        (&["--delta", "1"], "--delta"),
        (&["--delta", "-1e-5"], "--delta"),
        (&["--delta", "NaN"], "--delta"),
        (&["--clip", "nan"], "--clip"),
        (&["--clip", "-1"], "--clip"),
        (&["--lambda", "inf"], "--lambda"),
        (&["--bias", "inf"], "--bias"),
        (&["--huber-h", "nan"], "--huber-h"),
    ];
    for (extra, flag) in cases {
        usage(train(&data, extra), &[&format!("invalid value for {flag}")]);
    }
    // A flag the user did not give is named as a default derived from the others, not as if
    // its value had been given.
    usage(
        train(&data, &["--epsilon", "1e-300"]),
        &[
            "--lambda was not given and its default",
            "give --lambda explicitly",
        ],
    );
    usage(
        train(&data, &["--bias", "1e300"]),
        &["--lambda was not given and its default"],
    );
    let dp_gd = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--data",
            p(&data),
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
            "--seed",
            "1",
        ];
        args.extend_from_slice(extra);
        dpglm(&args)
    };
    usage(dp_gd(&["--steps", "0"]), &["invalid value for --steps: 0"]);
    usage(
        dp_gd(&["--learning-rate", "inf"]),
        &["invalid value for --learning-rate"],
    );
    usage(
        dp_gd(&["--learning-rate", "-1"]),
        &["invalid value for --learning-rate"],
    );
    usage(dp_gd(&["--lambda", "-1"]), &["invalid value for --lambda"]);
    let jl = |k: &str| {
        dpglm(&[
            "train",
            "--data",
            p(&data),
            "--label",
            "label",
            "--algorithm",
            "jl-noisy-gd",
            "--loss",
            "logistic",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--seed",
            "1",
            "--k",
            k,
        ])
    };
    usage(jl("0"), &["invalid value for --k: 0"]);
    usage(
        jl("100000000"),
        &["invalid value for --k: 100000000", "dimension 3"],
    );
    let sgd = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--data",
            p(&data),
            "--label",
            "label",
            "--algorithm",
            "dp-sgd",
            "--loss",
            "logistic",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--seed",
            "1",
        ];
        args.extend_from_slice(extra);
        dpglm(&args)
    };
    usage(sgd(&["--epochs", "0"]), &["invalid value for --epochs: 0"]);
    usage(
        sgd(&["--batch-size", "0"]),
        &["invalid value for --batch-size: 0"],
    );
    usage(
        sgd(&["--learning-rates", "0.1,nan", "--tune", "honest"]),
        &["--learning-rates"],
    );
    usage(
        sgd(&["--tune-trials", "3"]),
        &["--tune-trials", "need --tune"],
    );
    usage(
        sgd(&["--tune", "unaccounted", "--tune-trials", "3"]),
        &["--tune-trials applies to --tune honest only"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_data_files_name_file_and_line() {
    let dir = tempdir("files");
    let cases: &[(&str, &[u8], &[&str])] = &[
        ("empty.csv", b"", &["empty.csv", "no data rows"]),
        (
            "header.csv",
            b"a,b,label\n",
            &["header.csv", "no data rows"],
        ),
        (
            "ragged.csv",
            b"a,b,label\n1,2,1\n1,2\n",
            &["ragged.csv:3", "expected 3 fields"],
        ),
        (
            "utf8.csv",
            b"a,b,label\n1,2,1\n\xff\xfe,1,1\n",
            &["utf8.csv:3", "UTF-8"],
        ),
        (
            "nan.csv",
            b"a,b,label\n1,nan,1\n",
            &["nan.csv:2", "column `b`", "not finite"],
        ),
        ("nolabel.csv", b"a,b,c\n1,2,1\n", &["nolabel.csv", "label"]),
    ];
    for (name, bytes, needles) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        usage(train(&path, &["--seed", "1"]), needles);
    }
    let svm = dir.join("big.libsvm");
    std::fs::write(&svm, "1 1:1\n-1 4000000000:1\n").unwrap();
    usage(
        dpglm(&[
            "train",
            "--data",
            p(&svm),
            "--algorithm",
            "objpert",
            "--loss",
            "logistic",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--seed",
            "1",
        ]),
        &["big.libsvm:2", "4000000000", "memory budget"],
    );
    if Path::new("/dev/zero").exists() {
        usage(
            train(Path::new("/dev/zero"), &["--format", "csv"]),
            &["/dev/zero", "not a regular file"],
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
