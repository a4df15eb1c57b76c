//! Property-based fuzzing of dp-accounting's public constructors and queries (issue 9, §4):
//! arbitrary f64 — NaN, ±∞, ±0, subnormals, 1e-300, 1e300, anything — and counts up to
//! `u64::MAX`. Every call must return a typed error or a valid value (ε, σ finite and ≥ 0,
//! δ in [0, 1]); it must never panic and never hang.
//!
//! `FUZZ_TRACE=1` prints every case before it runs (to find the inputs of an abort, e.g. a
//! failed allocation, which no test can catch).
//!
//! Each call runs on its own thread and is abandoned after [`TIMEOUT`] (a hang is reported
//! with its exact inputs, the test goes on, and fails at the end); panics are caught and
//! reported the same way. Every finding of a property is listed before its assertion fails.
//!
//! Cases per property (fixed seed, reproducible; `PROPTEST_CASES` is not read):
//! * cheap closed forms and constructors: 10,000 each;
//! * the RDP, zCDP and exact accountants on arbitrary mechanisms and counts: 10,000;
//! * the PLD accountant (its grid makes each case cost up to milliseconds when it works and
//!   far more when it does not): 256 cases, of which half with moderate parameters.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use dp_accounting::audit::{TestCounts, clopper_pearson_upper, epsilon_lower_bound};
use dp_accounting::{
    Accountant, AccountantKind, Conversion, DEFAULT_CHAIN, Ledger, Mechanism, Neighbouring,
    ObjPertParams, PldAccountant, PldConfig, Query, RdpAccountant, Repetitions, Target,
    answer_with_fallback, calibrate_noise, calibrate_sampling_rate, calibrate_steps,
    gaussian_delta, gaussian_epsilon, gaussian_sigma, kifer_epsilon, kifer_parameters,
    objpert_delta, objpert_epsilon, objpert_rdp, shuffle_delta, shuffle_epsilon, tuned, zcdp_delta,
    zcdp_epsilon,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// A call that takes longer than this is reported as a hang. Later cases of a call that hung
/// are not run (each would leave another thread spinning) but are counted with the hang.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Cases of the cheap properties.
const CASES: u32 = 10_000;

/// Cases of the PLD property.
const PLD_CASES: u32 = 256;

/// Cases of the RDP-orders, tuning, ledger and calibration property (each case runs three
/// calibration searches of tens of accountant evaluations).
const CALIBRATION_CASES: u32 = 1_000;

/// Thread name of every guarded call: their panics are reported by the test, not the hook.
const CALL_THREAD: &str = "fuzz-call";

/// The call each guarded thread is in (by thread name), so that a hang names its function.
static CURRENT: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// Numbers the guarded threads.
static THREADS: AtomicU64 = AtomicU64::new(0);

fn set_current(func: &str) {
    if let Some(name) = std::thread::current().name() {
        CURRENT
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), func.to_string());
    }
}

thread_local! {
    /// Where the last panic of this thread happened (set by the hook).
    static PANIC_AT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Silences the default panic message of guarded calls and records where they panicked
/// (each is reported with its inputs).
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with(CALL_THREAD))
            {
                let at = info
                    .location()
                    .map_or_else(String::new, |l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            } else {
                default(info);
            }
        }));
    });
}

/// Findings of one property, by class (what failed and how), with a few exact inputs each.
#[derive(Clone, Default)]
#[allow(clippy::type_complexity)]
struct Findings(Arc<Mutex<BTreeMap<String, (u64, Vec<String>)>>>);

/// Examples kept per class.
const EXAMPLES: usize = 3;

impl Findings {
    fn push(&self, class: String, inputs: String) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let e = m.entry(class).or_default();
        e.0 += 1;
        if e.1.len() < EXAMPLES {
            e.1.push(inputs);
        }
    }

    fn has(&self, class: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(class)
    }

    /// Prints every class of finding with its examples and fails if there is one.
    fn assert_none(&self, property: &str, cases: u32) {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for (class, (n, examples)) in m.iter() {
            eprintln!("fuzz {property}: {n} x {class}");
            for e in examples {
                eprintln!("    e.g. {e}");
            }
        }
        let total: u64 = m.values().map(|(n, _)| n).sum();
        eprintln!(
            "fuzz {property}: {cases} cases, {} classes of findings, {total} findings",
            m.len()
        );
        assert!(m.is_empty(), "{property}: {} classes of findings", m.len());
    }
}

/// Digits replaced by `#`, for grouping messages that differ only in numbers.
fn strip_digits(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(120)
        .collect()
}

/// Runs `f` on its own thread; `None` (with a finding) on a panic or a hang. `what` names
/// the call(s) and `inputs` gives their exact arguments.
fn guarded<T: Send + 'static>(
    findings: &Findings,
    what: &str,
    inputs: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    quiet_panics();
    if std::env::var_os("FUZZ_TRACE").is_some() {
        eprintln!("fuzz: {what}: {inputs}");
    }
    let (tx, rx) = mpsc::channel();
    let name = format!("{CALL_THREAD}-{}", THREADS.fetch_add(1, Ordering::Relaxed));
    let spawned = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f));
            let r = r.map_err(|p| {
                (
                    PANIC_AT.with(|a| a.borrow().clone()),
                    panic_message(p.as_ref()),
                )
            });
            let _ = tx.send(r);
        });
    if spawned.is_err() {
        findings.push(format!("could not spawn a thread ({what})"), inputs.into());
        return None;
    }
    match rx.recv_timeout(TIMEOUT) {
        Ok(Ok(v)) => Some(v),
        Ok(Err((at, msg))) => {
            findings.push(
                format!("PANIC in {what} at {at}: {}", strip_digits(&msg)),
                format!("{inputs} ({msg})"),
            );
            None
        }
        Err(_) => {
            let func = CURRENT
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&name)
                .cloned()
                .unwrap_or_else(|| format!("{what} (outside any call)"));
            findings.push(hang_class(&func), inputs.into());
            None
        }
    }
}

/// What a returned number must be.
#[derive(Clone, Copy, Debug)]
enum Valid {
    /// Finite and ≥ 0 (ε).
    Eps,
    /// In [0, 1] (δ, a probability).
    Prob,
    /// Finite and > 0 (σ, a calibrated parameter).
    Positive,
    /// ≥ 0 or +∞, not NaN (an RDP value).
    RdpValue,
}

/// Records a finding unless `v` is valid for `kind`. `func` names the call (the class of the
/// finding), `inputs` its exact arguments.
fn check_value(findings: &Findings, func: &str, inputs: &str, kind: Valid, v: f64) {
    let ok = match kind {
        Valid::Eps => v.is_finite() && v >= 0.0,
        Valid::Prob => (0.0..=1.0).contains(&v),
        Valid::Positive => v.is_finite() && v > 0.0,
        Valid::RdpValue => v >= 0.0,
    };
    if !ok {
        let how = if v.is_nan() {
            "NaN".to_string()
        } else if v.is_infinite() {
            format!("{v}")
        } else if v < 0.0 {
            "negative".to_string()
        } else {
            "out of range".to_string()
        };
        findings.push(
            format!("INVALID {kind:?} ({how}) from {func}"),
            format!("{inputs} -> {v:e}"),
        );
    }
}

/// The finding class of a hang in `func`.
fn hang_class(func: &str) -> String {
    format!("HANG (> {TIMEOUT:?}) in {func} (later cases of it are counted, not run)")
}

/// Runs one call inside a guarded thread, recording a panic under `func`. A function that
/// has hung before is not run again (its thread would spin on); the case is counted.
fn call<T>(findings: &Findings, func: &str, inputs: &str, f: impl FnOnce() -> T) -> Option<T> {
    if findings.has(&hang_class(func)) {
        findings.push(hang_class(func), inputs.into());
        return None;
    }
    set_current(func);
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(p) => {
            let msg = panic_message(p.as_ref());
            let at = PANIC_AT.with(|a| a.borrow().clone());
            findings.push(
                format!("PANIC in {func} at {at}: {}", strip_digits(&msg)),
                format!("{inputs} ({msg})"),
            );
            None
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Runs a call returning `Result<f64>` and checks its value (see [`call`]).
fn check(
    findings: &Findings,
    func: &str,
    inputs: &str,
    kind: Valid,
    f: impl FnOnce() -> dp_accounting::Result<f64>,
) -> Option<f64> {
    match call(findings, func, inputs, f) {
        Some(Ok(v)) => {
            check_value(findings, func, inputs, kind, v);
            Some(v)
        }
        _ => None,
    }
}

/// Any f64, weighted towards the values that break numerical code.
fn any_f64() -> BoxedStrategy<f64> {
    prop_oneof![
        3 => prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-310,
            1e-300,
            1e-30,
            1e-6,
            0.5,
            1.0 - f64::EPSILON,
            1.0,
            1.0 + f64::EPSILON,
            2.0,
            1e6,
            1e300,
            f64::MAX,
            -1.0,
            -1e-300,
            -f64::MAX,
        ]),
        2 => proptest::num::f64::ANY,
        3 => (-320.0f64..308.0).prop_map(|e| 10f64.powf(e)),
        1 => 0.0f64..1.0,
    ]
    .boxed()
}

/// A probability-like value: mostly in (0, 1), sometimes anything.
fn any_prob() -> BoxedStrategy<f64> {
    prop_oneof![
        3 => (-320.0f64..0.0).prop_map(|e| 10f64.powf(e)),
        1 => any_f64(),
    ]
    .boxed()
}

/// Moderate positive values (where an accountant does real work).
fn moderate() -> BoxedStrategy<f64> {
    (-2.0f64..2.0).prop_map(|e| 10f64.powf(e)).boxed()
}

/// Any count, weighted towards the edges.
fn any_count() -> BoxedStrategy<u64> {
    prop_oneof![
        2 => prop::sample::select(vec![0u64, 1, 2, u64::MAX, u64::MAX - 1, 1 << 53, 1 << 40]),
        2 => 0u64..100,
        1 => 0u64..10_000_000,
        1 => any::<u64>(),
    ]
    .boxed()
}

fn runner(cases: u32) -> TestRunner {
    let mut c = Config::with_cases(cases);
    c.rng_seed = RngSeed::Fixed(0x0f0_22ed);
    c.failure_persistence = None;
    c.max_shrink_iters = 0;
    TestRunner::new(c)
}

/// Runs `body` on `cases` inputs of `strategy`, collecting findings; the body never fails
/// the runner itself.
fn fuzz<S: Strategy>(property: &str, cases: u32, strategy: S, body: impl Fn(&Findings, S::Value))
where
    S::Value: Debug,
{
    let findings = Findings::default();
    let mut r = runner(cases);
    r.run(&strategy, |v| {
        body(&findings, v);
        Ok(())
    })
    .unwrap();
    findings.assert_none(property, cases);
}

/// Mechanism constructor arguments: which constructor and its raw arguments.
#[derive(Debug, Clone, Copy)]
struct MechArgs {
    which: u8,
    a: f64,
    b: f64,
    c: f64,
    d: f64,
    e: f64,
    f: f64,
    n1: u64,
    n2: u64,
}

fn mech_args(values: BoxedStrategy<f64>) -> impl Strategy<Value = MechArgs> {
    (
        0u8..9,
        (
            values.clone(),
            values.clone(),
            values.clone(),
            values.clone(),
            values.clone(),
            values,
        ),
        any_count(),
        any_count(),
    )
        .prop_map(|(which, (a, b, c, d, e, f), n1, n2)| MechArgs {
            which,
            a,
            b,
            c,
            d,
            e,
            f,
            n1,
            n2,
        })
}

/// Every public mechanism constructor, chosen by `m.which`.
fn build_mechanism(m: MechArgs) -> dp_accounting::Result<Mechanism> {
    match m.which {
        0 => Mechanism::gaussian(m.a, m.b),
        1 => Mechanism::laplace(m.a, m.b),
        2 => Mechanism::subsampled_gaussian(m.a, m.b),
        3 => Mechanism::subsampled_gaussian_without_replacement(m.a, m.n1, m.n2),
        4 => Mechanism::pure_dp(m.a),
        5 => Mechanism::gamma_ball(m.a, m.b, m.n1, m.c),
        6 => Ok(Mechanism::objective_perturbation(ObjPertParams::new(
            m.a, m.b, m.c, m.d,
        )?)),
        7 => Mechanism::amp(ObjPertParams::new(m.a, m.b, m.c, m.d)?, m.e, m.f),
        _ => Mechanism::zcdp(m.a),
    }
}

/// The constructor `build_mechanism` uses for `which`.
fn mech_name(which: u8) -> &'static str {
    [
        "gaussian",
        "laplace",
        "subsampled_gaussian",
        "subsampled_gaussian_without_replacement",
        "pure_dp",
        "gamma_ball",
        "objective_perturbation",
        "amp",
        "zcdp",
    ][usize::from(which.min(8))]
}

#[test]
fn mechanism_constructors_never_panic() {
    fuzz(
        "mechanisms",
        CASES,
        (mech_args(any_f64()), any::<bool>()),
        |fd, (m, ar)| {
            let inputs = format!("{m:?}, add-remove = {ar}");
            let what = format!("Mechanism::{}", mech_name(m.which));
            let _ = guarded(fd, &what, &inputs, move || {
                if let Ok(mech) = build_mechanism(m) {
                    let rel = if ar {
                        Neighbouring::AddRemove
                    } else {
                        Neighbouring::ReplaceOne
                    };
                    let _ = (mech.name(), mech.to_string(), mech.supports(rel));
                    for (_, v) in mech.parameters() {
                        assert!(!v.is_nan(), "NaN parameter in {mech}");
                    }
                }
            });
        },
    );
}

#[test]
fn closed_forms_never_panic_and_return_valid_values() {
    fuzz(
        "closed forms",
        CASES,
        (
            (any_f64(), any_f64(), any_f64(), any_f64()),
            (any_prob(), any_f64(), any_count(), any_count()),
        ),
        |fd, ((a, b, c, d), (p, e, n, k))| {
            let inputs = format!(
                "a = {a:e}, b = {b:e}, c = {c:e}, d = {d:e}, p = {p:e}, e = {e:e}, n = {n}, k = {k}"
            );
            let fd2 = fd.clone();
            let i = inputs.clone();
            let _ = guarded(fd, "the closed forms", &inputs, move || {
                let (fd, i) = (&fd2, i.as_str());
                use Valid::{Eps, Positive, Prob};
                check(fd, "gaussian_delta(a, b, e)", i, Prob, || {
                    gaussian_delta(a, b, e)
                });
                check(fd, "gaussian_epsilon(a, b, p)", i, Eps, || {
                    gaussian_epsilon(a, b, p)
                });
                check(fd, "gaussian_sigma(e, p, b)", i, Positive, || {
                    gaussian_sigma(e, p, b)
                });
                check(fd, "zcdp_epsilon(a, p)", i, Eps, || zcdp_epsilon(a, p));
                check(fd, "zcdp_delta(a, e)", i, Prob, || zcdp_delta(a, e));
                check(fd, "shuffle_epsilon(e, n, p)", i, Eps, || {
                    shuffle_epsilon(e, n, p)
                });
                let f = "shuffle_delta(e, c, n, p)";
                if let Some(Ok((se, sd))) = call(fd, f, i, || shuffle_delta(e, c, n, p)) {
                    check_value(fd, "shuffle_delta(e, c, n, p).0", i, Eps, se);
                    check_value(fd, "shuffle_delta(e, c, n, p).1", i, Prob, sd);
                }
                check(fd, "kifer_epsilon(a, b, p)", i, Eps, || {
                    kifer_epsilon(a, b, p)
                });
                let f = "kifer_parameters(e, p, c, d)";
                if let Some(Ok((lam, sig))) = call(fd, f, i, || kifer_parameters(e, p, c, d)) {
                    check_value(fd, "kifer_parameters(e, p, c, d).lambda", i, Eps, lam);
                    check_value(fd, "kifer_parameters(e, p, c, d).sigma", i, Positive, sig);
                }
                let f = "ObjPertParams::new(a, b, c, d)";
                if let Some(Ok(op)) = call(fd, f, i, || ObjPertParams::new(a, b, c, d)) {
                    let f = "objpert_delta(ObjPertParams(a, b, c, d), e)";
                    check(fd, f, i, Prob, || objpert_delta(&op, e));
                    let f = "objpert_epsilon(ObjPertParams(a, b, c, d), p)";
                    check(fd, f, i, Eps, || objpert_epsilon(&op, p));
                    let f = "objpert_rdp(ObjPertParams(a, b, c, d), e)";
                    if e > 1.0
                        && let Some(r) = call(fd, f, i, || objpert_rdp(&op, e))
                    {
                        check_value(fd, f, i, Valid::RdpValue, r);
                    }
                    let _ = call(fd, "ObjPertParams::{c, ratio}", i, || (op.c(), op.ratio()));
                }
                if let Some(Ok(t)) = call(fd, "Target::new(e, p)", i, || Target::new(e, p)) {
                    check_value(fd, "Target::new(e, p).epsilon()", i, Eps, t.epsilon());
                    check_value(fd, "Target::new(e, p).delta()", i, Prob, t.delta());
                }
                let f = "clopper_pearson_upper(k, n, p)";
                check(fd, f, i, Prob, || clopper_pearson_upper(k, n, p));
                let counts = TestCounts {
                    negatives: n,
                    false_positives: k,
                    positives: n / 2 + k / 3,
                    false_negatives: k / 5,
                };
                let f = "epsilon_lower_bound(counts(n, k), p, c)";
                check(fd, f, i, Eps, || epsilon_lower_bound(counts, p, c));
                let f = "TestCounts::from_statistics";
                let _ = call(fd, f, i, || {
                    TestCounts::from_statistics(&[a, b, c], &[d, e], p)
                });
                let f = "Repetitions::Poisson { mean: a }.mean()";
                check(fd, f, i, Eps, || Repetitions::Poisson { mean: a }.mean());
                let f = "Repetitions::TruncatedNegativeBinomial { eta: b, gamma: p }.mean()";
                check(fd, f, i, Eps, || {
                    Repetitions::TruncatedNegativeBinomial { eta: b, gamma: p }.mean()
                });
            });
        },
    );
}

/// One accountant run: relation (add/remove when true), a mechanism and its count, a second
/// mechanism and its count, the δ of the ε query and the ε of the δ query.
type AccountantCase = (bool, MechArgs, u64, MechArgs, u64, f64, f64);

fn accountant_case(values: BoxedStrategy<f64>) -> impl Strategy<Value = AccountantCase> {
    (
        any::<bool>(),
        mech_args(values.clone()),
        any_count(),
        mech_args(values),
        any_count(),
        any_prob(),
        any_f64(),
    )
}

/// The relation, the exact inputs and the call name (`label` with the two constructors) of an
/// accountant case.
fn describe_case(label: &str, case: &AccountantCase) -> (Neighbouring, String, String) {
    let (ar, m1, c1, m2, c2, delta, eps) = *case;
    let rel = if ar {
        Neighbouring::AddRemove
    } else {
        Neighbouring::ReplaceOne
    };
    let inputs =
        format!("{rel}: {m1:?} x {c1}, then {m2:?} x {c2}; epsilon({delta:e}), delta({eps:e})");
    let what = format!(
        "{label} with {} then {}",
        mech_name(m1.which),
        mech_name(m2.which)
    );
    (rel, inputs, what)
}

/// Composes the case into `kind` and asks every query.
fn run_accountant(fd: &Findings, kind: AccountantKind, case: AccountantCase) {
    let (_, m1, c1, m2, c2, delta, eps) = case;
    let (rel, inputs, what) = describe_case(kind.as_str(), &case);
    let fd2 = fd.clone();
    let (i, w) = (inputs.clone(), what.clone());
    let _ = guarded(fd, &what, &inputs, move || {
        let (fd, i) = (&fd2, i.as_str());
        let mut acc = kind.build(rel);
        for (m, c) in [(m1, c1), (m2, c2)] {
            let f = format!("Mechanism::{}", mech_name(m.which));
            if let Some(Ok(mech)) = call(fd, &f, i, || build_mechanism(m)) {
                let f = format!("{kind} compose {}", mech_name(m.which));
                let _ = call(fd, &f, i, || acc.compose(&mech, c));
            }
        }
        check(fd, &format!("{w}: epsilon"), i, Valid::Eps, || {
            acc.epsilon(delta)
        });
        check(fd, &format!("{w}: delta"), i, Valid::Prob, || {
            acc.delta(eps)
        });
        let f = format!("{w}: epsilon_optimistic");
        if let Some(Ok(Some(l))) = call(fd, &f, i, || acc.epsilon_optimistic(delta)) {
            check_value(fd, &f, i, Valid::Eps, l);
        }
    });
}

/// The default fallback chain on the case's two mechanisms, both queries.
fn run_fallback(fd: &Findings, case: AccountantCase) {
    let (_, m1, c1, m2, c2, delta, eps) = case;
    let (rel, inputs, what) = describe_case("answer_with_fallback", &case);
    let fd2 = fd.clone();
    let (i, w) = (inputs.clone(), what.clone());
    let _ = guarded(fd, &what, &inputs, move || {
        let (fd, i) = (&fd2, i.as_str());
        let parts: Vec<(Mechanism, u64)> = [(m1, c1), (m2, c2)]
            .into_iter()
            .filter_map(|(m, c)| build_mechanism(m).ok().map(|mech| (mech, c)))
            .collect();
        for (query, kind, name) in [
            (Query::Epsilon { delta }, Valid::Eps, "Epsilon"),
            (Query::Delta { epsilon: eps }, Valid::Prob, "Delta"),
        ] {
            let f = format!("{w}: {name}");
            let r = call(fd, &f, i, || {
                answer_with_fallback(&DEFAULT_CHAIN, rel, PldConfig::default(), &parts, query)
            });
            if let Some(Ok(a)) = r {
                check_value(fd, &f, i, kind, a.value);
            }
        }
    });
}

#[test]
fn cheap_accountants_never_panic_and_return_valid_values() {
    fuzz(
        "rdp/zcdp/exact accountants",
        CASES,
        (0usize..3, accountant_case(any_f64())),
        |fd, (k, case)| {
            let kind = [
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
                AccountantKind::Exact,
            ][k];
            run_accountant(fd, kind, case);
        },
    );
}

#[test]
fn pld_accountant_never_panics_and_returns_valid_values() {
    // Half arbitrary values, half moderate ones (where the accountant answers).
    let values = prop_oneof![any_f64(), moderate()].boxed();
    fuzz(
        "pld accountant",
        PLD_CASES,
        (
            accountant_case(values),
            (any_f64(), any_f64(), any_count(), any_f64(), any::<bool>()),
        ),
        |fd, (case, (h, tail, grid, err, has_err))| {
            run_accountant(fd, AccountantKind::Pld, case);
            run_fallback(fd, case);
            let max_grid = usize::try_from(grid).unwrap_or(usize::MAX);
            let epsilon_error = has_err.then_some(err);
            // Arbitrary configurations: invalid ones must be refused, not used.
            let inputs = format!(
                "PldConfig {{ discretisation: {h:e}, tail_mass: {tail:e}, max_grid: {grid}, \
                 epsilon_error: {:?} }}, gaussian(1, 1) x 10",
                has_err.then_some(err)
            );
            let fd2 = fd.clone();
            let i = inputs.clone();
            let _ = guarded(fd, "pld with a PldConfig", &inputs, move || {
                let config = PldConfig {
                    discretisation: h,
                    tail_mass: tail,
                    max_grid,
                    epsilon_error,
                };
                let mut acc = PldAccountant::new(config, Neighbouring::AddRemove);
                if acc
                    .compose(&Mechanism::gaussian(1.0, 1.0).unwrap(), 10)
                    .is_ok()
                {
                    let f = "PldConfig: epsilon(1e-5)";
                    check(&fd2, f, &i, Valid::Eps, || acc.epsilon(1e-5));
                    check(&fd2, "PldConfig: delta(1)", &i, Valid::Prob, || {
                        acc.delta(1.0)
                    });
                }
            });
        },
    );
}

#[test]
fn rdp_orders_tuning_ledger_and_calibration_never_panic() {
    fuzz(
        "rdp orders, tuning, ledger, calibration",
        CALIBRATION_CASES,
        (
            prop::collection::vec(any_f64(), 0..4),
            mech_args(prop_oneof![any_f64(), moderate()].boxed()),
            any_count(),
            (any_f64(), any_prob(), any_f64(), any_prob()),
            any::<bool>(),
        ),
        |fd, (orders, m, count, (e, p, g1, g2), rdp)| {
            let kind = if rdp {
                AccountantKind::Rdp
            } else {
                AccountantKind::Zcdp
            };
            let inputs = format!(
                "orders {orders:?}, {m:?} x {count}, epsilon {e:e}, delta {p:e}, \
                 tuning ({g1:e}, {g2:e}), {kind}"
            );
            let what = format!("{} with {}", kind, mech_name(m.which));
            let fd2 = fd.clone();
            let (i, w) = (inputs.clone(), what.clone());
            let _ = guarded(fd, &what, &inputs, move || {
                let (fd, i) = (&fd2, i.as_str());
                let rel = Neighbouring::AddRemove;
                let f = format!("Mechanism::{}", mech_name(m.which));
                let Some(Ok(mech)) = call(fd, &f, i, || build_mechanism(m)) else {
                    return;
                };
                let f = "RdpAccountant::with_orders, compose";
                let acc = call(fd, f, i, || {
                    let mut acc = RdpAccountant::with_orders(rel, orders).ok()?;
                    acc.compose(&mech, count).ok()?;
                    Some(acc)
                });
                if let Some(Some(acc)) = acc {
                    let f = "RdpAccountant::epsilon_at_best_order";
                    if let Some(Ok(r)) = call(fd, f, i, || acc.epsilon_at_best_order(p)) {
                        check_value(fd, f, i, Valid::Eps, r.epsilon);
                    }
                    for c in Conversion::ALL {
                        let f = format!("RdpAccountant::epsilon_with({c:?})");
                        check(fd, &f, i, Valid::Eps, || acc.epsilon_with(p, c));
                    }
                    for reps in [
                        Repetitions::Poisson { mean: g1 },
                        Repetitions::TruncatedNegativeBinomial { eta: g1, gamma: g2 },
                    ] {
                        let f = strip_digits(&format!("tuned(.., {reps:?})"));
                        if let Some(Ok(t)) = call(fd, &f, i, || tuned(&acc, reps)) {
                            check(fd, &format!("{f}.epsilon"), i, Valid::Eps, || t.epsilon(p));
                        }
                    }
                }
                let f = format!("{w}: Ledger::epsilon");
                check(fd, &f, i, Valid::Eps, || {
                    let mut ledger = Ledger::new(rel);
                    ledger.record(mech.clone(), count, "fuzz");
                    ledger.epsilon(kind, p)
                });
                // Calibration with arbitrary targets and counts (steps capped at 1000 so that
                // one case stays cheap when it works).
                let Ok(target) = Target::new(e, p) else {
                    return;
                };
                let steps = count.min(1000);
                let make = move |x: f64| Mechanism::subsampled_gaussian(x, 0.01);
                let f = format!("{kind} calibrate_noise");
                if let Some(Ok(c)) = call(fd, &f, i, || {
                    calibrate_noise(target, kind, rel, steps, make)
                }) {
                    check_value(fd, &f, i, Valid::Positive, c.value);
                    check_value(fd, &format!("{f} .epsilon"), i, Valid::Eps, c.epsilon);
                }
                let make_q = move |q: f64| Mechanism::subsampled_gaussian(1.0, q);
                let f = format!("{kind} calibrate_sampling_rate");
                if let Some(Ok(c)) = call(fd, &f, i, || {
                    calibrate_sampling_rate(target, kind, rel, steps, make_q)
                }) {
                    check_value(fd, &f, i, Valid::Prob, c.value);
                }
                let f = format!("{w}: calibrate_steps");
                if let Some(Ok(c)) = call(fd, &f, i, || calibrate_steps(target, kind, rel, &mech)) {
                    check_value(fd, &f, i, Valid::Positive, c.value);
                }
            });
        },
    );
}
