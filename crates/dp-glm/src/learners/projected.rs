//! Noisy projected gradient descent on a ball for smooth non-negative GLMs (paper 003,
//! Alg. 1; paper 004).

use dp_accounting::{AccountantKind, Neighbouring};
use dp_optim::{Averaging, ClippedSum, L2Ball, NoRegulariser, NoisyGd, Observer, StepSize};
use ndarray::Array1;
use rand::Rng;

use super::dpgd::full_batch_sigma;
use super::{
    Budget, PublicCount, check_steps, ledger_of, positive, report, row_count, rows_note,
    self_bounding_gradient,
};
use crate::data::Dataset;
use crate::error::{Result, ensure};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::streamed::{BlockSource, StreamedSum};
use crate::sufficient::StreamError;

/// What [`NoisyProjectedGd`] runs with: the clip `G`, `T`, the noise multiplier and `η`.
#[derive(Debug, Clone, Copy)]
struct Plan {
    clip: f64,
    steps: usize,
    sigma: f64,
    eta: f64,
}

/// Noisy projected gradient descent on the ball `‖w‖ ≤ B`, averaged iterate (paper 003,
/// Alg. 1; the lecture notes of paper 004 for logistic regression).
///
/// `w_{t+1} = Π_B(w_t − η(ḡ_t + ξ_t))` with `ḡ_t` the mean of the per-example gradients
/// clipped to `G = X(√(2H)·Y + H·B·X)` and `ξ_t ~ N(0, (σG/n)²I)`; the output is
/// `(1/T)Σ_t w_t`. The paper takes `T = n` steps (`paper_steps`), `n` full passes over the
/// data — 79 s at 50,000 × 20; by default `T = min(n, DEFAULT_STEPS)` (1000) steps. The
/// accounting has the same form for every `T` (`T` Gaussians, calibrated exactly). Here `H` is the loss's smoothness, and `X` (`‖x‖ ≤ X`) and
/// `Y` (`φ(0, y) ≤ Y²`) are public hyper-parameters: by the self-bounding property
/// `|φ'| ≤ √(2Hφ)` (MATH §9) the per-example gradients on the ball are at most `G` when the
/// data meet them, and the clip at `G` enforces the bound when they do not. The default step
/// size is `η = B/(G'√T)` with `G' = G√(1 + dσ²/n²)` the bound on the noisy gradient's second
/// moment (paper 004).
///
/// With the default `T < n` (no `steps`, no `learning_rate`) the step size is
/// `η = min(1/L, η_n·n/T)` instead, where `η_n = B/(G'_n√n)` is the paper's step at `T = n`
/// (`G'_n` with the noise `σ_n = σ√(n/T)` that `n` steps would need: Gaussians compose by
/// variance) and `L = H·X²` the smoothness of the loss on rows of norm `≤ X`. For a convex
/// `L`-smooth loss and `η ≤ 1/L` the averaged noisy iterate's excess risk is at most
/// `B²/(2ηT) + ηT·dσ²G²/(2n²T)`, a function of the travel `ηT` alone (`σ²/T` does not depend
/// on `T`): `T` steps of `η_n·n/T` travel as far as the paper's `n` steps and have the same
/// bound, while `1/L` keeps each step a descent step. The test
/// `default_steps_are_no_worse_than_the_papers` compares the two.
/// # Privacy
/// Paper 003, Thm 1 (privacy part) and paper 004: `T` Gaussian mechanisms on the mean
/// clipped gradient, sensitivity `2G/n` under replace-one (`G/n` add/remove, `n` public), which
/// compose exactly into one Gaussian (MATH §2). σ is calibrated **exactly** to the target by
/// the budget's accountant (exact by default). The paper's `σ² = 8G²T log(1/δ)/(n²ε²)` is a
/// rate statement, not a calibration (at δ = 1e-5 a target ε = 16 would give a true ε of
/// 19.1, MATH §9), and is not used. The projection and the averaging are post-processing.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyProjectedGd {
    /// The loss (smooth and non-negative for the paper's utility guarantee).
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, exact accountant, replace-one (as paper 003).
    pub budget: Budget,
    /// Radius `B` of the constraint ball (default 1).
    pub radius: f64,
    /// Public bound `X` on the feature norms (default 1).
    pub x_bound: f64,
    /// Public bound `Y` with `φ(0, y) ≤ Y²` (default 1).
    pub y_bound: f64,
    /// Number of steps `T` (default `min(n, DEFAULT_STEPS)`, or `n` with `paper_steps`).
    pub steps: Option<usize>,
    /// When `steps` is not set, take the paper's `T = n` (default false).
    pub paper_steps: bool,
    /// Step size η (default `B/(G'√T)`, see above).
    pub learning_rate: Option<f64>,
    /// The number of rows as a public value (default `None`: the data's count, treated as
    /// public). Under add/remove the true `n` is private; with `public_n` the noisy sum is
    /// divided by it, the grid of the grid-safe release sized for it, and the default steps
    /// and step size derive from it.
    pub public_n: Option<usize>,
}

impl NoisyProjectedGd {
    /// The learner with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Exact, Neighbouring::ReplaceOne),
            radius: 1.0,
            x_bound: 1.0,
            y_bound: 1.0,
            steps: None,
            paper_steps: false,
            learning_rate: None,
            public_n: None,
        }
    }

    /// The default number of steps on `n` examples: `n` with `paper_steps`, else
    /// `min(n, DEFAULT_STEPS)`.
    pub fn default_steps(&self, n: usize) -> usize {
        if self.paper_steps {
            n
        } else {
            n.min(Self::DEFAULT_STEPS)
        }
    }

    /// The cap on the default number of steps (paper 003 takes `T = n`).
    pub const DEFAULT_STEPS: usize = 1000;

    budget_setter!();

    /// Sets the radius `B`.
    pub fn radius(mut self, radius: f64) -> Self {
        self.radius = radius;
        self
    }

    /// The gradient bound `G = X(√(2H)·Y + H·B·X)` (the clipping norm).
    ///
    /// # Errors
    /// `B`, `X` or `Y` not finite and positive.
    pub fn gradient_bound(&self) -> Result<f64> {
        self_bounding_gradient(self.loss, self.radius, self.x_bound, self.y_bound)
    }

    /// Fits the model.
    ///
    /// # Errors
    /// Invalid hyper-parameters or budget, labels outside the loss's domain, an accountant
    /// that cannot analyse the Gaussian under the relation, or a non-finite result;
    /// [`Error::ResourceLimit`](crate::Error::ResourceLimit) for more than
    /// [`MAX_STEPS`](super::MAX_STEPS) steps.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        self.fit_with_observer(data, rng, None)
    }

    /// [`NoisyProjectedGd::fit`], showing every optimiser step to `observer`
    /// (post-processing of the released noisy gradients; a progress display).
    ///
    /// # Errors
    /// As [`NoisyProjectedGd::fit`].
    pub fn fit_with_observer<R: Rng + ?Sized>(
        &self,
        data: &Dataset,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LinearModel> {
        self.fit_rows(data, rng, observer)
    }

    sparse_fits! {
        NoisyProjectedGd,
        ": each pass costs `O(nnz + d)`, and the exact clipped sums equal the dense ones";

        /// [`NoisyProjectedGd::fit_with_observer`] on dense or sparse rows: the hyper-parameters
        /// and labels checked, the run planned for the public row count, the noisy descent on the
        /// mean objective.
        fn fit_rows(&self, data, rng, observer) {
            self.loss.validate()?;
            let n = row_count(self.public_n, data.n_samples())?;
            let plan = self.plan(n, data.n_features())?;
            data.check_labels(&self.loss)?;
            let glm = data.mean_objective(self.loss)?;
            self.run(plan, &PublicCount { inner: &glm, n }, rng, observer)
        }
    }

    /// [`NoisyProjectedGd::fit`] on data read block by block: `open()` yields the blocks
    /// anew for each pass (one pass counts and checks the rows, then one per step;
    /// [`crate::streamed::StreamedSum`]), memory `O(d)` plus one block. The default steps
    /// and step size derive from `public_n` or the counted rows, as in memory; the exact
    /// clipped sums do not depend on the blocks, so the model is bit-identical to
    /// [`NoisyProjectedGd::fit`]'s on the same rows with the same `rng`.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`StreamError::Fit`] as
    /// [`NoisyProjectedGd::fit`] and [`crate::streamed::StreamedSum::new`].
    pub fn fit_blocks<R, S>(
        &self,
        source: S,
        rng: &mut R,
    ) -> std::result::Result<LinearModel, StreamError<S::Error>>
    where
        R: Rng + ?Sized,
        S: BlockSource,
    {
        // The hyper-parameters that do not depend on the data, before the first pass.
        self.gradient_bound()?;
        if let Some(eta) = self.learning_rate {
            positive("learning_rate", eta)?;
        }
        StreamedSum::new(source, self.loss, self.public_n)?.fit_with(|sum| {
            let plan = self.plan(sum.n_examples(), sum.dim())?;
            self.run(plan, sum, rng, None)
        })
    }

    /// The clip, steps, noise multiplier and step size for `n` (public) rows of `dim`
    /// features.
    fn plan(&self, n: usize, dim: usize) -> Result<Plan> {
        let clip = self.gradient_bound()?;
        let d = dim as f64;
        let steps = self.steps.unwrap_or_else(|| self.default_steps(n));
        ensure(steps >= 1, "steps", steps as f64, "must be >= 1")?;
        check_steps("steps", steps as f64, steps as f64)?;
        if let Some(eta) = self.learning_rate {
            positive("learning_rate", eta)?;
        }
        let sigma = full_batch_sigma(&self.budget, steps as u64, clip, dim)?;
        let nf = n as f64;
        // The paper's step for `t` steps whose noise multiplier is `s`.
        let paper_eta = |t: f64, s: f64| {
            let second_moment = clip * (1.0 + d * s * s / (nf * nf)).sqrt();
            self.radius / (second_moment * t.sqrt())
        };
        let t = steps as f64;
        let eta = match self.learning_rate {
            Some(eta) => eta,
            // Defaulted T below n: the paper's travel η_n·n in T steps, at most 1/L.
            None if self.steps.is_none() && steps < n => {
                let smoothness = self.loss.smoothness() * self.x_bound * self.x_bound;
                let eta = paper_eta(nf, sigma * (nf / t).sqrt()) * nf / t;
                eta.min(1.0 / smoothness)
            }
            None => paper_eta(t, sigma),
        };
        Ok(Plan {
            clip,
            steps,
            sigma,
            eta,
        })
    }

    /// The noisy projected descent of `plan` on `objective` (its `n` the public count) and
    /// the report.
    fn run<S, R>(
        &self,
        plan: Plan,
        objective: &S,
        rng: &mut R,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LinearModel>
    where
        S: ClippedSum + ?Sized,
        R: Rng + ?Sized,
    {
        let Plan {
            clip,
            steps,
            sigma,
            eta,
        } = plan;
        let gd = NoisyGd::new(
            StepSize::Constant(eta),
            steps,
            clip,
            sigma,
            self.budget.neighbouring,
        )
        .averaging(Averaging::Uniform);
        let ball = L2Ball {
            radius: self.radius,
        };
        let x0 = Array1::zeros(objective.dim());
        let sol = gd.minimize(objective, &NoRegulariser, &ball, x0.view(), rng, observer)?;
        let ledger = ledger_of(sol.ledger)?;
        let noise = vec![
            ("noise_multiplier".to_string(), sigma),
            ("clip".to_string(), clip),
            ("steps".to_string(), steps as f64),
            ("radius".to_string(), self.radius),
            ("learning_rate".to_string(), eta),
        ];
        let notes = rows_note(
            self.budget.neighbouring,
            self.public_n,
            "the noisy gradient sum is divided by n; the default \
             number of steps (min(n, 1000), or n) and step size derive from n",
        );
        let report = report(&self.budget, ledger, noise, notes.into_iter().collect())?;
        LinearModel::new(sol.x, 0.0, self.loss, report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::learners::testdata::{accuracy, logistic, non_private, risk, rng, separable};
    use dp_accounting::Mechanism;

    #[test]
    fn spends_at_most_the_target_and_reports_everything() {
        let data = separable(2000);
        let m = NoisyProjectedGd::new(Loss::Logistic)
            .radius(5.0)
            .fit(&data, &mut rng(2))
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.99, "{}", r.epsilon);
        assert_eq!(r.accountant, AccountantKind::Exact);
        let e = r.event.releases();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].count, 1000, "T = min(n, 1000) by default");
        // G = X(√(2H)Y + HBX) = √0.5 + 1.25 for the logistic loss, B = 5.
        let g = 0.5f64.sqrt() + 1.25;
        assert!((r.noise[1].1 - g).abs() < 1e-12);
        // The per-step sensitivity includes the exact release's quantisation slack.
        let d = data.n_features();
        let (release, _) = dp_optim::sum_multiplier(r.noise[0].1, g, d).unwrap();
        let slack = release.sensitivity() - g;
        assert!(slack > 0.0 && slack < 1e-3 * g);
        let continuous = Mechanism::gaussian(r.noise[0].1 * g, release.sensitivity()).unwrap();
        assert_eq!(
            e[0].mechanism,
            continuous
                .clone()
                .with_grid(release.discrete_gaussian().unwrap())
        );
        // The exact accountant's answer includes the discrete noise's adjustment: above the
        // continuous idealisation's ε, by a tiny amount (σ_g ≥ 2^24 grid units), and noted.
        let mut ideal = dp_accounting::Ledger::new(r.event.neighbouring());
        ideal.record(continuous, e[0].count, "idealised");
        let ideal = ideal.epsilon(AccountantKind::Exact, r.delta).unwrap();
        assert!(
            r.epsilon > ideal && r.epsilon - ideal < 1e-8,
            "{} vs {ideal}",
            r.epsilon
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("discrete_gaussian_epsilon_adjustment")),
            "{:?}",
            r.notes
        );
        assert!(m.coef().dot(&m.coef()).sqrt() <= 5.0 + 1e-9);
        let acc = accuracy(&m, &data);
        assert!(acc > 0.95, "accuracy {acc}");
    }

    #[test]
    fn calibration_is_exact_not_the_papers_rate() {
        // At ε = 16, δ = 1e-5 the paper's σ² = 8G²T log(1/δ)/(n²ε²) is too small (true ε 19.1);
        // the learner's σ gives exactly ε ≤ 16.
        let data = separable(200);
        let mut m = NoisyProjectedGd::new(Loss::Logistic).budget(16.0, 1e-5);
        m.steps = Some(50);
        let fitted = m.fit(&data, &mut rng(1)).unwrap();
        let r = fitted.privacy();
        assert!(r.epsilon <= 16.0 && r.epsilon > 15.9, "{}", r.epsilon);
        // Noise std of the mean gradient per step, in units of the sensitivity 2G/n:
        let ours = r.noise[0].1 / 2.0;
        let paper = (8.0 * 50.0 * (1e5f64).ln() / (4.0 * 256.0)).sqrt();
        assert!(ours > paper, "calibrated {ours} vs paper {paper}");
    }

    #[test]
    fn reproducible_and_rejects_bad_hyper_parameters() {
        let data = separable(100);
        let fit = |m: &NoisyProjectedGd, s| m.fit(&data, &mut rng(s));
        let m = NoisyProjectedGd::new(Loss::Logistic);
        assert_eq!(fit(&m, 5).unwrap(), fit(&m, 5).unwrap());
        let hp = |m: NoisyProjectedGd| match m.fit(&data, &mut rng(1)).unwrap_err() {
            Error::InvalidHyperParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            hp(NoisyProjectedGd::new(Loss::Logistic).radius(-1.0)),
            "radius"
        );
        let mut m = NoisyProjectedGd::new(Loss::Logistic);
        m.x_bound = f64::NAN;
        assert_eq!(hp(m), "x_bound");
        let mut m = NoisyProjectedGd::new(Loss::Logistic);
        m.y_bound = 0.0;
        assert_eq!(hp(m), "y_bound");
        let mut m = NoisyProjectedGd::new(Loss::Logistic);
        m.steps = Some(0);
        assert_eq!(hp(m), "steps");
        let mut m = NoisyProjectedGd::new(Loss::Logistic);
        m.learning_rate = Some(f64::INFINITY);
        assert_eq!(hp(m), "learning_rate");
        assert!(
            NoisyProjectedGd::new(Loss::Logistic)
                .budget(f64::NAN, 1e-5)
                .fit(&data, &mut rng(1))
                .is_err()
        );
    }

    /// The default `T = min(n, 1000)` against the paper's `T = n` at n = 4000 (the same ε; the
    /// paper's T spends it on 4× more, 4× noisier steps): the mean excess empirical risk over 12
    /// seeds is no worse, within three standard errors of the difference of the two means.
    ///
    /// Both have the same bound (module docs), so the margin is the noise's: one run's excess
    /// risk varies by about 30% with the noise drawn, a 12-seed mean by about 9%, and a fixed
    /// 10% margin failed for some streams of the same law. The margin is estimated from the
    /// runs themselves, so it follows the noise whatever the stream. The check still has
    /// power: 1000 steps of the untuned step `B/(G'√T)` (what the default would be without
    /// the travel rule `η_n·n/T`) are worse than the paper's by more than that margin.
    #[test]
    fn default_steps_are_no_worse_than_the_papers() {
        let (train, _) = logistic(4000, 5, 2.0, 31);
        let best = risk(
            &non_private(&train, Loss::Logistic, 0.0),
            &train,
            Loss::Logistic,
        );
        // The mean excess risk over 12 seeds and the variance of that mean.
        let excess = |m: &NoisyProjectedGd| -> (f64, f64) {
            let runs: Vec<f64> = (0..12)
                .map(|s| {
                    let fitted = m.fit(&train, &mut rng(300 + s)).unwrap();
                    risk(&fitted.coef().to_owned(), &train, Loss::Logistic) - best
                })
                .collect();
            let k = runs.len() as f64;
            let mean = runs.iter().sum::<f64>() / k;
            let var = runs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (k - 1.0);
            (mean, var / k)
        };
        let learner = NoisyProjectedGd::new(Loss::Logistic).radius(3.0);
        let mut paper = learner.clone();
        paper.paper_steps = true;
        let mut untuned = learner.clone();
        untuned.steps = Some(1000);
        let (default, default_var) = excess(&learner);
        let (paper, paper_var) = excess(&paper);
        let (untuned, untuned_var) = excess(&untuned);
        eprintln!(
            "excess risk at n = 4000: default T {default} (se {}), paper's T = n {paper} (se {}), \
             untuned T = 1000 {untuned} (se {})",
            default_var.sqrt(),
            paper_var.sqrt(),
            untuned_var.sqrt()
        );
        let margin = |var: f64| 3.0 * (var + paper_var).sqrt();
        assert!(
            default <= paper + margin(default_var),
            "{default} vs {paper}"
        );
        assert!(
            untuned > paper + margin(untuned_var),
            "{untuned} vs {paper}"
        );
        let m = NoisyProjectedGd::new(Loss::Logistic);
        assert_eq!((m.default_steps(500), m.default_steps(4000)), (500, 1000));
    }

    #[test]
    fn excess_risk_falls_with_n_and_epsilon() {
        // Mean excess empirical risk over the unconstrained optimum, 12 seeds (3 were not
        // enough: their mean at ε = 1 varied by 2× between seed windows); ‖θ*‖ = 2 < B = 3.
        // Each comparison must hold with the larger setting below 80% of the smaller one (over
        // four windows of 12 seeds: ε = 8 at 0.43–0.64 of ε = 1, n = 4000 at 0.15–0.20).
        let excess = |n: usize, epsilon: f64| -> f64 {
            let (train, _) = logistic(n, 5, 2.0, 31);
            let best = risk(
                &non_private(&train, Loss::Logistic, 0.0),
                &train,
                Loss::Logistic,
            );
            (0..12)
                .map(|s| {
                    let m = NoisyProjectedGd::new(Loss::Logistic)
                        .budget(epsilon, 1e-5)
                        .radius(3.0)
                        .fit(&train, &mut rng(200 + s))
                        .unwrap();
                    risk(&m.coef().to_owned(), &train, Loss::Logistic) - best
                })
                .sum::<f64>()
                / 12.0
        };
        let small = excess(500, 1.0);
        let more_data = excess(4000, 1.0);
        let more_eps = excess(500, 8.0);
        eprintln!("excess risk: n=500,eps=1 {small}; n=4000 {more_data}; eps=8 {more_eps}");
        assert!(more_data < 0.8 * small, "{more_data} vs {small}");
        assert!(more_eps < 0.8 * small, "{more_eps} vs {small}");
    }
}
