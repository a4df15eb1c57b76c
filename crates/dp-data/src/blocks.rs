//! Row blocks: data read a bounded number of rows at a time, for data larger than memory.
//!
//! A [`RowBlocks`] iterator yields [`RowBlock`]s of `block_rows` rows each (the last one
//! fewer), in file order, features and labels already mapped through the [`TableSpec`](crate::TableSpec)
//! exactly as the whole-file readers map them: the blocks of a file, stacked, equal (bitwise)
//! what [`read_training_data`](crate::read_training_data) returns for it. One iterator is one
//! pass; open another ([`open_blocks`](crate::open_blocks) /
//! [`read_blocks`](crate::read_blocks), or [`LoadedData::blocks`](crate::LoadedData::blocks)
//! for data in memory) for the next pass. [`RowBlocks::read_into`] reads into a block the
//! caller keeps, so that passes after the first allocate nothing per block.
//!
//! Memory: a block of `b` rows holds `b × (d + 1)` values plus the reader's buffers — a text
//! line (CSV, LIBSVM), 64 KiB of file buffer, or a Parquet row group's current pages — never
//! the file.

use std::path::Path;

use ndarray::{Array1, Array2, Axis, Slice};

use crate::error::{Error, Result};
use crate::{LoadedData, ParseErrorKind};

/// Rows read per step by the whole-file readers built on blocks (CSV, Parquet): a footer's
/// claimed row count never sizes an allocation.
pub(crate) const WHOLE_FILE_BLOCK: usize = 1 << 16;

/// At most `block_rows` rows of features (`rows × d`) and their labels (`rows`; empty when the
/// labels are not read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowBlock {
    /// The block's features, one row per sample.
    pub x: Array2<f64>,
    /// The block's labels (mapped as the spec says), or empty.
    pub y: Array1<f64>,
}

/// Rows read so far into one block: row-major features and the labels.
pub(crate) struct BlockBuf {
    /// `rows × d` values.
    pub(crate) x: Vec<f64>,
    /// `rows` labels (or none).
    pub(crate) y: Vec<f64>,
    /// Rows held.
    pub(crate) rows: usize,
}

impl BlockBuf {
    /// An empty block.
    pub(crate) fn new() -> Self {
        Self {
            x: Vec::new(),
            y: Vec::new(),
            rows: 0,
        }
    }
}

/// A format's reader of consecutive rows.
pub(crate) trait BlockReader {
    /// Features per row.
    fn n_features(&self) -> usize;

    /// Appends up to `max_rows` rows to `buf`; fewer only at the end of the data (or, for
    /// Parquet, of a row group). Returns the rows appended (0 at the end).
    fn read_rows(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize>;

    /// Whether [`BlockReader::read_rows`] writes the features of the buffer's row `r` at
    /// `buf.x[r·d..]`, over what `buf.x` may hold there, rather than appending to it: such a
    /// reader is given a kept block's buffer uncleared ([`RowBlocks::read_into`]), so that it
    /// is not zeroed before being written.
    fn overwrites(&self) -> bool {
        false
    }
}

/// An iterator of [`RowBlock`]s (see the module docs): `Some(Err(_))` on the first error,
/// after which it ends.
pub struct RowBlocks<'a> {
    reader: Box<dyn BlockReader + 'a>,
    block_rows: usize,
    feature_names: Option<Vec<String>>,
    done: bool,
}

impl<'a> RowBlocks<'a> {
    /// Blocks of at most `block_rows` rows (at least 1) from `reader`.
    pub(crate) fn new(
        reader: Box<dyn BlockReader + 'a>,
        block_rows: usize,
        feature_names: Option<Vec<String>>,
    ) -> Self {
        Self {
            reader,
            block_rows: block_rows.max(1),
            feature_names,
            done: false,
        }
    }

    /// Features per row.
    pub fn n_features(&self) -> usize {
        self.reader.n_features()
    }

    /// The features' names when the source has them.
    pub fn feature_names(&self) -> Option<&[String]> {
        self.feature_names.as_deref()
    }

    /// The largest number of rows a block holds.
    pub fn block_rows(&self) -> usize {
        self.block_rows
    }

    /// Every remaining block stacked into one [`LoadedData`] (the whole-file readers, and a
    /// test that blocks add up to the whole). Memory is that of the whole data, within
    /// `budget` values.
    pub(crate) fn collect_all(
        mut self,
        budget: usize,
        path: &std::path::Path,
    ) -> Result<LoadedData> {
        let mut all = BlockBuf::new();
        let d = self.n_features();
        loop {
            let n = self.reader.read_rows(self.block_rows, &mut all)?;
            if n == 0 {
                break;
            }
            if all.x.len() + all.y.len() > budget {
                return Err(Error::DataMismatch {
                    path: path.into(),
                    reason: ParseErrorKind::OverMemoryBudget {
                        values: all.x.len() + all.y.len(),
                    }
                    .to_string(),
                });
            }
        }
        if all.rows == 0 {
            return Err(Error::EmptyData { path: path.into() });
        }
        let x = to_matrix(all.x, all.rows, d, path)?;
        Ok(LoadedData {
            x,
            y: Array1::from_vec(all.y),
            feature_names: self.feature_names,
        })
    }
}

/// `rows × d` values, row-major, as a matrix.
pub(crate) fn to_matrix(
    x: Vec<f64>,
    rows: usize,
    d: usize,
    path: &std::path::Path,
) -> Result<Array2<f64>> {
    Array2::from_shape_vec((rows, d), x).map_err(|e| Error::DataMismatch {
        path: path.into(),
        reason: e.to_string(),
    })
}

impl RowBlocks<'_> {
    /// Reads the next block into `block`, reusing its buffers: once they have grown to a
    /// block, a pass allocates nothing per block. Every block but the last holds exactly
    /// [`RowBlocks::block_rows`] rows (a Parquet row group's end does not cut one short).
    /// Returns `false`, `block` emptied, at the end.
    ///
    /// # Errors
    ///
    /// The reader's first error (the block's contents are then unspecified), after which
    /// every call returns `false`.
    pub fn read_into(&mut self, block: &mut RowBlock) -> Result<bool> {
        let d = self.reader.n_features();
        let (mut x, _) = std::mem::take(&mut block.x).into_raw_vec_and_offset();
        let (mut y, _) = std::mem::take(&mut block.y).into_raw_vec_and_offset();
        if !self.reader.overwrites() {
            x.clear();
        }
        y.clear();
        let mut buf = BlockBuf { x, y, rows: 0 };
        while !self.done && buf.rows < self.block_rows {
            match self.reader.read_rows(self.block_rows - buf.rows, &mut buf) {
                Ok(0) => self.done = true,
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        // What a kept buffer held beyond the rows read.
        buf.x.truncate(buf.rows * d);
        block.x = to_matrix(buf.x, buf.rows, d, Path::new("row block"))?;
        block.y = Array1::from_vec(buf.y);
        Ok(buf.rows > 0)
    }
}

impl Iterator for RowBlocks<'_> {
    type Item = Result<RowBlock>;

    /// A new block ([`RowBlocks::read_into`] a fresh one).
    fn next(&mut self) -> Option<Self::Item> {
        let mut block = RowBlock::default();
        self.read_into(&mut block)
            .map(|more| more.then_some(block))
            .transpose()
    }
}

/// Data in memory as a block source: consecutive rows copied out a block at a time.
struct InMemory<'a> {
    data: &'a LoadedData,
    next: usize,
}

impl BlockReader for InMemory<'_> {
    fn n_features(&self) -> usize {
        self.data.n_features()
    }

    fn read_rows(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize> {
        let end = self
            .data
            .n_samples()
            .min(self.next.saturating_add(max_rows));
        let rows = end - self.next;
        let x = self.data.x.slice_axis(Axis(0), Slice::from(self.next..end));
        buf.x.extend(x.rows().into_iter().flatten());
        if self.data.y.len() == self.data.n_samples() {
            buf.y
                .extend(self.data.y.slice_axis(Axis(0), Slice::from(self.next..end)));
        }
        buf.rows += rows;
        self.next = end;
        Ok(rows)
    }
}

impl LoadedData {
    /// This data as [`RowBlocks`] of at most `block_rows` rows (copied out one block at a
    /// time): the in-memory source of the same interface files are streamed through.
    pub fn blocks(&self, block_rows: usize) -> RowBlocks<'_> {
        RowBlocks::new(
            Box::new(InMemory {
                data: self,
                next: 0,
            }),
            block_rows,
            self.feature_names.clone(),
        )
    }

    /// Blocks stacked back into one dataset (rows in order; `y` empty when any block's is).
    ///
    /// # Errors
    ///
    /// The first block's error; [`Error::EmptyData`] (named `path`) when there are no rows.
    pub fn from_blocks(blocks: RowBlocks<'_>, path: impl AsRef<std::path::Path>) -> Result<Self> {
        blocks.collect_all(usize::MAX, path.as_ref())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn in_memory_blocks_cover_the_rows_in_order() {
        let data = LoadedData {
            x: Array2::from_shape_fn((7, 3), |(i, j)| (10 * i + j) as f64),
            y: Array1::from_shape_fn(7, |i| i as f64),
            feature_names: None,
        };
        let blocks: Vec<RowBlock> = data.blocks(3).map(|b| b.unwrap()).collect();
        assert_eq!(
            blocks.iter().map(|b| b.x.nrows()).collect::<Vec<_>>(),
            [3, 3, 1]
        );
        assert_eq!(blocks[1].x.row(0).to_vec(), [30.0, 31.0, 32.0]);
        assert_eq!(blocks[2].y.to_vec(), [6.0]);
        let again = LoadedData::from_blocks(data.blocks(2), "m").unwrap();
        assert_eq!(again, data);
        let stacked = ndarray::concatenate(
            Axis(0),
            &blocks.iter().map(|b| b.x.view()).collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(stacked, data.x);
    }
}
