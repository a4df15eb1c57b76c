//! Hyper-parameter tuning of DP-SGD: honest (Papernot & Steinke 2022, as paper 001 §5 uses
//! it) and, under a name that says so, not accounted. Each fits dense rows and sparse rows
//! (one body over [`GlmRows`]): the same split, runs and scores, so the same model.

use dp_accounting::{
    AccountantKind, Event, Mechanism, Neighbouring, PrivacyEvent, Repetitions, price,
};
use dp_optim::{NOISY_GRADIENT_LABEL, Noise, NoiseDistribution, sum_noise_multiplier};
use ndarray::Array1;
use rand::seq::SliceRandom;
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Poisson};

use crate::error::{Error, Result, ensure};
use crate::glm_rows::GlmRows;
use crate::learners::{DpSgd, SgdNoise, SgdPlan, in_memory_fits};
use crate::model::LinearModel;
use crate::report::PrivacyReport;

/// The two halves of a random split: `(train, validation)` with `⌈fraction·n⌉` validation
/// rows (at least one of each). The permutation is drawn from `n` alone, so dense and sparse
/// rows split alike.
fn split<D: GlmRows, R: Rng + ?Sized>(data: &D, fraction: f64, rng: &mut R) -> Result<(D, D)> {
    ensure(
        fraction > 0.0 && fraction < 1.0,
        "validation_fraction",
        fraction,
        "must be in (0, 1)",
    )?;
    let n = data.n_samples();
    ensure(n >= 2, "n", n as f64, "needs at least 2 rows to split")?;
    let m = validation_rows(fraction, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    Ok((
        data.select_rows(&order[m..])?,
        data.select_rows(&order[..m])?,
    ))
}

/// The validation rows of a split of `n ≥ 2` rows: `⌈fraction·n⌉`, between 1 and `n − 1`.
fn validation_rows(fraction: f64, n: usize) -> usize {
    ((fraction * n as f64).ceil() as usize).clamp(1, n.max(2) - 1)
}

/// `base` for the runs on the training part of a split: a public number of rows (the
/// user's, or a private count) becomes the training part's share of it, as [`split`] takes
/// it from the data's; without one the runs read the part's count.
fn on_training_part(base: &DpSgd, fraction: f64) -> DpSgd {
    let mut runs = base.clone();
    runs.public_n = base
        .public_n
        .map(|n| n.saturating_sub(validation_rows(fraction, n)).max(1));
    runs
}

/// Checks a learning-rate grid: non-empty, every rate finite and positive.
fn check_rates(rates: &[f64]) -> Result<()> {
    ensure(
        !rates.is_empty(),
        "learning_rates",
        0.0,
        "needs at least one candidate",
    )?;
    for &lr in rates {
        ensure(
            lr > 0.0 && lr.is_finite(),
            "learning_rate",
            lr,
            "must be finite and > 0",
        )?;
    }
    Ok(())
}

/// The number of validation rows whose predicted sign matches the label.
fn correct<D: GlmRows>(theta: &Array1<f64>, validation: &D) -> Result<f64> {
    Ok(validation
        .margins(theta.view())?
        .iter()
        .zip(validation.y())
        .filter(|&(z, y)| (if *z >= 0.0 { 1.0 } else { -1.0 }) == *y)
        .count() as f64)
}

/// What a trial's noisy score released.
const SCORE_LABEL: &str = "noisy validation count";

/// The largest mean number of trials [`HonestTuning`] runs (10⁴): each trial is a full
/// DP-SGD run, so a larger mean is refused up front with [`Error::ResourceLimit`] rather than
/// left to run for days. (The law of `K` itself is not truncated: that would change the
/// Papernot–Steinke analysis.)
pub const MAX_MEAN_TRIALS: f64 = 1e4;

/// Honest hyper-parameter tuning of DP-SGD (Papernot & Steinke 2022; paper 001 §5): draw the
/// number of trials `K` from `trials`, run DP-SGD `K` times with a learning rate drawn
/// uniformly from `learning_rates`, each run scored by its noisy validation accuracy, and
/// return the best run.
///
/// The data is split once, at random, into a training part and a validation part
/// (`validation_fraction`). A trial is DP-SGD on the training part (the base learner's batch
/// size, epochs, clip, update rule; Gaussian noise) followed by a Gaussian count of its
/// correct validation predictions with Gaussian noise (see `score_noise`). The per-trial noise
/// multiplier is calibrated so that the **whole** tuning meets the base learner's target
/// (ε, δ).
///
/// # Privacy
/// Papernot & Steinke 2022, Thm 2 (truncated negative binomial `K`) and Thm 6 (Poisson `K`),
/// under add/remove: one trial is the RDP composition of `T` Poisson-subsampled Gaussian steps
/// (records of the training part) and one Gaussian count of sensitivity 1 (records of the
/// validation part; composed sequentially, which over-counts since the parts are disjoint);
/// the tuned RDP curve is converted to (ε, δ) with the best of the RDP conversions (MATH §3,
/// §7). The split and the learning-rate draws are data-independent. The report's event is
/// the repeat-and-select of one trial, priced by [`dp_accounting::price`].
#[derive(Debug, Clone, PartialEq)]
pub struct HonestTuning {
    /// The DP-SGD template; its budget is the target of the whole tuning (relation
    /// add/remove), its learning rate is replaced by the drawn ones.
    pub base: DpSgd,
    /// The candidate learning rates.
    pub learning_rates: Vec<f64>,
    /// The law of the number of trials.
    pub trials: Repetitions,
    /// Share of the rows held out for validation (default 0.2).
    pub validation_fraction: f64,
    /// Standard deviation of the noise on each validation count; default `None`: tied to the
    /// trial's noise multiplier σ as `σ/(q·√(T/5))`, which keeps the count's RDP at about a
    /// tenth of the DP-SGD run's (`T` steps at rate `q`) at every ε.
    pub score_noise: Option<f64>,
}

impl HonestTuning {
    /// Tuning of `base` over `learning_rates` with `K ~ Poisson(mean_trials)`.
    pub fn new(base: DpSgd, learning_rates: Vec<f64>, mean_trials: f64) -> Self {
        Self {
            base,
            learning_rates,
            trials: Repetitions::Poisson { mean: mean_trials },
            validation_fraction: 0.2,
            score_noise: None,
        }
    }

    /// The standard deviation of the validation-count noise at noise multiplier `sigma`.
    fn score_std(&self, plan: &SgdPlan, sigma: f64) -> f64 {
        self.score_noise
            .unwrap_or_else(|| sigma / (plan.q * (plan.steps as f64 / 5.0).sqrt()))
    }

    /// One trial's DP-SGD step at noise multiplier `sigma`, a grid release (dp_optim's noise
    /// docs) at the multiplier [`sum_noise_multiplier`] records.
    fn step_mechanism(&self, plan: &SgdPlan, sigma: f64, dim: usize) -> Result<Mechanism> {
        let (z, grid) = sum_noise_multiplier(sigma, plan.clip, dim)?;
        Ok(Mechanism::subsampled_gaussian(z, plan.q)?.with_grid(grid))
    }

    /// The whole tuning's event at per-trial noise multiplier `sigma`: repeat-and-select of
    /// one trial (its DP-SGD steps, then its noisy score), `K` from `trials`.
    fn event(&self, plan: &SgdPlan, sigma: f64, dim: usize) -> Result<PrivacyEvent> {
        let trial = Event::Composed(vec![
            Event::release(
                self.step_mechanism(plan, sigma, dim)?,
                plan.steps,
                NOISY_GRADIENT_LABEL,
            ),
            Event::release(self.score_mechanism(plan, sigma)?, 1, SCORE_LABEL),
        ]);
        Ok(PrivacyEvent::new(
            Neighbouring::AddRemove,
            Event::RepeatAndSelect {
                event: Box::new(trial),
                repetitions: self.trials,
            },
        )?)
    }

    /// The noisy validation count's mechanism: Gaussian of std `score_std`, sensitivity 1 plus
    /// the grid's rounding slack in one dimension.
    fn score_mechanism(&self, plan: &SgdPlan, sigma: f64) -> Result<Mechanism> {
        let std = self.score_std(plan, sigma);
        let grid = Noise::Gaussian { std }.on_grid(None)?;
        Ok(Mechanism::gaussian(std, 1.0 + grid.slack(1))?.with_grid(grid.discrete_gaussian(1)?))
    }

    /// The Papernot–Steinke ε of the whole tuning at per-trial noise multiplier `sigma`: the
    /// price of [`HonestTuning::event`], as the report gives it.
    fn tuned_epsilon(&self, plan: &SgdPlan, sigma: f64, shape: (usize, usize)) -> Result<f64> {
        let event = self.event(plan, sigma, shape.1)?;
        Ok(price(&event, AccountantKind::Rdp, self.base.budget.delta)?.epsilon)
    }

    /// The smallest per-trial noise multiplier (relative precision 1e-6, upper end of the
    /// bracket) for which the tuned ε meets the target.
    fn calibrate(&self, plan: &SgdPlan, shape: (usize, usize)) -> Result<f64> {
        let target = self.base.budget.target()?;
        let ok = |s: f64| -> Result<bool> {
            Ok(self.tuned_epsilon(plan, s, shape)? <= target.epsilon())
        };
        let mut hi = 1.0;
        while !ok(hi)? {
            hi *= 2.0;
            if hi > 1e6 {
                return Err(Error::Privacy(
                    "no noise multiplier up to 1e6 meets the target after tuning".into(),
                ));
            }
        }
        let mut lo = hi / 2.0;
        while ok(lo)? {
            hi = lo;
            lo /= 2.0;
            if lo < 1e-6 {
                return Ok(hi);
            }
        }
        while hi / lo > 1.0 + 1e-6 {
            let mid = (lo * hi).sqrt();
            if ok(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// Checks the trials' law: a valid law whose mean is at most [`MAX_MEAN_TRIALS`].
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] for an invalid law, [`Error::ResourceLimit`] for a
    /// mean above the cap.
    fn check_trials(&self) -> Result<()> {
        if let Repetitions::Poisson { mean } = self.trials {
            ensure(
                mean > 0.0 && mean.is_finite(),
                "mean_trials",
                mean,
                "must be finite and > 0",
            )?;
        }
        let mean = self.trials.mean()?;
        if mean > MAX_MEAN_TRIALS {
            let value = match self.trials {
                Repetitions::Poisson { mean } => mean,
                Repetitions::TruncatedNegativeBinomial { gamma, .. } => gamma,
            };
            return Err(Error::ResourceLimit {
                name: match self.trials {
                    Repetitions::Poisson { .. } => "mean_trials",
                    Repetitions::TruncatedNegativeBinomial { .. } => "gamma",
                },
                value,
                needed: mean,
                limit: MAX_MEAN_TRIALS,
                unit: "trials on average",
            });
        }
        Ok(())
    }

    /// Draws `K` from the trials' law.
    fn draw_trials<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<u64> {
        match self.trials {
            Repetitions::Poisson { mean } => {
                let law = Poisson::new(mean).map_err(|_| Error::InvalidHyperParameter {
                    name: "mean_trials",
                    value: mean,
                    reason: "must be finite and > 0",
                })?;
                Ok(law.sample(rng) as u64)
            }
            Repetitions::TruncatedNegativeBinomial { eta, gamma } => {
                self.trials.mean()?;
                Ok(truncated_negative_binomial(eta, gamma, rng))
            }
        }
    }

    in_memory_fits! {
        /// Runs the tuning.
        ///
        /// # Errors
        /// Invalid settings (no learning rates, a non-Gaussian or replace-one base, bad split or
        /// score noise, an invalid law of `K`), calibration failure, the trials' errors;
        /// [`Error::ResourceLimit`] if the mean number of trials exceeds [`MAX_MEAN_TRIALS`]
        /// (checked before anything runs).
        fn fit;

        /// [`HonestTuning::fit`] on sparse rows ([`SparseDataset`](crate::sparse::SparseDataset),
        /// e.g. a LIBSVM file read by [`dp_data::read_libsvm_sparse`]), never densified: the
        /// split copies the stored entries of each part, the trials run DP-SGD on the sparse
        /// training part ([`DpSgd::fit_sparse`]) and count their correct validation predictions
        /// with sparse dot products. The split is drawn from the same random draws, each trial's
        /// run is the dense one bit for bit and each count the same integer (the margins added in
        /// the dense product's order; in builds with BLAS, whose `dgemv` adds in an order of its
        /// own, a margin within rounding of 0 could take the other sign), so the model is
        /// bit-identical to [`HonestTuning::fit`]'s on the same rows densified, with the same
        /// `rng`.
        ///
        /// # Privacy
        /// As [`HonestTuning`]: the same mechanisms, calibrated the same way, and the same
        /// ledger and tuned ε as on dense rows.
        ///
        /// # Errors
        /// As [`HonestTuning::fit`].
        fn fit_sparse;
    }

    /// The tuning on dense or sparse rows.
    fn fit_rows<D: GlmRows, R: Rng + ?Sized>(&self, data: &D, rng: &mut R) -> Result<LinearModel> {
        check_rates(&self.learning_rates)?;
        self.check_trials()?;
        if let Some(s) = self.score_noise {
            ensure(
                s > 0.0 && s.is_finite(),
                "score_noise",
                s,
                "must be finite and > 0",
            )?;
        }
        self.base
            .budget
            .require_relation(Neighbouring::AddRemove, "honest tuning (Papernot–Steinke)")?;
        if self.base.noise != SgdNoise::Gaussian {
            return Err(Error::Privacy(
                "honest tuning is analysed for Gaussian DP-SGD only".into(),
            ));
        }
        let (train, validation) = split(data, self.validation_fraction, rng)?;
        let runs = on_training_part(&self.base, self.validation_fraction);
        let plan = runs.plan(&train)?;
        let shape = (plan.size, train.n_features());
        let sigma = self.calibrate(&plan, shape)?;
        let step = self.step_mechanism(&plan, sigma, shape.1)?;
        let k = self.draw_trials(rng)?;
        let score_std = self.score_std(&plan, sigma);
        // The noisy count is a grid release (dp_optim's noise docs).
        let score_grid = Noise::Gaussian { std: score_std }.on_grid(None)?;
        let mut best: Option<(f64, Array1<f64>, f64)> = None;
        for _ in 0..k {
            let lr = self.learning_rates[rng.random_range(0..self.learning_rates.len())];
            let mut learner = runs.clone();
            learner.learning_rate = lr;
            let plan = learner.plan(&train)?;
            let noise = NoiseDistribution::Gaussian {
                noise_multiplier: sigma,
            };
            let (theta, run) = learner.run(&train, &plan, noise, rng, None)?;
            // Each run must release at most the steps the tuning's event holds.
            let within = run
                .entries()
                .iter()
                .all(|e| e.mechanism == step && e.count <= plan.steps);
            if !within {
                return Err(Error::Privacy(format!(
                    "a trial released {:?}, not the {} steps of {step} its event holds",
                    run.entries(),
                    plan.steps
                )));
            }
            let mut score = ndarray::arr1(&[correct(&theta, &validation)?]);
            score_grid.add_to(SCORE_LABEL, rng, score.view_mut())?;
            let score = score[0];
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, theta, lr));
            }
        }
        // K = 0 (possible under the Poisson law): no trial ran, and the release is the
        // data-independent zero model (Papernot & Steinke's ⊥), with no learning rate chosen.
        let (coef, lr) = match best {
            Some((_, theta, lr)) => (theta, Some(lr)),
            None => (Array1::zeros(data.n_features()), None),
        };
        let mut noise = plan.noise_report("noise_multiplier", sigma);
        noise.push(("score_noise".to_string(), score_std));
        // `K` itself is not released: Papernot & Steinke's bound holds for the best run alone,
        // with `K` hidden (given `K = k` the release is the best of k runs, priced higher).
        if let Some(lr) = lr {
            noise.push(("chosen_learning_rate".to_string(), lr));
        }
        let report = PrivacyReport::priced(
            (self.base.budget.epsilon, self.base.budget.delta),
            AccountantKind::Rdp,
            self.event(&plan, sigma, shape.1)?,
            noise,
            vec![format!(
                "honest tuning (Papernot & Steinke 2022): {}, the number of trials run not \
                 released; epsilon is the tuned bound over all of them",
                self.trials
            )],
        )?;
        LinearModel::new(coef, 0.0, self.base.loss, report)
    }
}

/// `K` from the truncated negative binomial law `P(K = k) ∝ C(k + η − 1, k)(1 − γ)^k`,
/// `k ≥ 1` (the logarithmic law `∝ (1 − γ)^k/k` at `η = 0`), by inversion of its CDF.
fn truncated_negative_binomial<R: Rng + ?Sized>(eta: f64, gamma: f64, rng: &mut R) -> u64 {
    // Unnormalised p_1, then p_{k+1}/p_k = (k + η)/(k + 1)·(1 − γ).
    let first = if eta == 0.0 {
        1.0 - gamma
    } else {
        eta * (1.0 - gamma)
    };
    let mut weights = vec![first];
    let mut total = first;
    let mut k = 1.0;
    while weights.len() < 1_000_000 {
        let next = weights[weights.len() - 1] * (k + eta) / (k + 1.0) * (1.0 - gamma);
        if next <= total * 1e-17 {
            break;
        }
        weights.push(next);
        total += next;
        k += 1.0;
    }
    let u: f64 = rng.random::<f64>() * total;
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if u < acc {
            return i as u64 + 1;
        }
    }
    weights.len() as u64
}

/// DP-SGD tuned **without** privacy accounting for the tuning: every learning rate of the grid
/// is run at the full budget and the one with the best (exact) validation accuracy is kept —
/// "dishonest" DP-SGD in paper 001's words, a baseline, not a private algorithm.
///
/// # Privacy
/// The report's ε is one run's (Abadi et al. 2016 with the base learner's accountant); the
/// selection among the runs and the validation accuracies are **not** accounted, so the true
/// privacy loss of the returned model is larger. The report's notes say so.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningWithoutPrivacyAccounting {
    /// The DP-SGD template.
    pub base: DpSgd,
    /// The learning rates tried, each at the full budget.
    pub learning_rates: Vec<f64>,
    /// Share of the rows held out for validation (default 0.2).
    pub validation_fraction: f64,
}

impl TuningWithoutPrivacyAccounting {
    /// The baseline over `learning_rates`.
    pub fn new(base: DpSgd, learning_rates: Vec<f64>) -> Self {
        Self {
            base,
            learning_rates,
            validation_fraction: 0.2,
        }
    }

    in_memory_fits! {
        /// Runs every learning rate and keeps the best on the validation part.
        ///
        /// # Errors
        /// No learning rates, a bad split, the runs' errors.
        fn fit;

        /// [`TuningWithoutPrivacyAccounting::fit`] on sparse rows
        /// ([`SparseDataset`](crate::sparse::SparseDataset)), never densified: the split, the
        /// runs ([`DpSgd::fit_sparse`]) and the exact validation accuracies as in
        /// [`HonestTuning::fit_sparse`], so the model is bit-identical to
        /// [`TuningWithoutPrivacyAccounting::fit`]'s on the same rows densified, with the same
        /// `rng`.
        ///
        /// # Privacy
        /// As [`TuningWithoutPrivacyAccounting`]: one run's ε; the selection is **not**
        /// accounted.
        ///
        /// # Errors
        /// As [`TuningWithoutPrivacyAccounting::fit`].
        fn fit_sparse;
    }

    /// The baseline on dense or sparse rows.
    fn fit_rows<D: GlmRows, R: Rng + ?Sized>(&self, data: &D, rng: &mut R) -> Result<LinearModel> {
        check_rates(&self.learning_rates)?;
        let (train, validation) = split(data, self.validation_fraction, rng)?;
        let runs = on_training_part(&self.base, self.validation_fraction);
        let mut best: Option<(f64, LinearModel)> = None;
        for &lr in &self.learning_rates {
            let mut learner = runs.clone();
            learner.learning_rate = lr;
            let model = learner.fit_rows(&train, rng, None)?;
            let score = correct(&model.coef().to_owned(), &validation)?;
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, model));
            }
        }
        let Some((_, mut model)) = best else {
            return Err(Error::Privacy("no run".into()));
        };
        model.privacy_mut().notes.push(format!(
            "NOT ACCOUNTED: this model is the best of {} DP-SGD runs chosen by exact validation \
             accuracy; the tuning's privacy cost is not in epsilon",
            self.learning_rates.len()
        ));
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::{accuracy, logistic, logistic_with, rng};
    use crate::loss::Loss;

    fn base() -> DpSgd {
        DpSgd::new(Loss::Logistic)
            .budget(2.0, 1e-5)
            .batch_size(100)
            .epochs(2)
    }

    #[test]
    fn honest_tuning_meets_the_target_and_pays_for_it() {
        let (data, theta) = logistic(3000, 4, 4.0, 1);
        let test = logistic_with(&theta, 4000, &mut rng(2));
        let tuning = HonestTuning::new(base(), vec![1e-4, 0.5, 2.0], 3.0);
        let m = tuning.fit(&data, &mut rng(3)).unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 2.0 && r.epsilon > 1.9, "{}", r.epsilon);
        assert_eq!(r.accountant, AccountantKind::Rdp);
        assert!(r.notes[0].contains("Poisson(3)"), "{:?}", r.notes);
        let sigma = r.noise[0].1;
        // One untuned run at the same target needs less noise (PLD there, RDP here: compare
        // with the RDP calibration of a single run).
        let mut single = base();
        single.budget.accountant = AccountantKind::Rdp;
        let single = single.fit(&data, &mut rng(4)).unwrap();
        assert!(
            sigma > single.privacy().noise[0].1,
            "{sigma} vs {:?}",
            single.privacy().noise
        );
        if m.coef().iter().any(|&c| c != 0.0) {
            assert!(accuracy(&m, &test) > 0.7, "{}", accuracy(&m, &test));
            let lr = r
                .noise
                .iter()
                .find(|(n, _)| n == "chosen_learning_rate")
                .unwrap()
                .1;
            assert!(tuning.learning_rates.contains(&lr), "{lr}");
        }
    }

    /// K ~ Poisson(1) is 0 with probability 1/e: that run releases the zero model, no
    /// learning rate, and a finite report (it used to carry a NaN learning rate).
    #[test]
    fn zero_trials_release_the_zero_model() {
        let (data, _) = logistic(400, 3, 4.0, 1);
        let tuning = HonestTuning::new(base(), vec![0.1], 1.0);
        let (mut zero, mut some) = (0, 0);
        for seed in 0..12 {
            let m = tuning.fit(&data, &mut rng(seed)).unwrap();
            let r = m.privacy();
            assert!(r.noise.iter().all(|(_, v)| v.is_finite()), "{:?}", r.noise);
            assert!(
                r.noise.iter().all(|(n, _)| n != "trials_run"),
                "{:?}",
                r.noise
            );
            let chosen = r.noise.iter().any(|(n, _)| n == "chosen_learning_rate");
            let zero_model = m.coef().iter().all(|&c| c == 0.0);
            assert_eq!(chosen, !zero_model, "{:?}", r.noise);
            if zero_model {
                zero += 1;
            } else {
                some += 1;
            }
        }
        // P(no K = 0 in 12 draws) = (1 − 1/e)^12 ≈ 0.4%, fixed seeds: both cases are seen.
        assert!(zero > 0 && some > 0, "{zero} zero, {some} non-zero");
    }

    #[test]
    fn trial_counts_follow_their_laws() {
        let t = HonestTuning::new(base(), vec![0.1], 4.0);
        let mut r = rng(5);
        let n = 20_000;
        let mean = (0..n)
            .map(|_| t.draw_trials(&mut r).unwrap() as f64)
            .sum::<f64>()
            / n as f64;
        // Poisson(4): standard error of the mean 2/√n ≈ 0.014.
        assert!((mean - 4.0).abs() < 0.06, "{mean}");
        // η = 1: P(K = k) = γ(1 − γ)^{k−1}, mean 1/γ.
        let mut tnb = t.clone();
        tnb.trials = Repetitions::TruncatedNegativeBinomial {
            eta: 1.0,
            gamma: 0.25,
        };
        let draws: Vec<u64> = (0..n).map(|_| tnb.draw_trials(&mut r).unwrap()).collect();
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 4.0).abs() < 0.1, "{mean}");
        let ones = draws.iter().filter(|&&k| k == 1).count() as f64 / n as f64;
        assert!((ones - 0.25).abs() < 0.015, "{ones}");
        assert_eq!(tnb.trials.mean().unwrap(), 4.0);
    }

    #[test]
    fn the_unaccounted_baseline_says_so() {
        let (data, _) = logistic(1000, 3, 3.0, 6);
        let m = TuningWithoutPrivacyAccounting::new(base(), vec![0.1, 1.0])
            .fit(&data, &mut rng(7))
            .unwrap();
        assert!(m.privacy().epsilon <= 2.0);
        assert!(
            m.privacy()
                .notes
                .iter()
                .any(|n| n.contains("NOT ACCOUNTED"))
        );
    }

    #[test]
    fn rejects_bad_settings() {
        let (data, _) = logistic(200, 2, 1.0, 8);
        let fit = |t: HonestTuning| t.fit(&data, &mut rng(1));
        assert!(fit(HonestTuning::new(base(), vec![], 2.0)).is_err());
        assert!(fit(HonestTuning::new(base(), vec![f64::NAN], 2.0)).is_err());
        let mut gamma = HonestTuning::new(base(), vec![0.1], 2.0);
        gamma.base.noise = SgdNoise::GammaBall;
        assert!(fit(gamma).is_err());
        let mut replace = HonestTuning::new(base(), vec![0.1], 2.0);
        replace.base.budget.neighbouring = Neighbouring::ReplaceOne;
        assert!(matches!(
            fit(replace),
            Err(Error::UnsupportedNeighbouring { .. })
        ));
        let mut split = HonestTuning::new(base(), vec![0.1], 2.0);
        split.validation_fraction = 1.0;
        assert!(fit(split).is_err());
    }
}
