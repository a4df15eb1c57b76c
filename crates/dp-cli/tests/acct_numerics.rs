//! Issue 32, §8, through the binary: a subnormal `--delta` is refused (it under-reported ε),
//! objective perturbation with λ close to β is accounted from the exact `λ − β`, and AMP
//! under `--accountant exact` is refused by the exact accountant, not in the PLD's words.
//! Reference values: `dp-accounting`'s `tests/fixtures/tiny_delta.json` and `objpert_c.json`
//! (mpmath).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::dpglm;

/// Runs `args`, expecting a usage error (exit 2); returns its stderr.
fn usage_error(args: &str) -> String {
    let o = dpglm(args);
    assert_eq!(o.status.code(), Some(2), "`{args}`: {o:?}");
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn a_subnormal_delta_is_refused_with_the_floor_named() {
    // Printed ε = 38.861280 (the truth is 38.871833) before.
    for args in [
        "account --mechanism gaussian --sigma 1 --delta 5e-324 --accountant exact",
        "account --mechanism gaussian --sigma 1 --delta 5e-324",
        "account --mechanism objpert --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1 --delta 1e-310",
        "account --mechanism subsampled-gaussian --sigma 1 --q 0.01 --delta 1e-320 --accountant exact",
        "calibrate --mechanism gaussian --steps 1 --target-epsilon 38 --delta 5e-324",
    ] {
        let err = usage_error(args);
        let given = args
            .split("--delta ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            err.contains(&format!("--delta: {given} ")),
            "`{args}`: {err}"
        );
        assert!(
            err.contains("smallest accepted delta is 2.2250738585072014e-308"),
            "`{args}`: {err}"
        );
    }
    // The floor itself is answered, above the true 37.922039149548 (fixture).
    let o = dpglm(
        "account --mechanism gaussian --sigma 1 --delta 2.2250738585072014e-308 \
         --accountant exact --json",
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let eps = v["epsilon"].as_f64().unwrap();
    assert!(
        (37.922_039_149_547_78..37.922_039_149_6).contains(&eps),
        "{eps}"
    );
}

#[test]
fn objpert_with_lambda_close_to_beta_is_not_under_reported() {
    // Printed ε = 34.1325978 before; the truth is 34.13286198021296 (objpert_c.json).
    let o = dpglm(
        "account --mechanism objpert --sigma 1 --lambda 0.300000000000042 --beta 0.3 \
         --lipschitz 1 --delta 1e-5 --accountant exact --json",
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let eps = v["epsilon"].as_f64().unwrap();
    let truth = 34.132_861_980_212_96;
    assert!(eps >= truth && eps <= truth * (1.0 + 2e-12), "{eps}");
}

#[test]
fn amp_under_the_exact_accountant_names_exact_and_the_fix() {
    let err = usage_error(
        "account --mechanism amp --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1 --tau 1e-4 \
         --sigma-out 0.1 --delta 1e-5 --accountant exact",
    );
    assert!(
        err.contains("the exact accountant does not support amp("),
        "{err}"
    );
    assert!(err.contains("use the pld or rdp accountant"), "{err}");
    assert!(!err.contains("pld accountant does not support"), "{err}");
}
