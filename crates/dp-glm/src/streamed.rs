//! Full-batch sums over data read block by block: a [`BlockSource`] is read pass after pass
//! (one pass per gradient step or objective evaluation), and a [`StreamedSum`] is a
//! [`ClippedSum`] whose every sum walks it, so a full-batch private solver
//! ([`dp_optim::NoisyGd`]) fits a dataset on disk in memory `O(d)` plus a block or two.
//!
//! # Cost
//! A source keeps its block buffers from block to block and pass to pass
//! ([`Reopen`] reads with [`dp_data::RowBlocks::read_into`]; [`Preprocessed`] applies the
//! per-row preprocessing into a second kept buffer): after the first pass nothing is
//! allocated per block but the block's row norms. Each block becomes a [`Dataset`] (its
//! arrays moved in and out, not copied) and a [`GlmObjective`], the in-memory kernels.
//!
//! # What every pass checks
//! The first pass ([`StreamedSum::new`]) checks everything a [`Dataset`] and the loss need —
//! widths, labels present and in the loss's domain, finite values — and counts the rows. Every
//! later pass checks again, cheaply (one vectorised sweep, in cache, for finiteness; the
//! labels' domain; the widths), so that a file changed between passes cannot feed a NaN or
//! an out-of-domain label to the kernels; and it compares its row count and a 128-bit
//! fingerprint of every value it used (after the preprocessing) with the first pass's. A
//! difference is an error, and the run's output is discarded: the model is a function of
//! the data of the first pass, or there is no model. The fingerprint (a four-lane
//! Fletcher sum of the values' bits) catches any change of a single value and, short of a
//! change constructed against it, any other change except with probability about `2^-64`;
//! it is not a cryptographic hash.
//!
//! Exact sums are integers, independent of order and block cuts, so the released sums — and
//! the fitted model, for the same noise seed — are bit-identical to the in-memory fit's.
//!
//! A source that fails in the middle of a pass cannot return its error through
//! [`ClippedSum`]: the error is kept, the remaining sums are zero, and
//! [`StreamedSum::finish`] returns it after the run (the run's output is then discarded).

use std::cell::{Cell, RefCell};

use dp_data::{RowBlock, RowBlocks};
use dp_optim::{ClippedSum, ExactSum};
use ndarray::{ArrayView1, ArrayViewMut1};
use rayon::prelude::*;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::pipeline::Preprocessing;
use crate::sufficient::StreamError;

/// Data read pass after pass, a block of rows at a time.
pub trait BlockSource {
    /// The source's error.
    type Error: std::error::Error + 'static;

    /// One pass over the blocks, in order: `visit` gets each (in a buffer the source may
    /// reuse for the next block and the next pass). Stops at the first error, the source's
    /// or `visit`'s.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's error; [`StreamError::Fit`] with `visit`'s.
    fn pass(
        &self,
        visit: &mut dyn FnMut(&mut RowBlock) -> Result<()>,
    ) -> std::result::Result<(), StreamError<Self::Error>>;
}

/// A function opening a pass's blocks as an iterator (e.g. `|| data.blocks(1024)` for data
/// in memory) is a source; each block is a new allocation.
impl<F, I, E> BlockSource for F
where
    F: Fn() -> I,
    I: IntoIterator<Item = std::result::Result<RowBlock, E>>,
    E: std::error::Error + 'static,
{
    type Error = E;

    fn pass(
        &self,
        visit: &mut dyn FnMut(&mut RowBlock) -> Result<()>,
    ) -> std::result::Result<(), StreamError<E>> {
        for block in self() {
            visit(&mut block.map_err(StreamError::Source)?)?;
        }
        Ok(())
    }
}

/// [`RowBlocks`] opened anew for each pass and read into one kept buffer
/// ([`RowBlocks::read_into`]): no allocation per block after the first pass.
pub struct Reopen<F> {
    open: F,
    buffer: RefCell<RowBlock>,
}

impl<F> Reopen<F> {
    /// The source whose passes `open()` opens.
    pub fn new(open: F) -> Self {
        Self {
            open,
            buffer: RefCell::default(),
        }
    }
}

impl<'a, F> BlockSource for Reopen<F>
where
    F: Fn() -> dp_data::Result<RowBlocks<'a>>,
{
    type Error = dp_data::Error;

    fn pass(
        &self,
        visit: &mut dyn FnMut(&mut RowBlock) -> Result<()>,
    ) -> std::result::Result<(), StreamError<dp_data::Error>> {
        let mut blocks = (self.open)().map_err(StreamError::Source)?;
        let mut block = self.buffer.take();
        let out = loop {
            match blocks.read_into(&mut block) {
                Ok(true) => {
                    if let Err(e) = visit(&mut block) {
                        break Err(e.into());
                    }
                }
                Ok(false) => break Ok(()),
                Err(e) => break Err(StreamError::Source(e)),
            }
        };
        self.buffer.replace(block);
        out
    }
}

/// A source's blocks with the per-row [`Preprocessing`] applied (into a second kept buffer,
/// [`Preprocessing::apply_into`]).
pub struct Preprocessed<'p, S> {
    source: S,
    prep: &'p Preprocessing,
    buffer: RefCell<RowBlock>,
}

impl<'p, S> Preprocessed<'p, S> {
    /// `source`'s blocks through `prep`.
    pub fn new(source: S, prep: &'p Preprocessing) -> Self {
        Self {
            source,
            prep,
            buffer: RefCell::default(),
        }
    }
}

impl<S: BlockSource> BlockSource for Preprocessed<'_, S> {
    type Error = S::Error;

    fn pass(
        &self,
        visit: &mut dyn FnMut(&mut RowBlock) -> Result<()>,
    ) -> std::result::Result<(), StreamError<S::Error>> {
        let mut out = self.buffer.take();
        let result = self.source.pass(&mut |raw| {
            self.prep.apply_into(raw.x.view(), &mut out.x)?;
            std::mem::swap(&mut out.y, &mut raw.y);
            let visited = visit(&mut out);
            std::mem::swap(&mut out.y, &mut raw.y);
            visited
        });
        self.buffer.replace(out);
        result
    }
}

/// A borrowed [`Preprocessed`] source, to fit with and then read again (e.g. to score).
impl<S: BlockSource> BlockSource for &Preprocessed<'_, S> {
    type Error = S::Error;

    fn pass(
        &self,
        visit: &mut dyn FnMut(&mut RowBlock) -> Result<()>,
    ) -> std::result::Result<(), StreamError<S::Error>> {
        (**self).pass(visit)
    }
}

/// A four-lane Fletcher sum of the bits of a pass's values (module docs, § What every pass
/// checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Fingerprint {
    sums: [u64; 4],
    running: [u64; 4],
}

/// Values a rayon task of [`Fingerprint::add`] sums (a multiple of 4: the pieces start on
/// lane 0).
const FINGERPRINT_PIECE: usize = 1 << 16;

impl Fingerprint {
    /// Adds `values` (in order): the pieces of [`FINGERPRINT_PIECE`] values on the current
    /// rayon pool, then joined in order — the same integers as one sweep, whatever the
    /// threads.
    fn add(&mut self, values: &[f64]) {
        let pieces: Vec<Self> = values
            .par_chunks(FINGERPRINT_PIECE)
            .map(|piece| {
                let mut f = Self::default();
                f.add_sequential(piece);
                f
            })
            .collect();
        for (piece, values) in pieces.iter().zip(values.chunks(FINGERPRINT_PIECE)) {
            self.join(piece, values.len());
        }
    }

    /// Adds `values` one after the other.
    fn add_sequential(&mut self, values: &[f64]) {
        for chunk in values.chunks(4) {
            let lanes = chunk.iter().zip(&mut self.sums).zip(&mut self.running);
            for ((v, sum), running) in lanes {
                *sum = sum.wrapping_add(v.to_bits());
                *running = running.wrapping_add(*sum);
            }
        }
    }

    /// Appends `next`, the fingerprint of `len` values from lane 0: lane `l` took
    /// `⌈(len − l)/4⌉` steps of `next`, each also adding this fingerprint's sum to its
    /// running sum.
    fn join(&mut self, next: &Self, len: usize) {
        for lane in 0..4 {
            let steps = len.saturating_sub(lane).div_ceil(4) as u64;
            self.running[lane] = self.running[lane]
                .wrapping_add(next.running[lane])
                .wrapping_add(steps.wrapping_mul(self.sums[lane]));
            self.sums[lane] = self.sums[lane].wrapping_add(next.sums[lane]);
        }
    }
}

/// A checked walk over a [`BlockSource`] (module docs, § What every pass checks): every
/// block a [`Dataset`], the first pass's width, row count and fingerprint kept to compare
/// the later passes with.
pub(crate) struct Walk<S> {
    source: S,
    loss: Loss,
    rows: usize,
    dim: usize,
    fingerprint: Fingerprint,
    passes: Cell<u64>,
}

impl<S: BlockSource> Walk<S> {
    /// The first pass: checks every block for `loss` and counts the rows.
    pub(crate) fn new(source: S, loss: Loss) -> std::result::Result<Self, StreamError<S::Error>> {
        loss.validate()?;
        let mut walk = Self {
            source,
            loss,
            rows: 0,
            dim: 0,
            fingerprint: Fingerprint::default(),
            passes: Cell::new(0),
        };
        let (rows, dim, fingerprint) = walk.walk(|_, _| {})?;
        if rows == 0 {
            return Err(Error::EmptyData { what: "no rows" }.into());
        }
        (walk.rows, walk.dim, walk.fingerprint) = (rows, dim, fingerprint);
        Ok(walk)
    }

    /// The rows counted in the first pass.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The features per row.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// The loss.
    pub(crate) fn loss(&self) -> Loss {
        self.loss
    }

    /// One pass: `f(block's data, its first row)` for every non-empty block, then the
    /// checks against the first pass (none during it).
    pub(crate) fn pass(
        &self,
        f: impl FnMut(&Dataset, usize),
    ) -> std::result::Result<(), StreamError<S::Error>> {
        let (rows, _, fingerprint) = self.walk(f)?;
        let pass = self.passes.get() + 1;
        self.passes.set(pass);
        if rows != self.rows {
            return Err(Error::ShapeMismatch {
                left: "the rows of a later pass (the source changed)",
                left_shape: vec![rows],
                right: "the rows of the first pass",
                right_shape: vec![self.rows],
            }
            .into());
        }
        if fingerprint != self.fingerprint {
            return Err(Error::Privacy(format!(
                "the data changed between passes (pass {pass} after the first read other \
                 values than it): nothing is released"
            ))
            .into());
        }
        Ok(())
    }

    /// Reads a pass: `(rows, width, fingerprint)`.
    fn walk(
        &self,
        mut f: impl FnMut(&Dataset, usize),
    ) -> std::result::Result<(usize, usize, Fingerprint), StreamError<S::Error>> {
        let (mut start, mut width) = (0usize, None::<usize>);
        let mut fingerprint = Fingerprint::default();
        self.source.pass(&mut |block| {
            let rows = block.x.nrows();
            if rows == 0 {
                return Ok(());
            }
            let expected = if self.rows > 0 {
                self.dim
            } else {
                block.x.ncols()
            };
            let expected = *width.get_or_insert(expected);
            if block.x.ncols() != expected {
                return Err(Error::ShapeMismatch {
                    left: "the block's features",
                    left_shape: vec![rows, block.x.ncols()],
                    right: "the first block's features",
                    right_shape: vec![rows, expected],
                });
            }
            let data = Dataset::new(std::mem::take(&mut block.x), std::mem::take(&mut block.y))?;
            data.check_labels(&self.loss)?;
            fingerprint.add(data.x().as_slice().unwrap_or_default());
            fingerprint.add(data.y().as_slice().unwrap_or_default());
            f(&data, start);
            (block.x, block.y) = data.into_parts();
            start = start.saturating_add(rows);
            Ok(())
        })?;
        Ok((start, width.unwrap_or(0), fingerprint))
    }
}

/// Clipped per-example gradient sums of a GLM loss over a [`BlockSource`] (module docs).
///
/// # Privacy
/// Every term is a row's clipped gradient computed by [`GlmObjective`] from that row alone,
/// so each sum has the sensitivity of the in-memory one (the clip, enforced on the integers
/// for the exact sum). [`ClippedSum::n_examples`] is the public `n` given, or else the rows
/// counted in the first pass, then treated as public (as the in-memory learners do without
/// a public count).
pub struct StreamedSum<S: BlockSource> {
    walk: Walk<S>,
    n: usize,
    failure: RefCell<Option<StreamError<S::Error>>>,
}

impl<S: BlockSource> StreamedSum<S> {
    /// The sums of `loss`'s clipped gradients over `source`'s blocks. A first pass counts
    /// the rows, checks the widths and the labels (so a malformed file fails before
    /// anything is released); `public_n` replaces the count as `n` when given.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`Error::EmptyData`] for a
    /// source without rows, [`Error::ShapeMismatch`] for blocks of different widths or
    /// without labels, [`Error::LabelOutOfDomain`] for a label outside the loss's domain,
    /// [`Error::NonFinite`] for a NaN or infinite value, [`Error::InvalidHyperParameter`] for
    /// `public_n = 0` or invalid loss parameters.
    pub fn new(
        source: S,
        loss: Loss,
        public_n: Option<usize>,
    ) -> std::result::Result<Self, StreamError<S::Error>> {
        let walk = Walk::new(source, loss)?;
        let n = public_n.unwrap_or(walk.rows());
        crate::error::ensure(n >= 1, "public_n", n as f64, "must be >= 1")?;
        Ok(Self {
            walk,
            n,
            failure: RefCell::new(None),
        })
    }

    /// The rows counted in the first pass.
    pub fn rows(&self) -> usize {
        self.walk.rows()
    }

    /// The first error a pass met after [`StreamedSum::new`] (module docs), if any.
    ///
    /// # Errors
    /// That error.
    pub fn finish(self) -> std::result::Result<(), StreamError<S::Error>> {
        self.failure.into_inner().map_or(Ok(()), Err)
    }

    /// `fit(&self)` (a solver's run on these sums), then [`StreamedSum::finish`]: a source
    /// error met during the run wins over the run's result, which is discarded.
    ///
    /// # Errors
    /// That error, else `fit`'s.
    pub fn fit_with<T>(
        self,
        fit: impl FnOnce(&Self) -> Result<T>,
    ) -> std::result::Result<T, StreamError<S::Error>> {
        let out = fit(&self);
        self.finish()?;
        Ok(out?)
    }

    /// One pass: `f(block's objective, the batch's indices in the block)` for every block
    /// (`batch = None`: the whole block), keeping the first error (module docs); `false`
    /// when there was one, now or before.
    fn walk_or_keep(
        &self,
        batch: Option<&[usize]>,
        mut f: impl FnMut(&GlmObjective<'_>, Option<&[usize]>),
    ) -> bool {
        if self.failure.borrow().is_some() {
            return false;
        }
        let mut local = Vec::new();
        let loss = self.walk.loss();
        let walked = self.walk.pass(|data, start| {
            // Checked by the walk: the labels are in the loss's domain.
            let Ok(glm) = GlmObjective::new(data, loss, 0.0, Scale::Mean) else {
                return;
            };
            let end = start + data.n_samples();
            let indices = batch.map(|b| {
                local.clear();
                local.extend(b.iter().filter(|&&i| (start..end).contains(&i)));
                local.iter_mut().for_each(|i| *i -= start);
                &local[..]
            });
            f(&glm, indices);
        });
        match walked {
            Ok(()) => true,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

impl<S: BlockSource> ClippedSum for StreamedSum<S> {
    fn n_examples(&self) -> usize {
        self.n
    }

    fn dim(&self) -> usize {
        self.walk.dim()
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
        let mut part = ndarray::Array1::zeros(self.walk.dim());
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    /// The fingerprint in pieces on a rayon pool is the one-sweep fingerprint, bit for bit,
    /// for lengths around the pieces' boundaries, on 1 and 3 threads; changing one value
    /// (here its last bit) changes it.
    #[test]
    fn fingerprint_in_pieces_is_the_one_sweep_fingerprint() {
        let p = FINGERPRINT_PIECE;
        let values: Vec<f64> = (0..3 * p + 7).map(|i| (i as f64 * 0.37).sin()).collect();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for len in [0, 1, 3, 4, 5, p - 1, p, p + 1, p + 6, 2 * p + 3, 3 * p + 7] {
                let (mut one, mut pieces) = (Fingerprint::default(), Fingerprint::default());
                // Two calls: lanes restart at every call, in both.
                one.add_sequential(&values[..2]);
                one.add_sequential(&values[..len]);
                pool.install(|| {
                    pieces.add(&values[..2]);
                    pieces.add(&values[..len]);
                });
                assert_eq!(pieces, one, "{len} values on {threads} threads");
                if len > 0 {
                    let mut changed = values[..len].to_vec();
                    let last = &mut changed[len / 2];
                    *last = f64::from_bits(last.to_bits() ^ 1);
                    let mut other = Fingerprint::default();
                    other.add_sequential(&values[..2]);
                    pool.install(|| other.add(&changed));
                    assert_ne!(other, one, "{len} values, one changed");
                }
            }
        }
    }
}
