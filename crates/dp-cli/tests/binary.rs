//! The real `dpglm` binary: exit codes, clean error messages (never a panic backtrace) and one
//! JSON object on stdout (spec/CLI.md).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::{Command, Output};

use common::dpglm;

use serde_json::Value;

fn no_panic(args: &str, o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    for bad in ["panicked", "stack backtrace", "RUST_BACKTRACE"] {
        assert!(!err.contains(bad), "`{args}`: {bad} on stderr: {err}");
    }
}

#[test]
fn bad_input_exits_2_with_a_message_and_no_backtrace() {
    for args in [
        "account --mechanism gaussian --sigma -1 --delta 1e-5 --json",
        "account --mechanism subsampled-gaussian --sigma 1 --q 1.5 --delta 1e-5",
        "account --mechanism gaussian --sigma 1 --delta 2 --json",
        "account --mechanism gaussian --delta 1e-5",
        "account --mechanism gaussian --sigma 1 --q 0.1 --delta 1e-5",
        "account --mechanism foo --sigma 1 --delta 1e-5",
        "account --mechanism gaussian --sigma 1 --delta 1e-5 --epsilon 1",
        "calibrate --mechanism gaussian --steps 1 --target-epsilon 1 --delta 2 --json",
        "calibrate --mechanism gaussian --sigma 1 --steps 1 --target-epsilon 1 --delta 1e-5",
        "account --mechanism subsampled-gaussian --sigma 1 --q 0.1 --neighbouring replace-one \
         --delta 1e-5",
        "no-such-command",
        "",
    ] {
        let o = dpglm(args);
        assert_eq!(o.status.code(), Some(2), "`{args}`: {o:?}");
        assert!(o.stdout.is_empty(), "`{args}`: stdout {o:?}");
        assert!(!o.stderr.is_empty(), "`{args}`: no message");
        no_panic(args, &o);
    }
}

#[test]
fn unanswerable_question_exits_non_zero_without_a_backtrace() {
    // δ below the PLD grid's resolution (Gaussians alone are answered in closed form).
    let args = "account --mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 10 \
                --accountant pld --delta 1e-30 --json";
    let o = dpglm(args);
    assert_eq!(o.status.code(), Some(1), "`{args}`: {o:?}");
    assert!(o.stdout.is_empty(), "`{args}`: {o:?}");
    no_panic(args, &o);
}

#[test]
fn good_input_exits_0_with_one_json_object() {
    for args in [
        "account --mechanism gaussian --sigma 1 --delta 1e-5 --json",
        "account --mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 1000 --delta 1e-5 \
         --accountant rdp --json",
        "account --mechanism gaussian --sigma 1 --epsilon 1 --accountant exact --json",
        "calibrate --mechanism gaussian --steps 10 --target-epsilon 1 --delta 1e-5 --json",
    ] {
        let o = dpglm(args);
        assert_eq!(o.status.code(), Some(0), "`{args}`: {o:?}");
        no_panic(args, &o);
        let out = String::from_utf8(o.stdout).unwrap();
        let v: Vec<Value> = serde_json::Deserializer::from_str(&out)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("`{args}`: not JSON ({e}): {out}"));
        assert_eq!(v.len(), 1, "`{args}`: {out}");
        let m = v[0].as_object().unwrap();
        assert!(
            m["epsilon"].as_f64().unwrap().is_finite(),
            "`{args}`: {out}"
        );
        assert!(m["delta"].as_f64().unwrap() > 0.0, "`{args}`: {out}");
    }
    // Without --json: a human-readable line, not JSON.
    let o = dpglm("account --mechanism gaussian --sigma 1 --delta 1e-5");
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(!out.trim().is_empty() && serde_json::from_str::<Value>(&out).is_err());
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_exits_2_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let o = Command::new(env!("CARGO_BIN_EXE_dpglm"))
        .args(["evaluate", "--model"])
        .arg(std::ffi::OsStr::from_bytes(b"m\xff.json"))
        .args(["--data", "x.csv"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("argument 3") && err.contains("not valid UTF-8"),
        "{err}"
    );
    no_panic("non-UTF-8 --model", &o);
}

/// Progress (an indicatif spinner with the optimiser's step) is for a terminal only: with
/// stderr not a terminal (here a pipe), a long `train` run writes nothing to stderr, with or
/// without `--json`, and stdout is the summary alone.
#[test]
fn train_progress_is_quiet_without_a_terminal() {
    let dir = tempfile::TempDir::new().unwrap();
    let data = dir.path().join("d.csv");
    let mut text = String::from("a,b,y\n");
    for i in 0..500 {
        let (a, b) = ((i % 7) as f64 / 7.0 - 0.5, (i % 11) as f64 / 11.0 - 0.5);
        text.push_str(&format!("{a},{b},{}\n", if a + b >= 0.0 { 1 } else { -1 }));
    }
    std::fs::write(&data, text).unwrap();
    for (algorithm, json) in [("dp-sgd", ""), ("dp-gd", "--json"), ("noisy-gd", "")] {
        let args = format!(
            "train --data {} --label y --algorithm {algorithm} --loss logistic --epsilon 1 \
             --delta 1e-5 --seed 1 --preprocess unit-norm --scale none {json}",
            data.display()
        );
        let o = dpglm(&args);
        assert_eq!(o.status.code(), Some(0), "{args}: {o:?}");
        assert!(
            o.stderr.is_empty(),
            "{args}: stderr {:?}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("step "), "{args}: {out}");
    }
}
