//! The mechanisms the accountants know, with validated parameters.

use std::fmt;

use crate::discrete_gaussian::GridGaussian;
use crate::error::{Error, Result, ensure, non_negative, positive, rate};
use crate::neighbouring::Neighbouring;

/// How a batch is drawn in a subsampled mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Each record joins the batch independently with probability `q` (add/remove relation).
    Poisson,
    /// A batch of fixed size `m` drawn without replacement from `n` records, `q = m/n`
    /// (replace-one relation; `n` is public).
    WithoutReplacement {
        /// Dataset size.
        n: u64,
    },
}

/// Largest sensitivity-to-noise ratio a mechanism accepts: twice it (the replace-one factor),
/// rounded up, stays finite in every accountant.
const MAX_RATIO: f64 = f64::MAX / 4.0;

/// Checks that `ratio` (a sensitivity over a noise scale, as computed) is representable:
/// a normal positive float up to [`MAX_RATIO`]. A ratio that overflows to ∞ or underflows to
/// 0 or a subnormal carries no usable privacy parameter, so the mechanism is refused.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `name` (the noise parameter) with its value.
fn ratio(name: &'static str, noise: f64, ratio: f64) -> Result<()> {
    ensure(
        (f64::MIN_POSITIVE..=MAX_RATIO).contains(&ratio),
        name,
        noise,
        "gives a sensitivity-to-noise ratio outside [2.2e-308, 4.5e307]",
    )
}

/// Parameters of objective perturbation (paper 001): `J(θ) = Σ ℓ + (λ/2)‖θ‖² + bᵀθ`,
/// `b ~ N(0, σ²I)`, per-example gradient norm `≤ L`, Hessian eigenvalues `≤ β < λ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObjPertParams {
    /// Standard deviation σ of the linear perturbation `b`.
    pub sigma: f64,
    /// Regularisation strength λ (> β).
    pub lambda: f64,
    /// Smoothness bound β of the per-example loss.
    pub beta: f64,
    /// Lipschitz bound L of the per-example loss (gradient-norm bound).
    pub lipschitz: f64,
}

impl ObjPertParams {
    /// Validates the parameters (σ, λ, L > 0, 0 ≤ β < λ, all finite), and that the ratio
    /// `L/σ` is representable (a normal float up to ~4.5e307). (`c = −log(1 − β/λ)` is then
    /// finite: `β < λ` keeps the correctly rounded `β/λ` below 1.)
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the first bad parameter.
    pub fn new(sigma: f64, lambda: f64, beta: f64, lipschitz: f64) -> Result<Self> {
        positive("sigma", sigma)?;
        positive("lambda", lambda)?;
        non_negative("beta", beta)?;
        positive("lipschitz", lipschitz)?;
        ensure(lambda > beta, "lambda", lambda, "must exceed beta")?;
        ratio("sigma", sigma, lipschitz / sigma)?;
        Ok(Self {
            sigma,
            lambda,
            beta,
            lipschitz,
        })
    }

    /// `c = −log(1 − β/λ)`, the Jacobian term of the privacy loss: rounded up where `λ` is
    /// close to `β` (`β ≥ λ/2`), within `3.5u·c` otherwise.
    ///
    /// # Privacy
    /// Every objective-perturbation bound (paper 001, Thm 3.1 and 3.2; MATH §6) increases
    /// with `c` (the loss is `c + μ + |Z|`), so an upper bound on `c` keeps them upper bounds.
    ///
    /// Computed without cancellation: for `β ≥ λ/2` as `ln(λ/(λ − β))`, where `λ − β` is
    /// exact (Sterbenz), and otherwise as `−ln_1p(−β/λ)`. The former `−ln_1p(−β/λ)` alone
    /// lost `u/(1 − β/λ)` to the rounding of `β/λ` when λ is close to β (λ = 0.300000000000042,
    /// β = 0.3: c off by 2.7e-4, ε and δ under-reported). Rounding error left, with
    /// `u = 2^-53`: the quotient's `u` moves `ln(λ/(λ−β))` by `≤ 1.01u` absolute, at most
    /// `1.5u` relative as `c ≥ ln 2` there; `ln` adds at most one ulp (`2u`). So there
    /// `|c̃ − c| ≤ 3.5u·c`, and the result is `c̃·(1 + 16u)` (≥ `c̃(1 + 15u)` after its own
    /// rounding), above `c` with room for libm errors of several ulps. In the other branch
    /// (`β < λ/2`) the condition number of `x ↦ −ln(1 − x)` on `[0, 1/2]` is at most `1.45`,
    /// so `|c̃ − c| ≤ 3.5u·c` with `ln_1p`'s ulp, and `c̃` is returned as computed (not
    /// rounded up; see the comment in the code). When `β/λ` is below the smallest normal
    /// double, `c ≤ 2·f64::MIN_POSITIVE`, which is returned (0 for `β = 0`).
    pub fn c(&self) -> f64 {
        let (lambda, beta) = (self.lambda, self.beta);
        if beta == 0.0 {
            return 0.0;
        }
        if beta >= 0.5 * lambda {
            // λ/2 ≤ β < λ: the difference is exact, and λ/(λ − β) ∈ [2, 2^53] cannot overflow.
            (lambda / (lambda - beta)).ln() * (1.0 + 8.0 * f64::EPSILON)
        } else {
            let x = beta / lambda;
            if x < f64::MIN_POSITIVE {
                return 2.0 * f64::MIN_POSITIVE;
            }
            // Well conditioned here (≤ 3.5u·c), and not rounded up: the exact profile's own
            // evaluation error at tiny L/σ exceeds its margin (an open defect, see
            // CHANGELOG), and the value here is what the campaign's cases are checked with.
            -(-x).ln_1p()
        }
    }

    /// `L/σ`, the Gaussian part's sensitivity-to-noise ratio.
    pub fn ratio(&self) -> f64 {
        self.lipschitz / self.sigma
    }
}

/// A privacy mechanism to be composed into an accountant.
///
/// Constructed only through validating constructors, so a `Mechanism` always holds parameters
/// for which its guarantee is defined. Sensitivities are *per-record contribution bounds*
/// `C`: an accountant with the replace-one relation doubles them for sums (MATH §1).
#[derive(Debug, Clone, PartialEq)]
pub struct Mechanism {
    pub(crate) kind: Kind,
    /// How its Gaussian noise is released, if on a discrete grid ([`Mechanism::with_grid`]).
    pub(crate) grid: Option<GridGaussian>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Gaussian {
        sigma: f64,
        sensitivity: f64,
    },
    Laplace {
        scale: f64,
        sensitivity: f64,
    },
    SubsampledGaussian {
        noise_multiplier: f64,
        q: f64,
        sampling: Sampling,
    },
    PureDp {
        epsilon: f64,
    },
    GammaBall {
        scale: f64,
        q: f64,
        dim: u64,
        sensitivity: f64,
    },
    ObjPert(ObjPertParams),
    Amp {
        objpert: ObjPertParams,
        tau: f64,
        sigma_out: f64,
    },
    Zcdp {
        rho: f64,
    },
}

impl Mechanism {
    /// Gaussian mechanism: noise `N(0, σ²I)` added to a sum of per-record contributions of
    /// norm `≤ sensitivity`.
    ///
    /// # Errors
    /// σ or sensitivity not finite and positive, or their ratio not representable.
    pub fn gaussian(sigma: f64, sensitivity: f64) -> Result<Self> {
        let kind = Kind::Gaussian {
            sigma: positive("sigma", sigma)?,
            sensitivity: positive("sensitivity", sensitivity)?,
        };
        ratio("sigma", sigma, sensitivity / sigma)?;
        Ok(Self { kind, grid: None })
    }

    /// Laplace mechanism with scale `b` on a query with L1 sensitivity `sensitivity`.
    ///
    /// # Errors
    /// Scale or sensitivity not finite and positive, or their ratio not representable.
    pub fn laplace(scale: f64, sensitivity: f64) -> Result<Self> {
        let kind = Kind::Laplace {
            scale: positive("scale", scale)?,
            sensitivity: positive("sensitivity", sensitivity)?,
        };
        ratio("scale", scale, sensitivity / scale)?;
        Ok(Self { kind, grid: None })
    }

    /// One DP-SGD step: Poisson sampling with rate `q`, clipped sum, Gaussian noise with
    /// standard deviation `noise_multiplier × C` (add/remove relation).
    ///
    /// # Errors
    /// `noise_multiplier` not positive (or so small that `1/noise_multiplier` overflows) or
    /// `q ∉ (0, 1]`.
    pub fn subsampled_gaussian(noise_multiplier: f64, q: f64) -> Result<Self> {
        let kind = Kind::SubsampledGaussian {
            noise_multiplier: positive("sigma", noise_multiplier)?,
            q: rate("q", q)?,
            sampling: Sampling::Poisson,
        };
        ratio("sigma", noise_multiplier, noise_multiplier.recip())?;
        Ok(Self { kind, grid: None })
    }

    /// One step with a fixed-size batch of `batch` records drawn without replacement from `n`
    /// (replace-one relation; RDP accounting only).
    ///
    /// # Errors
    /// `noise_multiplier` not positive (or so small that `1/noise_multiplier` overflows),
    /// `batch` = 0 or `batch > n`.
    pub fn subsampled_gaussian_without_replacement(
        noise_multiplier: f64,
        batch: u64,
        n: u64,
    ) -> Result<Self> {
        ensure(
            batch >= 1 && batch <= n,
            "batch",
            batch as f64,
            "must be in 1..=n",
        )?;
        let kind = Kind::SubsampledGaussian {
            noise_multiplier: positive("sigma", noise_multiplier)?,
            q: batch as f64 / n as f64,
            sampling: Sampling::WithoutReplacement { n },
        };
        ratio("sigma", noise_multiplier, noise_multiplier.recip())?;
        Ok(Self { kind, grid: None })
    }

    /// Any ε-DP mechanism (accounted through the randomized-response pair, which dominates
    /// every pure ε-DP mechanism), under the accountant's relation.
    ///
    /// # Errors
    /// ε not finite and positive.
    pub fn pure_dp(epsilon: f64) -> Result<Self> {
        Ok(Self {
            kind: Kind::PureDp {
                epsilon: positive("epsilon", epsilon)?,
            },
            grid: None,
        })
    }

    /// Paper 000's Gamma-ball DP-SGD step: Poisson rate `q`, noise with density
    /// `∝ exp(−‖z‖/scale)` in dimension `dim`, per-record bound `sensitivity`.
    ///
    /// # Errors
    /// Scale or sensitivity not positive (or their ratio not representable), `q ∉ (0, 1]`,
    /// `dim` = 0.
    pub fn gamma_ball(scale: f64, q: f64, dim: u64, sensitivity: f64) -> Result<Self> {
        ensure(dim >= 1, "dim", dim as f64, "must be >= 1")?;
        let kind = Kind::GammaBall {
            scale: positive("scale", scale)?,
            q: rate("q", q)?,
            dim,
            sensitivity: positive("sensitivity", sensitivity)?,
        };
        ratio("scale", scale, sensitivity / scale)?;
        Ok(Self { kind, grid: None })
    }

    /// Objective perturbation (paper 001) releasing the exact minimiser (add/remove).
    pub fn objective_perturbation(params: ObjPertParams) -> Self {
        Self {
            kind: Kind::ObjPert(params),
            grid: None,
        }
    }

    /// Approximate minima perturbation (paper 001, Alg. 1): objective perturbation solved to
    /// `‖∇J‖ ≤ τ`, then `N(0, σ_out²I)` added to the output (add/remove).
    ///
    /// # Errors
    /// τ or σ_out not finite and positive, or the output Gaussian's ratio `2τ/(λσ_out)` not
    /// representable.
    pub fn amp(params: ObjPertParams, tau: f64, sigma_out: f64) -> Result<Self> {
        let kind = Kind::Amp {
            objpert: params,
            tau: positive("tau", tau)?,
            sigma_out: positive("sigma_out", sigma_out)?,
        };
        // The output Gaussian's ratio 2τ/(λσ_out) (MATH §6).
        ratio(
            "sigma_out",
            sigma_out,
            2.0 * tau / params.lambda / sigma_out,
        )?;
        Ok(Self { kind, grid: None })
    }

    /// A mechanism known only to be ρ-zCDP (RDP `ε(α) = ρα`) under the accountant's relation.
    ///
    /// # Errors
    /// ρ not finite and positive.
    pub fn zcdp(rho: f64) -> Result<Self> {
        Ok(Self {
            kind: Kind::Zcdp {
                rho: positive("rho", rho)?,
            },
            grid: None,
        })
    }

    /// Short machine name (`gaussian`, `subsampled-gaussian`, `laplace`, `pure-dp`,
    /// `gamma-ball`, `objpert`, `amp`, `zcdp`).
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Gaussian { .. } => "gaussian",
            Kind::Laplace { .. } => "laplace",
            Kind::SubsampledGaussian { .. } => "subsampled-gaussian",
            Kind::PureDp { .. } => "pure-dp",
            Kind::GammaBall { .. } => "gamma-ball",
            Kind::ObjPert(_) => "objpert",
            Kind::Amp { .. } => "amp",
            Kind::Zcdp { .. } => "zcdp",
        }
    }

    /// The named parameters, for reports (a grid release's `grid_sigma` and `grid_dim` last).
    pub fn parameters(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.kind_parameters();
        if let Some(g) = self.grid {
            v.push(("grid_sigma", g.sigma()));
            v.push(("grid_dim", g.dim() as f64));
        }
        v
    }

    /// The parameters of the mechanism's kind.
    fn kind_parameters(&self) -> Vec<(&'static str, f64)> {
        let op = |p: &ObjPertParams| {
            vec![
                ("sigma", p.sigma),
                ("lambda", p.lambda),
                ("beta", p.beta),
                ("lipschitz", p.lipschitz),
            ]
        };
        match &self.kind {
            Kind::Gaussian { sigma, sensitivity } => {
                vec![("sigma", *sigma), ("sensitivity", *sensitivity)]
            }
            Kind::Laplace { scale, sensitivity } => {
                vec![("scale", *scale), ("sensitivity", *sensitivity)]
            }
            Kind::SubsampledGaussian {
                noise_multiplier,
                q,
                sampling,
            } => {
                let mut v = vec![("noise_multiplier", *noise_multiplier), ("q", *q)];
                if let Sampling::WithoutReplacement { n } = sampling {
                    v.push(("n", *n as f64));
                }
                v
            }
            Kind::PureDp { epsilon } => vec![("epsilon", *epsilon)],
            Kind::GammaBall {
                scale,
                q,
                dim,
                sensitivity,
            } => vec![
                ("scale", *scale),
                ("q", *q),
                ("dim", *dim as f64),
                ("sensitivity", *sensitivity),
            ],
            Kind::ObjPert(p) => op(p),
            Kind::Amp {
                objpert,
                tau,
                sigma_out,
            } => {
                let mut v = op(objpert);
                v.push(("tau", *tau));
                v.push(("sigma_out", *sigma_out));
                v
            }
            Kind::Zcdp { rho } => vec![("rho", *rho)],
        }
    }

    /// The relations this mechanism's analysis covers. Poisson subsampling, objective
    /// perturbation and AMP are analysed under add/remove; sampling without replacement under
    /// replace-one; the rest under both.
    pub fn supports(&self, rel: Neighbouring) -> bool {
        match &self.kind {
            Kind::SubsampledGaussian { sampling, q, .. } => match sampling {
                Sampling::Poisson => rel == Neighbouring::AddRemove || *q == 1.0,
                Sampling::WithoutReplacement { .. } => rel == Neighbouring::ReplaceOne,
            },
            Kind::GammaBall { q, .. } => rel == Neighbouring::AddRemove || *q == 1.0,
            Kind::ObjPert(_) | Kind::Amp { .. } => rel == Neighbouring::AddRemove,
            _ => true,
        }
    }

    /// Errors unless the mechanism's analysis covers `rel`.
    pub(crate) fn check_relation(&self, rel: Neighbouring, accountant: &'static str) -> Result<()> {
        if self.supports(rel) {
            Ok(())
        } else {
            Err(Error::Unsupported {
                accountant,
                what: format!("the {} mechanism under the {rel} relation", self.name()),
            })
        }
    }

    /// The ε of one step of a pure-DP mechanism after amplification, if this is one
    /// (pure DP, Laplace as pure, Gamma ball).
    pub(crate) fn pure_epsilon(&self, rel: Neighbouring) -> Option<f64> {
        let f = rel.sum_sensitivity_factor();
        match self.kind {
            Kind::PureDp { epsilon } => Some(epsilon),
            Kind::GammaBall {
                scale,
                q,
                sensitivity,
                ..
            } => {
                // (Δ/s)-DP per step (MATH §5), amplified by Poisson sampling:
                // log(1 + q(e^{ε0} − 1)).
                let eps0 = f * sensitivity / scale;
                Some((q * eps0.exp_m1()).ln_1p())
            }
            _ => None,
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name())?;
        for (i, (k, v)) in self.parameters().iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_validate() {
        assert!(Mechanism::gaussian(0.0, 1.0).is_err());
        assert!(Mechanism::gaussian(1.0, f64::INFINITY).is_err());
        assert!(Mechanism::subsampled_gaussian(1.0, 0.0).is_err());
        assert!(Mechanism::subsampled_gaussian(1.0, 1.5).is_err());
        assert!(Mechanism::subsampled_gaussian(f64::NAN, 0.5).is_err());
        assert!(Mechanism::subsampled_gaussian_without_replacement(1.0, 0, 10).is_err());
        assert!(Mechanism::subsampled_gaussian_without_replacement(1.0, 11, 10).is_err());
        assert!(Mechanism::gamma_ball(1.0, 0.1, 0, 1.0).is_err());
        let e = ObjPertParams::new(1.0, 0.5, 0.5, 1.0).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { name: "lambda", .. }));
        let p = ObjPertParams::new(1.0, 1.0, 0.5, 2f64.sqrt()).unwrap();
        assert!(Mechanism::amp(p, 0.0, 0.1).is_err());
        // c = ln 2, rounded up by 16u.
        assert!(p.c() >= 2f64.ln() && p.c() - 2f64.ln() < 2e-15, "{}", p.c());
    }

    #[test]
    fn ratios_that_are_not_representable_are_refused() {
        // Fuzzing (tests/fuzz_constructors.rs): finite, positive parameters whose ratio
        // overflowed to ∞ or underflowed to 0 were accepted, and ObjPert's L/σ = ∞ reached
        // the accountants.
        let bad = |r: Result<Mechanism>, name: &str| {
            assert!(
                matches!(&r, Err(Error::InvalidParameter { name: n, .. }) if *n == name),
                "{r:?}"
            );
        };
        bad(Mechanism::gaussian(1e-300, 1e10), "sigma");
        bad(Mechanism::gaussian(1e300, 1e-300), "sigma");
        bad(Mechanism::laplace(3e286, 1e-30), "scale");
        bad(Mechanism::subsampled_gaussian(5e-324, 0.1), "sigma");
        bad(
            Mechanism::subsampled_gaussian_without_replacement(1e-310, 1, 2),
            "sigma",
        );
        bad(Mechanism::gamma_ball(1e-300, 0.1, 3, 1e20), "scale");
        let e = ObjPertParams::new(1e-300, 1.0, 0.5, 1e10).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "sigma", .. }),
            "{e}"
        );
        let p = ObjPertParams::new(1.0, 1.0, 1.0f64.next_down(), 1.0).unwrap();
        assert!(p.c().is_finite() && p.c() > 36.0, "{}", p.c());
        let p = ObjPertParams::new(1.0, 1e300, 1.0, 1.0).unwrap();
        bad(Mechanism::amp(p, 1e-300, 1e300), "sigma_out");
        // Extreme but representable ratios stay accepted (the accountants handle them).
        assert!(Mechanism::gaussian(1e-300, 1.0).is_ok());
        assert!(Mechanism::subsampled_gaussian(1e300, 0.5).is_ok());
        // A NaN or negative parameter is named as such, before its ratio.
        let e = Mechanism::gaussian(f64::NAN, 1.0).unwrap_err();
        assert!(e.to_string().contains("must be finite and > 0"), "{e}");
    }

    #[test]
    fn relations() {
        let m = Mechanism::subsampled_gaussian(1.0, 0.01).unwrap();
        assert!(m.supports(Neighbouring::AddRemove));
        assert!(!m.supports(Neighbouring::ReplaceOne));
        assert!(m.check_relation(Neighbouring::ReplaceOne, "rdp").is_err());
        let w = Mechanism::subsampled_gaussian_without_replacement(1.0, 10, 1000).unwrap();
        assert!(w.supports(Neighbouring::ReplaceOne) && !w.supports(Neighbouring::AddRemove));
        assert_eq!(
            Mechanism::gaussian(2.0, 1.0).unwrap().to_string(),
            "gaussian(sigma=2, sensitivity=1)"
        );
    }
}
