//! The accountant trait every method implements, and the choice among them.

use std::fmt;
use std::str::FromStr;

use crate::discrete_gaussian::GridAdjusted;
use crate::error::Result;
use crate::exact::ExactAccountant;
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;
use crate::pld::{PldAccountant, PldConfig};
use crate::rdp::RdpAccountant;
use crate::zcdp::ZcdpAccountant;

/// Composes mechanisms and answers ε(δ) and δ(ε) for the composition.
///
/// Every answer is an upper bound on the true privacy loss of the composition under the
/// accountant's [`Neighbouring`] relation. When an accountant cannot vouch for an answer it
/// returns an error.
pub trait Accountant {
    /// The accountant's name (`pld`, `rdp`, `zcdp`, `exact`).
    fn name(&self) -> &'static str;

    /// The neighbouring relation of every guarantee this accountant reports.
    fn neighbouring(&self) -> Neighbouring;

    /// Adds `count` independent applications of `mechanism` to the composition.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) when the accountant cannot analyse
    /// the mechanism under its relation.
    fn compose(&mut self, mechanism: &Mechanism, count: u64) -> Result<()>;

    /// The smallest ε such that the composition is (ε, δ)-DP, rounded up.
    ///
    /// # Privacy
    /// An upper bound on the composition's ε at `delta`; see each accountant for its source.
    ///
    /// # Errors
    /// Invalid δ: outside `[2.2250738585072014e-308, 1)` (`DELTA_MIN`, the smallest normal
    /// double: a subnormal δ cannot be computed safely) — or a δ the accountant cannot resolve.
    fn epsilon(&self, delta: f64) -> Result<f64>;

    /// δ(ε) of the composition, rounded up.
    ///
    /// # Privacy
    /// An upper bound on the composition's δ at `epsilon`; see each accountant for its source.
    ///
    /// # Errors
    /// Invalid ε.
    fn delta(&self, epsilon: f64) -> Result<f64>;

    /// An optimistic (lower) estimate of ε(δ) where the accountant has one (the PLD
    /// accountant's discretisation gap), else `None`. Not a privacy guarantee.
    ///
    /// # Errors
    /// As [`Accountant::epsilon`].
    fn epsilon_optimistic(&self, delta: f64) -> Result<Option<f64>> {
        let _ = delta;
        Ok(None)
    }

    /// Notes on how the last answer was computed (the PLD grid and its error estimate, the
    /// RDP order), as name/value pairs for reports. Empty by default.
    fn notes(&self) -> Vec<Note> {
        Vec::new()
    }
}

/// One note on how an accountant computed an answer (see [`Accountant::notes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// What the value is (`discretisation`, `epsilon_error_estimate`, `order`, …).
    pub name: &'static str,
    /// The value.
    pub value: NoteValue,
}

/// The value of a [`Note`].
#[derive(Debug, Clone, PartialEq)]
pub enum NoteValue {
    /// A number.
    Number(f64),
    /// A list of numbers (e.g. dropped RDP orders).
    Numbers(Vec<f64>),
    /// A yes/no fact.
    Flag(bool),
}

impl fmt::Display for NoteValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoteValue::Number(x) => write!(f, "{x}"),
            NoteValue::Numbers(xs) => write!(f, "{xs:?}"),
            NoteValue::Flag(b) => write!(f, "{b}"),
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.name, self.value)
    }
}

/// A question for an accountant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Query {
    /// ε at this δ.
    Epsilon {
        /// The δ.
        delta: f64,
    },
    /// δ at this ε.
    Delta {
        /// The ε.
        epsilon: f64,
    },
}

/// An answer of [`answer_with_fallback`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The ε or δ asked for (an upper bound).
    pub value: f64,
    /// The accountant that answered.
    pub accountant: AccountantKind,
    /// The accountants tried before it, with the reason each could not answer.
    pub skipped: Vec<(AccountantKind, crate::Error)>,
    /// The answering accountant's [`Accountant::notes`].
    pub notes: Vec<Note>,
}

/// The accountants tried, in order, when the user names none: the PLD accountant, then the
/// exact closed forms, then Rényi DP (the only one that handles sampling without replacement).
pub const DEFAULT_CHAIN: [AccountantKind; 3] = [
    AccountantKind::Pld,
    AccountantKind::Exact,
    AccountantKind::Rdp,
];

/// Composes `parts` in the first accountant of `chain` that can analyse them and answers
/// `query`; an accountant that cannot (unsupported mechanism, δ below its resolution, grid
/// limits, a failed self-check) is skipped and the next one tried. The answer names the
/// accountant that gave it and why the earlier ones were skipped.
///
/// # Privacy
/// The value is the answering accountant's upper bound (see each accountant); skipping never
/// replaces a bound by a guess, and an error is returned when none can answer.
///
/// # Errors
/// Invalid parameters (from the first accountant: bad input is not a reason to fall back),
/// or the last accountant's error when none can answer.
pub fn answer_with_fallback(
    chain: &[AccountantKind],
    rel: Neighbouring,
    pld: PldConfig,
    parts: &[(Mechanism, u64)],
    query: Query,
) -> Result<Answer> {
    let mut skipped = Vec::new();
    for &kind in chain {
        let mut acc = kind.build_with(rel, pld);
        let got = parts
            .iter()
            .try_for_each(|(m, c)| acc.compose(m, *c))
            .and_then(|()| match query {
                Query::Epsilon { delta } => acc.epsilon(delta),
                Query::Delta { epsilon } => acc.delta(epsilon),
            });
        match got {
            Ok(value) => {
                return Ok(Answer {
                    value,
                    accountant: kind,
                    skipped,
                    notes: acc.notes(),
                });
            }
            Err(e @ crate::Error::InvalidParameter { .. }) => return Err(e),
            Err(e) => skipped.push((kind, e)),
        }
    }
    Err(skipped
        .pop()
        .map(|(_, e)| e)
        .unwrap_or_else(|| crate::Error::Unsupported {
            accountant: "none",
            what: "an empty list of accountants".into(),
        }))
}

/// Which accountant to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountantKind {
    /// FFT privacy-loss distributions with connect-the-dots discretisation (tightest general).
    Pld,
    /// Rényi DP over an order grid.
    Rdp,
    /// Zero-concentrated DP.
    Zcdp,
    /// Closed forms where they are tight (Gaussian compositions, one objective perturbation).
    Exact,
}

impl AccountantKind {
    /// A fresh, empty accountant of this kind with default settings.
    pub fn build(self, rel: Neighbouring) -> Box<dyn Accountant> {
        self.build_with(rel, PldConfig::default())
    }

    /// As [`AccountantKind::build`], with the PLD accountant's settings (ignored by the other
    /// kinds).
    pub fn build_with(self, rel: Neighbouring, pld: PldConfig) -> Box<dyn Accountant> {
        match self {
            // The continuous-Gaussian accountants price grid releases with the adjustment.
            AccountantKind::Pld => {
                Box::new(GridAdjusted::new(Box::new(PldAccountant::new(pld, rel))))
            }
            AccountantKind::Rdp => Box::new(GridAdjusted::renyi(Box::new(RdpAccountant::new(rel)))),
            AccountantKind::Zcdp => Box::new(ZcdpAccountant::new(rel)),
            AccountantKind::Exact => {
                Box::new(GridAdjusted::new(Box::new(ExactAccountant::new(rel))))
            }
        }
    }

    /// The accountant's name as used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            AccountantKind::Pld => "pld",
            AccountantKind::Rdp => "rdp",
            AccountantKind::Zcdp => "zcdp",
            AccountantKind::Exact => "exact",
        }
    }
}

impl fmt::Display for AccountantKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AccountantKind {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "pld" => Ok(AccountantKind::Pld),
            "rdp" => Ok(AccountantKind::Rdp),
            "zcdp" => Ok(AccountantKind::Zcdp),
            "exact" => Ok(AccountantKind::Exact),
            other => Err(format!(
                "unknown accountant `{other}` (expected pld, rdp, zcdp or exact)"
            )),
        }
    }
}
