//! GLM losses `φ(z, y)` as functions of the margin `z = ⟨θ, x⟩` for a fixed label `y`
//! (MATH §11).
//!
//! The per-example gradient of `ℓ(θ; x, y) = φ(⟨θ, x⟩, y)` is `φ'(z, y)·x`, so every constant
//! here is *per unit `‖x‖`*: a loss with Lipschitz constant `L` has per-example gradients of
//! norm `≤ L‖x‖`, and one with smoothness `β` has per-example Hessians `φ''·xxᵀ` with top
//! eigenvalue `≤ β‖x‖²`.

use crate::error::{Result, ensure};

/// Default smoothing width `h` of the Huber-SVM loss (the value used by Iyengar et al. 2019's
/// reference code, `DEFAULT_H = 0.1`).
pub const DEFAULT_HUBER_SVM_H: f64 = 0.1;

/// The labels a loss accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelDomain {
    /// Binary labels `y ∈ {−1, +1}`.
    Signs,
    /// Any finite real `y`.
    Real,
}

impl LabelDomain {
    /// Whether `y` is in the domain.
    pub fn contains(self, y: f64) -> bool {
        match self {
            LabelDomain::Signs => y == 1.0 || y == -1.0,
            LabelDomain::Real => y.is_finite(),
        }
    }

    /// The domain written as a set, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            LabelDomain::Signs => "{-1, +1}",
            LabelDomain::Real => "finite reals",
        }
    }
}

/// A GLM loss `φ(z, y)` with its first two derivatives in `z`.
///
/// Definitions (with `σ(t) = 1/(1 + e^{−t})` and the margin `m = y·z` for the classification
/// losses):
///
/// | loss | `φ(z, y)` | `φ'` | `φ''` | Lipschitz | `β = sup φ''` | convex |
/// |---|---|---|---|---|---|---|
/// | [`Logistic`](Loss::Logistic) | `log(1 + e^{−m})` | `−y σ(−m)` | `σ(z)σ(−z)` | 1 | 1/4 | yes |
/// | [`Squared`](Loss::Squared) | `(z − y)²/2` | `z − y` | 1 | unbounded | 1 | yes |
/// | [`Huber`](Loss::Huber) | `r²/2` if `\|r\| ≤ h`, else `h(\|r\| − h/2)`, `r = z − y` | `clamp(r, −h, h)` | `1[\|r\| ≤ h]` | `h` | 1 | yes |
/// | [`HuberSvm`](Loss::HuberSvm) | `0` if `m > 1 + h`; `(1 + h − m)²/(4h)` if `\|1 − m\| ≤ h`; `1 − m` if `m < 1 − h` | `y·dφ/dm` | `1/(2h)` on the middle piece | 1 | `1/(2h)` | yes |
/// | [`Savage`](Loss::Savage) | `σ(−m)² = 1/(1 + e^{m})²` | `−2y σ(−m)² σ(m)` | `2σ(−m)²σ(m)(2 − 3σ(−m))` | 8/27 | ≈ 0.15406 | no |
///
/// The Huber-SVM loss is the smoothed hinge of Iyengar et al. 2019 ("Towards practical
/// differentially private convex optimization", and their reference code
/// `lossfunctions/huber_svm.py`): a hinge `max(0, 1 − m)` whose kink at `m = 1` is replaced
/// by a quadratic on `[1 − h, 1 + h]`. It is continuously differentiable with a piecewise
/// constant second derivative, hence `1/(2h)`-smooth. The Huber loss is the classic one
/// (Huber 1964) with threshold `h`: quadratic near the label, linear beyond `h`. At the
/// pieces' junctions `φ''` takes the middle piece's value.
///
/// The Savage loss is smooth, bounded and non-convex: for the non-convex GLM results of
/// paper 000 §4. Its constants are exact: `|φ'| = 2s²(1 − s)` with `s = σ(−m)` peaks at
/// `s = 2/3` (`8/27`), and `φ''` peaks at `s = (15 − √33)/24`.
///
/// The classification losses are defined for any real `y` by the formulas above, but their
/// constants hold for `y ∈ {−1, +1}` only; [`Dataset::check_labels`](crate::Dataset) enforces
/// the domain.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Loss {
    /// Logistic loss, `y ∈ {−1, +1}`.
    Logistic,
    /// Squared loss `(z − y)²/2`, any real `y`.
    Squared,
    /// Huber loss with threshold `h > 0`, any real `y`.
    Huber {
        /// Threshold between the quadratic and the linear piece.
        h: f64,
    },
    /// Huber-SVM (smoothed hinge) of Iyengar et al. 2019 with smoothing width `h > 0`,
    /// `y ∈ {−1, +1}`.
    HuberSvm {
        /// Half-width of the quadratic piece around the hinge's kink.
        h: f64,
    },
    /// Savage loss `1/(1 + e^{yz})²` (non-convex), `y ∈ {−1, +1}`.
    Savage,
}

/// `σ(t) = 1/(1 + e^{−t})`, without overflow for any `t`: `1/(1 + e^{−t})` for `t ≥ 0` and
/// `e^t/(1 + e^t)` below, as one expression (`e = e^{−|t|}` either way; only the numerator is
/// chosen), so that margins of random signs do not cost a mispredicted branch each.
#[inline]
pub(crate) fn sigmoid(t: f64) -> f64 {
    let e = (-t.abs()).exp();
    let numerator = if t >= 0.0 { 1.0 } else { e };
    numerator / (1.0 + e)
}

/// `log(1 + e^t)`, without overflow for any `t`.
#[inline]
pub(crate) fn log1p_exp(t: f64) -> f64 {
    if t > 0.0 {
        t + (-t).exp().ln_1p()
    } else {
        t.exp().ln_1p()
    }
}

impl Loss {
    /// The Huber loss with threshold `h`, checked (`h` finite and `> 0`).
    pub fn huber(h: f64) -> Result<Self> {
        let loss = Loss::Huber { h };
        loss.validate()?;
        Ok(loss)
    }

    /// The Huber-SVM loss with smoothing width `h`, checked (`h` finite and `> 0`).
    pub fn huber_svm(h: f64) -> Result<Self> {
        let loss = Loss::HuberSvm { h };
        loss.validate()?;
        Ok(loss)
    }

    /// Checks the loss's parameters (`h` finite and `> 0` for Huber and Huber-SVM).
    pub fn validate(&self) -> Result<()> {
        match *self {
            Loss::Huber { h } | Loss::HuberSvm { h } => {
                ensure(h > 0.0 && h.is_finite(), "h", h, "must be finite and > 0")
            }
            Loss::Logistic | Loss::Squared | Loss::Savage => Ok(()),
        }
    }

    /// Short name (`logistic`, `squared`, `huber`, `huber-svm`, `savage`).
    pub fn name(&self) -> &'static str {
        match self {
            Loss::Logistic => "logistic",
            Loss::Squared => "squared",
            Loss::Huber { .. } => "huber",
            Loss::HuberSvm { .. } => "huber-svm",
            Loss::Savage => "savage",
        }
    }

    /// The labels the loss accepts.
    pub fn label_domain(&self) -> LabelDomain {
        match self {
            Loss::Logistic | Loss::HuberSvm { .. } | Loss::Savage => LabelDomain::Signs,
            Loss::Squared | Loss::Huber { .. } => LabelDomain::Real,
        }
    }

    /// Whether `φ(·, y)` is convex for every label in the domain.
    pub fn is_convex(&self) -> bool {
        !matches!(self, Loss::Savage)
    }

    /// `sup_z |φ'(z, y)|` over labels in the domain, per unit `‖x‖` (so per-example gradients
    /// have norm `≤ L‖x‖`); `None` when unbounded (squared loss).
    pub fn lipschitz(&self) -> Option<f64> {
        match *self {
            Loss::Logistic | Loss::HuberSvm { .. } => Some(1.0),
            Loss::Squared => None,
            Loss::Huber { h } => Some(h),
            Loss::Savage => Some(8.0 / 27.0),
        }
    }

    /// Smoothness `β = sup_z |φ''(z, y)|` over labels in the domain, per unit `‖x‖²` (so
    /// per-example Hessians have top eigenvalue `≤ β‖x‖²`).
    pub fn smoothness(&self) -> f64 {
        match *self {
            Loss::Logistic => 0.25,
            Loss::Squared | Loss::Huber { .. } => 1.0,
            Loss::HuberSvm { h } => 0.5 / h,
            Loss::Savage => {
                // φ'' = 2s²(1 − s)(2 − 3s) on s ∈ (0, 1) peaks where 12s² − 15s + 4 = 0; the
                // smaller root gives the maximum, which exceeds |minimum| (≈ 0.1202).
                let s = (15.0 - 33f64.sqrt()) / 24.0;
                2.0 * s * s * (1.0 - s) * (2.0 - 3.0 * s)
            }
        }
    }

    /// `φ(z, y)`.
    #[inline]
    pub fn value(&self, z: f64, y: f64) -> f64 {
        match *self {
            Loss::Logistic => log1p_exp(-y * z),
            Loss::Squared => 0.5 * (z - y) * (z - y),
            Loss::Huber { h } => {
                let r = (z - y).abs();
                if r <= h {
                    0.5 * r * r
                } else {
                    h * (r - 0.5 * h)
                }
            }
            Loss::HuberSvm { h } => {
                let m = y * z;
                if m > 1.0 + h {
                    0.0
                } else if m < 1.0 - h {
                    1.0 - m
                } else {
                    let u = 1.0 + h - m;
                    u * u / (4.0 * h)
                }
            }
            Loss::Savage => {
                let s = sigmoid(-y * z);
                s * s
            }
        }
    }

    /// `φ'(z, y) = ∂φ/∂z`.
    #[inline]
    pub fn deriv(&self, z: f64, y: f64) -> f64 {
        match *self {
            Loss::Logistic => -y * sigmoid(-y * z),
            Loss::Squared => z - y,
            Loss::Huber { h } => (z - y).max(-h).min(h),
            Loss::HuberSvm { h } => {
                let m = y * z;
                if m > 1.0 + h {
                    0.0
                } else if m < 1.0 - h {
                    -y
                } else {
                    // min(1): keep |φ'| ≤ 1 under rounding at the junction m = 1 − h.
                    -y * ((1.0 + h - m) / (2.0 * h)).min(1.0)
                }
            }
            Loss::Savage => {
                let m = y * z;
                let s = sigmoid(-m);
                -2.0 * y * s * s * sigmoid(m)
            }
        }
    }

    /// `φ''(z, y) = ∂²φ/∂z²`.
    #[inline]
    pub fn deriv2(&self, z: f64, y: f64) -> f64 {
        match *self {
            Loss::Logistic => sigmoid(z) * sigmoid(-z),
            Loss::Squared => 1.0,
            Loss::Huber { h } => {
                if (z - y).abs() <= h {
                    1.0
                } else {
                    0.0
                }
            }
            Loss::HuberSvm { h } => {
                let m = y * z;
                if (1.0 - m).abs() <= h {
                    y * y / (2.0 * h)
                } else {
                    0.0
                }
            }
            Loss::Savage => {
                let m = y * z;
                let s = sigmoid(-m);
                2.0 * y * y * s * s * sigmoid(m) * (2.0 - 3.0 * s)
            }
        }
    }

    /// `φ(z, y) − φ(0, y)`, computed without overflow where both values are huge but their
    /// difference is not (a label near `f64::MAX`: `φ(0, y) = y²/2` is `+∞` for the squared
    /// loss, yet `φ(z, y) − φ(0, y) = z(z/2 − y)` is finite for moderate `z`).
    pub(crate) fn change(&self, z: f64, y: f64) -> f64 {
        match *self {
            Loss::Squared => z * (0.5 * z - y),
            Loss::Huber { h } => {
                // Both on the same linear piece: h(|z − y| − |y|) = ±h·z.
                let (a, b) = (z - y, -y);
                if a > h && b > h {
                    h * z
                } else if a < -h && b < -h {
                    -h * z
                } else {
                    self.value(z, y) - self.value(0.0, y)
                }
            }
            _ => self.value(z, y) - self.value(0.0, y),
        }
    }

    /// `(φ(z, y), φ'(z, y))` together (one exponential for the logistic loss).
    #[inline]
    pub fn value_deriv(&self, z: f64, y: f64) -> (f64, f64) {
        match *self {
            Loss::Logistic => {
                let m = y * z;
                let e = (-m.abs()).exp();
                // log(1 + e^{−m}) = max(−m, 0) + log(1 + e^{−|m|}); σ(−m) from the same e.
                let value = (-m).max(0.0) + e.ln_1p();
                let s = if m >= 0.0 {
                    e / (1.0 + e)
                } else {
                    1.0 / (1.0 + e)
                };
                (value, -y * s)
            }
            _ => (self.value(z, y), self.deriv(z, y)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-expression sigmoid is the two-branch one (`1/(1 + e^{−t})` for `t ≥ 0`,
    /// `e^t/(1 + e^t)` below) bit for bit, signed zeros, infinities, NaN and extremes included.
    #[test]
    fn sigmoid_is_the_two_branch_one_bit_for_bit() {
        let branches = |t: f64| {
            if t >= 0.0 {
                1.0 / (1.0 + (-t).exp())
            } else {
                let e = t.exp();
                e / (1.0 + e)
            }
        };
        let special = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
        ];
        let grid = (-4000..=4000).map(|k| f64::from(k) * 0.01 + 1e-3 * f64::from(k % 7));
        let tiny = [
            1e-300, -1e-300, 5e-324, -5e-324, 745.2, -745.2, 709.8, -709.8,
        ];
        for t in special.into_iter().chain(grid).chain(tiny) {
            assert_eq!(sigmoid(t).to_bits(), branches(t).to_bits(), "t = {t:e}");
        }
        assert!(sigmoid(f64::NAN).is_nan());
    }

    #[test]
    fn constants_and_domains() {
        assert_eq!(Loss::Logistic.smoothness(), 0.25);
        assert_eq!(Loss::huber_svm(0.1).unwrap().smoothness(), 5.0);
        assert!((Loss::Savage.smoothness() - 0.154_058_570_121_350_5).abs() < 1e-15);
        assert!(Loss::huber(0.0).is_err());
        assert!(Loss::huber_svm(f64::NAN).is_err());
        assert!(LabelDomain::Signs.contains(-1.0) && !LabelDomain::Signs.contains(0.0));
        assert!(LabelDomain::Real.contains(3.5) && !LabelDomain::Real.contains(f64::NAN));
        assert!(!Loss::Savage.is_convex() && Loss::Logistic.is_convex());
    }

    #[test]
    fn logistic_is_stable_in_the_tails() {
        let l = Loss::Logistic;
        assert_eq!(l.value(1000.0, 1.0), 0.0);
        assert!((l.value(-1000.0, 1.0) - 1000.0).abs() < 1e-12);
        assert!((l.value(0.0, 1.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(l.deriv(-1000.0, 1.0), -1.0);
        assert_eq!(l.deriv2(1000.0, 1.0), 0.0);
        let (v, d) = l.value_deriv(-1000.0, -1.0);
        assert_eq!((v, d), (0.0, 0.0));
        for z in [-40.0, -3.0, -0.1, 0.0, 0.2, 5.0, 40.0] {
            for y in [-1.0, 1.0] {
                let (v, d) = l.value_deriv(z, y);
                assert!((v - l.value(z, y)).abs() <= 1e-15 * v.abs().max(1.0));
                assert!((d - l.deriv(z, y)).abs() <= 1e-15);
            }
        }
    }

    #[test]
    fn huber_svm_matches_reference_pieces() {
        // Iyengar et al.'s code: middle piece (1 − m)²/(4h) + (1 − m)/2 + h/4.
        let h = 0.1;
        let l = Loss::HuberSvm { h };
        for m in [0.95, 1.0, 1.05] {
            let u = 1.0 - m;
            assert!((l.value(m, 1.0) - (u * u / (4.0 * h) + u / 2.0 + h / 4.0)).abs() < 1e-15);
        }
        assert_eq!(l.value(2.0, 1.0), 0.0);
        assert!((l.value(-1.0, 1.0) - 2.0).abs() < 1e-15);
        assert!((l.value(1.0, -1.0) - 2.0).abs() < 1e-15);
    }
}
