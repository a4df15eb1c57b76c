//! The papers' preprocessing, as fit/transform steps and a [`Pipeline`] of them.
//!
//! - [`RowNormalizer`]: each row to unit L2 norm (paper 001: "each row to unit L2 norm").
//! - [`MinMaxScaler`] → [`FittedMinMax`]: each feature mapped affinely from its training
//!   `[min, max]` to `[lo, hi]` (paper 000: `[−0.5, 0.5]` on Cod-RNA).
//! - [`BallProjector`]: rows with `‖x‖ > r` scaled to norm `r` (paper 000: `r = √(8/9)`).
//! - [`BiasAppender`]: a constant feature appended (1 in paper 001, 1/3 in paper 000).
//!
//! # Privacy
//! Row normalisation, ball projection and the bias act on each row alone: they cost no
//! privacy. Min–max scaling fitted on the private training set (as paper 000 does) reads the
//! data's per-feature extremes and is **not** differentially private; where that matters, fit
//! it on public bounds with [`FittedMinMax::from_bounds`]. Transformed test rows may fall
//! outside `[lo, hi]` (values outside the training range); a later ball projection bounds
//! their norm.
//!
//! [`Step`], [`FittedStep`], [`Pipeline`] and [`FittedPipeline`] are plain enums and vectors of
//! numbers, so that they can be serialised.

use dp_optim::numeric::{project_to_ball, scale_to_norm};
use ndarray::{Array2, ArrayView2, Axis, Slice};

use crate::data::{Dataset, check_finite};
use crate::error::{Error, Result, ensure};

/// Scales every row to unit L2 norm (zero rows stay zero).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowNormalizer;

impl RowNormalizer {
    /// The normalised rows.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite entry.
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check_finite("x", x)?;
        Ok(self.apply(x.to_owned()))
    }

    fn apply(&self, mut x: Array2<f64>) -> Array2<f64> {
        for row in x.rows_mut() {
            // Scaled by the largest entry first: rows whose norm overflows (entries near
            // f64::MAX) or whose squares underflow (entries near 1e-162 and below) get unit
            // norm too, with their direction.
            scale_to_norm(row, 1.0);
        }
        x
    }
}

/// Min–max scaling to `[lo, hi]`, to be fitted on training data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinMaxScaler {
    /// Lower end of the target range.
    pub lo: f64,
    /// Upper end of the target range.
    pub hi: f64,
}

impl MinMaxScaler {
    /// Scaling to `[lo, hi]`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] unless `lo < hi`, both finite.
    pub fn new(lo: f64, hi: f64) -> Result<Self> {
        let s = Self { lo, hi };
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<()> {
        ensure(self.lo.is_finite(), "lo", self.lo, "must be finite")?;
        ensure(
            self.hi.is_finite() && self.hi > self.lo,
            "hi",
            self.hi,
            "must be finite and > lo",
        )
    }

    /// Learns each feature's `[min, max]` from `x`.
    ///
    /// # Errors
    /// [`Error::EmptyData`] for no rows, [`Error::NonFinite`], or invalid `lo`/`hi`.
    pub fn fit(&self, x: ArrayView2<'_, f64>) -> Result<FittedMinMax> {
        self.validate()?;
        if x.nrows() == 0 {
            return Err(Error::EmptyData { what: "no rows" });
        }
        check_finite("x", x)?;
        let min = x
            .columns()
            .into_iter()
            .map(|c| c.iter().fold(f64::INFINITY, |m, &v| m.min(v)))
            .collect();
        let max = x
            .columns()
            .into_iter()
            .map(|c| c.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v)))
            .collect();
        Ok(FittedMinMax {
            lo: self.lo,
            hi: self.hi,
            min,
            max,
        })
    }
}

/// A fitted min–max scaling: feature `j` maps `v ↦ lo + (hi − lo)(v − min_j)/(max_j − min_j)`,
/// and a constant feature (`max_j = min_j`) maps to the midpoint `(lo + hi)/2`.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedMinMax {
    /// Lower end of the target range.
    pub lo: f64,
    /// Upper end of the target range.
    pub hi: f64,
    /// Per-feature minimum of the fitting data.
    pub min: Vec<f64>,
    /// Per-feature maximum of the fitting data.
    pub max: Vec<f64>,
}

impl FittedMinMax {
    /// A scaling from given (e.g. public) per-feature bounds rather than from data.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `min` and `max` differ in length,
    /// [`Error::InvalidHyperParameter`] for non-finite bounds, `min_j > max_j`, or invalid
    /// `lo`/`hi`.
    pub fn from_bounds(min: Vec<f64>, max: Vec<f64>, lo: f64, hi: f64) -> Result<Self> {
        let f = Self { lo, hi, min, max };
        f.validate()?;
        Ok(f)
    }

    fn validate(&self) -> Result<()> {
        MinMaxScaler {
            lo: self.lo,
            hi: self.hi,
        }
        .validate()?;
        if self.min.len() != self.max.len() {
            return Err(Error::ShapeMismatch {
                left: "min",
                left_shape: vec![self.min.len()],
                right: "max",
                right_shape: vec![self.max.len()],
            });
        }
        for (&a, &b) in self.min.iter().zip(&self.max) {
            ensure(a.is_finite(), "min", a, "must be finite")?;
            ensure(
                b.is_finite() && b >= a,
                "max",
                b,
                "must be finite and >= min",
            )?;
        }
        Ok(())
    }

    /// Number of features it was fitted on.
    pub fn n_features(&self) -> usize {
        self.min.len()
    }

    /// The scaled features.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `x` has a different number of columns,
    /// [`Error::NonFinite`].
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.validate()?;
        check_cols(x, self.n_features())?;
        check_finite("x", x)?;
        Ok(self.apply(x.to_owned()))
    }

    fn apply(&self, mut x: Array2<f64>) -> Array2<f64> {
        let mid = 0.5 * (self.lo + self.hi);
        let width = self.hi - self.lo;
        for (j, mut col) in x.columns_mut().into_iter().enumerate() {
            let (a, b) = (self.min[j], self.max[j]);
            if b > a {
                // In halves: b − a and v − a overflow for features near ±f64::MAX (and
                // 0·∞ = NaN would follow); a test value far outside [a, b] saturates at
                // ±f64::MAX instead of becoming infinite.
                let span = 0.5 * b - 0.5 * a;
                col.mapv_inplace(|v| {
                    let t = (0.5 * v - 0.5 * a) / span;
                    (self.lo + width * t).clamp(-f64::MAX, f64::MAX)
                });
            } else {
                col.fill(mid);
            }
        }
        x
    }
}

/// Projects rows onto the L2 ball of radius `r`: rows with `‖x‖ > r` are scaled to norm `r`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BallProjector {
    /// Radius `r > 0`.
    pub radius: f64,
}

impl BallProjector {
    /// Projection onto the ball of radius `radius`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] unless `radius` is finite and `> 0`.
    pub fn new(radius: f64) -> Result<Self> {
        let p = Self { radius };
        p.validate()?;
        Ok(p)
    }

    fn validate(&self) -> Result<()> {
        ensure(
            self.radius > 0.0 && self.radius.is_finite(),
            "radius",
            self.radius,
            "must be finite and > 0",
        )
    }

    /// The projected rows.
    ///
    /// # Errors
    /// [`Error::NonFinite`], or an invalid radius.
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.validate()?;
        check_finite("x", x)?;
        Ok(self.apply(x.to_owned()))
    }

    fn apply(&self, mut x: Array2<f64>) -> Array2<f64> {
        for row in x.rows_mut() {
            // Scaled by the largest entry first, so that rows whose norm overflows keep
            // their direction (dividing by an infinite norm would zero them).
            project_to_ball(row, self.radius);
        }
        x
    }
}

/// Appends a constant feature (a bias) of the given value as the last column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BiasAppender {
    /// The constant.
    pub value: f64,
}

impl BiasAppender {
    /// Appends the constant `value`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] unless `value` is finite.
    pub fn new(value: f64) -> Result<Self> {
        let b = Self { value };
        b.validate()?;
        Ok(b)
    }

    fn validate(&self) -> Result<()> {
        ensure(self.value.is_finite(), "bias", self.value, "must be finite")
    }

    /// `x` with one more column, constant `value`.
    ///
    /// # Errors
    /// [`Error::NonFinite`], or an invalid value.
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.validate()?;
        check_finite("x", x)?;
        Ok(self.apply(x))
    }

    fn apply(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let d = x.ncols();
        let mut out = Array2::from_elem((x.nrows(), d + 1), self.value);
        out.slice_axis_mut(Axis(1), Slice::from(..d)).assign(&x);
        out
    }
}

/// One preprocessing step, with its parameters (before fitting).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Rows to unit L2 norm.
    NormalizeRows,
    /// Per-feature min–max scaling to `[lo, hi]`, fitted on the training data.
    MinMax {
        /// Lower end of the target range.
        lo: f64,
        /// Upper end of the target range.
        hi: f64,
    },
    /// Rows projected onto the L2 ball of this radius.
    ProjectToBall {
        /// Radius `> 0`.
        radius: f64,
    },
    /// A constant feature appended.
    AppendBias {
        /// The constant.
        value: f64,
    },
}

/// One fitted preprocessing step.
#[derive(Debug, Clone, PartialEq)]
pub enum FittedStep {
    /// Rows to unit L2 norm.
    NormalizeRows,
    /// Fitted min–max scaling.
    MinMax(FittedMinMax),
    /// Rows projected onto the L2 ball of this radius.
    ProjectToBall {
        /// Radius `> 0`.
        radius: f64,
    },
    /// A constant feature appended.
    AppendBias {
        /// The constant.
        value: f64,
    },
}

impl FittedStep {
    fn apply(&self, x: Array2<f64>) -> Array2<f64> {
        match self {
            FittedStep::NormalizeRows => RowNormalizer.apply(x),
            FittedStep::MinMax(m) => m.apply(x),
            FittedStep::ProjectToBall { radius } => BallProjector { radius: *radius }.apply(x),
            FittedStep::AppendBias { value } => BiasAppender { value: *value }.apply(x.view()),
        }
    }

    fn validate(&self, n_features: usize) -> Result<usize> {
        match self {
            FittedStep::NormalizeRows => Ok(n_features),
            FittedStep::MinMax(m) => {
                m.validate()?;
                if m.n_features() != n_features {
                    return Err(Error::ShapeMismatch {
                        left: "min-max scaling",
                        left_shape: vec![m.n_features()],
                        right: "features",
                        right_shape: vec![n_features],
                    });
                }
                Ok(n_features)
            }
            FittedStep::ProjectToBall { radius } => {
                BallProjector { radius: *radius }.validate()?;
                Ok(n_features)
            }
            FittedStep::AppendBias { value } => {
                BiasAppender { value: *value }.validate()?;
                Ok(n_features + 1)
            }
        }
    }
}

/// A list of preprocessing steps applied in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pipeline {
    /// The steps, first applied first.
    pub steps: Vec<Step>,
}

impl Pipeline {
    /// The empty pipeline (identity).
    pub fn new() -> Self {
        Self::default()
    }

    /// This pipeline followed by `step`.
    #[must_use]
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Paper 000 (Cod-RNA, App. E): features min–max scaled to `[−0.5, 0.5]` on the training
    /// set, rows projected onto the ball of radius `√(8/9)`, a constant feature `1/3`
    /// appended, so that every row has norm `≤ 1`.
    pub fn paper_000() -> Self {
        Self::new()
            .then(Step::MinMax { lo: -0.5, hi: 0.5 })
            .then(Step::ProjectToBall {
                radius: (8.0f64 / 9.0).sqrt(),
            })
            .then(Step::AppendBias { value: 1.0 / 3.0 })
    }

    /// Paper 001 (Adult and others, §5): rows scaled to unit L2 norm, a bias feature 1
    /// appended (so `‖x‖² ≤ 2`).
    pub fn paper_001() -> Self {
        Self::new()
            .then(Step::NormalizeRows)
            .then(Step::AppendBias { value: 1.0 })
    }

    /// Fits the steps in order, each on the output of the previous ones.
    ///
    /// # Errors
    /// [`Error::EmptyData`], [`Error::NonFinite`], or a step's invalid parameters.
    pub fn fit(&self, x: ArrayView2<'_, f64>) -> Result<FittedPipeline> {
        Ok(self.fit_transform(x)?.0)
    }

    /// Fits the steps and returns the transformed training data too.
    ///
    /// # Errors
    /// As [`Pipeline::fit`].
    pub fn fit_transform(&self, x: ArrayView2<'_, f64>) -> Result<(FittedPipeline, Array2<f64>)> {
        if x.nrows() == 0 {
            return Err(Error::EmptyData { what: "no rows" });
        }
        check_finite("x", x)?;
        let n_features_in = x.ncols();
        let mut cur = x.to_owned();
        let mut steps = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            let fitted = match *step {
                Step::NormalizeRows => FittedStep::NormalizeRows,
                Step::MinMax { lo, hi } => {
                    FittedStep::MinMax(MinMaxScaler::new(lo, hi)?.fit(cur.view())?)
                }
                Step::ProjectToBall { radius } => {
                    BallProjector::new(radius)?;
                    FittedStep::ProjectToBall { radius }
                }
                Step::AppendBias { value } => {
                    BiasAppender::new(value)?;
                    FittedStep::AppendBias { value }
                }
            };
            cur = fitted.apply(cur);
            steps.push(fitted);
        }
        Ok((
            FittedPipeline {
                n_features_in,
                steps,
            },
            cur,
        ))
    }
}

/// A fitted [`Pipeline`].
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPipeline {
    /// Number of input features the pipeline was fitted on.
    pub n_features_in: usize,
    /// The fitted steps, first applied first.
    pub steps: Vec<FittedStep>,
}

impl FittedPipeline {
    /// Number of output features.
    ///
    /// # Errors
    /// A step's invalid parameters (possible only for a hand-built or deserialised pipeline).
    pub fn n_features_out(&self) -> Result<usize> {
        self.steps
            .iter()
            .try_fold(self.n_features_in, |d, s| s.validate(d))
    }

    /// Applies the fitted steps to `x`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `x` does not have `n_features_in` columns,
    /// [`Error::NonFinite`], or a step's invalid parameters.
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check_cols(x, self.n_features_in)?;
        self.n_features_out()?;
        check_finite("x", x)?;
        Ok(self.steps.iter().fold(x.to_owned(), |cur, s| s.apply(cur)))
    }

    /// Applies the fitted steps to a dataset's features, keeping its labels.
    ///
    /// # Errors
    /// As [`FittedPipeline::transform`].
    pub fn transform_dataset(&self, data: &Dataset) -> Result<Dataset> {
        let x = self.transform(data.x().view())?;
        Dataset::new(x, data.y().to_owned())
    }
}

fn check_cols(x: ArrayView2<'_, f64>, d: usize) -> Result<()> {
    if x.ncols() != d {
        return Err(Error::ShapeMismatch {
            left: "x",
            left_shape: x.shape().to_vec(),
            right: "fitted features",
            right_shape: vec![d],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::l2_norm;
    use ndarray::{Array1, array};

    #[test]
    fn min_max_maps_train_range_and_constant_columns() {
        let x = array![[0.0, 5.0, 2.0], [10.0, 5.0, 4.0], [5.0, 5.0, 3.0]];
        let f = MinMaxScaler::new(-0.5, 0.5).unwrap().fit(x.view()).unwrap();
        let t = f.transform(x.view()).unwrap();
        assert_eq!(t.column(0), array![-0.5, 0.5, 0.0]);
        assert_eq!(t.column(1), array![0.0, 0.0, 0.0]);
        assert_eq!(t.column(2), array![-0.5, 0.5, 0.0]);
        assert!(t.iter().all(|v| v.is_finite()));
        // Test data outside the training range maps outside [lo, hi] (no clamping).
        let t = f.transform(array![[20.0, 7.0, 2.0]].view()).unwrap();
        assert_eq!(t, array![[1.5, 0.0, -0.5]]);
        assert!(matches!(
            f.transform(array![[1.0, 2.0]].view()),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(MinMaxScaler::new(1.0, 1.0).is_err());
        assert!(FittedMinMax::from_bounds(vec![0.0], vec![-1.0], 0.0, 1.0).is_err());
    }

    #[test]
    fn min_max_of_extreme_features_is_finite() {
        let x = array![[-1.7e308, 1.0], [1.7e308, 1.5], [0.0, 1.25]];
        let f = MinMaxScaler::new(-0.5, 0.5).unwrap().fit(x.view()).unwrap();
        let t = f.transform(x.view()).unwrap();
        assert_eq!(t.column(0), array![-0.5, 0.5, 0.0]);
        assert_eq!(t.column(1), array![-0.5, 0.5, 0.0]);
        // A test value far outside a narrow training range: 2·1.7e308 overflows, saturates.
        let t = f.transform(array![[0.0, 1.7e308]].view()).unwrap();
        assert_eq!(t[[0, 1]], f64::MAX);
    }

    #[test]
    fn row_steps() {
        let x = array![[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]];
        let n = RowNormalizer.transform(x.view()).unwrap();
        assert_eq!(n, array![[0.6, 0.8], [0.0, 0.0], [0.6, 0.8]]);
        let p = BallProjector::new(1.0)
            .unwrap()
            .transform(x.view())
            .unwrap();
        assert_eq!(p, array![[0.6, 0.8], [0.0, 0.0], [0.3, 0.4]]);
        let b = BiasAppender::new(1.0 / 3.0)
            .unwrap()
            .transform(x.view())
            .unwrap();
        assert_eq!(b.column(2), Array1::from_elem(3, 1.0 / 3.0));
        assert_eq!(b.shape(), &[3, 3]);
        assert!(RowNormalizer.transform(array![[f64::NAN]].view()).is_err());
        assert!(BallProjector::new(0.0).is_err());
        assert!(BiasAppender::new(f64::INFINITY).is_err());
    }

    #[test]
    fn paper_000_pipeline_bounds_norms_by_one() {
        let x = Array2::from_shape_fn((50, 8), |(i, j)| ((i * 7 + j * 13) % 11) as f64 - 3.0);
        let (fitted, t) = Pipeline::paper_000().fit_transform(x.view()).unwrap();
        assert_eq!(t.shape(), &[50, 9]);
        assert_eq!(fitted.n_features_out().unwrap(), 9);
        assert_eq!(fitted.transform(x.view()).unwrap(), t);
        for row in t.rows() {
            assert!(l2_norm(row) <= 1.0 + 1e-12);
            assert_eq!(row[8], 1.0 / 3.0);
        }
        let test = array![[100.0, -100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
        let tt = fitted.transform(test.view()).unwrap();
        assert!(l2_norm(tt.row(0)) <= 1.0 + 1e-12);
    }

    #[test]
    fn paper_001_pipeline() {
        let x = array![[3.0, 4.0], [1.0, 0.0]];
        let y = array![1.0, -1.0];
        let data = Dataset::new(x.clone(), y).unwrap();
        let fitted = Pipeline::paper_001().fit(x.view()).unwrap();
        let d = fitted.transform_dataset(&data).unwrap();
        assert_eq!(d.x(), array![[0.6, 0.8, 1.0], [1.0, 0.0, 1.0]]);
        assert!(
            d.row_norms()
                .iter()
                .all(|&n| (n - 2f64.sqrt()).abs() < 1e-15)
        );
        assert!(
            Pipeline::new()
                .then(Step::ProjectToBall { radius: -1.0 })
                .fit(x.view())
                .is_err()
        );
    }
}
