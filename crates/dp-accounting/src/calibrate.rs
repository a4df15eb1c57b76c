//! Calibration: the least noise, the largest sampling rate or the most steps that meet a
//! target (ε, δ) under a chosen accountant, always on the safe side.

use crate::accountant::AccountantKind;
use crate::error::{Error, Result, open_unit, positive};
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
    /// A validated target: ε finite and > 0, δ ∈ (0, 1).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` or `delta`.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self> {
        Ok(Self {
            epsilon: positive("epsilon", epsilon)?,
            delta: open_unit("delta", delta)?,
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

/// The smallest noise parameter `x` (noise multiplier, σ, scale) such that `steps`
/// applications of `make(x)` are (ε, δ)-DP under the accountant `kind`.
///
/// # Privacy
/// Geometric bisection on the accountant's ε (non-increasing in the noise); the returned noise
/// is the upper, feasible end of the final bracket, and its ε (returned too) is `≤` the target.
///
/// # Errors
/// No noise up to `1e6` meets the target, or the accountant's errors.
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
    let eps = |x: f64| epsilon_of(kind, rel, &make(x)?, steps, target.delta);
    let ok = |x: f64| Ok(eps(x)? <= target.epsilon);
    let (mut lo, mut hi) = (0.5, 1.0);
    if ok(hi)? {
        while ok(lo)? {
            hi = lo;
            lo *= 0.5;
            if lo < 1e-6 {
                return finish(hi, eps);
            }
        }
    } else {
        lo = hi;
        hi *= 2.0;
        while !ok(hi)? {
            lo = hi;
            hi *= 2.0;
            if hi > 1e6 {
                return Err(Error::Calibration(format!(
                    "no noise up to 1e6 meets epsilon = {} at delta = {:e}",
                    target.epsilon, target.delta
                )));
            }
        }
    }
    let x = bisect_up(lo, hi, CAL_TOL, true, ok)?;
    finish(x, eps)
}

fn finish<F: Fn(f64) -> Result<f64>>(x: f64, eps: F) -> Result<Calibration> {
    Ok(Calibration {
        value: x,
        epsilon: eps(x)?,
    })
}

/// The largest sampling rate `q ∈ (0, 1]` such that `steps` applications of `make(q)` meet the
/// target.
///
/// # Privacy
/// Bisection on the accountant's ε (non-decreasing in q); returns the lower, feasible end.
///
/// # Errors
/// Even `q = 1e-9` misses the target, or the accountant's errors.
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
    let eps = |q: f64| epsilon_of(kind, rel, &make(q)?, steps, target.delta);
    let ok = |q: f64| Ok(eps(q)? <= target.epsilon);
    if ok(1.0)? {
        return finish(1.0, eps);
    }
    if !ok(1e-9)? {
        return Err(Error::Calibration(
            "even a sampling rate of 1e-9 misses the target".into(),
        ));
    }
    // Bisect on 1/q so that the feasible end is the upper one.
    let inv = bisect_up(1.0, 1e9, CAL_TOL, true, |v| ok(1.0 / v))?;
    finish(1.0 / inv, eps)
}

/// The largest number of steps `T ≥ 1` of `mech` that meets the target.
///
/// # Privacy
/// Exponential then binary search on the accountant's ε (non-decreasing in T); the result's
/// ε is `≤` the target.
///
/// # Errors
/// Even one step misses the target, or more than `2^40` steps fit.
pub fn calibrate_steps(
    target: Target,
    kind: AccountantKind,
    rel: Neighbouring,
    mech: &Mechanism,
) -> Result<Calibration> {
    let eps = |t: u64| epsilon_of(kind, rel, mech, t, target.delta);
    let ok = |t: u64| Ok::<bool, Error>(eps(t)? <= target.epsilon);
    if !ok(1)? {
        return Err(Error::Calibration("even one step misses the target".into()));
    }
    let (mut lo, mut hi) = (1u64, 2u64);
    while ok(hi)? {
        lo = hi;
        hi *= 2;
        if hi > 1 << 40 {
            return Err(Error::Calibration(
                "more than 2^40 steps meet the target".into(),
            ));
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Calibration {
        value: lo as f64,
        epsilon: eps(lo)?,
    })
}
