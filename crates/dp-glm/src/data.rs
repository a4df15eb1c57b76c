//! Validated datasets.

pub(crate) use dp_optim::numeric::l2_norm;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

use crate::error::{Error, Result};
use crate::loss::Loss;

/// A dataset `{(x_i, y_i)}`: an `n × d` feature matrix and `n` labels, checked on
/// construction (matching shapes, finite values, at least one row and one column), with the
/// row norms `‖x_i‖` computed once.
///
/// Labels are checked against a loss separately ([`Dataset::check_labels`]), since the same
/// data can serve losses with different label sets. The features are stored in row-major
/// (standard) layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    x: Array2<f64>,
    y: Array1<f64>,
    row_norms: Array1<f64>,
}

impl Dataset {
    /// Checks and wraps `x` (`n × d`) and `y` (`n`).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `y.len() != x.nrows()`, [`Error::EmptyData`] if `n = 0` or
    /// `d = 0`, [`Error::NonFinite`] for the first NaN or infinite entry (of `x`, then `y`).
    pub fn new(x: Array2<f64>, y: Array1<f64>) -> Result<Self> {
        if x.nrows() != y.len() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "y",
                right_shape: y.shape().to_vec(),
            });
        }
        if x.nrows() == 0 {
            return Err(Error::EmptyData { what: "no rows" });
        }
        if x.ncols() == 0 {
            return Err(Error::EmptyData { what: "no columns" });
        }
        check_finite("x", x.view())?;
        check_finite_labels(y.view())?;
        let x = if x.is_standard_layout() {
            x
        } else {
            x.as_standard_layout().into_owned()
        };
        let row_norms = x.rows().into_iter().map(l2_norm).collect();
        Ok(Self { x, y, row_norms })
    }

    /// Number of examples `n`.
    pub fn n_samples(&self) -> usize {
        self.x.nrows()
    }

    /// Number of features `d`.
    pub fn n_features(&self) -> usize {
        self.x.ncols()
    }

    /// The features, `n × d`.
    pub fn x(&self) -> ArrayView2<'_, f64> {
        self.x.view()
    }

    /// The labels, length `n`.
    pub fn y(&self) -> ArrayView1<'_, f64> {
        self.y.view()
    }
    /// The rows at `idx` (in that order; indices below `n`, as the parts of a permutation
    /// are), as a new dataset; [`Error::EmptyData`] when `idx` is empty.
    pub(crate) fn select_rows(&self, idx: &[usize]) -> Result<Self> {
        Self::new(
            self.x.select(ndarray::Axis(0), idx),
            self.y.select(ndarray::Axis(0), idx),
        )
    }

    /// `‖x_i‖` for every row (computed once, without overflow or underflow in the squares; a
    /// row whose true norm exceeds `f64::MAX` has norm `+∞`, and a clip at `C` gives it the
    /// ratio `C/∞ = 0`: its clipped gradient is 0, still within the clip).
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

    /// The features and labels, giving up the cached norms.
    pub fn into_parts(self) -> (Array2<f64>, Array1<f64>) {
        (self.x, self.y)
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
