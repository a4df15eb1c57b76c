//! A plain-language privacy statement for a fitted model, in the spirit of TF Privacy's
//! `compute_dp_sgd_privacy_statement`: what is protected (one record, under which
//! neighbouring relation), the (ε, δ) achieved and by which accountant, what was assumed
//! public, whether the run is a private release, and the caveats.
//!
//! The statement is built from a [`PrivacyReport`] and the run's [`NoiseSource`]; a front end
//! (the CLI, bindings) adds what only it knows — the columns, class pair and preprocessing it
//! treated as public ([`PrivacyStatement::assume_public`]), the bounds
//! ([`PrivacyStatement::bounds`]) and its own caveats ([`PrivacyStatement::caveat`]) — and
//! prints it with `Display` ([`PrivacyStatement::text`]).

use std::fmt;

use dp_accounting::{Event, Neighbouring};

use crate::bounds::{Bound, BoundSource};
use crate::report::{NoiseSource, PrivacyReport, text_up};
use crate::row_count::PRIVATE_COUNT;

/// What the learners' report notes about the number of rows `n` contain (`learners::public_n_note`,
/// DP-SGD's size note): under add/remove `n` is private, and such a note says how it was
/// treated as public, or given as a public value.
const ROWS_N: &str = "number of rows n";

/// The prefix of a report note saying that something released is not in ε (tuning without
/// accounting, `selection::TuningWithoutPrivacyAccounting`).
const NOT_ACCOUNTED: &str = "NOT ACCOUNTED";

/// A plain-language statement of a fitted model's privacy guarantee (module docs).
///
/// # Privacy
/// The statement restates the [`PrivacyReport`]: `epsilon`/`delta` are the accountant's upper
/// bound on the privacy loss of everything in the report's ledger under its neighbouring
/// relation. It adds no number of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyStatement {
    epsilon: f64,
    delta: f64,
    target: (f64, f64),
    accountant: String,
    neighbouring: Neighbouring,
    /// What the tree released, in words ("37 noisy release(s)", or with a tuning's trials).
    releases: String,
    source: NoiseSource,
    public: Vec<String>,
    estimated: Vec<String>,
    caveats: Vec<String>,
}

impl PrivacyStatement {
    /// The statement of `report` for a run whose noise came from `source`. The report's notes
    /// that the number of rows was treated or given as public (not privately counted) become
    /// an assumption, and notes that a
    /// release is not accounted become caveats.
    pub fn new(report: &PrivacyReport, source: NoiseSource) -> Self {
        let mut s = Self {
            epsilon: report.epsilon,
            delta: report.delta,
            target: report.target,
            accountant: report.accountant.to_string(),
            neighbouring: report.neighbouring,
            releases: release_words(report.event.root()),
            source,
            public: Vec::new(),
            estimated: Vec::new(),
            caveats: Vec::new(),
        };
        match report.neighbouring {
            Neighbouring::ReplaceOne => s.public.push(
                "the number of rows n (replace-one neighbours have the same n, so n is not \
                 hidden)"
                    .into(),
            ),
            Neighbouring::AddRemove => {
                // A privately counted n is an estimate (`PrivacyStatement::count`), not public.
                let public = |n: &&String| n.contains(ROWS_N) && !n.contains(PRIVATE_COUNT);
                for note in report.notes.iter().filter(public) {
                    s.public
                        .push(format!("under add/remove n is private: {note}"));
                }
            }
        }
        for note in report.notes.iter().filter(|n| n.starts_with(NOT_ACCOUNTED)) {
            s.caveats.push(note.clone());
        }
        s
    }

    /// Adds something the run treated as public (not protected), in words, e.g. the column
    /// names or the class pair.
    pub fn assume_public(&mut self, what: impl Into<String>) -> &mut Self {
        self.public.push(what.into());
        self
    }

    /// Adds something the run estimated privately (paid from ε, already in the report's
    /// ledger), in words, e.g. the ranges of a feature scaling.
    pub fn estimated(&mut self, what: impl Into<String>) -> &mut Self {
        self.estimated.push(what.into());
        self
    }

    /// Adds a caveat a reader of the guarantee should know.
    pub fn caveat(&mut self, what: impl Into<String>) -> &mut Self {
        self.caveats.push(what.into());
        self
    }

    /// Adds the run's bounds: public ones (given, or implied by the preprocessing) as
    /// assumptions, estimated ones as releases paid from ε (already in the report's ledger).
    pub fn bounds(&mut self, bounds: &[Bound]) -> &mut Self {
        for b in bounds {
            match b.source {
                BoundSource::Public => self.public.push(format!(
                    "the bound {} = {} (a public value, not estimated from the data; values \
                     beyond it are clipped)",
                    b.name, b.value
                )),
                BoundSource::Preprocessing => self.public.push(format!(
                    "the bound {} = {} (implied by the preprocessing)",
                    b.name, b.value
                )),
                BoundSource::Estimated {
                    statistic,
                    quantile,
                    epsilon,
                } => self.estimated.push(format!(
                    "the bound {} = {} is the {quantile} quantile of the {}, estimated \
                     privately for epsilon {} (included in the total above)",
                    b.name,
                    b.value,
                    statistic.describe(),
                    text_up(epsilon, 6)
                )),
            }
        }
        self
    }

    /// Adds the private row count `counted` (`n̂` and its ε) as an estimate, when the rows
    /// were counted ([`PrivateBounds::counted`](crate::bounds::PrivateBounds::counted)).
    pub fn count(&mut self, counted: Option<(usize, f64)>) -> &mut Self {
        if let Some((n, epsilon)) = counted {
            self.estimated.push(format!(
                "the number of rows n = {n} is a private count (discrete Laplace), estimated \
                 for epsilon {} (included in the total above): the learner sized its release \
                 for it, not for the data's count",
                text_up(epsilon, 6)
            ));
        }
        self
    }

    /// Whether the run is a private release (its noise source is secure).
    pub fn is_private_release(&self) -> bool {
        self.source.is_private_release()
    }

    /// The statement as text (the same as `Display`).
    pub fn text(&self) -> String {
        self.to_string()
    }
}

/// What one protected record is, and what the relation hides, in words.
fn protected(relation: Neighbouring) -> &'static str {
    match relation {
        Neighbouring::AddRemove => {
            "Protected: each single row of the training data (one feature vector with its \
             label), under add/remove neighbouring: what is released is nearly as likely \
             whether any one row is added to the data or removed from it, so it hides whether \
             a given row was in the training data at all."
        }
        Neighbouring::ReplaceOne => {
            "Protected: each single row of the training data (one feature vector with its \
             label), under replace-one neighbouring: what is released is nearly as likely \
             whether any one row is replaced by any other row, so it hides the content of \
             every row; the number of rows is not hidden."
        }
    }
}

/// The releases of `root` in words: their number, and for each repeat-and-select node (a
/// tuning) the releases of one trial and the law of the number of trials, which is random.
fn release_words(root: &Event) -> String {
    /// Adds the releases of `e` (each counted `times`) to `outside`, and each
    /// repeat-and-select node as (releases per trial, its law) to `tuned`.
    fn walk(e: &Event, times: u64, outside: &mut u64, tuned: &mut Vec<(u64, String)>) {
        match e {
            Event::Release(r) => *outside = outside.saturating_add(r.count.saturating_mul(times)),
            Event::Composed(events) => {
                for e in events {
                    walk(e, times, outside, tuned);
                }
            }
            Event::SelfComposed { event, count } => {
                walk(event, times.saturating_mul(*count), outside, tuned);
            }
            Event::RepeatAndSelect { event, repetitions } => {
                let mut per_trial = 0;
                let mut inner = Vec::new();
                walk(event, 1, &mut per_trial, &mut inner);
                tuned.push((per_trial, repetitions.to_string()));
                tuned.extend(inner);
            }
            Event::Shuffled { n, .. } => *outside = outside.saturating_add(n.saturating_mul(times)),
        }
    }
    let (mut outside, mut tuned) = (0, Vec::new());
    walk(root, 1, &mut outside, &mut tuned);
    let mut words = format!("{outside} noisy release(s)");
    for (per_trial, law) in tuned {
        words.push_str(&format!(
            " and tuning trials of {per_trial} noisy release(s) each, run a random number of \
             times ({law}; Papernot and Steinke 2022)"
        ));
    }
    words
}

impl fmt::Display for PrivacyStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Privacy statement:")?;
        writeln!(f, "  {}", protected(self.neighbouring))?;
        writeln!(
            f,
            "  Guarantee: (epsilon, delta) = ({}, {:e}) differential privacy (target ({}, \
             {:e})), an upper bound computed by the {} accountant over {}: \
             the probability of any set of outputs changes by at most a factor e^{} = {}, \
             plus {:e}, between any two neighbouring datasets.",
            text_up(self.epsilon, 6),
            self.delta,
            self.target.0,
            self.target.1,
            self.accountant,
            self.releases,
            text_up(self.epsilon, 6),
            text_up(self.epsilon.exp(), 4),
            self.delta
        )?;
        if self.is_private_release() {
            writeln!(
                f,
                "  Private release: yes (noise from the {}).",
                self.source
                    .to_string()
                    .trim_end_matches(": a private release")
            )?;
        } else {
            writeln!(
                f,
                "  Private release: NO. This run used a reproducible seeded noise stream \
                 (seed {}): anyone who knows or guesses the seed can regenerate the noise and \
                 remove it, so the guarantee above does not hold for this output. Use seeded \
                 runs for experiments only; train without a seed (`--seed`, `random_state`) to release.",
                self.source
                    .seed()
                    .map_or("?".to_string(), |s| s.to_string())
            )?;
        }
        if !self.public.is_empty() {
            writeln!(f, "  Assumed public (not protected):")?;
            for p in &self.public {
                writeln!(f, "    - {p}")?;
            }
        }
        if !self.estimated.is_empty() {
            writeln!(f, "  Estimated privately:")?;
            for e in &self.estimated {
                writeln!(f, "    - {e}")?;
            }
        }
        writeln!(f, "  Caveats:")?;
        for c in &self.caveats {
            writeln!(f, "    - {c}")?;
        }
        writeln!(
            f,
            "    - The guarantee is per row: a person with k rows is protected only at k times \
             epsilon, with a larger delta (group privacy)."
        )?;
        writeln!(
            f,
            "    - Choices made by looking at this data outside this run (features, \
             hyper-parameters, earlier runs) are not accounted; neither are the diagnostics \
             printed as not private."
        )
    }
}

impl PrivacyReport {
    /// The plain-language [`PrivacyStatement`] of this report for a run whose noise came from
    /// `source`.
    pub fn statement(&self, source: NoiseSource) -> PrivacyStatement {
        PrivacyStatement::new(self, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::Statistic;
    use crate::learners::testdata::rng;
    use crate::{Budget, Dataset, DpGd, DpSgd, Loss};
    use dp_accounting::AccountantKind;
    use ndarray::{Array1, Array2};

    #[test]
    fn release_words_count_self_compositions_and_name_a_tuning() {
        use dp_accounting::{Mechanism, Repetitions};
        let g = |c| Event::release(Mechanism::gaussian(2.0, 1.0).unwrap(), c, "g");
        let trial = Event::Composed(vec![
            Event::SelfComposed {
                event: Box::new(g(10)),
                count: 3,
            },
            g(1),
        ]);
        let root = Event::Composed(vec![
            Event::release(Mechanism::pure_dp(0.1).unwrap(), 4, "ranges"),
            Event::RepeatAndSelect {
                event: Box::new(trial),
                repetitions: Repetitions::Poisson { mean: 3.0 },
            },
        ]);
        assert_eq!(
            release_words(&root),
            "4 noisy release(s) and tuning trials of 31 noisy release(s) each, run a random \
             number of times (K ~ Poisson(3); Papernot and Steinke 2022)"
        );
        assert_eq!(release_words(&g(7)), "7 noisy release(s)");
    }

    /// Separable-ish data: 200 rows, 3 features, labels from the first feature's sign.
    fn data() -> Dataset {
        let x = Array2::from_shape_fn((200, 3), |(i, j)| {
            ((i * 7 + j * 13) % 23) as f64 / 23.0 - 0.5
        });
        let y = Array1::from_shape_fn(200, |i| if x[[i, 0]] >= 0.0 { 1.0 } else { -1.0 });
        Dataset::new(x, y).expect("valid data")
    }

    /// DP-GD's report under `relation`, priced by the PLD accountant.
    fn gd(relation: Neighbouring) -> PrivacyReport {
        let mut l = DpGd::new(Loss::Logistic);
        l.budget = Budget::new(1.0, 1e-5, AccountantKind::Pld, relation);
        l.steps = 20;
        l.fit(&data(), &mut rng(3)).expect("fits").privacy().clone()
    }

    #[test]
    fn add_remove_statement_names_the_relation_and_public_n() {
        let report = gd(Neighbouring::AddRemove);
        let text = report.statement(NoiseSource::Secure).text();
        assert!(text.contains("under add/remove neighbouring"), "{text}");
        assert!(
            text.contains("hides whether a given row was in the training data"),
            "{text}"
        );
        assert!(
            text.contains(&format!("= ({}, 1e-5)", text_up(report.epsilon, 6))),
            "{text}"
        );
        assert!(text.contains("1e-5"), "{text}");
        assert!(text.contains("pld accountant"), "{text}");
        // DP-GD divides its noisy sum by n: the statement says n was treated as public.
        assert!(
            text.contains("under add/remove n is private: the number of rows n is private"),
            "{text}"
        );
        assert!(text.contains("Private release: yes"), "{text}");
        assert!(!text.contains("Private release: NO"), "{text}");
        assert!(!text.contains("replace-one"), "{text}");
    }

    #[test]
    fn privacy_numbers_are_rounded_up() {
        assert_eq!(text_up(0.999_999_4, 6), "1.000000");
        assert_eq!(text_up(0.5, 6), "0.500000");
        assert_eq!(text_up(2.718_21, 4), "2.7183");
        assert_eq!(text_up(1.000_000_000_1, 6), "1.000001");
    }

    #[test]
    fn replace_one_statement_says_n_is_not_hidden() {
        let report = gd(Neighbouring::ReplaceOne);
        let text = report.statement(NoiseSource::Secure).text();
        assert!(text.contains("under replace-one neighbouring"), "{text}");
        assert!(text.contains("the number of rows is not hidden"), "{text}");
        assert!(
            text.contains("replace-one neighbours have the same n"),
            "{text}"
        );
        assert!(text.contains("pld accountant"), "{text}");
        assert!(!text.contains("add/remove"), "{text}");
    }

    #[test]
    fn a_seeded_run_is_not_a_private_release() {
        let report = gd(Neighbouring::AddRemove);
        let s = report.statement(NoiseSource::Seeded { seed: 42 });
        assert!(!s.is_private_release());
        let text = s.text();
        assert!(text.contains("Private release: NO"), "{text}");
        assert!(text.contains("seed 42"), "{text}");
        assert!(!text.contains("Private release: yes"), "{text}");
    }

    #[test]
    fn bounds_assumptions_and_caveats_are_listed() {
        let report = gd(Neighbouring::AddRemove);
        let mut s = report.statement(NoiseSource::Secure);
        s.assume_public("the class pair no,yes")
            .caveat("something to know")
            .bounds(&[
                Bound {
                    name: "x_bound",
                    value: 6.0,
                    source: BoundSource::Public,
                },
                Bound {
                    name: "clip",
                    value: 2.5,
                    source: BoundSource::Estimated {
                        statistic: Statistic::GradientNorm(Loss::Logistic),
                        quantile: 0.5,
                        epsilon: 0.1,
                    },
                },
            ]);
        let text = s.text();
        let public = text.find("Assumed public").expect("a public section");
        let estimated = text
            .find("Estimated privately")
            .expect("an estimated section");
        let caveats = text.find("Caveats").expect("a caveats section");
        let at = |what: &str| text.find(what).unwrap_or_else(|| panic!("{what}: {text}"));
        assert!((public..estimated).contains(&at("the class pair no,yes")));
        assert!((public..estimated).contains(&at("the bound x_bound = 6 (a public value")));
        assert!((estimated..caveats).contains(&at("the bound clip = 2.5 is the 0.5 quantile")));
        assert!(at("something to know") > caveats);
    }

    #[test]
    fn unaccounted_tuning_is_a_caveat() {
        let mut l = DpSgd::new(Loss::Logistic);
        l.epochs = 1;
        l.batch_size = 50;
        let tuned = crate::selection::TuningWithoutPrivacyAccounting::new(l, vec![0.1, 1.0])
            .fit(&data(), &mut rng(5))
            .expect("fits");
        let text = tuned.privacy().statement(NoiseSource::Secure).text();
        let caveats = text.find("Caveats").expect("a caveats section");
        let at = text.find("NOT ACCOUNTED").expect("the tuning caveat");
        assert!(at > caveats, "{text}");
    }
}
