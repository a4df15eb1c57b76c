//! The GLM objective `J(θ) = s·Σ_i φ(⟨x_i, θ⟩, y_i) + (λ/2)‖θ‖²` and its fast paths.
//!
//! The value alone is one matrix–vector product `z = Xθ` through
//! [`ndarray::linalg::general_mat_vec_mul`] (BLAS `gemv` with the `blas` feature). Value and
//! gradient take one pass over the rows in blocks: a block's margins, its coefficients
//! `c_i = s·φ'(z_i)`, then `Σ c_i x_i` while the block is still in cache — half the memory
//! traffic of `Xθ` followed by `Xᵀc`. A clipped gradient sum (MATH §5) needs only the
//! scalars `φ'(z_i)` and the cached `‖x_i‖`: `c_i = φ'_i·min(1, C/(|φ'_i|·‖x_i‖))`, then one
//! `Xᵀc`. No per-example gradient vector is ever formed, and the margins live in a scratch
//! buffer owned by the objective, so the hot path allocates nothing.

use std::sync::{Mutex, TryLockError};

use dp_optim::{ClippedSum, FiniteSum, GlmSum, Objective, numeric};
use ndarray::linalg::general_mat_vec_mul;
use ndarray::{ArrayView1, ArrayViewMut1};

use crate::clipping::{ClippedExampleLoss, ClippedLoss};
use crate::data::Dataset;
use crate::error::{Result, ensure};
use crate::loss::Loss;

/// How the per-example losses are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// `Σ_i φ_i` (paper 001's objective perturbation uses the sum form).
    Sum,
    /// `(1/n)·Σ_i φ_i` (empirical risk).
    Mean,
}

/// The per-example losses: one loss for all rows, or the clipped loss of each row (whose
/// break points depend on the row's label and norm, computed once).
#[derive(Debug, Clone)]
enum ExampleLosses {
    Plain(Loss),
    Clipped(ClippedLoss, Vec<ClippedExampleLoss>),
}

/// The GLM objective `J(θ) = s·Σ_i φ_i(⟨x_i, θ⟩) + (λ/2)‖θ‖²` over a [`Dataset`], with
/// `s = 1` ([`Scale::Sum`]) or `1/n` ([`Scale::Mean`]) and `φ_i = φ(·, y_i)` (or the
/// clipped loss of row `i`, [`GlmObjective::clipped`]).
///
/// Implements `dp-optim`'s traits:
/// - [`Objective`]: `J` and `∇J`;
/// - [`FiniteSum`] and [`GlmSum`] with terms `f_i(θ) = s·φ_i(⟨x_i, θ⟩)` (so the scale is
///   inside each term, and `term_scalar` is `s·φ_i'`) and regulariser `(λ/2)‖θ‖²`;
/// - [`ClippedSum`] over the **unscaled** per-example losses `ℓ_i(θ) = φ_i(⟨x_i, θ⟩)`, without
///   the regulariser: `Σ_{i ∈ batch} clip_C(φ_i'(z_i)·x_i)`, each term of norm `≤ C`.
///
/// The margins `Xθ` are written into an internal scratch buffer (behind a mutex, so the
/// objective is `Sync`; a call that finds the buffer in use by another thread allocates its
/// own).
///
/// # Panics
/// The trait methods panic if `θ` does not have length [`GlmObjective::n_features`], or a
/// batch index is `≥ n` (contract violations by the caller, not data errors).
#[derive(Debug)]
pub struct GlmObjective<'a> {
    data: &'a Dataset,
    losses: ExampleLosses,
    lambda: f64,
    scale: f64,
    /// Values relative to `θ = 0` (see [`GlmObjective::relative_to_zero`]).
    relative: bool,
    scratch: Mutex<Vec<f64>>,
}

impl<'a> GlmObjective<'a> {
    /// The objective with loss `loss` and ridge `lambda ≥ 0`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`](crate::Error::InvalidHyperParameter) for a negative or
    /// non-finite `lambda` or invalid loss parameters;
    /// [`Error::LabelOutOfDomain`](crate::Error::LabelOutOfDomain) if a label is outside the
    /// loss's domain.
    pub fn new(data: &'a Dataset, loss: Loss, lambda: f64, scale: Scale) -> Result<Self> {
        loss.validate()?;
        data.check_labels(&loss)?;
        Self::build(data, ExampleLosses::Plain(loss), lambda, scale)
    }

    /// The objective with the clipped loss of [`ClippedLoss`] (the loss clipped DP-GD really
    /// optimises; paper 001's AMP with gradient clipping) and ridge `lambda ≥ 0`.
    ///
    /// # Errors
    /// As [`GlmObjective::new`].
    pub fn clipped(
        data: &'a Dataset,
        loss: ClippedLoss,
        lambda: f64,
        scale: Scale,
    ) -> Result<Self> {
        data.check_labels(&loss.loss())?;
        let rows = data
            .y()
            .iter()
            .zip(data.row_norms())
            .map(|(&y, &norm)| loss.for_example(y, norm))
            .collect::<Result<Vec<_>>>()?;
        Self::build(data, ExampleLosses::Clipped(loss, rows), lambda, scale)
    }

    fn build(data: &'a Dataset, losses: ExampleLosses, lambda: f64, scale: Scale) -> Result<Self> {
        ensure(
            lambda >= 0.0 && lambda.is_finite(),
            "lambda",
            lambda,
            "must be finite and >= 0",
        )?;
        let n = data.n_samples();
        let scale = match scale {
            Scale::Sum => 1.0,
            Scale::Mean => 1.0 / n as f64,
        };
        Ok(Self {
            data,
            losses,
            lambda,
            scale,
            relative: false,
            scratch: Mutex::new(vec![0.0; n]),
        })
    }

    /// The same objective minus the constant `s·Σ_i φ_i(0)`: [`Objective::value`] and
    /// [`Objective::value_grad`] return `J(θ) − J(0)`, with the same gradient and
    /// minimiser, and each example's change `φ_i(z) − φ_i(0)` computed without overflow when
    /// both values are huge (labels near `f64::MAX`), so that a solver's line search sees
    /// finite values whatever one label holds.
    #[must_use]
    pub(crate) fn relative_to_zero(mut self) -> Self {
        self.relative = true;
        self
    }

    /// `φ_i(z)`, or `φ_i(z) − φ_i(0)` for an objective relative to zero.
    #[inline]
    fn plain_value(&self, l: &Loss, z: f64, y: f64, v: f64) -> f64 {
        if self.relative { l.change(z, y) } else { v }
    }

    /// As [`GlmObjective::plain_value`] for a clipped example loss.
    #[inline]
    fn clipped_value(&self, g: &ClippedExampleLoss, z: f64, v: f64) -> f64 {
        if self.relative { g.change(z) } else { v }
    }

    /// The data.
    pub fn data(&self) -> &'a Dataset {
        self.data
    }

    /// The ridge coefficient `λ`.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The factor `s` in front of the loss sum (`1` or `1/n`).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The (unclipped) loss.
    pub fn loss(&self) -> Loss {
        match &self.losses {
            ExampleLosses::Plain(l) => *l,
            ExampleLosses::Clipped(c, _) => c.loss(),
        }
    }

    /// The clipped loss, when the objective uses one.
    pub fn clipped_loss(&self) -> Option<ClippedLoss> {
        match &self.losses {
            ExampleLosses::Plain(_) => None,
            ExampleLosses::Clipped(c, _) => Some(*c),
        }
    }

    /// Number of examples `n`.
    pub fn n_samples(&self) -> usize {
        self.data.n_samples()
    }

    /// Number of features `d` (the dimension of `θ`).
    pub fn n_features(&self) -> usize {
        self.data.n_features()
    }

    /// `φ_i'(z)`.
    #[inline]
    fn deriv(&self, i: usize, z: f64) -> f64 {
        match &self.losses {
            ExampleLosses::Plain(l) => l.deriv(z, self.data.y()[i]),
            ExampleLosses::Clipped(_, rows) => rows[i].deriv(z),
        }
    }

    /// Runs `f` on an `n`-length scratch buffer.
    fn with_scratch<T>(&self, f: impl FnOnce(&mut [f64]) -> T) -> T {
        match self.scratch.try_lock() {
            Ok(mut guard) => f(&mut guard),
            // The buffer holds no invariant (it is overwritten before use): a panic in
            // another holder does not matter.
            Err(TryLockError::Poisoned(p)) => f(&mut p.into_inner()),
            Err(TryLockError::WouldBlock) => f(&mut vec![0.0; self.n_samples()]),
        }
    }

    /// `⟨x_i, θ⟩` by a plain loop (rows of a few hundred entries: faster than a BLAS call).
    #[inline]
    fn row_dot(&self, i: usize, theta: ArrayView1<'_, f64>) -> f64 {
        let x = self.data.x();
        let row = x.row(i);
        let z = match (row.as_slice(), theta.as_slice()) {
            (Some(r), Some(t)) => dot(r, t),
            _ => row.dot(&theta),
        };
        if z.is_finite() {
            z
        } else {
            numeric::dot(row, theta)
        }
    }

    /// `out[k] = ⟨x_{rows[k]}, θ⟩`, [`GROUP`] rows at a time: their loads interleave, so a
    /// batch's (random, uncached) rows are fetched from memory concurrently, not one by one.
    fn row_dots(&self, rows: &[usize], theta: ArrayView1<'_, f64>, out: &mut [f64]) {
        let x = self.data.x();
        let (Some(xs), Some(t)) = (x.as_slice(), theta.as_slice()) else {
            for (o, &i) in out.iter_mut().zip(rows) {
                *o = x.row(i).dot(&theta);
            }
            return;
        };
        let d = t.len();
        let row = |i: usize| &xs[i * d..(i + 1) * d];
        let mut groups = rows.chunks_exact(GROUP);
        let mut outs = out.chunks_exact_mut(GROUP);
        for (group, o) in (&mut groups).zip(&mut outs) {
            o.copy_from_slice(&dot_group(std::array::from_fn(|k| row(group[k])), t));
        }
        for (o, &i) in outs.into_remainder().iter_mut().zip(groups.remainder()) {
            *o = dot(row(i), t);
        }
    }

    /// `out += Σ_k c[k]·x_{rows[k]}`, [`GROUP`] rows per pass over `out`.
    fn add_scaled_rows(&self, rows: &[usize], c: &[f64], mut out: ArrayViewMut1<'_, f64>) {
        let x = self.data.x();
        let (Some(xs), Some(o)) = (x.as_slice(), out.as_slice_mut()) else {
            for (&i, &ck) in rows.iter().zip(c) {
                out.scaled_add(ck, &x.row(i));
            }
            return;
        };
        let d = o.len();
        let row = |i: usize| &xs[i * d..(i + 1) * d];
        let mut groups = rows.chunks_exact(GROUP);
        let mut cs = c.chunks_exact(GROUP);
        for (group, c) in (&mut groups).zip(&mut cs) {
            let r: [&[f64]; GROUP] = std::array::from_fn(|k| row(group[k]));
            for (j, oj) in o.iter_mut().enumerate() {
                *oj += r.iter().zip(c).map(|(r, c)| c * r[j]).sum::<f64>();
            }
        }
        for (&i, &ck) in groups.remainder().iter().zip(cs.remainder()) {
            o.iter_mut().zip(row(i)).for_each(|(o, r)| *o += ck * r);
        }
    }

    /// Writes `z = Xθ` into `z`.
    fn margins(&self, theta: ArrayView1<'_, f64>, z: &mut [f64]) {
        let mut zv = ArrayViewMut1::from(&mut *z);
        general_mat_vec_mul(1.0, &self.data.x(), &theta, 0.0, &mut zv);
        self.rescue_margins(theta, z, |k| k);
    }

    /// Recomputes every non-finite margin `z_k` (of row `row(k)`) with the scaled dot product
    /// of [`dp_optim::numeric::dot`]: a partial sum that overflowed (`±∞`, or `∞ − ∞ = NaN`)
    /// becomes the exact margin, `±∞` only when that is beyond `f64::MAX`. Every loss takes
    /// an infinite margin (finite derivative, or one the clip bounds), so one extreme row
    /// cannot turn a run's gradients into NaN. One comparison per row when nothing overflowed.
    fn rescue_margins(
        &self,
        theta: ArrayView1<'_, f64>,
        z: &mut [f64],
        row: impl Fn(usize) -> usize,
    ) {
        let x = self.data.x();
        for (k, zk) in z.iter_mut().enumerate() {
            if !zk.is_finite() {
                *zk = numeric::dot(x.row(row(k)), theta);
            }
        }
    }

    /// `(λ/2)‖θ‖²`.
    fn ridge(&self, theta: ArrayView1<'_, f64>) -> f64 {
        if self.lambda == 0.0 {
            0.0
        } else {
            0.5 * self.lambda * theta.dot(&theta)
        }
    }

    /// Overwrites `z_k` (the margin of row `i = row(k)`) by that row's clipped coefficient
    /// `φ_i'(z_k)·min(1, C/(|φ_i'|‖x_i‖))`.
    fn clip_in_place(&self, z: &mut [f64], clip: f64, row: impl Fn(usize) -> usize) {
        let norms = self.data.row_norms();
        // One match for the whole slice, not one per example.
        match &self.losses {
            ExampleLosses::Plain(l) => {
                let y = self.data.y();
                for (k, zk) in z.iter_mut().enumerate() {
                    let i = row(k);
                    *zk = clip_coefficient(l.deriv(*zk, y[i]), norms[i], clip);
                }
            }
            ExampleLosses::Clipped(_, rows) => {
                for (k, zk) in z.iter_mut().enumerate() {
                    let i = row(k);
                    *zk = clip_coefficient(rows[i].deriv(*zk), norms[i], clip);
                }
            }
        }
    }
}

/// `⟨a, b⟩` with four independent accumulators (vectorises; no BLAS call overhead).
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Rows handled together by the batch kernels.
const GROUP: usize = 4;

/// `[⟨r_k, t⟩]_k` in one pass over `t`, two accumulators per row (rows of `t.len()` entries).
#[inline]
fn dot_group(r: [&[f64]; GROUP], t: &[f64]) -> [f64; GROUP] {
    let n = t.len();
    let r = r.map(|r| &r[..n]);
    let mut acc = [[0.0f64; 2]; GROUP];
    for j in 0..n / 2 {
        let (t0, t1) = (t[2 * j], t[2 * j + 1]);
        for (a, row) in acc.iter_mut().zip(&r) {
            a[0] += row[2 * j] * t0;
            a[1] += row[2 * j + 1] * t1;
        }
    }
    let mut out = acc.map(|a| a[0] + a[1]);
    if n % 2 == 1 {
        for (o, row) in out.iter_mut().zip(&r) {
            *o += row[n - 1] * t[n - 1];
        }
    }
    out
}

/// The clipped scalar coefficient of a GLM per-example gradient `d·x` with `‖x‖ = norm`:
/// `d·min(1, clip/(|d|·norm))`, so that `‖coefficient·x‖ ≤ clip`. Zero for a zero row, a zero
/// or NaN derivative; `clip` is `≥ 0` (NaN treated as 0 by the caller).
#[inline]
pub(crate) fn clip_coefficient(d: f64, norm: f64, clip: f64) -> f64 {
    let a = d.abs();
    if a.is_nan() || a == 0.0 || norm.is_nan() || norm <= 0.0 {
        return 0.0;
    }
    let mut cap = clip / norm;
    if cap == f64::INFINITY && clip.is_finite() {
        // clip/norm overflowed (a subnormal row): any finite cap ≥ f64::MAX keeps
        // |c|·norm ≤ clip.
        cap = f64::MAX;
    }
    if a <= cap { d } else { cap.copysign(d) }
}

/// The clipped coefficient `c` of the squared loss's per-example gradient
/// `x(⟨x, w⟩ − y)`: `clip_ζ(x(⟨x, w⟩ − y)) = c·x` with `|c|·‖x‖ ≤ clip`, where `norm = ‖x‖`.
/// The margin is the scaled [`numeric::dot`], so a huge row or label gives a residual of
/// `±∞` at worst (never NaN), which the clip turns into `±clip/‖x‖`: `c` is finite for every
/// finite row, label and `w`.
pub(crate) fn residual_coefficient(
    x: ArrayView1<'_, f64>,
    w: ArrayView1<'_, f64>,
    y: f64,
    norm: f64,
    clip: f64,
) -> f64 {
    clip_coefficient(numeric::dot(x, w) - y, norm, clip)
}

impl Objective for GlmObjective<'_> {
    fn dim(&self) -> usize {
        self.n_features()
    }

    fn value(&self, theta: ArrayView1<'_, f64>) -> f64 {
        let y = self.data.y();
        let sum = self.with_scratch(|z| {
            self.margins(theta, z);
            match &self.losses {
                ExampleLosses::Plain(l) => z
                    .iter()
                    .zip(y)
                    .map(|(&zi, &yi)| self.plain_value(l, zi, yi, l.value(zi, yi)))
                    .sum(),
                ExampleLosses::Clipped(_, rows) => z
                    .iter()
                    .zip(rows)
                    .map(|(&zi, g)| self.clipped_value(g, zi, g.value(zi)))
                    .sum::<f64>(),
            }
        });
        self.scale * sum + self.ridge(theta)
    }

    /// One pass over the rows, in blocks of 64: a block's margins, then its loss values
    /// and scaled derivatives, then its rows added to the gradient while they are still in
    /// cache. Half the memory traffic of two matrix–vector products.
    fn value_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
        let y = self.data.y();
        let y_copy;
        let y = match y.as_slice() {
            Some(y) => y,
            None => {
                y_copy = y.to_vec();
                &y_copy
            }
        };
        let scale = self.scale;
        grad.fill(0.0);
        let (mut idx, mut coef) = ([0usize; BLOCK], [0.0; BLOCK]);
        let mut sum = 0.0;
        for start in (0..self.n_samples()).step_by(BLOCK) {
            let len = BLOCK.min(self.n_samples() - start);
            let (idx, coef) = (&mut idx[..len], &mut coef[..len]);
            idx.iter_mut().zip(start..).for_each(|(k, i)| *k = i);
            self.row_dots(idx, theta, coef);
            self.rescue_margins(theta, coef, |k| start + k);
            match &self.losses {
                ExampleLosses::Plain(l) => {
                    for (c, &yi) in coef.iter_mut().zip(&y[start..]) {
                        let (v, d) = l.value_deriv(*c, yi);
                        sum += self.plain_value(l, *c, yi, v);
                        *c = scale * d;
                    }
                }
                ExampleLosses::Clipped(_, rows) => {
                    for (c, g) in coef.iter_mut().zip(&rows[start..]) {
                        let (v, d) = g.value_deriv(*c);
                        sum += self.clipped_value(g, *c, v);
                        *c = scale * d;
                    }
                }
            }
            self.add_scaled_rows(idx, coef, grad.view_mut());
        }
        if self.lambda != 0.0 {
            grad.scaled_add(self.lambda, &theta);
        }
        scale * sum + self.ridge(theta)
    }
}

impl FiniteSum for GlmObjective<'_> {
    fn n_terms(&self) -> usize {
        self.n_samples()
    }

    fn batch_grad(
        &self,
        theta: ArrayView1<'_, f64>,
        batch: &[usize],
        mut grad: ArrayViewMut1<'_, f64>,
    ) {
        let x = self.data.x();
        grad.fill(0.0);
        for &i in batch {
            let row = x.row(i);
            let c = self.scale * self.deriv(i, numeric::dot(row, theta));
            grad.scaled_add(c, &row);
        }
    }

    fn regulariser_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) {
        grad.assign(&theta);
        grad *= self.lambda;
    }
}

impl GlmSum for GlmObjective<'_> {
    fn term_scalar(&self, theta: ArrayView1<'_, f64>, i: usize) -> f64 {
        self.scale * self.deriv(i, self.row_dot(i, theta))
    }

    fn add_scaled_row(&self, i: usize, c: f64, mut grad: ArrayViewMut1<'_, f64>) {
        let x = self.data.x();
        let row = x.row(i);
        match (row.as_slice(), grad.as_slice_mut()) {
            (Some(r), Some(g)) => g.iter_mut().zip(r).for_each(|(g, r)| *g += c * r),
            _ => grad.scaled_add(c, &row),
        }
    }
}

impl ClippedSum for GlmObjective<'_> {
    fn n_examples(&self) -> usize {
        self.n_samples()
    }

    fn dim(&self) -> usize {
        self.n_features()
    }

    /// `Σ_{i ∈ batch} clip_C(φ_i'(⟨x_i, θ⟩)·x_i)`. A NaN or negative `clip` is treated as 0
    /// (every term zero); `clip = ∞` disables clipping. Finite for every finite dataset and
    /// `θ`: a margin that overflows is recomputed scaled (`±∞` at worst, where every loss's
    /// derivative is finite or clipped), each term has norm `≤ C`, and a row whose norm
    /// exceeds `f64::MAX` contributes 0 (see [`Dataset::row_norms`]).
    fn clipped_sum(
        &self,
        theta: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        clip: f64,
        mut out: ArrayViewMut1<'_, f64>,
    ) {
        let clip = if clip >= 0.0 { clip } else { 0.0 };
        match batch {
            None => self.with_scratch(|z| {
                self.margins(theta, z);
                self.clip_in_place(z, clip, |k| k);
                let c = ArrayView1::from(&*z);
                general_mat_vec_mul(1.0, &self.data.x().t(), &c, 0.0, &mut out);
            }),
            Some(batch) => {
                out.fill(0.0);
                // Blocks of rows, in three passes: margins, coefficients, sums. The margin
                // pass has no dependency between rows, so their (random) loads overlap; a
                // block's rows are still in cache for the third pass. Rows of a few hundred
                // entries: plain loops beat a BLAS call per row.
                let mut coef = [0.0; BLOCK];
                for block in batch.chunks(BLOCK) {
                    let coef = &mut coef[..block.len()];
                    self.row_dots(block, theta, coef);
                    self.rescue_margins(theta, coef, |k| block[k]);
                    self.clip_in_place(coef, clip, |k| block[k]);
                    self.add_scaled_rows(block, coef, out.view_mut());
                }
            }
        }
    }
}

/// Rows per block of a batch's clipped sum.
const BLOCK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_coefficient_edge_cases() {
        assert_eq!(clip_coefficient(2.0, 1.0, 1.0), 1.0);
        assert_eq!(clip_coefficient(-2.0, 1.0, 1.0), -1.0);
        assert_eq!(clip_coefficient(0.5, 1.0, 1.0), 0.5);
        assert_eq!(clip_coefficient(f64::NAN, 1.0, 1.0), 0.0);
        assert_eq!(clip_coefficient(3.0, 0.0, 1.0), 0.0);
        assert_eq!(clip_coefficient(f64::INFINITY, 2.0, 1.0), 0.5);
        assert_eq!(
            clip_coefficient(f64::NEG_INFINITY, f64::INFINITY, 1.0),
            -0.0
        );
        let tiny = 1e-310;
        let c = clip_coefficient(f64::INFINITY, tiny, 1.0);
        assert!(c.is_finite() && c * tiny <= 1.0);
        assert_eq!(clip_coefficient(5.0, 1.0, 0.0), 0.0);
        assert_eq!(clip_coefficient(5.0, 1.0, f64::INFINITY), 5.0);
    }
}
