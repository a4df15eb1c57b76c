//! `dpglm account` in TF Privacy's vocabulary: `--n N --batch-size B --epochs E` for the
//! subsampled Gaussian means `q = B/N` and `steps = ceil(E·N/B)`, and prices exactly what
//! `--q B/N --steps ceil(E·N/B)` prices; conflicting or incomplete flags are refused.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use serde_json::Value;

/// The exit code, stdout and stderr of `dpglm args`.
fn dpglm(args: &str) -> (i32, String, String) {
    let o = common::dpglm(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout),
        text(&o.stderr),
    )
}

/// The JSON answer of a successful `account` run.
fn json(args: &str) -> Value {
    let (code, out, err) = dpglm(&format!("{args} --json"));
    assert_eq!(code, 0, "`{args}`: {err}");
    serde_json::from_str(&out).unwrap()
}

/// The exit code and stderr of a failing run.
fn refused(args: &str) -> (i32, String) {
    let (code, out, err) = dpglm(args);
    assert!(out.is_empty(), "`{args}`: {out}");
    (code, err)
}

const BASE: &str = "account --mechanism subsampled-gaussian --sigma 1.1 --delta 1e-5";

#[test]
fn batch_size_and_epochs_mean_q_and_steps() {
    // n = 60,000, B = 256, E = 60 (TF Privacy's MNIST tutorial): q = 256/60000,
    // steps = ceil(60 · 60000 / 256) = ceil(14062.5) = 14063.
    let tf = json(&format!("{BASE} --n 60000 --batch-size 256 --epochs 60"));
    assert_eq!(tf["steps"].as_u64(), Some(14_063));
    assert_eq!(tf["q"].as_f64(), Some(256.0 / 60_000.0));
    let plain = json(&format!("{BASE} --q {} --steps 14063", 256.0 / 60_000.0));
    assert_eq!(plain["q"].as_f64(), Some(256.0 / 60_000.0));
    assert_eq!(tf["epsilon"], plain["epsilon"]);
    assert_eq!(tf["accountant"], plain["accountant"]);
    let eps = tf["epsilon"].as_f64().unwrap();
    // TF Privacy's tutorial reports ε ≈ 3 here (RDP); PLD is tighter but the same size.
    assert!(eps > 1.5 && eps < 3.5, "{eps}");
    // Exact division: steps = E·N/B.
    let even = json(&format!("{BASE} --n 1000 --batch-size 100 --epochs 3"));
    assert_eq!(even["steps"].as_u64(), Some(30));
    assert_eq!(even["q"].as_f64(), Some(0.1));
    // Without --epochs the steps are --steps (default 1).
    let one = json(&format!("{BASE} --n 1000 --batch-size 100"));
    assert_eq!(one["steps"].as_u64(), Some(1));
    let ten = json(&format!("{BASE} --n 1000 --batch-size 100 --steps 10"));
    assert_eq!(ten["steps"].as_u64(), Some(10));
    // Mechanisms without a sampling rate report q = null.
    let g = json("account --mechanism gaussian --sigma 2 --delta 1e-5");
    assert_eq!(g["q"], Value::Null);
}

#[test]
fn without_replacement_takes_the_batch_size_as_given() {
    let tf = json(&format!(
        "{BASE} --sampling without-replacement --n 1000 --batch-size 100 --epochs 2"
    ));
    let plain = json(&format!(
        "{BASE} --sampling without-replacement --n 1000 --q 0.1 --steps 20"
    ));
    assert_eq!(tf["steps"].as_u64(), Some(20));
    assert_eq!(tf["epsilon"], plain["epsilon"]);
    assert_eq!(tf["neighbouring"].as_str(), Some("replace-one"));
}

#[test]
fn the_human_summary_says_which_q_and_steps() {
    let (code, out, err) = dpglm(&format!("{BASE} --n 1000 --batch-size 64 --epochs 2"));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("32 x "), "{out}");
    assert!(
        out.contains("q = batch size / n = 64/1000 = 0.064, steps = ceil(2 x 1000 / 64) = 32"),
        "{out}"
    );
}

#[test]
fn conflicting_and_incomplete_flags_are_refused() {
    for (extra, names) in [
        (
            "--n 1000 --batch-size 100 --q 0.1",
            &["--q", "--batch-size"][..],
        ),
        (
            "--n 1000 --batch-size 100 --epochs 2 --steps 5",
            &["--steps", "--epochs"][..],
        ),
        ("--batch-size 100 --q 0.1", &["--batch-size"][..]),
        ("--n 1000 --epochs 2 --q 0.1", &["--batch-size"][..]),
        ("--n 1000 --batch-size 0", &["--batch-size"][..]),
        ("--n 100 --batch-size 101", &["--batch-size"][..]),
        ("--n 1000 --batch-size 100 --epochs 0", &["--epochs"][..]),
        ("--n 1000 --q 0.1", &["--n"][..]),
    ] {
        let (code, err) = refused(&format!("{BASE} {extra}"));
        assert_eq!(code, 2, "{extra}: {err}");
        for name in names {
            assert!(err.contains(name), "{extra}: {err}");
        }
    }
    // Mechanisms without a sampling rate refuse the batch size.
    let (code, err) =
        refused("account --mechanism gaussian --sigma 2 --delta 1e-5 --n 100 --batch-size 10");
    assert_eq!(code, 2);
    assert!(err.contains("--batch-size") || err.contains("--n"), "{err}");
}
