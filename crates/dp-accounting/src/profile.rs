//! Privacy profiles (hockey-stick curves) of dominating pairs, one per direction of a
//! neighbouring relation: what the PLD accountant discretises.
//!
//! For a pair `(P, Q)` with privacy loss `ω = log(P/Q)(o)`, `o ~ P`, the profile is
//! `δ(ε) = P[ω = ∞] + E[(1 − e^{ε−ω})₊]` (MATH §4) and the tail is `P[ω > ε]`.

use crate::error::Result;
use crate::mechanism::{Kind, Mechanism, Sampling};
use crate::neighbouring::Neighbouring;
use crate::special::{log_add, log_sf, sf, tail_gap, tail_gap_lower};
use crate::{Error, gaussian};

/// `1 + 8u`: the factor every ratio is rounded up by (see [`profiles`]).
const UP: f64 = 1.0 + 8.0 * f64::EPSILON;

/// Number of standard deviations covered by a discretisation range: `Φ̄(9) ≈ 1.1e-19`.
const K_SD: f64 = 9.0;

/// One direction of a dominating pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Profile {
    /// Gaussian with sensitivity-to-noise ratio `s`: ω ~ N(s²/2, s²).
    Gaussian { s: f64 },
    /// Laplace with `r = Δ/b`.
    Laplace { r: f64 },
    /// Randomized response with ε0 (dominates every ε0-DP mechanism).
    RandomizedResponse { eps: f64 },
    /// Poisson-subsampled Gaussian, remove direction: P = (1−q)N(0,z²) + qN(1,z²), Q = N(0,z²).
    PoissonRemove { z: f64, q: f64 },
    /// Poisson-subsampled Gaussian, add direction: the pair swapped.
    PoissonAdd { z: f64, q: f64 },
    /// Objective perturbation: ω = c + μ + |Z|, Z ~ N(0, 2μ), μ = s²/2.
    ObjPert { c: f64, s: f64 },
}

impl Profile {
    /// `δ(ε)` for any real ε.
    pub(crate) fn delta(&self, eps: f64) -> f64 {
        self.delta_with(eps, tail_gap)
    }

    /// A lower bound on `δ(ε)`: as [`Profile::delta`] with the rounding allowance of its
    /// cancelling differences subtracted instead of added ([`tail_gap_lower`]); the
    /// self-checks compare answers against it.
    pub(crate) fn delta_lower(&self, eps: f64) -> f64 {
        self.delta_with(eps, tail_gap_lower)
    }

    /// `δ(ε)` with the Gaussian differences `Φ̄(a) − w·Φ̄(b)` evaluated by `gap`.
    fn delta_with(&self, eps: f64, gap: fn(f64, f64) -> f64) -> f64 {
        match *self {
            Profile::Gaussian { s } => gaussian::delta_for_ratio_with(s, eps, gap),
            Profile::Laplace { r } => {
                if eps >= r {
                    0.0
                } else if eps >= -r {
                    -(0.5 * (eps - r)).exp_m1()
                } else {
                    -eps.exp_m1()
                }
            }
            Profile::RandomizedResponse { eps: e0 } => {
                let p = 1.0 / (1.0 + (-e0).exp());
                p * (-(eps - e0).exp_m1()).max(0.0) + (1.0 - p) * (-(eps + e0).exp_m1()).max(0.0)
            }
            Profile::PoissonRemove { z, q } => {
                // ω > ε ⇔ o > t, t = z² log((e^ε − 1 + q)/q) + 1/2.
                let Some(t) = remove_threshold(z, q, eps) else {
                    return -eps.exp_m1();
                };
                // δ = qΦ̄((t−1)/z) − (e^ε − 1 + q)Φ̄(t/z), and (e^ε−1+q)/q = φ((t−1)/z)/φ(t/z).
                q * gap((t - 1.0) / z, t / z)
            }
            Profile::PoissonAdd { z, q } => {
                // ω > ε ⇔ o < t, t = z² log((e^{−ε} − 1 + q)/q) + 1/2; none when ε ≥ −log(1−q).
                let Some(t) = remove_threshold(z, q, -eps) else {
                    return 0.0;
                };
                let w = -(eps + (-q).ln_1p()).exp_m1(); // 1 − e^ε(1 − q)
                let lo = -t / z;
                w * gap(lo, lo + 1.0 / z)
            }
            Profile::ObjPert { c, s } => {
                let mu = 0.5 * s * s;
                let e = eps - c;
                if e >= mu {
                    2.0 * gaussian::delta_for_ratio_with(s, e, gap)
                } else {
                    // 1 − 2e^{ε'}Φ̄(L/σ) (paper 001, Thm 3.1).
                    -(e + std::f64::consts::LN_2 + log_sf(s)).exp_m1()
                }
            }
        }
    }

    /// `P[ω > ε]` (including any mass at +∞).
    pub(crate) fn tail(&self, eps: f64) -> f64 {
        match *self {
            Profile::Gaussian { s } => sf((eps - 0.5 * s * s) / s),
            Profile::Laplace { r } => {
                if eps >= r {
                    0.0
                } else if eps >= -r {
                    1.0 - 0.5 * (-0.5 * (r - eps)).exp()
                } else {
                    1.0
                }
            }
            Profile::RandomizedResponse { eps: e0 } => {
                if eps >= e0 {
                    0.0
                } else if eps >= -e0 {
                    1.0 / (1.0 + (-e0).exp())
                } else {
                    1.0
                }
            }
            Profile::PoissonRemove { z, q } => {
                let Some(t) = remove_threshold(z, q, eps) else {
                    return 1.0;
                };
                (1.0 - q) * sf(t / z) + q * sf((t - 1.0) / z)
            }
            Profile::PoissonAdd { z, q } => {
                let Some(t) = remove_threshold(z, q, -eps) else {
                    return 0.0;
                };
                sf(-t / z)
            }
            Profile::ObjPert { c, s } => {
                let x = eps - c - 0.5 * s * s;
                if x < 0.0 { 1.0 } else { 2.0 * sf(x / s) }
            }
        }
    }

    /// An interval `[lo, hi]` of privacy-loss values outside which the loss has negligible
    /// mass (≤ ~1e-19 on each side); the discretisation handles the outside pessimistically
    /// anyway, so this choice affects accuracy only.
    pub(crate) fn range(&self) -> (f64, f64) {
        match *self {
            Profile::Gaussian { s } => {
                let mu = 0.5 * s * s;
                (mu - K_SD * s, mu + K_SD * s)
            }
            Profile::Laplace { r } => (-r, r),
            Profile::RandomizedResponse { eps } => (-eps, eps),
            Profile::PoissonRemove { z, q } => {
                let w = |o: f64| log_add((-q).ln_1p(), q.ln() + (2.0 * o - 1.0) / (2.0 * z * z));
                (w(-K_SD * z), w(1.0 + K_SD * z))
            }
            Profile::PoissonAdd { z, q } => {
                let w = |o: f64| -log_add((-q).ln_1p(), q.ln() + (2.0 * o - 1.0) / (2.0 * z * z));
                (w(K_SD * z), w(-K_SD * z))
            }
            Profile::ObjPert { c, s } => {
                let base = c + 0.5 * s * s;
                (base, base + K_SD * s)
            }
        }
    }
}

/// The output threshold `t = z²·ln((e^x − 1 + q)/q) + 1/2` of the Poisson-subsampled Gaussian
/// (the remove direction's loss exceeds `x` exactly when the output exceeds `t`; the add
/// direction uses `x = −ε`), or `None` when `e^x − 1 + q ≤ 0` (no output has that loss).
///
/// `ln(e^x − 1 + q)` is evaluated in log space, `x + ln(1 − (1 − q)e^{−x})` for `x > 700`, so it
/// stays finite for every finite `x` (the direct form, kept below 700 where it is the more
/// accurate one, overflows above `x ≈ 709`).
fn remove_threshold(z: f64, q: f64, x: f64) -> Option<f64> {
    let log_num = if x > 700.0 {
        x + (-(1.0 - q) * (-x).exp()).ln_1p()
    } else {
        let a = x.exp_m1() + q;
        if a <= 0.0 {
            return None;
        }
        a.ln()
    };
    Some(z * z * (log_num - q.ln()) + 0.5)
}

/// The dominating pairs of `m` under `rel`, as `(remove, add)` profiles (equal for symmetric
/// mechanisms).
pub(crate) fn profiles(m: &Mechanism, rel: Neighbouring) -> Result<(Profile, Profile)> {
    m.check_relation(rel, "pld")?;
    // Every ratio is rounded up by 8 ulps: the profiles grow with it, so the float error of the
    // divisions (and of `c`'s logarithm) can only make the answer larger. Without it, δ(ε) just
    // below a Laplace's `r` came out ~2e-9 (relative) under the truth.
    let f = rel.sum_sensitivity_factor() * UP;
    let sym = |p: Profile| Ok((p, p));
    match &m.kind {
        Kind::Gaussian { sigma, sensitivity } => sym(Profile::Gaussian {
            s: f * sensitivity / sigma,
        }),
        Kind::Laplace { scale, sensitivity } => sym(Profile::Laplace {
            r: f * sensitivity / scale,
        }),
        Kind::SubsampledGaussian {
            noise_multiplier,
            q,
            sampling,
        } => match sampling {
            _ if *q == 1.0 => sym(Profile::Gaussian {
                s: f / noise_multiplier,
            }),
            Sampling::Poisson => Ok((
                Profile::PoissonRemove {
                    z: *noise_multiplier / UP,
                    q: *q,
                },
                Profile::PoissonAdd {
                    z: *noise_multiplier / UP,
                    q: *q,
                },
            )),
            Sampling::WithoutReplacement { .. } => Err(Error::Unsupported {
                accountant: "pld",
                what: "sampling without replacement (use the rdp accountant)".into(),
            }),
        },
        Kind::PureDp { .. } | Kind::GammaBall { .. } => match m.pure_epsilon(rel) {
            Some(eps) => sym(Profile::RandomizedResponse { eps: eps * UP }),
            None => unreachable_pure(),
        },
        Kind::ObjPert(p) => sym(Profile::ObjPert {
            c: p.c() * UP,
            s: p.ratio() * UP,
        }),
        Kind::Amp { .. } => Err(Error::Unsupported {
            accountant: "pld",
            what: "amp as a single profile (it is composed of two)".into(),
        }),
        Kind::Zcdp { .. } => Err(Error::Unsupported {
            accountant: "pld",
            what: "a mechanism known only by its zCDP parameter".into(),
        }),
    }
}

fn unreachable_pure() -> Result<(Profile, Profile)> {
    Err(Error::Numerical(
        "pure-DP mechanism without an epsilon".into(),
    ))
}

/// The mechanism as a list of `(remove, add)` profile pairs composed together (AMP is
/// objective perturbation followed by a Gaussian on the output, paper 001 Alg. 1).
pub(crate) fn components(m: &Mechanism, rel: Neighbouring) -> Result<Vec<(Profile, Profile)>> {
    match &m.kind {
        Kind::Amp {
            objpert,
            tau,
            sigma_out,
        } => {
            m.check_relation(rel, "pld")?;
            let op = Profile::ObjPert {
                c: objpert.c() * UP,
                s: objpert.ratio() * UP,
            };
            // ‖θ̂ − θ^P‖ ≤ τ/λ, so the output Gaussian has sensitivity 2τ/λ (MATH §6).
            let g = Profile::Gaussian {
                s: 2.0 * tau / objpert.lambda / sigma_out * UP,
            };
            Ok(vec![(op, op), (g, g)])
        }
        _ => Ok(vec![profiles(m, rel)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ(ε) = P[ω > ε] − e^ε Q[ω > ε]; check the closed forms against a numerical
    /// integral of the tail: δ(ε) = ∫_ε^∞ e^{ε−t}·P[ω > t] dt.
    fn delta_by_tail(p: &Profile, eps: f64) -> f64 {
        let (_, hi) = p.range();
        let hi = hi.max(eps) + 1.0;
        let n = 200_000;
        let h = (hi - eps) / n as f64;
        let mut s = 0.0;
        for i in 0..=n {
            let t = eps + i as f64 * h;
            let w = if i == 0 || i == n { 0.5 } else { 1.0 };
            s += w * (eps - t).exp() * p.tail(t);
        }
        s * h
    }

    #[test]
    fn closed_forms_agree_with_the_tail_integral() {
        let ps = [
            Profile::Gaussian { s: 1.0 },
            Profile::Laplace { r: 1.0 },
            Profile::PoissonRemove { z: 1.0, q: 0.1 },
            Profile::PoissonAdd { z: 1.0, q: 0.1 },
            Profile::ObjPert { c: 0.1, s: 0.8 },
        ];
        for p in ps {
            for eps in [0.05, 0.3, 1.0] {
                let a = p.delta(eps);
                let b = delta_by_tail(&p, eps);
                assert!(
                    (a - b).abs() < 1e-5 * b.max(1e-6),
                    "{p:?} eps={eps}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn pure_dp_profile_has_the_right_weights() {
        let p = Profile::RandomizedResponse { eps: 1.0 };
        let want = (1f64.exp() - 1.0) / (1f64.exp() + 1.0);
        assert!((p.delta(0.0) - want).abs() < 1e-15);
    }
}
