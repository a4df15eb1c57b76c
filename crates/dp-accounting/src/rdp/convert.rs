//! From a Rényi-DP curve to (ε, δ): three conversions, the best reported (MATH §3).

use crate::special::log_expm1;

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
                // ln(1 + e^{a−l}) = log_add(a, l) − l, without the subtraction: near α = 1
                // the division by α − 1 magnified its rounding (an ulp of |l| over 2e-9 gave
                // ε = −2e-6 for ρ = 5e-19 at δ = 1e-12, reported as 0).
                let (a, l) = (log_expm1(am1 * r), (alpha * delta).ln());
                let gap = if a <= l {
                    (a - l).exp().ln_1p()
                } else {
                    (a - l) + (l - a).exp().ln_1p()
                };
                gap / am1
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
    /// The order that attained it (fractional after the continuous refinement).
    pub order: f64,
    /// The conversion that attained it.
    pub conversion: Conversion,
}

/// The best δ(ε) over orders and conversions, with where it was attained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RdpDelta {
    /// The δ (in [0, 1], rounded up).
    pub delta: f64,
    /// The order that attained it, or `None` when no order beats the trivial δ = 1.
    pub order: Option<f64>,
    /// The conversion that attained it (`None` with `order`).
    pub conversion: Option<Conversion>,
}

/// What is minimised over orders: ε at a target δ, or `ln δ` at a target ε.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Objective {
    /// ε(δ).
    Epsilon(f64),
    /// ln δ(ε).
    LogDelta(f64),
}

impl Objective {
    /// The best value over the conversions at order `alpha` with RDP value `r` (`None` when
    /// `r` is not finite or no conversion gives a number).
    pub(crate) fn best(self, alpha: f64, r: f64) -> Option<(f64, Conversion)> {
        if !r.is_finite() {
            return None;
        }
        let mut best: Option<(f64, Conversion)> = None;
        for c in Conversion::ALL {
            let v = match self {
                Objective::Epsilon(delta) => c.epsilon(alpha, r, delta),
                Objective::LogDelta(eps) => c.log_delta(alpha, r, eps),
            };
            if !v.is_nan() && best.is_none_or(|b| v < b.0) {
                best = Some((v, c));
            }
        }
        best
    }
}

/// The minimum of `objective` over the grid `(orders, rdp)`: `(value, order, conversion)`.
pub(crate) fn grid_minimum(
    orders: &[f64],
    rdp: &[f64],
    objective: Objective,
) -> Option<(f64, f64, Conversion)> {
    let mut best: Option<(f64, f64, Conversion)> = None;
    for (&a, &r) in orders.iter().zip(rdp) {
        if let Some((v, c)) = objective.best(a, r)
            && best.is_none_or(|b| v < b.0)
        {
            best = Some((v, a, c));
        }
    }
    best
}

/// Iteration cap of [`golden_minimum`] (the bracket shrinks by 0.618 per step).
const GOLDEN_STEPS: usize = 80;

/// Golden-section search for a minimum of `f` on `[a, b]`: the best point evaluated,
/// `(x, f(x))`. Never returns a value that was not computed at the returned `x`; at most
/// [`GOLDEN_STEPS`] + 2 evaluations; stops when the bracket is narrower than `rel_tol·|b|`.
pub(crate) fn golden_minimum<F: FnMut(f64) -> f64>(
    mut a: f64,
    mut b: f64,
    rel_tol: f64,
    mut f: F,
) -> (f64, f64) {
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    let mut best = if fc <= fd { (c, fc) } else { (d, fd) };
    for _ in 0..GOLDEN_STEPS {
        if b - a <= rel_tol * b.abs() {
            break;
        }
        // NaN compares false: it moves the bracket towards the other point, never wins.
        if fc < fd || fd.is_nan() {
            b = d;
            (d, fd) = (c, fc);
            c = b - phi * (b - a);
            fc = f(c);
            if fc < best.1 {
                best = (c, fc);
            }
        } else {
            a = c;
            (c, fc) = (d, fd);
            d = a + phi * (b - a);
            fd = f(d);
            if fd < best.1 {
                best = (d, fd);
            }
        }
    }
    best
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
    let (x, v) = golden_minimum(bx - 0.25, bx + 0.25, 1e-15, g);
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
    fn golden_minimum_finds_interior_minimum_and_returns_an_evaluated_point() {
        let f = |x: f64| (x - 2.5).powi(2) + 1.0;
        let (x, v) = golden_minimum(1.0, 4.0, 1e-12, f);
        assert!((x - 2.5).abs() < 1e-6, "{x}");
        assert_eq!(v, f(x));
        // Minimum at an end: approaches it from inside.
        let (x, _) = golden_minimum(1.0, 4.0, 1e-12, |x| x);
        assert!(x > 1.0 && x < 1.0 + 1e-6, "{x}");
        // NaN and +∞ never win.
        let (x, v) = golden_minimum(1.0, 4.0, 1e-9, |x| if x < 2.0 { f64::NAN } else { x });
        assert!(x >= 2.0 && v == x);
    }
}
