//! Every noise draw is counted against the model's event tree (issue 32 §4): for every
//! learner of the registry, fitted through the front door with its defaults, and under
//! add/remove where it supports it (the private row count), the noise calls counted by
//! `dp_optim::tally` must each name an event of the model's tree, and every event of the tree
//! must have been served by a draw. A draw with no event (noise that left unaccounted) and an
//! event with no draw (a price for noise that was never added) both fail.
//!
//! A Gaussian (or shuffled) release must have drawn exactly as often as its event counts it;
//! a pure-DP or zCDP event may stand for many draws. Labels are matched by containment: a composite learner prefixes its parts' labels
//! ("B = 2: noisy gradient"), and every AboveThreshold estimate draws under
//! "AboveThreshold", which each estimate's label ends with.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeMap;

use dp_glm::catalog::{LEARNERS, Losses, Params, Value};
use dp_glm::frontdoor::{ArrayFit, Scaling};
use dp_glm::{LinearModel, Loss};
use ndarray::{Array1, Array2};

/// `n` rows of `d` features in [-1, 1] (a fixed pattern) and labels: ±1 by a linear rule,
/// or the linear response for regression.
fn data(n: usize, d: usize, regression: bool) -> (Array2<f64>, Array1<f64>) {
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        (((i * (31 + 6 * j) + 7 * j) % 97) as f64) / 48.0 - 1.0
    });
    let y: Array1<f64> = x
        .rows()
        .into_iter()
        .map(|r| {
            let z = r
                .iter()
                .enumerate()
                .map(|(j, v)| v / (j + 1) as f64)
                .sum::<f64>();
            if regression {
                0.5 * z
            } else if z >= 0.0 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    (x, y)
}

/// Fits `learner` with `params` and returns the model and the noise calls it made.
fn fit(
    learner: &'static str,
    params: &Params,
    scaling: Scaling,
) -> (LinearModel, BTreeMap<String, u64>) {
    let l = dp_glm::catalog::learner(learner).unwrap();
    let (loss, regression) = match (l.losses, l.name) {
        (Losses::Squared, _) => (Loss::Squared, true),
        (Losses::Any, "nonconvex-dp-gd") => (Loss::Savage, false),
        (Losses::Any, _) => (Loss::Logistic, false),
    };
    let (x, y) = data(2000, 3, regression);
    let run = ArrayFit {
        learner: l,
        loss,
        epsilon: 1.0,
        delta: 1e-5,
        params,
        scaling,
        unit_norm: None,
        bias: None,
        bounds_budget: None,
        seed: Some(3),
        classes: None,
    };
    dp_optim::tally::take();
    let fitted = run
        .fit(x.view(), y, None)
        .unwrap_or_else(|e| panic!("{learner} {params:?}: {e}"));
    (fitted.model, dp_optim::tally::take())
}

/// The failures of one fit: draws whose label names no event, events no draw served, and
/// Gaussian releases drawn another number of times than their events count.
fn unmatched(model: &LinearModel, draws: &BTreeMap<String, u64>) -> Vec<String> {
    let releases = model.privacy().event.releases();
    let mut out = Vec::new();
    for (label, &drawn) in draws {
        let events: Vec<_> = releases
            .iter()
            .filter(|e| e.label.contains(label.as_str()))
            .collect();
        if events.is_empty() {
            out.push(format!("a draw for \"{label}\" has no event"));
        }
        // A Gaussian release draws once per counted use (a pure-DP or zCDP event may cover
        // many draws: AboveThreshold's, a parallel composition's).
        let counted = events
            .iter()
            .all(|e| !matches!(e.mechanism.name(), "pure-dp" | "zcdp"));
        let uses: u64 = events
            .iter()
            .map(|e| e.count * parallel_runs(&e.label))
            .sum();
        if counted && !events.is_empty() && uses != drawn {
            out.push(format!(
                "\"{label}\": {drawn} draws for {uses} counted releases"
            ));
        }
    }
    for event in &releases {
        if !draws.keys().any(|d| event.label.contains(d.as_str())) {
            out.push(format!("the event \"{}\" had no draw", event.label));
        }
    }
    out
}

/// The number of runs an event's label says it stands for by parallel composition ("one of 4
/// runs on disjoint parts: …", confidence boosting: each record is in one part, so the event
/// counts one run's releases), else 1.
fn parallel_runs(label: &str) -> u64 {
    label
        .strip_prefix("one of ")
        .and_then(|rest| rest.split_once(" runs on disjoint parts"))
        .and_then(|(m, _)| m.parse().ok())
        .unwrap_or(1)
}

#[test]
fn every_draw_of_every_learner_is_an_event_of_its_tree_and_back() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for l in LEARNERS {
        let mut variants = vec![(Params::new(), Scaling::None)];
        // The feature ranges estimated privately (classification): AboveThreshold's draws.
        if l.losses == Losses::Any {
            variants.push((Params::new(), Scaling::Auto));
        }
        // Under add/remove the rows are counted privately first.
        if l.uses("neighbouring") && l.uses("public_n") {
            let mut p = Params::new();
            p.set("neighbouring", Value::Choice("add-remove".into()));
            variants.push((p, Scaling::None));
        }
        for (params, scaling) in variants {
            let label = format!("{} {params:?} {scaling:?}", l.name);
            let (model, draws) = fit(l.name, &params, scaling);
            assert!(!draws.is_empty(), "{label}: no noise was drawn");
            for f in unmatched(&model, &draws) {
                failures.push(format!("{label}: {f}"));
            }
            cases += 1;
        }
    }
    assert!(cases >= LEARNERS.len(), "{cases} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The check fails where it should: a draw with no event, a step more than the tree counts,
/// and events with no draw.
#[test]
fn an_unaccounted_draw_and_an_undrawn_event_are_both_caught() {
    let (model, mut draws) = fit("dp-gd", &Params::new(), Scaling::None);
    assert!(unmatched(&model, &draws).is_empty());
    draws.insert("noise nobody accounted".into(), 1);
    let found = unmatched(&model, &draws);
    assert_eq!(
        found,
        ["a draw for \"noise nobody accounted\" has no event"]
    );
    draws.clear();
    let found = unmatched(&model, &draws);
    assert!(found.iter().all(|f| f.ends_with("had no draw")) && !found.is_empty());
}
