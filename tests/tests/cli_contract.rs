//! The command-line contract of `dpglm account` and `dpglm calibrate` (spec/CLI.md), run
//! in-process through [`dp_cli::run`]: JSON field names and types, exit codes, error messages
//! that name the bad flag and value, and agreement with the library.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;

use dp_accounting::{
    AccountantKind, Mechanism, Neighbouring, ObjPertParams, epsilon_of, gaussian_delta,
    gaussian_epsilon,
};
use serde_json::{Map, Value};

/// What one run of `dpglm` produced.
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `dpglm` with the whitespace-separated `args`.
fn dpglm(args: &str) -> Output {
    let mut argv = vec!["dpglm".to_string()];
    argv.extend(args.split_whitespace().map(str::to_string));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = dp_cli::run(&argv, &mut out, &mut err);
    Output {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

/// Runs a command that must succeed with `--json`, and returns its single JSON object.
fn json(args: &str) -> Map<String, Value> {
    let o = dpglm(&format!("{args} --json"));
    assert_eq!(o.code, 0, "`{args}` failed: {}", o.stderr);
    assert!(
        o.stderr.is_empty(),
        "`{args}` wrote to stderr: {}",
        o.stderr
    );
    let values: Vec<Value> = serde_json::Deserializer::from_str(&o.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("`{args}`: stdout is not JSON ({e}): {}", o.stdout));
    assert_eq!(
        values.len(),
        1,
        "`{args}`: not exactly one JSON value: {}",
        o.stdout
    );
    match values.into_iter().next() {
        Some(Value::Object(m)) => m,
        other => panic!("`{args}`: not a JSON object: {other:?}"),
    }
}

fn keys(m: &Map<String, Value>) -> BTreeSet<&str> {
    m.keys().map(String::as_str).collect()
}

fn num(m: &Map<String, Value>, k: &str) -> f64 {
    let v = m[k]
        .as_f64()
        .unwrap_or_else(|| panic!("`{k}` is not a number: {m:?}"));
    assert!(v.is_finite(), "`{k}` = {v}");
    v
}

/// `a == b` up to the last bit or two: serde_json's default float parser (without its
/// `float_roundtrip` feature) may be one ulp off the printed shortest representation.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-15 * a.abs().max(b.abs())
}

fn text<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m[k].as_str()
        .unwrap_or_else(|| panic!("`{k}` is not a string: {m:?}"))
}

/// Checks the `account` object's fields and types; returns it.
fn account(args: &str) -> Map<String, Value> {
    let m = json(&format!("account {args}"));
    let want: BTreeSet<&str> = [
        "epsilon",
        "delta",
        "accountant",
        "mechanism",
        "steps",
        "neighbouring",
        "epsilon_lower",
        "fallback",
        "notes",
        "q",
        "seconds",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys(&m), want, "`account {args}`: fields");
    assert!(num(&m, "epsilon") >= 0.0);
    let d = num(&m, "delta");
    assert!((0.0..=1.0).contains(&d), "delta {d}");
    assert!(["pld", "rdp", "zcdp", "exact"].contains(&text(&m, "accountant")));
    assert!(["add-remove", "replace-one"].contains(&text(&m, "neighbouring")));
    assert!(m["steps"].is_u64(), "steps: {:?}", m["steps"]);
    match &m["epsilon_lower"] {
        Value::Null => {}
        Value::Number(n) => {
            let l = n.as_f64().unwrap();
            assert!(
                l.is_finite() && l >= 0.0 && l <= num(&m, "epsilon"),
                "{m:?}"
            );
        }
        other => panic!("epsilon_lower must be a number or null: {other:?}"),
    }
    assert!(num(&m, "seconds") >= 0.0);
    m
}

/// Checks the `calibrate` object's fields and types, and ε ≤ target; returns it.
fn calibrate(args: &str, target: f64) -> Map<String, Value> {
    let m = json(&format!("calibrate {args} --target-epsilon {target}"));
    let want: BTreeSet<&str> = ["sigma", "epsilon", "delta", "accountant"]
        .into_iter()
        .collect();
    assert_eq!(keys(&m), want, "`calibrate {args}`: fields");
    assert!(num(&m, "sigma") > 0.0);
    let e = num(&m, "epsilon");
    assert!(
        e > 0.0 && e <= target,
        "`calibrate {args}`: epsilon {e} > target {target}"
    );
    assert!(["pld", "rdp"].contains(&text(&m, "accountant")));
    m
}

const OBJPERT: &str = "--lambda 1 --beta 0.5 --lipschitz 1.4142135623730951";

#[test]
fn account_json_for_every_mechanism() {
    // (flags, mechanism, accountant, neighbouring, steps)
    let cases = [
        (
            "--mechanism gaussian --sigma 1",
            "gaussian",
            "pld",
            "add-remove",
            1,
        ),
        (
            "--mechanism gaussian --sigma 2 --sensitivity 0.5 --steps 10 --accountant exact",
            "gaussian",
            "exact",
            "add-remove",
            10,
        ),
        (
            "--mechanism gaussian --sigma 2 --steps 10 --accountant zcdp",
            "gaussian",
            "zcdp",
            "add-remove",
            10,
        ),
        (
            "--mechanism gaussian --sigma 1 --neighbouring replace-one --accountant rdp",
            "gaussian",
            "rdp",
            "replace-one",
            1,
        ),
        (
            "--mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 1000",
            "subsampled-gaussian",
            "pld",
            "add-remove",
            1000,
        ),
        (
            "--mechanism subsampled-gaussian --sigma 1 --q 0.01 --sampling poisson --steps 1000 --accountant rdp",
            "subsampled-gaussian",
            "rdp",
            "add-remove",
            1000,
        ),
        (
            "--mechanism subsampled-gaussian --sigma 1 --q 0.01 --sampling without-replacement --n 1000 --steps 100",
            "subsampled-gaussian",
            "rdp",
            "replace-one",
            100,
        ),
        (
            "--mechanism laplace --scale 1 --steps 3",
            "laplace",
            "pld",
            "add-remove",
            3,
        ),
        (
            "--mechanism laplace --scale 2 --sensitivity 0.5 --accountant exact",
            "laplace",
            "exact",
            "add-remove",
            1,
        ),
        (
            "--mechanism objpert --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951",
            "objpert",
            "pld",
            "add-remove",
            1,
        ),
        (
            "--mechanism objpert --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951 --accountant exact",
            "objpert",
            "exact",
            "add-remove",
            1,
        ),
        (
            "--mechanism amp --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951 --tau 5e-4 --sigma-out 0.15",
            "amp",
            "pld",
            "add-remove",
            1,
        ),
        (
            "--mechanism amp --sigma 1 --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951 --tau 5e-4 --sigma-out 0.15 --accountant rdp",
            "amp",
            "rdp",
            "add-remove",
            1,
        ),
        (
            "--mechanism gamma-ball --scale 0.57 --q 0.0042 --dim 10 --steps 2381",
            "gamma-ball",
            "pld",
            "add-remove",
            2381,
        ),
        (
            "--mechanism gamma-ball --scale 0.57 --q 0.0042 --dim 10 --steps 2381 --accountant rdp",
            "gamma-ball",
            "rdp",
            "add-remove",
            2381,
        ),
    ];
    for (flags, mech, acc, rel, steps) in cases {
        let m = account(&format!("{flags} --delta 1e-5"));
        assert_eq!(text(&m, "mechanism"), mech, "{flags}");
        assert_eq!(text(&m, "accountant"), acc, "{flags}");
        assert_eq!(text(&m, "neighbouring"), rel, "{flags}");
        assert_eq!(m["steps"].as_u64(), Some(steps), "{flags}");
        assert!(same(num(&m, "delta"), 1e-5), "{flags}");
        let e = num(&m, "epsilon");
        assert!(e > 0.0 && e < 100.0, "{flags}: epsilon {e}");
        // The lower estimate is computed only on request (`--lower`), by the PLD only.
        assert!(m["epsilon_lower"].is_null(), "{flags}: {m:?}");
        let lower = account(&format!("{flags} --delta 1e-5 --lower"));
        assert_eq!(
            lower["epsilon_lower"].is_number(),
            acc == "pld",
            "{flags}: {lower:?}"
        );
        if acc == "pld" {
            assert!(num(&lower, "epsilon_lower") <= e, "{flags}: {lower:?}");
        }
    }
}

#[test]
fn account_agrees_with_the_library() {
    let m = account("--mechanism gaussian --sigma 1 --accountant exact --delta 1e-5");
    assert_eq!(
        num(&m, "epsilon"),
        gaussian_epsilon(1.0, 1.0, 1e-5).unwrap()
    );
    // MATH §5: σ = 1, T = 1, δ = 1e-5 under replace-one is ε ≈ 9.997.
    let m = account(
        "--mechanism gaussian --sigma 1 --accountant exact --neighbouring replace-one --delta 1e-5",
    );
    assert!((num(&m, "epsilon") - 9.997).abs() < 5e-4, "{m:?}");
    let m = account("--mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 1000 --delta 1e-5");
    let want = epsilon_of(
        AccountantKind::Pld,
        Neighbouring::AddRemove,
        &Mechanism::subsampled_gaussian(1.0, 0.01).unwrap(),
        1000,
        1e-5,
    )
    .unwrap();
    assert!(same(num(&m, "epsilon"), want), "{m:?} vs {want}");
    let m = account(
        "--mechanism subsampled-gaussian --sigma 1 --q 0.01 --sampling without-replacement \
         --n 1000 --steps 100 --delta 1e-5",
    );
    let want = epsilon_of(
        AccountantKind::Rdp,
        Neighbouring::ReplaceOne,
        &Mechanism::subsampled_gaussian_without_replacement(1.0, 10, 1000).unwrap(),
        100,
        1e-5,
    )
    .unwrap();
    assert!(same(num(&m, "epsilon"), want), "{m:?} vs {want}");
    let p = ObjPertParams::new(1.0, 1.0, 0.5, std::f64::consts::SQRT_2).unwrap();
    let m = account(&format!(
        "--mechanism amp --sigma 1 {OBJPERT} --tau 5e-4 --sigma-out 0.15 --delta 1e-5"
    ));
    let want = epsilon_of(
        AccountantKind::Pld,
        Neighbouring::AddRemove,
        &Mechanism::amp(p, 5e-4, 0.15).unwrap(),
        1,
        1e-5,
    )
    .unwrap();
    assert!(same(num(&m, "epsilon"), want), "{m:?} vs {want}");
}

#[test]
fn account_with_epsilon_returns_delta() {
    for acc in ["pld", "rdp", "zcdp", "exact"] {
        let m = account(&format!(
            "--mechanism gaussian --sigma 2 --steps 4 --accountant {acc} --epsilon 1"
        ));
        assert_eq!(num(&m, "epsilon"), 1.0, "{acc}");
        let d = num(&m, "delta");
        // 4 Gaussians with σ = 2 are one with σ = 1: δ(1) = 0.1269…; every accountant is
        // an upper bound, the exact one equal to it.
        let exact = gaussian_delta(1.0, 1.0, 1.0).unwrap();
        assert!(
            d >= exact * (1.0 - 1e-12) && d < 1.0,
            "{acc}: delta {d} vs {exact}"
        );
        if acc == "exact" {
            // Equal up to the accountant's 8-ulp rounding up of the ratio.
            assert!(d >= exact && d <= exact * (1.0 + 1e-13), "{d} vs {exact}");
        }
        assert!(m["epsilon_lower"].is_null(), "{acc}: {m:?}");
    }
    let m = account("--mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 100 --epsilon 2");
    let d = num(&m, "delta");
    assert!(d > 0.0 && d < 1e-5, "{d}");
}

#[test]
fn calibrate_json_for_every_mechanism() {
    let d = "--delta 1e-5";
    let cases = [
        ("--mechanism gaussian --steps 10", 1.0, "pld"),
        (
            "--mechanism gaussian --sensitivity 2 --steps 1 --accountant rdp",
            1.0,
            "rdp",
        ),
        (
            "--mechanism subsampled-gaussian --q 0.01 --steps 1000",
            1.0,
            "pld",
        ),
        (
            "--mechanism subsampled-gaussian --q 0.01 --sampling poisson --steps 1000 --accountant rdp",
            1.0,
            "rdp",
        ),
        (
            "--mechanism subsampled-gaussian --q 0.01 --sampling without-replacement --n 1000 --steps 100",
            2.0,
            "rdp",
        ),
        ("--mechanism laplace --steps 5", 2.0, "pld"),
        (
            "--mechanism objpert --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951 --steps 1",
            1.0,
            "pld",
        ),
        (
            "--mechanism amp --lambda 1 --beta 0.5 --lipschitz 1.4142135623730951 --tau 5e-4 --sigma-out 0.15 --steps 1",
            1.0,
            "pld",
        ),
        (
            "--mechanism gamma-ball --q 0.0042 --dim 10 --steps 2381",
            5.0,
            "pld",
        ),
    ];
    for (flags, target, acc) in cases {
        let m = calibrate(&format!("{flags} {d}"), target);
        assert_eq!(text(&m, "accountant"), acc, "{flags}");
        assert!(same(num(&m, "delta"), 1e-5), "{flags}");
    }
    // The returned noise meets the target under the library's accountant, and is tight.
    let m = calibrate(
        "--mechanism subsampled-gaussian --q 0.01 --steps 1000 --delta 1e-5",
        1.0,
    );
    let sigma = num(&m, "sigma");
    let eps = |s: f64| {
        epsilon_of(
            AccountantKind::Pld,
            Neighbouring::AddRemove,
            &Mechanism::subsampled_gaussian(s, 0.01).unwrap(),
            1000,
            1e-5,
        )
        .unwrap()
    };
    assert!(same(eps(sigma), num(&m, "epsilon")), "{m:?}");
    assert!(eps(sigma * 0.999) > 1.0, "σ = {sigma} is not tight");
}

#[test]
fn human_readable_output_is_not_json() {
    for args in [
        "account --mechanism gaussian --sigma 1 --delta 1e-5",
        "account --mechanism gaussian --sigma 1 --epsilon 1",
        "calibrate --mechanism gaussian --steps 10 --target-epsilon 1 --delta 1e-5",
    ] {
        let o = dpglm(args);
        assert_eq!(o.code, 0, "`{args}`: {}", o.stderr);
        assert!(!o.stdout.trim().is_empty(), "`{args}`: empty output");
        assert!(
            serde_json::from_str::<Value>(&o.stdout).is_err(),
            "`{args}` printed JSON without --json: {}",
            o.stdout
        );
    }
}

/// Asserts exit code 2, nothing on stdout, and a stderr message containing every `needle`.
fn usage_error(args: &str, needles: &[&str]) {
    let o = dpglm(args);
    assert_eq!(o.code, 2, "`{args}`: exit code {} ({})", o.code, o.stderr);
    assert!(
        o.stdout.is_empty(),
        "`{args}` wrote to stdout: {}",
        o.stdout
    );
    for n in needles {
        assert!(
            o.stderr.contains(n),
            "`{args}`: stderr does not name `{n}`: {}",
            o.stderr
        );
    }
    assert!(!o.stderr.contains("panicked"), "`{args}`: {}", o.stderr);
}

#[test]
fn invalid_input_exits_2_naming_the_flag_and_value() {
    for json in ["", " --json"] {
        let a = |s: &str| format!("account {s}{json}");
        let c = |s: &str| format!("calibrate {s}{json}");
        usage_error(
            &a("--mechanism gaussian --sigma -1 --delta 1e-5"),
            &["--sigma", "-1"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma 0 --delta 1e-5"),
            &["--sigma", "0"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma NaN --delta 1e-5"),
            &["--sigma", "NaN"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma inf --delta 1e-5"),
            &["--sigma", "inf"],
        );
        usage_error(
            &a("--mechanism subsampled-gaussian --sigma 1 --q 1.5 --delta 1e-5"),
            &["--q", "1.5"],
        );
        usage_error(
            &a("--mechanism subsampled-gaussian --sigma 1 --q 0 --delta 1e-5"),
            &["--q", "0"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma 1 --delta 2"),
            &["--delta", "2"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma 1 --delta 0"),
            &["--delta", "0"],
        );
        usage_error(
            &a("--mechanism laplace --scale -2 --delta 1e-5"),
            &["--scale", "-2"],
        );
        usage_error(
            &a("--mechanism objpert --sigma 1 --lambda 0.4 --beta 0.5 --lipschitz 1 --delta 1e-5"),
            &["--lambda", "0.4"],
        );
        usage_error(
            &a("--mechanism objpert --sigma 1 --lambda 0.5 --beta 0.5 --lipschitz 1 --delta 1e-5"),
            &["--lambda", "0.5"],
        );
        usage_error(
            &a(&format!(
                "--mechanism amp --sigma 1 {OBJPERT} --tau 5e-4 --sigma-out -0.15 --delta 1e-5"
            )),
            &["--sigma-out", "-0.15"],
        );
        // Missing required flags.
        usage_error(&a("--mechanism gaussian --delta 1e-5"), &["--sigma"]);
        usage_error(
            &a("--mechanism subsampled-gaussian --sigma 1 --delta 1e-5"),
            &["--q"],
        );
        usage_error(
            &a(
                "--mechanism subsampled-gaussian --sigma 1 --q 0.01 --sampling without-replacement --delta 1e-5",
            ),
            &["--n"],
        );
        usage_error(
            &a("--mechanism objpert --sigma 1 --beta 0.5 --lipschitz 1 --delta 1e-5"),
            &["--lambda"],
        );
        usage_error(
            &a("--mechanism gamma-ball --scale 1 --q 0.01 --delta 1e-5"),
            &["--dim"],
        );
        usage_error(&a("--sigma 1 --delta 1e-5"), &["--mechanism"]);
        usage_error(
            &a("--mechanism gaussian --sigma 1"),
            &["--delta", "--epsilon"],
        );
        // Flags that do not apply.
        usage_error(
            &a("--mechanism gaussian --sigma 1 --q 0.1 --delta 1e-5"),
            &["--q"],
        );
        usage_error(
            &a("--mechanism laplace --scale 1 --sigma 1 --delta 1e-5"),
            &["--sigma"],
        );
        usage_error(
            &a("--mechanism subsampled-gaussian --sigma 1 --q 0.1 --n 100 --delta 1e-5"),
            &["--n"],
        );
        // Unknown mechanism, accountant, relation.
        usage_error(
            &a("--mechanism foo --sigma 1 --delta 1e-5"),
            &["--mechanism", "foo"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma 1 --delta 1e-5 --accountant bar"),
            &["--accountant", "bar"],
        );
        usage_error(
            &a("--mechanism gaussian --sigma 1 --delta 1e-5 --neighbouring baz"),
            &["--neighbouring", "baz"],
        );
        // Both queries.
        usage_error(
            &a("--mechanism gaussian --sigma 1 --delta 1e-5 --epsilon 1"),
            &["--delta", "--epsilon"],
        );
        // Unsupported mechanism/relation/accountant combinations are invalid input too.
        usage_error(
            &a(
                "--mechanism subsampled-gaussian --sigma 1 --q 0.1 --neighbouring replace-one --delta 1e-5",
            ),
            &["replace-one"],
        );
        usage_error(
            &a("--mechanism subsampled-gaussian --sigma 1 --q 0.1 --accountant zcdp --delta 1e-5"),
            &["zcdp"],
        );
        usage_error(
            &a(&format!(
                "--mechanism objpert --sigma 1 {OBJPERT} --neighbouring replace-one --delta 1e-5"
            )),
            &["replace-one"],
        );

        usage_error(
            &c("--mechanism gaussian --sigma 1 --steps 1 --target-epsilon 1 --delta 1e-5"),
            &["--sigma"],
        );
        usage_error(
            &c("--mechanism gaussian --steps 1 --target-epsilon 1 --delta 2"),
            &["--delta", "2"],
        );
        usage_error(
            &c("--mechanism gaussian --steps 1 --target-epsilon 0 --delta 1e-5"),
            &["--target-epsilon", "0"],
        );
        usage_error(
            &c("--mechanism subsampled-gaussian --q 1.5 --steps 1 --target-epsilon 1 --delta 1e-5"),
            &["--q", "1.5"],
        );
        usage_error(
            &c("--mechanism gaussian --target-epsilon 1 --delta 1e-5"),
            &["--steps"],
        );
        usage_error(
            &c("--mechanism gaussian --steps 1 --target-epsilon 1 --delta 1e-5 --accountant exact"),
            &["--accountant", "exact"],
        );
        usage_error(
            &c("--mechanism foo --steps 1 --target-epsilon 1 --delta 1e-5"),
            &["--mechanism", "foo"],
        );
    }
    usage_error("frobnicate", &["frobnicate"]);
}

/// Negative values of the query flags are rejected naming the flag, like `--sigma -1` is.
#[test]
fn negative_query_values_name_the_flag() {
    usage_error(
        "account --mechanism gaussian --sigma 1 --delta -1e-5",
        &["--delta", "-1e-5"],
    );
    usage_error(
        "account --mechanism gaussian --sigma 1 --epsilon -1",
        &["--epsilon", "-1"],
    );
    usage_error(
        "calibrate --mechanism gaussian --steps 1 --target-epsilon -1 --delta 1e-5",
        &["--target-epsilon", "-1"],
    );
}

#[test]
fn unanswerable_questions_fail_without_output() {
    // δ below the PLD grid's resolution: an error, not a number (a Gaussian alone would be
    // answered in closed form, so the question is about a subsampled one).
    let o = dpglm(
        "account --mechanism subsampled-gaussian --sigma 1 --q 0.01 --steps 10 --accountant pld \
         --delta 1e-30 --json",
    );
    assert_ne!(o.code, 0, "{}", o.stdout);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(o.stderr.contains("delta"), "{}", o.stderr);
}

#[test]
fn help_and_version_go_to_stdout() {
    for args in ["--help", "account --help", "calibrate --help", "--version"] {
        let o = dpglm(args);
        assert_eq!(o.code, 0, "`{args}`: {}", o.stderr);
        assert!(!o.stdout.is_empty() && o.stderr.is_empty(), "`{args}`");
    }
    let o = dpglm("account --help");
    for flag in [
        "--mechanism",
        "--steps",
        "--delta",
        "--epsilon",
        "--accountant",
        "--neighbouring",
        "--json",
        "--sigma",
        "--q",
        "--sampling",
        "--n",
        "--scale",
        "--lambda",
        "--beta",
        "--lipschitz",
        "--tau",
        "--sigma-out",
        "--dim",
        "--sensitivity",
    ] {
        assert!(o.stdout.contains(flag), "account --help lacks {flag}");
    }
}
