//! The clipping lemma (MATH §5; paper 000, Lemma 5.1): the loss clipped gradient descent
//! really optimises.
//!
//! For a convex `f = φ(·, y)`, a clip norm `C > 0` and a row `x ≠ 0`, let `r = C/‖x‖`,
//! `y1 = sup{z : f'(z) < −r}` (or `−∞`), `y2 = inf{z : f'(z) > r}` (or `+∞`), and
//!
//! ```text
//! g(z) = f(y1) − r(z − y1)   for z < y1,
//!        f(z)                for y1 ≤ z ≤ y2,
//!        f(y2) + r(z − y2)   for z > y2.
//! ```
//!
//! Then `g` is convex, `g'(z) = clamp(f'(z), −r, r)`, and `∇_θ g(⟨θ, x⟩) = clip_C(∇_θ f(⟨θ, x⟩))`:
//! per-example clipping at `C` is exact gradient descent on the Huberised loss `g`. Break
//! points are closed forms for the logistic and squared losses and found by bisection on the
//! monotone `f'` for the other convex losses.

use crate::error::{Error, Result, ensure};
use crate::loss::Loss;

/// A convex loss whose per-example gradients are clipped to norm `≤ clip`, as a loss in its
/// own right (the clipping lemma).
///
/// The clipped loss of one example depends on its label and on `‖x‖` (through
/// `r = clip/‖x‖`); [`ClippedLoss::for_example`] fixes both and returns the scalar loss `g`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClippedLoss {
    loss: Loss,
    clip: f64,
}

impl ClippedLoss {
    /// Clips `loss` at gradient norm `clip`.
    ///
    /// # Errors
    /// [`Error::NotConvex`] for a non-convex loss (the lemma needs a monotone `φ'`),
    /// [`Error::InvalidHyperParameter`] if `clip` is not finite and `> 0` or the loss's own
    /// parameters are invalid.
    pub fn new(loss: Loss, clip: f64) -> Result<Self> {
        loss.validate()?;
        if !loss.is_convex() {
            return Err(Error::NotConvex {
                loss: loss.name(),
                what: "the clipping lemma",
            });
        }
        ensure(
            clip > 0.0 && clip.is_finite(),
            "clip",
            clip,
            "must be finite and > 0",
        )?;
        Ok(Self { loss, clip })
    }

    /// The underlying loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// The clip norm `C`.
    pub fn clip(&self) -> f64 {
        self.clip
    }

    /// Bound on every per-example gradient norm: `C`, whatever the row.
    pub fn gradient_bound(&self) -> f64 {
        self.clip
    }

    /// Smoothness per unit `‖x‖²`: `sup g'' ≤ sup φ''` (clipping only flattens `g`).
    pub fn smoothness(&self) -> f64 {
        self.loss.smoothness()
    }

    /// The clipped scalar loss `g` of an example with label `y` and row norm `x_norm`.
    ///
    /// `x_norm = 0` gives `r = ∞` and `g = f` (the example's gradient is zero anyway);
    /// `x_norm = ∞` gives `r = 0` and a constant `g`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] if `y` is not finite or `x_norm` is negative or NaN.
    pub fn for_example(&self, y: f64, x_norm: f64) -> Result<ClippedExampleLoss> {
        ensure(y.is_finite(), "y", y, "must be finite")?;
        ensure(x_norm >= 0.0, "x_norm", x_norm, "must be >= 0")?;
        let r = self.clip / x_norm;
        let (y1, y2) = break_points(&self.loss, y, r);
        let f_y1 = if y1 == f64::NEG_INFINITY {
            0.0
        } else {
            self.loss.value(y1, y)
        };
        let f_y2 = if y2 == f64::INFINITY {
            0.0
        } else {
            self.loss.value(y2, y)
        };
        Ok(ClippedExampleLoss {
            loss: self.loss,
            y,
            r,
            y1,
            y2,
            f_y1,
            f_y2,
        })
    }

    /// `g(z)` for label `y` and row norm `x_norm` (computes the break points on each call;
    /// use [`ClippedLoss::for_example`] to evaluate one example many times).
    ///
    /// # Errors
    /// As [`ClippedLoss::for_example`].
    pub fn value(&self, z: f64, y: f64, x_norm: f64) -> Result<f64> {
        Ok(self.for_example(y, x_norm)?.value(z))
    }

    /// `g'(z)` for label `y` and row norm `x_norm`.
    ///
    /// # Errors
    /// As [`ClippedLoss::for_example`].
    pub fn deriv(&self, z: f64, y: f64, x_norm: f64) -> Result<f64> {
        Ok(self.for_example(y, x_norm)?.deriv(z))
    }
}

/// The clipped loss `g` of one example (fixed label and row norm): a convex scalar loss with
/// `|g'| ≤ r = C/‖x‖`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClippedExampleLoss {
    loss: Loss,
    y: f64,
    r: f64,
    y1: f64,
    y2: f64,
    f_y1: f64,
    f_y2: f64,
}

impl ClippedExampleLoss {
    /// `r = C/‖x‖`, the bound on `|g'|`.
    pub fn radius(&self) -> f64 {
        self.r
    }

    /// The break points `(y1, y2)` (possibly infinite).
    pub fn break_points(&self) -> (f64, f64) {
        (self.y1, self.y2)
    }

    /// The label.
    pub fn label(&self) -> f64 {
        self.y
    }

    /// `g(z)`.
    #[inline]
    pub fn value(&self, z: f64) -> f64 {
        if z < self.y1 {
            // r = 0 (an infinite row) makes g flat; avoid 0·∞ when y1 = +∞.
            if self.r == 0.0 {
                self.f_y1
            } else {
                self.f_y1 + self.r * (self.y1 - z)
            }
        } else if z > self.y2 {
            if self.r == 0.0 {
                self.f_y2
            } else {
                self.f_y2 + self.r * (z - self.y2)
            }
        } else {
            self.loss.value(z, self.y)
        }
    }

    /// `g(z) − g(0)`, without overflow when `z` and 0 lie on the same piece of `g` (a label
    /// near `f64::MAX` puts both on a linear piece, where the difference is `∓r·z` although
    /// each value is beyond `f64::MAX`).
    pub(crate) fn change(&self, z: f64) -> f64 {
        let linear = |slope: f64| if self.r == 0.0 { 0.0 } else { slope * z };
        if z < self.y1 && 0.0 < self.y1 {
            linear(-self.r)
        } else if z > self.y2 && 0.0 > self.y2 {
            linear(self.r)
        } else if (self.y1..=self.y2).contains(&z) && (self.y1..=self.y2).contains(&0.0) {
            self.loss.change(z, self.y)
        } else {
            self.value(z) - self.value(0.0)
        }
    }

    /// `g'(z)`: `−r` left of `y1`, `f'(z)` on `[y1, y2]`, `+r` right of `y2` (equal to
    /// `clamp(f'(z), −r, r)`).
    #[inline]
    pub fn deriv(&self, z: f64) -> f64 {
        if z < self.y1 {
            -self.r
        } else if z > self.y2 {
            self.r
        } else {
            self.loss.deriv(z, self.y)
        }
    }

    /// `(g(z), g'(z))`.
    #[inline]
    pub fn value_deriv(&self, z: f64) -> (f64, f64) {
        if z < self.y1 || z > self.y2 {
            (self.value(z), self.deriv(z))
        } else {
            self.loss.value_deriv(z, self.y)
        }
    }

    /// `g''(z)`: `f''(z)` on `[y1, y2]`, 0 outside.
    #[inline]
    pub fn deriv2(&self, z: f64) -> f64 {
        if z < self.y1 || z > self.y2 {
            0.0
        } else {
            self.loss.deriv2(z, self.y)
        }
    }
}

/// `(y1, y2)` for a convex `loss`, label `y` and slope bound `r ≥ 0` (`r = ∞`: no clipping).
fn break_points(loss: &Loss, y: f64, r: f64) -> (f64, f64) {
    if r == f64::INFINITY {
        return (f64::NEG_INFINITY, f64::INFINITY);
    }
    match *loss {
        Loss::Logistic => logistic_break_points(y, r),
        Loss::Squared => (y - r, y + r),
        _ => {
            let d = |z: f64| loss.deriv(z, y);
            let y1 = lower_break(d, r);
            // y2 = inf{z : f'(z) > r} = −sup{u : −f'(−u) < −r}, and u ↦ −f'(−u) is monotone.
            let y2 = -lower_break(|u: f64| -d(-u), r);
            (y1, y2)
        }
    }
}

/// Closed-form break points of the logistic loss `log(1 + e^{−yz})`, whose derivative
/// `−yσ(−yz)` ranges over `(−y, 0)` for `y > 0` and `(0, |y|)` for `y < 0`. For `y = ±1`
/// this is MATH §5: `y1 = log(1/r − 1)` for `y = +1`, `y2 = −log(1/r − 1)` for `y = −1`,
/// active only when `r < 1`.
fn logistic_break_points(y: f64, r: f64) -> (f64, f64) {
    let a = y.abs();
    if r >= a {
        // |f'| < |y| ≤ r everywhere (also covers y = 0).
        return (f64::NEG_INFINITY, f64::INFINITY);
    }
    // Solve a·σ(−a·u) = r for u = sign(y)·z: u* = log(a/r − 1)/a (u* = +∞ when r = 0).
    let u = (a / r - 1.0).ln() / a;
    if y > 0.0 {
        (u, f64::INFINITY)
    } else {
        (f64::NEG_INFINITY, -u)
    }
}

/// `sup{z : d(z) < −r}` for a non-decreasing `d`, by bracketing (doubling steps from 0) and
/// bisection to full precision. `−∞` when the set is empty, `+∞` when it is everything.
fn lower_break(d: impl Fn(f64) -> f64, r: f64) -> f64 {
    let inside = |z: f64| d(z) < -r;
    // The set is a left interval (d is monotone): settle the empty and full cases at the
    // ends of the float range, so that the doubling below always terminates at a break.
    if !inside(-f64::MAX) {
        return f64::NEG_INFINITY;
    }
    if inside(f64::MAX) {
        return f64::INFINITY;
    }
    // Bracket: lo inside, hi outside, lo < hi (doubling away from 0, capped at the ends of
    // the float range, where the checks above fix the answer).
    let (mut lo, mut hi);
    if inside(0.0) {
        lo = 0.0;
        hi = 1.0;
        while inside(hi) {
            lo = hi;
            hi = (2.0 * hi).min(f64::MAX);
        }
    } else {
        hi = 0.0;
        lo = -1.0;
        while !inside(lo) {
            hi = lo;
            lo = (2.0 * lo).max(-f64::MAX);
        }
    }
    // mid = lo/2 + hi/2 cannot overflow even for lo = −MAX, hi = MAX.
    for _ in 0..2200 {
        let mid = 0.5 * lo + 0.5 * hi;
        if mid <= lo || mid >= hi {
            break;
        }
        if inside(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logistic_break_points_match_math_md() {
        let c = ClippedLoss::new(Loss::Logistic, 0.2).unwrap();
        // ‖x‖ = 1: r = 0.2, y1 = log(1/r − 1) = log 4 for y = +1.
        let g = c.for_example(1.0, 1.0).unwrap();
        assert_eq!(g.break_points(), (4f64.ln(), f64::INFINITY));
        let g = c.for_example(-1.0, 1.0).unwrap();
        assert_eq!(g.break_points(), (f64::NEG_INFINITY, -(4f64.ln())));
        // r ≥ 1: no clipping.
        let g = c.for_example(1.0, 0.1).unwrap();
        assert_eq!(g.break_points(), (f64::NEG_INFINITY, f64::INFINITY));
    }

    #[test]
    fn bisection_matches_closed_forms() {
        // Huber: φ' = clamp(z − y, −h, h); clipping at r < h gives y ∓ r.
        let (h, y, r) = (1.5, 0.7, 0.4);
        let (y1, y2) = break_points(&Loss::Huber { h }, y, r);
        assert!((y1 - (y - r)).abs() < 1e-15 && (y2 - (y + r)).abs() < 1e-15);
        assert_eq!(
            break_points(&Loss::Huber { h }, y, 2.0),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
        // Huber-SVM, y = +1: −(1 + h − z)/(2h) = −r at z = 1 + h − 2hr; y = −1 mirrored.
        let h = 0.1;
        for r in [0.05, 0.3, 0.99] {
            let (y1, y2) = break_points(&Loss::HuberSvm { h }, 1.0, r);
            assert!((y1 - (1.0 + h - 2.0 * h * r)).abs() < 1e-14, "{y1}");
            assert_eq!(y2, f64::INFINITY);
            let (y1, y2) = break_points(&Loss::HuberSvm { h }, -1.0, r);
            assert_eq!(y1, f64::NEG_INFINITY);
            assert!((y2 + (1.0 + h - 2.0 * h * r)).abs() < 1e-14, "{y2}");
        }
        // r ≥ 1: the hinge's slopes are ±1, never clipped.
        assert_eq!(
            break_points(&Loss::HuberSvm { h }, 1.0, 1.0),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(
            ClippedLoss::new(Loss::Savage, 1.0),
            Err(Error::NotConvex { .. })
        ));
        assert!(ClippedLoss::new(Loss::Logistic, 0.0).is_err());
        assert!(ClippedLoss::new(Loss::Logistic, f64::INFINITY).is_err());
        let c = ClippedLoss::new(Loss::Squared, 1.0).unwrap();
        assert!(c.for_example(f64::NAN, 1.0).is_err());
        assert!(c.for_example(1.0, -1.0).is_err());
    }

    #[test]
    fn degenerate_rows() {
        let c = ClippedLoss::new(Loss::Logistic, 0.5).unwrap();
        // Zero row: g = f.
        let g = c.for_example(1.0, 0.0).unwrap();
        assert_eq!(g.value(-3.0), Loss::Logistic.value(-3.0, 1.0));
        // Infinite row: r = 0, g constant (= f(+∞) = 0 for y = +1), derivative 0.
        let g = c.for_example(1.0, f64::INFINITY).unwrap();
        assert_eq!(g.value(-3.0), 0.0);
        assert_eq!(g.deriv(-3.0), 0.0);
        let c = ClippedLoss::new(Loss::Squared, 1.0).unwrap();
        let g = c.for_example(2.0, f64::INFINITY).unwrap();
        assert_eq!((g.value(-3.0), g.value(9.0), g.deriv(9.0)), (0.0, 0.0, 0.0));
    }
}
