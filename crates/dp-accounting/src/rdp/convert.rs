//! From a Rényi-DP curve to (ε, δ): three conversions, the best reported (MATH §3).

use crate::error::{Error, Result};
use crate::special::{log_add, log_expm1};

/// A conversion from RDP to approximate DP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conversion {
    /// Mironov 2017, Prop. 3: `ε = ε(α) + log(1/δ)/(α−1)`.
    Classic,
    /// Canonne, Kamath, Steinke 2020 (Prop. 12) / Balle et al. 2020 (Thm 21), as in
    /// dp_accounting: `ε = ε(α) + log((α−1)/α) − (log δ + log α)/(α−1)`.
    Cks20,
    /// Asoodeh, Liao, Calmon, Kosut, Sankar 2021, Lemma 1:
    /// `ε = log((e^{(α−1)ε(α)} − 1)/(αδ) + 1)/(α−1)`.
    Asoodeh,
}

impl Conversion {
    /// All conversions, in the order they are tried.
    pub const ALL: [Conversion; 3] = [Conversion::Classic, Conversion::Cks20, Conversion::Asoodeh];

    /// Name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Conversion::Classic => "classic",
            Conversion::Cks20 => "cks20",
            Conversion::Asoodeh => "asoodeh",
        }
    }

    /// ε at order `alpha` with RDP value `r` and target `delta` (may be negative: clamp).
    pub(crate) fn epsilon(self, alpha: f64, r: f64, delta: f64) -> f64 {
        let am1 = alpha - 1.0;
        match self {
            Conversion::Classic => r - delta.ln() / am1,
            Conversion::Cks20 => r + (-1.0 / alpha).ln_1p() - (delta.ln() + alpha.ln()) / am1,
            Conversion::Asoodeh => {
                if r <= 0.0 {
                    return 0.0;
                }
                let l = (alpha * delta).ln();
                (log_add(log_expm1(am1 * r), l) - l) / am1
            }
        }
    }

    /// `ln δ` at order `alpha`, RDP value `r`, target `eps > 0`.
    pub(crate) fn log_delta(self, alpha: f64, r: f64, eps: f64) -> f64 {
        let am1 = alpha - 1.0;
        match self {
            Conversion::Classic => am1 * (r - eps),
            Conversion::Cks20 => am1 * (r - eps + (-1.0 / alpha).ln_1p()) - alpha.ln(),
            Conversion::Asoodeh => {
                if r <= 0.0 {
                    return f64::NEG_INFINITY;
                }
                if eps <= 0.0 {
                    return 0.0;
                }
                log_expm1(am1 * r) - alpha.ln() - log_expm1(am1 * eps)
            }
        }
    }
}

/// The best ε over orders and conversions, with where it was attained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RdpEpsilon {
    /// The ε (≥ 0, rounded up).
    pub epsilon: f64,
    /// The order that attained it.
    pub order: f64,
    /// The conversion that attained it.
    pub conversion: Conversion,
}

/// Minimises ε over the finite entries of `(orders, rdp)` and over the conversions.
pub(crate) fn best_epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> Result<RdpEpsilon> {
    let mut best: Option<RdpEpsilon> = None;
    for (&a, &r) in orders.iter().zip(rdp) {
        if !r.is_finite() {
            continue;
        }
        for c in Conversion::ALL {
            let e = c.epsilon(a, r, delta);
            if e.is_nan() {
                continue;
            }
            if best.is_none_or(|b| e < b.epsilon) {
                best = Some(RdpEpsilon {
                    epsilon: e,
                    order: a,
                    conversion: c,
                });
            }
        }
    }
    let mut b = best.ok_or_else(|| {
        Error::OutOfRange("no RDP order has a finite value: epsilon is unbounded".into())
    })?;
    b.epsilon = crate::gaussian::round_up_eps(b.epsilon);
    Ok(b)
}

/// The best δ(ε) over orders and conversions (clamped to 1, rounded up).
pub(crate) fn best_delta(orders: &[f64], rdp: &[f64], eps: f64) -> f64 {
    let mut best = 0.0f64; // ln 1
    for (&a, &r) in orders.iter().zip(rdp) {
        if !r.is_finite() {
            continue;
        }
        for c in Conversion::ALL {
            let l = c.log_delta(a, r, eps);
            if !l.is_nan() {
                best = best.min(l);
            }
        }
    }
    crate::gaussian::round_up(best.exp())
}

/// Minimises a function of the order over real `α > 1` (for curves known in closed form,
/// e.g. zCDP `ε(α) = ρα`): golden-section search on `log(α − 1)` after a coarse scan.
pub(crate) fn minimise_over_order<F: Fn(f64) -> f64>(f: F) -> (f64, f64) {
    let g = |x: f64| f(1.0 + x.exp());
    let (mut bx, mut bv) = (0.0, f64::INFINITY);
    let mut x = -20.0;
    while x <= 12.0 {
        let v = g(x);
        if v < bv {
            bv = v;
            bx = x;
        }
        x += 0.25;
    }
    let (mut a, mut b) = (bx - 0.25, bx + 0.25);
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    for _ in 0..100 {
        let c = b - phi * (b - a);
        let d = a + phi * (b - a);
        if g(c) < g(d) {
            b = d;
        } else {
            a = c;
        }
    }
    let x = 0.5 * (a + b);
    let v = g(x);
    if v < bv {
        (1.0 + x.exp(), v)
    } else {
        (1.0 + bx.exp(), bv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_of_zcdp_match_math_md() {
        // MATH §3: ρ = 0.1, δ = 1e-5: Asoodeh 2.0115, CKS20 1.9142.
        for (c, want) in [(Conversion::Asoodeh, 2.0115), (Conversion::Cks20, 1.9142)] {
            let (_, e) = minimise_over_order(|a| c.epsilon(a, 0.1 * a, 1e-5));
            assert!((e - want).abs() < 1e-4, "{c:?}: {e}");
        }
    }

    #[test]
    fn delta_and_epsilon_are_consistent() {
        let orders: Vec<f64> = (2..64).map(f64::from).collect();
        let rdp: Vec<f64> = orders.iter().map(|a| 0.05 * a).collect();
        let e = best_epsilon(&orders, &rdp, 1e-6).unwrap();
        let d = best_delta(&orders, &rdp, e.epsilon);
        assert!(d <= 1e-6 * (1.0 + 1e-9), "{d}");
    }
}
