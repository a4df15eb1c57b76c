//! Calibration: the least noise, the largest sampling rate or the most steps that meet a
//! target (ε, δ) under a chosen accountant, always on the safe side.

use crate::accountant::AccountantKind;
use crate::error::{Error, Num, Result, ensure, positive, valid_delta};
use crate::mechanism::Mechanism;
use crate::neighbouring::Neighbouring;
use crate::search::bisect_up;

/// A privacy budget (ε, δ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    epsilon: f64,
    delta: f64,
}

impl Target {
    /// A validated target: ε finite and > 0, δ ∈ `[DELTA_MIN, 1)` (δ below
    /// `DELTA_MIN` = 2.2250738585072014e-308, a subnormal, cannot be computed safely).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` or `delta`.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self> {
        Ok(Self {
            epsilon: positive("epsilon", epsilon)?,
            delta: valid_delta(delta)?,
        })
    }

    /// The target ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The target δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// The outcome of a calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The calibrated parameter (noise, rate or step count).
    pub value: f64,
    /// The accountant's ε at `value` for the target δ: always `≤` the target ε.
    pub epsilon: f64,
}

/// ε of `steps` applications of `mech` under `kind` and `rel`.
///
/// # Privacy
/// The chosen accountant's upper bound (see [`AccountantKind`]).
///
/// # Errors
/// The accountant's errors.
pub fn epsilon_of(
    kind: AccountantKind,
    rel: Neighbouring,
    mech: &Mechanism,
    steps: u64,
    delta: f64,
) -> Result<f64> {
    let mut acc = kind.build(rel);
    acc.compose(mech, steps)?;
    acc.epsilon(delta)
}

/// Relative precision of calibrated continuous parameters.
const CAL_TOL: f64 = 1e-6;

/// Smallest noise parameter [`calibrate_noise`] searches.
const NOISE_MIN: f64 = 1e-6;

/// Largest noise parameter [`calibrate_noise`] searches.
const NOISE_MAX: f64 = 1e9;

/// Smallest sampling rate [`calibrate_sampling_rate`] searches.
const RATE_MIN: f64 = 1e-9;

/// Largest step count [`calibrate_steps`] searches.
const STEPS_MAX: u64 = 1 << 40;

/// Relative slack of the monotonicity check: absorbs a discretised accountant's jitter (the
/// PLD accountant's bound moves with its grid, by up to its error budget); catches gross
/// failures (an ε that collapses, as the PLD overflow of issue 9 did).
const MONOTONE_TOL: f64 = 1e-2;

/// How ε moves with the searched parameter.
#[derive(Clone, Copy, PartialEq)]
enum Trend {
    /// ε falls as the parameter grows (noise).
    Falling,
    /// ε grows with the parameter (sampling rate, steps).
    Rising,
}

/// The accountant's ε along a one-parameter search: every answer is checked (finite or +∞,
/// ≥ 0, monotone in the parameter as the mechanism's privacy is) before it is used.
struct Probe<F> {
    eps: F,
    target: Target,
    trend: Trend,
    seen: Vec<(f64, f64)>,
    last_error: Option<Error>,
}

impl<F: Fn(f64) -> Result<f64>> Probe<F> {
    fn new(eps: F, target: Target, trend: Trend) -> Self {
        Self {
            eps,
            target,
            trend,
            seen: Vec::new(),
            last_error: None,
        }
    }

    /// The accountant's ε at `x`, or `None` where it cannot answer ([`Error::OutOfRange`],
    /// [`Error::Numerical`], or an answer that failed its own [`Error::SelfCheck`]: a point it
    /// cannot certify counts as missing the target, so the search can only end on a point it
    /// certified, or with a [`Error::Calibration`] that names the target and quotes the
    /// accountant's last refusal).
    ///
    /// # Errors
    /// Other accountant errors; an ε that is NaN or negative; answers that contradict
    /// monotonicity by more than [`MONOTONE_TOL`] (a broken accountant must not be searched).
    fn epsilon(&mut self, x: f64) -> Result<Option<f64>> {
        let e = match (self.eps)(x) {
            Ok(e) => e,
            Err(e @ (Error::OutOfRange(_) | Error::Numerical(_) | Error::SelfCheck { .. })) => {
                self.last_error = Some(e);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        if e.is_nan() || e < 0.0 {
            return Err(Error::Numerical(format!(
                "the accountant returned epsilon = {e} at {}",
                Num(x)
            )));
        }
        for &(y, f) in &self.seen {
            // (x, e) and (y, f) with e expected ≥ f.
            let (lo, hi) = match (self.trend, x < y) {
                (Trend::Falling, true) | (Trend::Rising, false) => ((y, f), (x, e)),
                _ => ((x, e), (y, f)),
            };
            if hi.1 < lo.1 * (1.0 - MONOTONE_TOL) - 1e-9 {
                return Err(Error::Calibration(format!(
                    "the accountant's epsilon is not monotone in the searched parameter: \
                     {} at {} but {} at {}; refusing to calibrate on it",
                    Num(lo.1),
                    Num(lo.0),
                    Num(hi.1),
                    Num(hi.0)
                )));
            }
        }
        self.seen.push((x, e));
        Ok(Some(e))
    }

    /// Whether the accountant certifies the target at `x`.
    fn feasible(&mut self, x: f64) -> Result<bool> {
        Ok(self.epsilon(x)?.is_some_and(|e| e <= self.target.epsilon))
    }

    /// What the accountant said at `x`, for error messages.
    fn describe(&mut self, x: f64) -> String {
        let at = Num(x);
        match self.epsilon(x) {
            Ok(Some(e)) => format!("epsilon = {} at {at}", Num(e)),
            Ok(None) => match &self.last_error {
                Some(err) => format!("no answer at {at} ({err})"),
                None => format!("no answer at {at}"),
            },
            Err(err) => format!("no answer at {at} ({err})"),
        }
    }

    /// The calibration at `x`, after checking that the accountant's answer there (computed
    /// afresh) meets the target.
    fn finish(mut self, x: f64) -> Result<Calibration> {
        match self.epsilon(x)? {
            Some(epsilon) if epsilon <= self.target.epsilon => {
                Ok(Calibration { value: x, epsilon })
            }
            _ => {
                let (want, seen) = (Num(self.target.epsilon), self.describe(x));
                Err(Error::Calibration(format!(
                    "the accountant does not certify the target epsilon = {want} at the \
                     calibrated {} when asked again ({seen})",
                    Num(x)
                )))
            }
        }
    }
}

fn check_steps(steps: u64) -> Result<()> {
    ensure(steps >= 1, "steps", steps as f64, "must be >= 1")
}

/// The smallest noise parameter `x` (noise multiplier, σ, scale) in `[1e-6, 1e9]` such that
/// `steps` applications of `make(x)` are (ε, δ)-DP under the accountant `kind`.
///
/// The search doubles or halves from `x = 1` to bracket the boundary, then bisects
/// geometrically to relative precision 1e-6: at most ~70 accountant evaluations. A noise where
/// the accountant cannot answer ([`Error::OutOfRange`], [`Error::Numerical`], e.g. ε beyond
/// what it represents at tiny noise) counts as missing the target, so at huge targets the
/// result is the least noise the accountant can certify.
///
/// # Privacy
/// The returned noise is the upper, feasible end of the final bracket; the accountant's ε
/// there is computed again, checked to be `≤` the target and returned. Every answer seen
/// during the search is checked to be finite or +∞, `≥ 0` and non-increasing in the noise
/// (up to a relative 1e-2): an accountant that contradicts this is not searched.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `steps` when it is 0; [`Error::Calibration`] when no
/// noise in `[1e-6, 1e9]` meets the target, when even `1e-6` does (the target is above the
/// reachable range; both messages give ε at the ends), or when the accountant's answers are
/// not monotone; other accountant and `make` errors.
pub fn calibrate_noise<F>(
    target: Target,
    kind: AccountantKind,
    rel: Neighbouring,
    steps: u64,
    make: F,
) -> Result<Calibration>
where
    F: Fn(f64) -> Result<Mechanism>,
{
    check_steps(steps)?;
    search_noise(target, |x: f64| {
        epsilon_of(kind, rel, &make(x)?, steps, target.delta)
    })
}

/// [`calibrate_noise`]'s search on any ε(noise).
fn search_noise<F: Fn(f64) -> Result<f64>>(target: Target, eps: F) -> Result<Calibration> {
    let mut p = Probe::new(eps, target, Trend::Falling);
    let (lo, hi) = if p.feasible(1.0)? {
        let mut hi = 1.0f64;
        loop {
            let lo = (0.5 * hi).max(NOISE_MIN);
            if !p.feasible(lo)? {
                break (lo, hi);
            }
            if lo <= NOISE_MIN {
                return Err(Error::Calibration(format!(
                    "every noise down to {NOISE_MIN:e} meets epsilon = {} at delta = {:e} \
                     ({}): the target is above the range this calibration searches",
                    Num(target.epsilon),
                    target.delta,
                    p.describe(NOISE_MIN)
                )));
            }
            hi = lo;
        }
    } else {
        let mut lo = 1.0f64;
        loop {
            let hi = (2.0 * lo).min(NOISE_MAX);
            if p.feasible(hi)? {
                break (lo, hi);
            }
            if hi >= NOISE_MAX {
                return Err(Error::Calibration(format!(
                    "no noise up to {NOISE_MAX:e} meets epsilon = {} at delta = {:e} ({})",
                    Num(target.epsilon),
                    target.delta,
                    p.describe(NOISE_MAX)
                )));
            }
            lo = hi;
        }
    };
    let x = bisect_up(lo, hi, CAL_TOL, true, |x| p.feasible(x))?;
    p.finish(x)
}

/// The largest sampling rate `q ∈ [1e-9, 1]` such that `steps` applications of `make(q)` meet
/// the target.
///
/// # Privacy
/// Bisection on the accountant's ε (non-decreasing in q, checked as in [`calibrate_noise`]);
/// returns the lower, feasible end, its ε computed again and checked `≤` the target.
///
/// # Errors
/// `steps` = 0 ([`Error::InvalidParameter`]); even `q = 1e-9` misses the target
/// ([`Error::Calibration`]); the accountant's errors.
pub fn calibrate_sampling_rate<F>(
    target: Target,
    kind: AccountantKind,
    rel: Neighbouring,
    steps: u64,
    make: F,
) -> Result<Calibration>
where
    F: Fn(f64) -> Result<Mechanism>,
{
    check_steps(steps)?;
    let eps = |q: f64| epsilon_of(kind, rel, &make(q)?, steps, target.delta);
    let mut p = Probe::new(eps, target, Trend::Rising);
    if p.feasible(1.0)? {
        return p.finish(1.0);
    }
    if !p.feasible(RATE_MIN)? {
        return Err(Error::Calibration(format!(
            "even a sampling rate of {RATE_MIN:e} misses epsilon = {} at delta = {:e} ({})",
            Num(target.epsilon),
            target.delta,
            p.describe(RATE_MIN)
        )));
    }
    // Bisect on 1/q so that the feasible end is the upper one.
    let inv = bisect_up(1.0, 1.0 / RATE_MIN, CAL_TOL, true, |v| p.feasible(1.0 / v))?;
    p.finish(1.0 / inv)
}

/// The largest number of steps `T ∈ [1, 2^40]` of `mech` that meets the target.
///
/// # Privacy
/// Exponential then binary search on the accountant's ε (non-decreasing in T, checked as in
/// [`calibrate_noise`]); the result's ε is computed again and checked `≤` the target.
///
/// # Errors
/// Even one step misses the target, or more than `2^40` steps fit ([`Error::Calibration`]);
/// the accountant's errors.
pub fn calibrate_steps(
    target: Target,
    kind: AccountantKind,
    rel: Neighbouring,
    mech: &Mechanism,
) -> Result<Calibration> {
    let eps = |t: f64| epsilon_of(kind, rel, mech, t as u64, target.delta);
    let mut p = Probe::new(eps, target, Trend::Rising);
    if !p.feasible(1.0)? {
        return Err(Error::Calibration(format!(
            "even one step misses epsilon = {} at delta = {:e} ({})",
            Num(target.epsilon),
            target.delta,
            p.describe(1.0)
        )));
    }
    let (mut lo, mut hi) = (1u64, 2u64);
    while p.feasible(hi as f64)? {
        lo = hi;
        hi *= 2;
        if hi > STEPS_MAX {
            return Err(Error::Calibration(format!(
                "more than {STEPS_MAX} steps meet epsilon = {} at delta = {:e}",
                Num(target.epsilon),
                target.delta
            )));
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if p.feasible(mid as f64)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    p.finish(lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(e: f64) -> Target {
        Target::new(e, 1e-5).unwrap()
    }

    #[test]
    fn noise_search_lands_on_the_feasible_side_of_the_boundary() {
        // ε(x) = 1/x: the boundary of ε ≤ 4 is x = 0.25.
        let c = search_noise(target(4.0), |x| Ok(1.0 / x)).unwrap();
        assert!(c.value >= 0.25 && c.value <= 0.25 * (1.0 + 2e-6), "{c:?}");
        assert_eq!(c.epsilon, 1.0 / c.value);
        assert!(c.epsilon <= 4.0);
    }

    #[test]
    fn noise_search_rejects_targets_outside_the_range() {
        let above = search_noise(target(1e7), |x| Ok(1.0 / x)).unwrap_err();
        assert!(
            matches!(&above, Error::Calibration(m) if m.contains("every noise down to 1e-6")),
            "{above}"
        );
        let below = search_noise(target(1e-10), |x| Ok(1.0 / x)).unwrap_err();
        assert!(
            matches!(&below, Error::Calibration(m) if m.contains("no noise up to 1e9")
                && m.contains("epsilon = 1e-9")),
            "{below}"
        );
    }

    #[test]
    fn points_the_accountant_cannot_answer_count_as_misses() {
        // No answer below x = 0.01 (as an accountant overflowing at tiny noise): the search
        // ends at the least point it can certify.
        let eps = |x: f64| {
            if x < 0.01 {
                Err(Error::OutOfRange("overflow".into()))
            } else {
                Ok(1.0 / x)
            }
        };
        let c = search_noise(target(1e6), eps).unwrap();
        assert!(c.value >= 0.01 && c.value <= 0.01 * (1.0 + 2e-6), "{c:?}");
        // Other errors are not swallowed.
        let e = search_noise(target(1.0), |_| {
            Err(Error::Unsupported {
                accountant: "x",
                what: "y".into(),
            })
        });
        assert!(matches!(e, Err(Error::Unsupported { .. })));
    }

    #[test]
    fn a_non_monotone_or_nan_accountant_is_refused() {
        // Under-reports to 0 below x = 0.006 (issue 9's PLD bug), else 1/x².
        let broken = |x: f64| Ok(if x <= 0.006 { 0.0 } else { 1.0 / (x * x) });
        let e = search_noise(target(1e6), broken).unwrap_err();
        assert!(
            matches!(&e, Error::Calibration(m) if m.contains("not monotone")),
            "{e}"
        );
        let nan = search_noise(target(1.0), |_| Ok(f64::NAN)).unwrap_err();
        assert!(matches!(nan, Error::Numerical(_)), "{nan}");
    }
}
