//! Differential campaign (issue 9): every accountant, both neighbouring relations, against
//! 50-digit closed forms over the whole parameter space — σ from 1e-3 to 1e3, q from 1e-6 to
//! 1, T from 1 to 10⁶, δ from 0.5 down to 1e-30, ε(δ) and δ(ε).
//!
//! The ground truth is `tests/fixtures/campaign.json`, written by `tools/campaign.py` (mpmath;
//! the closed forms and their checks are described there): the Gaussian mechanism composed
//! T times, one Laplace release, one Poisson-subsampled Gaussian step and one objective
//! perturbation release, each value stored rounded *down* to f64. An accountant's answer is
//!
//! * OK — a finite number `≥` the truth (δ also `≤ 1`);
//! * UNDER — a number below the truth: a privacy defect;
//! * INVALID — NaN, negative, infinite, or δ > 1: a defect (an accountant that cannot answer
//!   must say so with a typed error);
//! * PANIC — a defect;
//! * ERROR — a typed `Err` (allowed; counted per accountant and reason);
//! * LOOSE — OK but ε more than 50% or δ more than 10× above the truth (informational).
//!
//! The campaign asserts at least 5,000 cases, no UNDER, INVALID or PANIC, and prints a summary
//! to stderr. One accountant is built per (accountant, group) — a group is one mechanism,
//! relation and count — and asked all of the group's queries.
//!
//! Cost: the PLD accountant's work grows with the range of the privacy loss (today its grid
//! has a fixed width h = 1e-4). Groups whose true ε at δ = 1e-30 exceeds [`PLD_FULL_EPS`] are
//! run under PLD only for a deterministic subsample (every [`PLD_HEAVY_STRIDE`]-th, plus every
//! named reproducer of issue 9); the other accountants run on every group. The count of
//! skipped PLD groups is printed.
//!
//! The default fallback chain (`answer_with_fallback` over `DEFAULT_CHAIN`, the CLI's
//! default) is checked the same way on a subsample (it rebuilds its accountants per query):
//! every named group and every [`FALLBACK_GROUP_STRIDE`]-th group, every
//! [`FALLBACK_QUERY_STRIDE`]-th query there.
//!
//! A second test checks facts that need no closed form on composed Poisson-subsampled
//! Gaussians (T up to 10⁶, q down to 1e-6): ε is non-decreasing in T and non-increasing in σ
//! for each accountant, and the PLD accountant's ε is at least its own optimistic estimate.
//!
//! Diagnostics: `CAMPAIGN_PLD_MAX_EPS=<x>` skips PLD on every group whose true ε at 1e-30
//! exceeds `x` (for a quick local look when PLD is slow); a run with it set always fails, so
//! it cannot make CI pass.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use common::{f, fixture, rel, rows};
use dp_accounting::{
    AccountantKind, DEFAULT_CHAIN, Mechanism, Neighbouring, ObjPertParams, PldConfig,
    Query as AQuery, answer_with_fallback,
};
use serde_json::Value;

/// Every accountant. The match is exhaustive on purpose: a new [`AccountantKind`] variant
/// does not compile here until it is added to the list (one line).
fn all_kinds() -> Vec<AccountantKind> {
    let kinds = [
        AccountantKind::Pld,
        AccountantKind::Rdp,
        AccountantKind::Zcdp,
        AccountantKind::Exact,
    ];
    for k in kinds {
        match k {
            AccountantKind::Pld
            | AccountantKind::Rdp
            | AccountantKind::Zcdp
            | AccountantKind::Exact => {}
        }
    }
    kinds.to_vec()
}

/// Groups whose true ε at δ = 1e-30 is at most this run under PLD in full.
const PLD_FULL_EPS: f64 = 60.0;
/// Above [`PLD_FULL_EPS`], PLD runs on every this-many-th group (and on every named one).
const PLD_HEAVY_STRIDE: usize = 6;
/// The fallback chain runs on every this-many-th group (and on every named one) ...
const FALLBACK_GROUP_STRIDE: usize = 40;
/// ... and there on every this-many-th query.
const FALLBACK_QUERY_STRIDE: usize = 4;
/// ε more than this factor above the truth is counted as LOOSE.
const LOOSE_EPS: f64 = 1.5;
/// δ more than this factor above the truth is counted as LOOSE.
const LOOSE_DELTA: f64 = 10.0;

/// A number stored as a string (exact round trip through `str::parse`).
fn num(v: &Value) -> f64 {
    v.as_str()
        .unwrap_or_else(|| panic!("{v} is not a string"))
        .parse()
        .unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// One query of a group.
struct Query {
    /// `true` for ε(δ), `false` for δ(ε).
    eps_query: bool,
    arg: f64,
    /// The truth rounded down to f64.
    down: f64,
    /// The truth rounded to nearest.
    near: f64,
}

/// One mechanism, relation and count with its queries.
struct Group {
    id: String,
    name: Option<String>,
    mech: String,
    rel: Neighbouring,
    region: String,
    count: u64,
    params: BTreeMap<String, f64>,
    queries: Vec<Query>,
}

impl Group {
    fn from_json(v: &Value) -> Self {
        let s = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("no `{k}` in {v}"));
        let params = v["params"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, x)| (k.clone(), num(x)))
            .collect();
        let queries = v["q"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| Query {
                eps_query: q[0] == "eps",
                arg: num(&q[1]),
                down: num(&q[2]),
                near: num(&q[3]),
            })
            .collect();
        Self {
            id: s("id").to_string(),
            name: v["name"].as_str().map(str::to_string),
            mech: s("mech").to_string(),
            rel: s("rel").parse().unwrap(),
            region: s("region").to_string(),
            count: f(v, "T") as u64,
            params,
            queries,
        }
    }

    fn p(&self, k: &str) -> f64 {
        self.params[k]
    }

    fn mechanism(&self) -> Mechanism {
        match self.mech.as_str() {
            "gaussian" => Mechanism::gaussian(self.p("sigma"), 1.0).unwrap(),
            "laplace" => Mechanism::laplace(self.p("scale"), 1.0).unwrap(),
            "subsampled-gaussian" => {
                Mechanism::subsampled_gaussian(self.p("sigma"), self.p("q")).unwrap()
            }
            "objpert" => Mechanism::objective_perturbation(
                ObjPertParams::new(
                    self.p("sigma"),
                    self.p("lambda"),
                    self.p("beta"),
                    self.p("L"),
                )
                .unwrap(),
            ),
            other => panic!("unknown mechanism {other}"),
        }
    }

    /// The true ε at the smallest δ of the fixture (1e-30): the scale of the privacy loss.
    fn eps_scale(&self) -> f64 {
        self.queries
            .iter()
            .filter(|q| q.eps_query)
            .min_by(|a, b| a.arg.total_cmp(&b.arg))
            .map_or(0.0, |q| q.near)
    }

    fn describe(&self) -> String {
        let ps: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "{} {} {} T={} [{}]{}",
            self.id,
            self.mech,
            self.rel,
            self.count,
            ps.join(", "),
            self.name
                .as_ref()
                .map_or(String::new(), |n| format!(" «{n}»"))
        )
    }
}

/// The outcome of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Ok,
    Loose,
    Error,
    Under,
    Invalid,
    Panic,
}

/// Classifies an answer to `q`.
fn classify(q: &Query, answer: &std::thread::Result<dp_accounting::Result<f64>>) -> Class {
    let v = match answer {
        Err(_) => return Class::Panic,
        Ok(Err(_)) => return Class::Error,
        Ok(Ok(v)) => *v,
    };
    if !v.is_finite() || v < 0.0 || (!q.eps_query && v > 1.0) {
        return Class::Invalid;
    }
    if v < q.down {
        return Class::Under;
    }
    let loose = if q.eps_query {
        v > LOOSE_EPS * q.near && v - q.near > 1e-12
    } else {
        v > LOOSE_DELTA * q.near && v > 1e-300
    };
    if loose { Class::Loose } else { Class::Ok }
}

/// An error message with digits removed, as a grouping key.
fn reason(e: &dp_accounting::Error) -> String {
    let s: String = e
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    s.chars().take(90).collect()
}

/// Runs `f`, turning a panic into `Err` (the hook still prints it).
fn guarded<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    catch_unwind(AssertUnwindSafe(f))
}

#[derive(Default)]
struct Tally {
    answers: u64,
    by_class: BTreeMap<(String, Class), u64>,
    errors: BTreeMap<(String, String), u64>,
    defects: Vec<String>,
    loose: BTreeMap<(String, String, String), u64>,
    seconds: BTreeMap<String, f64>,
    pld_skipped: u64,
}

impl Tally {
    /// Classifies and records one answer of accountant `kind`.
    fn answer(
        &mut self,
        kind: &str,
        g: &Group,
        q: &Query,
        answer: &std::thread::Result<dp_accounting::Result<f64>>,
    ) {
        let c = classify(q, answer);
        if let Ok(Err(e)) = answer {
            *self
                .errors
                .entry((kind.to_string(), reason(e)))
                .or_default() += 1;
        }
        let shown = match answer {
            Ok(Ok(v)) => format!("{v:e}"),
            Ok(Err(e)) => format!("Err({e})"),
            Err(_) => "panic".into(),
        };
        self.record(kind, g, q, c, shown);
    }

    fn record(&mut self, kind: &str, g: &Group, q: &Query, c: Class, shown: String) {
        self.answers += 1;
        *self.by_class.entry((kind.to_string(), c)).or_default() += 1;
        match c {
            Class::Under | Class::Invalid | Class::Panic => self.defects.push(format!(
                "{c:?} {kind} {} region {}: {}({:e}) = {shown}, truth {:e}",
                g.describe(),
                g.region,
                if q.eps_query { "eps" } else { "delta" },
                q.arg,
                q.near
            )),
            Class::Loose => {
                *self
                    .loose
                    .entry((kind.to_string(), g.mech.clone(), g.region.clone()))
                    .or_default() += 1
            }
            Class::Ok | Class::Error => {}
        }
    }
}

/// Every accountant on one group: compose once, ask every query.
fn run_group(kind: AccountantKind, g: &Group, t: &mut Tally) {
    let start = Instant::now();
    let mech = g.mechanism();
    let mut acc = kind.build(g.rel);
    let composed = guarded(|| acc.compose(&mech, g.count));
    for q in &g.queries {
        let answer = match &composed {
            Err(_) => Err(Box::new("panic in compose") as Box<dyn std::any::Any + Send>),
            Ok(Err(e)) => Ok(Err(e.clone())),
            Ok(Ok(())) => guarded(|| {
                if q.eps_query {
                    acc.epsilon(q.arg)
                } else {
                    acc.delta(q.arg)
                }
            }),
        };
        t.answer(kind.as_str(), g, q, &answer);
    }
    *t.seconds.entry(kind.to_string()).or_default() += start.elapsed().as_secs_f64();
}

/// The default fallback chain ([`answer_with_fallback`] over [`DEFAULT_CHAIN`], what the CLI
/// uses without `--accountant`) on every [`FALLBACK_QUERY_STRIDE`]-th query of a group: it
/// rebuilds its accountants for every query, so it runs on a subsample.
fn run_fallback(g: &Group, t: &mut Tally) {
    let start = Instant::now();
    let parts = [(g.mechanism(), g.count)];
    for q in g.queries.iter().step_by(FALLBACK_QUERY_STRIDE) {
        let query = if q.eps_query {
            AQuery::Epsilon { delta: q.arg }
        } else {
            AQuery::Delta { epsilon: q.arg }
        };
        let answer = guarded(|| {
            answer_with_fallback(&DEFAULT_CHAIN, g.rel, PldConfig::default(), &parts, query)
                .map(|a| a.value)
        });
        t.answer(FALLBACK, g, q, &answer);
    }
    *t.seconds.entry(FALLBACK.to_string()).or_default() += start.elapsed().as_secs_f64();
}

/// The name the fallback chain is reported under.
const FALLBACK: &str = "fallback";

#[test]
fn campaign_no_accountant_under_reports() {
    let fx = fixture("campaign.json");
    let groups: Vec<Group> = rows(&fx, "groups").iter().map(Group::from_json).collect();
    let cases: usize = groups.iter().map(|g| g.queries.len()).sum();
    let diag_cap: Option<f64> = std::env::var("CAMPAIGN_PLD_MAX_EPS")
        .ok()
        .map(|s| s.parse().unwrap());
    let mut t = Tally::default();
    let mut heavy_seen = 0usize;
    let mut diag_skipped = 0u64;
    for (i, g) in groups.iter().enumerate() {
        if g.name.is_some() || i.is_multiple_of(FALLBACK_GROUP_STRIDE) {
            run_fallback(g, &mut t);
        }
        for kind in all_kinds() {
            if kind == AccountantKind::Pld && g.eps_scale() > PLD_FULL_EPS {
                let take = g.name.is_some() || heavy_seen.is_multiple_of(PLD_HEAVY_STRIDE);
                heavy_seen += 1;
                if !take {
                    t.pld_skipped += 1;
                    continue;
                }
                if diag_cap.is_some_and(|cap| g.eps_scale() > cap) {
                    diag_skipped += 1;
                    continue;
                }
            }
            let start = Instant::now();
            run_group(kind, g, &mut t);
            let secs = start.elapsed().as_secs_f64();
            if secs > 2.0 {
                eprintln!("campaign: slow: {kind} {} took {secs:.1} s", g.describe());
            }
        }
    }

    // Report.
    let count = |c: Class| -> u64 {
        t.by_class
            .iter()
            .filter(|((_, k), _)| *k == c)
            .map(|(_, n)| n)
            .sum()
    };
    let mut per_mech: BTreeMap<(String, String), usize> = BTreeMap::new();
    for g in &groups {
        *per_mech
            .entry((g.mech.clone(), g.region.clone()))
            .or_default() += g.queries.len();
    }
    eprintln!("campaign: cases per mechanism and region:");
    for ((m, r), n) in &per_mech {
        eprintln!("  {m:<20} {r:<14} {n}");
    }
    eprintln!("campaign: answers per accountant and class:");
    for ((k, c), n) in &t.by_class {
        eprintln!("  {k:<6} {c:?}: {n}");
    }
    eprintln!("campaign: typed errors per accountant and reason:");
    for ((k, r), n) in &t.errors {
        eprintln!("  {k:<6} {n:>6}  {r}");
    }
    eprintln!("campaign: LOOSE answers per accountant, mechanism and region:");
    for ((k, m, r), n) in &t.loose {
        eprintln!("  {k:<6} {m:<20} {r:<14} {n}");
    }
    for (k, s) in &t.seconds {
        eprintln!("campaign: {k} took {s:.2} s");
    }
    for d in &t.defects {
        eprintln!("campaign: DEFECT {d}");
    }
    let summary = format!(
        "campaign: {} cases in {} groups, {} answers, {} under-reports, {} invalid, {} panics, \
         {} typed errors, {} loose; PLD subsampled on ε*(1e-30) > {PLD_FULL_EPS}: {} groups \
         skipped",
        cases,
        groups.len(),
        t.answers,
        count(Class::Under),
        count(Class::Invalid),
        count(Class::Panic),
        count(Class::Error),
        count(Class::Loose),
        t.pld_skipped
    );
    eprintln!("{summary}");
    // `cargo xtask test` prints this file after the tests, so CI's log shows the result.
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("campaign-summary.txt"),
        format!("{summary}\n"),
    );

    assert!(cases >= 5000, "only {cases} cases");
    assert!(
        t.defects.is_empty(),
        "{} defects (first: {})",
        t.defects.len(),
        t.defects[0]
    );
    assert!(
        diag_skipped == 0,
        "diagnostic run: CAMPAIGN_PLD_MAX_EPS skipped PLD on {diag_skipped} more groups"
    );
}

/// Monotonicity without a closed form: composed Poisson-subsampled Gaussian (add/remove).
#[test]
fn composed_subsampled_gaussian_is_monotone() {
    // A small grid: each PLD point is composed twice (upper bound and optimistic estimate).
    let ts: [u64; 4] = [1, 100, 10_000, 1_000_000];
    let sigmas = [0.5, 2.0, 8.0];
    let qs = [1e-6, 1e-3, 0.1];
    let delta = 1e-5;
    let mut failures = Vec::new();
    let mut checked = 0u64;
    let mut errors = 0u64;
    let mut seconds: BTreeMap<String, f64> = BTreeMap::new();
    for kind in all_kinds() {
        let start = Instant::now();
        for &q in &qs {
            // eps[i][j]: sigma i, T j (None: a typed error).
            let mut table: Vec<Vec<Option<f64>>> = Vec::new();
            for &sigma in &sigmas {
                let mech = Mechanism::subsampled_gaussian(sigma, q).unwrap();
                let mut row = Vec::new();
                for &t in &ts {
                    let mut acc = kind.build(Neighbouring::AddRemove);
                    let r = guarded(|| {
                        acc.compose(&mech, t)?;
                        let e = acc.epsilon(delta)?;
                        let lower = acc.epsilon_optimistic(delta)?;
                        Ok::<_, dp_accounting::Error>((e, lower))
                    });
                    let what = format!("{kind} q={q} sigma={sigma} T={t}");
                    match r {
                        Err(_) => {
                            failures.push(format!("{what}: panic"));
                            row.push(None);
                        }
                        Ok(Err(_)) => {
                            errors += 1;
                            row.push(None);
                        }
                        Ok(Ok((e, lower))) => {
                            if !e.is_finite() || e < 0.0 {
                                failures.push(format!("{what}: invalid eps {e}"));
                            }
                            if let Some(l) = lower
                                && (l > e || l.is_nan())
                            {
                                failures.push(format!("{what}: eps {e} below its lower {l}"));
                            }
                            row.push(Some(e));
                        }
                    }
                }
                table.push(row);
            }
            for (i, row) in table.iter().enumerate() {
                for j in 1..row.len() {
                    if let (Some(a), Some(b)) = (row[j - 1], row[j]) {
                        checked += 1;
                        if b < a {
                            failures.push(format!(
                                "{kind} q={q} sigma={}: eps(T={}) = {b} < eps(T={}) = {a}",
                                sigmas[i],
                                ts[j],
                                ts[j - 1]
                            ));
                        }
                    }
                    if let (Some(a), Some(b)) = (row[0], row[j])
                        && b < a
                    {
                        failures.push(format!(
                            "{kind} q={q} sigma={}: eps(T={}) = {b} < eps(T=1) = {a}",
                            sigmas[i], ts[j]
                        ));
                    }
                }
                if i > 0 {
                    for (j, &t) in ts.iter().enumerate() {
                        if let (Some(a), Some(b)) = (table[i - 1][j], row[j]) {
                            checked += 1;
                            if b > a {
                                failures.push(format!(
                                    "{kind} q={q} T={t}: eps(sigma={}) = {b} > eps(sigma={}) \
                                     = {a} (rel {:e})",
                                    sigmas[i],
                                    sigmas[i - 1],
                                    rel(b, a)
                                ));
                            }
                        }
                    }
                }
            }
        }
        *seconds.entry(kind.to_string()).or_default() += start.elapsed().as_secs_f64();
    }
    for f in &failures {
        eprintln!("monotone: FAIL {f}");
    }
    for (k, s) in &seconds {
        eprintln!("monotone: {k} took {s:.2} s");
    }
    eprintln!(
        "monotone: {checked} comparisons, {errors} typed errors, {} failures",
        failures.len()
    );
    assert!(checked > 50, "only {checked} comparisons");
    assert!(failures.is_empty(), "{} failures", failures.len());
}
