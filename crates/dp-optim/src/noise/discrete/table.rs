//! The discrete Gaussian `N_ℤ(0, p)` by rejection from boxes: exact, and about three random
//! words per draw.
//!
//! Write `f(m) = e^{−m²/(2p)}`. The magnitudes `m ≥ 0` are covered by `M` boxes of width
//! `w = 2^b` on `[0, B)`, `B = M·w`, and a tail `[B, ∞)` cut in blocks of `s` integers,
//! `s ≥ 0.7·p/B`, so that `f(m + s) ≤ f(m)/2` for `m ≥ B` (`(2ms + s²)/(2p) ≥ Bs/p ≥ 0.7 >
//! ln 2`). Heights are integers in units of `2^−24`:
//! - box `k` (`m ∈ [kw, (k + 1)w)`) has height `H_k ≥ 2^24·f(kw)`, the largest `f` in it, and
//!   squeeze `L_k ≤ 2^24·f((k + 1)w − 1)`, the smallest;
//! - tail block `j` has height `H_T·2^{−j}`, `H_T ≥ 2^24·f(B)`, so above `2^24·f` on it.
//!
//! Each height bound comes from the proven `f64` bracket of `e^{−x}`
//! ([`neg_exp_bracket`](super::neg_exp::neg_exp_bracket)) rounded outwards, and is checked in
//! the tests against exact brackets.
//!
//! One attempt picks box `k` with probability `w·H_k / T` or the tail with `2s·H_T / T` (`T` the
//! sum of these integers; Walker's alias table with integer thresholds, so exactly), `m`
//! uniform in the box — or, in the tail, block `j` with probability `2^{−(j+1)}` and `m`
//! uniform in it — and accepts `m` when `u·height < 2^24·f(m)` for `u` uniform on `[0, 1)`.
//! The probability of proposing and accepting `m` is `2^24·f(m)/T` in both cases, the same for
//! every `m`: accepted magnitudes have law `∝ f(m)` exactly. A fair sign, rejecting `−0`
//! (a fresh attempt) so that 0 is not counted twice, gives `P(X = x) ∝ e^{−x²/(2p)}` on ℤ.
//!
//! `u` is the word `ũ` of 64 random bits and the bits `V` after it, `u = (ũ + V)/2^64`. Below
//! the squeeze, `(ũ + 1)·H_k ≤ L_k·2^64`, `m` is accepted from `ũ` alone; otherwise the
//! comparison `(ũ + V)·H < 2^{88+j}·f(m)` is decided exactly by
//! [`below_scaled_neg_exp`](super::neg_exp::below_scaled_neg_exp). With boxes `σ/64…σ/32`
//! wide (`σ = √p`) to `8σ` (beyond which the tail's mass is about `10^−15`), 98.8–99.2% of
//! attempts are accepted and the squeeze alone decides 97.5–98.4% of them, at `σ = 2^24` and
//! `2^24.6` (boxes four times as narrow as `σ/16…σ/8` to `16σ`, where it was 95–97% and
//! 90–94%: a draw of the grid releases takes a quarter less time).

use std::sync::Arc;

use rand::Rng;

use super::neg_exp::{FAST_TOLERANCE, below_scaled_neg_exp, neg_exp_bracket};
use super::uniform_below_u64;
use crate::error::{Error, Result};

/// Heights are in units of `2^−HEIGHT_BITS`.
const HEIGHT_BITS: u32 = 24;

/// The most variance the table takes (`σ < 2^26`).
const MAX_VARIANCE: u128 = 1 << 52;

/// The discrete Gaussian `N_ℤ(0, p)` (integer variance `p ≥ 1`) sampled by rejection from a
/// table of boxes (module docs): the same law as
/// [`DiscreteGaussian`](super::DiscreteGaussian) with `q = 1` (Canonne, Kamath & Steinke, "The
/// discrete Gaussian for differential privacy", NeurIPS 2020), in about three 64-bit words per
/// draw instead of a dozen. The grid releases of this crate draw their noise with it.
///
/// Cloning shares the table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableGaussian {
    layout: Arc<Layout>,
}

/// The boxes, the tail and the alias table of a [`TableGaussian`].
#[derive(Debug, PartialEq)]
struct Layout {
    /// Twice the variance: the denominator of `x = m²/(2p)`.
    two_p: u128,
    /// `b`: boxes are `2^b` wide.
    width_bits: u32,
    /// `(H_k, L_k)` per box.
    boxes: Vec<(u64, u64)>,
    /// `B`, `s` and `H_T` of the tail.
    tail: (u64, u64, u64),
    /// `log2` of the number of alias columns (a power of two at least `M + 1`).
    column_bits: u32,
    /// Per column: keep the column when a uniform integer on `[0, T)` is below the first,
    /// else take the entry of the second (`M` is the tail).
    columns: Vec<(u64, usize)>,
    /// `T`.
    total: u64,
    /// The fast bracket's relative tolerance ([`FAST_TOLERANCE`] outside tests).
    tolerance: f64,
}

impl TableGaussian {
    /// The law `N_ℤ(0, p)`: boxes `2^b` wide with `2^b ≈ σ/64…σ/32` (`σ = √p`; width 1 for
    /// `σ < 64`), to about `8σ` (at most 511 boxes).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `p = 0` or `p > 2^52`.
    pub fn new(p: u128) -> Result<Self> {
        if p == 0 || p > MAX_VARIANCE {
            return Err(Error::InvalidParameter {
                name: "sigma",
                value: p as f64,
                reason: "the table sampler takes an integer variance in [1, 2^52]",
            });
        }
        let sigma = (p as f64).sqrt();
        let width_bits = (sigma.log2().floor() as i32 - 5).max(0) as u32;
        let boxes = (8.0 * sigma / f64::from(1u32 << width_bits)).ceil() as usize;
        Self::with_layout(p, width_bits, boxes.clamp(1, 511), FAST_TOLERANCE)
    }

    /// The table with `boxes` boxes `2^width_bits` wide and the fast bracket's `tolerance`
    /// (tests use few boxes and a wide tolerance to exercise the tail and the exact path).
    fn with_layout(p: u128, width_bits: u32, boxes: usize, tolerance: f64) -> Result<Self> {
        let two_p = 2 * p;
        let scale = f64::from(1u32 << HEIGHT_BITS);
        let bracket = |m: u64| neg_exp_bracket(u128::from(m) * u128::from(m), two_p, tolerance);
        let width = 1u64 << width_bits;
        let bars: Vec<(u64, u64)> = (0..boxes as u64)
            .map(|k| {
                let height = (bracket(k * width).1 * scale).ceil() as u64;
                let squeeze = (bracket((k + 1) * width - 1).0 * scale).floor() as u64;
                (height, squeeze)
            })
            .collect();
        let start = boxes as u64 * width;
        // s = ⌈7p/(10B)⌉, at least 1.
        let step = u64::try_from((7 * p).div_ceil(10 * u128::from(start)))
            .map_err(|_| too_wide(p))?
            .max(1);
        let tail_height = ((bracket(start).1 * scale).ceil() as u64).max(1);
        let mut weights: Vec<u64> = bars.iter().map(|&(h, _)| h << width_bits).collect();
        weights.push(
            step.checked_mul(2 * tail_height)
                .ok_or_else(|| too_wide(p))?,
        );
        let total = weights
            .iter()
            .try_fold(0u64, |t, &w| t.checked_add(w))
            .filter(|&t| t < 1 << 62)
            .ok_or_else(|| too_wide(p))?;
        let column_bits = weights.len().next_power_of_two().trailing_zeros();
        weights.resize(1 << column_bits, 0);
        let columns = alias_columns(&weights, total);
        Ok(Self {
            layout: Arc::new(Layout {
                two_p,
                width_bits,
                boxes: bars,
                tail: (start, step, tail_height),
                column_bits,
                columns,
                total,
                tolerance,
            }),
        })
    }

    /// One draw.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when a magnitude or an exact comparison leaves the integer
    /// range (module docs of the comparison; probability below `2^−900`).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<i128> {
        let l = &*self.layout;
        loop {
            let word = rng.next_u64();
            let negative = word & 1 == 1;
            let column = word.checked_shr(64 - l.column_bits).unwrap_or(0) as usize;
            let (keep, alias) = l.columns[column];
            let entry = if uniform_below_u64(rng, l.total) < keep {
                column
            } else {
                alias
            };
            let accepted = match l.boxes.get(entry) {
                Some(&(height, squeeze)) => {
                    let offset = (word >> 1) & ((1 << l.width_bits) - 1);
                    let m = ((entry as u64) << l.width_bits) | offset;
                    let u = rng.next_u64();
                    if (u128::from(u) + 1) * u128::from(height) <= u128::from(squeeze) << 64 {
                        Some(m)
                    } else {
                        self.accept(rng, (u, height), HEIGHT_BITS + 64, m)?
                    }
                }
                None => {
                    let (start, step, height) = l.tail;
                    let block = half_geometric(rng);
                    let offset = uniform_below_u64(rng, step);
                    let m = u64::from(block)
                        .checked_mul(step)
                        .and_then(|v| v.checked_add(start))
                        .and_then(|v| v.checked_add(offset))
                        .ok_or_else(|| too_wide(l.two_p / 2))?;
                    let u = rng.next_u64();
                    let shift = (HEIGHT_BITS + 64).saturating_add(block);
                    self.accept(rng, (u, height), shift, m)?
                }
            };
            match accepted {
                Some(0) if negative => continue,
                Some(m) => {
                    return Ok(if negative {
                        -i128::from(m)
                    } else {
                        i128::from(m)
                    });
                }
                None => continue,
            }
        }
    }

    /// `Some(m)` when `(u + V)·height < 2^shift·f(m)`, exactly.
    fn accept<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        word: (u64, u64),
        shift: u32,
        m: u64,
    ) -> Result<Option<u64>> {
        let l = &*self.layout;
        let x = (u128::from(m) * u128::from(m), l.two_p);
        Ok(below_scaled_neg_exp(rng, word, shift, x, l.tolerance)?.then_some(m))
    }
}

/// `j` with probability `2^{−(j+1)}`: the number of zero bits before the first one.
fn half_geometric<R: Rng + ?Sized>(rng: &mut R) -> u32 {
    let mut zeros = 0u32;
    loop {
        let w = rng.next_u64();
        if w != 0 {
            return zeros.saturating_add(w.trailing_zeros());
        }
        zeros = zeros.saturating_add(64);
    }
}

/// Walker's alias table for integer `weights` (a power-of-two count `N`) summing to `total`:
/// column `c` keeps itself for a uniform integer on `[0, total)` below `keep_c` and otherwise
/// gives `alias_c`. Vose's construction in integers (each entry's mass scaled by `N`, each
/// column holding `total`), so entry `i` is given with probability exactly
/// `weights_i / total`.
fn alias_columns(weights: &[u64], total: u64) -> Vec<(u64, usize)> {
    let n = weights.len() as u128;
    let cap = u128::from(total);
    let mut mass: Vec<u128> = weights.iter().map(|&w| u128::from(w) * n).collect();
    let mut columns: Vec<(u64, usize)> = (0..weights.len()).map(|i| (total, i)).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) =
        (0..weights.len()).partition(|&i| mass[i] < cap);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        // mass[s] < cap: the column keeps s for its mass and gives l for the rest.
        columns[s] = (mass[s] as u64, l);
        mass[l] -= cap - mass[s];
        if mass[l] < cap {
            large.pop();
            small.push(l);
        }
    }
    // Exact integers: the entries left hold exactly `cap` each (their total is their count
    // times `cap`, none above it), so they keep their own column.
    columns
}

/// The error for a table beyond the integer ranges.
fn too_wide(p: u128) -> Error {
    Error::InvalidParameter {
        name: "sigma",
        value: p as f64,
        reason: "the table sampler's integers overflowed",
    }
}

#[cfg(test)]
mod tests;
