//! From a privacy profile to a privacy-loss distribution on the grid `hℤ`.
//!
//! Pessimistic: "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022,
//! *Connect the dots: tighter discrete approximations of privacy loss distributions*,
//! PETS). The hockey-stick curve `δ(ε)` is convex in `e^ε`; the grid PLD whose curve passes
//! through the true values at every grid point `ε_i = ih` and is affine in `e^ε` between them
//! lies above the true curve everywhere (a chord of a convex function), so it is a dominating
//! pair: every composition of it is an upper bound. Its masses follow from the slope changes:
//! `p_i = (δ_{i−1} − δ_i)/(1 − e^{−h}) − (δ_i − δ_{i+1})/(e^h − 1)`; the top grid value
//! `δ(ε_hi)` goes to the atom at `+∞` and the lowest atom takes the remaining mass (the chord
//! from `(e^ε = 0, δ = 1)` to the first grid point).
//!
//! Optimistic: every loss value rounded *down* to the grid (`p_i = P[ω ∈ (ih, (i+1)h]]`),
//! a lower estimate shown beside the upper bound so the discretisation gap is visible.

use super::pmf::LatticePmf;
use crate::error::{Error, Result};
use crate::profile::Profile;

/// The interval of privacy-loss values worth discretising.
///
/// The profile's analytic range is trimmed where it carries nothing measurable: the top to
/// where `δ(ε) ≤ 1e-18` (what lies above goes to the atom at `+∞`), the bottom to where
/// `P[ω ≤ ε] ≤ 1e-13` (that mass is moved *up* onto the lowest atom). Both moves are
/// pessimistic, so the trimming only trades resolution for speed.
pub(crate) fn trimmed_range(p: &Profile) -> (f64, f64) {
    let (mut lo, mut hi) = p.range();
    // Largest ε with P[ω ≤ ε] ≤ 1e-13.
    let (mut a, mut b) = (lo, hi);
    if 1.0 - p.tail(a) <= 1e-13 {
        for _ in 0..60 {
            let m = 0.5 * (a + b);
            if 1.0 - p.tail(m) <= 1e-13 {
                a = m;
            } else {
                b = m;
            }
        }
        lo = a;
    }
    // Smallest ε with δ(ε) ≤ 1e-18.
    let (mut a, mut b) = (lo, hi);
    if p.delta(b) <= 1e-18 {
        for _ in 0..60 {
            let m = 0.5 * (a + b);
            if p.delta(m) <= 1e-18 {
                b = m;
            } else {
                a = m;
            }
        }
        hi = b;
    }
    (lo, hi)
}

/// The grid index range `[lo, hi]` covering the profile's trimmed range.
fn index_range(p: &Profile, h: f64) -> (i64, i64) {
    let (lo, hi) = trimmed_range(p);
    // Saturating: a range the accountant would refuse anyway never overflows here (the grid
    // width is chosen beforehand so that `hi − lo` stays within `max_grid`).
    let lo = (lo / h).floor() as i64;
    let hi = ((hi / h).ceil() as i64).max(lo.saturating_add(1));
    (lo, hi)
}

/// Profile values `δ(ih)` at the grid indices `lo, lo + 1, …` of the grid of width `h`.
#[derive(Debug)]
pub(crate) struct Samples {
    h: f64,
    lo: i64,
    values: Vec<f64>,
}

/// The number of grid points of [`index_range`], or an error above `2^27` (before anything
/// that size is allocated or looped over) or when an index is beyond `±2^60` (saturated: the
/// loss values are not on any grid the composition can index).
fn grid_size(p: &Profile, h: f64, lo: i64, hi: i64) -> Result<usize> {
    if lo.unsigned_abs().max(hi.unsigned_abs()) > 1 << 60 {
        return Err(Error::OutOfRange(format!(
            "the privacy losses of {p:?} are beyond the grid's index range at width {h:e}"
        )));
    }
    let n = usize::try_from(hi.saturating_sub(lo).saturating_add(1)).unwrap_or(usize::MAX);
    if n > 1 << 27 {
        return Err(Error::OutOfRange(format!(
            "discretising {p:?} at width {h:e} needs {n} grid points"
        )));
    }
    Ok(n)
}

/// Samples the profile on the grid of width `h` over its trimmed range. Values already
/// sampled on grids of width `2^k·h` or `2^−k·h` (`known`) are reused: the point `j·h` of
/// this grid and `(j/2^k)·(2^k·h)` of that one are the same double (both round the same real,
/// and scaling by a power of two is exact), so the reused values are exactly what evaluating
/// again would give.
///
/// # Errors
/// More than 2^27 grid points, or indices beyond ±2^60; a profile value that is not a
/// number.
pub(crate) fn sample(p: &Profile, h: f64, known: &[&Samples]) -> Result<Samples> {
    let (lo, hi) = index_range(p, h);
    let n = grid_size(p, h, lo, hi)?;
    // (samples, log2 of their width over h) for the grids related by a power of two.
    let related: Vec<(&Samples, i32)> = known
        .iter()
        .filter_map(|s| {
            let r = (s.h / h).log2().round();
            (r != 0.0 && r.abs() < 60.0 && s.h == h * 2f64.powi(r as i32)).then_some((*s, r as i32))
        })
        .collect();
    let lookup = |j: i64| {
        related.iter().find_map(|(s, r)| {
            let k = if *r > 0 {
                let step = 1i64 << r;
                (j.rem_euclid(step) == 0).then(|| j.div_euclid(step))?
            } else {
                j.checked_mul(1i64 << -r)?
            };
            s.values.get(usize::try_from(k - s.lo).ok()?).copied()
        })
    };
    let values: Vec<f64> = (0..n)
        .map(|i| {
            let j = lo + i as i64;
            lookup(j).unwrap_or_else(|| p.delta(j as f64 * h))
        })
        .collect();
    if let Some(i) = values.iter().position(|v| v.is_nan()) {
        return Err(Error::Numerical(format!(
            "the privacy profile {p:?} is not a number at epsilon = {}",
            (lo + i as i64) as f64 * h
        )));
    }
    Ok(Samples { h, lo, values })
}

/// Pessimistic (dominating) grid PLD through sampled profile values, by connecting the dots.
pub(crate) fn connect_the_dots(samples: &Samples) -> LatticePmf {
    let (h, d) = (samples.h, &samples.values);
    let n = d.len();
    let up = h.exp_m1(); // e^h − 1
    let down = -(-h).exp_m1(); // 1 − e^{−h}
    let mut masses = vec![0.0; n];
    for i in 1..n {
        let left = (d[i - 1] - d[i]) / down;
        let right = if i + 1 < n {
            (d[i] - d[i + 1]) / up
        } else {
            0.0
        };
        masses[i] = (left - right).max(0.0);
    }
    let inf_mass = d[n - 1];
    let rest: f64 = masses[1..].iter().sum();
    masses[0] = (1.0 - inf_mass - rest).max(0.0);
    LatticePmf {
        h,
        offset: samples.lo,
        masses,
        inf_mass,
        error_l2: 0.0,
    }
}

/// Optimistic grid PLD of one profile: losses rounded down to the grid.
///
/// # Errors
/// As [`sample`]'s grid size.
pub(crate) fn optimistic(p: &Profile, h: f64) -> Result<LatticePmf> {
    let (lo, hi) = index_range(p, h);
    let n = grid_size(p, h, lo, hi)?;
    let tails: Vec<f64> = (0..=n)
        .map(|i| p.tail((lo + i as i64) as f64 * h))
        .collect();
    let mut masses: Vec<f64> = (0..n).map(|i| (tails[i] - tails[i + 1]).max(0.0)).collect();
    // Mass above the range is rounded down onto the top atom (the profile has no mass at
    // infinity here; whatever lies beyond hi is at most ~1e-19).
    masses[n - 1] += tails[n];
    Ok(LatticePmf {
        h,
        offset: lo,
        masses,
        inf_mass: 0.0,
        error_l2: 0.0,
    })
}

/// Uniform sub-cells per grid cell in [`rounding_log_mgf`].
const SUB_CELLS: usize = 64;

/// The top sub-cell of [`rounding_log_mgf`] is split at `1 − TOP` (as a fraction of `h`):
/// an atom on a grid point (a Laplace loss `±r` with `r/h` an integer) is rounded down by a
/// full `h`, and is credited with all but `TOP·h` of it instead of `h/64`. Far above the
/// rounding of the sub-cell edges (`2^-30` against `2^-52` relative).
const TOP: f64 = 1.0 / 1_073_741_824.0; // 2^-30

/// The lower edges `b` (as fractions of `h`) of the sub-cells of one grid cell `(0, 1]`:
/// `j/64` for `j < 64`, and `1 − TOP`.
fn sub_cell_edges() -> Vec<f64> {
    let uniform = (0..SUB_CELLS).map(|j| j as f64 / SUB_CELLS as f64);
    uniform.chain(std::iter::once(1.0 - TOP)).collect()
}

/// Upper bounds on `ln E[e^{−t·r}]`, one per `t` in `ts` (all > 0), where `r = ω − ω'` is how
/// far [`optimistic`] rounds a loss down (`r ∈ (0, h]` inside the range).
///
/// Each cell `(ih, (i+1)h]` is cut into sub-cells `(ih + b_l h, ih + b_{l+1} h]` with the
/// edges of [`sub_cell_edges`] (the top one split at `1 − TOP`, so that the mass of an atom
/// on a grid point, rounded down by `h` exactly, is credited with nearly `h`); on each,
/// `r > b_l h`, so `e^{−tr} < e^{−t b_l h}`. Mass outside the range (moved or dropped by the
/// discretisation) is bounded by `e^{−tr} ≤ 1`.
pub(crate) fn rounding_log_mgf(p: &Profile, h: f64, ts: &[f64]) -> Vec<f64> {
    let (lo, hi) = index_range(p, h);
    let edges = sub_cell_edges();
    let mut sub = vec![0.0f64; edges.len()];
    for i in lo..hi {
        let base = i as f64 * h;
        let mut prev = p.tail(base);
        for (l, m) in sub.iter_mut().enumerate() {
            let upper = edges
                .get(l + 1)
                .map_or((i + 1) as f64 * h, |b| base + b * h);
            let next = p.tail(upper);
            *m += (prev - next).max(0.0);
            prev = next;
        }
    }
    let outside = (1.0 - sub.iter().sum::<f64>()).max(0.0);
    ts.iter()
        .map(|&t| {
            let inside: f64 = sub
                .iter()
                .zip(&edges)
                .map(|(m, b)| m * (-t * b * h).exp())
                .sum();
            (inside + outside).ln()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_the_dots_matches_the_profile_on_the_grid_and_dominates_between() {
        let h = 1e-3;
        for p in [
            Profile::Gaussian { s: 0.7 },
            Profile::PoissonRemove { z: 1.0, q: 0.05 },
            Profile::PoissonAdd { z: 1.0, q: 0.05 },
            Profile::Laplace { r: 0.9 },
            Profile::RandomizedResponse { eps: 0.73 },
            Profile::ObjPert { c: 0.2, s: 1.1 },
        ] {
            let pmf = connect_the_dots(&sample(&p, h, &[]).unwrap());
            let total = pmf.finite_mass() + pmf.inf_mass;
            assert!((total - 1.0).abs() < 1e-9, "{p:?}: total {total}");
            for k in 0..40 {
                let eps = 0.013 + 0.05 * k as f64;
                let ours = pmf.delta(eps);
                let exact = p.delta(eps);
                // Up to floating-point rounding of the masses (relative ~1e-14).
                assert!(
                    ours >= exact * (1.0 - 1e-12) - 1e-16,
                    "{p:?} eps {eps}: {ours} < {exact}"
                );
                assert!(
                    ours - exact < 1e-3 * exact.max(1e-4),
                    "{p:?} eps {eps}: {ours} vs {exact}"
                );
                let opt = optimistic(&p, h).unwrap().delta(eps);
                assert!(
                    opt <= exact + 1e-15,
                    "{p:?} eps {eps}: optimistic {opt} > {exact}"
                );
            }
        }
    }
}
