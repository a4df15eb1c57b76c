//! The zero-concentrated-DP accountant (Bun & Steinke 2016).

use crate::accountant::Accountant;
use crate::checks::Facts;
use crate::error::{Error, Result, ensure, non_negative, valid_delta};
use crate::mechanism::{Kind, Mechanism};
use crate::neighbouring::Neighbouring;
use crate::rdp::{Conversion, minimise_over_order};

/// ε(δ) of ρ-zCDP: the best of `ρ + 2√(ρ log(1/δ))` (Bun & Steinke 2016, Prop. 1.3) and the
/// CKS20 and Asoodeh et al. 2021 conversions of the RDP curve `ε(α) = ρα`, minimised over real
/// `α > 1`.
///
/// # Privacy
/// Each conversion is an upper bound (MATH §3); the minimum is returned, rounded up.
///
/// # Errors
/// ρ negative or not finite, δ ∉ [2.2e-308, 1) (`DELTA_MIN`); [`Error::OutOfRange`] when ε overflows.
pub fn zcdp_epsilon(rho: f64, delta: f64) -> Result<f64> {
    ensure(
        rho.is_finite() && rho >= 0.0,
        "rho",
        rho,
        "must be finite and >= 0",
    )?;
    valid_delta(delta)?;
    if rho == 0.0 {
        return Ok(0.0);
    }
    let mut best = rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
    for c in [Conversion::Cks20, Conversion::Asoodeh] {
        let (_, e) = minimise_over_order(|a| c.epsilon(a, rho * a, delta));
        if e.is_finite() {
            best = best.min(e);
        }
    }
    let eps = crate::gaussian::round_up_eps(best);
    if eps.is_finite() {
        Ok(eps)
    } else {
        Err(Error::OutOfRange(format!(
            "epsilon of {rho}-zCDP at delta = {delta:e} overflows"
        )))
    }
}

/// δ(ε) of ρ-zCDP, the best of the conversions of [`zcdp_epsilon`].
///
/// # Privacy
/// As [`zcdp_epsilon`]; rounded up.
///
/// # Errors
/// ρ or ε negative or not finite.
pub fn zcdp_delta(rho: f64, epsilon: f64) -> Result<f64> {
    ensure(
        rho.is_finite() && rho >= 0.0,
        "rho",
        rho,
        "must be finite and >= 0",
    )?;
    non_negative("epsilon", epsilon)?;
    if rho == 0.0 {
        return Ok(0.0);
    }
    let mut best = 0.0f64;
    for c in Conversion::ALL {
        let (_, l) = minimise_over_order(|a| c.log_delta(a, rho * a, epsilon));
        if !l.is_nan() {
            best = best.min(l);
        }
    }
    Ok(crate::gaussian::round_up(best.exp()))
}

/// zCDP accountant: ρ adds under composition.
///
/// # Privacy
/// Gaussian with ratio `s = Δ/σ` is `s²/2`-zCDP; an ε-DP mechanism is `ε²/2`-zCDP (Bun &
/// Steinke 2016, Prop. 1.4 and 1.6); conversion by [`zcdp_epsilon`].
#[derive(Debug, Clone)]
pub struct ZcdpAccountant {
    rel: Neighbouring,
    rho: f64,
    facts: Facts,
}

impl ZcdpAccountant {
    /// An empty accountant.
    pub fn new(rel: Neighbouring) -> Self {
        Self {
            rel,
            rho: 0.0,
            facts: Facts::default(),
        }
    }

    /// The composed ρ.
    ///
    /// # Privacy
    /// The composition is ρ-zCDP (Bun & Steinke 2016, Lemma 2.3).
    pub fn rho(&self) -> f64 {
        self.rho
    }
}

impl Accountant for ZcdpAccountant {
    fn name(&self) -> &'static str {
        "zcdp"
    }

    fn neighbouring(&self) -> Neighbouring {
        self.rel
    }

    fn compose(&mut self, mechanism: &Mechanism, count: u64) -> Result<()> {
        mechanism.check_relation(self.rel, "zcdp")?;
        let f = self.rel.sum_sensitivity_factor();
        let rho = match &mechanism.kind {
            Kind::Gaussian { sigma, sensitivity } => {
                let s = f * sensitivity / sigma;
                0.5 * s * s
            }
            Kind::SubsampledGaussian {
                noise_multiplier,
                q,
                ..
            } if *q == 1.0 => {
                let s = f / noise_multiplier;
                0.5 * s * s
            }
            Kind::Laplace { scale, sensitivity } => {
                let e = f * sensitivity / scale;
                0.5 * e * e
            }
            Kind::PureDp { .. } | Kind::GammaBall { .. } => {
                let e = mechanism.pure_epsilon(self.rel).unwrap_or(f64::INFINITY);
                0.5 * e * e
            }
            Kind::Zcdp { rho } => *rho,
            _ => {
                return Err(Error::Unsupported {
                    accountant: "zcdp",
                    what: format!("the {} mechanism (use rdp or pld)", mechanism.name()),
                });
            }
        };
        if count > 0 {
            // Not 0·∞ (a NaN) when one step's ρ overflows and it is composed 0 times.
            self.rho += count as f64 * rho;
            self.facts.record(mechanism, count, self.rel);
        }
        Ok(())
    }

    /// # Privacy
    /// See [`zcdp_epsilon`].
    fn epsilon(&self, delta: f64) -> Result<f64> {
        if self.rho.is_infinite() {
            valid_delta(delta)?;
            return Err(Error::OutOfRange(
                "the composed rho overflows: epsilon is unbounded".into(),
            ));
        }
        let e = zcdp_epsilon(self.rho, delta)?;
        self.facts.check_epsilon("zcdp", delta, e)
    }

    /// # Privacy
    /// See [`zcdp_delta`].
    fn delta(&self, epsilon: f64) -> Result<f64> {
        if self.rho.is_infinite() {
            // No finite ρ bounds the composition: only the trivial δ = 1.
            non_negative("epsilon", epsilon)?;
            return Ok(1.0);
        }
        let d = zcdp_delta(self.rho, epsilon)?;
        self.facts.check_delta("zcdp", epsilon, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_rho_is_an_error_not_infinity() {
        let mut acc = ZcdpAccountant::new(Neighbouring::AddRemove);
        acc.compose(&Mechanism::gaussian(1e-300, 1.0).unwrap(), 1)
            .unwrap();
        assert!(matches!(acc.epsilon(1e-5), Err(Error::OutOfRange(_))));
        assert_eq!(acc.delta(3.0).unwrap(), 1.0);
        assert!(matches!(
            zcdp_epsilon(f64::MAX, 1e-5),
            Err(Error::OutOfRange(_))
        ));
        // Zero runs of a step whose ρ overflows add nothing (not 0·∞ = NaN).
        let mut acc = ZcdpAccountant::new(Neighbouring::AddRemove);
        acc.compose(&Mechanism::gaussian(1e-300, 1.0).unwrap(), 0)
            .unwrap();
        assert_eq!(acc.rho(), 0.0);
        assert_eq!(acc.epsilon(1e-5).unwrap(), 0.0);
        // Large but representable: finite.
        let e = zcdp_epsilon(1e300, 1e-5).unwrap();
        assert!(e.is_finite() && e >= 1e300);
    }
}
