//! The privacy report every fitted model carries.

use std::fmt;

use dp_accounting::{AccountantKind, Method, Neighbouring, PrivacyEvent, price};

use crate::error::{Error, Result};

/// What a fitted model released and what that cost.
///
/// # Privacy
/// `epsilon`/`delta` are [`dp_accounting::price`]'s upper bound on the privacy loss of the
/// whole event tree `event` under `neighbouring` (always `≤` the target), computed only by
/// [`PrivacyReport::priced`]; see the learner's documentation for the mechanisms and their
/// sources.
///
/// Nothing in the report is a statistic of the training data: every value in `noise`,
/// `event` and `notes` is fixed before the data is read (a function of the hyper-parameters,
/// the budget, the dimension and the number of rows `n`, which the learners treat as public),
/// or is itself the output of a mechanism in the ledger (the candidate a private selection
/// chose). Diagnostics computed from the data without noise (a training loss, an achieved
/// gradient norm, counts of clipped rows) do not belong here: the report travels with the
/// released model.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyReport {
    /// The budget asked for, `(ε, δ)`.
    pub target: (f64, f64),
    /// ε spent (the price of `event` at `delta`).
    pub epsilon: f64,
    /// δ spent.
    pub delta: f64,
    /// The accountant that priced `event`.
    pub accountant: AccountantKind,
    /// The neighbouring relation of the guarantee.
    pub neighbouring: Neighbouring,
    /// The noise parameters chosen by calibration (name, value), e.g. noise multiplier, clip;
    /// fixed before the data is read (see above).
    pub noise: Vec<(String, f64)>,
    /// Everything released, as an event tree in release order.
    pub event: PrivacyEvent,
    /// Anything a reader of the guarantee should know (e.g. unaccounted steps).
    pub notes: Vec<String>,
}

impl fmt::Display for PrivacyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "(ε, δ) = ({}, {:e}) spent of target ({}, {:e}); {} accountant, {} relation",
            text_up(self.epsilon, 6),
            self.delta,
            self.target.0,
            self.target.1,
            self.accountant,
            self.neighbouring
        )?;
        for (k, v) in &self.noise {
            writeln!(f, "  {k} = {v}")?;
        }
        write!(f, "{}", self.event)?;
        for n in &self.notes {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}

impl PrivacyReport {
    /// The report of `event` priced by `accountant` at `target`'s δ: the one path every
    /// reported (ε, δ) takes. The accountant's notes on its answer, and how a tree that is
    /// not a plain composition was priced, are added to `notes`.
    ///
    /// # Privacy
    /// `epsilon` is [`dp_accounting::price`]'s upper bound on the whole tree (PRIVACY.md,
    /// "One pricing function"), checked `≤` the target's ε (relative slack 1e-9, the
    /// calibrations' tolerance) before a report exists.
    ///
    /// # Errors
    /// [`Error::Accounting`] when no analysis can price the tree; [`Error::Privacy`] when its
    /// price exceeds the target.
    pub fn priced(
        target: (f64, f64),
        accountant: AccountantKind,
        event: PrivacyEvent,
        noise: Vec<(String, f64)>,
        notes: Vec<String>,
    ) -> Result<Self> {
        let spent = price(&event, accountant, target.1)?;
        let mut notes = notes;
        // How the accountant computed it (the PLD grid, the RDP order and dropped orders):
        // public facts about the mechanisms, not about the data.
        let how: Vec<String> = spent.notes.iter().map(ToString::to_string).collect();
        if !how.is_empty() {
            notes.push(format!("{accountant} accountant: {}", how.join(", ")));
        }
        if spent.method != Method::Accountant {
            notes.push(format!(
                "the event tree's root priced by {} (dp_accounting::price)",
                spent.method
            ));
        }
        if spent.epsilon.is_nan() || spent.epsilon > target.0 * (1.0 + 1e-9) {
            return Err(Error::Privacy(format!(
                "the released mechanisms cost epsilon = {} > target {}",
                spent.epsilon, target.0
            )));
        }
        Ok(Self {
            target,
            epsilon: spent.epsilon,
            delta: target.1,
            accountant,
            neighbouring: event.neighbouring(),
            noise,
            event,
            notes,
        })
    }
}

/// `x` rounded up to `digits` decimals, as text: a privacy number (an upper bound) is never
/// printed smaller than it is. Values too large to scale are printed in full.
pub fn text_up(x: f64, digits: i32) -> String {
    rounded_text(x, digits, true)
}

/// `x` rounded down to `digits` decimals, as text: a lower bound is never printed larger
/// than it is.
pub fn text_down(x: f64, digits: i32) -> String {
    rounded_text(x, digits, false)
}

fn rounded_text(x: f64, digits: i32, up: bool) -> String {
    let scale = 10f64.powi(digits);
    let scaled = x * scale;
    if !scaled.is_finite() || scaled.abs() > 2f64.powi(52) {
        // `{}` prints the shortest text that reads back as exactly `x`.
        return format!("{x}");
    }
    let rounded = if up { scaled.ceil() } else { scaled.floor() } / scale;
    // Division can land one ulp on the wrong side of the decimal; the next float over prints
    // as intended.
    let rounded = match (up, rounded < x, rounded > x) {
        (true, true, _) => rounded.next_up(),
        (false, _, true) => rounded.next_down(),
        _ => rounded,
    };
    format!("{rounded:.*}", digits as usize)
}

/// Where a fit's noise came from. Only a cryptographically secure, unpredictably seeded
/// generator makes a private release: with a known (or guessable) seed anyone can regenerate
/// the noise and subtract it, so the released values are then not differentially private at
/// all, whatever `epsilon` the [`PrivacyReport`] states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseSource {
    /// The operating system-seeded CSPRNG (`dp_optim::secure_rng`): a private release.
    Secure,
    /// The reproducible Xoshiro256++ stream of `dp_optim::seeded_rng(seed)`: for experiments
    /// and tests only, not a private release.
    Seeded {
        /// The seed that determines every noise draw.
        seed: u64,
    },
}

impl NoiseSource {
    /// Whether the noise makes the output a private release (only [`NoiseSource::Secure`]).
    pub fn is_private_release(&self) -> bool {
        matches!(self, Self::Secure)
    }

    /// A short machine-readable name: `"secure"` or `"seeded"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Secure => "secure",
            Self::Seeded { .. } => "seeded",
        }
    }

    /// The seed of a seeded stream.
    pub fn seed(&self) -> Option<u64> {
        match self {
            Self::Secure => None,
            Self::Seeded { seed } => Some(*seed),
        }
    }
}

impl fmt::Display for NoiseSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Secure => f.write_str(
                "OS-seeded cryptographically secure generator (rand StdRng): a private release",
            ),
            Self::Seeded { seed } => write!(
                f,
                "reproducible seeded stream (Xoshiro256++, seed {seed}), not a cryptographically \
                 secure source: not a private release"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privacy_numbers_print_on_their_safe_side() {
        assert_eq!(text_up(2.182_258_1, 6), "2.182259");
        assert_eq!(text_down(2.182_258_9, 6), "2.182258");
        assert_eq!(text_up(0.1, 6), "0.100000");
        assert_eq!(text_down(0.1, 6), "0.100000");
        // Too large to scale: printed in full, neither up nor down.
        assert_eq!(text_up(1e300, 6), format!("{}", 1e300));
        assert_eq!(text_down(f64::INFINITY, 6), "inf");
    }

    #[test]
    fn only_the_secure_source_is_a_private_release() {
        assert!(NoiseSource::Secure.is_private_release());
        let seeded = NoiseSource::Seeded { seed: 7 };
        assert!(!seeded.is_private_release());
        assert_eq!(seeded.kind(), "seeded");
        assert_eq!(seeded.seed(), Some(7));
        assert_eq!(NoiseSource::Secure.seed(), None);
        let text = seeded.to_string();
        assert!(text.contains("Xoshiro256++"), "{text}");
        assert!(text.contains("seed 7"), "{text}");
        assert!(text.ends_with("not a private release"), "{text}");
        assert!(!NoiseSource::Secure.to_string().contains("not a private"));
    }
}
