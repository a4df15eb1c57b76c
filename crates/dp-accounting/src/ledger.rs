//! The ledger of mechanisms a training run released.

use crate::accountant::{Accountant, AccountantKind};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;

/// One line of a ledger: a mechanism, how many times it ran, and what it was for.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// How many independent applications.
    pub count: u64,
    /// What it released (e.g. "noisy gradient", "noisy count").
    pub label: String,
}

/// Everything a computation released, under one neighbouring relation. Optimisers fill it;
/// learners price it with an accountant.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    rel: Neighbouring,
    entries: Vec<LedgerEntry>,
}

impl Ledger {
    /// An empty ledger for `rel`.
    pub fn new(rel: Neighbouring) -> Self {
        Self {
            rel,
            entries: Vec::new(),
        }
    }

    /// Records `count` applications of `mechanism` (merging with the previous entry when it is
    /// the same mechanism and label and the total count fits in a `u64`; otherwise a new
    /// entry, so no count is ever lost).
    pub fn record(&mut self, mechanism: Mechanism, count: u64, label: &str) {
        if let Some(last) = self.entries.last_mut()
            && last.mechanism == mechanism
            && last.label == label
            && let Some(total) = last.count.checked_add(count)
        {
            last.count = total;
            return;
        }
        self.entries.push(LedgerEntry {
            mechanism,
            count,
            label: label.to_string(),
        });
    }

    /// The entries in release order.
    pub fn entries(&self) -> &[LedgerEntry] {
        &self.entries
    }

    /// The relation.
    pub fn neighbouring(&self) -> Neighbouring {
        self.rel
    }

    /// An accountant of `kind` holding the whole ledger.
    ///
    /// # Errors
    /// The accountant cannot analyse an entry.
    pub fn accountant(&self, kind: AccountantKind) -> Result<Box<dyn Accountant>> {
        let mut acc = kind.build(self.rel);
        for e in &self.entries {
            acc.compose(&e.mechanism, e.count)?;
        }
        Ok(acc)
    }

    /// ε(δ) of everything released, by `kind`.
    ///
    /// # Privacy
    /// The accountant's upper bound on the composition of every entry.
    ///
    /// # Errors
    /// As [`Ledger::accountant`] and [`Accountant::epsilon`].
    pub fn epsilon(&self, kind: AccountantKind, delta: f64) -> Result<f64> {
        self.accountant(kind)?.epsilon(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_prices() {
        let mut l = Ledger::new(Neighbouring::AddRemove);
        let g = Mechanism::gaussian(2.0, 1.0).unwrap();
        l.record(g.clone(), 3, "grad");
        l.record(g.clone(), 1, "grad");
        l.record(g, 4, "count");
        assert_eq!(l.entries().len(), 2);
        assert_eq!(l.entries()[0].count, 4);
        // 8 Gaussians with σ = 2 = one with σ = 2/√8.
        let e = l.epsilon(AccountantKind::Exact, 1e-5).unwrap();
        let one = crate::gaussian_epsilon(2.0 / 8f64.sqrt(), 1.0, 1e-5).unwrap();
        assert!((e - one).abs() < 1e-9);
    }

    #[test]
    fn counts_that_overflow_are_kept_not_wrapped() {
        // `+=` overflowed here: a panic in debug builds and a wrapped (tiny) count, hence an
        // under-reported ε, in release builds.
        let mut l = Ledger::new(Neighbouring::AddRemove);
        let g = Mechanism::gaussian(2.0, 1.0).unwrap();
        l.record(g.clone(), u64::MAX, "grad");
        l.record(g.clone(), 2, "grad");
        let counts: Vec<u64> = l.entries().iter().map(|e| e.count).collect();
        assert_eq!(counts, [u64::MAX, 2]);
        // The PLD accountant refuses the total (it overflows u64) rather than wrapping it.
        assert!(l.epsilon(AccountantKind::Pld, 1e-5).is_err());
    }
}
