//! The feature rows the estimators take from Python: a dense numpy array (float64, read in
//! place in C or Fortran order, or float32, never widened whole) or the parts of a
//! `scipy.sparse` CSR matrix (`indptr`, `indices`, `data`, `shape`; the Python side converts
//! the other sparse formats, sums duplicates and sorts the columns first), and the decision
//! values of a fitted model on them.

use std::ops::Range;

use dp_data::CsrData;
use dp_glm::sparse::SparseDataset;
use dp_glm::{Error, Features, LinearModel};
use ndarray::{Array1, Array2};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

/// Rows scored at a time when they must be widened (float32) or densified (sparse rows of a
/// model with a feature scaling): 2^14 (12.5 MiB of `f64` at d = 100).
const SCORE_ROWS: usize = 1 << 14;

/// Feature rows from Python.
#[derive(FromPyObject)]
pub(crate) enum Rows<'py> {
    /// A 2-d float64 array.
    F64(PyReadonlyArray2<'py, f64>),
    /// A 2-d float32 array.
    F32(PyReadonlyArray2<'py, f32>),
    /// A CSR matrix (`scipy.sparse.csr_array` or `csr_matrix`).
    Csr(Csr<'py>),
}

/// The parts of a `scipy.sparse` CSR matrix, read from its attributes.
#[derive(FromPyObject)]
pub(crate) struct Csr<'py> {
    /// Row pointers, `n + 1` of them.
    #[pyo3(attribute)]
    indptr: Index<'py>,
    /// The column of each stored entry.
    #[pyo3(attribute)]
    indices: Index<'py>,
    /// The value of each stored entry (float64: the Python side converts).
    #[pyo3(attribute)]
    data: PyReadonlyArray1<'py, f64>,
    /// `(n, d)`.
    #[pyo3(attribute)]
    shape: (usize, usize),
}

/// An integer array of scipy's index types.
#[derive(FromPyObject)]
enum Index<'py> {
    /// int32 (scipy's default).
    I32(PyReadonlyArray1<'py, i32>),
    /// int64 (large matrices).
    I64(PyReadonlyArray1<'py, i64>),
}

impl Index<'_> {
    /// The entries as `usize`; `Err(k)` for the first negative one, at position `k`.
    fn to_usize(&self) -> Result<Vec<usize>, usize> {
        let convert = |(k, v): (usize, i64)| usize::try_from(v).map_err(|_| k);
        match self {
            Index::I32(a) => a
                .as_array()
                .iter()
                .map(|&v| i64::from(v))
                .enumerate()
                .map(convert)
                .collect(),
            Index::I64(a) => a
                .as_array()
                .iter()
                .copied()
                .enumerate()
                .map(convert)
                .collect(),
        }
    }
}

impl Csr<'_> {
    /// The number of rows.
    pub(crate) fn n_rows(&self) -> usize {
        self.shape.0
    }

    /// The rows with labels `y`, unchecked ([`SparseDataset::new`] checks them).
    ///
    /// # Errors
    /// [`Error::MalformedSparse`] for a negative row pointer or column (naming its row).
    pub(crate) fn with_labels(&self, y: Vec<f64>) -> Result<CsrData, Error> {
        let malformed = |row: usize, what: &str| Error::MalformedSparse {
            row,
            reason: format!("{what} is negative"),
        };
        let indptr = self
            .indptr
            .to_usize()
            .map_err(|k| malformed(k.saturating_sub(1), "a row pointer"))?;
        let indices = self.indices.to_usize().map_err(|k| {
            let row = indptr.partition_point(|&p| p <= k).saturating_sub(1);
            malformed(row, "a column index")
        })?;
        Ok(CsrData {
            n_features: self.shape.1,
            indptr,
            indices,
            values: self.data.as_array().to_vec(),
            y,
        })
    }

    /// The rows, checked, with labels 0 (for scoring).
    fn unlabelled(&self) -> Result<SparseDataset, Error> {
        SparseDataset::new(self.with_labels(vec![0.0; self.n_rows()])?)
    }
}

impl Rows<'_> {
    /// The number of columns.
    pub(crate) fn n_features(&self) -> usize {
        match self {
            Rows::F64(a) => a.as_array().ncols(),
            Rows::F32(a) => a.as_array().ncols(),
            Rows::Csr(c) => c.shape.1,
        }
    }

    /// `⟨w, φ(x)⟩ + b` of `model` on each row: float64 rows in place, float32 rows widened
    /// [`SCORE_ROWS`] at a time, sparse rows with sparse dot products
    /// ([`SparseDataset::decision_function`]) — or, for a model with a feature scaling (which
    /// moves zeros), densified [`SCORE_ROWS`] at a time. The same numbers as the rows given
    /// dense in float64.
    ///
    /// # Errors
    /// As [`LinearModel::decision_function`]; malformed or non-finite sparse rows
    /// ([`SparseDataset::new`]).
    pub(crate) fn decision_function(&self, model: &LinearModel) -> Result<Array1<f64>, Error> {
        match self {
            Rows::F64(a) => model.decision_function(a.as_array()),
            Rows::F32(a) => by_blocks(Features::F32(a.as_array()).f64_blocks(SCORE_ROWS), model),
            Rows::Csr(c) => {
                let rows = c.unlabelled()?;
                if model.preprocessing().scaling.is_none() {
                    return rows.decision_function(model);
                }
                let n = rows.n_samples();
                let blocks = (0..n).step_by(SCORE_ROWS).map(|start| {
                    let range = start..(start + SCORE_ROWS).min(n);
                    (range.clone(), dense_rows(rows.csr(), range))
                });
                by_blocks(blocks, model)
            }
        }
    }
}

/// The decision values of `model` on the blocks of rows, concatenated.
fn by_blocks<X: ndarray::Data<Elem = f64>>(
    blocks: impl Iterator<Item = (Range<usize>, ndarray::ArrayBase<X, ndarray::Ix2>)>,
    model: &LinearModel,
) -> Result<Array1<f64>, Error> {
    let mut z = Vec::new();
    for (_, x) in blocks {
        z.extend(model.decision_function(x.view())?);
    }
    Ok(Array1::from(z))
}

/// The rows `rows` of `csr` as a dense matrix.
fn dense_rows(csr: &CsrData, rows: Range<usize>) -> Array2<f64> {
    let mut x = Array2::zeros((rows.len(), csr.n_features));
    for (mut out, i) in x.rows_mut().into_iter().zip(rows) {
        let (cols, vals) = csr.row(i);
        cols.iter().zip(vals).for_each(|(&j, &v)| out[j] = v);
    }
    x
}
