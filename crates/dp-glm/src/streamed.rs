//! Full-batch clipped gradient sums over data read block by block: a [`ClippedSum`] whose
//! every sum walks a re-openable row-block source ([`dp_data::RowBlock`]s, opened anew for
//! each pass), so a full-batch private solver ([`dp_optim::NoisyGd`]) fits a dataset on disk
//! in memory `O(d)` plus one block.
//!
//! Each block becomes a [`Dataset`] and a [`GlmObjective`] (the same kernels as the in-memory
//! fit); its exact clipped sum is merged into the step's [`ExactSum`] with
//! [`ExactSum::merge`]. Exact sums are integers, independent of order and block cuts, so the
//! released sums — and the fitted model, for the same noise seed — are bit-identical to the
//! in-memory fit's.
//!
//! A source that fails in the middle of a pass cannot return its error through
//! [`ClippedSum`]: the error is kept, the remaining sums are zero, and
//! [`StreamedSum::finish`] returns it after the run (the run's output is then discarded).

use std::cell::RefCell;

use dp_data::RowBlock;
use dp_optim::{ClippedSum, ExactSum};
use ndarray::{ArrayView1, ArrayViewMut1};

use crate::data::Dataset;
use crate::error::Error;
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::sufficient::StreamError;

/// Clipped per-example gradient sums of a GLM loss over a row-block source (module docs).
///
/// # Privacy
/// Every term is a row's clipped gradient computed by [`GlmObjective`] from that row alone,
/// so each sum has the sensitivity of the in-memory one (the clip, enforced on the integers
/// for the exact sum). [`ClippedSum::n_examples`] is the public `n` given, or else the rows
/// counted in the first pass, then treated as public (as the in-memory learners do without
/// a public count).
pub struct StreamedSum<F, E: std::error::Error + 'static> {
    open: F,
    loss: Loss,
    n: usize,
    rows: usize,
    dim: usize,
    failure: RefCell<Option<StreamError<E>>>,
}

impl<F, I, E> StreamedSum<F, E>
where
    F: Fn() -> I,
    I: IntoIterator<Item = Result<RowBlock, E>>,
    E: std::error::Error + 'static,
{
    /// The sums of `loss`'s clipped gradients over the blocks `open()` yields. A first pass
    /// counts the rows, checks the widths and the labels (so a malformed file fails before
    /// anything is released); `public_n` replaces the count as `n` when given.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`Error::EmptyData`] for a
    /// source without rows, [`Error::ShapeMismatch`] for blocks of different widths or
    /// without labels, [`Error::LabelOutOfDomain`] for a label outside the loss's domain,
    /// [`Error::NonFinite`] for a NaN or infinite value, [`Error::InvalidHyperParameter`] for
    /// `public_n = 0` or invalid loss parameters.
    pub fn new(open: F, loss: Loss, public_n: Option<usize>) -> Result<Self, StreamError<E>> {
        loss.validate()?;
        let mut sum = Self {
            open,
            loss,
            n: 0,
            rows: 0,
            dim: 0,
            failure: RefCell::new(None),
        };
        let (mut rows, mut dim) = (0usize, 0usize);
        sum.walk(None, |glm, _| {
            dim = glm.n_features();
            rows += glm.n_samples();
        })?;
        sum.dim = dim;
        if rows == 0 {
            return Err(Error::EmptyData { what: "no rows" }.into());
        }
        sum.rows = rows;
        sum.n = public_n.unwrap_or(rows);
        crate::error::ensure(sum.n >= 1, "public_n", sum.n as f64, "must be >= 1")?;
        Ok(sum)
    }

    /// The rows counted in the first pass.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The first error a pass met after [`StreamedSum::new`] (module docs), if any.
    ///
    /// # Errors
    /// That error.
    pub fn finish(self) -> Result<(), StreamError<E>> {
        self.failure.into_inner().map_or(Ok(()), Err)
    }

    /// `fit(&self)` (a solver's run on these sums), then [`StreamedSum::finish`]: a source
    /// error met during the run wins over the run's result, which is discarded.
    ///
    /// # Errors
    /// That error, else `fit`'s.
    pub fn fit_with<T>(
        self,
        fit: impl FnOnce(&Self) -> crate::error::Result<T>,
    ) -> Result<T, StreamError<E>> {
        let out = fit(&self);
        self.finish()?;
        Ok(out?)
    }

    /// One pass: `f(block's objective, the batch's indices in the block)` for every non-empty
    /// block (`batch = None`: the whole block). Checks each block's width against the first
    /// and, once the rows are counted, the pass's count against it.
    fn walk(
        &self,
        batch: Option<&[usize]>,
        mut f: impl FnMut(&GlmObjective<'_>, Option<&[usize]>),
    ) -> Result<(), StreamError<E>> {
        let (mut start, mut dim) = (0usize, None);
        let mut local = Vec::new();
        for block in (self.open)() {
            let block = block.map_err(StreamError::Source)?;
            let rows = block.x.nrows();
            if rows == 0 {
                continue;
            }
            let width = *dim.get_or_insert(block.x.ncols());
            if block.x.ncols() != width || (self.rows > 0 && width != self.dim) {
                let expected = if self.rows > 0 { self.dim } else { width };
                return Err(Error::ShapeMismatch {
                    left: "the block's features",
                    left_shape: vec![rows, block.x.ncols()],
                    right: "the first block's features",
                    right_shape: vec![rows, expected],
                }
                .into());
            }
            let data = Dataset::new(block.x, block.y)?;
            let glm = GlmObjective::new(&data, self.loss, 0.0, Scale::Mean)?;
            let end = start.saturating_add(rows);
            let indices = batch.map(|b| {
                local.clear();
                local.extend(b.iter().filter(|&&i| (start..end).contains(&i)));
                local.iter_mut().for_each(|i| *i -= start);
                &local[..]
            });
            f(&glm, indices);
            start = end;
        }
        if self.rows > 0 && start != self.rows {
            return Err(Error::ShapeMismatch {
                left: "the rows of a later pass (the source changed)",
                left_shape: vec![start],
                right: "the rows of the first pass",
                right_shape: vec![self.rows],
            }
            .into());
        }
        Ok(())
    }

    /// [`StreamedSum::walk`], keeping the first error (module docs); `false` when there was
    /// one, now or before.
    fn walk_or_keep(
        &self,
        batch: Option<&[usize]>,
        f: impl FnMut(&GlmObjective<'_>, Option<&[usize]>),
    ) -> bool {
        if self.failure.borrow().is_some() {
            return false;
        }
        match self.walk(batch, f) {
            Ok(()) => true,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

impl<F, I, E> ClippedSum for StreamedSum<F, E>
where
    F: Fn() -> I,
    I: IntoIterator<Item = Result<RowBlock, E>>,
    E: std::error::Error + 'static,
{
    fn n_examples(&self) -> usize {
        self.n
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// The blocks' [`ClippedSum::clipped_sum`]s added in `f64` (zero after a source error).
    fn clipped_sum(
        &self,
        x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        clip: f64,
        mut out: ArrayViewMut1<'_, f64>,
    ) {
        out.fill(0.0);
        let mut part = ndarray::Array1::zeros(self.dim);
        let ok = self.walk_or_keep(batch, |glm, idx| {
            glm.clipped_sum(x, idx, clip, part.view_mut());
            out += &part;
        });
        if !ok {
            out.fill(0.0);
        }
    }

    /// The blocks' exact sums merged exactly: the in-memory sum, whatever the blocks (zero
    /// after a source error).
    fn exact_clipped_sum(
        &self,
        x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        out: &mut ExactSum,
    ) {
        out.clear();
        let quantiser = *out.quantiser();
        let ok = self.walk_or_keep(batch, |glm, idx| {
            let mut part = ExactSum::new(quantiser);
            glm.exact_clipped_sum(x, idx, &mut part);
            out.merge(part);
        });
        if !ok {
            out.clear();
        }
    }
}
