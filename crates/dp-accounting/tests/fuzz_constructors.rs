//! Property-based fuzzing of every public constructor and entry point of dp-accounting (issue
//! 9, §4): arbitrary f64 — NaN, ±∞, ±0, subnormals, 1e±300, anything — and counts up to
//! `u64::MAX`. Every call must return a typed error or a valid value (ε and σ finite and
//! ≥ 0, δ in [0, 1], RDP values ≥ 0 or +∞); it must never panic and never hang.
//!
//! Each property runs [`CASES`] cases from a fixed seed (reproducible; `PROPTEST_CASES` is
//! not read) on a worker thread watched by the test's own thread: a case still running after
//! [`HANG`] fails the test with its exact inputs. Panics are caught per call and reported
//! with their location and inputs; every finding is listed before the assertion fails.
//! Each property prints its case count, its run time and its slowest case; with `FUZZ_TRACE`
//! set, every case slower than 100 ms is printed as it ends.
//!
//! Ten properties of 10,000 cases each (mechanisms; closed forms; shuffling; audit; the
//! RDP, zCDP and exact accountants; RDP orders and tuning; the ledger; grid (discrete
//! Gaussian) releases; the PLD accountant and the fallback chain; calibration), 10–40 s in all
//! on two threads of the test profile, depending on the machine's load.
//! Constructors and closed forms get arbitrary values everywhere. The queries whose work grows
//! with settings that only scale it get those settings from ranges that keep a case at
//! milliseconds, and every other argument arbitrary: the PLD accountant's `max_grid` is mostly
//! in [1024, 4096] (and sometimes invalid), the shuffled population mostly below 3000 (and
//! sometimes beyond the numerical bound's 10⁹, which falls back at once), and calibration
//! under RDP searches the closed-form curves only (a search over the subsampled Gaussian's
//! series takes seconds; the subsampled mechanisms are calibrated under the exact and zCDP
//! accountants, and the RDP accountant answers them in the accountant properties). The
//! regression tests at the end pin the PLD accountant's bounds on that work, and its panics,
//! that the fuzzing found missing.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use dp_accounting::audit::{TestCounts, clopper_pearson_upper, epsilon_lower_bound};
use dp_accounting::{
    Accountant, AccountantKind, Conversion, DEFAULT_CHAIN, GridAdjusted, GridComposition,
    GridGaussian, Ledger, Mechanism, Neighbouring, ObjPertParams, PldAccountant, PldConfig, Query,
    RdpAccountant, Repetitions, Result, Target, ZcdpAccountant, answer_with_fallback,
    calibrate_noise, calibrate_sampling_rate, calibrate_steps, epsilon_of, gaussian_delta,
    gaussian_epsilon, gaussian_sigma, kifer_epsilon, kifer_parameters, objpert_delta,
    objpert_epsilon, objpert_rdp, shuffle_delta, shuffle_delta_numerical, shuffle_epsilon,
    shuffle_epsilon_numerical, tuned, zcdp_delta, zcdp_epsilon,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// Cases of every property.
const CASES: u32 = 10_000;

/// A case running longer than this fails its property as a hang (far above any case's
/// expected time, milliseconds, so that a loaded machine never trips it).
const HANG: Duration = Duration::from_secs(120);

/// Name prefix of the worker threads (their panics are reported by the test, not the hook).
const WORKER: &str = "fuzz-worker";

/// Examples kept per class of finding.
const EXAMPLES: usize = 3;

thread_local! {
    /// Where the last panic of this thread happened (set by the hook).
    static PANIC_AT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Silences the default panic message on worker threads and records where they panicked.
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with(WORKER))
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

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Digits replaced by `#`, for grouping messages that differ only in numbers.
fn strip_digits(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(120)
        .collect()
}

/// What a returned number must be.
#[derive(Clone, Copy, Debug)]
enum Valid {
    /// Finite and ≥ 0 (ε, λ).
    Eps,
    /// In [0, 1] (δ, a probability).
    Prob,
    /// Finite and > 0 (σ, a calibrated parameter, a mechanism's parameter).
    Positive,
    /// ≥ 0 or +∞, not NaN (an RDP value).
    Rdp,
}

impl Valid {
    fn holds(self, v: f64) -> bool {
        match self {
            Valid::Eps => v.is_finite() && v >= 0.0,
            Valid::Prob => (0.0..=1.0).contains(&v),
            Valid::Positive => v.is_finite() && v > 0.0,
            Valid::Rdp => v >= 0.0,
        }
    }
}

/// Findings of one property by class (what failed and how), with a few exact inputs each.
#[derive(Default)]
struct Findings(BTreeMap<String, (u64, Vec<String>)>);

impl Findings {
    fn push(&mut self, class: String, example: String) {
        let e = self.0.entry(class).or_default();
        e.0 += 1;
        if e.1.len() < EXAMPLES {
            e.1.push(example);
        }
    }
}

/// One case: its inputs and where its findings go.
struct Ctx<'a> {
    findings: &'a mut Findings,
    inputs: &'a str,
}

impl Ctx<'_> {
    /// Runs `f`, recording a panic under `what`.
    fn call<T>(&mut self, what: &str, f: impl FnOnce() -> T) -> Option<T> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => Some(v),
            Err(p) => {
                let msg = panic_message(p.as_ref());
                let at = PANIC_AT.with(|a| a.borrow().clone());
                self.findings.push(
                    format!("PANIC in {what} at {at}: {}", strip_digits(&msg)),
                    format!("{} ({msg})", self.inputs),
                );
                None
            }
        }
    }

    /// Records a finding unless `v` is valid for `kind`.
    fn value(&mut self, what: &str, kind: Valid, v: f64) {
        if !kind.holds(v) {
            let how = if v.is_nan() {
                "NaN".to_string()
            } else if v.is_infinite() {
                format!("{v}")
            } else if v < 0.0 {
                "negative".to_string()
            } else {
                "out of range".to_string()
            };
            self.findings.push(
                format!("INVALID {kind:?} ({how}) from {what}"),
                format!("{} -> {v:e}", self.inputs),
            );
        }
    }

    /// Records a finding when a call that must fail (an invalid argument) returned a value.
    fn refused<T: Debug>(&mut self, what: &str, r: &Result<T>) {
        if let Ok(v) = r {
            self.findings.push(
                format!("ACCEPTED invalid input in {what}"),
                format!("{} -> {v:?}", self.inputs),
            );
        }
    }

    /// Runs a call returning `Result<f64>` and checks its value.
    fn check(&mut self, what: &str, kind: Valid, f: impl FnOnce() -> Result<f64>) -> Option<f64> {
        match self.call(what, f) {
            Some(Ok(v)) => {
                self.value(what, kind, v);
                Some(v)
            }
            _ => None,
        }
    }

    /// Every query of an accountant: ε(δ), δ(ε), the optimistic ε and the notes.
    fn queries(&mut self, label: &str, acc: &dyn Accountant, delta: f64, eps: f64) {
        self.check(&format!("{label}: epsilon"), Valid::Eps, || {
            acc.epsilon(delta)
        });
        self.check(&format!("{label}: delta"), Valid::Prob, || acc.delta(eps));
        let what = format!("{label}: epsilon_optimistic");
        if let Some(Ok(Some(l))) = self.call(&what, || acc.epsilon_optimistic(delta)) {
            self.value(&what, Valid::Eps, l);
        }
        self.call(&format!("{label}: notes"), || {
            acc.notes().iter().map(ToString::to_string).count()
        });
    }
}

/// Runs `body` on [`CASES`] inputs of the strategy `make` builds, on a worker thread watched
/// for hangs, then prints the findings and fails if there is one.
fn fuzz<S, M>(property: &'static str, make: M, body: fn(&mut Ctx, S::Value))
where
    S: Strategy,
    S::Value: Debug + 'static,
    M: FnOnce() -> S + Send + 'static,
{
    quiet_panics();
    let current: Arc<Mutex<Option<(String, Instant)>>> = Arc::default();
    let watched = Arc::clone(&current);
    let start = Instant::now();
    let worker = std::thread::Builder::new()
        .name(format!("{WORKER}-{property}"))
        .spawn(move || {
            let mut config = Config::with_cases(CASES);
            config.rng_seed = RngSeed::Fixed(0x0f0_22ed);
            config.failure_persistence = None;
            config.max_shrink_iters = 0;
            let mut runner = TestRunner::new(config);
            let trace = std::env::var_os("FUZZ_TRACE").is_some();
            let findings = std::cell::RefCell::new(Findings::default());
            let slowest = std::cell::RefCell::new((Duration::ZERO, String::new()));
            runner
                .run(&make(), |v| {
                    let inputs = format!("{v:?}");
                    let t = Instant::now();
                    *watched.lock().unwrap_or_else(|p| p.into_inner()) = Some((inputs.clone(), t));
                    body(
                        &mut Ctx {
                            findings: &mut findings.borrow_mut(),
                            inputs: &inputs,
                        },
                        v,
                    );
                    if trace && t.elapsed() > Duration::from_millis(100) {
                        eprintln!("fuzz {property}: {:.2?} on {inputs}", t.elapsed());
                    }
                    let mut slow = slowest.borrow_mut();
                    if t.elapsed() > slow.0 {
                        *slow = (t.elapsed(), inputs);
                    }
                    Ok(())
                })
                .unwrap();
            (findings.into_inner(), slowest.into_inner())
        })
        .unwrap();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        if let Some((inputs, t)) = &*current.lock().unwrap_or_else(|p| p.into_inner()) {
            assert!(
                t.elapsed() < HANG,
                "fuzz {property}: HANG (> {HANG:?}) on {inputs}"
            );
        }
    }
    let (findings, (slow, slow_inputs)) = worker.join().unwrap();
    for (class, (n, examples)) in &findings.0 {
        eprintln!("fuzz {property}: {n} x {class}");
        for e in examples {
            eprintln!("    e.g. {e}");
        }
    }
    eprintln!(
        "fuzz {property}: {CASES} cases in {:.2?}, slowest {slow:.2?}: {slow_inputs}",
        start.elapsed()
    );
    assert!(
        findings.0.is_empty(),
        "fuzz {property}: {} classes of findings",
        findings.0.len()
    );
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

/// Moderate positive values (where accountants do real work), mixed with anything.
fn mostly_moderate() -> BoxedStrategy<f64> {
    prop_oneof![
        2 => (-2.0f64..2.0).prop_map(|e| 10f64.powf(e)),
        1 => any_f64(),
    ]
    .boxed()
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

fn relation(add_remove: bool) -> Neighbouring {
    if add_remove {
        Neighbouring::AddRemove
    } else {
        Neighbouring::ReplaceOne
    }
}

/// Which mechanism constructor and its raw arguments.
#[derive(Debug, Clone, Copy)]
struct MechArgs {
    which: u8,
    x: [f64; 6],
    n: [u64; 2],
}

fn mech_args(values: fn() -> BoxedStrategy<f64>) -> impl Strategy<Value = MechArgs> {
    (
        0u8..9,
        prop::array::uniform6(values()),
        prop::array::uniform2(any_count()),
    )
        .prop_map(|(which, x, n)| MechArgs { which, x, n })
}

/// Every public mechanism constructor, chosen by `m.which`.
fn build_mechanism(m: MechArgs) -> Result<Mechanism> {
    let [a, b, c, d, e, f] = m.x;
    match m.which {
        0 => Mechanism::gaussian(a, b),
        1 => Mechanism::laplace(a, b),
        2 => Mechanism::subsampled_gaussian(a, b),
        3 => Mechanism::subsampled_gaussian_without_replacement(a, m.n[0], m.n[1]),
        4 => Mechanism::pure_dp(a),
        5 => Mechanism::gamma_ball(a, b, m.n[0], c),
        6 => Ok(Mechanism::objective_perturbation(ObjPertParams::new(
            a, b, c, d,
        )?)),
        7 => Mechanism::amp(ObjPertParams::new(a, b, c, d)?, e, f),
        _ => Mechanism::zcdp(a),
    }
}

/// The constructor [`build_mechanism`] uses for `which`.
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
fn mechanism_constructors() {
    fuzz(
        "mechanisms",
        || (mech_args(any_f64), any::<bool>(), ".{0,12}"),
        |cx, (m, ar, text)| {
            cx.call("parse", || {
                (
                    text.parse::<AccountantKind>().is_ok(),
                    text.parse::<Neighbouring>().is_ok(),
                )
            });
            let what = format!("Mechanism::{}", mech_name(m.which));
            let Some(Ok(mech)) = cx.call(&what, || build_mechanism(m)) else {
                return;
            };
            let shown = cx.call(&what, || {
                (mech.name(), mech.to_string(), mech.supports(relation(ar)))
            });
            if shown.is_none() {
                return;
            }
            for (name, v) in mech.parameters() {
                let kind = if name == "beta" {
                    Valid::Eps
                } else {
                    Valid::Positive
                };
                cx.value(&format!("{what}: parameter {name}"), kind, v);
            }
            if m.which == 6 || m.which == 7 {
                let [a, b, c, d, ..] = m.x;
                let p = ObjPertParams::new(a, b, c, d).unwrap();
                cx.value("ObjPertParams::c", Valid::Eps, p.c());
                cx.value("ObjPertParams::ratio", Valid::Positive, p.ratio());
            }
        },
    );
}

#[test]
fn closed_forms() {
    fuzz(
        "closed forms",
        || {
            (
                prop::array::uniform4(any_f64()),
                (any_prob(), any_f64(), any_f64()),
            )
        },
        |cx, ([a, b, c, d], (p, e, g))| {
            use Valid::{Eps, Positive, Prob};
            cx.check("gaussian_delta(a, b, e)", Prob, || gaussian_delta(a, b, e));
            cx.check("gaussian_epsilon(a, b, p)", Eps, || {
                gaussian_epsilon(a, b, p)
            });
            cx.check("gaussian_sigma(e, p, b)", Positive, || {
                gaussian_sigma(e, p, b)
            });
            cx.check("zcdp_epsilon(a, p)", Eps, || zcdp_epsilon(a, p));
            cx.check("zcdp_delta(a, e)", Prob, || zcdp_delta(a, e));
            cx.check("kifer_epsilon(a, b, p)", Eps, || kifer_epsilon(a, b, p));
            let what = "kifer_parameters(e, p, c, d)";
            if let Some(Ok((lambda, sigma))) = cx.call(what, || kifer_parameters(e, p, c, d)) {
                cx.value("kifer_parameters: lambda", Eps, lambda);
                cx.value("kifer_parameters: sigma", Positive, sigma);
            }
            if let Some(Ok(t)) = cx.call("Target::new(e, p)", || Target::new(e, p)) {
                cx.value("Target::epsilon", Positive, t.epsilon());
                cx.value("Target::delta", Prob, t.delta());
            }
            if let Some(Ok(op)) = cx.call("ObjPertParams::new", || ObjPertParams::new(a, b, c, d)) {
                cx.check("objpert_delta(op, e)", Prob, || objpert_delta(&op, e));
                cx.check("objpert_epsilon(op, p)", Eps, || objpert_epsilon(&op, p));
                if g > 1.0 {
                    let what = "objpert_rdp(op, g)";
                    if let Some(r) = cx.call(what, || objpert_rdp(&op, g)) {
                        cx.value(what, Valid::Rdp, r);
                    }
                }
            }
            cx.check("Repetitions::Poisson::mean", Positive, || {
                Repetitions::Poisson { mean: a }.mean()
            });
            cx.check(
                "Repetitions::TruncatedNegativeBinomial::mean",
                Positive,
                || Repetitions::TruncatedNegativeBinomial { eta: b, gamma: p }.mean(),
            );
            // Arguments no guarantee exists for must be refused.
            if !(p > 0.0 && p < 1.0) {
                let r = gaussian_epsilon(1.0, 1.0, p);
                cx.refused("gaussian_epsilon with delta outside (0, 1)", &r);
                let r = zcdp_epsilon(1.0, p);
                cx.refused("zcdp_epsilon with delta outside (0, 1)", &r);
            }
        },
    );
}

/// The shuffled population: mostly up to 3000 (each numerical bound then takes at most a few
/// milliseconds), sometimes a count beyond the numerical bound's range (10⁹), which falls back
/// to the closed form at once.
fn population() -> BoxedStrategy<u64> {
    prop_oneof![
        20 => 0u64..300,
        2 => 300u64..3000,
        1 => prop::sample::select(vec![1_000_000_001, u64::MAX - 1, u64::MAX]),
        1 => 1_000_000_001u64..,
    ]
    .boxed()
}

#[test]
fn shuffling() {
    fuzz(
        "shuffling",
        || {
            (
                mostly_moderate(),
                any_prob(),
                population(),
                any_prob(),
                any_f64(),
            )
        },
        |cx, (eps0, delta0, n, delta, eps)| {
            use Valid::{Eps, Prob};
            cx.check("shuffle_epsilon", Eps, || shuffle_epsilon(eps0, n, delta));
            if let Some(Ok((e, d))) =
                cx.call("shuffle_delta", || shuffle_delta(eps0, delta0, n, delta))
            {
                cx.value("shuffle_delta: epsilon", Eps, e);
                cx.value("shuffle_delta: delta", Prob, d);
            }
            let what = "shuffle_epsilon_numerical";
            if let Some(Ok(b)) = cx.call(what, || shuffle_epsilon_numerical(eps0, delta0, n, delta))
            {
                cx.value("shuffle_epsilon_numerical: epsilon", Eps, b.epsilon);
                cx.value("shuffle_epsilon_numerical: delta", Prob, b.delta);
                let _ = b.method.name();
            }
            cx.check("shuffle_delta_numerical", Prob, || {
                shuffle_delta_numerical(eps0, delta0, n, eps)
            });
        },
    );
}

#[test]
fn audit() {
    fuzz(
        "audit",
        || {
            (
                (any_count(), any_count(), any_count(), any_count()),
                (any_prob(), any_prob(), any_f64()),
                prop::collection::vec(any_f64(), 0..6),
                prop::collection::vec(any_f64(), 0..6),
            )
        },
        |cx, ((k, n, k2, n2), (alpha, delta, threshold), on_d, on_d_prime)| {
            cx.check("clopper_pearson_upper", Valid::Prob, || {
                clopper_pearson_upper(k, n, alpha)
            });
            let counts = TestCounts {
                negatives: n,
                false_positives: k,
                positives: n2,
                false_negatives: k2,
            };
            cx.check("epsilon_lower_bound", Valid::Eps, || {
                epsilon_lower_bound(counts, delta, alpha)
            });
            let what = "TestCounts::from_statistics";
            if let Some(c) = cx.call(what, || {
                TestCounts::from_statistics(&on_d, &on_d_prime, threshold)
            }) {
                cx.check("epsilon_lower_bound(from_statistics)", Valid::Eps, || {
                    epsilon_lower_bound(c, delta, alpha)
                });
            }
        },
    );
}

/// One accountant run: relation (add/remove when true), two mechanisms with their counts, the
/// δ of the ε query and the ε of the δ query.
type AccountantCase = (bool, [(MechArgs, u64); 2], f64, f64);

fn accountant_case(values: fn() -> BoxedStrategy<f64>) -> impl Strategy<Value = AccountantCase> {
    (
        any::<bool>(),
        prop::array::uniform2((mech_args(values), any_count())),
        any_prob(),
        any_f64(),
    )
}

/// The mechanisms of a case that construct, with their counts.
fn parts(cx: &mut Ctx, mechs: [(MechArgs, u64); 2]) -> Vec<(Mechanism, u64)> {
    let mut out = Vec::new();
    for (m, count) in mechs {
        let what = format!("Mechanism::{}", mech_name(m.which));
        if let Some(Ok(mech)) = cx.call(&what, || build_mechanism(m)) {
            out.push((mech, count));
        }
    }
    out
}

/// Composes `parts` into `acc` (recording panics) and asks every query.
fn run_accountant(
    cx: &mut Ctx,
    mut acc: Box<dyn Accountant>,
    parts: &[(Mechanism, u64)],
    delta: f64,
    eps: f64,
) {
    let label = acc.name();
    for (mech, count) in parts {
        let what = format!("{label}: compose {}", mech.name());
        cx.call(&what, || acc.compose(mech, *count));
    }
    cx.queries(label, acc.as_ref(), delta, eps);
}

#[test]
fn rdp_zcdp_exact_accountants() {
    fuzz(
        "rdp/zcdp/exact accountants",
        || (0usize..3, accountant_case(any_f64)),
        |cx, (k, (ar, mechs, delta, eps))| {
            let kind = [
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
                AccountantKind::Exact,
            ][k];
            let parts = parts(cx, mechs);
            run_accountant(cx, kind.build(relation(ar)), &parts, delta, eps);
        },
    );
}

#[test]
fn rdp_orders_and_tuning() {
    fuzz(
        "rdp orders and tuning",
        || {
            (
                prop::collection::vec(any_f64(), 0..5),
                accountant_case(mostly_moderate),
                (any_f64(), any_prob()),
            )
        },
        |cx, (orders, (ar, mechs, delta, eps), (g1, g2))| {
            let rel = relation(ar);
            let parts = parts(cx, mechs);
            let what = "RdpAccountant::with_orders";
            let Some(Ok(mut acc)) = cx.call(what, || RdpAccountant::with_orders(rel, orders))
            else {
                return;
            };
            for (mech, count) in &parts {
                cx.call("RdpAccountant::compose", || acc.compose(mech, *count));
            }
            for &r in acc.curve() {
                cx.value("RdpAccountant::curve", Valid::Rdp, r);
            }
            cx.call("RdpAccountant::dropped_orders", || {
                acc.dropped_orders().len()
            });
            let what = "RdpAccountant::epsilon_at_best_order";
            if let Some(Ok(r)) = cx.call(what, || acc.epsilon_at_best_order(delta)) {
                cx.value(what, Valid::Eps, r.epsilon);
            }
            let what = "RdpAccountant::epsilon_on_grid";
            if let Some(Ok(r)) = cx.call(what, || acc.epsilon_on_grid(delta)) {
                cx.value(what, Valid::Eps, r.epsilon);
            }
            let what = "RdpAccountant::delta_at_best_order";
            if let Some(Ok(r)) = cx.call(what, || acc.delta_at_best_order(eps)) {
                cx.value(what, Valid::Prob, r.delta);
            }
            for c in Conversion::ALL {
                let what = format!("RdpAccountant::epsilon_with({})", c.as_str());
                cx.check(&what, Valid::Eps, || acc.epsilon_with(delta, c));
            }
            for reps in [
                Repetitions::Poisson { mean: g1 },
                Repetitions::TruncatedNegativeBinomial { eta: g1, gamma: g2 },
            ] {
                let what = strip_digits(&format!("tuned(.., {reps:?})"));
                if let Some(Ok(t)) = cx.call(&what, || tuned(&acc, reps)) {
                    cx.queries(&what, &t, delta, eps);
                }
            }
            let mut z = ZcdpAccountant::new(rel);
            for (mech, count) in &parts {
                cx.call("ZcdpAccountant::compose", || z.compose(mech, *count));
            }
            cx.value("ZcdpAccountant::rho", Valid::Rdp, z.rho());
        },
    );
}

#[test]
fn ledger() {
    fuzz(
        "ledger",
        || {
            (
                any::<bool>(),
                prop::collection::vec((mech_args(mostly_moderate), any_count(), 0u8..2), 0..5),
                0usize..3,
                any_prob(),
            )
        },
        |cx, (ar, entries, k, delta)| {
            let kind = [
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
                AccountantKind::Exact,
            ][k];
            let mut ledger = Ledger::new(relation(ar));
            let mut total: u128 = 0;
            for (m, count, label) in entries {
                if let Ok(mech) = build_mechanism(m) {
                    let label = ["a", "b"][usize::from(label)];
                    cx.call("Ledger::record", || ledger.record(mech, count, label));
                    total += u128::from(count);
                }
            }
            let recorded: u128 = ledger.entries().iter().map(|e| u128::from(e.count)).sum();
            if recorded != total {
                cx.findings.push(
                    "Ledger::record loses count".into(),
                    format!("{}: {recorded} recorded of {total}", cx.inputs),
                );
            }
            if let Some(Ok(acc)) = cx.call("Ledger::accountant", || ledger.accountant(kind)) {
                cx.queries("ledger accountant", acc.as_ref(), delta, 1.0);
            }
            cx.check("Ledger::epsilon", Valid::Eps, || {
                ledger.epsilon(kind, delta)
            });
        },
    );
}

#[test]
fn grid_gaussian_releases() {
    fuzz(
        "grid gaussian releases",
        || {
            (
                (0usize..4, accountant_case(mostly_moderate)),
                prop::array::uniform2((
                    prop_oneof![3 => (0.0f64..6.0).prop_map(|e| 10f64.powf(e)), 1 => any_f64()],
                    any_count(),
                )),
            )
        },
        |cx, ((k, (ar, mechs, delta, eps)), grids)| {
            let kind = [
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
                AccountantKind::Exact,
                AccountantKind::Pld,
            ][k];
            let rel = relation(ar);
            let config = PldConfig {
                max_grid: 2048,
                ..PldConfig::default()
            };
            let mut parts = parts(cx, mechs);
            let mut composition = GridComposition::new();
            for ((sigma, dim), part) in grids.into_iter().zip(parts.iter_mut()) {
                let what = "GridGaussian::new";
                if let Some(Ok(g)) = cx.call(what, || GridGaussian::new(sigma, dim)) {
                    cx.value("GridGaussian::sigma", Valid::Positive, g.sigma());
                    part.0 = part.0.clone().with_grid(g);
                    cx.call("GridComposition::add", || composition.add(g, part.1));
                }
            }
            // The adjusted accountant on the grid releases (the PLD one on a small grid).
            let adjusted = GridAdjusted::new(kind.build_with(rel, config));
            run_accountant(cx, Box::new(adjusted), &parts, delta, eps);
            // The composition's own answers on a continuous accountant holding the parts.
            let mut inner = kind.build_with(rel, config);
            for (mech, count) in &parts {
                cx.call("inner compose", || inner.compose(mech, *count));
            }
            cx.check("GridComposition::epsilon", Valid::Eps, || {
                composition.epsilon(inner.as_ref(), delta)
            });
            cx.check("GridComposition::delta", Valid::Prob, || {
                composition.delta(inner.as_ref(), eps)
            });
        },
    );
}

/// PLD settings: any values (invalid ones must be refused), mostly small valid grids (a case
/// then takes milliseconds; every code path is the same at any grid size).
fn pld_config() -> impl Strategy<Value = PldConfig> {
    (
        prop_oneof![3 => (-4.0f64..-1.0).prop_map(|e| 10f64.powf(e)), 1 => any_f64()],
        prop_oneof![3 => (-30.0f64..-6.0).prop_map(|e| 10f64.powf(e)), 1 => any_prob()],
        prop_oneof![
            8 => 1024usize..4096,
            1 => prop::sample::select(vec![0usize, 1023, (1 << 26) + 1, usize::MAX]),
        ],
        prop_oneof![
            2 => Just(None),
            2 => (-4.0f64..-1.0).prop_map(|e| Some(10f64.powf(e))),
            1 => any_f64().prop_map(Some),
        ],
    )
        .prop_map(
            |(discretisation, tail_mass, max_grid, epsilon_error)| PldConfig {
                discretisation,
                tail_mass,
                max_grid,
                epsilon_error,
            },
        )
}

#[test]
fn pld_accountant_and_fallback() {
    fuzz(
        "pld accountant and fallback",
        || (pld_config(), accountant_case(mostly_moderate), 0u8..4),
        |cx, (config, (ar, mechs, delta, eps), what)| {
            let rel = relation(ar);
            let parts = parts(cx, mechs);
            // One question per case: the optimistic estimate, the fallback chain's two, or the
            // accountant's own (each is a fresh grid).
            match what {
                0 => {
                    let acc = Box::new(PldAccountant::new(config, rel));
                    run_accountant(cx, acc, &parts, delta, eps);
                }
                1 | 2 => {
                    let (query, kind) = if what == 1 {
                        (Query::Epsilon { delta }, Valid::Eps)
                    } else {
                        (Query::Delta { epsilon: eps }, Valid::Prob)
                    };
                    let what = format!("answer_with_fallback({query:?})");
                    if let Some(Ok(a)) = cx.call(&what, || {
                        answer_with_fallback(&DEFAULT_CHAIN, rel, config, &parts, query)
                    }) {
                        cx.value(&what, kind, a.value);
                    }
                }
                _ => {
                    let mut acc = PldAccountant::new(config, rel);
                    for (mech, count) in &parts {
                        cx.call("pld: compose", || acc.compose(mech, *count));
                    }
                    cx.check("pld: epsilon", Valid::Eps, || acc.epsilon(delta));
                    if let Some(d) = acc.diagnostics() {
                        if let Some(h) = d.discretisation {
                            cx.value("pld: diagnostics.discretisation", Valid::Positive, h);
                        }
                        if let Some(e) = d.epsilon_error_estimate {
                            cx.value("pld: diagnostics.epsilon_error_estimate", Valid::Eps, e);
                        }
                    }
                }
            }
        },
    );
}

#[test]
fn calibration() {
    fuzz(
        "calibration",
        || {
            (
                (0usize..3, any::<bool>()),
                (any_f64(), any_prob(), any_count()),
                (
                    mech_args(mostly_moderate),
                    mostly_moderate(),
                    mostly_moderate(),
                ),
            )
        },
        |cx, ((k, ar), (e, p, steps), (mut m, x, y))| {
            let kind = [
                AccountantKind::Rdp,
                AccountantKind::Zcdp,
                AccountantKind::Exact,
            ][k];
            let rel = relation(ar);
            // RDP searches on subsampled mechanisms take seconds each (tens of evaluations of
            // the fractional-order series): the RDP searches run on the closed-form curves,
            // the subsampled ones under the exact and zCDP accountants.
            let rdp = kind == AccountantKind::Rdp;
            if rdp && (m.which == 2 || m.which == 3) {
                m.which = 0;
            }
            if let Some(Ok(mech)) = cx.call("build", || build_mechanism(m)) {
                let what = format!("epsilon_of({kind}, {})", mech.name());
                cx.check(&what, Valid::Eps, || epsilon_of(kind, rel, &mech, steps, p));
                let Some(Ok(target)) = cx.call("Target::new", || Target::new(e, p)) else {
                    return;
                };
                let what = format!("calibrate_steps({kind}, {})", mech.name());
                if let Some(Ok(c)) = cx.call(&what, || calibrate_steps(target, kind, rel, &mech)) {
                    cx.value(&what, Valid::Positive, c.value);
                    cx.value(&what, Valid::Eps, c.epsilon);
                }
            }
            let Ok(target) = Target::new(e, p) else {
                return;
            };
            // The searched parameter goes into one constructor slot; the others are fuzzed.
            let with = move |v: f64| {
                let mut a = m;
                a.x[0] = v;
                if a.which == 2 {
                    a.x[1] = x;
                }
                build_mechanism(a)
            };
            let what = format!("calibrate_noise({kind}, {})", mech_name(m.which));
            if let Some(Ok(c)) = cx.call(&what, || calibrate_noise(target, kind, rel, steps, with))
            {
                cx.value(&what, Valid::Positive, c.value);
                cx.value(&what, Valid::Eps, c.epsilon);
            }
            if rdp {
                return;
            }
            let make_q = move |q: f64| Mechanism::subsampled_gaussian(y, q);
            let what = format!("calibrate_sampling_rate({kind})");
            if let Some(Ok(c)) = cx.call(&what, || {
                calibrate_sampling_rate(target, kind, rel, steps, make_q)
            }) {
                cx.value(&what, Valid::Prob, c.value);
                cx.value(&what, Valid::Eps, c.epsilon);
            }
        },
    );
}

// Regression tests of the defects this fuzzing found in the PLD accountant (each case is
// one the harness reported, reduced).

/// A small grid, so that each case is cheap.
fn small_grid(max_grid: usize) -> PldConfig {
    PldConfig {
        max_grid,
        ..PldConfig::default()
    }
}

fn pld_with(config: PldConfig, rel: Neighbouring, parts: &[(Mechanism, u64)]) -> PldAccountant {
    let mut acc = PldAccountant::new(config, rel);
    for (m, c) in parts {
        acc.compose(m, *c).unwrap();
    }
    acc
}

fn out_of_range<T: Debug>(r: Result<T>, needle: &str) {
    assert!(
        matches!(&r, Err(dp_accounting::Error::OutOfRange(m)) if m.contains(needle)),
        "{r:?}"
    );
}

#[test]
fn regression_pld_counts_beyond_the_fft_are_refused_before_any_work() {
    // 2^40 Laplace steps: the optimistic estimate planned and allocated a 2^26-point FFT
    // (seconds, gigabytes) before the count was checked.
    let acc = pld_with(
        small_grid(1081),
        Neighbouring::AddRemove,
        &[(Mechanism::laplace(2.0, 1.0).unwrap(), 1 << 40)],
    );
    out_of_range(acc.epsilon(1e-5), "exceeds 2^32");
    out_of_range(acc.delta(1.0), "exceeds 2^32");
    out_of_range(acc.epsilon_optimistic(1e-5), "exceeds 2^32");
}

#[test]
fn regression_pld_composed_window_is_bounded_by_max_grid() {
    // A tiny Laplace composed 4 million times on the coarse grid a huge Gaussian needs: each
    // step moves ±1 cell at any width, so coarsening never shrank the window; the FFT grew to
    // 2^22 points for a max_grid of 3161 (seconds). Now refused with the limit named.
    let acc = pld_with(
        PldConfig {
            discretisation: 5.3e-292,
            tail_mass: 8.5e-303,
            max_grid: 3161,
            epsilon_error: Some(1.2e-4),
        },
        Neighbouring::AddRemove,
        &[
            (Mechanism::laplace(1.6127, 0.2104).unwrap(), 4_142_800),
            (Mechanism::gaussian(0.028587, 0.81867).unwrap(), 1 << 53),
        ],
    );
    out_of_range(acc.epsilon(1e-10), "max_grid");
    out_of_range(acc.epsilon_optimistic(1e-10), "max_grid");
}

#[test]
fn regression_pld_lower_estimate_stays_within_the_grid_limit() {
    // The lower estimate refines to a quarter of the upper bound's width; with a coarsened
    // grid that quadrupled a window already at max_grid. It now refines only as far as the
    // limit allows, and still answers below the upper bound.
    let acc = pld_with(
        small_grid(4096),
        Neighbouring::AddRemove,
        &[(Mechanism::laplace(1.0, 1.0).unwrap(), 100_000)],
    );
    let upper = acc.epsilon(1e-5).unwrap();
    let lower = acc.epsilon_optimistic(1e-5).unwrap().unwrap();
    assert!(
        lower.is_finite() && (0.0..=upper).contains(&lower),
        "{lower} vs {upper}"
    );
    // Laplace with Δ/b = 1 is 1-DP: at most T·1 = 10⁵, and above one step's ε = 1.
    assert!(upper > 1.0 && upper <= 1e5 * (1.0 + 1e-9), "{upper}");
}

#[test]
fn regression_pld_saturated_grid_indices_are_errors_not_panics() {
    // Losses of ±1e300 composed 2^32 − 1 times: the window's i64 indices saturated and their
    // difference overflowed (a panic in debug builds).
    let parts = [
        (Mechanism::pure_dp(1e300).unwrap(), u64::from(u32::MAX)),
        (Mechanism::laplace(1.0, 1.0).unwrap(), 1),
    ];
    let acc = pld_with(small_grid(2048), Neighbouring::AddRemove, &parts);
    assert!(acc.epsilon(1e-5).is_err());
    assert!(acc.delta(1.0).is_err());
    // A loss of 1.6e167 on a grid of width ~1e-3: its optimistic grid's indices saturated
    // at i64::MAX and `lo + i` overflowed.
    let parts = [(Mechanism::pure_dp(1.6e167).unwrap(), 82)];
    let acc = pld_with(small_grid(3044), Neighbouring::ReplaceOne, &parts);
    assert!(acc.epsilon_optimistic(1e-5).is_err());
}

#[test]
fn regression_pld_infinite_grid_width_is_an_error_not_a_panic() {
    // A subnormal configured width against a loss range of ~1e300 gave the grid width
    // 2^(i32::MAX)·h = ∞, NaN losses (0·∞), and a panic in `f64::clamp` of the ε scan.
    let config = PldConfig {
        discretisation: 2.1e-114,
        tail_mass: 1.25e-23,
        max_grid: 1330,
        epsilon_error: None,
    };
    let parts = [
        (Mechanism::pure_dp(1e300).unwrap(), 51),
        (Mechanism::gamma_ball(2.8, 0.42, 3, 39.4).unwrap(), 56),
    ];
    let acc = pld_with(config, Neighbouring::AddRemove, &parts);
    out_of_range(acc.epsilon(8.4e-207), "no finite grid");
    out_of_range(acc.delta(1.0), "no finite grid");
}
