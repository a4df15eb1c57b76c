//! The fitted preprocessing a [`LinearModel`](crate::LinearModel) carries and applies to raw
//! feature rows before its linear map, and the public description of its input.
//!
//! Training applies, in order: a per-feature scaling ([`FittedScaling`]), unit-norm rows, an
//! appended bias feature, and the projection of rows onto the ball of radius `X` that a
//! learner makes when its guarantee needs bounded rows. [`Preprocessing`] stores each step's
//! parameters, so that data scored later goes through exactly the steps the model was trained
//! on (a model fitted on scaled rows and scored on raw ones gives wrong answers silently).
//!
//! # Privacy
//! Every step is a public function applied to each row alone. Its parameters are public
//! values, or private estimates recorded in the model's ledger (the scaling's estimated
//! ranges, an estimated `X`; see [`crate::scaling`] and [`crate::bounds`]); no step holds a
//! statistic of the training data computed without noise. Applying the pipeline to new rows
//! is post-processing of the release: no privacy cost.

use std::borrow::Cow;

use ndarray::{Array2, ArrayView2, CowArray};
use rayon::prelude::*;

use crate::error::{Error, Result, ensure};
use crate::preprocess::BallProjector;
use crate::scaling::FittedScaling;

/// The fitted steps a model applies to a raw row, in this order: [`Self::scaling`],
/// [`Self::unit_norm`], [`Self::bias`], [`Self::row_bound`]. The default applies none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Preprocessing {
    /// Per-feature scaling, applied first.
    pub scaling: Option<FittedScaling>,
    /// Scale every row to unit L2 norm (all-zero rows stay zero).
    pub unit_norm: bool,
    /// The value (finite, non-zero) of a constant feature appended as the last column.
    pub bias: Option<f64>,
    /// Rows longer than this (finite, `> 0`) are scaled to this norm, after the bias: the
    /// projection a learner whose guarantee needs `‖x‖ ≤ X` applies to its training rows.
    pub row_bound: Option<f64>,
}

impl Preprocessing {
    /// Columns the steps add (1 with a bias).
    pub fn extra_columns(&self) -> usize {
        usize::from(self.bias.is_some())
    }

    /// Checks the steps' parameters for a model with `n_features_in` raw features.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `bias` (non-finite or 0), `row_bound`
    /// (non-finite or `≤ 0`) or `scaling` (an invalid feature); [`Error::ShapeMismatch`] when
    /// the scaling does not have one entry per raw feature.
    pub fn validate(&self, n_features_in: usize) -> Result<()> {
        if let Some(b) = self.bias {
            ensure(
                b.is_finite() && b != 0.0,
                "bias",
                b,
                "must be finite and non-zero",
            )?;
        }
        if let Some(r) = self.row_bound {
            ensure(
                r.is_finite() && r > 0.0,
                "row_bound",
                r,
                "must be finite and > 0",
            )?;
        }
        if let Some(s) = &self.scaling {
            s.validate()?;
            if s.features.len() != n_features_in {
                return Err(Error::ShapeMismatch {
                    left: "scaling",
                    left_shape: vec![s.features.len()],
                    right: "raw features",
                    right_shape: vec![n_features_in],
                });
            }
        }
        Ok(())
    }

    /// The preprocessed rows (one more column with a bias).
    ///
    /// Unit-norm rows are computed scaled by the row's largest magnitude `m`, `x/m / ‖x/m‖`,
    /// so that neither `‖x‖²` overflowing (entries near `1e154` and above would give a zero
    /// row) nor underflowing (entries near `1e-162` would give a norm far from 1) changes the
    /// result; all-zero rows stay zero.
    ///
    /// # Errors
    /// As [`Preprocessing::validate`] with `n_features_in = x.ncols()`; a non-finite entry
    /// when rows are projected ([`Error::NonFinite`]).
    pub fn apply(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((0, 0));
        self.apply_into(x, &mut out)?;
        Ok(out)
    }

    /// [`Preprocessing::apply`] into `out` (resized; its allocation reused when large
    /// enough, as for the blocks of a streamed pass).
    ///
    /// # Errors
    /// As [`Preprocessing::apply`].
    pub fn apply_into(&self, x: ArrayView2<'_, f64>, out: &mut Array2<f64>) -> Result<()> {
        self.validate(x.ncols())?;
        let scaled = match &self.scaling {
            Some(s) => CowArray::from(s.transform(x)?),
            None => CowArray::from(x),
        };
        let (n, d) = scaled.dim();
        let width = d + self.extra_columns();
        let flat = match scaled.as_slice() {
            Some(v) => Cow::Borrowed(v),
            None => Cow::Owned(scaled.iter().copied().collect()),
        };
        let (mut values, _) = std::mem::take(out).into_raw_vec_and_offset();
        // Not cleared: a buffer kept from a block of the same size is overwritten, not
        // zeroed first.
        values.resize(n * width, 0.0);
        // Pieces of `PIECE` rows on the current rayon pool, each row computed alone: the
        // same operations whatever the pieces and the threads.
        values
            .par_chunks_mut(PIECE * width.max(1))
            .zip(flat.par_chunks(PIECE * d.max(1)))
            .for_each(|(out, rows)| self.rows_into(rows, d, out));
        if let (0, Some(bias)) = (d, self.bias) {
            // No features (and no pieces of them): the bias column alone.
            values.fill(bias);
        }
        let rows =
            Array2::from_shape_vec((n, width), values).map_err(|_| Error::ShapeMismatch {
                left: "preprocessed rows",
                left_shape: vec![n, width],
                right: "raw rows",
                right_shape: vec![n, d],
            })?;
        *out = match self.row_bound {
            Some(r) => BallProjector::new(r)?.transform(rows.view())?,
            None => rows,
        };
        Ok(())
    }

    /// The unit norm (when asked for) and the bias of `x`'s rows (`d > 0` values each) into
    /// `out` (`d` or `d + 1` values each).
    ///
    /// Four rows at a time: `q = x/m` written out, its norm summed from what was written,
    /// then `q/‖q‖` in place — the operations of `x/m/‖x/m‖` one row at a time, in the same
    /// order, with the rows' chains interleaved.
    fn rows_into(&self, x: &[f64], d: usize, out: &mut [f64]) {
        let width = d + self.extra_columns();
        for (group, out) in x.chunks(LANES * d).zip(out.chunks_mut(LANES * width)) {
            let rows = group.len() / d;
            let m = if self.unit_norm {
                fold_rows(group, rows, d, d, |m, v| m.max(v.abs()))
            } else {
                [0.0; LANES]
            };
            let written = out.chunks_exact_mut(width);
            for ((row, out), &m) in group.chunks_exact(d).zip(written).zip(&m) {
                let (q, bias) = out.split_at_mut(d);
                if m > 0.0 {
                    q.iter_mut().zip(row).for_each(|(q, v)| *q = v / m);
                } else {
                    q.copy_from_slice(row);
                }
                if let (Some(b), [slot]) = (self.bias, bias) {
                    *slot = b;
                }
            }
            if self.unit_norm {
                let sums = fold_rows(out, rows, d, width, |s, q| s + q * q);
                let written = out.chunks_exact_mut(width);
                for ((row, &m), sum) in written.zip(&m).zip(sums) {
                    if m > 0.0 {
                        let norm = sum.sqrt();
                        row[..d].iter_mut().for_each(|q| *q /= norm);
                    }
                }
            }
        }
    }
}

/// Rows [`Preprocessing::apply_into`] preprocesses in one rayon task.
const PIECE: usize = 1024;

/// Rows [`Preprocessing::apply_into`] normalises at once.
const LANES: usize = 4;

/// `fold` over each of the first `rows` (at most [`LANES`]) rows of `group` — `d` values
/// each, `stride` apart — from 0, in column order; four rows' chains interleaved when there
/// are four (the same operations per row as one row at a time).
fn fold_rows(
    group: &[f64],
    rows: usize,
    d: usize,
    stride: usize,
    fold: impl Fn(f64, f64) -> f64,
) -> [f64; LANES] {
    let mut acc = [0.0_f64; LANES];
    let row = |k: usize| &group[k * stride..k * stride + d];
    if rows == LANES {
        for (((a, b), c), e) in row(0).iter().zip(row(1)).zip(row(2)).zip(row(3)) {
            acc = [
                fold(acc[0], *a),
                fold(acc[1], *b),
                fold(acc[2], *c),
                fold(acc[3], *e),
            ];
        }
    } else {
        for (k, acc) in acc.iter_mut().enumerate().take(rows) {
            *acc = row(k).iter().fold(0.0, |s, &v| fold(s, v));
        }
    }
    acc
}

/// A scaling of two features (the first clipped to [−4, 8], centred at 2, scale 2, estimated;
/// the second public and unchanged), for tests.
#[cfg(test)]
pub(crate) fn example_scaling() -> FittedScaling {
    use crate::scaling::{FeatureScale, ScalingMethod};
    FittedScaling {
        method: ScalingMethod::Standard,
        features: vec![
            FeatureScale {
                low: Some(-4.0),
                high: Some(8.0),
                center: 2.0,
                scale: 2.0,
                estimated: Some(0.025),
            },
            FeatureScale {
                low: None,
                high: None,
                center: 0.0,
                scale: 1.0,
                estimated: None,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use ndarray::array;

    #[test]
    fn unit_norm_rows_survive_extreme_magnitudes() {
        let prep = Preprocessing {
            unit_norm: true,
            bias: Some(2.0),
            ..Preprocessing::default()
        };
        let x = array![
            [1.7e308, 1.7e308, 1.7e308],
            [2.72e-162, 0.0, 0.0],
            [3.0, -4.0, 0.0],
            [0.0, 0.0, 0.0]
        ];
        let out = prep.apply(x.view()).unwrap();
        let third = 1.0 / 3.0_f64.sqrt();
        let expected = array![
            [third, third, third, 2.0],
            [1.0, 0.0, 0.0, 2.0],
            [0.6, -0.8, 0.0, 2.0],
            [0.0, 0.0, 0.0, 2.0]
        ];
        for (a, b) in out.iter().zip(&expected) {
            assert!((a - b).abs() <= 1e-15, "{out} vs {expected}");
        }
    }

    /// The scaling comes first (clipped, centred, scaled), the bias next, the projection last.
    /// Rows taken four at a time give, bit for bit, what one row at a time gives
    /// (`x/m/‖x/m‖`, the norm summed in column order), for 0 to 9 rows (groups of four and
    /// tails), a zero row, and magnitudes from 1e-300 to 1e300; into a reused buffer too.
    #[test]
    fn unit_norm_rows_in_groups_equal_one_row_at_a_time() {
        let prep = Preprocessing {
            unit_norm: true,
            bias: Some(-0.5),
            ..Preprocessing::default()
        };
        let all = Array2::from_shape_fn((9, 7), |(i, j)| {
            let v = ((i * 7 + j) as f64 * 0.37).sin() * 10f64.powi((i as i32 - 4) * 75);
            if i == 5 { 0.0 } else { v }
        });
        let mut kept = Array2::zeros((0, 0));
        for n in 0..=9 {
            let x = all.slice_axis(ndarray::Axis(0), ndarray::Slice::from(..n));
            let mut expected = Array2::zeros((n, 8));
            for (i, row) in x.rows().into_iter().enumerate() {
                let m = row.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
                let norm = row.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt();
                let (pre, post) = if m > 0.0 { (m, norm) } else { (1.0, 1.0) };
                for (j, v) in row.iter().enumerate() {
                    expected[[i, j]] = v / pre / post;
                }
                expected[[i, 7]] = -0.5;
            }
            let bits = |a: &Array2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&prep.apply(x).unwrap()), bits(&expected), "{n} rows");
            prep.apply_into(x, &mut kept).unwrap();
            assert_eq!(bits(&kept), bits(&expected), "{n} rows, reused buffer");
            assert_eq!(kept.dim(), (n, 8));
        }
    }

    /// Rows preprocessed in pieces on a rayon pool are, bit for bit, the rows preprocessed
    /// one at a time, on 1 and 3 threads, around the pieces' boundaries; a kept buffer of
    /// another size is resized.
    #[test]
    fn pieces_on_any_number_of_threads_equal_one_row_at_a_time() {
        let prep = Preprocessing {
            unit_norm: true,
            bias: Some(0.5),
            ..Preprocessing::default()
        };
        let n = 2 * PIECE + 5;
        let x = Array2::from_shape_fn((n, 7), |(i, j)| ((i * 7 + j) as f64 * 0.61).cos());
        let bits = |a: &Array2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let mut kept = Array2::zeros((3, 3));
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| prep.apply_into(x.view(), &mut kept))
                .unwrap();
            assert_eq!(kept.dim(), (n, 8));
            for i in [0, 1, PIECE - 1, PIECE, PIECE + 3, n - 1] {
                let row = |a: &Array2<f64>| {
                    a.slice_axis(ndarray::Axis(0), ndarray::Slice::from(i..=i))
                        .to_owned()
                };
                let one = prep.apply(row(&x).view()).unwrap();
                assert_eq!(
                    bits(&row(&kept)),
                    bits(&one),
                    "row {i} on {threads} threads"
                );
            }
        }
    }

    #[test]
    fn steps_apply_in_order() {
        let prep = Preprocessing {
            scaling: Some(example_scaling()),
            unit_norm: false,
            bias: Some(1.0),
            row_bound: None,
        };
        let x = array![[100.0, 3.0], [3.0, -2.0]];
        assert_eq!(
            prep.apply(x.view()).unwrap(),
            array![[3.0, 3.0, 1.0], [0.5, -2.0, 1.0]]
        );
        // Projected onto the ball of radius 1.5: ‖(0.5, −2, 1)‖ = 2.29…, scaled to 1.5.
        let projected = Preprocessing {
            row_bound: Some(1.5),
            ..prep.clone()
        }
        .apply(x.view())
        .unwrap();
        for row in projected.rows() {
            let norm = row.dot(&row).sqrt();
            assert!((norm - 1.5).abs() <= 1e-12, "{projected}");
        }
        let r = 1.5 / (0.25_f64 + 4.0 + 1.0).sqrt();
        assert!((projected[[1, 1]] + 2.0 * r).abs() <= 1e-15);
        // The identity keeps rows as they are; a scaling for 2 features refuses 3 columns.
        let none = Preprocessing::default();
        assert_eq!(none.apply(x.view()).unwrap(), x);
        assert!(prep.apply(array![[1.0, 2.0, 3.0]].view()).is_err());
    }

    #[test]
    fn invalid_steps_are_refused() {
        for bad in [
            Preprocessing {
                bias: Some(0.0),
                ..Preprocessing::default()
            },
            Preprocessing {
                bias: Some(f64::NAN),
                ..Preprocessing::default()
            },
            Preprocessing {
                row_bound: Some(0.0),
                ..Preprocessing::default()
            },
            Preprocessing {
                row_bound: Some(f64::INFINITY),
                ..Preprocessing::default()
            },
        ] {
            assert!(matches!(
                bad.validate(1),
                Err(Error::InvalidHyperParameter { .. })
            ));
        }
    }
}
