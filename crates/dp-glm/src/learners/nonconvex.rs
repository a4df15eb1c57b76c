//! DP-GD for non-convex GLMs with private selection of an approximate stationary point
//! (paper 000, Thm 4.1).

use dp_accounting::{AccountantKind, Ledger, Mechanism, Neighbouring};
use dp_optim::{ClippedSum, L2Regulariser, NoisyGd, StepSize, Unconstrained, laplace_for};
use ndarray::Array1;
use rand::Rng;

use super::dpgd::full_batch_sigma;
use super::{
    Budget, PublicCount, check_memory, check_steps, ledger_of, positive, report, row_count,
    rows_note,
};
use crate::data::Dataset;
use crate::error::{Result, ensure};
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::model::LinearModel;

/// Label of the report-noisy-min selection in the ledger.
pub const SELECTION_LABEL: &str = "report-noisy-min over clipped gradient norms";

/// DP-GD keeping every iterate, then releasing the iterate with the smallest noisy mean
/// clipped gradient norm (paper 000, Thm 4.1): for non-convex smooth GLM losses (e.g. the
/// Savage loss) it finds an approximate stationary point.
///
/// The run is `θ_{t+1} = θ_t − η(g_t + λθ_t)`, `g_t = (Σ_i clip_L(∇ℓ_i(θ_t)) + N(0, σ²L²I))/n`
/// for `t < T`; then, with `ḡ_t = (1/n)Σ_i clip_L(∇ℓ_i(θ_t))` at every iterate
/// `θ_0, …, θ_T`, it releases `θ_{t*}`, `t* = argmin_t (‖ḡ_t‖ + Lap(2Δ/ε₂))`.
///
/// # Privacy
/// Paper 000, Thm 4.1 (and MATH §5). The gradient descent part is `T` Gaussian mechanisms
/// on a sum of gradients clipped to `L` (sensitivity `L` add/remove, `2L` replace-one),
/// calibrated to `(ε/2, δ)`. Each query `‖ḡ_t‖` has sensitivity `Δ = 2L/n` under replace-one
/// (`L/n` under add/remove, `n` public: `public_n`, or the data's count treated as public), so
/// report-noisy-min with Laplace noise of scale
/// `2Δ/ε₂` is `ε₂`-DP (Dwork & Roth 2014, Claim 3.9) for `ε₂ = ε/2`; it is recorded as
/// `Mechanism::pure_dp(ε/2)`. The report's spent ε prices the whole ledger (both parts) with
/// the budget's accountant; adaptive composition gives at most `(ε, δ)`.
#[derive(Debug, Clone, PartialEq)]
pub struct NonConvexDpGd {
    /// The loss (convex or not).
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, PLD accountant, replace-one (as paper 000).
    pub budget: Budget,
    /// Clipping norm `L` (default 1).
    pub clip: f64,
    /// Number of steps `T` (default 100).
    pub steps: usize,
    /// Step size η (default 1).
    pub learning_rate: f64,
    /// Ridge penalty λ (default 0).
    pub lambda: f64,
    /// The number of rows as a public value (default `None`: the data's count, treated as
    /// public). Under add/remove the true `n` is private; with `public_n` the noisy sums and
    /// the selection scores are divided by it and the gradient grid sized for it.
    pub public_n: Option<usize>,
}

impl NonConvexDpGd {
    /// The learner with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Pld, Neighbouring::ReplaceOne),
            clip: 1.0,
            steps: 100,
            learning_rate: 1.0,
            lambda: 0.0,
            public_n: None,
        }
    }

    budget_setter!();

    /// Fits the model.
    ///
    /// # Errors
    /// Invalid hyper-parameters or budget, labels outside the loss's domain, an accountant
    /// that cannot analyse the mechanisms under the relation, or a non-finite result;
    /// [`Error::ResourceLimit`](crate::Error::ResourceLimit) if the `steps + 1` iterates kept
    /// for the selection exceed [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES), or more
    /// than [`MAX_STEPS`](super::MAX_STEPS) steps.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let clip = positive("clip", self.clip)?;
        let eta = positive("learning_rate", self.learning_rate)?;
        ensure(self.steps >= 1, "steps", self.steps as f64, "must be >= 1")?;
        ensure(
            self.lambda.is_finite() && self.lambda >= 0.0,
            "lambda",
            self.lambda,
            "must be finite and >= 0",
        )?;
        self.budget.target()?;
        data.check_labels(&self.loss)?;
        check_steps("steps", self.steps as f64, self.steps as f64)?;
        // Every iterate is kept for the selection: (steps + 1)·d values.
        check_memory(
            "steps",
            self.steps as f64,
            (self.steps as f64 + 1.0) * data.n_features() as f64,
        )?;
        let rel = self.budget.neighbouring;
        let half = Budget {
            epsilon: self.budget.epsilon / 2.0,
            ..self.budget
        };
        let eps_select = self.budget.epsilon / 2.0;
        let (rows, dim) = (
            row_count(self.public_n, data.n_samples())?,
            data.n_features(),
        );
        let sigma = full_batch_sigma(&half, self.steps as u64, clip, dim)?;
        let n = rows as f64;
        let sensitivity = rel.sum_sensitivity_factor() * clip / n;
        // Report-noisy-min on the grid: discrete Laplace, the rounding's slack included in the
        // ε it achieves (≤ eps_select; dp_optim::laplace_for).
        let (laplace, laplace_scale, eps_achieved) = laplace_for(2.0 * sensitivity, eps_select, 2)?;

        let glm = GlmObjective::new(data, self.loss, 0.0, Scale::Mean)?;
        let objective = PublicCount {
            inner: &glm,
            n: rows,
        };
        let reg = L2Regulariser {
            lambda: self.lambda,
        };
        // One step at a time, so that every iterate is kept.
        let gd = NoisyGd::new(StepSize::Constant(eta), 1, clip, sigma, rel);
        let mut ledger = Ledger::new(rel);
        let mut iterates = Vec::with_capacity(self.steps + 1);
        let mut x: Array1<f64> = Array1::zeros(data.n_features());
        iterates.push(x.clone());
        for _ in 0..self.steps {
            let sol = gd.minimize(&objective, &reg, &Unconstrained, x.view(), rng, None)?;
            let step = ledger_of(sol.ledger)?;
            for e in step.entries() {
                ledger.record(e.mechanism.clone(), e.count, &e.label);
            }
            x = sol.x;
            iterates.push(x.clone());
        }

        // Report-noisy-min over the mean clipped gradient norms.
        let mut g = Array1::zeros(data.n_features());
        let mut scores = Array1::zeros(iterates.len());
        for (t, theta) in iterates.iter().enumerate() {
            objective.clipped_sum(theta.view(), None, clip, g.view_mut());
            scores[t] = g.dot(&g).sqrt() / n;
        }
        laplace.add_to(SELECTION_LABEL, rng, scores.view_mut())?;
        let mut best = (f64::INFINITY, 0);
        for (t, &score) in scores.iter().enumerate() {
            if score < best.0 {
                best = (score, t);
            }
        }
        ledger.record(Mechanism::pure_dp(eps_achieved)?, 1, SELECTION_LABEL);

        let noise = vec![
            ("noise_multiplier".to_string(), sigma),
            ("clip".to_string(), clip),
            ("steps".to_string(), self.steps as f64),
            ("selection_laplace_scale".to_string(), laplace_scale),
            ("selection_epsilon".to_string(), eps_achieved),
        ];
        let mut notes = vec![format!("released iterate {} of 0..={}", best.1, self.steps)];
        notes.extend(rows_note(
            rel,
            self.public_n,
            "the noisy gradient sums and the selection scores are divided by n",
        ));
        let report = report(&self.budget, ledger, noise, notes)?;
        let theta = iterates.swap_remove(best.1);
        LinearModel::new(theta, 0.0, self.loss, report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::learners::testdata::{accuracy, rng, separable};

    #[test]
    fn savage_loss_spends_at_most_the_target_and_learns() {
        let data = separable(2000);
        let m = NonConvexDpGd::new(Loss::Savage)
            .budget(2.0, 1e-5)
            .fit(&data, &mut rng(4))
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 2.0 && r.epsilon > 1.5, "{}", r.epsilon);
        assert_eq!(r.neighbouring, Neighbouring::ReplaceOne);
        let e = r.event.releases();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].mechanism.name(), e[0].count), ("gaussian", 100));
        assert_eq!((e[1].mechanism.name(), e[1].count), ("pure-dp", 1));
        assert_eq!(e[1].label, SELECTION_LABEL);
        // The grid release's rounding slack is paid inside ε₂ = 1: the Laplace scale is
        // (2Δ + slack)/ε₂ with Δ = 2L/n, a hair above 2Δ/ε₂, and the recorded ε at most 1.
        let eps2 = r
            .noise
            .iter()
            .find(|(k, _)| k == "selection_epsilon")
            .unwrap()
            .1;
        assert!(eps2 <= 1.0 && eps2 > 1.0 - 1e-6, "{eps2}");
        assert_eq!(e[1].mechanism, Mechanism::pure_dp(eps2).unwrap());
        let scale = r.noise.iter().find(|(k, _)| k == "selection_laplace_scale");
        let scale = scale.unwrap().1;
        let base = 2.0 * 2.0 / 2000.0;
        assert!(scale >= base && scale <= base * (1.0 + 1e-6), "{scale}");
        // The Gaussian part alone costs at most ε/2.
        let mut gd = Ledger::new(Neighbouring::ReplaceOne);
        gd.record(e[0].mechanism.clone(), e[0].count, &e[0].label);
        assert!(gd.epsilon(AccountantKind::Pld, 1e-5).unwrap() <= 1.0 + 1e-9);
        let acc = accuracy(&m, &data);
        assert!(acc > 0.9, "accuracy {acc}");
    }

    #[test]
    fn reproducible_and_add_remove_halves_the_sensitivity() {
        let data = separable(500);
        let fit = |s, rel| {
            let mut m = NonConvexDpGd::new(Loss::Savage);
            m.steps = 20;
            m.budget.neighbouring = rel;
            m.fit(&data, &mut rng(s)).unwrap()
        };
        assert_eq!(
            fit(3, Neighbouring::ReplaceOne),
            fit(3, Neighbouring::ReplaceOne)
        );
        let scale = |m: &LinearModel| m.privacy().noise[3].1;
        let a = fit(3, Neighbouring::AddRemove);
        let b = fit(3, Neighbouring::ReplaceOne);
        assert!((scale(&b) / scale(&a) - 2.0).abs() < 1e-12);
        assert!(a.privacy().epsilon <= 1.0 && b.privacy().epsilon <= 1.0);
    }

    #[test]
    fn rejects_bad_hyper_parameters() {
        let data = separable(20);
        let hp = |m: NonConvexDpGd| match m.fit(&data, &mut rng(1)).unwrap_err() {
            Error::InvalidHyperParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        let mut m = NonConvexDpGd::new(Loss::Savage);
        m.clip = 0.0;
        assert_eq!(hp(m), "clip");
        let mut m = NonConvexDpGd::new(Loss::Savage);
        m.steps = 0;
        assert_eq!(hp(m), "steps");
        let mut m = NonConvexDpGd::new(Loss::Savage);
        m.learning_rate = f64::INFINITY;
        assert_eq!(hp(m), "learning_rate");
        let mut m = NonConvexDpGd::new(Loss::Savage);
        m.lambda = f64::NAN;
        assert_eq!(hp(m), "lambda");
        let m = NonConvexDpGd::new(Loss::Savage).budget(1.0, 0.0);
        assert!(matches!(
            m.fit(&data, &mut rng(1)).unwrap_err(),
            Error::Accounting(_)
        ));
    }
}
