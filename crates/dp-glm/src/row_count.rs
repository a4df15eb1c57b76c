//! A private count of the training rows, for fits under add/remove that read the number of
//! rows `n` and were not given a public one.
//!
//! Under add/remove, neighbouring datasets differ in their number of rows, so `n` is
//! private. Many learners read it: DP-SGD's sampling rate `q = b/n`, the `1/n` scalings of
//! DP-GD, noisy projected GD and objective perturbation, output perturbation's sensitivity,
//! the grid of a grid-safe release. A model whose report holds `q = b/n` tells `n` exactly.
//! When the user gives no public `n`, the pipeline releases a noisy count `n̂` first and every
//! learner sizes its release for `n̂` (as for a public `n`); the count is an event of the
//! model's tree, paid from [`COUNT_SHARE`] of the target ε.
//!
//! # Privacy
//! *Neighbouring relation*: add/remove of one record. Adding or removing a record moves the
//! count by exactly 1 (sensitivity `Δ = 1`). The count is released by the grid-safe discrete
//! Laplace of [`dp_optim::laplace_for`] (sensitivity 1, one coordinate), pure
//! `(1 + γ)/b`-DP with `γ` its grid (the noise module docs of `dp_optim`), recorded as a
//! pure-DP event of that ε (Dwork & Roth, *The algorithmic foundations of differential
//! privacy*, 2014, the Laplace mechanism, Thm 3.6). Rounding to an integer and the floor at 1
//! are post-processing. A learner given `n̂` is private for every value of `n̂`: it treats it
//! as a public number, exactly as a user's `n` (each learner's docs), so the fit is the
//! composition of the count and the learner.

use dp_optim::laplace_for;
use rand::Rng;

use crate::error::{Error, Result};

/// The share of the target ε a private row count costs (5%). At ε = 1 the count's noise has
/// scale 20 rows (standard deviation ≈ 28): a 1% error in `n` at 2,800 rows, which moves
/// DP-SGD's rate and the learners' `1/n` scalings by 1%; at ε = 0.5 on 300 rows (scale 40)
/// the count is off by more than 100 rows once in 25 fits, against once in 12 at 2%.
pub const COUNT_SHARE: f64 = 0.05;

/// The label of the count's release (in the tree, followed by the released value).
pub(crate) const COUNT_LABEL: &str = "n: private row count (discrete Laplace)";

/// How a report's notes name a privately counted `n` (the notes the statement does not list
/// as public).
pub(crate) const PRIVATE_COUNT: &str = "a private count";

/// A released private row count: the noisy number of rows and the ε it cost.
///
/// It is made only by [`PrivateCount::estimate`] and consumed by
/// [`PrivateBounds::count`](crate::bounds::PrivateBounds::count), which records its event in
/// the fit's tree.
#[derive(Debug, PartialEq)]
#[must_use = "a count's event must be recorded with PrivateBounds::count"]
pub struct PrivateCount {
    value: usize,
    epsilon: f64,
}

impl PrivateCount {
    /// The count of `rows` records released at [`COUNT_SHARE`] of the target `epsilon`:
    /// `max(1, round(rows + Z))` with `Z` discrete Laplace noise on the grid.
    ///
    /// # Privacy
    /// Pure ε-DP under add/remove, with ε (the value [`PrivateCount::epsilon`] reports) at
    /// most `COUNT_SHARE·epsilon` (module docs).
    ///
    /// # Errors
    /// An ε that is not finite and positive ([`Error::Optim`]); an ε so small that the
    /// count's noise is beyond the grid ([`Error::InvalidHyperParameter`] naming `epsilon`).
    pub fn estimate<R: Rng + ?Sized>(rows: usize, epsilon: f64, rng: &mut R) -> Result<Self> {
        let (laplace, _, achieved) =
            laplace_for(1.0, COUNT_SHARE * epsilon, 1).map_err(|e| match e {
                dp_optim::Error::InvalidParameter { .. }
                    if epsilon.is_finite() && epsilon > 0.0 =>
                {
                    Error::InvalidHyperParameter {
                        name: "epsilon",
                        value: epsilon,
                        reason: "too small to count the rows privately (the count's noise is \
                                 beyond the grid); give a public number of rows n",
                    }
                }
                e => e.into(),
            })?;
        let mut noisy = ndarray::arr1(&[rows as f64]);
        laplace.add_to(COUNT_LABEL, rng, noisy.view_mut())?;
        // Post-processing: a whole number of rows, at least one (the cast saturates).
        let value = noisy[0].round().max(1.0) as usize;
        Ok(Self {
            value,
            epsilon: achieved,
        })
    }

    /// The released count `n̂ ≥ 1`.
    pub fn value(&self) -> usize {
        self.value
    }

    /// The ε the release cost.
    ///
    /// # Privacy
    /// The pure-DP ε of the discrete Laplace release (module docs), rounding slack included.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_optim::seeded_rng;

    /// The noisy count is unbiased around the true count with the Laplace spread of its
    /// scale `1/(COUNT_SHARE·ε)`: mean within 4 standard errors, mean absolute deviation
    /// within 10% of the scale (a Laplace variable's `E|Z|` is its scale), and ε at most the
    /// share.
    #[test]
    fn the_count_is_laplace_around_the_true_count() {
        let mut rng = seeded_rng(11);
        let (rows, epsilon, runs) = (10_000usize, 1.0, 4000);
        let scale = 1.0 / (COUNT_SHARE * epsilon);
        let draws: Vec<f64> = (0..runs)
            .map(|_| {
                let c = PrivateCount::estimate(rows, epsilon, &mut rng).unwrap();
                assert!(c.epsilon() <= COUNT_SHARE * epsilon * (1.0 + 1e-12));
                assert!(c.epsilon() > 0.9 * COUNT_SHARE * epsilon, "{}", c.epsilon());
                c.value() as f64 - rows as f64
            })
            .collect();
        let mean = draws.iter().sum::<f64>() / runs as f64;
        let sd = (2.0f64).sqrt() * scale;
        assert!(mean.abs() < 4.0 * sd / (runs as f64).sqrt(), "mean {mean}");
        let mad = draws.iter().map(|z| z.abs()).sum::<f64>() / runs as f64;
        assert!((mad - scale).abs() < 0.1 * scale, "E|Z| {mad} vs {scale}");
    }

    /// A count far below its noise is floored at one row, never zero or negative.
    #[test]
    fn a_tiny_count_is_at_least_one() {
        let mut rng = seeded_rng(3);
        let values: Vec<usize> = (0..200)
            .map(|_| PrivateCount::estimate(1, 0.01, &mut rng).unwrap().value())
            .collect();
        assert!(values.iter().all(|&v| v >= 1));
        assert!(values.contains(&1));
        assert!(values.iter().any(|&v| v > 100));
    }

    #[test]
    fn an_invalid_epsilon_is_refused() {
        let mut rng = seeded_rng(1);
        assert!(PrivateCount::estimate(10, 0.0, &mut rng).is_err());
        assert!(PrivateCount::estimate(10, f64::NAN, &mut rng).is_err());
    }
}
