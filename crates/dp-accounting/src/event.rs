//! Privacy events: what a computation released, as a tree, and [`price`], the one function
//! that turns a tree into a reported (ε, δ).
//!
//! The vocabulary follows Google's `dp_accounting` (`DpEvent`): a leaf releases one
//! mechanism some number of times ([`Event::Release`], a [`LedgerEntry`]: Gaussian, Laplace,
//! pure DP, Poisson-sampled or sampled-without-replacement Gaussian steps, objective
//! perturbation, AMP, zCDP, each with its grid release if any); inner nodes compose
//! ([`Event::Composed`], [`Event::SelfComposed`]), repeat and select (Papernot & Steinke
//! 2022) and shuffle local randomisers (Feldman, McMillan & Talwar 2021). A
//! [`PrivacyEvent`] is a tree under one [`Neighbouring`] relation, checked when it is built:
//! every node's analysis must cover it.
//!
//! # Privacy
//! [`price`] returns an upper bound on ε(δ) of the whole tree: at each node the smallest of
//! the answers that apply there, each an upper bound (see [`Method`]).

use std::fmt;

use crate::accountant::{Accountant, AccountantKind, Note};
use crate::discrete_gaussian::GridComposition;
use crate::error::{Error, Result, ensure, valid_delta};
use crate::exact::ExactAccountant;
use crate::ledger::{Ledger, LedgerEntry};
use crate::mechanism::{Kind, Mechanism};
use crate::neighbouring::Neighbouring;
use crate::pld::PldConfig;
use crate::rdp::RdpAccountant;
use crate::selection::{Repetitions, tuned};
use crate::shuffle::shuffle_epsilon_numerical;

/// One node of a privacy event tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `count` independent applications of one mechanism, with what it released.
    Release(LedgerEntry),
    /// The events in release order, each run once (adaptively: each may depend on the
    /// earlier outputs).
    Composed(Vec<Event>),
    /// `count` adaptive runs of `event`.
    SelfComposed {
        /// The event repeated.
        event: Box<Event>,
        /// How many runs.
        count: u64,
    },
    /// Papernot & Steinke 2022 (*Hyperparameter tuning with Rényi differential privacy*):
    /// `event` run `K` times, `K` drawn from `repetitions`, and only the best run released.
    RepeatAndSelect {
        /// One run (a trial and its noisy score).
        event: Box<Event>,
        /// The law of `K`.
        repetitions: Repetitions,
    },
    /// `n` local randomisers `local` applied to a uniformly shuffled dataset, one record
    /// each (Feldman, McMillan & Talwar 2021, replace-one). `local`'s sensitivity is the
    /// diameter of its input domain: its (ε0, δ0) is the mechanism's alone, at `delta0`.
    Shuffled {
        /// One local randomiser.
        local: Mechanism,
        /// How many records (one randomiser each).
        n: u64,
        /// The δ0 at which the randomiser's ε0 is taken.
        delta0: f64,
        /// What it released.
        label: String,
    },
}

/// A privacy event tree under one neighbouring relation.
///
/// # Privacy
/// Built through [`PrivacyEvent::new`] (and [`PrivacyEvent::composed`] of such trees), which
/// checks that every node's analysis covers the relation, or from a [`Ledger`], whose
/// mechanisms every accountant checks against the relation when it composes them.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyEvent {
    rel: Neighbouring,
    root: Event,
}

/// How [`price`] answered at the root of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The chosen accountant composed every mechanism of the tree (the tree is a plain
    /// composition).
    Accountant,
    /// The Rényi curves of the parts were added (Mironov 2017, Prop. 1) and converted.
    RenyiComposition,
    /// Papernot & Steinke 2022, Thm 2 (truncated negative binomial `K`) or Thm 6 (Poisson
    /// `K`), on the Rényi curve of one run.
    RepeatAndSelect,
    /// Amplification by shuffling (Feldman, McMillan & Talwar 2021, Thm 3.2, 3.1 and 3.8).
    Shuffling,
    /// Basic composition (Dwork & Roth 2014, Thm 3.16): the parts' ε added, δ split among
    /// the parts that are not pure DP.
    BasicComposition,
}

impl Method {
    /// A short name for reports: `accountant`, `renyi-composition`, `repeat-and-select`,
    /// `shuffling`, `basic-composition`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Accountant => "accountant",
            Method::RenyiComposition => "renyi-composition",
            Method::RepeatAndSelect => "repeat-and-select",
            Method::Shuffling => "shuffling",
            Method::BasicComposition => "basic-composition",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The price of a [`PrivacyEvent`]: [`price`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// ε at `delta`, an upper bound (rounded up).
    pub epsilon: f64,
    /// The δ asked for.
    pub delta: f64,
    /// The accountant asked.
    pub accountant: AccountantKind,
    /// How the root was priced.
    pub method: Method,
    /// The accountant's notes on its answer, when [`Method::Accountant`] answered.
    pub notes: Vec<Note>,
}

/// Relative margin added to a sum of upper bounds (a few ulps of its rounding).
const SUM_MARGIN: f64 = 4.0 * f64::EPSILON;

impl Event {
    /// A leaf: `count` applications of `mechanism`, labelled.
    pub fn release(mechanism: Mechanism, count: u64, label: &str) -> Self {
        Event::Release(LedgerEntry {
            mechanism,
            count,
            label: label.to_string(),
        })
    }

    /// The mechanisms of a plain composition (leaves, compositions and self-compositions of
    /// them), each with its total count; `None` if the tree holds another node.
    fn flat(&self) -> Option<Vec<(Mechanism, u64)>> {
        let mut parts = Vec::new();
        self.flat_into(1, &mut parts).then_some(parts)
    }

    fn flat_into(&self, times: u64, parts: &mut Vec<(Mechanism, u64)>) -> bool {
        match self {
            Event::Release(e) => match e.count.checked_mul(times) {
                Some(c) => {
                    parts.push((e.mechanism.clone(), c));
                    true
                }
                None => false,
            },
            Event::Composed(events) => events.iter().all(|e| e.flat_into(times, parts)),
            Event::SelfComposed { event, count } => match count.checked_mul(times) {
                Some(t) => event.flat_into(t, parts),
                None => false,
            },
            Event::RepeatAndSelect { .. } | Event::Shuffled { .. } => false,
        }
    }

    /// ε of a pure-DP plain composition (every mechanism pure: pure DP, Laplace, Gamma
    /// ball), `Σ count·ε`; `None` otherwise.
    fn pure_epsilon(&self, rel: Neighbouring) -> Option<f64> {
        let parts = self.flat()?;
        let mut total = 0.0;
        for (m, c) in &parts {
            let e = match m.kind {
                Kind::Laplace { scale, sensitivity } => {
                    rel.sum_sensitivity_factor() * sensitivity / scale
                }
                _ => m.pure_epsilon(rel)?,
            };
            total += *c as f64 * e;
        }
        Some(total * (1.0 + SUM_MARGIN))
    }

    /// Checks every node against `rel`.
    fn check(&self, rel: Neighbouring) -> Result<()> {
        match self {
            Event::Release(e) => e.mechanism.check_relation(rel, "event"),
            Event::Composed(events) => events.iter().try_for_each(|e| e.check(rel)),
            Event::SelfComposed { event, .. } | Event::RepeatAndSelect { event, .. } => {
                event.check(rel)
            }
            Event::Shuffled { n, delta0, .. } => {
                ensure(*n >= 1, "n", *n as f64, "must be >= 1")?;
                ensure(
                    *delta0 > 0.0 && *delta0 < 1.0,
                    "delta0",
                    *delta0,
                    "must be in (0, 1)",
                )?;
                if rel == Neighbouring::ReplaceOne {
                    Ok(())
                } else {
                    Err(Error::Unsupported {
                        accountant: "event",
                        what: format!("amplification by shuffling under the {rel} relation"),
                    })
                }
            }
        }
    }

    /// The Rényi curve of the node on the default orders, where one exists: plain
    /// compositions whose grid releases the Rényi curve covers (Gaussian and subsampled
    /// Gaussian), sums of such curves, and repeat-and-select of them.
    fn renyi(&self, rel: Neighbouring) -> Result<RdpAccountant> {
        if let Some(parts) = self.flat() {
            let mut acc = RdpAccountant::new(rel);
            for (m, c) in &parts {
                if m.grid.is_some()
                    && !matches!(
                        m.kind,
                        Kind::Gaussian { .. } | Kind::SubsampledGaussian { .. }
                    )
                {
                    return Err(Error::Unsupported {
                        accountant: "rdp",
                        what: format!("a sum of Rényi curves with a {} grid release", m.name()),
                    });
                }
                acc.compose(m, *c)?;
            }
            return Ok(acc);
        }
        match self {
            Event::Composed(events) => {
                let mut curves = events.iter().map(|e| e.renyi(rel));
                let first = curves
                    .next()
                    .unwrap_or_else(|| Ok(RdpAccountant::new(rel)))?;
                curves.try_fold(first, |acc, next| add_curves(&acc, &next?, 1.0))
            }
            Event::SelfComposed { event, count } => {
                let one = event.renyi(rel)?;
                add_curves(&RdpAccountant::new(rel), &one, *count as f64)
            }
            Event::RepeatAndSelect { event, repetitions } => {
                tuned(&event.renyi(rel)?, *repetitions)
            }
            _ => Err(Error::Unsupported {
                accountant: "rdp",
                what: "a Rényi curve of amplification by shuffling".into(),
            }),
        }
    }

    /// The node's children for basic composition, each with its multiplicity; `None` for a
    /// leaf or a node that is not a composition.
    fn parts(&self) -> Option<Vec<(&Event, u64)>> {
        match self {
            Event::Composed(events) => Some(events.iter().map(|e| (e, 1)).collect()),
            Event::SelfComposed { event, count } => Some(vec![(event.as_ref(), *count)]),
            _ => None,
        }
    }

    /// ε(δ) of the node: the smallest answer of those that apply (see [`Method`]).
    fn epsilon(&self, ctx: &Context, delta: f64) -> Result<(f64, Method, Vec<Note>)> {
        let flat = self.flat();
        let mut best: Option<(f64, Method, Vec<Note>)> = None;
        let mut first_error = None;
        let mut consider = |answer: Result<(f64, Method, Vec<Note>)>| match answer {
            Ok(a) => {
                if best.as_ref().is_none_or(|b| a.0 < b.0) {
                    best = Some(a);
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        };
        if let Some(parts) = &flat {
            consider(ctx.accountant(parts, delta));
        } else if let Event::Shuffled {
            local, n, delta0, ..
        } = self
        {
            consider(shuffled_epsilon(local, *n, *delta0, delta));
        } else {
            let method = if matches!(self, Event::RepeatAndSelect { .. }) {
                Method::RepeatAndSelect
            } else {
                Method::RenyiComposition
            };
            consider(
                self.renyi(ctx.rel)
                    .and_then(|acc| acc.epsilon(delta))
                    .map(|e| (e, method, Vec::new())),
            );
        }
        // Basic composition wherever a composition holds more than plain releases.
        if let Some(parts) = self.parts()
            && parts.iter().any(|(e, _)| !matches!(e, Event::Release(_)))
        {
            consider(basic(ctx, &parts, delta).map(|e| (e, Method::BasicComposition, Vec::new())));
        }
        match (best, first_error) {
            (Some(b), _) => Ok(b),
            (None, Some(e)) => Err(e),
            (None, None) => Err(Error::Unsupported {
                accountant: ctx.kind.as_str(),
                what: "an event with no applicable analysis".into(),
            }),
        }
    }
}

/// `a`'s curve plus `times` × `b`'s, on `a`'s orders (both on the default orders).
fn add_curves(a: &RdpAccountant, b: &RdpAccountant, times: f64) -> Result<RdpAccountant> {
    let sum = a
        .curve()
        .iter()
        .zip(b.curve())
        .map(|(x, y)| {
            let v = x + times * y;
            if v.is_nan() { f64::INFINITY } else { v }
        })
        .collect();
    // `b`'s closed-form facts stay valid for the sum: composing more never lowers ε.
    b.with_curve(sum)
}

/// The settings every node is priced with.
struct Context {
    kind: AccountantKind,
    pld: PldConfig,
    rel: Neighbouring,
}

impl Context {
    /// The chosen accountant on a plain composition.
    fn accountant(
        &self,
        parts: &[(Mechanism, u64)],
        delta: f64,
    ) -> Result<(f64, Method, Vec<Note>)> {
        let mut acc = self.kind.build_with(self.rel, self.pld);
        for (m, c) in parts {
            acc.compose(m, *c)?;
        }
        let e = acc.epsilon(delta)?;
        Ok((e, Method::Accountant, acc.notes()))
    }
}

/// Basic composition of `parts` (each with its multiplicity) at `delta`: pure parts at
/// δ = 0, the others at an equal share of `delta`.
fn basic(ctx: &Context, parts: &[(&Event, u64)], delta: f64) -> Result<f64> {
    let pure: Vec<Option<f64>> = parts.iter().map(|(e, _)| e.pure_epsilon(ctx.rel)).collect();
    let shares: u64 = parts
        .iter()
        .zip(&pure)
        .filter(|(_, p)| p.is_none())
        .map(|((_, c), _)| *c)
        .sum();
    let share = if shares == 0 {
        delta
    } else {
        delta / shares as f64
    };
    let mut total = 0.0;
    for ((e, c), p) in parts.iter().zip(&pure) {
        let each = match p {
            Some(p) => *p,
            None => e.epsilon(ctx, share)?.0,
        };
        total += *c as f64 * each;
    }
    Ok(total * (1.0 + SUM_MARGIN))
}

/// ε0 at `delta0` of one local randomiser `local`, whose sensitivity is the diameter of its
/// input domain: the mechanism alone by the closed forms (the exact accountant under
/// add/remove, which takes the sensitivity as given), with the discrete-Gaussian adjustment
/// of a grid release.
///
/// # Privacy
/// [`ExactAccountant`]'s tight closed form (Balle & Wang 2018 for a Gaussian) plus the
/// grid adjustment ([`GridComposition::epsilon`]), an upper bound, rounded up.
///
/// # Errors
/// δ0 ∉ (0, 1); a mechanism the closed forms do not cover.
pub fn randomiser_epsilon(local: &Mechanism, delta0: f64) -> Result<f64> {
    let mut grid = GridComposition::new();
    let mut continuous = local.clone();
    if let Some(g) = continuous.grid.take() {
        grid.add(g, 1);
    }
    let mut acc = ExactAccountant::new(Neighbouring::AddRemove);
    acc.compose(&continuous, 1)?;
    grid.epsilon(&acc, delta0)
}

/// ε at `delta` of `n` shuffled randomisers `local` taken at `delta0`
/// ([`randomiser_epsilon`]), by the shuffling bound at `delta/2`, its total δ checked
/// `≤ delta`.
fn shuffled_epsilon(
    local: &Mechanism,
    n: u64,
    delta0: f64,
    delta: f64,
) -> Result<(f64, Method, Vec<Note>)> {
    let eps0 = randomiser_epsilon(local, delta0)?;
    let bound = shuffle_epsilon_numerical(eps0, delta0, n, 0.5 * delta)?;
    if bound.delta.is_nan() || bound.delta > delta {
        return Err(Error::OutOfRange(format!(
            "the shuffled randomisers' delta {} exceeds {delta}: delta0 = {delta0} is too \
             large for this delta",
            bound.delta
        )));
    }
    Ok((bound.epsilon, Method::Shuffling, Vec::new()))
}

impl PrivacyEvent {
    /// The tree `root` under `rel`.
    ///
    /// # Errors
    /// A node whose analysis does not cover `rel` ([`Error::Unsupported`]) or has invalid
    /// parameters.
    pub fn new(rel: Neighbouring, root: Event) -> Result<Self> {
        root.check(rel)?;
        Ok(Self { rel, root })
    }

    /// The relation.
    pub fn neighbouring(&self) -> Neighbouring {
        self.rel
    }

    /// The root node.
    pub fn root(&self) -> &Event {
        &self.root
    }

    /// `self` followed by `later` (both under the same relation).
    ///
    /// # Errors
    /// The relations differ.
    pub fn then(self, later: PrivacyEvent) -> Result<Self> {
        Self::composed(vec![self, later])
    }

    /// The composition of `events` in order, all under one relation.
    ///
    /// # Errors
    /// No events, or their relations differ.
    pub fn composed(events: Vec<PrivacyEvent>) -> Result<Self> {
        let rel = events
            .first()
            .map(|e| e.rel)
            .ok_or(Error::InvalidParameter {
                name: "events",
                value: 0.0,
                reason: "must not be empty",
            })?;
        if let Some(other) = events.iter().find(|e| e.rel != rel) {
            return Err(Error::Unsupported {
                accountant: "event",
                what: format!(
                    "composing an event under {} with one under {rel}: neighbouring relations \
                     must not be mixed",
                    other.rel
                ),
            });
        }
        Ok(Self {
            rel,
            root: Event::Composed(events.into_iter().map(|e| e.root).collect()),
        })
    }

    /// Every release in the tree, depth first, each with its count within its enclosing
    /// node (a repeat-and-select node runs its event a random number of times; a shuffled
    /// node's randomiser is listed with count `n`).
    pub fn releases(&self) -> Vec<LedgerEntry> {
        fn walk(e: &Event, out: &mut Vec<LedgerEntry>) {
            match e {
                Event::Release(r) => out.push(r.clone()),
                Event::Composed(events) => events.iter().for_each(|e| walk(e, out)),
                Event::SelfComposed { event, .. } | Event::RepeatAndSelect { event, .. } => {
                    walk(event, out)
                }
                Event::Shuffled {
                    local, n, label, ..
                } => out.push(LedgerEntry {
                    mechanism: local.clone(),
                    count: *n,
                    label: label.clone(),
                }),
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }
}

impl From<Ledger> for PrivacyEvent {
    /// The ledger's entries as one composition (the ledger checked its relation as entries
    /// were priced; a ledger is built only by recording mechanisms).
    fn from(ledger: Ledger) -> Self {
        Self {
            rel: ledger.neighbouring(),
            root: Event::Composed(
                ledger
                    .entries()
                    .iter()
                    .cloned()
                    .map(Event::Release)
                    .collect(),
            ),
        }
    }
}

/// ε(δ) of the whole tree `event` by `kind` (default PLD settings): see [`price_with`].
///
/// # Privacy
/// As [`price_with`].
///
/// # Errors
/// As [`price_with`].
pub fn price(event: &PrivacyEvent, kind: AccountantKind, delta: f64) -> Result<Price> {
    price_with(event, kind, PldConfig::default(), delta)
}

/// ε(δ) of the whole tree `event`, the one function every reported ε comes from.
///
/// Each node is priced by the smallest of the answers that apply to it: a plain composition
/// by `kind` (with `pld`'s settings when it is the PLD accountant); a composition that holds
/// other nodes by the sum of their Rényi curves where each has one, and by basic composition
/// (pure-DP parts at δ = 0, the others at equal shares of δ, each priced recursively);
/// repeat-and-select by Papernot & Steinke's bound on its event's Rényi curve; shuffled
/// randomisers by the shuffling bound at δ/2 with the randomisers' δ0 term (rejected when
/// the total exceeds δ).
///
/// # Privacy
/// Each answer is an upper bound on the node's ε(δ) under the tree's relation (the
/// accountants', Mironov 2017 Prop. 1 for summed Rényi curves, Papernot & Steinke 2022
/// Thm 2 and 6, Feldman, McMillan & Talwar 2021 Thm 3.2/3.8, Dwork & Roth 2014 Thm 3.16),
/// so their minimum is one; sums are rounded up.
///
/// # Errors
/// δ below [`DELTA_MIN`](crate::DELTA_MIN) or not below 1; no analysis can answer (the
/// first error met).
pub fn price_with(
    event: &PrivacyEvent,
    kind: AccountantKind,
    pld: PldConfig,
    delta: f64,
) -> Result<Price> {
    valid_delta(delta)?;
    let ctx = Context {
        kind,
        pld,
        rel: event.rel,
    };
    let (epsilon, method, notes) = event.root.epsilon(&ctx, delta)?;
    Ok(Price {
        epsilon,
        delta,
        accountant: kind,
        method,
        notes,
    })
}

impl fmt::Display for PrivacyEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn node(e: &Event, depth: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let pad = "  ".repeat(depth);
            match e {
                Event::Release(r) => {
                    writeln!(
                        f,
                        "{pad}released {} x {} ({})",
                        r.count, r.mechanism, r.label
                    )
                }
                Event::Composed(events) => events.iter().try_for_each(|e| node(e, depth, f)),
                Event::SelfComposed { event, count } => {
                    writeln!(f, "{pad}{count} times:")?;
                    node(event, depth + 1, f)
                }
                Event::RepeatAndSelect { event, repetitions } => {
                    writeln!(f, "{pad}repeat and select, {repetitions}:")?;
                    node(event, depth + 1, f)
                }
                Event::Shuffled {
                    local,
                    n,
                    delta0,
                    label,
                } => writeln!(
                    f,
                    "{pad}shuffled {n} x {local} at delta0 = {delta0:e} ({label})"
                ),
            }
        }
        node(&self.root, 1, f)
    }
}

impl fmt::Display for Repetitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repetitions::Poisson { mean } => write!(f, "K ~ Poisson({mean})"),
            Repetitions::TruncatedNegativeBinomial { eta, gamma } => write!(
                f,
                "K ~ truncated negative binomial(eta = {eta}, gamma = {gamma})"
            ),
        }
    }
}
