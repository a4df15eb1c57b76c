//! Closed forms where they are tight: compositions of Gaussian mechanisms, and a single
//! release of a mechanism with a known exact profile (objective perturbation, Laplace, pure
//! DP).

use crate::accountant::Accountant;
use crate::error::{Error, Result, non_negative, open_unit};
use crate::gaussian::{EPS_MAX, REL_TOL, delta_for_ratio, epsilon_for_ratio, round_up};
use crate::mechanism::{Kind, Mechanism};
use crate::neighbouring::Neighbouring;
use crate::profile::{Profile, profiles};
use crate::search::epsilon_for_delta;

/// The exact accountant.
///
/// # Privacy
/// `T` Gaussian mechanisms with ratios `s_i = Δ_i/σ_i` compose exactly into one Gaussian
/// with `s = √(Σ s_i²)` (Dong, Roth & Su 2019, μ-GDP; MATH §2), whose profile is Balle & Wang
/// 2018's. A single objective-perturbation release uses paper 001's Thm 3.1 profile. Anything
/// else is refused ([`Error::Unsupported`]).
#[derive(Debug, Clone)]
pub struct ExactAccountant {
    rel: Neighbouring,
    gaussian_s2: f64,
    single: Option<Profile>,
}

impl ExactAccountant {
    /// An empty accountant.
    pub fn new(rel: Neighbouring) -> Self {
        Self {
            rel,
            gaussian_s2: 0.0,
            single: None,
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
        if count == 0 {
            return Ok(());
        }
        let (p, _) = profiles(mechanism, self.rel)?;
        match (p, &mechanism.kind) {
            (Profile::Gaussian { s }, _) if self.single.is_none() => {
                self.gaussian_s2 += count as f64 * s * s;
                Ok(())
            }
            (_, Kind::ObjPert(_) | Kind::Laplace { .. } | Kind::PureDp { .. })
                if count == 1 && self.single.is_none() && self.gaussian_s2 == 0.0 =>
            {
                self.single = Some(p);
                Ok(())
            }
            _ => Err(Self::unsupported(format!(
                "{count} x {} composed with what it already holds (exact covers Gaussian \
                 compositions and one objective perturbation, Laplace or pure-DP release)",
                mechanism.name()
            ))),
        }
    }

    /// # Privacy
    /// See [`ExactAccountant`].
    fn epsilon(&self, delta: f64) -> Result<f64> {
        open_unit("delta", delta)?;
        match self.single {
            Some(p) => epsilon_for_delta(delta, EPS_MAX, REL_TOL, |e| Ok(p.delta(e))),
            None if self.gaussian_s2 > 0.0 => epsilon_for_ratio(self.gaussian_s2.sqrt(), delta),
            None => Ok(0.0),
        }
    }

    /// # Privacy
    /// See [`ExactAccountant`].
    fn delta(&self, epsilon: f64) -> Result<f64> {
        non_negative("epsilon", epsilon)?;
        Ok(round_up(match self.single {
            Some(p) => p.delta(epsilon),
            None if self.gaussian_s2 > 0.0 => delta_for_ratio(self.gaussian_s2.sqrt(), epsilon),
            None => 0.0,
        }))
    }
}
