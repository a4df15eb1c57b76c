//! Private estimates of the bounds learners need: a high quantile of the row norms `‖x‖`
//! (`X`), of the label magnitudes `|y|` (`Y`) and of per-example gradient norms (a clip),
//! and the low and high quantiles of each feature for feature scaling ([`crate::scaling`]),
//! each released by the sparse vector technique (AboveThreshold) over a fixed public grid of candidate bounds, paid from a
//! declared share of the budget and composed in the ledger with the learner.
//!
//! A bound that is wrong is never a privacy failure — every learner clips or projects the data
//! to the bound it is given, so its guarantee holds for any input — but a bound far from the
//! data is a silent accuracy failure (rows shrunk to a bound of 1, or noise scaled to a bound
//! of 1000). [`PrivateBounds`] records, for every bound, whether it was public, implied by a
//! public preprocessing step, or estimated (and at what ε).
//!
//! # The estimator
//! The candidates are the public geometric grid `c_k = 2^(k/8)`, `k = −160, …, 240`
//! ([`candidates`]: from `2^-20 ≈ 9.5e-7` to `2^30 ≈ 1.1e9`, ratio `2^(1/8) ≈ 1.09`). For a
//! quantile `p` the query at `c` on values `v_1, …, v_n` is
//! `f(c) = (1 − p)·#{i : v_i ≤ c} − p·#{i : v_i > c}`, non-decreasing in `c` and `≥ 0` exactly
//! when at least a fraction `p` of the values lies at or below `c`; the true `n` is not needed
//! (under add/remove it is private). The estimate is the first candidate, scanning upwards,
//! whose noisy query crosses a noisy threshold 0: the sparse vector technique's
//! *AboveThreshold* (Dwork & Roth, *The algorithmic foundations of differential privacy*,
//! 2014, Alg. 1), which stops at the smallest candidate that covers the quantile — where the
//! queries are flat (every value below `c`) no larger candidate is preferred. If no candidate
//! crosses, the largest is released (post-processing of the "no crossing" output).
//!
//! # Accuracy
//! Each noise has scale `3/ε` records. A false crossing below the quantile needs a query noise
//! to beat the threshold's by `|f(c)|`; the estimate's rank is off by a few times
//! `(3/ε)·ln K` records (`K` = 401 candidates) at most, with high probability: at n = 50,000
//! and ε = 0.05 the 0.99 quantile of `|N(0, 1)|` (2.58) was estimated in [2.59, 3.08] in 500
//! of 500 runs. When `n(1 − p)` is not well above the noise scale the estimate is unreliable:
//! at n = 1,000, ε = 0.05 it ranged from 0.5 to the grid's top `2^30` (the threshold's noise
//! exceeded every query, 1 run in 500), median 2. The learner stays private whatever the
//! estimate (it clips to it); only its accuracy suffers.
//!
//! # Privacy
//! *Neighbouring relation*: add/remove or replace-one of one record (row and label). One
//! record moves at most one value `v_i`. Under add/remove it changes either
//! `#{v_i ≤ c}` or `#{v_i > c}` by 1, so `f(c)` moves by at most `max(p, 1 − p) ≤ 1`; under
//! replace-one it moves one value from one side of `c` to the other, changing `f(c)` by at
//! most `(1 − p) + p = 1`. So every query has sensitivity `Δ = 1` under both relations.
//!
//! AboveThreshold with threshold noise `Lap(Δ/ε₁)` and query noise `Lap(2Δ/ε₂)` is
//! `(ε₁ + ε₂)`-DP for any number of queries (Dwork & Roth, Thm 3.23; the split of ε between
//! the two, Lyu, Su & Li, *Understanding the sparse vector technique for differential
//! privacy*, PVLDB 2017, Alg. 1 and Thm 2). We take `ε₁ = ε/3`, `ε₂ = 2ε/3`, so both noises
//! have the scale `b = 3Δ/ε` and share one grid `γ`: every noisy value is released by the
//! grid-safe discrete Laplace of [`dp_optim::laplace_for`]. The proof's change of variables
//! shifts the threshold's noise by the largest movement of a query and the crossing query's
//! noise by twice that; on the grid a query rounded to `γ` moves by at most `Δ + γ`, an
//! integer number of grid units, and the discrete Laplace's mass ratio over an integer shift
//! `s` is at most `e^{s/t}` (`t` its scale in grid units; noise module docs of `dp_optim`), so
//! the release is `3(Δ + γ)/b`-DP: [`dp_optim::laplace_for`] with sensitivity `3Δ` and
//! dimension 3 returns `b` with `(3Δ + 3γ)/b ≤ ε` and the ε it achieves, recorded in the
//! ledger as a pure ε-DP entry ([`dp_accounting::Mechanism::pure_dp`]). (Neither book nor
//! paper is in the project's sources: the algorithm and theorem numbers above were not
//! re-checked against their texts; the argument is restated here in full.)
//!
//! The estimates are then composed with the learner: the learner is calibrated for what
//! remains of ε (the target minus the bounds' share, same δ), and [`PrivateBounds::compose`]
//! prices the whole ledger (the bounds' entries and the learner's) with the learner's accountant,
//! takes the smaller of that and basic composition, `ε_bounds + ε_learner(δ)` (Dwork & Roth,
//! Thm 3.16; the only one where the accountant cannot price the composition — the exact
//! accountant prices Gaussian compositions and single releases only), and checks it against
//! the user's target.

use dp_accounting::{Ledger, Mechanism, PrivacyEvent};
use dp_optim::laplace_for;
use ndarray::ArrayView1;
use rand::Rng;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::{Budget, Prior};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::report::{PrivacyReport, text_up};
use crate::row_count::{COUNT_LABEL, PRIVATE_COUNT, PrivateCount};

/// The grid's exponents are `k/8` for `k` in this range.
const GRID_STEPS: std::ops::RangeInclusive<i32> = -160..=240;

/// Candidates per doubling of the bound.
const PER_OCTAVE: f64 = 8.0;

/// The public candidate bounds `2^(k/8)`, `k = −160, …, 240`, increasing.
pub fn candidates() -> Vec<f64> {
    GRID_STEPS
        .map(|k| (f64::from(k) / PER_OCTAVE).exp2())
        .collect()
}

/// Candidates per doubling on the signed grid of feature values ([`signed_candidates`]).
const SIGNED_PER_OCTAVE: i32 = 256;

/// The public signed candidates for feature values: `0` and `±2^(k/256)`,
/// `k = −20·256, …, 30·256` (magnitudes from `2^-20` to `2^30`, ratio `2^(1/256) ≈ 1.0027`),
/// increasing. Finer than [`candidates`] because a feature's range is read relative to its
/// offset: a feature near 100 is resolved to about 0.27.
pub fn signed_candidates() -> Vec<f64> {
    let k = -20 * SIGNED_PER_OCTAVE..=30 * SIGNED_PER_OCTAVE;
    let positive: Vec<f64> = k
        .map(|k| (f64::from(k) / f64::from(SIGNED_PER_OCTAVE)).exp2())
        .collect();
    positive
        .iter()
        .rev()
        .map(|v| -v)
        .chain(std::iter::once(0.0))
        .chain(positive.iter().copied())
        .collect()
}

/// The per-record statistic whose quantile bounds a learner's input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// The row norm `‖x‖`: the bound `X`.
    RowNorm,
    /// The label magnitude `|y|`: the bound `Y`.
    LabelMagnitude,
    /// A per-example gradient-norm bound for `loss`: `L·‖x‖` for a loss with Lipschitz
    /// constant `L` (a bound at every θ), `|φ'(0, y)|·‖x‖` (the norm at θ = 0) for the squared
    /// loss, whose gradient is unbounded.
    GradientNorm(Loss),
}

/// What a [`Statistic`] reads of the records: each row's norm and label (a dense
/// [`Dataset`] or sparse rows, [`SparseDataset`](crate::sparse::SparseDataset)).
pub trait Records {
    /// `‖x_i‖` for every record.
    fn row_norms(&self) -> ArrayView1<'_, f64>;
    /// `y_i` for every record.
    fn y(&self) -> ArrayView1<'_, f64>;
}

impl Records for Dataset {
    fn row_norms(&self) -> ArrayView1<'_, f64> {
        Dataset::row_norms(self)
    }

    fn y(&self) -> ArrayView1<'_, f64> {
        Dataset::y(self)
    }
}

impl Statistic {
    /// The statistic of every record of `data`.
    pub fn values(&self, data: &(impl Records + ?Sized)) -> Vec<f64> {
        let norms = data.row_norms();
        match *self {
            Statistic::RowNorm => norms.to_vec(),
            Statistic::LabelMagnitude => data.y().iter().map(|y| y.abs()).collect(),
            Statistic::GradientNorm(loss) => match loss.lipschitz() {
                Some(l) => norms.iter().map(|n| l * n).collect(),
                None => norms
                    .iter()
                    .zip(data.y())
                    .map(|(n, &y)| loss.deriv(0.0, y).abs() * n)
                    .collect(),
            },
        }
    }

    /// The quantile estimated: 0.99 for the bounds `X` and `Y` (rows and labels beyond it are
    /// clipped, so few should be); the median for a gradient clip, the target of adaptive
    /// clipping in Andrew, Thakkar, McMahan & Ramaswamy, *Differentially private learning with
    /// adaptive clipping* (NeurIPS 2021), as gradients shrink during training.
    pub fn quantile(&self) -> f64 {
        match self {
            Statistic::RowNorm | Statistic::LabelMagnitude => DEFAULT_QUANTILE,
            Statistic::GradientNorm(_) => CLIP_QUANTILE,
        }
    }

    /// A short description, for reports.
    pub fn describe(&self) -> &'static str {
        match self {
            Statistic::RowNorm => "row norms |x|",
            Statistic::LabelMagnitude => "label magnitudes |y|",
            Statistic::GradientNorm(_) => "per-example gradient norms",
        }
    }
}

/// What every AboveThreshold release's label ends with (its noise is drawn under this name).
const ABOVE_THRESHOLD: &str = "AboveThreshold";

/// The quantile estimated for `X` and `Y`: 0.99 of the records lie within the bound.
pub const DEFAULT_QUANTILE: f64 = 0.99;

/// The quantile estimated for a gradient clip (the median).
pub const CLIP_QUANTILE: f64 = 0.5;

/// The share of ε spent on estimated bounds by default (10%).
pub const DEFAULT_SHARE: f64 = 0.1;

/// The queries `f(c_k)` of the module docs for sorted `values` and quantile `p`.
fn queries(sorted: &[f64], p: f64, grid: &[f64]) -> Vec<f64> {
    let n = sorted.len() as f64;
    grid.iter()
        .map(|&c| {
            let below = sorted.partition_point(|&v| v <= c) as f64;
            (1.0 - p) * below - p * (n - below)
        })
        .collect()
}

/// AboveThreshold with threshold 0: the index of the first of `queries` whose noisy value
/// reaches the noisy threshold (`None` if none does), with grid-safe discrete Laplace noise
/// calibrated so that queries of sensitivity `sensitivity` give `epsilon`-DP; also returns the
/// ε achieved (`≤ epsilon`).
///
/// # Privacy
/// Dwork & Roth, *The algorithmic foundations of differential privacy*, Alg. 1 and
/// Thm 3.23, with ε split 1 : 2 between threshold and queries (Lyu, Su & Li 2017, Thm 2) so
/// that both noises have scale `3Δ/ε`, and the grid's rounding included by
/// [`dp_optim::laplace_for`] (module docs); pure ε-DP under the relation the queries'
/// sensitivity holds for, for any number of queries.
///
/// # Errors
/// Invalid ε or sensitivity; a query too large for the grid.
pub fn above_threshold<R: Rng + ?Sized>(
    queries: &[f64],
    sensitivity: f64,
    epsilon: f64,
    rng: &mut R,
) -> Result<(Option<usize>, f64)> {
    let (laplace, _, achieved) = laplace_for(3.0 * sensitivity, epsilon, 3)?;
    let mut threshold = ndarray::arr1(&[0.0]);
    laplace.add_to(ABOVE_THRESHOLD, rng, threshold.view_mut())?;
    // Queries clamped to ±2^50 grid steps (a 1-Lipschitz map: the sensitivity stays Δ) so
    // that they fit the grid's exact range whatever n is; at 2^26 noise scales from the
    // threshold the clamp changes no decision in practice.
    let cap = laplace.gamma() * 2f64.powi(50);
    for (k, &q) in queries.iter().enumerate() {
        let mut noisy = ndarray::arr1(&[q.clamp(-cap, cap)]);
        laplace.add_to(ABOVE_THRESHOLD, rng, noisy.view_mut())?;
        // Both sides are multiples of the grid: the comparison is exact.
        if noisy[0] >= threshold[0] {
            return Ok((Some(k), achieved));
        }
    }
    Ok((None, achieved))
}

/// The private `quantile` of `values` over [`candidates`], at `epsilon`: the estimate and the
/// ε achieved.
///
/// # Privacy
/// Pure ε-DP under add/remove and replace-one of one value (module docs, § Privacy: queries
/// of sensitivity 1; Dwork & Roth, Thm 3.23).
///
/// # Errors
/// A quantile outside `(0, 1)` or an ε that is not finite and positive
/// ([`Error::InvalidHyperParameter`]); as [`above_threshold`].
pub fn private_quantile<R: Rng + ?Sized>(
    values: &[f64],
    quantile: f64,
    epsilon: f64,
    rng: &mut R,
) -> Result<(f64, f64)> {
    quantile_on(values, quantile, epsilon, &candidates(), rng)
}

/// The private `quantile` of signed `values` over [`signed_candidates`], at `epsilon`: the
/// estimate and the ε achieved. A quantile `p ≥ 1/2` is estimated directly; one below `1/2`
/// as `−` the `(1 − p)` quantile of the negated values (the grid is symmetric), so that the
/// upward scan always meets `p·n ≥ n/2` records' worth of negative queries first and stops
/// early only by noise of that size.
///
/// # Privacy
/// As [`private_quantile`]: pure ε-DP under add/remove and replace-one of one value (queries
/// of sensitivity 1 on any fixed grid; negation is a fixed public map of each value;
/// Dwork & Roth, Thm 3.23).
///
/// # Errors
/// As [`private_quantile`].
pub fn private_quantile_signed<R: Rng + ?Sized>(
    values: &[f64],
    quantile: f64,
    epsilon: f64,
    rng: &mut R,
) -> Result<(f64, f64)> {
    let grid = signed_candidates();
    if quantile < 0.5 && quantile > 0.0 {
        let negated: Vec<f64> = values.iter().map(|v| -v).collect();
        let (q, eps) = quantile_on(&negated, 1.0 - quantile, epsilon, &grid, rng)?;
        Ok((-q, eps))
    } else {
        quantile_on(values, quantile, epsilon, &grid, rng)
    }
}

/// AboveThreshold for the `quantile` of `values` over the increasing public `grid`.
fn quantile_on<R: Rng + ?Sized>(
    values: &[f64],
    quantile: f64,
    epsilon: f64,
    grid: &[f64],
    rng: &mut R,
) -> Result<(f64, f64)> {
    if !(quantile > 0.0 && quantile < 1.0) {
        return Err(Error::InvalidHyperParameter {
            name: "quantile",
            value: quantile,
            reason: "must be in (0, 1)",
        });
    }
    let epsilon = crate::learners::positive("bounds_epsilon", epsilon)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (k, achieved) = above_threshold(&queries(&sorted, quantile, grid), 1.0, epsilon, rng)?;
    let last = grid.len() - 1;
    Ok((grid[k.unwrap_or(last)], achieved))
}

/// Where a bound came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BoundSource {
    /// Given by the user (a public value).
    Public,
    /// Implied by a public preprocessing step (e.g. unit-norm rows plus a bias).
    Preprocessing,
    /// Estimated privately: the `quantile` of `statistic` at cost `epsilon` (pure DP).
    Estimated {
        /// The statistic.
        statistic: Statistic,
        /// The quantile.
        quantile: f64,
        /// The ε this estimate cost (in the ledger).
        epsilon: f64,
    },
}

/// A bound a learner used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The learner's name for it (`x_bound`, `y_bound`, `clip`).
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Where it came from.
    pub source: BoundSource,
}

/// The bounds of one training run and the ledger of those estimated: public values are
/// recorded as such, estimates are paid from `share·ε` split evenly among them.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateBounds {
    epsilon: f64,
    delta: f64,
    share: f64,
    planned: usize,
    /// The estimates' ledger entries, their labels and the ε each cost (the row count
    /// apart).
    entries: Vec<(Mechanism, String, f64)>,
    bounds: Vec<Bound>,
    /// The private row count ([`PrivateBounds::count`]) and its ledger entry.
    count: Option<(usize, (Mechanism, String, f64))>,
    /// Whether the learner was calibrated against the whole ledger
    /// ([`PrivateBounds::learner_budget`]).
    joint: bool,
}

impl PrivateBounds {
    /// Bounds for a run with the user's target `(epsilon, delta)`, of which a fraction
    /// `share ∈ (0, 1)` of ε goes to `planned` private estimates (none: nothing is spent),
    /// each of its statistic's [`Statistic::quantile`].
    ///
    /// # Errors
    /// An invalid target ([`Error::Accounting`]) or a share outside `(0, 1)`
    /// ([`Error::InvalidHyperParameter`] naming `bounds_budget`).
    pub fn new(epsilon: f64, delta: f64, share: f64, planned: usize) -> Result<Self> {
        dp_accounting::Target::new(epsilon, delta)?;
        if !(share > 0.0 && share < 1.0) {
            return Err(Error::InvalidHyperParameter {
                name: "bounds_budget",
                value: share,
                reason: "must be in (0, 1): the fraction of epsilon spent on estimated bounds",
            });
        }
        Ok(Self {
            epsilon,
            delta,
            share: if planned == 0 { 0.0 } else { share },
            planned,
            entries: Vec::new(),
            bounds: Vec::new(),
            count: None,
            joint: false,
        })
    }

    /// Records the private row count `count` in the ledger (its pure-DP event first in the
    /// fit's tree) and returns its value `n̂`, which the learner then reads as its number of
    /// rows. The learner's ε ([`PrivateBounds::learner_epsilon`]) is reduced by its cost.
    ///
    /// # Privacy
    /// One pure-DP entry of [`PrivateCount::epsilon`] under add/remove
    /// ([`crate::row_count`]), composed with the rest of the fit by
    /// [`PrivateBounds::compose`].
    ///
    /// # Errors
    /// A second count ([`Error::Privacy`]); a share of estimates that leaves the learner no ε
    /// after the count ([`Error::InvalidHyperParameter`] naming `bounds_budget`).
    pub fn count(&mut self, count: PrivateCount) -> Result<usize> {
        if self.count.is_some() {
            return Err(Error::Privacy("the rows were already counted".into()));
        }
        let (n, epsilon) = (count.value(), count.epsilon());
        if self.epsilon * (1.0 - self.share) - epsilon <= 0.0 {
            return Err(Error::InvalidHyperParameter {
                name: "bounds_budget",
                value: self.share,
                reason: "leaves the learner no epsilon once the private row count is paid: \
                         give a smaller share, or a public number of rows n",
            });
        }
        let label = format!("{COUNT_LABEL}, released n = {n}");
        self.count = Some((n, (Mechanism::pure_dp(epsilon)?, label, epsilon)));
        Ok(n)
    }

    /// The user's target ε (for the whole fit).
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Every estimate's ledger entry, its label and its ε: the row count's first.
    fn released(&self) -> Vec<(Mechanism, String, f64)> {
        self.count
            .iter()
            .map(|c| c.1.clone())
            .chain(self.entries.iter().cloned())
            .collect()
    }

    /// The private row count `n̂` and its ε, when the rows were counted.
    pub fn counted(&self) -> Option<(usize, f64)> {
        self.count.as_ref().map(|(n, entry)| (*n, entry.2))
    }

    /// The learner's `budget` with its ε set for this run: with `joint` (a learner whose
    /// calibration composes with a [`Prior`]) and estimates made, the whole target and the
    /// estimates as its prior, so that its noise is calibrated against the whole ledger;
    /// otherwise [`PrivateBounds::learner_epsilon`] and no prior.
    ///
    /// # Privacy
    /// The prior is `k` pure-DP mechanisms of the largest ε an estimate achieved, which
    /// dominates the `k` estimates, and the row count's pure-DP mechanism at its own ε (each ε-DP mechanism is a post-processing of randomised
    /// response at its ε; Kairouz, Oh & Viswanath 2015, Thm 2.2). The total is priced again
    /// by [`PrivateBounds::compose`].
    pub fn learner_budget(&mut self, budget: Budget, joint: bool) -> Budget {
        let most = self.entries.iter().map(|e| e.2).fold(0.0, f64::max);
        self.joint = joint && !self.released().is_empty();
        if self.joint {
            Budget {
                epsilon: self.epsilon,
                prior: Prior {
                    count: self.entries.len() as u64,
                    epsilon: most,
                    one: self.counted().map(|c| c.1),
                },
                ..budget
            }
        } else {
            Budget {
                epsilon: self.learner_epsilon(),
                prior: Prior::default(),
                ..budget
            }
        }
    }

    /// The ε the learner is calibrated for: the target less the bounds' share (the whole
    /// target when no estimate is planned) and less the row count's ε.
    pub fn learner_epsilon(&self) -> f64 {
        self.epsilon * (1.0 - self.share) - self.counted().map_or(0.0, |c| c.1)
    }

    /// Records a public bound (given by the user, or implied by public preprocessing when
    /// `from_preprocessing`) and returns it.
    pub fn public(&mut self, name: &'static str, value: f64, from_preprocessing: bool) -> f64 {
        let source = if from_preprocessing {
            BoundSource::Preprocessing
        } else {
            BoundSource::Public
        };
        self.bounds.push(Bound {
            name,
            value,
            source,
        });
        value
    }

    /// Estimates the bound `name` as the private quantile of `statistic` on `data`, records
    /// it for the ledger, and returns it.
    ///
    /// # Privacy
    /// One pure-DP entry, [`private_quantile`] (Dwork & Roth, Thm 3.23), at most
    /// `share·ε/planned`, under both relations.
    ///
    /// # Errors
    /// More estimates than planned in [`PrivateBounds::new`] ([`Error::Privacy`]); as
    /// [`private_quantile`].
    pub fn estimate<R: Rng + ?Sized>(
        &mut self,
        name: &'static str,
        statistic: Statistic,
        data: &(impl Records + ?Sized),
        rng: &mut R,
    ) -> Result<f64> {
        if self.entries.len() >= self.planned {
            return Err(Error::Privacy(format!(
                "estimating {name} was not planned in the bounds' budget"
            )));
        }
        let each = self.each();
        let values = statistic.values(data);
        let (value, epsilon) = private_quantile(&values, statistic.quantile(), each, rng)?;
        self.record(
            epsilon,
            format!(
                "{name}: private {} quantile of {} ({ABOVE_THRESHOLD})",
                statistic.quantile(),
                statistic.describe()
            ),
        )?;
        self.bounds.push(Bound {
            name,
            value,
            source: BoundSource::Estimated {
                statistic,
                quantile: statistic.quantile(),
                epsilon,
            },
        });
        Ok(value)
    }

    /// The ε of one planned estimate: `share·ε/planned`.
    fn each(&self) -> f64 {
        self.share * self.epsilon / self.planned as f64
    }

    /// Records one estimate's pure-DP ledger entry.
    fn record(&mut self, epsilon: f64, label: String) -> Result<()> {
        self.entries
            .push((Mechanism::pure_dp(epsilon)?, label, epsilon));
        Ok(())
    }

    /// Estimates the range of one feature, `feature` naming it in the ledger: the private
    /// `1 − quantile` and `quantile` quantiles of its `values` over [`signed_candidates`]
    /// (two planned estimates); returns `(low, high, ε of both)`. Noise may put `high` at or
    /// below `low`; the caller decides what that means.
    ///
    /// # Privacy
    /// Two pure-DP entries, [`private_quantile_signed`] (Dwork & Roth, Thm 3.23), each at
    /// most `share·ε/planned`, under both relations; one record moves one value of the
    /// feature.
    ///
    /// # Errors
    /// Fewer than two estimates left of those planned ([`Error::Privacy`]); as
    /// [`private_quantile_signed`].
    pub fn estimate_range<R: Rng + ?Sized>(
        &mut self,
        feature: &str,
        values: &[f64],
        quantile: f64,
        rng: &mut R,
    ) -> Result<(f64, f64, f64)> {
        if self.entries.len() + 2 > self.planned {
            return Err(Error::Privacy(format!(
                "estimating the range of {feature} was not planned in the bounds' budget"
            )));
        }
        let each = self.each();
        let mut spent = 0.0;
        let mut ends = [0.0; 2];
        for (end, p) in ends.iter_mut().zip([1.0 - quantile, quantile]) {
            let (value, epsilon) = private_quantile_signed(values, p, each, rng)?;
            self.record(
                epsilon,
                format!("scaling of {feature}: private {p} quantile ({ABOVE_THRESHOLD})"),
            )?;
            *end = value;
            spent += epsilon;
        }
        Ok((ends[0], ends[1], spent))
    }

    /// The bounds recorded so far, in order.
    pub fn bounds(&self) -> &[Bound] {
        &self.bounds
    }

    /// The model with a report for the whole run: the event tree of the bounds' estimates
    /// followed by the learner's, priced against the user's target (unchanged when nothing
    /// was estimated).
    ///
    /// # Privacy
    /// [`PrivacyReport::priced`] on the composed tree, with the learner's accountant under the
    /// learner's relation (the estimates are pure DP under both): the smaller of the
    /// accountant on every mechanism (where the learner's tree is a plain composition), the
    /// sum of Rényi curves, and basic composition (Dwork & Roth, Thm 3.16), as
    /// [`dp_accounting::price`] decides. Checked `≤` the target.
    ///
    /// # Errors
    /// The learner's δ exceeds the target's, or the total exceeds the target
    /// ([`Error::Privacy`]); accountant errors.
    pub fn compose(&self, model: LinearModel) -> Result<LinearModel> {
        let released = self.released();
        if released.is_empty() {
            return Ok(model);
        }
        let inner = model.privacy();
        if inner.delta.is_nan() || inner.delta > self.delta {
            return Err(Error::Privacy(format!(
                "the learner spent delta = {} > target {}",
                inner.delta, self.delta
            )));
        }
        let mut ledger = Ledger::new(inner.neighbouring);
        for (m, label, _) in released {
            ledger.record(m, 1, &label);
        }
        let event = PrivacyEvent::from(ledger).then(inner.event.clone())?;
        let estimates = self.entries.len();
        let bounds: f64 = self.entries.iter().map(|e| e.2).sum();
        let mut notes = inner.notes.clone();
        if let Some((n, epsilon)) = self.counted() {
            let given = crate::learners::given_rows(n);
            let counted = format!(
                "the number of rows n = {n}, {PRIVATE_COUNT} (discrete Laplace, epsilon {} in \
                 the total)",
                text_up(epsilon, 6)
            );
            for note in &mut notes {
                *note = note.replace(&given, &counted);
            }
        }
        notes.extend((estimates > 0).then(|| if self.joint {
            format!(
                "{} private estimate(s) of bounds and feature ranges, epsilon {} in all by basic \
                 composition; the learner's noise was calibrated so that they and its own \
                 mechanisms together meet the target",
                estimates,
                bounds
            )
        } else {
            format!(
                "{}% of epsilon spent on {} private estimate(s) of bounds and feature ranges; \
                 the learner was calibrated for the remaining {}",
                100.0 * self.share,
                estimates,
                self.learner_epsilon()
            )
        }));
        let report = PrivacyReport::priced(
            (self.epsilon, self.delta),
            inner.accountant,
            event,
            inner.noise.clone(),
            notes,
        )?;
        // The same model (its coefficients and fitted steps) with the whole run's report.
        let mut model = model;
        *model.privacy_mut() = report;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::{Budget, Ssp};
    use dp_accounting::{AccountantKind, Neighbouring};
    use dp_optim::seeded_rng;
    use ndarray::{Array1, Array2};
    use proptest::prelude::*;

    /// A bounds share that leaves nothing once the row count is paid is refused by name,
    /// before the learner sees a negative ε; a usual share leaves ε(1 − share) − ε_count.
    #[test]
    fn the_row_count_must_leave_the_learner_some_epsilon() {
        let count = |seed| {
            crate::row_count::PrivateCount::estimate(1000, 1.0, &mut seeded_rng(seed)).unwrap()
        };
        let mut b = PrivateBounds::new(1.0, 1e-5, 0.97, 1).unwrap();
        let e = b.count(count(1)).unwrap_err();
        assert!(e.to_string().contains("bounds_budget"), "{e}");
        let mut b = PrivateBounds::new(1.0, 1e-5, 0.1, 1).unwrap();
        let c = count(1);
        let spent = c.epsilon();
        b.count(c).unwrap();
        assert_eq!(b.learner_epsilon(), 0.9 - spent);
        assert!(b.count(count(2)).is_err(), "counted twice");
    }
    use rand_distr::{Distribution, StandardNormal};

    fn normals(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = seeded_rng(seed);
        (0..n)
            .map(|_| StandardNormal.sample(&mut rng))
            .collect::<Vec<f64>>()
    }

    proptest! {
        /// Adding, removing or replacing one value moves every query by at most 1 (the
        /// sensitivity the privacy proof uses); the queries are non-decreasing along the grid.
        #[test]
        fn queries_move_by_at_most_one(
            values in prop::collection::vec(0.0f64..100.0, 1..40),
            extra in 0.0f64..100.0,
            p in 0.01f64..0.99,
            which in 0usize..40,
        ) {
            let grid = candidates();
            let sorted = |mut v: Vec<f64>| { v.sort_by(f64::total_cmp); v };
            let base = queries(&sorted(values.clone()), p, &grid);
            prop_assert!(base.windows(2).all(|w| w[0] <= w[1]));
            let mut added = values.clone();
            added.push(extra);
            let mut replaced = values.clone();
            let i = which % values.len();
            replaced[i] = extra;
            let mut removed = values.clone();
            removed.remove(i);
            for other in [added, replaced, removed] {
                let s = queries(&sorted(other), p, &grid);
                let worst = s.iter().zip(&base).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                prop_assert!(worst <= 1.0 + 1e-9, "moved by {worst}");
            }
        }
    }

    /// The law of AboveThreshold on one query `q`: it stops at 0 iff `q + ν ≥ ρ`, i.e.
    /// `ρ − ν ≤ q`, and for independent Laplace(b) noises `P[ρ − ν ≤ q] =
    /// 1 − ½e^{−q/b}(1 + q/(2b))` for `q ≥ 0` (by symmetry `½e^{−|q|/b}(1 + |q|/(2b))` below 0).
    /// The discrete noise on the grid `γ ≈ b·2^-24` differs from it by O(2^-24). 20,000 draws
    /// per query, checked within 5 binomial standard deviations: false-failure rate below
    /// 6e-7 per query (3e-6 in all).
    #[test]
    fn above_threshold_has_the_laplace_law() {
        let epsilon = 0.5;
        let (_, b, achieved) = laplace_for(3.0, epsilon, 3).unwrap();
        assert!(
            achieved <= epsilon && achieved > 0.99 * epsilon,
            "{achieved}"
        );
        assert!((b - 3.0 / epsilon).abs() < 1e-5 * b, "{b}");
        let mut rng = seeded_rng(11);
        let trials = 20_000;
        for q in [-2.0 * b, -0.5 * b, 0.0, b, 3.0 * b] {
            let mut stopped = 0usize;
            for _ in 0..trials {
                let (k, eps) = above_threshold(&[q], 1.0, epsilon, &mut rng).unwrap();
                assert_eq!(eps, achieved);
                stopped += usize::from(k == Some(0));
            }
            let tail = 0.5 * (-q.abs() / b).exp() * (1.0 + q.abs() / (2.0 * b));
            let want = if q >= 0.0 { 1.0 - tail } else { tail };
            let got = stopped as f64 / trials as f64;
            let sd = (want * (1.0 - want) / trials as f64).sqrt();
            assert!((got - want).abs() <= 5.0 * sd, "q = {q}: {got} vs {want}");
        }
    }

    /// The 0.99 quantile of |N(0, 1)| is 2.576. With n = 50,000 and ε = 0.05 (noise scale 60
    /// records, 0.12% of n) the estimate stays near it: q(0.98) = 2.326 and q(0.999) = 3.29,
    /// widened by the grid step 2^(1/8). Measured when this test was written: over 500 other
    /// seeds every estimate was in [2.59, 3.08] (false-failure rate estimated below 0.2%;
    /// the 20 seeds here are fixed).
    #[test]
    fn the_quantile_is_accurate() {
        let values: Vec<f64> = normals(50_000, 3).iter().map(|v| v.abs()).collect();
        let step = (1.0f64 / PER_OCTAVE).exp2();
        for seed in 0..20 {
            let (q, eps) = private_quantile(&values, 0.99, 0.05, &mut seeded_rng(seed)).unwrap();
            assert!(eps <= 0.05);
            assert!(q >= 2.326 / step && q <= 3.29 * step, "seed {seed}: {q}");
            assert!(candidates().contains(&q));
        }
        // Values outside the grid land on its ends.
        let (lo, _) = private_quantile(&[0.0; 1000], 0.5, 1.0, &mut seeded_rng(1)).unwrap();
        assert_eq!(lo, candidates()[0]);
        let (hi, _) = private_quantile(&[1e12; 1000], 0.5, 1.0, &mut seeded_rng(1)).unwrap();
        assert_eq!(hi, *candidates().last().unwrap());
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut rng = seeded_rng(0);
        for p in [0.0, 1.0, f64::NAN] {
            let e = private_quantile(&[1.0], p, 1.0, &mut rng).unwrap_err();
            assert!(matches!(
                e,
                Error::InvalidHyperParameter {
                    name: "quantile",
                    ..
                }
            ));
        }
        for share in [0.0, 1.0, -0.1, f64::NAN] {
            let e = PrivateBounds::new(1.0, 1e-5, share, 1).unwrap_err();
            assert!(matches!(
                e,
                Error::InvalidHyperParameter {
                    name: "bounds_budget",
                    ..
                }
            ));
        }
        assert!(PrivateBounds::new(0.0, 1e-5, 0.1, 1).is_err());
        let data = Dataset::new(Array2::ones((3, 2)), ndarray::arr1(&[1.0, 2.0, 3.0])).unwrap();
        let mut b = PrivateBounds::new(1.0, 1e-5, 0.1, 1).unwrap();
        b.estimate("x_bound", Statistic::RowNorm, &data, &mut rng)
            .unwrap();
        let e = b.estimate("y_bound", Statistic::LabelMagnitude, &data, &mut rng);
        assert!(matches!(e, Err(Error::Privacy(_))), "{e:?}");
    }

    #[test]
    fn statistics_are_the_documented_ones() {
        let x = ndarray::arr2(&[[3.0, 4.0], [0.0, 1.0]]);
        let data = Dataset::new(x, ndarray::arr1(&[-2.0, 0.5])).unwrap();
        assert_eq!(Statistic::RowNorm.values(&data), vec![5.0, 1.0]);
        assert_eq!(Statistic::LabelMagnitude.values(&data), vec![2.0, 0.5]);
        // Squared loss: |φ'(0, y)|·‖x‖ = |y|·‖x‖; Huber: h·‖x‖.
        let sq = Statistic::GradientNorm(Loss::Squared).values(&data);
        assert_eq!(sq, vec![10.0, 0.5]);
        let hub = Statistic::GradientNorm(Loss::huber(0.5).unwrap()).values(&data);
        assert_eq!(hub, vec![2.5, 0.5]);
    }

    /// y = ⟨x, w⟩ + N(0, 1), x ~ N(0, I_d), ‖w‖ = 1.
    fn regression(n: usize, d: usize, seed: u64) -> Dataset {
        let z = normals(n * (d + 1), seed);
        let x = Array2::from_shape_vec((n, d), z[..n * d].to_vec()).unwrap();
        let w = Array1::from_elem(d, 1.0 / (d as f64).sqrt());
        let y = x.dot(&w) + Array1::from(z[n * d..].to_vec());
        Dataset::new(x, y).unwrap()
    }

    /// The whole run is priced against the user's target: the learner gets 90% of ε, the
    /// ledger holds the two estimates and the learner's releases, and the total is ≤ 1. Under
    /// the exact accountant (which prices no pure-DP + Gaussian composition) the total is the
    /// basic composition; under PLD and RDP the accountant's.
    #[test]
    fn estimates_compose_with_the_learner_within_the_target() {
        let data = regression(2_000, 5, 1);
        for (kind, rel) in [
            (AccountantKind::Exact, Neighbouring::AddRemove),
            (AccountantKind::Pld, Neighbouring::AddRemove),
            (AccountantKind::Rdp, Neighbouring::ReplaceOne),
        ] {
            let mut rng = seeded_rng(5);
            let mut b = PrivateBounds::new(1.0, 1e-5, 0.1, 2).unwrap();
            assert!((b.learner_epsilon() - 0.9).abs() < 1e-12);
            let x = b
                .estimate("x_bound", Statistic::RowNorm, &data, &mut rng)
                .unwrap();
            let y = b
                .estimate("y_bound", Statistic::LabelMagnitude, &data, &mut rng)
                .unwrap();
            // 0.99 quantiles: ‖x‖ for d = 5 ≈ 3.9, |y| with var 2 ≈ 3.6.
            assert!((2.8..5.5).contains(&x), "{x}");
            assert!((2.5..5.5).contains(&y), "{y}");
            let mut l = Ssp::new(x, y);
            l.budget = Budget::new(b.learner_epsilon(), 1e-5, kind, rel);
            let inner = l.fit(&data, &mut rng).unwrap();
            let inner_eps = inner.privacy().epsilon;
            assert!(inner_eps <= 0.9 + 1e-12);
            let model = b.compose(inner).unwrap();
            let r = model.privacy();
            assert_eq!(r.target, (1.0, 1e-5));
            assert_eq!(r.event.neighbouring(), rel);
            assert_eq!(r.event.releases().len(), 5, "{:?}", r.event);
            assert!(r.event.releases()[0].label.starts_with("x_bound"));
            assert!(
                r.epsilon <= 1.0 && r.epsilon > inner_eps,
                "{kind:?}: {}",
                r.epsilon
            );
            let basic = r.notes.iter().any(|n| n.contains("basic-composition"));
            assert_eq!(basic, kind == AccountantKind::Exact, "{:?}", r.notes);
            assert_eq!(b.bounds().len(), 2);
            assert!(matches!(
                b.bounds()[1].source,
                BoundSource::Estimated { epsilon, .. } if epsilon <= 0.05
            ));
        }
    }

    #[test]
    fn nothing_estimated_spends_nothing() {
        let data = regression(200, 3, 2);
        let mut b = PrivateBounds::new(1.0, 1e-5, 0.1, 0).unwrap();
        assert_eq!(b.learner_epsilon(), 1.0);
        assert_eq!(b.public("x_bound", 4.0, false), 4.0);
        assert_eq!(b.public("y_bound", 2.0, true), 2.0);
        let model = Ssp::new(4.0, 2.0).fit(&data, &mut seeded_rng(1)).unwrap();
        let composed = b.compose(model.clone()).unwrap();
        assert_eq!(composed, model);
        assert_eq!(b.bounds()[1].source, BoundSource::Preprocessing);
    }
}
