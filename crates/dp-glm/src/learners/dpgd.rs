//! DP-GD (paper 000, Alg. 1): full-batch gradient descent on clipped per-example gradients
//! with Gaussian noise, optional projection, averaged or last iterate.

use dp_accounting::{AccountantKind, Mechanism, Neighbouring};
use dp_optim::{
    Averaging, ClippedSum, L2Ball, L2Regulariser, NoisyGd, Observer, Projection, StepSize,
    Unconstrained, sum_noise_multiplier,
};
use ndarray::Array1;
use rand::Rng;

use super::{
    Budget, PublicCount, calibrate, check_steps, ledger_of, positive, report, row_count, rows_note,
};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::streamed::{BlockSource, StreamedSum};
use crate::sufficient::StreamError;

/// Differentially private full-batch gradient descent (paper 000, Alg. 1).
///
/// `θ_{t+1} = Π_C(θ_t − η(g_t + λθ_t))`, `g_t = (Σ_i clip_B(∇ℓ_i(θ_t)) + N(0, σ²B²I))/n`.
///
/// # Privacy
/// `T` Gaussian mechanisms on a sum of per-example gradients clipped to norm `B` (the clip is
/// enforced for any input, so the guarantee holds whatever the data): sensitivity `B` under
/// add/remove, `2B` under replace-one (MATH §5). They compose exactly into one
/// Gaussian (MATH §2), so the default accountant is `exact`. σ is calibrated to the target
/// before the data is read; the ledger is priced again after the run.
#[derive(Debug, Clone, PartialEq)]
pub struct DpGd {
    /// The loss.
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, exact accountant, replace-one (as paper 000).
    pub budget: Budget,
    /// Clipping norm `B` (default 1).
    pub clip: f64,
    /// Number of steps `T` (default 100).
    pub steps: usize,
    /// Step size η (default 1).
    pub learning_rate: f64,
    /// Ridge penalty λ (default 0; it reads no data, so it costs no privacy).
    pub lambda: f64,
    /// Radius of the constraint ball (default none: unconstrained).
    pub radius: Option<f64>,
    /// Returned iterate (default the uniform average, as paper 000).
    pub averaging: Averaging,
    /// The number of rows as a public value (default `None`: the data's count, treated as
    /// public). Under add/remove the true `n` is private; with `public_n` the noisy sum is
    /// divided by it and the grid of the grid-safe release sized for it.
    pub public_n: Option<usize>,
}

impl DpGd {
    /// DP-GD with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Exact, Neighbouring::ReplaceOne),
            clip: 1.0,
            steps: 100,
            learning_rate: 1.0,
            lambda: 0.0,
            radius: None,
            averaging: Averaging::Uniform,
            public_n: None,
        }
    }

    budget_setter!();

    /// Fits the model.
    ///
    /// # Errors
    /// Invalid hyper-parameters or budget, labels outside the loss's domain, an accountant
    /// that cannot analyse the Gaussian under the relation, or a non-finite result;
    /// [`Error::ResourceLimit`] for more than [`MAX_STEPS`](super::MAX_STEPS) steps.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        self.fit_with_observer(data, rng, None)
    }

    /// [`DpGd::fit`], showing every optimiser step to `observer` (post-processing of the
    /// released noisy gradients; a progress display).
    ///
    /// # Errors
    /// As [`DpGd::fit`].
    pub fn fit_with_observer<R: Rng + ?Sized>(
        &self,
        data: &Dataset,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LinearModel> {
        self.fit_rows(data, rng, observer)
    }

    /// [`DpGd::fit`] on data read block by block: `open()` yields the blocks anew for each
    /// pass (one pass counts and checks the rows, then one per step;
    /// [`crate::streamed::StreamedSum`]), memory `O(d)` plus one block. The exact clipped
    /// sums do not depend on the blocks, so the model is bit-identical to [`DpGd::fit`]'s on
    /// the same rows with the same `rng`.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`StreamError::Fit`] as
    /// [`DpGd::fit`] and [`crate::streamed::StreamedSum::new`].
    pub fn fit_blocks<R, S>(
        &self,
        source: S,
        rng: &mut R,
    ) -> std::result::Result<LinearModel, StreamError<S::Error>>
    where
        R: Rng + ?Sized,
        S: BlockSource,
    {
        self.check()?;
        StreamedSum::new(source, self.loss, self.public_n)?.fit_with(|sum| self.run(sum, rng, None))
    }

    sparse_fits! {
        DpGd, fn fit_sparse,
        ": each pass costs `O(nnz + d)`, and the exact clipped sums equal the dense ones";

        /// [`DpGd::fit_with_observer`] on dense or sparse rows: the hyper-parameters and labels
        /// checked, the noisy descent on the mean objective, its `n` the public row count.
        fn fit_rows(&self, data, rng, observer) {
            self.check()?;
            data.check_labels(&self.loss)?;
            let glm = data.mean_objective(self.loss)?;
            let n = row_count(self.public_n, data.n_samples())?;
            self.run(&PublicCount { inner: &glm, n }, rng, observer)
        }
    }

    /// Checks the hyper-parameters.
    fn check(&self) -> Result<()> {
        positive("clip", self.clip)?;
        positive("learning_rate", self.learning_rate)?;
        if self.steps == 0 {
            return Err(Error::InvalidHyperParameter {
                name: "steps",
                value: 0.0,
                reason: "must be >= 1",
            });
        }
        if !(self.lambda.is_finite() && self.lambda >= 0.0) {
            return Err(Error::InvalidHyperParameter {
                name: "lambda",
                value: self.lambda,
                reason: "must be finite and >= 0",
            });
        }
        if let Some(r) = self.radius {
            positive("radius", r)?;
        }
        check_steps("steps", self.steps as f64, self.steps as f64)
    }

    /// The noisy descent on `objective` (its `n` the public count) and the report.
    fn run<S, R>(
        &self,
        objective: &S,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LinearModel>
    where
        S: ClippedSum + ?Sized,
        R: Rng + ?Sized,
    {
        let (clip, eta) = (self.clip, self.learning_rate);
        let steps = self.steps as u64;
        let d = objective.dim();
        let sigma = full_batch_sigma(&self.budget, steps, clip, d)?;
        let gd = NoisyGd::new(
            StepSize::Constant(eta),
            self.steps,
            clip,
            sigma,
            self.budget.neighbouring,
        )
        .averaging(self.averaging);
        let reg = L2Regulariser {
            lambda: self.lambda,
        };
        let x0 = Array1::zeros(d);
        let proj: Box<dyn Projection> = match self.radius {
            Some(radius) => Box::new(L2Ball { radius }),
            None => Box::new(Unconstrained),
        };
        let sol = gd.minimize(objective, &reg, proj.as_ref(), x0.view(), rng, observer)?;
        let ledger = ledger_of(sol.ledger)?;
        let noise = vec![
            ("noise_multiplier".to_string(), sigma),
            ("clip".to_string(), clip),
            ("steps".to_string(), self.steps as f64),
        ];
        let notes = rows_note(
            self.budget.neighbouring,
            self.public_n,
            "the noisy gradient sum is divided by n",
        );
        let report = report(&self.budget, ledger, noise, notes.into_iter().collect())?;
        LinearModel::new(sol.x, 0.0, self.loss, report)
    }
}

/// The noise multiplier of `steps` Gaussian releases of a full-batch sum of gradients
/// clipped to `clip` in `dim` dimensions, calibrated to `budget` (a per-record bound of 1:
/// the ratio is all that matters). Calibrated on the multiplier the grid-safe release is
/// private as (dp_optim's noise docs): the quantisation's slack is in the ledger
/// [`NoisyGd`] records.
///
/// # Errors
/// As [`calibrate`].
pub(super) fn full_batch_sigma(budget: &Budget, steps: u64, clip: f64, dim: usize) -> Result<f64> {
    calibrate(budget, steps, |s| {
        let (z, grid) = sum_noise_multiplier(s, clip, dim)?;
        Ok(Mechanism::gaussian(z, 1.0)?.with_grid(grid))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::separable;
    use ndarray::array;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn spends_at_most_the_target_and_reports_everything() {
        let data = separable(2000);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let m = DpGd::new(Loss::Logistic)
            .budget(1.0, 1e-5)
            .fit(&data, &mut rng)
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.99, "{}", r.epsilon);
        assert_eq!(r.event.releases()[0].count, 100);
        assert_eq!(r.neighbouring, Neighbouring::ReplaceOne);
        let acc = m.predict(data.x().view()).unwrap();
        let right = acc.iter().zip(data.y()).filter(|(p, y)| *p == *y).count();
        assert!(right as f64 / 2000.0 > 0.9, "accuracy {right}/2000");
    }

    #[test]
    fn says_n_is_treated_as_public_under_add_remove_only() {
        let data = separable(200);
        let notes = |relation| {
            let mut m = DpGd::new(Loss::Logistic);
            m.steps = 5;
            m.budget.neighbouring = relation;
            let fitted = m.fit(&data, &mut Xoshiro256PlusPlus::seed_from_u64(3));
            fitted.unwrap().privacy().notes.clone()
        };
        let public = |notes: &[String]| notes.iter().any(|n| n.contains("treated as public"));
        assert!(public(&notes(Neighbouring::AddRemove)));
        assert!(!public(&notes(Neighbouring::ReplaceOne)));
    }

    #[test]
    fn rejects_bad_input() {
        let data = separable(10);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let bad = |m: DpGd| {
            m.fit(&data, &mut Xoshiro256PlusPlus::seed_from_u64(1))
                .is_err()
        };
        assert!(bad(DpGd::new(Loss::Logistic).budget(0.0, 1e-5)));
        assert!(bad(DpGd::new(Loss::Logistic).budget(1.0, 1.5)));
        let mut m = DpGd::new(Loss::Logistic);
        m.clip = f64::NAN;
        assert!(bad(m));
        let y = Dataset::new(array![[1.0], [2.0]], array![0.0, 1.0]).unwrap();
        assert!(DpGd::new(Loss::Logistic).fit(&y, &mut rng).is_err());
    }
}
