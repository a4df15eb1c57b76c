//! Confidence boosting (paper 003, App. D): train on disjoint parts, keep the best model by
//! report-noisy-max on a held-out part.

use dp_accounting::{AccountantKind, Ledger, Mechanism, Neighbouring};
use dp_optim::laplace_for;
use rand::Rng;
use rand::seq::SliceRandom;

use super::grid_search::RadiusLearner;
use super::{clipped_mean_loss, loss_bound};
use crate::data::Dataset;
use crate::error::{Error, Result, ensure};
use crate::learners::{Budget, report};
use crate::model::LinearModel;

/// The label of the noisy selection among the models.
const SELECTION_LABEL: &str = "report-noisy-max over the models' held-out losses";

/// Paper 003, App. D: split the data at random into `m + 1` equal parts, fit the learner at
/// radius `B` and `(ε/2, δ)` on each of the first `m`, score each model by its mean loss on the
/// last part with every example's loss clipped to `[0, Λ(B)]` (`Λ(B) = (Y + √(H/2)·B·X)²`), and
/// return the model with the smallest noisy score: report-noisy-max with Laplace noise of
/// scale `2Δ/(ε/2)`, `Δ = Λ(B)/|held-out part|`.
///
/// # Privacy
/// Replace-one (the parts are sized by `n`; add/remove is refused): the parts are disjoint and chosen independently of the data,
/// so a record changes the input of one run only (parallel composition: the `m` runs together
/// are `(ε/2, δ)`, recorded once in the ledger) or only the held-out scores; report-noisy-max
/// with `Lap(2Δ/ε')` noise is `ε'`-DP for scores of sensitivity `Δ` (Dwork & Roth 2014,
/// Claim 3.9, with the factor 2 covering non-monotone scores), here `ε' = ε/2`. Sequential
/// composition of the two gives the reported `(ε, δ)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfidenceBoosting<L> {
    /// The learner fitted on each part.
    pub learner: L,
    /// Total ε (finite, > 0).
    pub epsilon: f64,
    /// Total δ in (0, 1).
    pub delta: f64,
    /// The radius `B` the learner is fitted at.
    pub radius: f64,
    /// Number of models `m` (default 4).
    pub models: usize,
    /// Public bound `X` on the row norms (default 1).
    pub x_bound: f64,
    /// Public bound `Y` with `φ(0, y) ≤ Y²` (default 1).
    pub y_bound: f64,
}

impl<L: RadiusLearner> ConfidenceBoosting<L> {
    /// Boosting of `learner` at radius `radius` with the defaults above.
    pub fn new(learner: L, radius: f64, epsilon: f64, delta: f64) -> Self {
        Self {
            learner,
            epsilon,
            delta,
            radius,
            models: 4,
            x_bound: 1.0,
            y_bound: 1.0,
        }
    }

    /// Runs it; the report names the chosen part.
    ///
    /// # Errors
    /// Invalid settings, fewer rows than parts, the learner's errors.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let rel = self.learner.neighbouring();
        let budget = Budget::new(self.epsilon, self.delta, AccountantKind::Pld, rel);
        budget.target()?;
        // The parts are sized by n: under add/remove one added row moves the boundaries of
        // every part, and the runs are no longer on parts that differ in one row.
        budget.require_relation(
            Neighbouring::ReplaceOne,
            "confidence boosting (parts sized by n)",
        )?;
        let m = self.models;
        ensure(m >= 1, "models", m as f64, "must be >= 1")?;
        for (name, v) in [
            ("radius", self.radius),
            ("x_bound", self.x_bound),
            ("y_bound", self.y_bound),
        ] {
            ensure(v > 0.0 && v.is_finite(), name, v, "must be finite and > 0")?;
        }
        let n = data.n_samples();
        let part = n / (m + 1);
        ensure(part >= 1, "n", n as f64, "needs at least one row per part")?;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        let held_out = data.select_rows(&order[m * part..])?;
        let loss = self.learner.loss();
        let cap = loss_bound(loss, self.radius, self.x_bound, self.y_bound);
        let sensitivity = cap / held_out.n_samples() as f64;
        let eps_sel = self.epsilon / 2.0;
        // Report-noisy-max on the grid: discrete Laplace, the rounding's slack included in the
        // ε it achieves (≤ eps_sel; dp_optim::laplace_for).
        let (laplace, scale, eps_achieved) = laplace_for(2.0 * sensitivity, eps_sel, 2)?;
        let mut models = Vec::with_capacity(m);
        let mut scores = ndarray::Array1::zeros(m);
        let mut ledger = Ledger::new(rel);
        for j in 0..m {
            let train = data.select_rows(&order[j * part..(j + 1) * part])?;
            let model =
                self.learner
                    .fit_at(self.radius, self.epsilon / 2.0, self.delta, &train, rng)?;
            if j == 0 {
                for e in model.privacy().event.releases() {
                    let label = format!("one of {m} runs on disjoint parts: {}", e.label);
                    ledger.record(e.mechanism.clone(), e.count, &label);
                }
            }
            scores[j] = clipped_mean_loss(model.coef(), &held_out, loss, cap);
            models.push(model);
        }
        laplace.add_to(SELECTION_LABEL, rng, scores.view_mut())?;
        let mut best: Option<(f64, usize)> = None;
        for (j, &noisy) in scores.iter().enumerate() {
            if best.is_none_or(|b| noisy < b.0) {
                best = Some((noisy, j));
            }
        }
        let Some((_, chosen)) = best else {
            return Err(Error::Privacy("no model was trained".into()));
        };
        let model = models.swap_remove(chosen);
        ledger.record(Mechanism::pure_dp(eps_achieved)?, 1, SELECTION_LABEL);
        let noise = vec![
            ("laplace_scale".to_string(), scale),
            ("models".to_string(), m as f64),
            ("chosen_model".to_string(), chosen as f64),
            ("radius".to_string(), self.radius),
        ];
        let notes = vec![format!(
            "paper 003 App. D: {m} models on disjoint parts (parallel composition: one run's \
             guarantee, listed once), report-noisy-max at epsilon/2 on a held-out part"
        )];
        let report = report(&budget, ledger, noise, notes)?;
        LinearModel::new(model.coef().to_owned(), 0.0, loss, report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::NoisyProjectedGd;
    use crate::learners::testdata::{logistic, rng};
    use crate::loss::Loss;

    #[test]
    fn keeps_a_good_model_within_budget() {
        let (data, _) = logistic(5000, 3, 3.0, 1);
        let mut inner = NoisyProjectedGd::new(Loss::Logistic);
        inner.steps = Some(100);
        let b = ConfidenceBoosting::new(inner, 4.0, 4.0, 1e-5);
        let m = b.fit(&data, &mut rng(2)).unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 4.0, "{}", r.epsilon);
        assert_eq!(r.event.releases().len(), 2);
        let z = data.x().dot(&m.coef());
        let right = z
            .iter()
            .zip(data.y())
            .filter(|(z, y)| z.signum() == **y)
            .count();
        assert!(right as f64 / 5000.0 > 0.7, "{right}");
    }

    #[test]
    fn rejects_too_few_rows_and_bad_settings() {
        let (data, _) = logistic(3, 2, 1.0, 3);
        let b = ConfidenceBoosting::new(NoisyProjectedGd::new(Loss::Logistic), 1.0, 1.0, 1e-5);
        assert!(b.fit(&data, &mut rng(1)).is_err());
        let mut zero = b.clone();
        zero.models = 0;
        assert!(zero.fit(&data, &mut rng(1)).is_err());
    }
}
