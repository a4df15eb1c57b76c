//! Monotone searches that always return the feasible end of their final bracket.
//!
//! Every bisection in this crate answers "the smallest noise / the smallest ε that meets the
//! target" and returns the end of the bracket that is known to meet it, never a midpoint
//! (MATH §2).

use crate::error::{Error, Result};

/// Finds the boundary of a monotone feasibility predicate on `(lo, hi)`: `feasible(hi)` must
/// be true and `feasible` must be monotone (false below some point, true above). Returns an
/// `x` with `feasible(x)` true and `x ≤ boundary · (1 + rel_tol)` (geometric bisection when
/// `geometric`, which needs `lo > 0`).
pub(crate) fn bisect_up<F>(
    mut lo: f64,
    mut hi: f64,
    rel_tol: f64,
    geometric: bool,
    mut feasible: F,
) -> Result<f64>
where
    F: FnMut(f64) -> Result<bool>,
{
    for _ in 0..400 {
        if hi - lo <= rel_tol * hi.abs().max(f64::MIN_POSITIVE) {
            return Ok(hi);
        }
        let mid = if geometric && lo > 0.0 {
            (lo * hi).sqrt()
        } else {
            0.5 * (lo + hi)
        };
        if mid <= lo || mid >= hi {
            return Ok(hi);
        }
        if feasible(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The smallest `ε ≥ 0` (to relative precision `rel_tol`, rounded up) with
/// `delta_of(ε) ≤ delta`, for a non-increasing `delta_of`. Errors when no ε up to `eps_max`
/// suffices, or when `delta_of` returns NaN (a NaN must not pass for "meets δ" or its
/// opposite). At most `log2(eps_max) + 401` evaluations.
pub(crate) fn epsilon_for_delta<F>(
    delta: f64,
    eps_max: f64,
    rel_tol: f64,
    mut unchecked: F,
) -> Result<f64>
where
    F: FnMut(f64) -> Result<f64>,
{
    let mut delta_of = |e: f64| match unchecked(e)? {
        d if d.is_nan() => Err(Error::Numerical(format!(
            "delta at epsilon = {e} is not a number"
        ))),
        d => Ok(d),
    };
    if delta_of(0.0)? <= delta {
        return Ok(0.0);
    }
    let mut hi = 1.0;
    while delta_of(hi)? > delta {
        if hi >= eps_max {
            return Err(Error::OutOfRange(format!(
                "no epsilon up to {eps_max} reaches delta = {delta:e}"
            )));
        }
        // The last bracket ends at eps_max itself, so every ε up to it is reachable.
        hi = (2.0 * hi).min(eps_max);
    }
    bisect_up(0.0, hi, rel_tol, false, |e| Ok(delta_of(e)? <= delta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_feasible_end() {
        let x = bisect_up(0.0, 10.0, 1e-12, false, |x| Ok(x >= 2.0_f64.sqrt())).unwrap();
        assert!(x >= 2.0_f64.sqrt() && x - 2.0_f64.sqrt() < 1e-11);
        let e = epsilon_for_delta(0.1, 1e3, 1e-12, |e| Ok((-e).exp())).unwrap();
        assert!((-e).exp() <= 0.1 && (e - 10f64.ln()).abs() < 1e-10);
        assert!(epsilon_for_delta(0.0, 100.0, 1e-9, |e| Ok((-e).exp())).is_err());
        // A NaN anywhere is an error, never an ε.
        let nan = epsilon_for_delta(0.1, 1e3, 1e-9, |_| Ok(f64::NAN));
        assert!(matches!(nan, Err(Error::Numerical(_))), "{nan:?}");
        let late = epsilon_for_delta(0.1, 1e3, 1e-9, |e| {
            Ok(if e < 1.5 { f64::NAN } else { (-e).exp() })
        });
        assert!(matches!(late, Err(Error::Numerical(_))), "{late:?}");
    }
}
