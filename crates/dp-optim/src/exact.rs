//! Exact clipped sums: every per-example term is quantised to integers on the noise grid,
//! with its norm bound enforced on the integers, and the terms are added in integer
//! arithmetic — so the sum a private solver releases is exactly the sum the privacy argument
//! is about, whatever `n`, the summation order, the threads or the block boundaries.
//!
//! # Why
//! A clipped sum computed in `f64` is not the sum of the clipped terms: each addition rounds,
//! and over `n` terms the computed sum can be off by about `h·u·n·C` (`h` the summation
//! height, `u = 2^-53`). Two neighbouring datasets then give computed sums that can differ by
//! more than the clip `C` the ledger states (cancellation of huge terms shows it: the
//! `exact_sum` tests build such a pair), so the sensitivity of the value actually released
//! was only approximately the recorded one, the more so the larger `n`.
//!
//! # The fixed-point argument
//! Let `γ` be the release grid (a power of two, [`crate::Noise::on_grid`]) and `r = C/γ` the
//! clip in grid units. For each example the solver computes its clipped term `v ∈ R^d`
//! (`‖v‖ ≤ C` up to rounding) and maps it to an integer vector `k ∈ ℤ^d`:
//!
//! 1. `k_j = round(v_j/γ)` (to nearest, ties to even);
//! 2. **enforce** `Σ_j k_j² ≤ R²` with the integer `R² = ⌊(r + √d/2)²⌋` ([`Quantiser::radius2`]),
//!    checked exactly: if the check fails (only when rounding or a misbehaving oracle pushed
//!    the term past the bound), the term is scaled to norm `r`, rounded to nearest and, if that
//!    still fails, towards zero; if that fails too the term is replaced by `0`. Every accepted
//!    `k` satisfies the bound exactly, whatever the floating-point arithmetic before it did.
//!
//! Round to nearest moves each coordinate by at most `1/2`, so for `‖v‖ ≤ C` in exact
//! arithmetic `‖k‖ ≤ r + √d/2` and the check passes (the scaling is for the rare term pushed
//! over by rounding). The map `v ↦ k` depends only on that example (and the current iterate,
//! the clip and the grid, which are public or released), never on the other examples.
//!
//! The sum `S = Σ_i k_i ∈ ℤ^d` is computed exactly ([`ExactSum`]): integer-valued `f64`
//! partial sums over blocks short enough that every partial sum stays below `2^53` in
//! magnitude (so every addition is exact), flushed into `i128` totals. `S` is therefore a
//! function of the *set* of terms: equal under any order, block cut or thread count.
//!
//! Add/remove one example changes `S` by its `k`, `‖k‖ ≤ R`; replace-one by the difference of
//! two, `≤ 2R`. The release is `S + K` with `K` exact discrete Gaussian noise `N_ℤ(0, p)^d`,
//! `p = ⌈(σC/γ)²⌉` (Canonne, Kamath & Steinke, "The discrete Gaussian for differential
//! privacy", NeurIPS 2020, drawn by [`crate::discrete::TableGaussian`]), and then `γ·(S + K)` in `f64`,
//! a post-processing of the integer release. Hence the ledger's sensitivity
//! ([`Quantiser::sensitivity`]) is `Δ = γR ≤ C + γ√d/2`, rounded up — half the slack `γ√d`
//! of rounding a computed sum (noise module, § Privacy) — and the mechanism is the Gaussian
//! of std `σC` and sensitivity `Δ` with its discrete Gaussian attached
//! ([`SumRelease::mechanism`]), priced as in the noise module's § Privacy with the integer
//! shift `μ = k` (or `k − k'`) of norm `≤ R` exactly.
//!
//! # Cost
//! The fast path quantises a term with two floating-point additions per coordinate (the
//! `1.5·2^52` rounding trick, exact for `|t| ≤ 2^51`), checks the norm with the sum of squares
//! of integer-valued doubles — exact when it is below `2^53` (every square and partial sum is
//! an integer below `2^53`; a larger true sum makes the computed one at least `2^53`, by
//! monotonicity of rounding; the same holds for squares added by fused multiply–adds), so the fast check `computed ≤ min(R², 2^53 − 1)` is exact — and,
//! in the same pass, writes the block's partial sums with the term added to a second buffer,
//! which replaces them when the check passes (a rejected term touches nothing); four rows
//! can share one such pass ([`ExactSum::add_scaled_four_hinting`]: the partial sums are read
//! and written once for the four terms, and replaced only when all four pass). Terms the fast
//! path cannot decide (`R² ≥ 2^53`, i.e. noise multipliers below about 0.35, or a term over
//! the bound) take an exact `u128` path. The pass is compiled for AVX2 and AVX-512 too and
//! chosen at run time ([`pulp`]): the same operations in the same order, so the same integers.

use std::ops::Range;

use dp_accounting::{GridGaussian, Mechanism};
use ndarray::{ArrayView1, ArrayViewMut1};
use rand::Rng;

use crate::error::{Error, Result, positive};
use crate::noise::{GridRelease, Noise};

/// `1.5·2^52`: `(t + M) − M` is `t` rounded to the nearest integer (ties to even) for
/// `|t| ≤ 2^51`.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// `2^53`: integers up to it in magnitude are exact in `f64`.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// `2^63`.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// Independent accumulators of [`ExactSum::add_scaled`]'s sum of squares.
const LANES: usize = 8;

/// The quantisation of clipped terms on a grid: the clip `C`, the grid `γ`, the dimension `d`
/// and the integer norm bound `R²` every quantised term satisfies exactly (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantiser {
    clip: f64,
    gamma: f64,
    inv_gamma: f64,
    dim: usize,
    radius2: u128,
    /// `min(R², 2^53 − 1)` (exact in `f64`): the fast path's acceptance bound.
    fast_bound: f64,
    /// Terms per block of `f64` partial sums: `block·⌊R⌋ ≤ 2^53`.
    block: usize,
}

impl Quantiser {
    /// The quantiser of terms of norm `≤ clip` in dimension `dim` on the grid `gamma`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a clip that is not finite and positive, a grid that is
    /// not a positive normal power of two, or `clip/gamma ≥ 2^51`.
    pub fn new(clip: f64, gamma: f64, dim: usize) -> Result<Self> {
        let clip = positive("clip", clip)?;
        let gamma = positive("grid", gamma)?;
        if !gamma.is_normal() || gamma.to_bits() & ((1u64 << 52) - 1) != 0 {
            return Err(Error::InvalidParameter {
                name: "grid",
                value: gamma,
                reason: "must be a positive normal power of two",
            });
        }
        let r = clip / gamma; // exact unless subnormal (then smaller: a coarser bound)
        if r >= EXACT / 4.0 {
            return Err(Error::InvalidParameter {
                name: "clip",
                value: clip,
                reason: "clip/grid must be below 2^51",
            });
        }
        // R² = ⌊(r + √d/2)²⌋ as computed: any integer is a valid bound (it is enforced and the
        // ledger's sensitivity is computed from it); this one admits every term of norm ≤ C
        // rounded to nearest, up to the rounding of this line. r + √d/2 < 2^52, R² < 2^104.
        let a = r + (dim as f64).sqrt() / 2.0;
        let radius2 = (a * a).floor() as u128;
        let fast_bound = radius2.min((1u128 << 53) - 1) as f64;
        let kmax = isqrt(radius2).max(1);
        let block = usize::try_from((1u128 << 53) / kmax).unwrap_or(usize::MAX);
        Ok(Self {
            clip,
            gamma,
            inv_gamma: 1.0 / gamma,
            dim,
            radius2,
            fast_bound,
            block,
        })
    }

    /// The clip `C`.
    pub fn clip(&self) -> f64 {
        self.clip
    }

    /// The grid `γ`.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The dimension `d`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The integer bound `R²` on `Σ_j k_j²` of every quantised term (module docs).
    pub fn radius2(&self) -> u128 {
        self.radius2
    }

    /// The L2 sensitivity of an [`ExactSum`] in real units per example (add/remove):
    /// `γ·√R²`, rounded up, at most `C + γ√d/2` (up to that rounding).
    ///
    /// # Privacy
    /// One example moves the integer sum by its quantised term `k`, `‖k‖² ≤ R²` exactly
    /// (module docs, the fixed-point argument).
    pub fn sensitivity(&self) -> f64 {
        // `as f64` and `sqrt` each round by at most half an ulp: four ulps up cover both.
        self.gamma * (self.radius2 as f64).sqrt() * (1.0 + 4.0 * f64::EPSILON)
    }
}

/// `⌊√x⌋` for `x < 2^104`.
fn isqrt(x: u128) -> u128 {
    let mut s = (x as f64).sqrt() as u128;
    while s * s > x {
        s -= 1;
    }
    while (s + 1) * (s + 1) <= x {
        s += 1;
    }
    s
}

/// Whether the integer-valued `k` satisfies `Σ k_j² ≤ r2`, exactly.
fn within(k: &[f64], r2: u128) -> bool {
    let mut s = 0u128;
    for &v in k {
        let a = v.abs();
        // |k_j|² > r2 when |k_j| ≥ 2^63 > 2^52 > √r2 (and NaN fails here too).
        if a.is_nan() || a >= TWO_63 || a.fract() != 0.0 {
            return false;
        }
        let a = u128::from(a as u64);
        s += a * a; // ≤ r2 + 2^126 < 2^128
        if s > r2 {
            return false;
        }
    }
    true
}

/// An exact sum of quantised clipped terms ([`Quantiser`], module docs): integer-valued `f64`
/// partial sums over blocks, flushed into `i128` totals. Build one per release with
/// [`ExactSum::new`]; [`crate::ClippedSum::exact_clipped_sum`] fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactSum {
    quantiser: Quantiser,
    total: Vec<i128>,
    partial: Vec<f64>,
    pending: usize,
    /// The partial sums with the term being checked added ([`ExactSum::add_scaled`]).
    next: Vec<f64>,
    scratch: Vec<f64>,
}

impl ExactSum {
    /// An empty sum for `quantiser`'s terms.
    pub fn new(quantiser: Quantiser) -> Self {
        let d = quantiser.dim;
        Self {
            quantiser,
            total: vec![0; d],
            partial: vec![0.0; d],
            pending: 0,
            next: vec![0.0; d],
            scratch: vec![0.0; d],
        }
    }

    /// The quantiser.
    pub fn quantiser(&self) -> &Quantiser {
        &self.quantiser
    }

    /// Resets the sum to zero.
    pub fn clear(&mut self) {
        self.total.fill(0);
        self.partial.fill(0.0);
        self.pending = 0;
    }

    /// Adds the quantised term of `v` (a clipped per-example term of length `d`).
    ///
    /// # Panics
    /// If `v` does not have length `d`.
    pub fn add_term(&mut self, v: ArrayView1<'_, f64>) {
        match v.as_slice() {
            Some(s) => self.add_scaled(1.0, s),
            None => {
                let s = v.to_vec();
                self.add_scaled(1.0, &s);
            }
        }
    }

    /// Adds the quantised term of `c·row` (a GLM's clipped per-example gradient, `|c|·‖row‖ ≤
    /// C` up to rounding): `k_j = round((c/γ)·row_j)` on the fast path (module docs). The row's
    /// entries are `f64`, or `f32` widened exactly to `f64`: the term is that of the widened
    /// row. [`ExactSum::add_scaled_one_pass`] adds the same term in one pass.
    ///
    /// # Panics
    /// If `row` does not have length `d`.
    #[inline]
    pub fn add_scaled<T: Copy + Into<f64>>(&mut self, c: f64, row: &[T]) {
        let d = self.quantiser.dim;
        assert_eq!(row.len(), d, "term of the wrong length");
        let s = c * self.quantiser.inv_gamma;
        // The term `k` goes to `scratch`; its sum of squares is checked; an accepted term is
        // added to the block's partial sums. Three elementwise passes over `d` entries in
        // cache, each of which vectorises.
        let term = &mut self.scratch[..d];
        for (k, &r) in term.iter_mut().zip(row) {
            *k = (s * r.into() + ROUNDER) - ROUNDER;
        }
        // LANES independent sums of squares: the additions do not wait on each other.
        let mut sq = [0.0f64; LANES];
        let (chunks, rest) = term.as_chunks::<LANES>();
        for k in chunks {
            for l in 0..LANES {
                sq[l] += k[l] * k[l];
            }
        }
        for &k in rest {
            sq[0] += k * k;
        }
        let total: f64 = sq.iter().sum();
        // Exact: the computed sum of squares is below 2^53, so equal to the true one, and
        // every k_j is an integer (module docs, § Cost). NaN fails the comparison. A term the
        // fast check rejects takes the exact path, which rewrites `scratch`.
        if total <= self.quantiser.fast_bound || self.slow_term(c, row) {
            self.add_scratch();
        }
    }

    /// [`ExactSum::add_scaled`] for an `f64` or `f32` row: the same integer term, in one pass
    /// that computes `k`, its sum of squares and the partial sums with `k` added (into a second
    /// buffer, which replaces the partial sums when the fast check passes), with the widest
    /// vectors the processor has (chosen at run time by [`pulp`]: AVX-512 or AVX2 where
    /// present; `f32` entries widened exactly to `f64` lanes). The sum of squares is added in another order
    /// than by `add_scaled`, which decides the same: its terms are integers, so every order
    /// gives the exact sum while it is below `2^53`, and a value at least `2^53` otherwise
    /// (module docs, § Cost).
    ///
    /// # Panics
    /// If `row` does not have length `d`.
    #[inline]
    pub fn add_scaled_one_pass<T: Widen>(&mut self, c: f64, row: &[T]) {
        self.add_scaled_one_pass_hinting(c, row, |_| {});
    }

    /// [`ExactSum::add_scaled_one_pass`], calling `hint(range)` as the pass reaches each range
    /// of entries (in order, together covering `0..d`): a caller asks there for memory it will
    /// need next (a later row), spread over the pass instead of all at once. `hint` changes
    /// nothing the sum computes.
    ///
    /// # Panics
    /// If `row` does not have length `d`.
    #[inline]
    pub fn add_scaled_one_pass_hinting<T: Widen>(
        &mut self,
        c: f64,
        row: &[T],
        hint: impl FnMut(Range<usize>),
    ) {
        let d = self.quantiser.dim;
        assert_eq!(row.len(), d, "term of the wrong length");
        let total = pulp::Arch::new().dispatch(FusedTerm {
            s: c * self.quantiser.inv_gamma,
            row,
            partial: &self.partial,
            next: &mut self.next,
            hint,
        });
        // An accepted term has `|k_j| ≤ ⌊R⌋`: every addition into `next` was exact (`|partial
        // + k| ≤ 2^53`, integers). A rejected one leaves `partial` as it was.
        if total <= self.quantiser.fast_bound {
            std::mem::swap(&mut self.partial, &mut self.next);
            self.counted(1);
        } else if self.slow_term(c, row) {
            self.add_scratch();
        }
    }

    /// [`ExactSum::add_scaled_one_pass_hinting`] for four rows at once: adds the terms of
    /// `c[0]·rows[0]`, …, `c[3]·rows[3]` — the same four integer terms as four calls of
    /// [`ExactSum::add_scaled_one_pass`], so the same sum — in one pass over the partial sums
    /// instead of four, calling `hint(range)` as the pass reaches each range of entries (in
    /// order, together covering `0..d`). The pass writes the partial sums with all four terms
    /// added to the second buffer; it replaces them only when every term passes the fast
    /// check. Otherwise (a term over the bound, or a block with fewer than four places left),
    /// the four terms are added one by one, each checked on its own, so a rejected term still
    /// touches nothing. Exact: while the four are accepted, every entry of every term is an
    /// integer of magnitude at most `⌊R⌋` and the block then holds at most `block` terms, so
    /// every partial sum, in any order of the additions, is an integer of magnitude at most
    /// `block·⌊R⌋ ≤ 2^53`.
    ///
    /// # Panics
    /// If a row does not have length `d`.
    #[inline]
    pub fn add_scaled_four_hinting<T: Widen>(
        &mut self,
        c: [f64; 4],
        rows: [&[T]; 4],
        mut hint: impl FnMut(Range<usize>),
    ) {
        let q = self.quantiser;
        for row in rows {
            assert_eq!(row.len(), q.dim, "term of the wrong length");
        }
        if self.pending + 4 > q.block {
            hint(0..q.dim);
        } else {
            let totals = pulp::Arch::new().dispatch(FusedFour {
                s: c.map(|c| c * q.inv_gamma),
                rows,
                partial: &self.partial,
                next: &mut self.next,
                hint,
            });
            if totals.iter().all(|&t| t <= q.fast_bound) {
                std::mem::swap(&mut self.partial, &mut self.next);
                self.counted(4);
                return;
            }
        }
        for (c, row) in c.into_iter().zip(rows) {
            self.add_scaled_one_pass(c, row);
        }
    }

    /// Adds the accepted term in `scratch` to the block's partial sums (every addition exact:
    /// `|partial + k| ≤ 2^53`, integers) and counts it.
    fn add_scratch(&mut self) {
        for (p, &k) in self.partial.iter_mut().zip(&self.scratch) {
            *p += k;
        }
        self.counted(1);
    }

    /// [`ExactSum::add_scaled`] for a sparse row: the entries `values` at the (distinct)
    /// columns `indices`, every other entry zero. The same integer term as `add_scaled` on the
    /// dense row, in `O(len)` (the rare exact path of the module docs, on the densified row, in
    /// `O(d)`): a zero entry quantises to 0, and the fast check's sum of squares is exact
    /// whatever the order of its terms.
    ///
    /// # Panics
    /// If `indices` and `values` differ in length, or an index is `≥ d`.
    pub fn add_scaled_sparse(&mut self, c: f64, indices: &[usize], values: &[f64]) {
        assert_eq!(indices.len(), values.len(), "indices and values differ");
        let s = c * self.quantiser.inv_gamma;
        let round = |r: f64| (s * r + ROUNDER) - ROUNDER;
        let total: f64 = values.iter().map(|&r| round(r) * round(r)).sum();
        if total <= self.quantiser.fast_bound {
            for (&j, &r) in indices.iter().zip(values) {
                self.partial[j] += round(r);
            }
            self.counted(1);
        } else {
            let mut row = vec![0.0; self.quantiser.dim];
            for (&j, &r) in indices.iter().zip(values) {
                row[j] = r;
            }
            if self.slow_term(c, &row) {
                self.add_scratch();
            }
        }
    }

    /// Counts `terms` accepted terms (the block had room for them); flushes the block when it
    /// is full.
    #[inline]
    fn counted(&mut self, terms: usize) {
        self.pending += terms;
        if self.pending >= self.quantiser.block {
            self.flush();
        }
    }

    /// The exact path: writes into `scratch` an integer term satisfying the bound (module docs,
    /// step 2) and returns `true`, or `false` for a term replaced by zero.
    #[cold]
    fn slow_term<T: Copy + Into<f64>>(&mut self, c: f64, row: &[T]) -> bool {
        let q = self.quantiser;
        let t = &mut self.scratch;
        for (t, &r) in t.iter_mut().zip(row) {
            *t = (c * r.into()) * q.inv_gamma;
        }
        if t.iter().any(|v| !v.is_finite()) {
            return false;
        }
        let nearest = |t: &mut [f64]| t.iter_mut().for_each(|v| *v = v.round_ties_even());
        let saved = t.clone();
        nearest(t);
        if within(t, q.radius2) {
            return true;
        }
        // Scale to norm r = C/γ, then round to nearest, or towards zero.
        t.copy_from_slice(&saved);
        let norm = crate::numeric::l2_norm(ArrayView1::from(&t[..]));
        let r = q.clip * q.inv_gamma;
        if norm > r {
            let f = r / norm;
            t.iter_mut().for_each(|v| *v *= f);
        }
        let scaled = t.clone();
        nearest(t);
        if within(t, q.radius2) {
            return true;
        }
        t.iter_mut().zip(&scaled).for_each(|(v, s)| *v = s.trunc());
        within(t, q.radius2)
    }

    /// Moves the block's partial sums into the totals (exact: each is an integer of magnitude
    /// at most `2^53`).
    fn flush(&mut self) {
        for (t, p) in self.total.iter_mut().zip(&mut self.partial) {
            *t += i128::from(*p as i64);
            *p = 0.0;
        }
        self.pending = 0;
    }

    /// Adds `other` (a sum with the same quantiser) to this one, exactly.
    ///
    /// # Panics
    /// If the quantisers differ.
    pub fn merge(&mut self, mut other: ExactSum) {
        assert_eq!(self.quantiser, other.quantiser, "sums on different grids");
        self.flush();
        other.flush();
        for (t, o) in self.total.iter_mut().zip(&other.total) {
            *t += o;
        }
    }

    /// The exact sum `S = Σ_i k_i` in grid units.
    pub fn totals(&mut self) -> &[i128] {
        self.flush();
        &self.total
    }
}

/// An entry of the rows [`ExactSum::add_scaled_one_pass`] reads: `f64`, or `f32` widened
/// exactly to `f64`. Implemented for these two types only.
pub trait Widen: Copy + Into<f64> + Send + Sync + 'static + sealed::Sealed {
    /// The entries of `chunk` (`S::F64_LANES` of them) as one vector of `f64` lanes, in order.
    fn lanes<S: pulp::Simd>(chunk: &[Self]) -> S::f64s;

    /// The entries of `chunk` (fewer than `S::F64_LANES`) as the first lanes of a vector of
    /// `f64` lanes, in order, the others zero.
    fn partial_lanes<S: pulp::Simd>(simd: S, chunk: &[Self]) -> S::f64s;
}

impl Widen for f64 {
    #[inline(always)]
    fn lanes<S: pulp::Simd>(chunk: &[f64]) -> S::f64s {
        pulp::bytemuck::pod_read_unaligned(pulp::bytemuck::cast_slice(chunk))
    }

    #[inline(always)]
    fn partial_lanes<S: pulp::Simd>(simd: S, chunk: &[f64]) -> S::f64s {
        simd.partial_load_f64s(chunk)
    }
}

impl Widen for f32 {
    #[inline(always)]
    fn lanes<S: pulp::Simd>(chunk: &[f32]) -> S::f64s {
        let mut v: S::f64s = pulp::bytemuck::Zeroable::zeroed();
        let lanes: &mut [f64] = pulp::bytemuck::cast_slice_mut(std::slice::from_mut(&mut v));
        for (l, &x) in lanes.iter_mut().zip(chunk) {
            *l = f64::from(x);
        }
        v
    }

    #[inline(always)]
    fn partial_lanes<S: pulp::Simd>(_: S, chunk: &[f32]) -> S::f64s {
        Self::lanes::<S>(chunk)
    }
}

/// Keeps [`Widen`] to `f64` and `f32`.
mod sealed {
    /// Implemented by `f64` and `f32` only.
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
}

/// The pass of [`ExactSum::add_scaled_one_pass`] as an operation [`pulp`] compiles for each
/// instruction set: writes `next = partial + k` with `k_j = (s·row_j + M) − M` (round to
/// nearest for `|s·row_j| ≤ 2^51`, `row_j` widened exactly to `f64`) and returns `Σ_j k_j²`.
/// Every operation is a separate IEEE addition or multiplication (no fused multiply–add), so
/// `k` and `next` are the same on every instruction set.
struct FusedTerm<'a, T, H> {
    s: f64,
    row: &'a [T],
    partial: &'a [f64],
    next: &'a mut [f64],
    /// Called with each range of entries as the pass reaches it.
    hint: H,
}

impl<T: Widen, H: FnMut(Range<usize>)> pulp::WithSimd for FusedTerm<'_, T, H> {
    type Output = f64;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> f64 {
        let Self {
            s,
            row,
            partial,
            next,
            mut hint,
        } = self;
        let lanes = S::F64_LANES;
        let (parts, part_rest) = S::as_simd_f64s(partial);
        let (nexts, next_rest) = S::as_mut_simd_f64s(next);
        let (rows, row_rest) = row.split_at(parts.len() * lanes);
        let (vs, vm) = (simd.splat_f64s(s), simd.splat_f64s(ROUNDER));
        // Two independent sums of squares: the additions do not wait on each other.
        let (mut even, mut odd) = (simd.splat_f64s(0.0), simd.splat_f64s(0.0));
        let (parts2, parts1) = parts.as_chunks::<2>();
        let (nexts2, nexts1) = nexts.as_chunks_mut::<2>();
        let (rows2, rows1) = rows.split_at(parts2.len() * 2 * lanes);
        for (j, ((r, p), n)) in rows2
            .chunks_exact(2 * lanes)
            .zip(parts2)
            .zip(nexts2)
            .enumerate()
        {
            hint(2 * lanes * j..2 * lanes * (j + 1));
            let (r0, r1) = r.split_at(lanes);
            n[0] = simd.add_f64s(p[0], quantise(simd, vs, vm, T::lanes::<S>(r0), &mut even));
            n[1] = simd.add_f64s(p[1], quantise(simd, vs, vm, T::lanes::<S>(r1), &mut odd));
        }
        for ((r, &p), n) in rows1.chunks_exact(lanes).zip(parts1).zip(nexts1) {
            *n = simd.add_f64s(p, quantise(simd, vs, vm, T::lanes::<S>(r), &mut even));
        }
        hint(rows2.len()..row.len());
        // The last `d mod lanes` entries as one vector, zero beyond them (which adds `k = 0`).
        if !row_rest.is_empty() {
            let p = simd.partial_load_f64s(part_rest);
            let k = quantise(simd, vs, vm, T::partial_lanes(simd, row_rest), &mut odd);
            simd.partial_store_f64s(next_rest, simd.add_f64s(p, k));
        }
        simd.reduce_sum_f64s(simd.add_f64s(even, odd))
    }
}

/// The pass of [`ExactSum::add_scaled_four_hinting`] as an operation [`pulp`] compiles for
/// each instruction set: writes `next = partial + (k_0 + k_1) + (k_2 + k_3)` with `k_t` the
/// term of row `t` as in [`FusedTerm`] (scale `s[t]`) and returns the four `Σ_j k_tj²`. The
/// rows are read side by side, so the partial sums are read and written once for the four.
struct FusedFour<'a, T, H> {
    s: [f64; 4],
    rows: [&'a [T]; 4],
    partial: &'a [f64],
    next: &'a mut [f64],
    /// Called with each range of entries as the pass reaches it.
    hint: H,
}

impl<T: Widen, H: FnMut(Range<usize>)> pulp::WithSimd for FusedFour<'_, T, H> {
    type Output = [f64; 4];

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> [f64; 4] {
        let Self {
            s,
            rows,
            partial,
            next,
            mut hint,
        } = self;
        let (lanes, d) = (S::F64_LANES, partial.len());
        let (parts, part_rest) = S::as_simd_f64s(partial);
        let (nexts, next_rest) = S::as_mut_simd_f64s(next);
        let full = parts.len() * lanes;
        let vs = [
            simd.splat_f64s(s[0]),
            simd.splat_f64s(s[1]),
            simd.splat_f64s(s[2]),
            simd.splat_f64s(s[3]),
        ];
        let vm = simd.splat_f64s(ROUNDER);
        let mut squares = [simd.splat_f64s(0.0); 4];
        // Each row as its whole vectors and its tail (explicitly: `array::map` here is not
        // inlined).
        let [(r0, t0), (r1, t1), (r2, t2), (r3, t3)] = [
            rows[0].split_at(full),
            rows[1].split_at(full),
            rows[2].split_at(full),
            rows[3].split_at(full),
        ];
        for (j, (&p, n)) in parts.iter().zip(nexts.iter_mut()).enumerate() {
            let at = j * lanes;
            // One call per two vectors, as in `FusedTerm`.
            if j % 2 == 0 {
                hint(at..full.min(at + 2 * lanes));
            }
            let e = at..at + lanes;
            let r = [
                T::lanes::<S>(&r0[e.clone()]),
                T::lanes::<S>(&r1[e.clone()]),
                T::lanes::<S>(&r2[e.clone()]),
                T::lanes::<S>(&r3[e]),
            ];
            *n = simd.add_f64s(p, four_terms(simd, &vs, vm, r, &mut squares));
        }
        hint(full..d);
        // The last `d mod lanes` entries as one vector, zero beyond them (which adds `k = 0`).
        if !part_rest.is_empty() {
            let r = [
                T::partial_lanes(simd, t0),
                T::partial_lanes(simd, t1),
                T::partial_lanes(simd, t2),
                T::partial_lanes(simd, t3),
            ];
            let p = simd.partial_load_f64s(part_rest);
            let k = four_terms(simd, &vs, vm, r, &mut squares);
            simd.partial_store_f64s(next_rest, simd.add_f64s(p, k));
        }
        [
            simd.reduce_sum_f64s(squares[0]),
            simd.reduce_sum_f64s(squares[1]),
            simd.reduce_sum_f64s(squares[2]),
            simd.reduce_sum_f64s(squares[3]),
        ]
    }
}

/// One vector of entries of [`FusedFour`]'s four rows (`r[t]`, scale `vs[t]`): returns
/// `(k_0 + k_1) + (k_2 + k_3)`, each `k_t` by [`quantise`], which adds `k_t²` to
/// `squares[t]`.
#[inline(always)]
fn four_terms<S: pulp::Simd>(
    simd: S,
    vs: &[S::f64s; 4],
    vm: S::f64s,
    r: [S::f64s; 4],
    squares: &mut [S::f64s; 4],
) -> S::f64s {
    let [s0, s1, s2, s3] = squares;
    let k01 = simd.add_f64s(
        quantise(simd, vs[0], vm, r[0], s0),
        quantise(simd, vs[1], vm, r[1], s1),
    );
    let k23 = simd.add_f64s(
        quantise(simd, vs[2], vm, r[2], s2),
        quantise(simd, vs[3], vm, r[3], s3),
    );
    simd.add_f64s(k01, k23)
}

/// One vector of a term: returns `k = (s·r + M) − M` (`vs`, `vm` the splatted `s`, `M`) and
/// adds `k²` to `squares` with one fused multiply–add: a single rounding of the exact value,
/// so exact below `2^53` and at least `2^53` above, as the separate product and sum (module
/// docs, § Cost) — the same decision. A function, not a closure, so that it is always
/// inlined into each instruction set's version (with its intrinsics).
#[inline(always)]
fn quantise<S: pulp::Simd>(
    simd: S,
    vs: S::f64s,
    vm: S::f64s,
    r: S::f64s,
    squares: &mut S::f64s,
) -> S::f64s {
    let k = simd.sub_f64s(simd.add_f64s(simd.mul_f64s(vs, r), vm), vm);
    *squares = simd.mul_add_f64s(k, k, *squares);
    k
}

/// The release of an [`ExactSum`]: `γ·(S + K)` with `K` exact discrete Gaussian noise on the
/// grid of the noise std (module docs). Built by [`sum_multiplier`] or [`SumRelease::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct SumRelease {
    std: f64,
    grid: GridRelease,
    quantiser: Quantiser,
}

impl SumRelease {
    /// The release of sums of terms of norm `≤ clip` in dimension `dim` with noise std `std`:
    /// the grid of [`Noise::on_grid`] for the Gaussian of std `std` with value bound `clip`
    /// (so that `clip/γ < 2^51`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a std or clip that is not finite and positive, or a
    /// std outside the grid's range.
    pub fn new(std: f64, clip: f64, dim: usize) -> Result<Self> {
        let clip = positive("clip", clip)?;
        let grid = Noise::Gaussian { std }.on_grid(Some(clip))?;
        let quantiser = Quantiser::new(clip, grid.gamma(), dim)?;
        Ok(Self {
            std,
            grid,
            quantiser,
        })
    }

    /// The quantiser of the terms (its grid is the noise grid).
    pub fn quantiser(&self) -> &Quantiser {
        &self.quantiser
    }

    /// The noise grid.
    pub fn grid(&self) -> &GridRelease {
        &self.grid
    }

    /// The noise std `σC`.
    pub fn std(&self) -> f64 {
        self.std
    }

    /// The sensitivity per example ([`Quantiser::sensitivity`]).
    pub fn sensitivity(&self) -> f64 {
        self.quantiser.sensitivity()
    }

    /// The noise multiplier the release is private as: `std / sensitivity`.
    pub fn noise_multiplier(&self) -> f64 {
        self.std / self.sensitivity()
    }

    /// The discrete Gaussian of the noise, for the ledger ([`GridRelease::discrete_gaussian`]).
    ///
    /// # Errors
    /// As [`GridRelease::discrete_gaussian`].
    pub fn discrete_gaussian(&self) -> Result<GridGaussian> {
        self.grid.discrete_gaussian(self.quantiser.dim)
    }

    /// One release as a ledger mechanism: `Mechanism::gaussian(std, sensitivity)` with its
    /// discrete Gaussian attached.
    ///
    /// # Privacy
    /// The module docs' fixed-point argument: one example moves the integer sum by an integer
    /// vector of norm `≤ R`, `γR ≤` the recorded sensitivity; the discrete Gaussian noise is
    /// priced as in the noise module's § Privacy (Canonne, Kamath & Steinke 2020).
    ///
    /// # Errors
    /// As [`SumRelease::discrete_gaussian`], or a mechanism the accounting crate rejects.
    pub fn mechanism(&self) -> Result<Mechanism> {
        Ok(Mechanism::gaussian(self.std, self.sensitivity())?.with_grid(self.discrete_gaussian()?))
    }

    /// For the release `label` (counted by [`crate::noise::tally`]): writes `γ·(S + K)` into
    /// `out` (length `d`), `S` the exact sum, `K` fresh discrete
    /// Gaussian noise in grid units; the conversion to `f64` (rounding to nearest when
    /// `|S + K| > 2^53`) is post-processing and never fails on the data.
    ///
    /// # Privacy
    /// As [`SumRelease::mechanism`].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a sum or `out` of another dimension, or a sampler
    /// failure.
    pub fn release<R: Rng + ?Sized>(
        &self,
        label: &str,
        rng: &mut R,
        sum: &mut ExactSum,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        crate::noise::tally::count(label);
        let d = self.quantiser.dim;
        if sum.quantiser != self.quantiser {
            return Err(Error::DimensionMismatch {
                what: "exact sum (another quantiser)",
                expected: d,
                got: sum.quantiser.dim,
            });
        }
        crate::error::same_dim("out", d, out.len())?;
        for (o, &s) in out.iter_mut().zip(sum.totals()) {
            let k = s + self.grid.draw(rng)?;
            // Through `i64` when it fits (a hardware conversion; `i128 as f64` is a library
            // call, made only when it does not fit): both round to nearest, so the value is
            // the same.
            let k = i64::try_from(k).map_or_else(|_| wide_to_f64(k), |k| k as f64);
            *o = k * self.grid.gamma();
        }
        Ok(())
    }
}

/// `k` rounded to the nearest `f64` (a library call): out of line, so that the compiler does
/// not fold the `i64` conversion of [`SumRelease::release`] into this one (it did: the two
/// give the same value).
#[cold]
#[inline(never)]
fn wide_to_f64(k: i128) -> f64 {
    k as f64
}

/// The exact-sum release for a clipped sum of contributions of norm `≤ clip` with noise
/// `N(0, (σ·clip)²I)` in dimension `dim`, and the noise multiplier it is private as:
/// `σ·clip / Δ` with `Δ` its [`SumRelease::sensitivity`] (`≤ clip + γ√d/2`). Calibrate with
/// this multiplier (and record it in the ledger) so that the quantisation is accounted. Unlike
/// [`crate::grid_multiplier`] the grid does not depend on the number of examples: the sum is
/// exact whatever `n`.
///
/// # Privacy
/// As [`SumRelease::mechanism`]: the Gaussian mechanism of std `σ·clip` and sensitivity `Δ`,
/// i.e. multiplier `σ·clip/Δ`, with its noise discrete (Canonne, Kamath & Steinke 2020).
///
/// # Errors
/// [`Error::InvalidParameter`] for a multiplier or clip that is not finite and positive, or a
/// noise std outside the grid's range.
pub fn sum_multiplier(noise_multiplier: f64, clip: f64, dim: usize) -> Result<(SumRelease, f64)> {
    let sigma = positive("noise_multiplier", noise_multiplier)?;
    let clip = positive("clip", clip)?;
    let std = positive("std", sigma * clip)?;
    let release = SumRelease::new(std, clip, dim)?;
    let multiplier = release.noise_multiplier();
    Ok((release, multiplier))
}

/// The noise multiplier of [`sum_multiplier`] and the release's discrete Gaussian, with the
/// accounting crate's error type: what a calibration closure
/// (`Fn(σ) -> dp_accounting::Result<Mechanism>`) needs so that the calibrated mechanism is the
/// one [`crate::NoisyGd`] and [`crate::DpSgd`] record, `Mechanism::…(z, …)?.with_grid(grid)`.
///
/// # Privacy
/// As [`sum_multiplier`].
///
/// # Errors
/// As [`sum_multiplier`], as [`dp_accounting::Error::InvalidParameter`].
pub fn sum_noise_multiplier(
    noise_multiplier: f64,
    clip: f64,
    dim: usize,
) -> dp_accounting::Result<(f64, GridGaussian)> {
    sum_multiplier(noise_multiplier, clip, dim)
        .and_then(|(release, z)| Ok((z, release.discrete_gaussian()?)))
        .map_err(crate::noise::to_accounting)
}

#[cfg(test)]
mod tests;
