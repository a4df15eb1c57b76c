//! The GLM objective `J(θ) = s·Σ_i φ_i(⟨x_i, θ⟩) + (λ/2)‖θ‖²` over a [`BlockSource`], for the
//! full-batch learners that minimise it deterministically (objective perturbation, AMP and
//! output perturbation): every value or gradient is one checked pass over the blocks
//! ([`Walk`]), memory `O(d·log(n/LEAF))` plus a block and one leaf of rows.
//!
//! # The same bits as in memory
//! [`GlmObjective`] sums its rows in leaves of `LEAF` rows at fixed boundaries, each leaf in
//! row order, and combines the leaves' partial sums along a fixed binary tree (`glm`,
//! § Threads). A pass here cuts the stream at the same boundaries: a leaf that lies inside a
//! block is summed in place (the leaves of a block on the rayon pool), a leaf cut by a block
//! boundary is first copied into a kept buffer. The leaves are summed by the same kernels
//! ([`GlmObjective::leaf_value_grad`] and its siblings) and combined, as they arrive, along
//! the same tree ([`InOrder`]). So every value, gradient and curvature bound is bit-identical
//! to the in-memory objective's on the same rows, whatever the blocks, and so is a seeded
//! model fitted from them.
//!
//! # Per row, as in memory
//! Each block's rows longer than the public bound `X` are scaled to norm `X` (the learners'
//! `bounded_rows`, a per-record map) and each row gets its (clipped) loss from its own label
//! and norm, so the bounds the privacy analyses assume hold row by row in the stream.
//!
//! # Failures
//! Every pass re-checks the widths, values, labels, row count and fingerprint ([`Walk`]): a
//! source that fails or changes between passes cannot return its error through
//! [`Objective`], so the error is kept, every later value and gradient is NaN (no pass is
//! made), and [`Stream::fit_with`] returns the error after the fit, whose result is
//! discarded: nothing is released.

use std::cell::RefCell;
use std::ops::Range;

use dp_optim::Objective;
use ndarray::{Array1, Array2, ArrayView1, ArrayViewMut1};
use rayon::prelude::*;

use super::objpert::{InMemory, add_column_squares, bounded_rows};
use crate::clipping::ClippedLoss;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::glm::{
    ExampleLosses, GlmObjective, LEAF, Scale, finish_value, finish_value_grad, join_value_grad,
    scale_factor,
};
use crate::loss::Loss;
use crate::streamed::{BlockSource, Walk};
use crate::sufficient::StreamError;

/// A [`BlockSource`] checked by a first pass, for the [`StreamedGlm`] objectives read from it
/// (module docs).
pub(crate) struct Stream<S: BlockSource> {
    walk: Walk<S>,
    failure: RefCell<Option<StreamError<S::Error>>>,
    /// The rows of a leaf cut by a block boundary, kept from pass to pass.
    pending: RefCell<Pending>,
}

impl<S: BlockSource> Stream<S> {
    /// The first pass: checks every block (widths, finite values, labels in `loss`'s domain)
    /// and counts the rows.
    ///
    /// # Errors
    /// As [`crate::streamed::StreamedSum::new`].
    pub(crate) fn new(source: S, loss: Loss) -> std::result::Result<Self, StreamError<S::Error>> {
        Ok(Self {
            walk: Walk::new(source, loss)?,
            failure: RefCell::new(None),
            pending: RefCell::default(),
        })
    }

    /// The rows counted in the first pass and the features per row.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.walk.rows(), self.walk.dim())
    }

    /// `fit(&self)`, then the first error a pass met (module docs, § Failures), which wins
    /// over the fit's result.
    ///
    /// # Errors
    /// That error, else `fit`'s.
    pub(crate) fn fit_with<T>(
        self,
        fit: impl FnOnce(&Self) -> Result<T>,
    ) -> std::result::Result<T, StreamError<S::Error>> {
        let out = fit(&self);
        match self.failure.into_inner() {
            Some(e) => Err(e),
            None => Ok(out?),
        }
    }

    /// The objective of `terms` with ridge `lambda` over this stream.
    ///
    /// # Errors
    /// A negative or non-finite `lambda`.
    pub(crate) fn glm(&self, terms: Terms, lambda: f64) -> Result<StreamedGlm<'_, S>> {
        let scale = scale_factor(lambda, terms.scale, self.walk.rows())?;
        Ok(StreamedGlm {
            stream: self,
            terms,
            scale,
            lambda,
        })
    }

    /// `Σ_i x_ij²` for every column `j` of the bounded rows, rows in order (NaN after a
    /// source error).
    pub(crate) fn column_squares(&self, x_bound: f64) -> Array1<f64> {
        let mut squares = Array1::zeros(self.walk.dim());
        let mut error = None;
        let walked = self.walk.pass(|data, _| {
            if error.is_none() {
                match bounded_rows(data, x_bound) {
                    Ok(rows) => add_column_squares(&mut squares, &rows),
                    Err(e) => error = Some(e),
                }
            }
        });
        if self.keep(walked, error).is_none() {
            squares.fill(f64::NAN);
        }
        squares
    }

    /// `Some(())` after a pass without error; otherwise the error kept (the walk's first).
    fn keep(
        &self,
        walked: std::result::Result<(), StreamError<S::Error>>,
        error: Option<Error>,
    ) -> Option<()> {
        match walked.and_then(|()| error.map_or(Ok(()), |e| Err(e.into()))) {
            Ok(()) => Some(()),
            Err(e) => {
                self.failure.borrow_mut().get_or_insert(e);
                None
            }
        }
    }

    /// One pass: `leaf(objective, rows)` on every leaf of `LEAF` rows (module docs), combined
    /// by `join` along the in-memory tree; `None` after a source error, now or before.
    fn fold<T, F, J>(&self, terms: &Terms, scale: f64, leaf: &F, join: &J) -> Option<T>
    where
        T: Send,
        F: Fn(&GlmObjective<'_>, Range<usize>) -> T + Sync,
        J: Fn(T, T) -> T,
    {
        if self.failure.borrow().is_some() {
            return None;
        }
        let mut tree = InOrder::new(self.walk.rows());
        let mut pending = self.pending.take();
        let mut error = None;
        let walked = self.walk.pass(|data, start| {
            if error.is_none() {
                let cut = Cut {
                    terms,
                    scale,
                    rows: self.walk.rows(),
                };
                if let Err(e) = cut.block(data, start, &mut pending, &mut tree, leaf, join) {
                    error = Some(e);
                }
            }
        });
        pending.clear();
        self.pending.replace(pending);
        self.keep(walked, error)?;
        let total = tree.finish();
        if total.is_none() {
            let e = Error::Privacy("a pass did not cover every leaf: nothing is released".into());
            self.failure.borrow_mut().get_or_insert(e.into());
        }
        total
    }
}

/// Which per-example losses, how scaled, and the row bound of a [`StreamedGlm`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    /// The loss.
    pub(crate) loss: Loss,
    /// The clipped loss used instead, if any.
    pub(crate) clipped: Option<ClippedLoss>,
    /// `Σ` or `(1/n)Σ` over the counted rows.
    pub(crate) scale: Scale,
    /// Values relative to `θ = 0` (`GlmObjective::relative_to_zero`).
    pub(crate) relative: bool,
    /// Rows longer than this are scaled to it (`bounded_rows`).
    pub(crate) x_bound: f64,
}

impl Terms {
    /// The in-memory objective on `data` (one block's bounded rows), the factor `scale` in
    /// front of the sum.
    fn objective<'d>(&self, data: &'d Dataset, scale: f64) -> Result<GlmObjective<'d>> {
        Ok(data.term(self, 0.0)?.with_scale(scale))
    }
}

/// The rows of a leaf cut by block boundaries, copied as they arrive.
#[derive(Debug, Default)]
struct Pending {
    x: Vec<f64>,
    y: Vec<f64>,
}

impl Pending {
    fn clear(&mut self) {
        self.x.clear();
        self.y.clear();
    }

    /// Appends the rows `rows` of `data`.
    fn extend(&mut self, data: &Dataset, rows: Range<usize>) {
        let x = data.x();
        for i in rows {
            self.x.extend(x.row(i).iter());
            self.y.push(data.y()[i]);
        }
    }

    /// `leaf` on the kept rows (one whole leaf), which are then cleared.
    fn evaluate<T, F>(&mut self, terms: &Terms, scale: f64, dim: usize, leaf: &F) -> Result<T>
    where
        F: Fn(&GlmObjective<'_>, Range<usize>) -> T,
    {
        let rows = self.y.len();
        let x = Array2::from_shape_vec((rows, dim), std::mem::take(&mut self.x)).map_err(|_| {
            Error::ShapeMismatch {
                left: "a leaf's values",
                left_shape: vec![rows, dim],
                right: "its rows and features",
                right_shape: vec![rows, dim],
            }
        })?;
        let data = Dataset::new(x, Array1::from(std::mem::take(&mut self.y)))?;
        let out = leaf(&terms.objective(&data, scale)?, 0..rows);
        let (x, y) = data.into_parts();
        (self.x, self.y) = (x.into_raw_vec_and_offset().0, y.into_raw_vec_and_offset().0);
        self.clear();
        Ok(out)
    }
}

/// One block of a pass cut at the leaves' boundaries.
struct Cut<'t> {
    terms: &'t Terms,
    scale: f64,
    /// The rows of the first pass.
    rows: usize,
}

impl Cut<'_> {
    /// Feeds the leaves of the block `data` (rows `start..`) to `tree`: whole leaves in place
    /// (on the rayon pool), the parts of a cut leaf through `pending`.
    fn block<T, F, J>(
        &self,
        data: &Dataset,
        start: usize,
        pending: &mut Pending,
        tree: &mut InOrder<T>,
        leaf: &F,
        join: &J,
    ) -> Result<()>
    where
        T: Send,
        F: Fn(&GlmObjective<'_>, Range<usize>) -> T + Sync,
        J: Fn(T, T) -> T,
    {
        let end = start + data.n_samples();
        if end > self.rows {
            // The walk reports the change after the pass.
            return Err(Error::Privacy("the source grew between passes".into()));
        }
        let bounded = bounded_rows(data, self.terms.x_bound)?;
        let glm = self.terms.objective(&bounded, self.scale)?;
        let mut whole: Vec<Range<usize>> = Vec::new();
        let flush = |whole: &mut Vec<Range<usize>>, tree: &mut InOrder<T>| {
            let sums: Vec<T> = whole.par_iter().map(|r| leaf(&glm, r.clone())).collect();
            sums.into_iter().for_each(|v| tree.push(v, join));
            whole.clear();
        };
        let mut at = start;
        while at < end {
            let leaf_end = ((at / LEAF + 1) * LEAF).min(self.rows);
            let piece_end = leaf_end.min(end);
            if at.is_multiple_of(LEAF) && piece_end == leaf_end {
                whole.push(at - start..piece_end - start);
            } else {
                flush(&mut whole, tree);
                pending.extend(&bounded, at - start..piece_end - start);
                if piece_end == leaf_end {
                    let dim = bounded.n_features();
                    tree.push(pending.evaluate(self.terms, self.scale, dim, leaf)?, join);
                }
            }
            at = piece_end;
        }
        flush(&mut whole, tree);
        Ok(())
    }
}

/// The fixed summation tree of `glm::tree_fold` (halves of the leaf range, `mid = a +
/// (b − a)/2`, left + right), evaluated with the leaves given left to right: a stack of the
/// finished subtrees, at most one per level.
struct InOrder<T> {
    leaves: usize,
    next: usize,
    /// Finished subtrees `(leaf range, value)`, left to right.
    stack: Vec<((usize, usize), T)>,
}

impl<T> InOrder<T> {
    /// The tree over the leaves of `n` rows.
    fn new(n: usize) -> Self {
        Self {
            leaves: n.div_ceil(LEAF).max(1),
            next: 0,
            stack: Vec::new(),
        }
    }

    /// The next leaf's value: joined with its finished left siblings, up the tree.
    fn push(&mut self, mut value: T, join: &impl Fn(T, T) -> T) {
        let mut node = (self.next, self.next + 1);
        self.next += 1;
        while let Some(parent) = self.right_child_of(node) {
            // The left sibling finished before this node's first leaf came.
            match self.stack.pop() {
                Some((_, left)) => value = join(left, value),
                None => break,
            }
            node = parent;
        }
        self.stack.push((node, value));
    }

    /// The parent of `node` when `node` is its right child.
    fn right_child_of(&self, node: (usize, usize)) -> Option<(usize, usize)> {
        let (mut a, mut b) = (0, self.leaves);
        while b - a > 1 {
            let mid = a + (b - a) / 2;
            if node == (mid, b) {
                return Some((a, b));
            }
            if node == (a, mid) {
                return None;
            }
            if node.1 <= mid { b = mid } else { a = mid }
        }
        None
    }

    /// The root's value, once every leaf came.
    fn finish(mut self) -> Option<T> {
        match self.stack.pop() {
            Some((node, v)) if node == (0, self.leaves) && self.stack.is_empty() => Some(v),
            _ => None,
        }
    }
}

/// `J(θ) = s·Σ_i φ_i(⟨x_i, θ⟩) + (λ/2)‖θ‖²` over a [`Stream`] (module docs): the same values
/// and gradients as [`GlmObjective`] on the same rows, bit for bit; NaN after a source error.
pub(crate) struct StreamedGlm<'s, S: BlockSource> {
    stream: &'s Stream<S>,
    terms: Terms,
    scale: f64,
    lambda: f64,
}

impl<S: BlockSource> StreamedGlm<'_, S> {
    /// The ridge `λ`.
    pub(crate) fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The rows counted in the first pass.
    pub(crate) fn rows(&self) -> usize {
        self.stream.walk.rows()
    }

    /// `Σ_i x_ij²` of the bounded rows ([`Stream::column_squares`]).
    pub(crate) fn column_squares(&self) -> Array1<f64> {
        self.stream.column_squares(self.terms.x_bound)
    }

    fn fold<T: Send>(
        &self,
        leaf: &(impl Fn(&GlmObjective<'_>, Range<usize>) -> T + Sync),
        join: &impl Fn(T, T) -> T,
    ) -> Option<T> {
        self.stream.fold(&self.terms, self.scale, leaf, join)
    }
}

impl<S: BlockSource> Objective for StreamedGlm<'_, S> {
    fn dim(&self) -> usize {
        self.stream.walk.dim()
    }

    fn value(&self, theta: ArrayView1<'_, f64>) -> f64 {
        self.fold(&|glm, range| glm.leaf_value(range, theta), &|a, b| a + b)
            .map_or(f64::NAN, |sum| {
                finish_value(self.scale, self.lambda, sum, theta)
            })
    }

    fn value_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
        let d = self.dim();
        let leaf = |glm: &GlmObjective<'_>, range| {
            let mut g = Array1::zeros(d);
            let v = glm.leaf_value_grad(&glm.labels(), range, theta, g.view_mut());
            (v, g)
        };
        match self.fold(&leaf, &join_value_grad) {
            Some((sum, g)) => finish_value_grad((self.scale, self.lambda), (sum, &g), theta, grad),
            None => {
                grad.fill(f64::NAN);
                f64::NAN
            }
        }
    }

    /// As [`GlmObjective`]'s: `s·β·Σ_i ⟨x_i, p⟩² + λ‖p‖²` for a plain loss, one pass.
    fn curvature_bound(&self, p: ArrayView1<'_, f64>) -> Option<f64> {
        if self.terms.clipped.is_some() {
            return None;
        }
        ExampleLosses::Plain(self.terms.loss).curvature_bound(self.scale, self.lambda, p, || {
            self.fold(&|glm, range| glm.leaf_squares(range, p), &|a, b| a + b)
                .unwrap_or(f64::NAN)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::glm::tree_fold;
    use crate::learners::testdata::logistic;

    /// The leaves pushed in order are joined exactly as `tree_fold` joins them: the same
    /// bracketing, for every number of leaves up to 70.
    #[test]
    fn in_order_tree_is_the_fixed_tree() {
        let join = |a: String, b: String| format!("({a} {b})");
        for leaves in 1..=70usize {
            let n = leaves * LEAF - LEAF / 2;
            let fixed = tree_fold(n, &|r: Range<usize>| (r.start / LEAF).to_string(), &join);
            let mut tree = InOrder::new(n);
            (0..leaves).for_each(|k| tree.push(k.to_string(), &join));
            assert_eq!(tree.finish(), Some(fixed), "{leaves} leaves");
        }
        // A missing leaf gives no value.
        let mut tree = InOrder::new(3 * LEAF);
        (0..2).for_each(|k| tree.push(k.to_string(), &join));
        assert_eq!(tree.finish(), None);
    }

    /// Values, gradients and curvature bounds equal the in-memory objective's bit for bit,
    /// for blocks that cut the leaves anywhere (and rows beyond the bound, clipped losses,
    /// mean and sum scales, values relative to zero).
    #[test]
    fn streamed_objective_equals_the_in_memory_one_bit_for_bit() {
        let n = 2 * LEAF + 1000;
        let (data, _) = logistic(n, 3, 2.0, 7);
        // Rows up to norm 2 against a bound of 1.5: some are scaled.
        let x = data.x().mapv(|v| 2.0 * v);
        let data = Dataset::new(x, data.y().to_owned()).unwrap();
        let loaded = dp_data::LoadedData {
            x: data.x().to_owned(),
            y: data.y().to_owned(),
            feature_names: None,
        };
        let x_bound = 1.5;
        let bounded = bounded_rows(&data, x_bound).unwrap();
        let clipped = ClippedLoss::new(Loss::Logistic, 0.3).unwrap();
        let theta = ndarray::array![0.3, -1.2, 0.7];
        for (clip, scale, relative) in [
            (None, Scale::Sum, true),
            (Some(clipped), Scale::Mean, false),
        ] {
            let memory = match clip {
                Some(c) => GlmObjective::clipped(&bounded, c, 0.25, scale),
                None => GlmObjective::new(&bounded, Loss::Logistic, 0.25, scale),
            }
            .unwrap();
            let memory = if relative {
                memory.relative_to_zero()
            } else {
                memory
            };
            let mut g0 = Array1::zeros(3);
            let v0 = memory.value_grad(theta.view(), g0.view_mut());
            for block in [1000, LEAF, 2 * LEAF, 5000, 40_000] {
                let stream = Stream::new(|| loaded.blocks(block), Loss::Logistic).unwrap();
                let terms = Terms {
                    loss: Loss::Logistic,
                    clipped: clip,
                    scale,
                    relative,
                    x_bound,
                };
                let glm = stream.glm(terms, 0.25).unwrap();
                let mut g = Array1::zeros(3);
                let v = glm.value_grad(theta.view(), g.view_mut());
                assert_eq!(v.to_bits(), v0.to_bits(), "block {block}");
                assert_eq!(g, g0, "block {block}");
                assert_eq!(
                    glm.value(theta.view()).to_bits(),
                    memory.value(theta.view()).to_bits()
                );
                assert_eq!(
                    glm.curvature_bound(theta.view()).map(f64::to_bits),
                    memory.curvature_bound(theta.view()).map(f64::to_bits)
                );
                let mut squares = Array1::zeros(3);
                add_column_squares(&mut squares, &bounded);
                assert_eq!(glm.column_squares(), squares);
                assert!(stream.fit_with(|_| Ok(())).is_ok());
            }
        }
    }
}
