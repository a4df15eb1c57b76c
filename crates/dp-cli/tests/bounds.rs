//! Issue 10 §3: with no bound flags, `dpglm train` estimates the bounds privately within
//! `--bounds-budget` and gets useful models; the report says where every bound came from.
//!
//! Synthetic data from fixed seeds, ε = 1, δ = 1e-5, `--seed` for reproducible noise. The
//! numbers each test measured when written are in its comment.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
mod saved;

use std::path::{Path, PathBuf};

use rand::RngExt;
use serde_json::Value;
use tempfile::TempDir;

/// Standard normals by Box–Muller from a seeded stream.
fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = dp_optim::seeded_rng(seed);
    (0..n)
        .map(|_| {
            let u: f64 = rng.random();
            let v: f64 = rng.random();
            (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

/// Rows `(x, y)` written as CSV with columns `x0..x{d-1},y`.
fn write_csv(path: &Path, rows: &[(Vec<f64>, f64)]) {
    let d = rows[0].0.len();
    let mut text: String = (0..d).map(|j| format!("x{j},")).collect();
    text.push_str("y\n");
    for (x, y) in rows {
        for v in x {
            text.push_str(&format!("{v},"));
        }
        text.push_str(&format!("{y}\n"));
    }
    std::fs::write(path, text).unwrap();
}

/// The regression problem: x ~ N(0, I₂₀), y = ⟨x, w⟩ + N(0, 1) with ‖w‖ = 1.
/// Returns the rows and the oracle's (true w's) mean squared error on them.
fn regression(n: usize, seed: u64) -> (Vec<(Vec<f64>, f64)>, f64) {
    let d = 20;
    let z = normals(n * (d + 1), seed);
    let w = 1.0 / (d as f64).sqrt();
    let rows: Vec<(Vec<f64>, f64)> = (0..n)
        .map(|i| {
            let x = z[i * d..(i + 1) * d].to_vec();
            let y = x.iter().sum::<f64>() * w + z[n * d + i];
            (x, y)
        })
        .collect();
    let oracle = (0..n).map(|i| z[n * d + i].powi(2)).sum::<f64>() / n as f64;
    (rows, oracle)
}

/// Logistic labels on 10 features with scales 0.1…100 and offsets in ±50: the raw feature
/// `j` is `s_j z_j + o_j` with `z ~ N(0, I)` and `P(y = 1) = σ(⟨z, w⟩)`, `‖w‖ = 2`.
fn classification(n: usize, seed: u64) -> Vec<(Vec<f64>, f64)> {
    let d = 10;
    let z = normals(n * d, seed);
    let mut rng = dp_optim::seeded_rng(seed + 1);
    let w = 2.0 / (d as f64).sqrt();
    (0..n)
        .map(|i| {
            let zi = &z[i * d..(i + 1) * d];
            let margin: f64 = zi.iter().enumerate().map(|(j, v)| v * w * sign(j)).sum();
            let p = 1.0 / (1.0 + (-margin).exp());
            let u: f64 = rng.random();
            let x = zi
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    let scale = 10f64.powf(-1.0 + 3.0 * j as f64 / (d - 1) as f64);
                    scale * v + 50.0 * sign(j + 1) * (j as f64 / d as f64)
                })
                .collect();
            (x, if u < p { 1.0 } else { -1.0 })
        })
        .collect()
}

/// `+1` for even `j`, `−1` for odd.
fn sign(j: usize) -> f64 {
    if j.is_multiple_of(2) { 1.0 } else { -1.0 }
}

/// `dpglm train ... --json` on `train`/`test` at ε = 1, δ = 1e-5, seed 1: the JSON object.
fn train(train: &Path, test: &Path, extra: &str) -> Value {
    let o = common::dpglm(&format!(
        "train --data {} --test {} --label y --epsilon 1 --delta 1e-5 --seed 1 --json {extra}",
        train.display(),
        test.display()
    ));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{extra}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&stdout).unwrap()
}

/// The regression files, written once per test into `dir`.
fn regression_files(dir: &Path) -> (PathBuf, PathBuf, f64, f64) {
    let (rows, _) = regression(50_000, 1);
    let (test_rows, oracle) = regression(10_000, 2);
    let zero = test_rows.iter().map(|(_, y)| y * y).sum::<f64>() / test_rows.len() as f64;
    let (tr, te) = (dir.join("train.csv"), dir.join("test.csv"));
    write_csv(&tr, &rows);
    write_csv(&te, &test_rows);
    (tr, te, oracle, zero)
}

fn mse(v: &Value) -> f64 {
    v["test_mse"].as_f64().unwrap()
}

/// The bounds in a `train --json` object, as `(name, source)`.
fn sources(v: &Value) -> Vec<(String, String)> {
    v["bounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["source"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// SSP with no bound flags: X and Y estimated (10% of ε), test MSE within 10% of least
/// squares. The oracle (true w) has test MSE 0.99 here; least squares is above it by about
/// d/n = 0.04%, so `≤ 1.1 × oracle` is the stricter check. Measured: 0.9966 (oracle
/// 0.9948; 0.9956 with `--x-bound 6 --y-bound 4`; the issue measured 2.98 with the old
/// silent X = Y = 1); predicting 0: 1.99.
#[test]
fn ssp_with_estimated_bounds_is_within_ten_percent_of_least_squares() {
    let dir = TempDir::new().unwrap();
    let (tr, te, oracle, zero) = regression_files(dir.path());
    let v = train(&tr, &te, "--algorithm ssp --loss squared");
    eprintln!(
        "ssp: {} (oracle {oracle}, predicting 0 {zero}), epsilon spent {}",
        mse(&v),
        v["epsilon"]
    );
    assert!(mse(&v) <= 1.1 * oracle, "{} vs oracle {oracle}", mse(&v));
    assert!(zero > 1.5, "{zero}");
    assert_eq!(
        sources(&v),
        [
            ("x_bound".to_string(), "estimated".to_string()),
            ("y_bound".to_string(), "estimated".to_string())
        ]
    );
    for b in v["bounds"].as_array().unwrap() {
        assert_eq!(b["epsilon"].as_f64().map(|e| e <= 0.05), Some(true), "{b}");
        assert_eq!(b["quantile"].as_f64(), Some(0.99));
    }
    assert!(v["epsilon"].as_f64().unwrap() <= 1.0);
    // Public bounds are reported as such and cost nothing.
    let p = train(
        &tr,
        &te,
        "--algorithm ssp --loss squared --x-bound 6 --y-bound 4",
    );
    assert_eq!(
        sources(&p),
        [
            ("x_bound".to_string(), "flag".to_string()),
            ("y_bound".to_string(), "flag".to_string())
        ]
    );
    eprintln!("ssp with --x-bound 6 --y-bound 4: {}", mse(&p));
    assert!(mse(&p) <= 1.1 * oracle, "{}", mse(&p));
}

/// DP-SSGD (clip estimated, step size from the public rule), objective perturbation (X and
/// clip estimated), output perturbation (X and Y estimated, ridge from the public rule) and
/// DP-AMBSSGD (X estimated, batch size from the public rule `DpAmbSsgd::batch_size_for`)
/// with defaults beat predicting 0 (test MSE 1.99). Measured: 1.101, 0.995, 1.139, 1.183
/// (oracle 0.995). DP-AMBSSGD's test MSE varies with the seeded stream: seeds 1–6 gave
/// 1.11–1.52 (and 1.08–1.49 with another draw order of the same noise law), so its bound is
/// 1.75 × oracle, not a value one seed happened to meet. DP-AMBSSGD with its former fixed
/// batch of 1000 (41 noisy steps) measured 4.29 on this problem (issue 10), worse than
/// predicting 0.
#[test]
fn squared_loss_learners_with_default_bounds_beat_predicting_zero() {
    let dir = TempDir::new().unwrap();
    let (tr, te, oracle, zero) = regression_files(dir.path());
    for (alg, at_most) in [
        ("dp-ssgd", 1.3),
        ("objpert", 1.05),
        ("output-perturbation", 1.3),
        ("dp-ambssgd", 1.75),
    ] {
        let v = train(&tr, &te, &format!("--algorithm {alg} --loss squared"));
        eprintln!(
            "{alg}: {} (oracle {oracle}, predicting 0 {zero}), epsilon spent {}",
            mse(&v),
            v["epsilon"]
        );
        assert!(mse(&v) < zero, "{alg}: {} vs predicting 0: {zero}", mse(&v));
        assert!(mse(&v) <= at_most * oracle, "{alg}: {}", mse(&v));
        assert!(v["epsilon"].as_f64().unwrap() <= 1.0, "{alg}");
        assert!(
            sources(&v).iter().all(|(_, s)| s == "estimated"),
            "{alg}: {:?}",
            sources(&v)
        );
    }
}

/// Logistic regression on features with scales 0.1…100 and offsets (by default each feature
/// is scaled min–max from a privately estimated range to [−1, 1] and clipped, so X is public
/// and the clip the learner's default; `--preprocess none --scale none` estimates X, or the
/// clip). Every learner must beat the majority class. The 2-point target against non-private
/// logistic regression is tests/scaling.rs's. Not asserted: output perturbation with
/// `--preprocess none --scale none` (0.453 when first measured, below the majority class
/// 0.506: with offsets of ±50 the estimated X ≈ 300 makes its gradient bound so loose that
/// the noise decides the sign) — not a default. Measured with the default scaling: objpert
/// 0.774, output perturbation 0.762, DP-SGD 0.771, AMP 0.768; objpert with `--preprocess
/// none --scale none` 0.640; majority class 0.506; non-private logistic regression 0.773 on
/// standardised features (numpy, Newton's method, when the test was first written).
#[test]
fn logistic_learners_with_default_bounds_beat_the_majority_class() {
    let dir = TempDir::new().unwrap();
    let (tr, te) = (dir.path().join("train.csv"), dir.path().join("test.csv"));
    write_csv(&tr, &classification(20_000, 3));
    let test_rows = classification(5_000, 4);
    let positive = test_rows.iter().filter(|(_, y)| *y > 0.0).count() as f64;
    let majority = positive.max(test_rows.len() as f64 - positive) / test_rows.len() as f64;
    write_csv(&te, &test_rows);
    // (algorithm, flags, accuracy at least): above the majority class in every case.
    let cases = [
        ("objpert", "", majority + 0.1),
        ("objpert", "--preprocess none --scale none", majority + 0.1),
        ("output-perturbation", "", majority + 0.05),
        ("dp-sgd", "", majority + 0.1),
        ("amp", "", majority + 0.1),
    ];
    for (alg, extra, at_least) in cases {
        let v = train(
            &tr,
            &te,
            &format!("--algorithm {alg} --loss logistic {extra}"),
        );
        let acc = v["test_accuracy"].as_f64().unwrap();
        eprintln!(
            "{alg} {extra}: {acc} (majority {majority}), epsilon spent {}",
            v["epsilon"]
        );
        assert!(acc > at_least, "{alg} {extra}: {acc} vs {majority}");
        let want = if extra.is_empty() {
            ["preprocessing", "default"]
        } else {
            ["estimated", "estimated"]
        };
        assert!(
            sources(&v).iter().all(|(_, s)| want.contains(&s.as_str())),
            "{alg} {extra}: {:?}",
            sources(&v)
        );
    }
}

/// The bounds reach the model file, and a bad `--bounds-budget` names the flag.
#[test]
fn bounds_are_in_the_model_file_and_the_share_is_checked() {
    let dir = TempDir::new().unwrap();
    let (rows, _) = regression(2_000, 5);
    let tr = dir.path().join("train.csv");
    write_csv(&tr, &rows);
    let model = dir.path().join("model.json");
    let o = common::dpglm(&format!(
        "train --data {} --label y --algorithm ssp --loss squared --epsilon 1 --delta 1e-5 \
         --seed 1 --x-bound 6 --bounds-budget 0.2 --out {}",
        tr.display(),
        model.display()
    ));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("bound x_bound = 6: public (given by --x-bound)"),
        "{text}"
    );
    assert!(
        text.contains("bound y_bound = ") && text.contains("estimated privately"),
        "{text}"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let bounds = file["privacy"]["bounds"].as_array().unwrap();
    assert_eq!(bounds[0]["source"], "flag");
    assert_eq!(bounds[1]["source"], "estimated");
    // The one estimate gets the whole 20% share; the learner the remaining 0.8.
    let eps = bounds[1]["epsilon"].as_f64().unwrap();
    assert!(eps <= 0.2 && eps > 0.19, "{eps}");
    assert!(file["privacy"]["epsilon"].as_f64().unwrap() <= 1.0);
    let ledger = saved::releases(&file["privacy"]);
    assert_eq!(ledger[0]["mechanism"], "pure-dp");
    for bad in ["0", "1", "-0.5", "nan"] {
        let o = common::dpglm(&format!(
            "train --data {} --label y --algorithm ssp --loss squared --epsilon 1 --delta 1e-5 \
             --bounds-budget {bad}",
            tr.display()
        ));
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--bounds-budget"), "{bad}: {err}");
    }
}

/// With estimated bounds, AMP and objective perturbation are calibrated against the whole
/// ledger (issue 10 §3): the run's total ε, the accountant's price of the estimates and the
/// learner together, is at most `--epsilon 1` and spends at least 99% of it. AMP with the 20
/// private feature ranges of `--scale minmax` (forced: 2,000 rows are below the default's
/// minimum) spent 0.823 when the learner got the ε basic composition left; objective
/// perturbation on raw features estimates the row bound X.
#[test]
fn amp_and_objpert_with_estimated_bounds_spend_the_whole_target() {
    let dir = TempDir::new().unwrap();
    let (tr, te) = (dir.path().join("train.csv"), dir.path().join("test.csv"));
    write_csv(&tr, &classification(2_000, 5));
    write_csv(&te, &classification(500, 6));
    let model = dir.path().join("model.json");
    for (alg, extra, count) in [
        // The estimates and the private row count (add/remove, no --n).
        ("amp", "--scale minmax", 21),
        ("objpert", "--preprocess none --scale none", 2),
    ] {
        let v = train(
            &tr,
            &te,
            &format!(
                "--algorithm {alg} --loss logistic {extra} --out {}",
                model.display()
            ),
        );
        let spent = v["epsilon"].as_f64().unwrap();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
        let estimates = saved::releases(&file["privacy"])
            .iter()
            .filter(|e| e["mechanism"] == "pure-dp")
            .count();
        eprintln!("{alg} {extra}: epsilon {spent} after {estimates} estimate(s)");
        assert_eq!(estimates, count, "{alg}: {}", file["privacy"]["event"]);
        assert!((0.99..=1.0).contains(&spent), "{alg}: {spent}");
    }
}
