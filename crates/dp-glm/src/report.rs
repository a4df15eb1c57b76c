//! The privacy report every fitted model carries.

use std::fmt;

use dp_accounting::{AccountantKind, Ledger, Neighbouring};

/// What a fitted model released and what that cost.
///
/// # Privacy
/// `epsilon`/`delta` are the accountant's upper bound on the privacy loss of everything in
/// `ledger` under `neighbouring` (always `≤` the target); see the learner's documentation for
/// the mechanisms and their sources.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyReport {
    /// The budget asked for, `(ε, δ)`.
    pub target: (f64, f64),
    /// ε spent (the accountant's value at `delta`).
    pub epsilon: f64,
    /// δ spent.
    pub delta: f64,
    /// The accountant that priced the ledger.
    pub accountant: AccountantKind,
    /// The neighbouring relation of the guarantee.
    pub neighbouring: Neighbouring,
    /// The noise parameters chosen by calibration (name, value), e.g. noise multiplier, clip.
    pub noise: Vec<(String, f64)>,
    /// Every mechanism released, in order.
    pub ledger: Ledger,
    /// Anything a reader of the guarantee should know (e.g. unaccounted steps).
    pub notes: Vec<String>,
}

impl fmt::Display for PrivacyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "(ε, δ) = ({:.6}, {:e}) spent of target ({}, {:e}); {} accountant, {} relation",
            self.epsilon,
            self.delta,
            self.target.0,
            self.target.1,
            self.accountant,
            self.neighbouring
        )?;
        for (k, v) in &self.noise {
            writeln!(f, "  {k} = {v}")?;
        }
        for e in self.ledger.entries() {
            writeln!(f, "  released {} x {} ({})", e.count, e.mechanism, e.label)?;
        }
        for n in &self.notes {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}
