//! Closed forms where they are tight: compositions of Gaussian mechanisms, and a single
//! release of a mechanism with a known exact profile (objective perturbation, Laplace, pure
//! DP, one Poisson-subsampled Gaussian step).

use crate::accountant::Accountant;
use crate::checks::Facts;
use crate::error::{Error, Result, non_negative, valid_delta};
use crate::gaussian::{
    EPS_MAX, REL_TOL, delta_for_ratio, epsilon_for_ratio, round_up_at, round_up_eps,
};
use crate::mechanism::{Kind, Mechanism, Sampling};
use crate::neighbouring::Neighbouring;
use crate::profile::{Profile, profiles};
use crate::search::epsilon_for_delta;
use crate::special::worse;

/// The exact accountant.
///
/// # Privacy
/// `T` Gaussian mechanisms with ratios `s_i = Δ_i/σ_i` compose exactly into one Gaussian
/// with `s = √(Σ s_i²)` (Dong, Roth & Su 2019, μ-GDP; MATH §2), whose profile is Balle & Wang
/// 2018's. A single objective-perturbation release uses the Thm 3.1 profile of Redberg, Koskela
/// & Wang (*Improving the privacy and practicality of objective perturbation*); one Laplace,
/// pure-DP or Poisson-subsampled Gaussian release its exact dominating pair (both directions
/// under add/remove, the worse reported). Anything else is refused ([`Error::Unsupported`]).
/// ε is inverted by bisection and then rounded up by a relative 5e-13, δ rounded up likewise;
/// both are checked against the single-step closed forms before they are returned.
#[derive(Debug, Clone)]
pub struct ExactAccountant {
    rel: Neighbouring,
    gaussian_s2: f64,
    single: Option<(Profile, Profile)>,
    facts: Facts,
}

impl ExactAccountant {
    /// An empty accountant.
    pub fn new(rel: Neighbouring) -> Self {
        Self {
            rel,
            gaussian_s2: 0.0,
            single: None,
            facts: Facts::default(),
        }
    }

    /// For a mechanism with no closed form here, the accountants that do analyse it. Checked
    /// before the profiles are built: their refusals are worded for the PLD accountant (issue
    /// 32: AMP under `--accountant exact` was refused as "the pld accountant does not support
    /// amp").
    fn not_covered(mechanism: &Mechanism) -> Option<&'static str> {
        match &mechanism.kind {
            Kind::Amp { .. } | Kind::GammaBall { .. } => Some("pld or rdp"),
            Kind::Zcdp { .. } => Some("zcdp or rdp"),
            Kind::SubsampledGaussian {
                q,
                sampling: Sampling::WithoutReplacement { .. },
                ..
            } if *q < 1.0 => Some("rdp"),
            _ => None,
        }
    }

    fn unsupported(what: String) -> Error {
        Error::Unsupported {
            accountant: "exact",
            what,
        }
    }
}

impl Accountant for ExactAccountant {
    fn name(&self) -> &'static str {
        "exact"
    }

    fn neighbouring(&self) -> Neighbouring {
        self.rel
    }

    fn compose(&mut self, mechanism: &Mechanism, count: u64) -> Result<()> {
        mechanism.check_relation(self.rel, "exact")?;
        mechanism.require_continuous("exact")?;
        if count == 0 {
            return Ok(());
        }
        if let Some(instead) = Self::not_covered(mechanism) {
            return Err(Self::unsupported(format!(
                "{mechanism}: it has no exact closed form here (exact covers compositions of \
                 Gaussian mechanisms and one objective perturbation, Laplace, pure-DP or \
                 Poisson-subsampled Gaussian release); use the {instead} accountant"
            )));
        }
        let pair = profiles(mechanism, self.rel)?;
        let single_kind = matches!(
            mechanism.kind,
            Kind::ObjPert(_)
                | Kind::Laplace { .. }
                | Kind::PureDp { .. }
                | Kind::SubsampledGaussian { .. }
        );
        match pair {
            (Profile::Gaussian { s }, _) if self.single.is_none() => {
                self.gaussian_s2 += count as f64 * s * s;
            }
            _ if single_kind && count == 1 && self.single.is_none() && self.gaussian_s2 == 0.0 => {
                self.single = Some(pair);
            }
            _ => {
                return Err(Self::unsupported(format!(
                    "{count} x {} composed with what it already holds (exact covers Gaussian \
                     compositions and one objective perturbation, Laplace, pure-DP or \
                     Poisson-subsampled Gaussian release)",
                    mechanism.name()
                )));
            }
        }
        self.facts.record(mechanism, count, self.rel);
        Ok(())
    }

    /// # Privacy
    /// See [`ExactAccountant`].
    fn epsilon(&self, delta: f64) -> Result<f64> {
        valid_delta(delta)?;
        let eps = match self.single {
            Some((r, a)) => {
                let e = |p: Profile| epsilon_for_delta(delta, EPS_MAX, REL_TOL, |e| Ok(p.delta(e)));
                worse(e(r)?, e(a)?)
            }
            None if self.gaussian_s2 > 0.0 => epsilon_for_ratio(self.gaussian_s2.sqrt(), delta)?,
            None => 0.0,
        };
        self.facts.check_epsilon("exact", delta, round_up_eps(eps))
    }

    /// # Privacy
    /// See [`ExactAccountant`].
    fn delta(&self, epsilon: f64) -> Result<f64> {
        non_negative("epsilon", epsilon)?;
        let d = round_up_at(
            match self.single {
                Some((r, a)) => worse(r.delta(epsilon), a.delta(epsilon)),
                None if self.gaussian_s2 > 0.0 => delta_for_ratio(self.gaussian_s2.sqrt(), epsilon),
                None => 0.0,
            },
            epsilon,
        );
        self.facts.check_delta("exact", epsilon, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::mechanism::ObjPertParams;

    #[test]
    fn mechanisms_without_a_closed_form_are_refused_in_exacts_words() {
        // Issue 32: AMP was refused as "the pld accountant does not support amp".
        let p = ObjPertParams::new(1.0, 1.0, 0.5, 1.0).unwrap();
        let cases = [
            (
                Mechanism::amp(p, 1e-4, 0.1).unwrap(),
                "pld or rdp",
                Neighbouring::AddRemove,
            ),
            (
                Mechanism::zcdp(0.5).unwrap(),
                "zcdp or rdp",
                Neighbouring::AddRemove,
            ),
            (
                Mechanism::gamma_ball(1.0, 0.01, 3, 1.0).unwrap(),
                "pld or rdp",
                Neighbouring::AddRemove,
            ),
            (
                Mechanism::subsampled_gaussian_without_replacement(1.0, 10, 1000).unwrap(),
                "rdp",
                Neighbouring::ReplaceOne,
            ),
        ];
        for (m, instead, rel) in cases {
            let e = ExactAccountant::new(rel).compose(&m, 1).unwrap_err();
            let msg = e.to_string();
            assert!(
                matches!(
                    e,
                    Error::Unsupported {
                        accountant: "exact",
                        ..
                    }
                ) && msg.starts_with(&format!("the exact accountant does not support {m}:"))
                    && msg.ends_with(&format!("use the {instead} accountant")),
                "{msg}"
            );
        }
    }
}
