//! Validated datasets, with the features stored as `f64` or `f32`.
//!
//! # Storage
//! A [`Dataset`] stores its features as `f64` ([`Storage::F64`], the default) or as `f32`
//! ([`Storage::F32`]: half the memory, for data whose precision `f32` holds). Labels and the
//! cached row norms are `f64` either way, and every kernel ([`crate::GlmObjective`]: margins,
//! losses, gradients, clipped and exact sums) widens each stored value to `f64` exactly
//! (`f64::from`) and accumulates in `f64`: one copy of each kernel, generic over the element.
//! `f64` values are narrowed to `f32` toward zero ([`DatasetBuilder`]), so that no entry's
//! magnitude — and hence no row's norm — grows; a value beyond `f32`'s range is an error, not
//! a silent `±∞` or `f32::MAX`.
//!
//! # Privacy
//! Rounding each value to `f32` is a fixed, public, per-row transformation applied before
//! anything else looks at the row: a mechanism run on the `f32` rows is the same mechanism run
//! on the transformed dataset, and two neighbouring datasets stay neighbouring after it (each
//! row is mapped alone), so every guarantee — and every sensitivity, which bounds each row's
//! clipped contribution — holds unchanged. Clipping and every norm bound are checked on the
//! values actually used: the row norms are computed from the stored values widened to `f64`,
//! and the kernels clip with those norms.

use dp_optim::Widen;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, CowArray, Ix1, Ix2};

pub(crate) use dp_optim::numeric::l2_norm;

use crate::error::{Error, Result};
use crate::loss::Loss;

/// How a [`Dataset`] stores its features (module docs, § Storage). A public choice of the
/// operator (it depends on no data), recorded with the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// `f64` (8 bytes per value).
    #[default]
    F64,
    /// `f32` (4 bytes per value), widened to `f64` exactly in every computation.
    F32,
}

impl Storage {
    /// `"f64"` or `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F64 => "f64",
            Self::F32 => "f32",
        }
    }

    /// Bytes per stored value.
    pub fn bytes(self) -> usize {
        match self {
            Self::F64 => 8,
            Self::F32 => 4,
        }
    }
}

/// A stored feature value: `f64` or `f32`, widened exactly to `f64` by the kernels (which
/// read both through [`dp_optim::Widen`]: the same vector code for either).
pub(crate) trait Element: Widen {
    /// `row` as `f64`: borrowed for `f64`, widened into a new vector for `f32`.
    fn widen(row: ArrayView1<'_, Self>) -> CowArray<'_, f64, Ix1>;
}

impl Element for f64 {
    fn widen(row: ArrayView1<'_, f64>) -> CowArray<'_, f64, Ix1> {
        CowArray::from(row)
    }
}

impl Element for f32 {
    fn widen(row: ArrayView1<'_, f32>) -> CowArray<'_, f64, Ix1> {
        CowArray::from(row.mapv(f64::from))
    }
}

/// A dataset's features as stored (`n × d`, row-major).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Features<'a> {
    /// `f64` storage.
    F64(ArrayView2<'a, f64>),
    /// `f32` storage.
    F32(ArrayView2<'a, f32>),
}

/// The owned feature matrix (standard layout).
#[derive(Debug, Clone, PartialEq)]
enum Matrix {
    F64(Array2<f64>),
    F32(Array2<f32>),
}

impl Matrix {
    fn view(&self) -> Features<'_> {
        match self {
            Self::F64(x) => Features::F64(x.view()),
            Self::F32(x) => Features::F32(x.view()),
        }
    }
}

impl<'a> Features<'a> {
    /// `(n, d)`.
    pub fn dim(&self) -> (usize, usize) {
        match self {
            Self::F64(x) => x.dim(),
            Self::F32(x) => x.dim(),
        }
    }

    /// How the features are stored.
    pub fn storage(&self) -> Storage {
        match self {
            Self::F64(_) => Storage::F64,
            Self::F32(_) => Storage::F32,
        }
    }

    /// The features as `f64`: a view of `f64` storage, or `f32` storage widened (exactly) into
    /// a new `n × d` array.
    pub fn to_f64(self) -> CowArray<'a, f64, Ix2> {
        match self {
            Self::F64(x) => CowArray::from(x),
            Self::F32(x) => CowArray::from(x.mapv(f64::from)),
        }
    }

    /// The rows `rows` (a range within `0..n`).
    ///
    /// # Panics
    /// If the range is out of bounds.
    pub fn slice_rows(self, rows: std::ops::Range<usize>) -> Features<'a> {
        let s = ndarray::Slice::from(rows);
        match self {
            Self::F64(x) => Self::F64(x.slice_axis_move(ndarray::Axis(0), s)),
            Self::F32(x) => Self::F32(x.slice_axis_move(ndarray::Axis(0), s)),
        }
    }

    /// The rows in consecutive blocks of at most `rows` rows (at least 1), each with its range
    /// and as `f64` (`f32` storage widened one block at a time: never an `8·n·d`-byte copy).
    pub fn f64_blocks(
        self,
        rows: usize,
    ) -> impl Iterator<Item = (std::ops::Range<usize>, CowArray<'a, f64, Ix2>)> {
        let n = self.dim().0;
        (0..n).step_by(rows.max(1)).map(move |start| {
            let range = start..start.saturating_add(rows.max(1)).min(n);
            (range.clone(), self.slice_rows(range).to_f64())
        })
    }
}

/// Rows widened to `f64` at a time by the learners that read `f32` storage through
/// [`Features::f64_blocks`] (12.5 MiB of `f64` at d = 100).
pub(crate) const WIDEN_ROWS: usize = 1 << 14;

/// `f64` → `f32` rounding toward zero (`|result| ≤ |v|`), for `|v| ≤ f32::MAX`.
pub(crate) fn narrow(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f).abs() <= v.abs() {
        f
    } else if f > 0.0 {
        f.next_down()
    } else {
        f.next_up()
    }
}

/// `‖x_i‖` of each row, computed on the values widened to `f64`.
fn norms_of(x: Features<'_>) -> Array1<f64> {
    match x {
        Features::F64(x) => x.rows().into_iter().map(l2_norm).collect(),
        Features::F32(x) => {
            let mut row = Array1::zeros(x.ncols());
            x.rows()
                .into_iter()
                .map(|r| {
                    row.iter_mut().zip(r).for_each(|(o, &v)| *o = f64::from(v));
                    l2_norm(row.view())
                })
                .collect()
        }
    }
}

/// A dataset `{(x_i, y_i)}`: an `n × d` feature matrix and `n` labels, checked on
/// construction (matching shapes, finite values, at least one row and one column), with the
/// row norms `‖x_i‖` computed once.
///
/// Labels are checked against a loss separately ([`Dataset::check_labels`]), since the same
/// data can serve losses with different label sets. The features are stored in row-major
/// (standard) layout, as `f64` ([`Dataset::new`]) or `f32` ([`Dataset::new_f32`],
/// [`DatasetBuilder`]; module docs, § Storage).
///
/// # Privacy
/// `f32` storage is a fixed public per-row transformation of the data (module docs,
/// § Privacy): the guarantees of every mechanism run on the dataset are unchanged, and its
/// clipping uses the norms of the stored values.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    x: Matrix,
    y: Array1<f64>,
    row_norms: Array1<f64>,
}

/// Checks that an `n × d` matrix and `y` agree and are not empty.
fn check_shape((n, d): (usize, usize), y: ArrayView1<'_, f64>) -> Result<()> {
    if n != y.len() {
        return Err(Error::ShapeMismatch {
            left: "x",
            left_shape: vec![n, d],
            right: "y",
            right_shape: y.shape().to_vec(),
        });
    }
    if n == 0 {
        return Err(Error::EmptyData { what: "no rows" });
    }
    if d == 0 {
        return Err(Error::EmptyData { what: "no columns" });
    }
    Ok(())
}

impl Dataset {
    /// Checks and wraps `x` (`n × d`) and `y` (`n`), stored as `f64`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `y.len() != x.nrows()`, [`Error::EmptyData`] if `n = 0` or
    /// `d = 0`, [`Error::NonFinite`] for the first NaN or infinite entry (of `x`, then `y`).
    pub fn new(x: Array2<f64>, y: Array1<f64>) -> Result<Self> {
        check_shape(x.dim(), y.view())?;
        check_finite("x", x.view())?;
        check_finite_labels(y.view())?;
        let x = if x.is_standard_layout() {
            x
        } else {
            x.as_standard_layout().into_owned()
        };
        Ok(Self::checked(Matrix::F64(x), y))
    }

    /// Checks and wraps `x` (`n × d`, `f32`) and `y` (`n`), stored as `f32` (module docs,
    /// § Storage).
    ///
    /// # Errors
    /// As [`Dataset::new`].
    pub fn new_f32(x: Array2<f32>, y: Array1<f64>) -> Result<Self> {
        check_shape(x.dim(), y.view())?;
        if let Some(((row, col), &v)) = x.indexed_iter().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite {
                array: "x",
                row,
                col,
                value: f64::from(v),
            });
        }
        check_finite_labels(y.view())?;
        let x = if x.is_standard_layout() {
            x
        } else {
            x.as_standard_layout().into_owned()
        };
        Ok(Self::checked(Matrix::F32(x), y))
    }

    /// `x` (`f64`) and `y` stored as `storage`: [`Dataset::new`] for `f64`; for `f32`, each
    /// value narrowed toward zero (module docs, § Storage).
    ///
    /// # Errors
    /// As [`Dataset::new`]; [`Error::OutOfStorageRange`] for a value beyond `±f32::MAX` with
    /// `f32` storage.
    pub fn with_storage(x: Array2<f64>, y: Array1<f64>, storage: Storage) -> Result<Self> {
        match storage {
            Storage::F64 => Self::new(x, y),
            Storage::F32 => {
                check_shape(x.dim(), y.view())?;
                let mut b = DatasetBuilder::new(x.ncols(), storage);
                b.push(x.view(), y.view())?;
                b.finish()
            }
        }
    }

    /// Wraps checked parts, computing the row norms.
    fn checked(x: Matrix, y: Array1<f64>) -> Self {
        let row_norms = norms_of(x.view());
        Self { x, y, row_norms }
    }

    /// Asks the kernel for huge pages under the features ([`crate::pages`]): random rows,
    /// as DP-SGD reads them, then cost no page-table walk. Changes no value; a kernel that
    /// refuses leaves the memory as it was.
    pub(crate) fn prefer_huge_pages(&self) {
        match &self.x {
            Matrix::F64(x) => crate::pages::prefer_huge_pages(x.as_slice().unwrap_or_default()),
            Matrix::F32(x) => crate::pages::prefer_huge_pages(x.as_slice().unwrap_or_default()),
        };
    }

    /// Number of examples `n`.
    pub fn n_samples(&self) -> usize {
        self.y.len()
    }

    /// Number of features `d`.
    pub fn n_features(&self) -> usize {
        self.features().dim().1
    }

    /// How the features are stored.
    pub fn storage(&self) -> Storage {
        self.features().storage()
    }

    /// The features as stored, `n × d`.
    pub fn features(&self) -> Features<'_> {
        self.x.view()
    }

    /// The features as `f64`, `n × d`: a view for `f64` storage; for `f32` storage, a widened
    /// copy (`8·n·d` bytes). The full-batch learners (DP-GD, noisy GD, ObjPert, AMP, output
    /// perturbation, SSP) and DP-SGD read the stored rows through [`crate::GlmObjective`] or
    /// [`Features::f64_blocks`] and never make it; DP-SSGD, DP-AMB-SSGD, JL noisy GD and
    /// ObjPert's projection of rows beyond its bound do (their memory is that of `f64`).
    pub fn x(&self) -> CowArray<'_, f64, Ix2> {
        self.features().to_f64()
    }

    /// The labels, length `n`.
    pub fn y(&self) -> ArrayView1<'_, f64> {
        self.y.view()
    }

    /// The rows at `idx` (in that order; indices below `n`, as the parts of a permutation
    /// are), as a new dataset with the same storage; [`Error::EmptyData`] when `idx` is empty.
    pub(crate) fn select_rows(&self, idx: &[usize]) -> Result<Self> {
        let y = self.y.select(ndarray::Axis(0), idx);
        match &self.x {
            Matrix::F64(x) => Self::new(x.select(ndarray::Axis(0), idx), y),
            Matrix::F32(x) => Self::new_f32(x.select(ndarray::Axis(0), idx), y),
        }
    }

    /// `‖x_i‖` for every row, of the stored values widened to `f64` (computed once, without
    /// overflow or underflow in the squares; a row whose true norm exceeds `f64::MAX` has norm
    /// `+∞`, and a clip at `C` gives it the ratio `C/∞ = 0`: its clipped gradient is 0, still
    /// within the clip).
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

    /// The features (as `f64`: `f32` storage widened) and labels, giving up the cached norms.
    pub fn into_parts(self) -> (Array2<f64>, Array1<f64>) {
        match self.x {
            Matrix::F64(x) => (x, self.y),
            Matrix::F32(x) => (x.mapv(f64::from), self.y),
        }
    }
}

/// A [`Dataset`] built from `f64` rows appended block by block, stored as the [`Storage`]
/// asked for: with `f32` storage each value is narrowed toward zero as it arrives (module
/// docs, § Storage), so the `f64` rows are never held whole — memory is that of the stored
/// dataset plus the caller's block.
#[derive(Debug)]
pub struct DatasetBuilder {
    d: usize,
    x: Buffer,
    y: Vec<f64>,
    norms: Vec<f64>,
    /// One row widened back from the stored values, for its norm.
    row: Array1<f64>,
}

/// The stored values so far.
#[derive(Debug)]
enum Buffer {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl DatasetBuilder {
    /// An empty dataset of `d` features stored as `storage`.
    pub fn new(d: usize, storage: Storage) -> Self {
        Self {
            d,
            x: match storage {
                Storage::F64 => Buffer::F64(Vec::new()),
                Storage::F32 => Buffer::F32(Vec::new()),
            },
            y: Vec::new(),
            norms: Vec::new(),
            row: Array1::zeros(d),
        }
    }

    /// Rows appended so far.
    pub fn n_samples(&self) -> usize {
        self.y.len()
    }

    /// Appends the rows `x` (`rows × d`) and their labels `y`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for a block of another width or as many labels as rows;
    /// [`Error::NonFinite`] for a NaN or infinite value (of `x`, then `y`) and
    /// [`Error::OutOfStorageRange`] for a value beyond `±f32::MAX` with `f32` storage, naming
    /// its row in the whole dataset. Nothing of a failed block is kept.
    pub fn push(&mut self, x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> Result<()> {
        if x.ncols() != self.d {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "the dataset's rows",
                right_shape: vec![x.nrows(), self.d],
            });
        }
        if x.nrows() != y.len() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "y",
                right_shape: y.shape().to_vec(),
            });
        }
        let first = self.n_samples();
        let f32_range = matches!(self.x, Buffer::F32(_));
        for ((i, col), &value) in x.indexed_iter() {
            let row = first + i;
            if !value.is_finite() {
                return Err(Error::NonFinite {
                    array: "x",
                    row,
                    col,
                    value,
                });
            }
            if f32_range && value.abs() > f64::from(f32::MAX) {
                return Err(Error::OutOfStorageRange {
                    row,
                    col,
                    value,
                    storage: Storage::F32.name(),
                });
            }
        }
        if let Some((i, &value)) = y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite {
                array: "y",
                row: first + i,
                col: 0,
                value,
            });
        }
        for r in x.rows() {
            match &mut self.x {
                Buffer::F64(v) => {
                    v.extend(r.iter());
                    self.norms.push(l2_norm(r));
                }
                Buffer::F32(v) => {
                    for (o, &a) in self.row.iter_mut().zip(r) {
                        let s = narrow(a);
                        v.push(s);
                        *o = f64::from(s);
                    }
                    self.norms.push(l2_norm(self.row.view()));
                }
            }
        }
        self.y.extend(y.iter());
        Ok(())
    }

    /// The dataset.
    ///
    /// # Errors
    /// [`Error::EmptyData`] for no rows or no columns.
    pub fn finish(self) -> Result<Dataset> {
        let shape = (self.y.len(), self.d);
        let y = Array1::from(self.y);
        check_shape(shape, y.view())?;
        let mismatch = |len: usize| Error::ShapeMismatch {
            left: "stored values",
            left_shape: vec![len],
            right: "rows × features",
            right_shape: vec![shape.0, shape.1],
        };
        let x = match self.x {
            Buffer::F64(mut v) => {
                v.shrink_to_fit();
                let len = v.len();
                Matrix::F64(Array2::from_shape_vec(shape, v).map_err(|_| mismatch(len))?)
            }
            Buffer::F32(mut v) => {
                v.shrink_to_fit();
                let len = v.len();
                Matrix::F32(Array2::from_shape_vec(shape, v).map_err(|_| mismatch(len))?)
            }
        };
        Ok(Dataset {
            x,
            y,
            row_norms: Array1::from(self.norms),
        })
    }
}

/// `max_i norms_i` (0 for none).
pub(crate) fn max_norm(norms: ArrayView1<'_, f64>) -> f64 {
    norms.iter().fold(0.0, |m, &v| m.max(v))
}

/// Checks that every label `y_i` is in `loss`'s label domain.
///
/// # Errors
/// [`Error::LabelOutOfDomain`] naming the first offending row.
pub(crate) fn check_labels(y: ArrayView1<'_, f64>, loss: &Loss) -> Result<()> {
    let domain = loss.label_domain();
    match y.iter().position(|&v| !domain.contains(v)) {
        None => Ok(()),
        Some(row) => Err(Error::LabelOutOfDomain {
            row,
            value: y[row],
            loss: loss.name(),
            expected: domain.describe(),
        }),
    }
}

/// Returns [`Error::NonFinite`] for the first non-finite label.
pub(crate) fn check_finite_labels(y: ArrayView1<'_, f64>) -> Result<()> {
    match y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        Some((row, &value)) => Err(Error::NonFinite {
            array: "y",
            row,
            col: 0,
            value,
        }),
        None => Ok(()),
    }
}

/// Returns [`Error::NonFinite`] for the first non-finite entry of `a`.
pub(crate) fn check_finite(array: &'static str, a: ArrayView2<'_, f64>) -> Result<()> {
    // The common case in one vectorised sweep; the position only when something is wrong.
    if a.as_slice()
        .is_some_and(|v| v.iter().fold(true, |ok, v| ok & v.is_finite()))
    {
        return Ok(());
    }
    for ((row, col), &value) in a.indexed_iter() {
        if !value.is_finite() {
            return Err(Error::NonFinite {
                array,
                row,
                col,
                value,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array, ShapeBuilder, array};

    #[test]
    fn validates_input() {
        let e = Dataset::new(Array2::zeros((3, 2)), Array1::zeros(4)).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }));
        let e = Dataset::new(Array2::zeros((0, 2)), Array1::zeros(0)).unwrap_err();
        assert!(matches!(e, Error::EmptyData { .. }));
        let e = Dataset::new(Array2::zeros((2, 0)), Array1::zeros(2)).unwrap_err();
        assert!(matches!(e, Error::EmptyData { .. }));
        let e = Dataset::new(array![[0.0, 1.0], [f64::NAN, 0.0]], array![1.0, 1.0]).unwrap_err();
        assert!(matches!(
            e,
            Error::NonFinite {
                array: "x",
                row: 1,
                col: 0,
                ..
            }
        ));
        let e = Dataset::new(array![[0.0], [1.0]], array![1.0, f64::INFINITY]).unwrap_err();
        assert!(matches!(
            e,
            Error::NonFinite {
                array: "y",
                row: 1,
                ..
            }
        ));
    }

    #[test]
    fn labels_and_norms() {
        let d = Dataset::new(array![[3.0, 4.0], [0.0, 0.0]], array![1.0, 0.0]).unwrap();
        assert_eq!(d.row_norms(), array![5.0, 0.0]);
        assert_eq!(d.max_row_norm(), 5.0);
        assert!(d.check_labels(&Loss::Squared).is_ok());
        let e = d.check_labels(&Loss::Logistic).unwrap_err();
        assert!(matches!(
            e,
            Error::LabelOutOfDomain {
                row: 1,
                value: 0.0,
                ..
            }
        ));
    }

    #[test]
    fn column_major_input_is_stored_row_major() {
        let x = Array::from_shape_vec((2, 3).f(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap();
        let d = Dataset::new(x, array![1.0, -1.0]).unwrap();
        assert!(d.x().is_standard_layout());
        assert_eq!(d.x(), array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    }

    #[test]
    fn norms_do_not_overflow_or_underflow() {
        let big = array![1e200, 1e200];
        assert!((l2_norm(big.view()) / (2f64.sqrt() * 1e200) - 1.0).abs() < 1e-15);
        let tiny = array![3e-200, 4e-200];
        assert!((l2_norm(tiny.view()) / 5e-200 - 1.0).abs() < 1e-15);
        assert_eq!(l2_norm(array![0.0, 0.0].view()), 0.0);
        assert_eq!(l2_norm(array![f64::MAX, f64::MAX].view()), f64::INFINITY);
    }
}
