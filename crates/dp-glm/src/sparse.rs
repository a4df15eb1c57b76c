//! Sparse rows: a dataset in compressed sparse row (CSR) form and the GLM objective over it,
//! touching only the non-zero entries (`O(nnz + d)` per pass instead of `O(n·d)`).
//!
//! [`SparseGlmObjective`] is [`GlmObjective`] on a [`SparseDataset`]:
//! the same losses (plain or clipped), scale and ridge, the same `dp-optim` traits, and the
//! same numbers:
//! - the **exact** clipped sums ([`ClippedSum::exact_clipped_sum`]) are bit-identical to the
//!   dense objective's on the same data. The margins are added in the dense kernels' order
//!   (their accumulators, indexed by column, over the same blocks and groups of rows), the
//!   row norms in the order of `ndarray`'s dot product, and a zero entry changes neither (an
//!   accumulator that starts at `+0` is unchanged by adding `±0`); so the clipped
//!   coefficients are the same numbers, each term quantises to the same integers
//!   ([`ExactSum::add_scaled_sparse`]), and the integer sum is exact. Two conditions: a
//!   finite `θ` (a dense `0·∞` is NaN, a skipped entry is not), and, in builds with `ndarray`'s
//!   BLAS feature, a row norm (or a margin that overflowed) goes through BLAS `ddot` in the
//!   dense path for rows of 32 entries or more, whose summation order is not specified: the
//!   norms may then differ in the last place and, when that row's term is clipped, a
//!   coordinate lying within that rounding of a half-integer on the noise grid can quantise to
//!   the neighbouring integer.
//! - values, gradients, curvature bounds and `f64` clipped sums are bit-identical to the
//!   dense objective's too, under the same two conditions and finite coefficients
//!   `s·φ_i'(z_i)`: each margin is added in the order its position in its block of 64 rows
//!   gives it there (rows in groups of four, then alone), each loss value is the dense one,
//!   and a group's contributions to a gradient coordinate are added together before they
//!   reach it, as the dense kernel adds them (the columns of the group's rows merged; a zero
//!   entry's product `c·0 = ±0` changes no partial sum that is not itself zero, and a zero
//!   partial sum changes no coordinate, which is never `−0`). So the learners that minimise
//!   this objective deterministically (objective perturbation, AMP, output perturbation)
//!   release the dense fit's model bit for bit.
//!
//! # Threads
//! As the dense objective (module `glm`, § Threads): the full-batch sums run over leaves of
//! 8192 rows at fixed boundaries combined by a fixed binary tree, so a seeded run is
//! bit-identical on 1 or N threads.

use std::borrow::Cow;
use std::ops::Range;

use dp_data::CsrData;
use dp_optim::numeric::{max_abs, norm_from_squares, scale_to_norm};
use dp_optim::{ClippedSum, ExactSum, FiniteSum, GlmSum, Objective};
use ndarray::{Array1, Array2, ArrayView1, ArrayViewMut1};

use crate::bounds::Records;
use crate::clipping::ClippedLoss;
use crate::data::{Dataset, check_finite_labels, check_labels, max_norm};
use crate::error::{Error, Result};
use crate::glm::{
    BLOCK, ExampleLosses, GROUP, GlmObjective, Scale, clip_coefficient, clipped_sum_over,
    exact_sum_over, finish_value, finish_value_grad, scale_factor, tree_fold, tree_sum,
};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::pipeline::Preprocessing;
use crate::preprocess::BallProjector;

/// A dataset `{(x_i, y_i)}` with sparse rows: `n` rows of `d` features in compressed sparse
/// row form and `n` labels ([`CsrData`], as `dp-data`'s LIBSVM reader returns them), checked
/// on construction (the CSR invariants, finite values, at least one row and one column), with
/// the row norms `‖x_i‖` computed once — equal to [`Dataset::row_norms`] of the same rows
/// (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct SparseDataset {
    csr: CsrData,
    row_norms: Array1<f64>,
}

impl SparseDataset {
    /// Checks and wraps `csr`: row `i` holds the entries `indptr[i]..indptr[i + 1]` of
    /// `indices` (0-based columns, strictly increasing, each below `n_features`) and `values`;
    /// all other entries are zero.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `indptr.len() != y.len() + 1` or `indices` and `values`
    /// differ in length; [`Error::EmptyData`] if `n = 0` or `n_features = 0`;
    /// [`Error::MalformedSparse`] naming the first row whose pointers decrease (or do not
    /// start at 0 and end at the number of entries), or whose columns are not strictly
    /// increasing and below `n_features`; [`Error::NonFinite`] for the first NaN or infinite
    /// value (its row and column), then label.
    pub fn new(csr: CsrData) -> Result<Self> {
        let CsrData {
            n_features,
            indptr,
            indices,
            values,
            y,
        } = &csr;
        if indptr.len() != y.len() + 1 {
            return Err(Error::ShapeMismatch {
                left: "indptr",
                left_shape: vec![indptr.len()],
                right: "y (plus one)",
                right_shape: vec![y.len() + 1],
            });
        }
        if indices.len() != values.len() {
            return Err(Error::ShapeMismatch {
                left: "indices",
                left_shape: vec![indices.len()],
                right: "values",
                right_shape: vec![values.len()],
            });
        }
        if y.is_empty() {
            return Err(Error::EmptyData { what: "no rows" });
        }
        let d = *n_features;
        if d == 0 {
            return Err(Error::EmptyData { what: "no columns" });
        }
        let malformed = |row, reason: String| Err(Error::MalformedSparse { row, reason });
        if indptr[0] != 0 {
            return malformed(0, format!("the first row pointer is {}, not 0", indptr[0]));
        }
        let nnz = values.len();
        for (row, w) in indptr.windows(2).enumerate() {
            if w[0] > w[1] || w[1] > nnz {
                return malformed(
                    row,
                    format!(
                        "row pointers {}..{} are not an increasing range within the {nnz} \
                         entries",
                        w[0], w[1]
                    ),
                );
            }
            let cols = &indices[w[0]..w[1]];
            if let Some(&col) = cols.iter().find(|&&c| c >= d) {
                return malformed(row, format!("column {col} is not below the {d} features"));
            }
            if let Some(p) = cols.windows(2).find(|p| p[0] >= p[1]) {
                return malformed(
                    row,
                    format!(
                        "column {} follows column {}: columns must increase",
                        p[1], p[0]
                    ),
                );
            }
            if let Some(k) = values[w[0]..w[1]].iter().position(|v| !v.is_finite()) {
                return Err(Error::NonFinite {
                    array: "x",
                    row,
                    col: cols[k],
                    value: values[w[0] + k],
                });
            }
        }
        if indptr[y.len()] != nnz {
            return malformed(
                y.len() - 1,
                format!(
                    "the last row pointer is {}, not the number of entries {nnz}",
                    indptr[y.len()]
                ),
            );
        }
        check_finite_labels(ArrayView1::from(y))?;
        let row_norms = (0..y.len()).map(|i| norm(&csr, i)).collect();
        Ok(Self { csr, row_norms })
    }

    /// Number of examples `n`.
    pub fn n_samples(&self) -> usize {
        self.csr.n_samples()
    }

    /// Number of features `d`.
    pub fn n_features(&self) -> usize {
        self.csr.n_features
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.csr.nnz()
    }

    /// The columns and values of row `i`.
    ///
    /// # Panics
    /// If `i ≥ n`.
    pub fn row(&self, i: usize) -> (&[usize], &[f64]) {
        self.csr.row(i)
    }

    /// The rows and labels.
    pub fn csr(&self) -> &CsrData {
        &self.csr
    }

    /// The labels, length `n`.
    pub fn y(&self) -> ArrayView1<'_, f64> {
        ArrayView1::from(&self.csr.y[..])
    }

    /// `‖x_i‖` for every row, equal to [`Dataset::row_norms`] of the same rows (module docs).
    pub fn row_norms(&self) -> ArrayView1<'_, f64> {
        self.row_norms.view()
    }

    /// `max_i ‖x_i‖`.
    pub fn max_row_norm(&self) -> f64 {
        max_norm(self.row_norms())
    }

    /// Checks that every label is in `loss`'s label domain.
    ///
    /// # Errors
    /// [`Error::LabelOutOfDomain`] naming the first offending row.
    pub fn check_labels(&self, loss: &Loss) -> Result<()> {
        check_labels(self.y(), loss)
    }

    /// `csr` after the per-row steps of `prep` ([`Preprocessing::apply`] on the dense rows),
    /// then checked as [`SparseDataset::new`]: rows scaled to unit norm (when
    /// `prep.unit_norm`) and the bias appended as column `d` (when `prep.bias`). The values
    /// are those of [`Preprocessing::apply`] on the same rows densified, bit for bit: the
    /// largest magnitude `m` and the sum of the squares of `x/m` skip only zeros (which change
    /// neither: `max(m, 0) = m`, `s + 0 = s` in the dense row's order), and each stored entry
    /// is divided by the same `m` and norm; a zero entry stays zero and is not stored. The
    /// bias entries are written in place (the entries grow by `n`, nothing else is copied).
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `scaling` when `prep` has a feature scaling
    /// (it moves zeros: sparse rows would become dense) or `row_bound` when it projects rows
    /// (a learner's own step, which sparse rows do not take); `prep`'s invalid parameters
    /// ([`Preprocessing::validate`]); as [`SparseDataset::new`].
    pub fn preprocessed(csr: CsrData, prep: &Preprocessing) -> Result<Self> {
        prep.validate(csr.n_features)?;
        if prep.scaling.is_some() {
            return Err(Error::InvalidHyperParameter {
                name: "scaling",
                value: f64::NAN,
                reason: "a feature scaling moves zeros: scale dense rows instead",
            });
        }
        if let Some(r) = prep.row_bound {
            return Err(Error::InvalidHyperParameter {
                name: "row_bound",
                value: r,
                reason: "rows are not projected onto a ball on sparse rows",
            });
        }
        // Checked first, so that the steps below index within bounds.
        let mut csr = Self::new(csr)?.csr;
        if prep.unit_norm {
            for w in csr.indptr.windows(2) {
                let row = &mut csr.values[w[0]..w[1]];
                let m = row.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
                if m > 0.0 {
                    let norm = row.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt();
                    row.iter_mut().for_each(|v| *v = *v / m / norm);
                }
            }
        }
        if let Some(b) = prep.bias {
            append_column(&mut csr, b);
        }
        Self::new(csr)
    }

    /// `⟨x_i, w⟩` for every row (scores of a linear model), the products added in the order of
    /// `ndarray`'s dot product of the dense row (without BLAS, the same numbers as the dense
    /// `x.dot(w)`).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] unless `w` has `d` entries.
    pub fn margins(&self, w: ArrayView1<'_, f64>) -> Result<Array1<f64>> {
        let d = self.n_features();
        if w.len() != d {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: vec![self.n_samples(), d],
                right: "coefficients",
                right_shape: vec![w.len()],
            });
        }
        let w = contiguous(&w);
        Ok((0..self.n_samples())
            .map(|i| {
                let (cols, vals) = self.row(i);
                unrolled_dot(cols, d, |k| vals[k] * w[cols[k]])
            })
            .collect())
    }

    /// The decision values `⟨P(x_i), w⟩ + b` of `model` on these raw rows, `P` the model's own
    /// steps ([`LinearModel::preprocessing`]: unit norm and bias on the sparse rows, then the
    /// projection onto its row bound, the dense one bit for bit — the rows are projected
    /// before the margins are taken, so a row whose norm or unprojected margin overflows
    /// scores as its projection does): the values of [`LinearModel::decision_function`] on
    /// the same rows densified, to rounding.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `scaling` for a model with a feature scaling
    /// (it moves zeros: score dense rows); [`Error::ShapeMismatch`] when the rows are not the
    /// model's width.
    pub fn decision_function(&self, model: &LinearModel) -> Result<Array1<f64>> {
        let steps = model.preprocessing();
        let per_row = Preprocessing {
            row_bound: None,
            ..steps.clone()
        };
        let mut rows = if per_row == Preprocessing::default() {
            Cow::Borrowed(self)
        } else {
            Cow::Owned(Self::preprocessed(self.csr.clone(), &per_row)?)
        };
        if let Some(r) = steps.row_bound
            && let Some(projected) = rows.projected(r)?
        {
            rows = Cow::Owned(projected);
        }
        Ok(rows.margins(model.coef())? + model.intercept())
    }

    /// The rows with every row longer than `radius` scaled to norm `radius`, or `None` when
    /// none is longer: the values of [`BallProjector`] on the same rows densified, bit for bit
    /// (the norm compared and divided by is the dense row's, [`SparseDataset::row_norms`]; a
    /// row whose norm overflows goes through `max|x|` and the sum of the squares of `x/max|x|`,
    /// which skip only zeros; a zero entry stays zero and is not stored).
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `radius` unless it is finite and `> 0`.
    pub(crate) fn projected(&self, radius: f64) -> Result<Option<Self>> {
        BallProjector::new(radius)?;
        if self.row_norms.iter().all(|&r| r <= radius) {
            return Ok(None);
        }
        let mut csr = self.csr.clone();
        for (w, &norm) in csr.indptr.windows(2).zip(&self.row_norms) {
            if norm > radius {
                let mut row = ArrayViewMut1::from(&mut csr.values[w[0]..w[1]]);
                if norm.is_finite() {
                    // `scale_to_norm` on the dense row, with its norm.
                    row /= norm;
                    row *= radius;
                } else {
                    scale_to_norm(row, radius);
                }
            }
        }
        Self::new(csr).map(Some)
    }

    /// The rows `idx` with their labels, in that order (their stored entries copied): the
    /// rows of [`Dataset`]'s selection of the same indices on the rows densified.
    ///
    /// # Errors
    /// As [`SparseDataset::new`] (no rows when `idx` is empty).
    ///
    /// # Panics
    /// If an index is `≥ n`.
    pub(crate) fn select_rows(&self, idx: &[usize]) -> Result<Self> {
        let nnz = idx.iter().map(|&i| self.row(i).0.len()).sum();
        let mut csr = CsrData {
            n_features: self.n_features(),
            indptr: Vec::with_capacity(idx.len() + 1),
            indices: Vec::with_capacity(nnz),
            values: Vec::with_capacity(nnz),
            y: idx.iter().map(|&i| self.csr.y[i]).collect(),
        };
        csr.indptr.push(0);
        for &i in idx {
            let (cols, vals) = self.row(i);
            csr.indices.extend_from_slice(cols);
            csr.values.extend_from_slice(vals);
            csr.indptr.push(csr.values.len());
        }
        Self::new(csr)
    }

    /// `Σ_i x_ij²` for every column `j`, rows in order: the dense rows' sums bit for bit (a
    /// zero entry adds `+0` to a sum that is `+0` or positive).
    pub(crate) fn column_squares(&self) -> Array1<f64> {
        let mut squares = Array1::zeros(self.n_features());
        for (&j, &v) in self.csr.indices.iter().zip(&self.csr.values) {
            squares[j] += v * v;
        }
        squares
    }

    /// The same rows as a dense [`Dataset`] (`n × d` values: for tests and small data).
    ///
    /// # Errors
    /// [`Error::ResourceLimit`] when `n × d` values exceed
    /// [`MEMORY_BUDGET_BYTES`](crate::MEMORY_BUDGET_BYTES) (checked before the allocation).
    pub fn to_dense(&self) -> Result<Dataset> {
        let (n, d) = (self.n_samples() as f64, self.n_features() as f64);
        crate::learners::check_memory("n_features", d, n * d)?;
        let mut x = Array2::zeros((self.n_samples(), self.n_features()));
        for (i, mut row) in x.rows_mut().into_iter().enumerate() {
            let (cols, vals) = self.row(i);
            cols.iter().zip(vals).for_each(|(&j, &v)| row[j] = v);
        }
        Dataset::new(x, self.y().to_owned())
    }
}

/// Appends the column `d` of constant `value` to checked rows, in place: row `i`'s entries
/// move `i` places up (from the last row back, so none is overwritten before it is moved)
/// and the constant follows them.
fn append_column(csr: &mut CsrData, value: f64) {
    let (n, d, nnz) = (csr.n_samples(), csr.n_features, csr.nnz());
    csr.indices.resize(nnz + n, 0);
    csr.values.resize(nnz + n, 0.0);
    for i in (0..n).rev() {
        let (start, end) = (csr.indptr[i], csr.indptr[i + 1]);
        csr.indices.copy_within(start..end, start + i);
        csr.values.copy_within(start..end, start + i);
        csr.indices[end + i] = d;
        csr.values[end + i] = value;
    }
    csr.indptr.iter_mut().enumerate().for_each(|(i, p)| *p += i);
    csr.n_features = d + 1;
}

impl Records for SparseDataset {
    fn row_norms(&self) -> ArrayView1<'_, f64> {
        SparseDataset::row_norms(self)
    }

    fn y(&self) -> ArrayView1<'_, f64> {
        SparseDataset::y(self)
    }
}

/// `‖x_i‖` as [`dp_optim::numeric::l2_norm`] computes it on the dense row: the squares added
/// in the order of `ndarray`'s unrolled dot product (module docs).
fn norm(csr: &CsrData, i: usize) -> f64 {
    let (cols, vals) = csr.row(i);
    let s = unrolled_dot(cols, csr.n_features, |k| vals[k] * vals[k]);
    norm_from_squares(s, ArrayView1::from(vals))
}

/// The products `prod(k)` of the entries `k` of a sparse row (columns `cols`, strictly
/// increasing, below `d`) added as a dense loop with `L` accumulators adds a row's products:
/// accumulator `j mod L` takes column `j` for `j < L⌊d/L⌋`, in column order. Returns the
/// accumulators and the position in `cols` where the remaining columns (the tail) start.
#[inline]
fn lanes<const L: usize>(
    cols: &[usize],
    d: usize,
    prod: &impl Fn(usize) -> f64,
) -> ([f64; L], usize) {
    let end = d / L * L;
    let mut acc = [0.0f64; L];
    let tail = cols.partition_point(|&j| j < end);
    for (k, &j) in cols[..tail].iter().enumerate() {
        acc[j % L] += prod(k);
    }
    (acc, tail)
}

/// `⟨x, t⟩` for a sparse `x` in the order of glm's `dot` (four accumulators, then the tail
/// summed apart), `prod(k)` the product of entry `k`.
#[inline]
fn single_dot(cols: &[usize], d: usize, prod: impl Fn(usize) -> f64) -> f64 {
    let (a, tail) = lanes::<4>(cols, d, &prod);
    let rest: f64 = (tail..cols.len()).map(&prod).sum();
    (a[0] + a[1]) + (a[2] + a[3]) + rest
}

/// `⟨x, t⟩` in the order of `ndarray`'s unrolled dot product (eight accumulators combined as
/// `((p0 + p4) + (p1 + p5)) …`, then the tail one by one): what [`dp_optim::numeric`] adds.
#[inline]
fn unrolled_dot(cols: &[usize], d: usize, prod: impl Fn(usize) -> f64) -> f64 {
    let (p, tail) = lanes::<8>(cols, d, &prod);
    let mut sum = 0.0;
    for l in 0..4 {
        sum += p[l] + p[l + 4];
    }
    (tail..cols.len()).fold(sum, |z, k| z + prod(k))
}

/// The GLM objective `J(θ) = s·Σ_i φ_i(⟨x_i, θ⟩) + (λ/2)‖θ‖²` over a [`SparseDataset`]: the
/// sparse twin of [`GlmObjective`], with the same constructors, traits
/// and numbers (module docs). Implements [`Objective`], [`FiniteSum`] and [`GlmSum`] (terms
/// `s·φ_i`, regulariser `(λ/2)‖θ‖²`) and [`ClippedSum`] (the unscaled per-example losses, no
/// regulariser).
///
/// # Panics
/// The trait methods panic if `θ` does not have length [`SparseGlmObjective::n_features`], or
/// a batch index is `≥ n` (contract violations by the caller, not data errors).
#[derive(Debug)]
pub struct SparseGlmObjective<'a> {
    data: &'a SparseDataset,
    losses: ExampleLosses,
    lambda: f64,
    scale: f64,
    relative: bool,
}

impl<'a> SparseGlmObjective<'a> {
    /// The objective with loss `loss` and ridge `lambda ≥ 0`.
    ///
    /// # Errors
    /// As [`GlmObjective::new`]: [`Error::InvalidHyperParameter`] for a negative or non-finite
    /// `lambda` or invalid loss parameters; [`Error::LabelOutOfDomain`] if a label is outside
    /// the loss's domain.
    pub fn new(data: &'a SparseDataset, loss: Loss, lambda: f64, scale: Scale) -> Result<Self> {
        let losses = ExampleLosses::plain(loss, |l| data.check_labels(l))?;
        Self::build(data, losses, lambda, scale)
    }

    /// The objective with the clipped loss of [`ClippedLoss`] and ridge `lambda ≥ 0`
    /// ([`GlmObjective::clipped`]).
    ///
    /// # Errors
    /// As [`SparseGlmObjective::new`].
    pub fn clipped(
        data: &'a SparseDataset,
        loss: ClippedLoss,
        lambda: f64,
        scale: Scale,
    ) -> Result<Self> {
        let losses =
            ExampleLosses::clipped(loss, data.y(), data.row_norms(), |l| data.check_labels(l))?;
        Self::build(data, losses, lambda, scale)
    }

    fn build(
        data: &'a SparseDataset,
        losses: ExampleLosses,
        lambda: f64,
        scale: Scale,
    ) -> Result<Self> {
        Ok(Self {
            data,
            losses,
            lambda,
            scale: scale_factor(lambda, scale, data.n_samples())?,
            relative: false,
        })
    }

    /// The same objective minus the constant `s·Σ_i φ_i(0)`, as the dense objective's
    /// `relative_to_zero` (for objective perturbation's solver).
    #[must_use]
    pub fn relative_to_zero(mut self) -> Self {
        self.relative = true;
        self
    }

    /// The data.
    pub fn data(&self) -> &'a SparseDataset {
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
        self.losses.loss()
    }

    /// The clipped loss, when the objective uses one.
    pub fn clipped_loss(&self) -> Option<ClippedLoss> {
        self.losses.clipped_loss()
    }

    /// Number of examples `n`.
    pub fn n_samples(&self) -> usize {
        self.data.n_samples()
    }

    /// Number of features `d`.
    pub fn n_features(&self) -> usize {
        self.data.n_features()
    }

    /// `⟨x_i, θ⟩` in the order of glm's `dot` (alone or in a group), recomputed as
    /// [`dp_optim::numeric::dot`] does when it is not finite and `rescue` (the dense
    /// `rescue_margins`; the dense curvature bound does not rescue).
    fn margin(&self, i: usize, t: &[f64], rescue: bool) -> f64 {
        let (cols, vals) = self.data.row(i);
        let d = self.n_features();
        let prod = |k: usize| vals[k] * t[cols[k]];
        let z = single_dot(cols, d, prod);
        if z.is_finite() || !rescue {
            z
        } else {
            self.robust_dot(i, t)
        }
    }

    /// The margins of the rows `block` (at most [`BLOCK`]) into `z`, rescued as
    /// [`SparseGlmObjective::margin`] says.
    fn block_margins(&self, t: &[f64], block: &[usize], rescue: bool, z: &mut [f64]) {
        for (z, &i) in z.iter_mut().zip(block) {
            *z = self.margin(i, t, rescue);
        }
    }

    /// [`dp_optim::numeric::dot`] of row `i` and `t`, term for term: the unrolled dot product,
    /// or when it is not finite the dot product of `x/max|x|` and `t/max|t|` multiplied back.
    fn robust_dot(&self, i: usize, t: &[f64]) -> f64 {
        let (cols, vals) = self.data.row(i);
        let z = unrolled_dot(cols, self.n_features(), |k| vals[k] * t[cols[k]]);
        if z.is_finite() {
            return z;
        }
        let (sa, sb) = (
            max_abs(ArrayView1::from(vals)),
            max_abs(ArrayView1::from(t)),
        );
        if !(sa.is_finite() && sb.is_finite()) {
            return z;
        }
        if sa == 0.0 || sb == 0.0 {
            return 0.0;
        }
        let u: f64 = cols
            .iter()
            .zip(vals)
            .map(|(&j, &x)| (x / sa) * (t[j] / sb))
            .sum();
        u * sa * sb
    }

    /// Calls `f(block, coef)` on `rows` in blocks of at most [`BLOCK`], `coef` the block's
    /// clipped coefficients `φ_i'(z_i)·min(1, C/(|φ_i'|‖x_i‖))`: the dense `clipped_blocks`.
    fn clipped_blocks(
        &self,
        t: &[f64],
        rows: &[usize],
        clip: f64,
        mut f: impl FnMut(&[usize], &[f64]),
    ) {
        let (y, norms) = (self.data.y(), self.data.row_norms());
        let mut coef = [0.0; BLOCK];
        for block in rows.chunks(BLOCK) {
            let coef = &mut coef[..block.len()];
            self.block_margins(t, block, true, coef);
            for (c, &i) in coef.iter_mut().zip(block) {
                *c = clip_coefficient(self.losses.deriv(i, *c, y[i]), norms[i], clip);
            }
            f(block, coef);
        }
    }

    /// `out += Σ_k c[k]·x_{rows[k]}` as glm's `add_scaled_rows` adds it (module docs): each
    /// group of [`GROUP`] rows summed per column before it is added, the rest row by row.
    fn add_scaled_rows(&self, rows: &[usize], c: &[f64], mut out: ArrayViewMut1<'_, f64>) {
        let mut groups = rows.chunks_exact(GROUP);
        let mut cs = c.chunks_exact(GROUP);
        for (group, c) in (&mut groups).zip(&mut cs) {
            let r: [(&[usize], &[f64]); GROUP] = std::array::from_fn(|k| self.data.row(group[k]));
            // The next entry of each row; the columns of the group in increasing order.
            let mut at = [0usize; GROUP];
            loop {
                let next = (0..GROUP).filter_map(|k| r[k].0.get(at[k])).min().copied();
                let Some(j) = next else { break };
                let mut sum = 0.0;
                for k in 0..GROUP {
                    let (cols, vals) = r[k];
                    if cols.get(at[k]) == Some(&j) {
                        sum += c[k] * vals[at[k]];
                        at[k] += 1;
                    }
                }
                out[j] += sum;
            }
        }
        for (&i, &ck) in groups.remainder().iter().zip(cs.remainder()) {
            self.add_scaled_row(i, ck, out.view_mut());
        }
    }

    /// `out += Σ_{i ∈ rows} clip_C(φ_i'(⟨x_i, θ⟩)·x_i)`.
    fn add_clipped(&self, t: &[f64], rows: &[usize], clip: f64, mut out: ArrayViewMut1<'_, f64>) {
        self.clipped_blocks(t, rows, clip, |block, coef| {
            self.add_scaled_rows(block, coef, out.view_mut())
        });
    }

    /// `out +=` the quantised terms of [`SparseGlmObjective::add_clipped`]'s terms.
    fn add_clipped_exact(&self, t: &[f64], rows: &[usize], out: &mut ExactSum) {
        let clip = out.quantiser().clip();
        self.clipped_blocks(t, rows, clip, |block, coef| {
            for (&i, &c) in block.iter().zip(coef) {
                let (cols, vals) = self.data.row(i);
                out.add_scaled_sparse(c, cols, vals);
            }
        });
    }

    /// `φ_i(z)` (relative to zero when asked), as the dense objective's value computes it.
    fn value_at(&self, i: usize, z: f64, y: f64) -> f64 {
        match &self.losses {
            ExampleLosses::Plain(l) if self.relative => l.change(z, y),
            ExampleLosses::Plain(l) => l.value(z, y),
            ExampleLosses::Clipped(_, rows) if self.relative => rows[i].change(z),
            ExampleLosses::Clipped(_, rows) => rows[i].value(z),
        }
    }

    /// `Σ_{i ∈ range} φ_i(z_i)` (unscaled, relative to zero when asked): a leaf of the dense
    /// value's sum, block by block.
    fn leaf_value(&self, t: &[f64], range: Range<usize>) -> f64 {
        let y = self.data.y();
        let mut sum = 0.0;
        let mut z = [0.0; BLOCK];
        GlmObjective::for_blocks(range, |block| {
            let z = &mut z[..block.len()];
            self.block_margins(t, block, true, z);
            for (&zi, &i) in z.iter().zip(block) {
                sum += self.value_at(i, zi, y[i]);
            }
        });
        sum
    }

    /// A leaf of the dense gradient: adds `Σ_{i ∈ range} s·φ_i'(z_i)·x_i` to `g` and returns
    /// `Σ_{i ∈ range} φ_i(z_i)` (unscaled), block by block.
    fn leaf_value_grad(
        &self,
        t: &[f64],
        range: Range<usize>,
        mut g: ArrayViewMut1<'_, f64>,
    ) -> f64 {
        let y = self.data.y();
        let mut sum = 0.0;
        let mut coef = [0.0; BLOCK];
        GlmObjective::for_blocks(range, |block| {
            let coef = &mut coef[..block.len()];
            self.block_margins(t, block, true, coef);
            for (c, &i) in coef.iter_mut().zip(block) {
                let (v, d) = self.losses.value_deriv(i, *c, y[i], self.relative);
                sum += v;
                *c = self.scale * d;
            }
            self.add_scaled_rows(block, coef, g.view_mut());
        });
        sum
    }

    /// `Σ_{i ∈ range} ⟨x_i, p⟩²` (margins not rescued): a leaf of the dense curvature bound.
    fn leaf_squares(&self, p: &[f64], range: Range<usize>) -> f64 {
        let mut sum = 0.0;
        let mut z = [0.0; BLOCK];
        GlmObjective::for_blocks(range, |block| {
            let z = &mut z[..block.len()];
            self.block_margins(p, block, false, z);
            sum += z.iter().map(|v| v * v).sum::<f64>();
        });
        sum
    }
}

/// `θ` as a slice (copied when it is not contiguous).
fn contiguous<'t>(theta: &'t ArrayView1<'_, f64>) -> Cow<'t, [f64]> {
    match theta.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(theta.to_vec()),
    }
}

impl Objective for SparseGlmObjective<'_> {
    fn dim(&self) -> usize {
        self.n_features()
    }

    fn value(&self, theta: ArrayView1<'_, f64>) -> f64 {
        let t = contiguous(&theta);
        let sum = tree_fold(
            self.n_samples(),
            &|range| self.leaf_value(&t, range),
            &|a, b| a + b,
        );
        finish_value(self.scale, self.lambda, sum, theta)
    }

    fn value_grad(&self, theta: ArrayView1<'_, f64>, grad: ArrayViewMut1<'_, f64>) -> f64 {
        let t = contiguous(&theta);
        let (sum, g) = tree_sum(self.n_samples(), self.n_features(), |range, g| {
            self.leaf_value_grad(&t, range, g)
        });
        finish_value_grad((self.scale, self.lambda), (sum, &g), theta, grad)
    }

    /// The dense objective's bound, `s·β·Σ_i ⟨x_i, p⟩² + λ‖p‖²`, from sparse margins.
    fn curvature_bound(&self, p: ArrayView1<'_, f64>) -> Option<f64> {
        let t = contiguous(&p);
        self.losses.curvature_bound(self.scale, self.lambda, p, || {
            tree_fold(
                self.n_samples(),
                &|range| self.leaf_squares(&t, range),
                &|a, b| a + b,
            )
        })
    }
}

impl FiniteSum for SparseGlmObjective<'_> {
    fn n_terms(&self) -> usize {
        self.n_samples()
    }

    fn batch_grad(
        &self,
        theta: ArrayView1<'_, f64>,
        batch: &[usize],
        mut grad: ArrayViewMut1<'_, f64>,
    ) {
        let t = contiguous(&theta);
        let y = self.data.y();
        grad.fill(0.0);
        for &i in batch {
            let c = self.scale * self.losses.deriv(i, self.robust_dot(i, &t), y[i]);
            self.add_scaled_row(i, c, grad.view_mut());
        }
    }

    fn regulariser_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) {
        grad.assign(&theta);
        grad *= self.lambda;
    }
}

impl GlmSum for SparseGlmObjective<'_> {
    fn term_scalar(&self, theta: ArrayView1<'_, f64>, i: usize) -> f64 {
        let t = contiguous(&theta);
        let y = self.data.y();
        self.scale * self.losses.deriv(i, self.margin(i, &t, true), y[i])
    }

    fn add_scaled_row(&self, i: usize, c: f64, mut grad: ArrayViewMut1<'_, f64>) {
        let (cols, vals) = self.data.row(i);
        cols.iter().zip(vals).for_each(|(&j, &x)| grad[j] += c * x);
    }
}

impl ClippedSum for SparseGlmObjective<'_> {
    fn n_examples(&self) -> usize {
        self.n_samples()
    }

    fn dim(&self) -> usize {
        self.n_features()
    }

    /// `Σ_{i ∈ batch} clip_C(φ_i'(⟨x_i, θ⟩)·x_i)`, as the dense objective's (NaN or negative
    /// `clip` as 0, `∞` without clipping; each term of norm `≤ C`).
    fn clipped_sum(
        &self,
        theta: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        clip: f64,
        out: ArrayViewMut1<'_, f64>,
    ) {
        let clip = if clip >= 0.0 { clip } else { 0.0 };
        let t = contiguous(&theta);
        clipped_sum_over(self.n_samples(), batch, out, |rows, g| {
            self.add_clipped(&t, rows, clip, g)
        });
    }

    /// The exact sum of the quantised terms, bit-identical to the dense objective's on the
    /// same rows (module docs): the same blocks, margins, coefficients and integer terms.
    fn exact_clipped_sum(
        &self,
        theta: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        out: &mut ExactSum,
    ) {
        let t = contiguous(&theta);
        exact_sum_over(self.n_samples(), batch, out, |rows, sum| {
            self.add_clipped_exact(&t, rows, sum)
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::learners::testdata::rng;
    use rand::RngExt;

    /// Sparse rows of any magnitude, about a third of 40 entries present, every fifth row
    /// empty; row 1 of entries near `f64::MAX` (its norm overflows), row 2 tiny.
    fn rows() -> SparseDataset {
        let mut r = rng(3);
        let (mut indptr, mut indices, mut values, mut y) = (vec![0], vec![], vec![], vec![]);
        for i in 0..60 {
            for j in 0..40 {
                if i % 5 != 4 && r.random::<f64>() < 0.3 {
                    let size = match i {
                        1 => f64::MAX,
                        2 => 1e-200,
                        _ => 10f64.powi(r.random_range(-3..3)),
                    };
                    indices.push(j);
                    values.push((2.0 * r.random::<f64>() - 1.0) * size);
                }
            }
            indptr.push(values.len());
            y.push(1.0);
        }
        let csr = CsrData {
            n_features: 40,
            indptr,
            indices,
            values,
            y,
        };
        SparseDataset::new(csr).unwrap()
    }

    #[test]
    fn projected_rows_are_the_dense_projection_bit_for_bit() {
        let data = rows();
        let dense = data.to_dense().unwrap();
        assert!(data.row_norms()[1].is_infinite());
        let bits = |x: ArrayView1<'_, f64>| x.mapv(f64::to_bits);
        for radius in [0.5, 3.0] {
            let projected = data.projected(radius).unwrap().unwrap();
            let x = BallProjector::new(radius)
                .unwrap()
                .transform(dense.x().view())
                .unwrap();
            let sparse = projected.to_dense().unwrap();
            for (a, b) in sparse.x().rows().into_iter().zip(x.rows()) {
                if cfg!(feature = "blas") {
                    // BLAS's `ddot` adds a dense row's squares in another order: its norm,
                    // and so the scale factor, may differ in the last places.
                    for (&u, &v) in a.iter().zip(&b) {
                        assert!((u - v).abs() <= 4.0 * f64::EPSILON * v.abs(), "{u} vs {v}");
                    }
                } else {
                    assert_eq!(bits(a), bits(b));
                }
            }
            assert!(projected.max_row_norm() <= radius * (1.0 + 1e-15));
            assert_eq!(projected.nnz(), data.nnz());
        }
        // No row longer than the radius: nothing to copy.
        let short = data.projected(3.0).unwrap().unwrap();
        assert!(short.projected(3.0 * (1.0 + 1e-12)).unwrap().is_none());
        assert!(matches!(
            data.projected(0.0),
            Err(Error::InvalidHyperParameter { name: "radius", .. })
        ));
    }

    /// A model projecting rows onto norm 2 scores sparse rows as the dense rows it scores:
    /// a row whose margin overflows before the projection (`1e300·1e10`, of both signs) and a
    /// row whose norm overflows (entries `f64::MAX`) give the finite dense values, not `±∞`,
    /// NaN or 0.
    #[test]
    fn decision_values_on_rows_a_model_projects_are_the_dense_ones() {
        use crate::OutputPerturbation;
        use crate::learners::testdata::logistic;
        use crate::model::LinearModel;
        let csr = CsrData {
            n_features: 2,
            indptr: vec![0, 2, 4, 6, 6],
            indices: vec![0, 1, 0, 1, 0, 1],
            values: vec![1e300, -1e300, f64::MAX, f64::MAX, 3.0, 4.0],
            y: vec![0.0; 4],
        };
        let rows = SparseDataset::new(csr).unwrap();
        assert!(rows.row_norms()[1].is_infinite());
        // A fitted model's report, on coefficients chosen to overflow the margins.
        let fitted = OutputPerturbation::new(Loss::Logistic)
            .fit(&logistic(50, 2, 1.0, 1).0, &mut rng(1))
            .unwrap();
        let report = fitted.privacy().clone();
        let coef = Array1::from(vec![1e10, 3e10]);
        let model = LinearModel::new(coef, 0.5, Loss::Logistic, report)
            .unwrap()
            .with_row_bound(2.0)
            .unwrap();
        let dense = model
            .decision_function(rows.to_dense().unwrap().x().view())
            .unwrap();
        assert!(dense.iter().all(|z| z.is_finite()), "{dense}");
        let sparse = rows.decision_function(&model).unwrap();
        assert_eq!(
            sparse.mapv(f64::to_bits),
            dense.mapv(f64::to_bits),
            "{sparse}"
        );
    }

    #[test]
    fn column_squares_are_the_dense_sums() {
        let data = rows().projected(2.0).unwrap().unwrap();
        let dense = data.to_dense().unwrap();
        let mut squares = Array1::<f64>::zeros(40);
        for row in dense.x().rows() {
            squares.zip_mut_with(&row, |a, &v| *a += v * v);
        }
        assert_eq!(
            data.column_squares().mapv(f64::to_bits),
            squares.mapv(f64::to_bits)
        );
        assert!(squares.iter().all(|&s| s > 0.0));
    }
}
