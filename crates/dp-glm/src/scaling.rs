//! Per-feature scaling as a stored, fitted step: standardisation `(v − centre)/scale` or
//! min–max to `[−1, 1]`, each feature first clipped to its range, with public per-feature
//! values or with ranges estimated privately.
//!
//! A [`ScalingPlan`] says, for every feature, the [`PublicScale`] the user gave (a public
//! value, e.g. from the documentation of the data) or nothing; [`ScalingPlan::fit`] estimates
//! the missing ranges privately within the bounds' budget ([`PrivateBounds::estimate_range`])
//! and returns a [`FittedScaling`], which is stored with the model and applied, unchanged, to
//! every row scored later.
//!
//! Feature `j` maps `v ↦ (clamp(v, low_j, high_j) − centre_j)/scale_j`:
//! - min–max with public range `[min, max]`: `low = min`, `high = max`, centre the midpoint,
//!   scale the half-width, so that the output is in `[−1, 1]`;
//! - standardisation with public `centre` and `scale` (and optionally `min`/`max` to clip to
//!   first: without both, the feature is not clipped and implies no row bound);
//! - estimated (either method): private estimates `a`, `b` of the feature's quartiles
//!   (quantiles `1 − q` and `q`, `q =` [`RANGE_QUANTILE`]) give a robust centre
//!   `c = (a + b)/2` and scale `s = (b − a)/(2z)`, `z = Φ⁻¹(q)` ([`Z_RANGE`]; for a normal
//!   feature, its mean and standard deviation); the range is `c ± k·s`, `k =`
//!   [`CLIP_SCALES`]. Standardisation maps it to `[−k, k]`, min–max to `[−1, 1]`. If the
//!   quartiles coincide or cross (a mostly-constant feature such as a rare 0/1 indicator, or
//!   noise), the feature keeps its own unit: `(v − c)/1`, clipped to `c ± 1` (min–max) or
//!   `c ± k` (standard), so a 0/1 indicator stays 0/1 rather than being zeroed.
//!
//! Quartiles rather than extremes: AboveThreshold's error is a number of records (a few times
//! its noise scale `3/ε`), and a quantile `q` is only resolved when `n(1 − q)` is well above
//! that; with `2d` estimates sharing 10% of ε = 1 (d = 10: noise scale 600 records), the 0.01
//! and 0.99 quantiles of 20,000 rows are not, the quartiles are (5,000 records each side).
//!
//! Clipping to `[low, high]` bounds every scaled feature, so a scaling with every range known
//! bounds every row: [`FittedScaling::row_bound`] is a public row-norm bound the learners can
//! use without spending budget on one.
//!
//! # Privacy
//! A fitted scaling is a public function applied to each row alone. Its parameters are public
//! values given by the user, or the outputs of [`crate::bounds::private_quantile_signed`]
//! (AboveThreshold over a public signed grid; Dwork & Roth, *The algorithmic foundations of
//! differential privacy*, Alg. 1 and Thm 3.23): pure ε-DP under add/remove and replace-one,
//! each estimate recorded in the ledger by [`PrivateBounds`] and composed with the learner.
//! No range is ever read from the data without noise. Because each feature is clipped to its
//! range, the row bound the scaling implies holds for any input, so the privacy of a learner
//! relying on it does not depend on the estimates being right (only its accuracy does).

use ndarray::{Array2, ArrayView2};
use rand::Rng;

use crate::bounds::PrivateBounds;
use crate::error::{Error, Result};

/// The quantile whose low (`1 − q`) and high (`q`) values are estimated: the quartiles.
pub const RANGE_QUANTILE: f64 = 0.75;

/// `Φ⁻¹(0.75)`: the standard normal quantile at [`RANGE_QUANTILE`] (half the interquartile
/// range of a standard normal).
pub const Z_RANGE: f64 = 0.674_489_750_196_081_7;

/// The default share of ε spent on private estimates when feature ranges are among them
/// (instead of [`crate::bounds::DEFAULT_SHARE`]): `2d` quantiles need more than the one to
/// three bounds of a learner. Measured on the problem (d = 10, n = 20,000, ε = 1,
/// tests/scaling.rs in dp-cli): with 10% DP-SGD and AMP fell more than 2 accuracy points
/// below non-private logistic regression in 7 and 8 of 39 seeded runs (range estimates off),
/// with 20% in none of 59 (the learner's smaller ε costs less than the better ranges gain).
pub const SCALING_SHARE: f64 = 0.2;

/// An estimated feature is clipped to its centre ± this many scales (0.27% of a normal
/// feature's values lie outside).
pub const CLIP_SCALES: f64 = 3.0;

/// The probability, at most, that one range estimate of [`ScalingPlan::fit`] stops on a
/// candidate below all the data at [`min_rows_for_ranges`]: an even chance. Measured on
/// d = 10 features on scales 0.1…100 at ε = 1 (20% share): at n = 5,000 (just above the
/// row count) minmax with estimated ranges beat no scaling for DP-SGD, AMP and ObjPert
/// (test accuracy 0.67, 0.70, 0.71 against 0.56, 0.61, 0.64); at n = 2,000 it fell to chance
/// (0.50) where no scaling kept 0.58–0.66.
pub const RANGE_FAILURE: f64 = 0.5;

/// The fewest rows for which every private range estimate of [`ScalingPlan::fit`] at
/// `epsilon_each` (ε per estimate, > 0) is reliable: below it, an estimate may stop on a
/// candidate outside the data with probability above [`RANGE_FAILURE`], and a feature whose
/// range is wrong by orders of magnitude is clipped to a constant (the model can fall to
/// chance). Callers choosing a default use it to skip the estimates and say so.
///
/// AboveThreshold ([`crate::bounds::above_threshold`], noises of scale `b = 3/ε`) scans the
/// `K` public signed candidates ([`crate::bounds::signed_candidates`]) upwards; below the
/// data each query is `−q·n` (`q =` [`RANGE_QUANTILE`]: the scan of either quartile meets
/// `q·n` records' worth of negative queries first). One query stops it there with probability
/// `P(L₁ − L₂ ≥ q·n) = ½·e^{−x}(1 + x/2)`, `x = q·n/b`, for independent Laplace `L₁, L₂`; the
/// union over the `K` candidates is at most [`RANGE_FAILURE`] when `n` is at least the value
/// returned. Not a privacy quantity: `n` here is the count the caller treats as public.
pub fn min_rows_for_ranges(epsilon_each: f64) -> f64 {
    let k = crate::bounds::signed_candidates().len() as f64;
    let target = 2.0 * RANGE_FAILURE / k;
    // `e^{−x}(1 + x/2)` decreases in `x > 0`: the smallest `x` meeting the target by bisection.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while (-hi).exp() * (1.0 + 0.5 * hi) > target {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if (-mid).exp() * (1.0 + 0.5 * mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi * (3.0 / epsilon_each) / RANGE_QUANTILE
}

/// How features are scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingMethod {
    /// `(v − centre)/scale`.
    Standard,
    /// `[min, max]` to `[−1, 1]`.
    MinMax,
}

impl ScalingMethod {
    /// The name used in reports and model files (`standard`, `minmax`).
    pub fn name(self) -> &'static str {
        match self {
            ScalingMethod::Standard => "standard",
            ScalingMethod::MinMax => "minmax",
        }
    }
}

/// The public values a user gives for one feature (every field optional).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PublicScale {
    /// Lower end of the feature's range.
    pub min: Option<f64>,
    /// Upper end of the feature's range.
    pub max: Option<f64>,
    /// Centre (standardisation).
    pub center: Option<f64>,
    /// Scale `> 0` (standardisation).
    pub scale: Option<f64>,
}

impl PublicScale {
    /// The fitted scaling of one feature from these public values under `method`.
    ///
    /// # Errors
    /// A reason when the values do not fit the method: min–max needs finite `min < max` and no
    /// centre or scale; standardisation needs a finite centre and a finite scale `> 0`, and a
    /// `min < max` when both are given.
    pub fn fitted(&self, method: ScalingMethod) -> std::result::Result<FeatureScale, String> {
        let finite = |name: &str, v: Option<f64>| match v {
            Some(x) if !x.is_finite() => Err(format!("{name} = {x} is not a finite number")),
            _ => Ok(v),
        };
        let (min, max) = (finite("min", self.min)?, finite("max", self.max)?);
        let (center, scale) = (finite("center", self.center)?, finite("scale", self.scale)?);
        if let (Some(a), Some(b)) = (min, max)
            && a >= b
        {
            return Err(format!("needs min < max, got [{a}, {b}]"));
        }
        match method {
            ScalingMethod::MinMax => {
                if center.is_some() || scale.is_some() {
                    return Err("center and scale apply to standard scaling, not minmax".into());
                }
                match (min, max) {
                    (Some(a), Some(b)) => Ok(FeatureScale::from_range(a, b, 1.0, None)),
                    _ => Err("minmax scaling needs both min and max".into()),
                }
            }
            ScalingMethod::Standard => match (center, scale) {
                (Some(c), Some(s)) if s > 0.0 => Ok(FeatureScale {
                    low: min,
                    high: max,
                    center: c,
                    scale: s,
                    estimated: None,
                }),
                (Some(_), Some(s)) => Err(format!("needs scale > 0, got {s}")),
                _ => Err("standard scaling needs both center and scale".into()),
            },
        }
    }
}

/// One feature's fitted scaling: `v ↦ (clamp(v, low, high) − center)/scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureScale {
    /// Values below are raised to it (none: not clipped below).
    pub low: Option<f64>,
    /// Values above are lowered to it (none: not clipped above).
    pub high: Option<f64>,
    /// Subtracted after clipping.
    pub center: f64,
    /// Divided by after centring (`> 0`).
    pub scale: f64,
    /// `None` for public values; for estimated ones, the ε both estimates cost together.
    pub estimated: Option<f64>,
}

impl FeatureScale {
    /// The range `[low, high]` clipped to and mapped to `[−half_width, half_width]`; a range
    /// with `high ≤ low` (possible only by rounding, for a centre so large that `c ± 3s`
    /// rounds to one number) maps every value to 0.
    fn from_range(low: f64, high: f64, half_width: f64, estimated: Option<f64>) -> Self {
        let mid = 0.5 * low + 0.5 * high;
        if high > low {
            Self {
                low: Some(low),
                high: Some(high),
                center: mid,
                scale: (0.5 * high - 0.5 * low) / half_width,
                estimated,
            }
        } else {
            Self {
                low: Some(mid),
                high: Some(mid),
                center: mid,
                scale: 1.0,
                estimated,
            }
        }
    }

    /// The scaled value.
    pub fn apply(&self, v: f64) -> f64 {
        let v = self.low.map_or(v, |l| v.max(l));
        let v = self.high.map_or(v, |h| v.min(h));
        // In halves, so that centring values near ±f64::MAX cannot overflow.
        ((0.5 * v - 0.5 * self.center) / (0.5 * self.scale)).clamp(-f64::MAX, f64::MAX)
    }

    /// The largest `|output|` (`None` when the feature is not clipped on both sides).
    pub fn max_abs(&self) -> Option<f64> {
        let (l, h) = (self.low?, self.high?);
        Some(self.apply(l).abs().max(self.apply(h).abs()))
    }

    fn validate(&self) -> Result<()> {
        let ok = self.center.is_finite()
            && self.scale.is_finite()
            && self.scale > 0.0
            && self.low.is_none_or(f64::is_finite)
            && self.high.is_none_or(f64::is_finite)
            && match (self.low, self.high) {
                (Some(l), Some(h)) => l <= h,
                _ => true,
            };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidHyperParameter {
                name: "scaling",
                value: self.scale,
                reason: "a feature's scaling needs finite values, scale > 0 and low <= high",
            })
        }
    }
}

/// A fitted per-feature scaling ([module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct FittedScaling {
    /// The method.
    pub method: ScalingMethod,
    /// One entry per input feature, in order.
    pub features: Vec<FeatureScale>,
}

impl FittedScaling {
    /// Checks every feature's values (for a hand-built or deserialised scaling).
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `scaling`.
    pub fn validate(&self) -> Result<()> {
        self.features.iter().try_for_each(FeatureScale::validate)
    }

    /// The scaled features.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `x` does not have one column per feature; as
    /// [`FittedScaling::validate`].
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.validate()?;
        if x.ncols() != self.features.len() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "scaled features",
                right_shape: vec![self.features.len()],
            });
        }
        let mut out = x.to_owned();
        for (mut col, f) in out.columns_mut().into_iter().zip(&self.features) {
            col.mapv_inplace(|v| f.apply(v));
        }
        Ok(out)
    }

    /// A public bound on the L2 norm of every scaled row, `√(Σ_j max_abs_j²)`, when every
    /// feature is clipped on both sides (`None` otherwise). It holds for any input row.
    pub fn row_bound(&self) -> Option<f64> {
        self.features
            .iter()
            .try_fold(0.0_f64, |acc, f| Some(acc.hypot(f.max_abs()?)))
    }

    /// The total ε spent estimating the ranges (0 when every value was public).
    pub fn estimated_epsilon(&self) -> f64 {
        self.features.iter().filter_map(|f| f.estimated).sum()
    }
}

/// What to fit: the method, and for every feature its public values or `None` (estimate).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingPlan {
    /// The method.
    pub method: ScalingMethod,
    /// One entry per input feature.
    pub public: Vec<Option<PublicScale>>,
}

impl ScalingPlan {
    /// The number of private estimates fitting needs: two (low and high) per feature without
    /// public values. Plan them in [`PrivateBounds::new`].
    pub fn estimates(&self) -> usize {
        2 * self.public.iter().filter(|p| p.is_none()).count()
    }

    /// A public bound on the L2 norm of every row the fitted scaling will output (as
    /// [`FittedScaling::row_bound`], known before fitting): `None` when a public feature is
    /// not clipped on both sides or its values do not fit the method.
    pub fn row_bound(&self) -> Option<f64> {
        let half_width = self.half_width();
        self.public.iter().try_fold(0.0_f64, |acc, p| {
            let m = match p {
                Some(p) => p.fitted(self.method).ok()?.max_abs()?,
                None => half_width,
            };
            Some(acc.hypot(m))
        })
    }

    /// The largest `|output|` of an estimated feature.
    fn half_width(&self) -> f64 {
        match self.method {
            ScalingMethod::MinMax => 1.0,
            ScalingMethod::Standard => CLIP_SCALES,
        }
    }

    /// Fits the scaling on the raw features `x`: public values as given, the other features'
    /// ranges estimated privately in `bounds` (labelled with `names[j]` when given).
    ///
    /// # Privacy
    /// Two pure-DP entries per estimated feature, [`PrivateBounds::estimate_range`]
    /// (AboveThreshold, Dwork & Roth, Thm 3.23), each at most the bounds' per-estimate share.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `x` has another number of columns than the plan;
    /// [`Error::InvalidHyperParameter`] naming `scaling` for public values that do not fit
    /// the method; as [`PrivateBounds::estimate_range`].
    pub fn fit<R: Rng + ?Sized>(
        &self,
        x: ArrayView2<'_, f64>,
        names: Option<&[String]>,
        bounds: &mut PrivateBounds,
        rng: &mut R,
    ) -> Result<FittedScaling> {
        if x.ncols() != self.public.len() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "scaling plan",
                right_shape: vec![self.public.len()],
            });
        }
        let half_width = self.half_width();
        let mut features = Vec::with_capacity(self.public.len());
        for (j, p) in self.public.iter().enumerate() {
            let f = match p {
                Some(p) => p
                    .fitted(self.method)
                    .map_err(|_| Error::InvalidHyperParameter {
                        name: "scaling",
                        value: j as f64,
                        reason: "public values that do not fit the scaling method",
                    })?,
                None => {
                    let name = names
                        .and_then(|n| n.get(j))
                        .cloned()
                        .unwrap_or_else(|| format!("feature {j}"));
                    let column: Vec<f64> = x.column(j).to_vec();
                    let (a, b, eps) = bounds.estimate_range(&name, &column, RANGE_QUANTILE, rng)?;
                    let c = 0.5 * a + 0.5 * b;
                    // Quartiles that coincide or cross (a mostly-constant feature such as a
                    // rare indicator, or noise): scale 1, the feature's own unit, not zero.
                    let reach = if b > a {
                        CLIP_SCALES * (0.5 * b - 0.5 * a) / Z_RANGE
                    } else {
                        half_width
                    };
                    FeatureScale::from_range(c - reach, c + reach, half_width, Some(eps))
                }
            };
            features.push(f);
        }
        Ok(FittedScaling {
            method: self.method,
            features,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_optim::seeded_rng;
    use ndarray::array;

    /// The row count is the closed form's root and scales as `1/ε`: at ε = 0.01 per estimate
    /// (d = 10 at ε = 1 with the 20% share) about 4,800 rows.
    #[test]
    fn min_rows_solves_the_union_bound() {
        let k = crate::bounds::signed_candidates().len() as f64;
        let n = min_rows_for_ranges(0.01);
        let x = RANGE_QUANTILE * n / 300.0;
        let union = k * 0.5 * (-x).exp() * (1.0 + 0.5 * x);
        assert!((union / RANGE_FAILURE - 1.0).abs() < 1e-9, "{union}");
        assert!((4_500.0..5_000.0).contains(&n), "{n}");
        assert!((min_rows_for_ranges(0.005) / n - 2.0).abs() < 1e-12);
    }

    /// Below the row count a range estimate lands far outside the data in most runs; well
    /// above it in none (false-failure rate: each of the 40 runs at 4n stops outside with
    /// probability < 0.5·e^{-3·x}, x ≈ 12 the exponent at n, so below 1e-15).
    #[test]
    fn ranges_below_min_rows_are_unreliable() {
        let eps = 0.01;
        let need = min_rows_for_ranges(eps);
        let outside = |n: usize, seed: u64| {
            let mut rng = seeded_rng(seed);
            let values: Vec<f64> = (0..n).map(|i| 100.0 + (i % 50) as f64).collect();
            (0..10)
                .filter(|_| {
                    let (a, _) =
                        crate::bounds::private_quantile_signed(&values, 0.25, eps, &mut rng)
                            .unwrap();
                    !(90.0..160.0).contains(&a)
                })
                .count()
        };
        let small: usize = (0..4).map(|s| outside((need / 4.0) as usize, s)).sum();
        let large: usize = (0..4).map(|s| outside((need * 4.0) as usize, s)).sum();
        assert!(small >= 30, "{small} of 40 outside the data at n/4");
        assert_eq!(large, 0, "at 4n");
    }

    #[test]
    fn public_values_map_as_documented() {
        let mm = PublicScale {
            min: Some(0.0),
            max: Some(10.0),
            ..PublicScale::default()
        }
        .fitted(ScalingMethod::MinMax)
        .unwrap();
        assert_eq!(mm.apply(0.0), -1.0);
        assert_eq!(mm.apply(10.0), 1.0);
        assert_eq!(mm.apply(7.5), 0.5);
        assert_eq!(mm.apply(-100.0), -1.0, "clipped");
        assert_eq!(mm.max_abs(), Some(1.0));
        let st = PublicScale {
            center: Some(50.0),
            scale: Some(4.0),
            ..PublicScale::default()
        }
        .fitted(ScalingMethod::Standard)
        .unwrap();
        assert_eq!(st.apply(58.0), 2.0);
        assert_eq!(st.apply(1e6), (1e6 - 50.0) / 4.0, "not clipped");
        assert_eq!(st.max_abs(), None);
        for (p, m) in [
            (PublicScale::default(), ScalingMethod::MinMax),
            (PublicScale::default(), ScalingMethod::Standard),
            (
                PublicScale {
                    min: Some(1.0),
                    max: Some(1.0),
                    ..PublicScale::default()
                },
                ScalingMethod::MinMax,
            ),
            (
                PublicScale {
                    center: Some(0.0),
                    scale: Some(0.0),
                    ..PublicScale::default()
                },
                ScalingMethod::Standard,
            ),
            (
                PublicScale {
                    min: Some(0.0),
                    max: Some(1.0),
                    center: Some(0.5),
                    ..PublicScale::default()
                },
                ScalingMethod::MinMax,
            ),
            (
                PublicScale {
                    center: Some(f64::NAN),
                    scale: Some(1.0),
                    ..PublicScale::default()
                },
                ScalingMethod::Standard,
            ),
        ] {
            assert!(p.fitted(m).is_err(), "{p:?} {m:?}");
        }
    }

    #[test]
    fn row_bound_holds_for_any_row() {
        let s = FittedScaling {
            method: ScalingMethod::MinMax,
            features: vec![
                FeatureScale::from_range(0.0, 4.0, 1.0, None),
                FeatureScale::from_range(-10.0, 10.0, 1.0, None),
                // An empty range: the feature maps to 0.
                FeatureScale::from_range(3.0, 1.0, 1.0, Some(0.1)),
            ],
        };
        let x = array![[1e300, -1e300, 5.0], [2.0, 0.0, -7.0], [-1.0, 5.0, 2.0]];
        let t = s.transform(x.view()).unwrap();
        assert_eq!(
            t,
            array![[1.0, -1.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.5, 0.0]]
        );
        let bound = s.row_bound().unwrap();
        assert!((bound - 2f64.sqrt()).abs() < 1e-15);
        assert!(
            t.rows()
                .into_iter()
                .all(|r| r.dot(&r).sqrt() <= bound + 1e-15)
        );
        assert!((s.estimated_epsilon() - 0.1).abs() < 1e-15);
        assert!(s.transform(array![[1.0, 2.0]].view()).is_err());
    }

    /// Two features, one public and one estimated: two ledger entries, and the estimated
    /// feature N(−100, 5²) (quartiles −103.37, −96.63) standardised with centre near −100 and
    /// scale near 5. With n = 20,000 and ε = 0.05 per estimate (noise scale 60 records), the
    /// quartiles' ranks err by a few hundred records, and the grid resolves −100 to 0.27.
    /// Checked: centre within 0.5, scale within 10%. Measured over 200 seeds when written:
    /// centre −100.24 … −99.70, scale 4.61 … 5.42 (false-failure rate estimated below 1/200
    /// per seed; the 5 seeds here are fixed).
    #[test]
    fn estimated_ranges_are_private_quartiles() {
        use rand_distr::{Distribution, Normal};
        let n = 20_000;
        let mut rng = seeded_rng(4);
        let normal = Normal::new(-100.0, 5.0).unwrap();
        let x = Array2::from_shape_fn(
            (n, 2),
            |(_, j)| {
                if j == 0 { 0.5 } else { normal.sample(&mut rng) }
            },
        );
        let plan = ScalingPlan {
            method: ScalingMethod::Standard,
            public: vec![
                Some(PublicScale {
                    center: Some(0.0),
                    scale: Some(1.0),
                    ..PublicScale::default()
                }),
                None,
            ],
        };
        assert_eq!(plan.estimates(), 2);
        assert_eq!(plan.row_bound(), None, "feature 0 is not clipped");
        let bounded = ScalingPlan {
            method: ScalingMethod::MinMax,
            public: vec![None, None],
        };
        assert_eq!(bounded.row_bound(), Some(2f64.sqrt()));
        for seed in 0..5 {
            let mut bounds = PrivateBounds::new(1.0, 1e-5, 0.1, plan.estimates()).unwrap();
            let s = plan
                .fit(x.view(), None, &mut bounds, &mut seeded_rng(seed))
                .unwrap();
            let f = s.features[1];
            assert!((f.center + 100.0).abs() < 0.5, "seed {seed}: {}", f.center);
            assert!((f.scale - 5.0).abs() < 0.5, "seed {seed}: {}", f.scale);
            let (lo, hi) = (f.low.unwrap(), f.high.unwrap());
            assert!((lo - (f.center - 3.0 * f.scale)).abs() < 1e-9);
            assert!((hi - (f.center + 3.0 * f.scale)).abs() < 1e-9);
            assert_eq!(f.max_abs(), Some(3.0));
            assert!(f.estimated.unwrap() <= 0.1 + 1e-12);
            let fitted = bounded
                .fit(
                    x.view(),
                    None,
                    &mut PrivateBounds::new(1.0, 1e-5, 0.1, 4).unwrap(),
                    &mut seeded_rng(seed),
                )
                .unwrap();
            // Feature 0 is constant: its quartiles coincide and it keeps its unit, clipped
            // to 1 around its centre.
            let f0 = fitted.features[0];
            assert!((f0.center - 0.5).abs() < 0.01, "{}", f0.center);
            assert_eq!(f0.scale, 1.0);
            assert!((f0.apply(1.2) - (1.2 - f0.center)).abs() < 1e-12);
            assert_eq!(f0.apply(9.0), 1.0);
            assert_eq!(fitted.row_bound(), bounded.row_bound());
            assert_eq!(s.features[0].estimated, None);
            assert_eq!(s.features[0].apply(0.5), 0.5);
        }
    }
}
