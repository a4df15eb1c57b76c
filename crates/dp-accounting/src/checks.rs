//! Facts every valid upper bound obeys, checked on each answer before it is returned.
//!
//! An accountant can be wrong in ways no unit test anticipates (an overflow, a cancelled
//! digit, a NaN turned into 0). Whatever its method, its ε(δ) for a composition can never be
//! below the exact ε(δ) of any single mechanism in it, nor below the exact ε of the Gaussian
//! part alone (composing more mechanisms never lowers the privacy loss: the extra outputs
//! could be ignored, a post-processing). The same holds for δ(ε). So a reported ε must give
//! every part's exact profile `δ_part(ε) ≤ δ`, and a reported δ(ε) must be at least every
//! `δ_part(ε)`: cheap closed forms (the dominating pairs' profiles). Every answer is compared
//! against them and against being finite and in range; a failed check is an
//! [`Error::SelfCheck`], never a number.

use crate::error::{Error, Result};
use crate::gaussian::delta_for_ratio_lower;
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;
use crate::profile::{Profile, components};
use crate::special::worse;

/// Relative slack of the comparisons: the lower bounds are themselves evaluated in floating
/// point (to ~1e-13), so a disagreement smaller than this is rounding, not a defect.
const SLACK: f64 = 1e-9;

/// The single-step dominating pairs and the Gaussian total seen so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Facts {
    /// Distinct single-step profile pairs `(remove, add)`.
    singles: Vec<(Profile, Profile)>,
    /// `Σ count·s²` over the Gaussian components (the exact composition's ratio squared).
    gaussian_s2: f64,
}

impl Facts {
    /// Records `count` runs of `mechanism` (nothing is recorded where no closed-form profile
    /// exists, e.g. sampling without replacement: those answers are only checked for range).
    pub(crate) fn record(&mut self, mechanism: &Mechanism, count: u64, rel: Neighbouring) {
        if count == 0 {
            return;
        }
        let Ok(pairs) = components(mechanism, rel) else {
            return;
        };
        for pair in pairs {
            if let (Profile::Gaussian { s }, Profile::Gaussian { s: s2 }) = pair
                && s == s2
            {
                self.gaussian_s2 += count as f64 * s * s;
            }
            if !self.singles.contains(&pair) {
                self.singles.push(pair);
            }
        }
    }

    /// Checks an ε answered at `delta` and returns it, or a [`Error::SelfCheck`]: the claim
    /// "(ε, δ)-DP" implies that every part alone has `δ_part(ε) ≤ δ`, which needs no inversion.
    pub(crate) fn check_epsilon(
        &self,
        accountant: &'static str,
        delta: f64,
        eps: f64,
    ) -> Result<f64> {
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(fail(accountant, "epsilon is finite and >= 0", eps, 0.0));
        }
        let part = self.strongest_part_delta(eps);
        if part.is_nan() || part > delta * (1.0 + SLACK) {
            return Err(fail(
                accountant,
                "delta of each part at the reported epsilon <= delta",
                part,
                delta,
            ));
        }
        Ok(eps)
    }

    /// The largest exact δ(ε) of a single part (one step, or the Gaussian part as a whole),
    /// evaluated as a lower bound (`Profile::delta_lower`): the upper-bound evaluation the
    /// accountants use is not monotone in ε by a rounding allowance where its terms cancel,
    /// which made correct answers fail the check (a calibration at ε = 1e-12 hit it).
    fn strongest_part_delta(&self, eps: f64) -> f64 {
        let mut lower: f64 = 0.0;
        for (r, a) in &self.singles {
            lower = worse(worse(lower, r.delta_lower(eps)), a.delta_lower(eps));
        }
        if self.gaussian_s2 > 0.0 {
            lower = worse(lower, delta_for_ratio_lower(self.gaussian_s2.sqrt(), eps));
        }
        lower
    }

    /// Checks a δ answered at `epsilon` and returns it, or a [`Error::SelfCheck`].
    pub(crate) fn check_delta(
        &self,
        accountant: &'static str,
        epsilon: f64,
        delta: f64,
    ) -> Result<f64> {
        if !(delta.is_finite() && (0.0..=1.0).contains(&delta)) {
            return Err(fail(accountant, "delta is in [0, 1]", delta, 0.0));
        }
        let lower = self.strongest_part_delta(epsilon);
        if lower.is_nan() || delta < lower * (1.0 - SLACK) {
            return Err(fail(
                accountant,
                "delta >= the exact delta of a part",
                delta,
                lower,
            ));
        }
        Ok(delta)
    }
}

fn fail(accountant: &'static str, check: &'static str, reported: f64, bound: f64) -> Error {
    Error::SelfCheck {
        accountant,
        check,
        reported,
        bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::gaussian::{delta_for_ratio, epsilon_for_ratio};

    #[test]
    fn an_answer_below_one_step_is_refused() {
        let mut f = Facts::default();
        let m = Mechanism::gaussian(1.0, 1.0).unwrap();
        f.record(&m, 4, Neighbouring::AddRemove);
        // Exact ε of 4 Gaussian steps (ratio 2) at δ = 1e-5 is about 9.6.
        let exact = epsilon_for_ratio(2.0, 1e-5).unwrap();
        assert!(f.check_epsilon("test", 1e-5, exact).is_ok());
        assert!(f.check_epsilon("test", 1e-5, exact * 1.1).is_ok());
        let low = f.check_epsilon("test", 1e-5, exact * 0.99);
        assert!(matches!(low, Err(Error::SelfCheck { .. })), "{low:?}");
        assert!(f.check_epsilon("test", 1e-5, f64::NAN).is_err());
        assert!(f.check_epsilon("test", 1e-5, -1.0).is_err());
        let d = delta_for_ratio(2.0, 1.0);
        assert!(f.check_delta("test", 1.0, d).is_ok());
        assert!(f.check_delta("test", 1.0, 0.5 * d).is_err());
        assert!(f.check_delta("test", 1.0, f64::NAN).is_err());
        assert!(f.check_delta("test", 1.0, 1.5).is_err());
    }

    #[test]
    fn a_composition_is_checked_against_its_strongest_step() {
        let mut f = Facts::default();
        f.record(
            &Mechanism::subsampled_gaussian(0.5, 0.1).unwrap(),
            1,
            Neighbouring::AddRemove,
        );
        f.record(
            &Mechanism::laplace(1.0, 1.0).unwrap(),
            1,
            Neighbouring::AddRemove,
        );
        // One Laplace release with ratio 1 has ε = 1 at any δ below its δ(1) = 0.
        assert!(f.check_epsilon("test", 1e-6, 0.999).is_err());
        // The subsampled Gaussian with σ = 0.5 is far above 1 at δ = 1e-6.
        assert!(f.check_epsilon("test", 1e-6, 1.0).is_err());
    }
}
