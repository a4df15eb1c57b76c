//! Private hyper-parameter selection: Papernot & Steinke 2022 (*Hyperparameter tuning with
//! Rényi differential privacy*, ICLR), MATH §7.

use crate::error::{Error, Result, ensure, positive};
use crate::rdp::RdpAccountant;

/// The law of the number of runs `K` of the base mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repetitions {
    /// `K ~ Poisson(mean)`.
    Poisson {
        /// Expected number of runs μ.
        mean: f64,
    },
    /// `K ~` truncated negative binomial `TNB(η, γ)` (η = 1: geometric; η = 0: logarithmic).
    TruncatedNegativeBinomial {
        /// Shape η > −1.
        eta: f64,
        /// γ ∈ (0, 1).
        gamma: f64,
    },
}

impl Repetitions {
    /// `E[K]`.
    ///
    /// # Errors
    /// Parameters outside their domain.
    pub fn mean(&self) -> Result<f64> {
        match *self {
            Repetitions::Poisson { mean } => positive("mean", mean),
            Repetitions::TruncatedNegativeBinomial { eta, gamma } => {
                ensure(eta.is_finite() && eta > -1.0, "eta", eta, "must be > -1")?;
                ensure(
                    gamma > 0.0 && gamma < 1.0,
                    "gamma",
                    gamma,
                    "must be in (0, 1)",
                )?;
                let mean = if eta == 0.0 {
                    (1.0 / gamma - 1.0) / (1.0 / gamma).ln()
                } else {
                    eta * (1.0 - gamma) / (gamma * (1.0 - gamma.powf(eta)))
                };
                if !(mean.is_finite() && mean > 0.0) {
                    return Err(crate::Error::OutOfRange(format!(
                        "the truncated negative binomial's mean is not representable \
                         (eta = {eta:e}, gamma = {gamma:e})"
                    )));
                }
                Ok(mean)
            }
        }
    }
}

/// The RDP curve of "run the base `K` times, output the best" given the base's composed curve
/// in `base` (any relation; the result keeps it).
///
/// # Privacy
/// Papernot & Steinke 2022: Poisson `K` (Thm 6): `ε'(α) = ε(α) + μ·δ̂ + log(μ)/(α−1)` with
/// `δ̂` the base's δ at `ε̂ = log(1 + 1/(α−1))`; truncated negative binomial (Thm 2):
/// `ε'(α) = ε(α) + (1+η)(1 − 1/α̂)ε(α̂) + (1+η)log(1/γ)/α̂ + log(E[K])/(α−1)`, minimised over
/// `α̂` on the base's order grid.
///
/// # Errors
/// Invalid repetition parameters.
pub fn tuned(base: &RdpAccountant, reps: Repetitions) -> Result<RdpAccountant> {
    let mean = reps.mean()?;
    let orders = base.orders().to_vec();
    let curve = base.curve();
    let mut out = Vec::with_capacity(orders.len());
    for (&a, &r) in orders.iter().zip(curve) {
        let v = match reps {
            Repetitions::Poisson { .. } => {
                let eps_hat = (1.0 / (a - 1.0)).ln_1p();
                // δ̂ = min_{α'} exp((α'−1)(ε(α') − ε̂)) / α' · (1 − 1/α')^{α'−1}.
                let log_dhat = orders
                    .iter()
                    .zip(curve)
                    .filter(|(_, r)| r.is_finite())
                    .map(|(&b, &rb)| {
                        (b - 1.0) * (rb - eps_hat) - b.ln() + (b - 1.0) * (-1.0 / b).ln_1p()
                    })
                    .fold(0.0f64, f64::min);
                r + mean * log_dhat.exp() + mean.ln() / (a - 1.0)
            }
            Repetitions::TruncatedNegativeBinomial { eta, gamma } => {
                let best = orders
                    .iter()
                    .zip(curve)
                    .filter(|(_, r)| r.is_finite())
                    .map(|(&ah, &rh)| {
                        (1.0 + eta) * ((1.0 - 1.0 / ah) * rh + (1.0 / gamma).ln() / ah)
                    })
                    .fold(f64::INFINITY, f64::min);
                r + best + mean.ln() / (a - 1.0)
            }
        };
        out.push(if v.is_nan() { f64::INFINITY } else { v });
    }
    if out.iter().all(|v| !v.is_finite()) {
        return Err(Error::OutOfRange(
            "the tuned RDP curve is infinite at every order".into(),
        ));
    }
    base.with_curve(out)
}
