//! Issue 10 §2 (feature scaling stored with the model) and the §3 target that needs it:
//! DP-SGD and AMP with defaults only on features of scales 0.1…100 with offsets, against
//! non-private logistic regression.
//!
//! Synthetic data from fixed seeds, ε = 1, δ = 1e-5, `--seed` for reproducible noise. The
//! numbers each test measured when written are in its comment.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod inprocess;
mod saved;

use std::path::Path;

use inprocess::dpglm;
use ndarray::{Array1, Array2};
use rand::RngExt;
use serde_json::Value;
use tempfile::TempDir;

/// Features of the issue's kind: feature `j` of `D` is `scale_j·z_j + offset_j`, scales
/// `10^(−1 + 3j/(D−1))` (0.1 to 100), offsets `±50·j/D` alternating, `z ~ N(0, I)`; the
/// label is +1 with probability `σ(⟨z, w⟩)`, `w_j = ±2/√D` — a logistic model in the
/// standardised features.
const D: usize = 10;

fn scale(j: usize) -> f64 {
    10f64.powf(-1.0 + 3.0 * j as f64 / (D - 1) as f64)
}

fn offset(j: usize) -> f64 {
    let s = if j % 2 == 1 { -1.0 } else { 1.0 };
    s * 50.0 * j as f64 / D as f64
}

/// `n` rows `(features, ±1 label)` from `seed`; normals by the polar method.
fn rows(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = dp_optim::seeded_rng(seed);
    let mut normal = move || loop {
        let (u, v): (f64, f64) = (
            2.0 * rng.random::<f64>() - 1.0,
            2.0 * rng.random::<f64>() - 1.0,
        );
        let r = u * u + v * v;
        if r > 0.0 && r < 1.0 {
            return (u * (-2.0 * r.ln() / r).sqrt(), rng.random::<f64>());
        }
    };
    let w = 2.0 / (D as f64).sqrt();
    let mut x = Array2::zeros((n, D));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let mut margin = 0.0;
        let mut u = 0.0;
        for j in 0..D {
            let (z, uniform) = normal();
            margin += if j % 2 == 0 { w } else { -w } * z;
            x[[i, j]] = scale(j) * z + offset(j);
            u = uniform;
        }
        y[i] = if u < 1.0 / (1.0 + (-margin).exp()) {
            1.0
        } else {
            -1.0
        };
    }
    (x, y)
}

/// Writes rows as CSV with the columns in `order` (`x0..x{D-1}` and `y`).
fn write_csv(path: &Path, x: &Array2<f64>, y: &Array1<f64>, order: &[usize]) {
    let name = |c: usize| {
        if c == D {
            "y".to_string()
        } else {
            format!("x{c}")
        }
    };
    let mut text = order.iter().map(|&c| name(c)).collect::<Vec<_>>().join(",");
    text.push('\n');
    for i in 0..x.nrows() {
        let cells: Vec<String> = order
            .iter()
            .map(|&c| if c == D { y[i] } else { x[[i, c]] }.to_string())
            .collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// Non-private logistic regression (with intercept, as a constant column) by the library's
/// L-BFGS on features standardised with the training set's own means and deviations: its
/// test accuracy.
fn non_private_accuracy(
    x: &Array2<f64>,
    y: &Array1<f64>,
    tx: &Array2<f64>,
    ty: &Array1<f64>,
) -> f64 {
    let mean = x.mean_axis(ndarray::Axis(0)).unwrap();
    let sd = x.std_axis(ndarray::Axis(0), 0.0);
    let design = |x: &Array2<f64>| {
        let mut z = Array2::ones((x.nrows(), D + 1));
        for j in 0..D {
            let col = (&x.column(j) - mean[j]) / sd[j];
            z.column_mut(j).assign(&col);
        }
        z
    };
    let data = dp_glm::Dataset::new(design(x), y.clone()).unwrap();
    let objective =
        dp_glm::GlmObjective::new(&data, dp_glm::Loss::Logistic, 0.0, dp_glm::Scale::Mean).unwrap();
    let theta = dp_optim::Lbfgs::new()
        .max_iters(1000)
        .grad_tol(1e-9)
        .minimize(&objective, Array1::zeros(D + 1).view(), None)
        .unwrap()
        .x;
    let m = design(tx).dot(&theta);
    let right = m
        .iter()
        .zip(ty)
        .filter(|(m, y)| (**m >= 0.0) == (**y > 0.0))
        .count();
    right as f64 / ty.len() as f64
}

/// `dpglm train … --json` with ε = 1, δ = 1e-5 and `extra` (which gives the seed): the JSON
/// object.
fn train(train: &Path, test: &Path, extra: &str) -> Value {
    let args = format!(
        "train --data {} --test {} --label y --epsilon 1 --delta 1e-5 --json {extra}",
        train.display(),
        test.display()
    );
    let (code, out, err) = dpglm(&args.split_whitespace().collect::<Vec<_>>());
    assert_eq!(code, 0, "{extra}: {err}");
    serde_json::from_str(&out).unwrap()
}

fn accuracy(v: &Value) -> f64 {
    v["test_accuracy"].as_f64().unwrap()
}

/// The public scaling schema: every feature's true range `offset ± 3·scale` (what the
/// default estimates privately).
fn public_schema(path: &Path) {
    let entries: Vec<String> = (0..D)
        .map(|j| {
            let (lo, hi) = (offset(j) - 3.0 * scale(j), offset(j) + 3.0 * scale(j));
            format!("\"x{j}\": {{\"min\": {lo}, \"max\": {hi}}}")
        })
        .collect();
    std::fs::write(path, format!("{{\"scaling\": {{{}}}}}", entries.join(", "))).unwrap();
}

/// The §3 target: DP-SGD and AMP, defaults only (data, label, ε, δ), within 2 accuracy
/// points of non-private logistic regression. By default logistic models scale every feature
/// min–max from its privately estimated range (centre ± 3 scales from its quartiles, 20% of
/// ε in all) to [−1, 1], clipped, and add a bias; before, they normalised rows, which on
/// these features is dominated by the largest ones.
///
/// Measured when written (n = 20,000 train, 5,000 test; test accuracy):
///
/// | learner | defaults | `--scale minmax` + public ranges (centre ± 3 scales) | `--scale none` (unit-norm rows, the old default) | non-private |
/// |---|---|---|---|---|
/// | DP-SGD | 0.7768 | 0.7810 | 0.6178 | 0.7808 |
/// | AMP | 0.7720 | 0.7770 | 0.6308 | 0.7808 |
///
/// The runs are deterministic given the seed (rounding with and without BLAS may move a few
/// test rows). Over seeds 1–59 when written: DP-SGD 0.7748–0.7814 and AMP 0.7706–0.7832 with
/// the defaults, every run within 2 points (0.7608); the private ranges are the spread (public
/// ranges: 0.779–0.783 and 0.771–0.782). Seeds 1–5 are checked.
#[test]
fn defaults_are_within_two_points_of_non_private_logistic_regression() {
    let dir = TempDir::new().unwrap();
    let (x, y) = rows(20_000, 3);
    let (tx, ty) = rows(5_000, 4);
    let all: Vec<usize> = (0..=D).collect();
    let (tr, te, schema) = (
        dir.path().join("train.csv"),
        dir.path().join("test.csv"),
        dir.path().join("s.json"),
    );
    write_csv(&tr, &x, &y, &all);
    write_csv(&te, &tx, &ty, &all);
    public_schema(&schema);
    let reference = non_private_accuracy(&x, &y, &tx, &ty);
    eprintln!("non-private logistic regression: {reference}");
    for alg in ["dp-sgd", "amp"] {
        for seed in 1..=5 {
            let v = train(&tr, &te, &format!("--algorithm {alg} --seed {seed}"));
            eprintln!(
                "{alg} defaults, seed {seed}: {}, epsilon spent {}",
                accuracy(&v),
                v["epsilon"]
            );
            assert!(
                accuracy(&v) >= reference - 0.02,
                "{alg}, seed {seed}: {} vs non-private {reference}",
                accuracy(&v)
            );
        }
        let v = train(&tr, &te, &format!("--algorithm {alg} --seed 1"));
        let public = train(
            &tr,
            &te,
            &format!(
                "--algorithm {alg} --seed 1 --scale minmax --schema {}",
                schema.display()
            ),
        );
        let old = train(
            &tr,
            &te,
            &format!("--algorithm {alg} --seed 1 --scale none"),
        );
        eprintln!(
            "{alg}: defaults {}, public scaling {}, --scale none {}",
            accuracy(&v),
            accuracy(&public),
            accuracy(&old)
        );
        assert!(
            accuracy(&public) >= reference - 0.02,
            "{alg}: {}",
            accuracy(&public)
        );
        assert!(v["epsilon"].as_f64().unwrap() <= 1.0);
        assert_eq!(v["scaling"]["method"], "minmax");
        let features = v["scaling"]["features"].as_array().unwrap();
        assert_eq!(features.len(), D);
        let eps: f64 = features
            .iter()
            .map(|f| {
                assert_eq!(f["source"], "estimated");
                f["epsilon"].as_f64().unwrap()
            })
            .sum();
        // The default share with estimated ranges: 20% of ε.
        assert!(eps <= 0.2 + 1e-9 && eps > 0.19, "{eps}");
        for f in public["scaling"]["features"].as_array().unwrap() {
            assert_eq!(f["source"], "public");
            assert_eq!(f["epsilon"], Value::Null);
        }
    }
}

/// `evaluate` and `predict` apply the stored scaling exactly as training did: evaluating on
/// the training file gives the training accuracy, and on the same rows with the columns in
/// another order the same accuracy and predictions. The model file and the human summary
/// state the scaling and where its values came from.
#[test]
fn evaluate_and_predict_apply_the_stored_scaling() {
    let dir = TempDir::new().unwrap();
    let (x, y) = rows(20_000, 7);
    let all: Vec<usize> = (0..=D).collect();
    let shuffled: Vec<usize> = vec![D, 7, 2, 9, 0, 4, 1, 8, 3, 6, 5];
    let (tr, re) = (
        dir.path().join("train.csv"),
        dir.path().join("reordered.csv"),
    );
    write_csv(&tr, &x, &y, &all);
    write_csv(&re, &x, &y, &shuffled);
    // x0 public (standardised), the others estimated.
    let schema = dir.path().join("s.json");
    std::fs::write(
        &schema,
        r#"{"scaling": {"x0": {"center": 0, "scale": 0.1, "min": -0.5, "max": 0.5}}}"#,
    )
    .unwrap();
    let model = dir.path().join("m.json");
    let args = format!(
        "train --data {} --label y --algorithm dp-sgd --epsilon 1 --delta 1e-5 --seed 2 \
         --schema {} --out {}",
        tr.display(),
        schema.display(),
        model.display()
    );
    let (code, human, err) = dpglm(&args.split_whitespace().collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert!(
        human.contains("feature scaling: standard, 1 feature(s) from public values, 9 feature(s) with ranges estimated privately"),
        "{human}"
    );
    let (_, json, _) = dpglm(
        &format!("{args} --json")
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let stored = &file["preprocessing"]["scaling"];
    assert_eq!(stored, &v["scaling"]);
    assert_eq!(stored["features"][0]["source"], "public");
    assert_eq!(stored["features"][0]["low"], -0.5);
    assert_eq!(stored["features"][1]["source"], "estimated");
    assert_eq!(file["preprocessing"]["unit_norm_rows"], false);
    // The private row count and 18 feature-range estimates in the ledger before the
    // learner's release.
    let ledger = saved::releases(&file["privacy"]);
    assert_eq!(ledger.len(), 20, "{ledger:?}");
    assert!(
        ledger[0]["label"]
            .as_str()
            .unwrap()
            .starts_with("n: private row count")
    );
    assert!(
        ledger[1]["label"]
            .as_str()
            .unwrap()
            .starts_with("scaling of x1")
    );
    let evaluate = |data: &Path| {
        let (code, out, err) = dpglm(&[
            "evaluate",
            "--model",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()["accuracy"]
            .as_f64()
            .unwrap()
    };
    let train_accuracy = v["train_accuracy"].as_f64().unwrap();
    assert_eq!(evaluate(&tr), train_accuracy);
    assert_eq!(evaluate(&re), train_accuracy);
    assert!(train_accuracy > 0.7, "{train_accuracy}");
    let predict = |data: &Path| {
        let (code, out, err) = dpglm(&[
            "predict",
            "--model",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(predict(&tr), predict(&re));
}

/// Scaling settings that cannot be applied are input errors naming the problem.
#[test]
fn bad_scaling_settings_are_refused() {
    let dir = TempDir::new().unwrap();
    let (x, y) = rows(200, 9);
    let tr = dir.path().join("train.csv");
    write_csv(&tr, &x, &y, &(0..=D).collect::<Vec<_>>());
    let cases = [
        (
            r#"{"scaling": {"x1": {"min": 0, "max": 1}}}"#,
            "--epsilon 1 --scale none",
            "--scale none",
        ),
        (
            r#"{"scaling": {"x1": {"min": 0}}}"#,
            "--epsilon 1 --scale minmax",
            "`x1`",
        ),
        (
            r#"{"scaling": {"x1": {"min": 0, "max": 1}}}"#,
            "--epsilon 1 --scale standard",
            "`x1`",
        ),
        (
            r#"{"scaling": {"x1": {"min": 1, "max": 0}}}"#,
            "--epsilon 1",
            "x1",
        ),
        (
            r#"{"scaling": {"nope": {"min": 0, "max": 1}}}"#,
            "--epsilon 1",
            "nope",
        ),
        (
            r#"{"scaling": {"x1": {"min": 0, "max": 1}}}"#,
            "--epsilon 1 --drop x1",
            "`x1`, which is not a numeric feature",
        ),
        // Too little budget for the private estimates: named, with the way out.
        (
            r#"{}"#,
            "--epsilon 1e-6 --scale minmax",
            "give public scaling values",
        ),
    ];
    for (i, (schema, flag, named)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("s{i}.json"));
        std::fs::write(&path, schema).unwrap();
        let args = format!(
            "train --data {} --label y --algorithm dp-sgd --delta 1e-5 --schema {} {flag}",
            tr.display(),
            path.display()
        );
        let (code, _, err) = dpglm(&args.split_whitespace().collect::<Vec<_>>());
        assert_eq!(code, 2, "{schema} {flag}: {err}");
        assert!(err.contains(named), "{schema} {flag}: {err}");
    }
}

/// Too few rows for the private ranges (200 rows, 20 estimates at ε = 0.01 each, reliable
/// from about 4,800): by default no scaling, with a warning that says what to give; asked for,
/// the estimates are made. Measured when written on this generator (n = 2,000, test 20,000,
/// seed 1): AMP's defaults gave 0.50 with the estimated ranges and 0.66 without.
#[test]
fn too_few_rows_for_private_ranges_warn_and_do_not_scale() {
    let dir = TempDir::new().unwrap();
    let (x, y) = rows(200, 5);
    let tr = dir.path().join("train.csv");
    write_csv(&tr, &x, &y, &(0..=D).collect::<Vec<_>>());
    let run = |extra: &str| {
        let args = format!(
            "train --data {} --label y --epsilon 1 --delta 1e-5 --json --seed 1 {extra}",
            tr.display()
        );
        let (code, out, err) = dpglm(&args.split_whitespace().collect::<Vec<_>>());
        assert_eq!(code, 0, "{extra}: {err}");
        (serde_json::from_str::<Value>(&out).unwrap(), err)
    };
    let (v, err) = run("--algorithm amp");
    assert!(v["scaling"].is_null(), "{v}");
    for needle in [
        "features not scaled",
        // The private count of the 200 rows (AMP under add/remove without --n).
        "n = ",
        "20 private",
        "\"scaling\"",
        "--scale",
    ] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v}");
    assert!(
        v["not_private"]
            .as_array()
            .unwrap()
            .contains(&"warnings".into())
    );
    let (v, err) = run("--algorithm amp --scale minmax");
    assert_eq!(v["scaling"]["method"], "minmax", "{v}");
    assert!(!err.contains("not scaled"), "{err}");
    // With --n the public count decides, not the file's.
    let (v, _) = run("--algorithm dp-sgd --n 100000");
    assert_eq!(v["scaling"]["method"], "minmax", "{v}");
}

/// No range is read from the data without noise: replacing one row by an extreme one
/// (features 10⁶) with the same seed moves the stored scaling by at most a few grid steps —
/// a range read from the data's extremes would move to 10⁶. Every other field of the model
/// file except the released coefficients and intercept (and the scaling, a mechanism output)
/// is the same.
#[test]
fn one_extreme_row_barely_moves_the_private_ranges() {
    let dir = TempDir::new().unwrap();
    let (x, y) = rows(5_000, 11);
    let mut other = x.clone();
    other.row_mut(0).fill(1e6);
    let all: Vec<usize> = (0..=D).collect();
    let mut files = Vec::new();
    for (name, features) in [("a", &x), ("b", &other)] {
        let data = dir.path().join(format!("{name}.csv"));
        let model = dir.path().join(format!("{name}.json"));
        write_csv(&data, features, &y, &all);
        let args = format!(
            "train --data {} --label y --algorithm dp-sgd --epsilon 1 --delta 1e-5 --seed 5 \
             --out {}",
            data.display(),
            model.display()
        );
        let (code, _, err) = dpglm(&args.split_whitespace().collect::<Vec<_>>());
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(&model).unwrap();
        files.push(serde_json::from_str::<Value>(&text).unwrap());
    }
    let (mut a, mut b) = (files[0].clone(), files[1].clone());
    let (sa, sb) = (
        a["preprocessing"]["scaling"]["features"].clone(),
        b["preprocessing"]["scaling"]["features"].clone(),
    );
    for j in 0..D {
        let get = |s: &Value, k: &str| s[j][k].as_f64().unwrap();
        let width = get(&sa, "high") - get(&sa, "low");
        for k in ["low", "high"] {
            let moved = (get(&sa, k) - get(&sb, k)).abs();
            assert!(moved <= 0.01 * width, "x{j} {k}: moved {moved} of {width}");
        }
    }
    for m in [&mut a, &mut b] {
        for k in ["coefficients", "intercept", "digest"] {
            m[k] = Value::Null;
        }
        m["preprocessing"]["scaling"] = Value::Null;
    }
    assert_eq!(a, b);
}

/// A rare 0/1 indicator (10% ones; its quartiles are both 0) keeps its unit scale rather than
/// being zeroed, so the model can use it; LIBSVM files are not scaled by default.
#[test]
fn rare_indicators_are_kept_and_libsvm_is_not_scaled_by_default() {
    let dir = TempDir::new().unwrap();
    let mut text = String::from("flag,noise,y\n");
    let mut svm = String::new();
    for i in 0..20_000 {
        let flag = u8::from(i % 10 == 0);
        // The label follows the indicator (and a little noise): flag=1 → +1 mostly.
        let y = if flag == 1 || i % 7 == 0 { 1 } else { -1 };
        let noise = (i * 37 % 101) as f64 / 101.0;
        text.push_str(&format!("{flag},{noise},{y}\n"));
        svm.push_str(&format!("{y} 1:{flag} 2:{noise}\n"));
    }
    let (csv, libsvm) = (dir.path().join("d.csv"), dir.path().join("d.svm"));
    std::fs::write(&csv, text).unwrap();
    std::fs::write(&libsvm, svm).unwrap();
    let base = "--algorithm dp-sgd --epsilon 1 --delta 1e-5 --seed 1 --json";
    let (code, out, err) = dpglm(
        &format!("train --data {} --label y {base}", csv.display())
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let flag = &v["scaling"]["features"][0];
    // Its own unit, clipped to centre ± 1: the indicator stays 0/1.
    assert!(flag["center"].as_f64().unwrap().abs() < 0.01, "{flag}");
    assert_eq!(flag["scale"].as_f64(), Some(1.0), "{flag}");
    // Predicting +1 exactly for flag = 1 or i % 7 == 0 is out of reach; the indicator alone
    // gives 1 − P(flag = 0, i % 7 == 0) ≈ 0.871, the majority class 0.771. Measured: 0.8714
    // (with the indicator mapped to 1/3 instead, DP-SGD's defaults reached only 0.7714).
    assert!(v["train_accuracy"].as_f64().unwrap() > 0.85, "{v}");
    let (code, out, err) = dpglm(
        &format!("train --data {} --n-features 2 {base}", libsvm.display())
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scaling"], Value::Null);
}
