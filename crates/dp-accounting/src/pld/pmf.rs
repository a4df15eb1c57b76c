//! Privacy-loss distributions on an equidistant grid, and the hockey-stick queries on them.

use crate::error::{Error, Result};
use crate::special::cap_one;

/// A privacy-loss distribution with atoms at `(offset + i)·h` and an atom at `+∞`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatticePmf {
    /// Grid width.
    pub h: f64,
    /// Grid index of `masses[0]`.
    pub offset: i64,
    /// Masses of the finite atoms.
    pub masses: Vec<f64>,
    /// Mass at `ω = +∞` (including every tail bound added pessimistically).
    pub inf_mass: f64,
    /// Rounding allowance of the masses as an L2 norm: any `K` atoms err by at most `√K` times
    /// this in total, which the queries add to δ (0 for a distribution that was not composed
    /// numerically).
    pub error_l2: f64,
}

/// Atoms between exact recomputations of the running product in [`LatticePmf::epsilon`].
const REFRESH: usize = 64;

/// Largest exponent `ω_ref − ω` kept before [`LatticePmf::epsilon`] moves its reference down.
const REBASE: f64 = 600.0;

impl LatticePmf {
    /// Value of atom `i`.
    fn value(&self, i: usize) -> f64 {
        (self.offset + i as i64) as f64 * self.h
    }

    /// `δ(ε) = P[ω = ∞] + Σ_{ω_i > ε} p_i (1 − e^{ε − ω_i})`, plus the rounding allowance
    /// `√K·error_l2` of the `K` atoms above ε.
    ///
    /// Within ln 2 of ε, where `1 − e^{ε−ω}` would cancel, `exp_m1` is used on every atom.
    /// Above, the atoms are taken in blocks of [`REFRESH`] from the top: with `r` the exact
    /// `e^{ε − ω}` at a block's top atom, the block adds `Σ p − r·Σ p·e^{c·h}` (`c` the atom's
    /// place below the top, `e^{c·h}` from a table built by repeated multiplication, within
    /// [`REFRESH`] ulps as the running product it replaces), so the two sums have no
    /// dependency chain; `r·e^{c·h} < 1/2` there, so the difference loses at most a bit. On a
    /// coarse grid (h ≥ 1, as for ε in the millions) the table would over- and underflow
    /// (∞·0 = NaN): every atom is evaluated directly there.
    pub(crate) fn delta(&self, eps: f64) -> f64 {
        // No grid, no answer: NaN, which every caller's check turns into an error.
        if !(self.h > 0.0 && self.h.is_finite()) || eps.is_nan() {
            return f64::NAN;
        }
        let n = self.masses.len();
        // Atoms above ε are i ≥ j, those beyond ln 2 above it i ≥ k (values grow with i).
        let j = self.first(|w| w > eps);
        let k = self.first(|w| eps - w <= -std::f64::consts::LN_2).max(j);
        let mut d = 0.0;
        for i in j..k {
            d += self.masses[i] * -(eps - self.value(i)).exp_m1();
        }
        if self.h >= 1.0 {
            for i in k..n {
                d += self.masses[i] * (1.0 - (eps - self.value(i)).exp());
            }
        } else {
            let e_h = self.h.exp();
            let mut table = [1.0f64; REFRESH];
            for c in 1..REFRESH {
                table[c] = table[c - 1] * e_h;
            }
            let mut top = n;
            while top > k {
                let bottom = top.saturating_sub(REFRESH).max(k);
                let r = (eps - self.value(top - 1)).exp();
                let (mut mass, mut weighted) = (0.0, 0.0);
                for (c, i) in (bottom..top).rev().enumerate() {
                    mass += self.masses[i];
                    weighted += self.masses[i] * table[c];
                }
                d += mass - r * weighted;
                top = bottom;
            }
        }
        cap_one(d + self.inf_mass + self.allowance(n - j))
    }

    /// The smallest index whose value satisfies `pred` (monotone: false, then true), or the
    /// number of atoms.
    fn first(&self, pred: impl Fn(f64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.masses.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.value(mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Rounding allowance of `k` atoms.
    fn allowance(&self, k: usize) -> f64 {
        (k as f64).sqrt() * self.error_l2
    }

    /// The smallest `ε ≥ 0` with `δ(ε) ≤ delta`, exact for this distribution: between two
    /// atoms `δ(ε) = A − e^ε B` with constant `A, B`, so the crossing is solved in closed form.
    ///
    /// `B = Σ p_i e^{−ω_i}` is kept as `b·e^{−ω_ref}` with a reference `ω_ref` that is moved
    /// down whenever `e^{ω_ref − ω}` would leave the floating-point range, so losses of any size
    /// (ε in the tens of thousands) are handled. Rebasing can only make `b` underflow, which
    /// makes `B` smaller and the returned ε larger: the safe direction.
    ///
    /// # Errors
    /// δ not above the mass at infinity, or a non-finite intermediate (never swallowed).
    pub(crate) fn epsilon(&self, delta: f64) -> Result<f64> {
        self.epsilon_at_least(delta, 0.0)
    }

    /// As [`LatticePmf::epsilon`], but the answer may go below 0, down to `floor` (the lower
    /// estimate needs the crossing itself, which can be negative).
    pub(crate) fn epsilon_at_least(&self, delta: f64, floor: f64) -> Result<f64> {
        if delta <= self.inf_mass {
            return Err(Error::OutOfRange(format!(
                "delta = {delta:e} is below the resolution of the privacy-loss distribution \
                 (mass at infinity {:e}); use a smaller tail mass or another accountant",
                self.inf_mass
            )));
        }
        let n = self.masses.len();
        if n == 0 {
            return Ok(floor.max(0.0));
        }
        let mut a = self.inf_mass;
        let mut w_ref = self.value(n - 1);
        let mut b_scaled = 0.0; // Σ p_i e^{ω_ref − ω_i}
        // e^{ω_ref − ω_i} by a running product, recomputed every REFRESH atoms so its relative
        // error stays below ~REFRESH ulps; it only steers the search, the answer is verified.
        let e_h = self.h.exp();
        let mut ratio = 1.0;
        let mut since = 0;
        for i in (0..n).rev() {
            let w = self.value(i);
            if w_ref - w > REBASE {
                b_scaled *= (w - w_ref).exp();
                w_ref = w;
                ratio = 1.0;
                since = 0;
            } else if since == REFRESH {
                ratio = (w_ref - w).exp();
                since = 0;
            }
            a += self.masses[i];
            b_scaled += self.masses[i] * ratio;
            let a_cell = a + self.allowance(n - i);
            // For ε in [ω_{i−1}, ω_i): δ(ε) = a − e^{ε − ω_ref} b_scaled, and
            // e^{ω_{i−1} − ω_ref} b_scaled ≤ Σ p ≤ 1, so nothing here overflows.
            let (below, d_below) = if i > 0 {
                (self.value(i - 1), a_cell - b_scaled / (ratio * e_h))
            } else {
                (f64::NEG_INFINITY, a_cell)
            };
            if !d_below.is_finite() {
                return Err(Error::Numerical(format!(
                    "non-finite hockey-stick value {d_below} at privacy loss {below}"
                )));
            }
            if d_below > delta {
                // Crossing inside [below, w): solve a − e^{ε−ω_ref} b = δ.
                let solved = w_ref + ((a_cell - delta) / b_scaled).ln();
                let mut eps = if solved.is_nan() {
                    w
                } else {
                    solved.clamp(below, w)
                };
                // Rounding can leave δ(ε) a hair above δ: step up until the answer is verified
                // on the distribution itself, first within the cell, then atom by atom (above
                // the top atom only the mass at infinity remains, which is below δ).
                // The first step covers the running product's error (≤ 2·REFRESH ulps of b).
                let mut step = 2.0 * REFRESH as f64 * f64::EPSILON * eps.abs().max(1.0);
                while eps < w && self.delta(eps) > delta {
                    eps = (eps + step).min(w);
                    step *= 2.0;
                }
                let mut next = i + 1;
                while next < n && self.delta(eps) > delta {
                    eps = self.value(next);
                    next += 1;
                }
                return Ok(if eps > floor { eps } else { floor });
            }
            ratio *= e_h;
            since += 1;
        }
        Ok(floor)
    }

    /// Total finite mass.
    #[cfg(test)]
    pub(crate) fn finite_mass(&self) -> f64 {
        self.masses.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epsilon_inverts_delta() {
        let pmf = LatticePmf {
            h: 0.5,
            offset: -2,
            masses: vec![0.1, 0.2, 0.3, 0.2, 0.1, 0.05],
            inf_mass: 0.01,
            error_l2: 0.0,
        };
        for delta in [0.02, 0.05, 0.1, 0.2] {
            let e = pmf.epsilon(delta).unwrap();
            assert!(pmf.delta(e) <= delta + 1e-15, "delta {delta} eps {e}");
            assert!(
                e == 0.0 || pmf.delta(e * (1.0 - 1e-9)) > delta,
                "delta {delta} eps {e}: {} {}",
                pmf.delta(e),
                pmf.delta(e * (1.0 - 1e-9))
            );
        }
        assert!(pmf.epsilon(0.005).is_err());
    }

    /// A coarse grid (h = 1000, as for ε in the billions) answers δ(ε) without NaN: the
    /// running product `e^{ε−ω}·e^h` would be `0·∞` there.
    #[test]
    fn delta_on_a_coarse_grid_is_finite() {
        let pmf = LatticePmf {
            h: 1000.0,
            offset: 5,
            masses: vec![0.25; 4],
            inf_mass: 0.0,
            error_l2: 0.0,
        };
        for eps in [0.0, 1.0, 5400.0, 7500.0] {
            let d = pmf.delta(eps);
            // Every atom above ε counts almost fully (e^{ε−ω} ≤ e^{-500}).
            let expected = 0.25 * (0..4).filter(|&i| (5 + i) as f64 * 1000.0 > eps).count() as f64;
            assert!(
                (d - expected).abs() <= 1e-12,
                "delta({eps}) = {d}, expected {expected}"
            );
        }
        let e = pmf.epsilon(0.5).unwrap();
        assert!(e == 6000.0 && pmf.delta(e) <= 0.5, "{e}");
    }
}
