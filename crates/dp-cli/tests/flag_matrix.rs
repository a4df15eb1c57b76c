//! Every `train` algorithm × every hyper-parameter and bound flag: a flag the algorithm does
//! not use is refused (exit 2, naming the flag), never silently ignored (spec/CLI.md); a flag
//! it uses changes the released model (two values, same seed, different coefficients).
//!
//! Which flags each algorithm uses is read from the learners' registry
//! ([`dp_glm::catalog`]), the one table the CLI reads too: a parameter the registry lists but
//! the learner's constructor does not pass on fails the second check; one the CLI refuses
//! though the registry lists it fails the first. Every registered parameter (besides the
//! relation and accountant every learner takes) must have a row in [`FLAGS`], and every
//! registered learner is an `--algorithm`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod inprocess;

use std::path::Path;

use dp_glm::catalog::{LEARNERS, Losses};
use inprocess::dpglm;
use tempfile::TempDir;

/// The flag of a registry parameter.
fn flag(name: &str) -> String {
    match name {
        "public_n" => "--n".into(),
        "sampling_rate" => "--sample-rate".into(),
        _ => format!("--{}", name.replace('_', "-")),
    }
}

/// Every flag of the matrix, with two valid values that should give different models and
/// the flags it needs alongside.
const FLAGS: [(&str, [&str; 2], &str); 23] = [
    ("--clip", ["0.5", "2"], ""),
    ("--steps", ["5", "10"], ""),
    ("--epochs", ["1", "2"], ""),
    ("--batch-size", ["50", "100"], ""),
    ("--sample-rate", ["0.05", "0.1"], ""),
    ("--n", ["2000", "4000"], ""),
    ("--batch-schedule", ["poisson", "fixed"], ""),
    ("--learning-rate", ["0.05", "0.2"], ""),
    ("--lambda", ["1", "2"], ""),
    ("--radius", ["0.01", "5"], ""),
    ("--x-bound", ["0.5", "3"], ""),
    ("--y-bound", ["0.5", "3"], ""),
    ("--k", ["1", "2"], ""),
    ("--tau", ["5e-4", "1e-2"], ""),
    ("--sigma-out", ["0.1", "0.2"], ""),
    ("--solver", ["lbfgs", "sag"], ""),
    ("--update", ["sgd", "adam"], ""),
    ("--momentum", ["0.5", "0.9"], "--update momentum"),
    ("--candidates", ["2", "4"], ""),
    ("--models", ["2", "3"], ""),
    (
        "--tune",
        ["honest", "unaccounted"],
        "--learning-rates 0.1,0.5",
    ),
    (
        "--learning-rates",
        ["0.01,0.02", "0.5,1"],
        "--tune unaccounted",
    ),
    (
        "--tune-trials",
        ["2", "4"],
        "--tune honest --learning-rates 0.1,0.5",
    ),
];

/// `rows` rows of 3 features from a fixed sequence: labels ±1 from a linear rule
/// (`classification`) or a noisy linear response.
fn write_data(path: &Path, rows: usize, classification: bool) {
    let mut text = String::from("a,b,c,y\n");
    let mut state = 12_345_u64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for _ in 0..rows {
        let x = [next(), next(), next()];
        let z = 2.0 * x[0] - x[1] + 0.5 * x[2] + 0.3 * next();
        let y = if classification {
            if z >= 0.0 { 1.0 } else { -1.0 }
        } else {
            z
        };
        text.push_str(&format!("{},{},{},{y}\n", x[0], x[1], x[2]));
    }
    std::fs::write(path, text).unwrap();
}

/// The coefficients a run wrote to `out` and its report's notes, or the failure.
fn coefficients(base: &str, extra: &str, out: &Path) -> (Vec<f64>, serde_json::Value) {
    let args: Vec<String> = base
        .split_whitespace()
        .chain(extra.split_whitespace())
        .map(str::to_owned)
        .chain(["--out".to_string(), out.display().to_string()])
        .collect();
    let (code, _, err) = dpglm(&args);
    assert_eq!(code, 0, "{base} {extra}: {err}");
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let coefficients = model["coefficients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    (coefficients, model["privacy"]["notes"].clone())
}

#[test]
fn every_flag_is_used_or_refused_for_every_algorithm() {
    let dir = TempDir::new().unwrap();
    let (class, reg) = (dir.path().join("class.csv"), dir.path().join("reg.csv"));
    write_data(&class, 1500, true);
    write_data(&reg, 1500, false);
    let out = dir.path().join("model.json");
    for learner in LEARNERS {
        let algorithm = learner.name;
        let uses: Vec<String> = learner.params.iter().map(|p| flag(p.name)).collect();
        for u in &uses {
            assert!(
                FLAGS.iter().any(|(f, ..)| f == u),
                "{algorithm}: {u} has no row in FLAGS"
            );
        }
        let (data, loss) = if learner.losses == Losses::Squared {
            (&reg, "squared")
        } else {
            (&class, "logistic")
        };
        let base = format!(
            "train --data {} --label y --algorithm {algorithm} --loss {loss} --epsilon 1 \
             --delta 1e-5 --seed 7 --scale none",
            data.display()
        );
        for (flag, [v1, v2], needs) in FLAGS {
            if uses.iter().any(|u| u == flag) {
                let a = coefficients(&base, &format!("{needs} {flag} {v1}"), &out);
                let b = coefficients(&base, &format!("{needs} {flag} {v2}"), &out);
                // AMP's public n sizes only the box its point is clamped to, which holds the
                // minimiser of a data set of up to n rows; SSP's sizes lambda_min's allowance:
                // at these n either shows in the report, not in the coefficients.
                if matches!((algorithm, flag), ("amp" | "ssp", "--n")) {
                    assert_ne!(
                        a.1, b.1,
                        "{algorithm}: {flag} {v1} and {v2} give one report"
                    );
                } else {
                    assert_ne!(
                        a.0, b.0,
                        "{algorithm}: {flag} {v1} and {v2} give the same model"
                    );
                }
            } else {
                let mut args: Vec<&str> = base.split_whitespace().collect();
                args.extend([flag, v1]);
                let (code, stdout, err) = dpglm(&args);
                assert_eq!(code, 2, "{algorithm} {flag} was accepted: {stdout}{err}");
                assert!(
                    err.contains(&format!("{flag} does not apply to --algorithm {algorithm}")),
                    "{algorithm} {flag}: {err}"
                );
            }
        }
    }
}
