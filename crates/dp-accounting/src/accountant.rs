//! The accountant trait every method implements, and the choice among them.

use std::fmt;
use std::str::FromStr;

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
    /// Invalid δ, or a δ the accountant cannot resolve.
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
        match self {
            AccountantKind::Pld => Box::new(PldAccountant::new(PldConfig::default(), rel)),
            AccountantKind::Rdp => Box::new(RdpAccountant::new(rel)),
            AccountantKind::Zcdp => Box::new(ZcdpAccountant::new(rel)),
            AccountantKind::Exact => Box::new(ExactAccountant::new(rel)),
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
