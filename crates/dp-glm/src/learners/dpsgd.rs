//! DP-SGD (Abadi et al. 2016; paper 000 §6): Poisson-subsampled clipped gradients with
//! Gaussian or Gamma-ball noise, any first-order update.

use dp_accounting::{AccountantKind, Ledger, Mechanism, Neighbouring};
use dp_optim::{
    Averaging, BatchSchedule, L2Regulariser, Length, NoiseDistribution, Observer, StepSize,
    Unconstrained, UpdateRule, sum_noise_multiplier,
};
use ndarray::Array1;
use rand::Rng;

use super::{Budget, calibrate, check_steps, ledger_of, positive, report};
use crate::data::Dataset;
use crate::error::{Result, ensure};
use crate::glm_rows::GlmRows;
use crate::loss::Loss;
use crate::model::LinearModel;

/// The noise law added to each clipped batch sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SgdNoise {
    /// Isotropic Gaussian `N(0, σ²B²I)`; the noise multiplier σ is calibrated.
    #[default]
    Gaussian,
    /// Paper 000's Gamma ball, density `∝ exp(−‖z‖/s)`; the scale `s` is calibrated. Its
    /// noise is floating-point (no exact sampler on a grid is known), so it is **not private
    /// as computed**: [`DpSgd::fit`] refuses it unless [`DpSgd::allow_float_noise`] is set,
    /// for experiments only.
    GammaBall,
}

/// How DP-SGD draws its batches ([`DpSgd::schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SgdSchedule {
    /// Poisson sampling at rate `q` (add/remove; the subsampled Gaussian, MATH §5).
    #[default]
    Poisson,
    /// One pass over a uniformly random permutation in consecutive batches of `batch_size`
    /// (`⌊n/b⌋` steps, one epoch only). Replace-one: every record is in at most one batch,
    /// and the ledger composes the `⌊n/b⌋` Gaussian steps sequentially — a valid but loose
    /// upper bound (dp_optim's [`BatchSchedule::ShuffleOnce`]; no amplification is claimed).
    Shuffle,
    /// Batches of exactly `batch_size` rows drawn without replacement at every step
    /// (`⌈epochs·n/b⌉` steps). Replace-one: the subsampled Gaussian without replacement
    /// (Balle, Barthe & Gaboardi 2018; dp_optim's
    /// [`BatchSchedule::FixedSizeWithoutReplacement`]).
    Fixed,
}

/// Differentially private stochastic gradient descent with Poisson sampling (or, by
/// [`DpSgd::schedule`], shuffled or fixed-size batches).
///
/// Each step draws a Poisson batch (every record independently with probability
/// `q = batch_size/n`), sums the per-example gradients clipped to norm `B`, adds noise and
/// divides by the expected batch size `qn`; the update rule (SGD, momentum, Adam) and the
/// ridge penalty are post-processing. It runs `⌈epochs/q⌉` steps.
///
/// # Privacy
/// Abadi et al. 2016 (moments accountant) with the Poisson-subsampled Gaussian analysed by
/// the chosen accountant (PLD by default, Koskela et al. 2020 / Gopi et al. 2021) under the
/// add/remove relation, `T` steps (MATH §5). The clip is enforced for any input. As in Abadi
/// et al. and Opacus, the dataset size `n` is treated as public when `q = batch_size/n` and the
/// expected batch `qn` are derived from it; set [`DpSgd::sampling_rate`] to fix `q` without
/// reference to `n`. With
/// [`SgdNoise::GammaBall`] each step is the Gamma-ball mechanism of paper 000 (§6 and App. E):
/// `(B/s)`-DP on the clipped sum, amplified by Poisson sampling, composed by RDP or PLD. The
/// noise is calibrated to the target before the data is read, and the ledger returned by the
/// optimiser is priced again after the run.
///
/// **As computed.** With Gaussian noise every noisy batch sum leaves the noise step as a grid
/// release `γ·(round(Σ clipped/γ) + K)`, `K` an exact discrete Gaussian (dp_optim's noise
/// docs): its privacy holds for the values actually produced, with the rounding's slack in
/// the ledger's noise multiplier and the discrete Gaussian's adjustment added by the PLD
/// accountant (RDP: its Rényi divergences are at most the continuous ones; Canonne, Kamath &
/// Steinke 2020). Everything after it — the division by `qn`, the update rule, the ridge
/// step, averaging, all in `f64` — reads only those grid values and public settings: it is
/// post-processing, which holds for any computation, floating-point included. So the internal
/// iterates need no noise of their own and the released model is private as computed. The
/// Gamma ball has no such release (its draws are floating-point), so [`DpSgd::fit`] refuses
/// it ([`dp_optim::Error::Unsupported`] naming [`SgdNoise::Gaussian`]) unless
/// [`DpSgd::allow_float_noise`] is set, and then says in the report that the model is not
/// private as computed.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    /// The loss.
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, PLD accountant, add/remove.
    pub budget: Budget,
    /// Expected batch size (default 256); the sampling rate is `batch_size/n`.
    pub batch_size: usize,
    /// Sampling rate `q ∈ (0, 1]`; overrides `batch_size` when set.
    pub sampling_rate: Option<f64>,
    /// Number of epochs (default 5): `⌈epochs/q⌉` steps.
    pub epochs: usize,
    /// Clipping norm `B` (default 1).
    pub clip: f64,
    /// Step size η (default 0.5).
    pub learning_rate: f64,
    /// Update rule (default plain SGD).
    pub update: UpdateRule,
    /// Noise law (default Gaussian).
    pub noise: SgdNoise,
    /// Ridge penalty λ (default 0; it reads no data, so it costs no privacy).
    pub lambda: f64,
    /// Returned iterate (default the last).
    pub averaging: Averaging,
    /// The number of rows as a public value (default `None`: the true `n`, treated as
    /// public). Under add/remove the true `n` is private; with `public_n` set, the sampling
    /// rate `batch_size/public_n` (unless [`DpSgd::sampling_rate`] is set), the expected batch
    /// `q·public_n` that divides the noisy sums and the grid of the grid-safe release are
    /// computed from it, so that nothing but the sampled batches depends on the true `n`.
    pub public_n: Option<usize>,
    /// Batch schedule (default Poisson). Shuffled and fixed-size batches are analysed under
    /// replace-one only (a budget under add/remove is refused), where `n` is public; they
    /// take neither `sampling_rate` nor `public_n`.
    pub schedule: SgdSchedule,
    /// Allows [`SgdNoise::GammaBall`], whose floating-point noise is not private as computed
    /// (default `false`: refused). For experiments reproducing paper 000 only; the report's
    /// notes say the model is not a private release.
    pub allow_float_noise: bool,
}

impl DpSgd {
    /// DP-SGD with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Pld, Neighbouring::AddRemove),
            batch_size: 256,
            sampling_rate: None,
            epochs: 5,
            clip: 1.0,
            learning_rate: 0.5,
            update: UpdateRule::Sgd,
            noise: SgdNoise::Gaussian,
            lambda: 0.0,
            averaging: Averaging::Last,
            public_n: None,
            schedule: SgdSchedule::Poisson,
            allow_float_noise: false,
        }
    }

    budget_setter!();

    /// Sets the expected batch size (and clears any explicit sampling rate).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self.sampling_rate = None;
        self
    }

    /// Sets the number of epochs.
    pub fn epochs(mut self, epochs: usize) -> Self {
        self.epochs = epochs;
        self
    }

    /// Sets the step size.
    pub fn learning_rate(mut self, learning_rate: f64) -> Self {
        self.learning_rate = learning_rate;
        self
    }

    /// Sets the update rule.
    pub fn update(mut self, update: UpdateRule) -> Self {
        self.update = update;
        self
    }

    /// Sets the noise law.
    pub fn noise(mut self, noise: SgdNoise) -> Self {
        self.noise = noise;
        self
    }

    /// The sampling rate on `n` records.
    ///
    /// # Errors
    /// A batch size of 0 or larger than `n`, or a rate outside `(0, 1]`.
    pub fn rate(&self, n: usize) -> Result<f64> {
        match self.sampling_rate {
            Some(q) => {
                ensure(q > 0.0 && q <= 1.0, "sampling_rate", q, "must be in (0, 1]")?;
                Ok(q)
            }
            None => {
                ensure(
                    self.batch_size >= 1 && self.batch_size <= n,
                    "batch_size",
                    self.batch_size as f64,
                    "must be in 1..=n",
                )?;
                Ok(self.batch_size as f64 / n as f64)
            }
        }
    }

    /// Fits the model.
    ///
    /// # Errors
    /// Invalid hyper-parameters or budget (batch larger than the data, `q ∉ (0, 1]`, a
    /// non-finite or non-positive clip or step size, zero epochs, an invalid update rule),
    /// labels outside the loss's domain, an accountant that cannot analyse the mechanism, or a
    /// non-finite result; [`Error::ResourceLimit`](crate::Error::ResourceLimit) if the epochs
    /// ask for more than [`MAX_STEPS`](super::MAX_STEPS) steps;
    /// [`dp_optim::Error::Unsupported`] for Gamma-ball noise without
    /// [`DpSgd::allow_float_noise`].
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        self.fit_with_observer(data, rng, None)
    }

    /// [`DpSgd::fit`], showing every optimiser step to `observer` (post-processing of the
    /// released noisy gradients; a progress display).
    ///
    /// # Errors
    /// As [`DpSgd::fit`].
    pub fn fit_with_observer<R: Rng + ?Sized>(
        &self,
        data: &Dataset,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LinearModel> {
        self.fit_rows(data, rng, observer)
    }

    sparse_fits! {
        DpSgd, fn fit_sparse,
        ", never densified: memory grows with the stored entries, and each step costs \
         `O(nnz of the batch + d)`. The exact clipped sums equal the dense ones and the batches \
         are drawn from the same random draws";

        /// [`DpSgd::fit_with_observer`] on dense or sparse rows: the noise calibrated, the run
        /// and its report.
        pub(crate) fn fit_rows(&self, data, rng, observer) {
            let mut notes = vec![self.size_note()];
            if self.noise == SgdNoise::GammaBall {
                if !self.allow_float_noise {
                    return Err(dp_optim::Error::Unsupported(GAMMA_BALL_REFUSED).into());
                }
                notes.push(FLOAT_NOISE_NOTE.to_string());
            }
            let plan = self.plan(data)?;
            let (noise, name, value) = match self.noise {
                SgdNoise::Gaussian => {
                    // The grid-safe release's multiplier (dp_optim's noise docs), as DpSgd records it.
                    let d = data.n_features();
                    let sigma = calibrate(&self.budget, plan.steps, |s| {
                        let (z, grid) = sum_noise_multiplier(s, plan.clip, d)?;
                        let step = match plan.schedule {
                            BatchSchedule::Poisson { q } => Mechanism::subsampled_gaussian(z, q)?,
                            BatchSchedule::ShuffleOnce { .. } => Mechanism::gaussian(z, 1.0)?,
                            BatchSchedule::FixedSizeWithoutReplacement { batch } => {
                                Mechanism::subsampled_gaussian_without_replacement(
                                    z,
                                    batch as u64,
                                    plan.size as u64,
                                )?
                            }
                        };
                        Ok(step.with_grid(grid))
                    })?;
                    (
                        NoiseDistribution::Gaussian {
                            noise_multiplier: sigma,
                        },
                        "noise_multiplier",
                        sigma,
                    )
                }
                SgdNoise::GammaBall => {
                    let scale = calibrate(&self.budget, plan.steps, |s| {
                        Mechanism::gamma_ball(s, plan.q, data.n_features() as u64, plan.clip)
                    })?;
                    (NoiseDistribution::GammaBall { scale }, "gamma_scale", scale)
                }
            };
            let (theta, ledger) = self.run(data, &plan, noise, rng, observer)?;
            let report = report(&self.budget, ledger, plan.noise_report(name, value), notes)?;
            LinearModel::new(theta, 0.0, self.loss, report)
        }
    }

    /// What the report says about the number of rows `n`, which is private under add/remove.
    pub(crate) fn size_note(&self) -> String {
        if self.schedule != SgdSchedule::Poisson {
            return format!(
                "batches of {} rows ({} schedule) under replace-one: the number of rows n is \
                 public (neighbours have the same n)",
                self.batch_size,
                if self.schedule == SgdSchedule::Shuffle {
                    "shuffled, one pass"
                } else {
                    "fixed-size"
                }
            );
        }
        let rest = "n still divides the noisy sum (by the expected batch q·n) and bounds the \
                    grid of the grid-safe release, where it is treated as public";
        match (self.public_n, self.sampling_rate) {
            (Some(n), Some(q)) => format!(
                "{} and sampling rate q = {q} given as public: nothing but the sampled \
                 batches depends on the true number of rows",
                super::given_rows(n)
            ),
            (Some(n), None) => format!(
                "{} (q = batch_size/n = {}/{n}): nothing but the sampled batches depends on \
                 the true number of rows",
                super::given_rows(n),
                self.batch_size
            ),
            (None, Some(q)) => format!(
                "sampling rate q = {q} given as public: q and the number of steps do not \
                 depend on the number of rows n; {rest}"
            ),
            (None, None) => format!(
                "sampling rate q = batch_size/n = {}/n: the number of rows n is treated as \
                 public (q in this report reveals it); {rest}",
                self.batch_size
            ),
        }
    }

    /// Checks the hyper-parameters against `data` and plans the run (rate, steps).
    ///
    /// # Errors
    /// As [`DpSgd::fit`], before any noise is calibrated.
    pub(crate) fn plan<D: GlmRows + ?Sized>(&self, data: &D) -> Result<SgdPlan> {
        let clip = positive("clip", self.clip)?;
        let eta = positive("learning_rate", self.learning_rate)?;
        ensure(
            self.epochs >= 1,
            "epochs",
            self.epochs as f64,
            "must be >= 1",
        )?;
        ensure(
            self.lambda.is_finite() && self.lambda >= 0.0,
            "lambda",
            self.lambda,
            "must be finite and >= 0",
        )?;
        check_update(self.update)?;
        self.averaging.check()?;
        data.check_labels(&self.loss)?;
        let n = self.public_n.unwrap_or(data.n_samples());
        ensure(n >= 1, "public_n", n as f64, "must be >= 1")?;
        let schedule = self.batch_schedule(n)?;
        let q = self.rate(n)?;
        // ⌈epochs/q⌉ steps, checked before the optimiser computes it as an integer.
        check_steps(
            "epochs",
            self.epochs as f64,
            (self.epochs as f64 / q).ceil(),
        )?;
        // The step count does not depend on the noise: plan it with a placeholder.
        let steps = dp_optim::DpSgd::new(
            schedule,
            Length::Epochs(self.epochs),
            StepSize::Constant(eta),
            clip,
            1.0,
        )
        .steps(n)? as u64;
        Ok(SgdPlan {
            q,
            steps,
            clip,
            eta,
            size: n,
            schedule,
        })
    }

    /// dp_optim's schedule for [`DpSgd::schedule`] on `n` rows, after checking that the
    /// settings fit it.
    ///
    /// # Errors
    /// Shuffled or fixed-size batches with an add/remove budget
    /// ([`Error::UnsupportedNeighbouring`](crate::Error::UnsupportedNeighbouring)), with
    /// `sampling_rate`, `public_n` or Gamma-ball noise, or (shuffled) more than one epoch.
    fn batch_schedule(&self, n: usize) -> Result<BatchSchedule> {
        let batch = self.batch_size;
        let schedule = match self.schedule {
            SgdSchedule::Poisson => return Ok(BatchSchedule::Poisson { q: self.rate(n)? }),
            SgdSchedule::Shuffle => BatchSchedule::ShuffleOnce { batch },
            SgdSchedule::Fixed => BatchSchedule::FixedSizeWithoutReplacement { batch },
        };
        self.budget.require_relation(
            Neighbouring::ReplaceOne,
            "DP-SGD with shuffled or fixed-size batches",
        )?;
        let poisson_only = "applies to Poisson sampling only";
        if let Some(q) = self.sampling_rate {
            ensure(false, "sampling_rate", q, poisson_only)?;
        }
        if let Some(size) = self.public_n {
            ensure(false, "public_n", size as f64, poisson_only)?;
        }
        ensure(
            self.noise == SgdNoise::Gaussian,
            "noise",
            0.0,
            "Gamma-ball noise is analysed with Poisson sampling only",
        )?;
        ensure(
            self.schedule != SgdSchedule::Shuffle || self.epochs == 1,
            "epochs",
            self.epochs as f64,
            "the shuffled schedule makes one pass: must be 1",
        )?;
        ensure(
            batch >= 1 && batch <= n,
            "batch_size",
            batch as f64,
            "must be in 1..=n",
        )?;
        Ok(schedule)
    }

    /// Runs the planned DP-SGD on `data` with the given noise; returns the iterate and the
    /// ledger of what was released.
    ///
    /// # Errors
    /// The optimiser's, or a non-finite result.
    pub(crate) fn run<D, R>(
        &self,
        data: &D,
        plan: &SgdPlan,
        noise: NoiseDistribution,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<(Array1<f64>, Ledger)>
    where
        D: GlmRows + ?Sized,
        R: Rng + ?Sized,
    {
        let sgd = dp_optim::DpSgd::new(
            plan.schedule,
            Length::Epochs(self.epochs),
            StepSize::Constant(plan.eta),
            plan.clip,
            1.0,
        )
        .noise(noise)
        .update(self.update)
        .averaging(self.averaging)
        .public_size(plan.size);
        let objective = data.mean_objective(self.loss)?;
        let reg = L2Regulariser {
            lambda: self.lambda,
        };
        let x0 = Array1::zeros(data.n_features());
        let sol = sgd.minimize(&objective, &reg, &Unconstrained, x0.view(), rng, observer)?;
        Ok((sol.x, ledger_of(sol.ledger)?))
    }
}

/// Why Gamma-ball noise is refused for a release.
const GAMMA_BALL_REFUSED: &str = "Gamma-ball noise is floating-point noise, not private as \
     computed (its low-order bits depend on the data; Mironov, CCS 2012): use SgdNoise::Gaussian \
     (grid-safe), or set allow_float_noise for an experiment that is not a private release";

/// The report's note on a Gamma-ball run.
const FLOAT_NOISE_NOTE: &str = "Gamma-ball noise is floating-point noise (allow_float_noise): \
     the privacy statement holds for the ideal real-valued mechanism only, not for the values \
     computed; this model is not a private release";

/// A checked DP-SGD run: sampling rate, step count, clip and step size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SgdPlan {
    /// Poisson sampling rate.
    pub(crate) q: f64,
    /// Number of steps.
    pub(crate) steps: u64,
    /// Clip norm.
    pub(crate) clip: f64,
    /// Step size.
    pub(crate) eta: f64,
    /// The number of rows the run is sized for: [`DpSgd::public_n`], or the true `n`.
    pub(crate) size: usize,
    /// The batch schedule.
    pub(crate) schedule: BatchSchedule,
}

impl SgdPlan {
    /// The noise parameters a report lists, led by `(name, value)`.
    pub(crate) fn noise_report(&self, name: &str, value: f64) -> Vec<(String, f64)> {
        vec![
            (name.to_string(), value),
            ("clip".to_string(), self.clip),
            ("sampling_rate".to_string(), self.q),
            ("steps".to_string(), self.steps as f64),
        ]
    }
}

/// Checks the update rule's parameters (finite, decays in `[0, 1)`, `eps > 0`).
fn check_update(update: UpdateRule) -> Result<()> {
    let decay = |name, v: f64| ensure((0.0..1.0).contains(&v), name, v, "must be in [0, 1)");
    match update {
        UpdateRule::Sgd => Ok(()),
        UpdateRule::Momentum { beta } => decay("beta", beta),
        UpdateRule::Adam { beta1, beta2, eps } => {
            decay("beta1", beta1)?;
            decay("beta2", beta2)?;
            positive("eps", eps).map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::learners::testdata::{
        accuracy, accuracy_of, assert_reproducible, logistic, logistic_with, non_private, risk,
        rng, separable,
    };

    #[test]
    fn shuffled_and_fixed_batches_are_accounted_under_replace_one() {
        let data = separable(1000);
        let mut m = DpSgd::new(Loss::Logistic).batch_size(100).epochs(1);
        m.budget.neighbouring = Neighbouring::ReplaceOne;
        m.budget.accountant = AccountantKind::Rdp;
        for (schedule, steps, name) in [
            (SgdSchedule::Shuffle, 10, "gaussian"),
            (SgdSchedule::Fixed, 10, "subsampled-gaussian"),
        ] {
            m.schedule = schedule;
            let fitted = m.fit(&data, &mut rng(4)).unwrap();
            let r = fitted.privacy();
            assert!(
                r.epsilon <= 1.0 && r.epsilon > 0.99,
                "{schedule:?}: {}",
                r.epsilon
            );
            assert_eq!(r.neighbouring, Neighbouring::ReplaceOne);
            let e = &r.event.releases()[0];
            assert_eq!((e.mechanism.name(), e.count), (name, steps), "{schedule:?}");
        }
        // The shuffled schedule makes one pass; neither takes add/remove or a public n.
        m.schedule = SgdSchedule::Shuffle;
        let hp = |m: &DpSgd| match m.fit(&data, &mut rng(1)).unwrap_err() {
            Error::InvalidHyperParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(hp(&m.clone().epochs(2)), "epochs");
        let mut given = m.clone();
        given.public_n = Some(1000);
        assert_eq!(hp(&given), "public_n");
        let mut add = m.clone();
        add.budget.neighbouring = Neighbouring::AddRemove;
        assert!(matches!(
            add.fit(&data, &mut rng(1)).unwrap_err(),
            Error::UnsupportedNeighbouring { .. }
        ));
    }

    #[test]
    fn spends_at_most_the_target_and_reports_everything() {
        let data = separable(2000);
        let m = DpSgd::new(Loss::Logistic)
            .batch_size(100)
            .epochs(2)
            .fit(&data, &mut rng(3))
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.9, "{}", r.epsilon);
        assert_eq!(r.neighbouring, Neighbouring::AddRemove);
        assert_eq!(r.accountant, AccountantKind::Pld);
        assert_eq!(r.event.releases().len(), 1);
        assert_eq!(r.event.releases()[0].count, 40);
        let names: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["noise_multiplier", "clip", "sampling_rate", "steps"]
        );
        assert_eq!(r.noise[2].1, 0.05);
        assert!(accuracy(&m, &data) > 0.9);
    }

    #[test]
    fn reproducible_with_a_seed() {
        let data = separable(500);
        let fit = |s| {
            DpSgd::new(Loss::Logistic)
                .batch_size(50)
                .update(UpdateRule::adam())
                .fit(&data, &mut rng(s))
                .unwrap()
        };
        assert_reproducible(fit);
    }

    #[test]
    fn gamma_ball_noise_is_calibrated_and_accounted() {
        let data = separable(2000);
        let mut m = DpSgd::new(Loss::Logistic)
            .budget(4.0, 1e-5)
            .batch_size(100)
            .epochs(2)
            .noise(SgdNoise::GammaBall);
        m.budget.accountant = AccountantKind::Rdp;
        // Refused for a release: the Gamma ball is floating-point noise.
        match m.fit(&data, &mut rng(5)) {
            Err(crate::Error::Optim(dp_optim::Error::Unsupported(why))) => {
                assert!(why.contains("SgdNoise::Gaussian"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        m.allow_float_noise = true;
        let fitted = m.fit(&data, &mut rng(5)).unwrap();
        let r = fitted.privacy();
        assert!(r.notes.iter().any(|n| n.contains("not a private release")));
        assert!(r.epsilon <= 4.0 && r.epsilon > 3.5, "{}", r.epsilon);
        assert_eq!(r.noise[0].0, "gamma_scale");
        assert_eq!(r.event.releases()[0].mechanism.name(), "gamma-ball");
        assert_eq!(r.event.releases()[0].count, 40);
        assert!(accuracy(&fitted, &data) > 0.8);
        // The PLD accountant calibrates the Gamma ball too, at most as noisy as RDP's.
        m.budget.accountant = AccountantKind::Pld;
        let pld = m.fit(&data, &mut rng(5)).unwrap();
        assert!(pld.privacy().epsilon <= 4.0, "{}", pld.privacy().epsilon);
        assert!(pld.privacy().noise[0].1 <= r.noise[0].1 * (1.0 + 1e-6));
    }

    #[test]
    fn rejects_bad_hyper_parameters() {
        let data = separable(100);
        let err = |m: DpSgd| m.fit(&data, &mut rng(1)).unwrap_err();
        let hp = |e: Error| match e {
            Error::InvalidHyperParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            hp(err(DpSgd::new(Loss::Logistic).batch_size(101))),
            "batch_size"
        );
        assert_eq!(
            hp(err(DpSgd::new(Loss::Logistic).batch_size(0))),
            "batch_size"
        );
        for q in [0.0, 1.5, f64::NAN] {
            let mut m = DpSgd::new(Loss::Logistic);
            m.sampling_rate = Some(q);
            assert_eq!(hp(err(m)), "sampling_rate");
        }
        let mut m = DpSgd::new(Loss::Logistic).batch_size(10);
        m.clip = f64::INFINITY;
        assert_eq!(hp(err(m)), "clip");
        let m = DpSgd::new(Loss::Logistic)
            .batch_size(10)
            .learning_rate(f64::NAN);
        assert_eq!(hp(err(m)), "learning_rate");
        assert_eq!(
            hp(err(DpSgd::new(Loss::Logistic).batch_size(10).epochs(0))),
            "epochs"
        );
        let m = DpSgd::new(Loss::Logistic)
            .batch_size(10)
            .update(UpdateRule::Momentum { beta: f64::NAN });
        assert_eq!(hp(err(m)), "beta");
        let mut m = DpSgd::new(Loss::Logistic).batch_size(10);
        m.lambda = -1.0;
        assert_eq!(hp(err(m)), "lambda");
        assert!(matches!(
            err(DpSgd::new(Loss::Logistic).batch_size(10).budget(0.0, 1e-5)),
            Error::Accounting(_)
        ));
        // Poisson subsampling is analysed under add/remove only: a replace-one budget fails.
        let mut m = DpSgd::new(Loss::Logistic).batch_size(10);
        m.budget.neighbouring = Neighbouring::ReplaceOne;
        assert!(matches!(err(m), Error::Accounting(_)));
        let m = DpSgd::new(Loss::Squared).batch_size(10);
        assert!(m.fit(&data, &mut rng(1)).is_ok());
        let bad_labels = Dataset::new(ndarray::array![[1.0], [2.0]], ndarray::array![0.0, 1.0]);
        let e = DpSgd::new(Loss::Logistic)
            .batch_size(1)
            .fit(&bad_labels.unwrap(), &mut rng(1))
            .unwrap_err();
        assert!(matches!(e, Error::LabelOutOfDomain { .. }));
    }

    /// The learner used by the utility tests: 5 epochs at rate q = 1/40 (200 steps), plain
    /// SGD.
    fn utility_learner(epsilon: f64, n: usize) -> DpSgd {
        DpSgd::new(Loss::Logistic)
            .budget(epsilon, 1e-5)
            .batch_size(n / 40)
            .epochs(5)
            .learning_rate(4.0)
    }

    #[test]
    fn within_two_accuracy_points_of_non_private_at_epsilon_8() {
        // Every one of five seeds, not just a lucky one.
        let (train, theta) = logistic(20_000, 10, 6.0, 11);
        let test = logistic_with(&theta, 10_000, &mut rng(12));
        let exact = non_private(&train, Loss::Logistic, 0.0);
        let base = accuracy_of(&exact, &test);
        for seed in 13..18 {
            let m = utility_learner(8.0, 20_000)
                .fit(&train, &mut rng(seed))
                .unwrap();
            let acc = accuracy(&m, &test);
            assert!(m.privacy().epsilon <= 8.0);
            eprintln!("seed {seed}: accuracy at epsilon = 8: DP-SGD {acc}, non-private {base}");
            assert!(
                acc >= base - 0.02,
                "seed {seed}: DP-SGD {acc} vs non-private {base}"
            );
        }
    }

    #[test]
    fn excess_risk_falls_with_n_and_epsilon() {
        // Mean excess empirical risk over 4 seeds; each comparison must hold with the larger
        // setting at most 80% of the smaller one's excess risk.
        let excess = |n: usize, epsilon: f64| -> f64 {
            let (train, _) = logistic(n, 10, 6.0, 21);
            let best = risk(
                &non_private(&train, Loss::Logistic, 0.0),
                &train,
                Loss::Logistic,
            );
            (0..4)
                .map(|s| {
                    let m = utility_learner(epsilon, n)
                        .fit(&train, &mut rng(100 + s))
                        .unwrap();
                    risk(&m.coef().to_owned(), &train, Loss::Logistic) - best
                })
                .sum::<f64>()
                / 4.0
        };
        let small = excess(2_000, 1.0);
        let more_data = excess(20_000, 1.0);
        let more_eps = excess(2_000, 8.0);
        eprintln!("excess risk: n=2000,eps=1 {small}; n=20000 {more_data}; eps=8 {more_eps}");
        assert!(more_data < 0.8 * small, "{more_data} vs {small}");
        assert!(more_eps < 0.8 * small, "{more_eps} vs {small}");
    }
}
