//! Line searches along a descent direction.
//!
//! A line search sees only the one-dimensional function `φ(α) = f(x + αp)` and its
//! derivative `φ'(α) = ∇f(x + αp)·p`, through a closure, so it is independent of the
//! optimiser and of the array type.

use crate::error::{Result, count, ensure, non_negative, positive};

/// A point accepted by a line search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineSearchOutcome {
    /// The step `α`.
    pub alpha: f64,
    /// `φ(α)`.
    pub value: f64,
    /// `φ'(α)`.
    pub slope: f64,
    /// Evaluations of `φ` used.
    pub evaluations: usize,
}

/// Why a line search gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineSearchFailure {
    /// `φ'(0) ≥ 0` (or not finite): the direction is not a descent direction.
    NotDescent,
    /// The evaluation budget ran out.
    MaxEvaluations,
    /// The bracketing interval shrank below floating-point resolution (typically: the
    /// requested accuracy is beyond what rounding allows).
    IntervalCollapsed,
    /// The step reached its upper bound while `φ` was still decreasing steeply.
    Unbounded,
}

/// A line search: finds `α > 0` meeting its acceptance conditions for `φ`.
pub trait LineSearch {
    /// Searches from the trial step `alpha0`, given `φ(0)` and `φ'(0) < 0`. `phi(α)` returns
    /// `(φ(α), φ'(α))`; the search may call it with any `α > 0`.
    ///
    /// The accepted point is the last one evaluated, whenever the implementation can arrange
    /// it (callers may rely on this to avoid a re-evaluation, but must check `alpha`).
    ///
    /// # Errors
    /// A [`LineSearchFailure`] when no acceptable step was found.
    fn search(
        &self,
        phi: &mut dyn FnMut(f64) -> (f64, f64),
        phi0: f64,
        dphi0: f64,
        alpha0: f64,
    ) -> std::result::Result<LineSearchOutcome, LineSearchFailure>;

    /// Checks the line search's parameters. Defaults to `Ok`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for bad parameters.
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// The strong Wolfe line search of Nocedal & Wright, *Numerical Optimization* (2nd ed.),
/// Algorithms 3.5 (bracketing, with step doubling) and 3.6 (zoom, with safeguarded cubic
/// interpolation, eq. 3.59, falling back to bisection). Accepts `α` with
///
/// * sufficient decrease: `φ(α) ≤ φ(0) + c₁ α φ'(0)`,
/// * strong curvature: `|φ'(α)| ≤ c₂ |φ'(0)|`.
///
/// Non-finite values of `φ` (overflow far along the direction) are treated as failing the
/// sufficient-decrease test, so the search backs off from them.
///
/// Near a minimiser the decrease `φ(0) − φ(α)` falls below the rounding error of `φ`, and
/// value comparisons become coin tosses. As in Hager & Zhang (2005), a point whose value is
/// within `value_tol·|φ(0)|` of `φ(0)` is then judged by slopes only: it is accepted under
/// the *approximate* sufficient-decrease condition `φ'(α) ≤ (2c₁ − 1)φ'(0)` (exact for
/// quadratics) together with the strong curvature condition, and otherwise brackets the
/// minimiser by the sign of `φ'(α)`; interpolation between two such points uses the secant
/// of the slopes. Set `value_tol = 0` for the textbook tests only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrongWolfe {
    /// Sufficient-decrease constant `c₁ ∈ (0, c₂)`. Default 1e-4.
    pub c1: f64,
    /// Curvature constant `c₂ ∈ (c₁, 1)`. Default 0.9 (quasi-Newton methods).
    pub c2: f64,
    /// Budget of evaluations of `φ` (≥ 1). Default 50.
    pub max_evaluations: usize,
    /// Largest step tried. Default 1e10.
    pub alpha_max: f64,
    /// Relative tolerance on `φ` below which the approximate sufficient-decrease test is
    /// used (≥ 0). Default 1e-10.
    pub value_tol: f64,
}

impl Default for StrongWolfe {
    fn default() -> Self {
        Self {
            c1: 1e-4,
            c2: 0.9,
            max_evaluations: 50,
            alpha_max: 1e10,
            value_tol: 1e-10,
        }
    }
}

/// A point of the one-dimensional function.
#[derive(Debug, Clone, Copy)]
struct Pt {
    a: f64,
    f: f64,
    d: f64,
}

/// Minimiser of the cubic interpolating `(a, f, d)` at two points (N&W eq. 3.59), if it is
/// well defined.
fn cubic_min(p0: Pt, p1: Pt) -> Option<f64> {
    let d1 = p0.d + p1.d - 3.0 * (p0.f - p1.f) / (p0.a - p1.a);
    let disc = d1 * d1 - p0.d * p1.d;
    if disc.is_nan() || disc < 0.0 {
        return None;
    }
    let d2 = (p1.a - p0.a).signum() * disc.sqrt();
    let a = p1.a - (p1.a - p0.a) * (p1.d + d2 - d1) / (p1.d - p0.d + 2.0 * d2);
    a.is_finite().then_some(a)
}

/// Zero of the secant through the slopes at two points (the minimiser of the quadratic
/// with those slopes), when the slopes have opposite signs.
fn secant_min(p0: Pt, p1: Pt) -> Option<f64> {
    let product = p0.d * p1.d;
    if product.is_nan() || product >= 0.0 {
        return None;
    }
    let a = p0.a - p0.d * (p1.a - p0.a) / (p1.d - p0.d);
    a.is_finite().then_some(a)
}

/// What to do with a trial point.
enum Verdict {
    /// It meets the (strong or approximate) Wolfe conditions.
    Accept,
    /// It is too far: the minimiser lies between the low end and it.
    TooFar,
    /// It is an acceptable new low end (slope still negative toward the high end, or — in
    /// N&W's rule — to be swapped with it).
    NewLow,
}

impl StrongWolfe {
    /// `true` when `f` is within rounding (`value_tol·|φ(0)|`) of `φ(0)`: values no longer
    /// discriminate and the search decides by slopes.
    fn flat(&self, f: f64, phi0: f64) -> bool {
        self.value_tol > 0.0 && (f - phi0).abs() <= self.value_tol * phi0.abs()
    }

    /// Judges `p` against the low end `lo` (N&W Alg. 3.5/3.6 tests; in the flat regime, the
    /// approximate Wolfe conditions of Hager & Zhang and the sign of the slope).
    fn judge(&self, p: Pt, lo: Pt, phi0: f64, dphi0: f64, first: bool) -> Verdict {
        if !(p.f.is_finite() && p.d.is_finite()) {
            return Verdict::TooFar;
        }
        let curvature = p.d.abs() <= -self.c2 * dphi0;
        if self.flat(p.f, phi0) {
            if curvature && p.d <= (2.0 * self.c1 - 1.0) * dphi0 {
                Verdict::Accept
            } else if p.d >= 0.0 {
                Verdict::TooFar
            } else {
                Verdict::NewLow
            }
        } else if p.f > phi0 + self.c1 * p.a * dphi0 || (!first && p.f >= lo.f) {
            Verdict::TooFar
        } else if curvature {
            Verdict::Accept
        } else {
            Verdict::NewLow
        }
    }

    /// Zoom (N&W Alg. 3.6) between `lo` (acceptable decrease, slope pointing toward `hi`)
    /// and `hi`.
    fn zoom(
        &self,
        phi: &mut dyn FnMut(f64) -> (f64, f64),
        phi0: f64,
        dphi0: f64,
        mut lo: Pt,
        mut hi: Pt,
        evals: &mut usize,
    ) -> std::result::Result<LineSearchOutcome, LineSearchFailure> {
        loop {
            if *evals >= self.max_evaluations {
                return Err(LineSearchFailure::MaxEvaluations);
            }
            let width = hi.a - lo.a;
            if width.abs() <= 4.0 * f64::EPSILON * lo.a.abs().max(hi.a.abs()) {
                return Err(LineSearchFailure::IntervalCollapsed);
            }
            // Interpolate (secant of slopes where values are at rounding level, else cubic),
            // safeguarded to stay 10% of the interval away from its ends; else bisect.
            let (left, right) = (lo.a.min(hi.a), lo.a.max(hi.a));
            let margin = 0.1 * (right - left);
            let guess = if !(hi.f.is_finite() && hi.d.is_finite()) {
                None
            } else if self.flat(lo.f, phi0) && self.flat(hi.f, phi0) {
                secant_min(lo, hi)
            } else {
                cubic_min(lo, hi)
            };
            let a = match guess {
                Some(a) if a >= left + margin && a <= right - margin => a,
                _ => lo.a + 0.5 * width,
            };
            let (f, d) = phi(a);
            *evals += 1;
            let p = Pt { a, f, d };
            match self.judge(p, lo, phi0, dphi0, false) {
                Verdict::Accept => {
                    return Ok(LineSearchOutcome {
                        alpha: a,
                        value: f,
                        slope: d,
                        evaluations: *evals,
                    });
                }
                Verdict::TooFar => hi = p,
                Verdict::NewLow => {
                    if d * (hi.a - lo.a) >= 0.0 {
                        hi = lo;
                    }
                    lo = p;
                }
            }
        }
    }
}

impl LineSearch for StrongWolfe {
    fn search(
        &self,
        phi: &mut dyn FnMut(f64) -> (f64, f64),
        phi0: f64,
        dphi0: f64,
        alpha0: f64,
    ) -> std::result::Result<LineSearchOutcome, LineSearchFailure> {
        if !(dphi0 < 0.0 && dphi0.is_finite() && phi0.is_finite()) {
            return Err(LineSearchFailure::NotDescent);
        }
        let mut prev = Pt {
            a: 0.0,
            f: phi0,
            d: dphi0,
        };
        let mut a = if alpha0 > 0.0 && alpha0.is_finite() {
            alpha0.min(self.alpha_max)
        } else {
            1.0_f64.min(self.alpha_max)
        };
        let mut evals = 0usize;
        loop {
            if evals >= self.max_evaluations {
                return Err(LineSearchFailure::MaxEvaluations);
            }
            let (f, d) = phi(a);
            evals += 1;
            let p = Pt { a, f, d };
            match self.judge(p, prev, phi0, dphi0, evals == 1) {
                Verdict::Accept => {
                    return Ok(LineSearchOutcome {
                        alpha: a,
                        value: f,
                        slope: d,
                        evaluations: evals,
                    });
                }
                Verdict::TooFar => return self.zoom(phi, phi0, dphi0, prev, p, &mut evals),
                Verdict::NewLow if d >= 0.0 => {
                    return self.zoom(phi, phi0, dphi0, p, prev, &mut evals);
                }
                Verdict::NewLow => {}
            }
            if a >= self.alpha_max {
                return Err(LineSearchFailure::Unbounded);
            }
            prev = p;
            a = (2.0 * a).min(self.alpha_max);
        }
    }

    fn check(&self) -> Result<()> {
        positive("c1", self.c1)?;
        ensure(
            self.c1 < self.c2 && self.c2 < 1.0,
            "c2",
            self.c2,
            "must satisfy c1 < c2 < 1",
        )?;
        count("max_evaluations", self.max_evaluations)?;
        non_negative("value_tol", self.value_tol)?;
        positive("alpha_max", self.alpha_max).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn wolfe_holds(ls: &StrongWolfe, out: &LineSearchOutcome, phi0: f64, dphi0: f64) -> bool {
        out.value <= phi0 + ls.c1 * out.alpha * dphi0 && out.slope.abs() <= -ls.c2 * dphi0
    }

    /// Accepted steps satisfy both strong Wolfe conditions on a range of 1-D functions and
    /// starting steps (too short: bracketing by doubling; too long: zoom).
    #[test]
    fn accepts_strong_wolfe_points() {
        type Phi = Box<dyn Fn(f64) -> (f64, f64)>;
        let fns: Vec<(&str, Phi)> = vec![
            (
                "quadratic",
                Box::new(|a: f64| ((a - 3.0).powi(2), 2.0 * (a - 3.0))),
            ),
            (
                "quartic",
                Box::new(|a: f64| {
                    (
                        (a - 0.01).powi(4) - a * 1e-3,
                        4.0 * (a - 0.01).powi(3) - 1e-3,
                    )
                }),
            ),
            (
                "exp",
                Box::new(|a: f64| ((a - 5.0).exp() - a, (a - 5.0).exp() - 1.0)),
            ),
            // N&W's test function φ(α) = −α/(α² + β), β = 2.
            (
                "nw",
                Box::new(|a: f64| {
                    let b = 2.0;
                    (-a / (a * a + b), (a * a - b) / (a * a + b).powi(2))
                }),
            ),
        ];
        for c2 in [0.9, 0.1] {
            let ls = StrongWolfe {
                c2,
                ..StrongWolfe::default()
            };
            ls.check().unwrap();
            for (name, f) in &fns {
                for alpha0 in [1e-3, 1.0, 100.0] {
                    let (phi0, dphi0) = f(0.0);
                    let mut last = f64::NAN;
                    let mut phi = |a: f64| {
                        last = a;
                        f(a)
                    };
                    let out = ls
                        .search(&mut phi, phi0, dphi0, alpha0)
                        .unwrap_or_else(|e| panic!("{name} from {alpha0}: {e:?}"));
                    assert!(
                        wolfe_holds(&ls, &out, phi0, dphi0),
                        "{name} {alpha0} {out:?}"
                    );
                    assert_eq!(out.alpha, last, "accepted point is the last evaluated");
                }
            }
        }
    }

    /// Where `φ` varies below the rounding of its value (`φ(α) = 1 + 1e-20((α−3)² − 9)` is
    /// exactly 1 in floating point), the slope-based tests still find the minimiser 3.
    #[test]
    fn decides_by_slopes_below_rounding() {
        let f = |a: f64| (1.0 + 1e-20 * ((a - 3.0).powi(2) - 9.0), 2e-20 * (a - 3.0));
        let (phi0, dphi0) = f(0.0);
        let ls = StrongWolfe::default();
        for alpha0 in [1e-3, 100.0] {
            let out = ls.search(&mut |a| f(a), phi0, dphi0, alpha0).unwrap();
            assert!(out.slope.abs() <= -ls.c2 * dphi0, "{out:?}");
        }
        let out = ls.search(&mut |a| f(a), phi0, dphi0, 100.0).unwrap();
        assert!((out.alpha - 3.0).abs() < 1e-9, "{out:?}");
    }

    /// Overflow beyond some step is backed off from.
    #[test]
    fn backs_off_from_non_finite_values() {
        let ls = StrongWolfe::default();
        let mut phi = |a: f64| {
            if a > 2.0 {
                (f64::INFINITY, f64::NAN)
            } else {
                ((a - 1.5).powi(2), 2.0 * (a - 1.5))
            }
        };
        let out = ls.search(&mut phi, 2.25, -3.0, 100.0).unwrap();
        assert!(out.alpha <= 2.0 && wolfe_holds(&ls, &out, 2.25, -3.0));
    }

    #[test]
    fn failures() {
        let ls = StrongWolfe::default();
        let mut up = |a: f64| (a, 1.0);
        assert_eq!(
            ls.search(&mut up, 0.0, 1.0, 1.0),
            Err(LineSearchFailure::NotDescent)
        );
        // Claims descent but the function only increases: no acceptable step exists.
        let mut liar = |a: f64| (a, 1.0);
        assert!(ls.search(&mut liar, 0.0, -1.0, 1.0).is_err());
        // Unbounded below: the step hits its cap.
        let mut linear = |a: f64| (-a, -1.0);
        let capped = StrongWolfe {
            alpha_max: 1e3,
            ..StrongWolfe::default()
        };
        assert_eq!(
            capped.search(&mut linear, 0.0, -1.0, 1.0),
            Err(LineSearchFailure::Unbounded)
        );
        let mut quad = |a: f64| ((a - 3.0).powi(2), 2.0 * (a - 3.0));
        let tiny = StrongWolfe {
            max_evaluations: 1,
            ..StrongWolfe::default()
        };
        assert_eq!(
            tiny.search(&mut quad, 9.0, -6.0, 100.0),
            Err(LineSearchFailure::MaxEvaluations)
        );
    }

    #[test]
    fn parameter_checks() {
        let bad = [
            StrongWolfe {
                c1: 0.0,
                ..StrongWolfe::default()
            },
            StrongWolfe {
                c1: 0.5,
                c2: 0.4,
                ..StrongWolfe::default()
            },
            StrongWolfe {
                c2: 1.0,
                ..StrongWolfe::default()
            },
            StrongWolfe {
                max_evaluations: 0,
                ..StrongWolfe::default()
            },
            StrongWolfe {
                alpha_max: f64::NAN,
                ..StrongWolfe::default()
            },
            StrongWolfe {
                value_tol: -1.0,
                ..StrongWolfe::default()
            },
        ];
        for ls in bad {
            assert!(matches!(ls.check(), Err(Error::InvalidParameter { .. })));
        }
    }
}
