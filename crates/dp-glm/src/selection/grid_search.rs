//! Private grid search over the norm bound `B` (paper 003, Alg. 4).

use dp_accounting::{AccountantKind, Ledger, Mechanism, Neighbouring};
use ndarray::Array1;
use rand::Rng;
use rand::seq::SliceRandom;

use super::gem::{Candidate, select};
use super::{clipped_mean_loss, loss_bound};
use crate::data::Dataset;
use crate::error::{Error, Result, ensure};
use crate::learners::{Budget, DpGd, NoisyProjectedGd, report};
use crate::loss::Loss;
use crate::model::LinearModel;

/// A learner that can be fitted on the ball of radius `B` at a given (ε, δ).
pub trait RadiusLearner {
    /// The loss it minimises.
    fn loss(&self) -> Loss;

    /// The neighbouring relation of its guarantee.
    fn neighbouring(&self) -> Neighbouring;

    /// Fits at radius `radius` with budget `(epsilon, delta)`.
    ///
    /// # Errors
    /// The learner's.
    fn fit_at<R: Rng + ?Sized>(
        &self,
        radius: f64,
        epsilon: f64,
        delta: f64,
        data: &Dataset,
        rng: &mut R,
    ) -> Result<LinearModel>;
}

impl RadiusLearner for NoisyProjectedGd {
    fn loss(&self) -> Loss {
        self.loss
    }

    fn neighbouring(&self) -> Neighbouring {
        self.budget.neighbouring
    }

    fn fit_at<R: Rng + ?Sized>(
        &self,
        radius: f64,
        epsilon: f64,
        delta: f64,
        data: &Dataset,
        rng: &mut R,
    ) -> Result<LinearModel> {
        self.clone()
            .budget(epsilon, delta)
            .radius(radius)
            .fit(data, rng)
    }
}

impl RadiusLearner for DpGd {
    fn loss(&self) -> Loss {
        self.loss
    }

    fn neighbouring(&self) -> Neighbouring {
        self.budget.neighbouring
    }

    fn fit_at<R: Rng + ?Sized>(
        &self,
        radius: f64,
        epsilon: f64,
        delta: f64,
        data: &Dataset,
        rng: &mut R,
    ) -> Result<LinearModel> {
        let mut l = self.clone().budget(epsilon, delta);
        l.radius = Some(radius);
        l.fit(data, rng)
    }
}

/// The largest number of radii [`PrivateGridSearch`] tries (64, radii up to `2^64`): each is
/// a full run, and beyond `2^511` the loss bound `Λ(B)` is not even a finite number. More is
/// refused with [`Error::ResourceLimit`] before anything runs.
pub const MAX_CANDIDATES: usize = 64;

/// Paper 003, Alg. 4: split the data in random halves `S1`, `S2`; fit the learner on `S1` at
/// each radius `B_j = 2^j` (`j = 1..K`) with `(ε/(2K), δ/(2K))`; score each model by its mean
/// loss on `S2`, each example's loss clipped to `[0, Λ(B_j)]` with
/// `Λ(B) = (Y + √(H/2)·B·X)²`; pick among the models and the zero model with the generalised
/// exponential mechanism at `ε/2` (the zero model scores the data-independent `Y²`).
/// Rows of `S2` are scored as given: the clip at `Λ(B_j)` bounds every example's
/// contribution whatever the data. (The paper's extra penalty term, a function of public
/// values only, is not added: it was lost in the text we have.)
///
/// # Privacy
/// Paper 003, Thm 6 (privacy part), under replace-one: the `K` runs on `S1` compose to at most
/// `(ε/2, δ/2)`; each score has sensitivity `Δ_j = Λ(B_j)/|S2|`, so the selection on the
/// disjoint `S2` is `ε/2`-DP (Raskhodnikova & Smith 2016); the split is data-independent.
/// The report prices the ledger of every released mechanism (the `K` runs' and the selection's
/// pure-ε step) with the PLD accountant, which is never above the basic-composition total
/// `(ε, δ/2)` the paper states.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateGridSearch<L> {
    /// The learner fitted at each radius.
    pub learner: L,
    /// Total ε (finite, > 0).
    pub epsilon: f64,
    /// Total δ in (0, 1).
    pub delta: f64,
    /// Number of radii `K` (default 6: `B ∈ {2, 4, …, 64}`).
    pub candidates: usize,
    /// Public bound `X` on the row norms (default 1).
    pub x_bound: f64,
    /// Public bound `Y` with `φ(0, y) ≤ Y²` (default 1).
    pub y_bound: f64,
    /// The GEM's failure probability β (default 0.05).
    pub beta: f64,
}

impl<L: RadiusLearner> PrivateGridSearch<L> {
    /// Grid search around `learner` with the defaults above.
    pub fn new(learner: L, epsilon: f64, delta: f64) -> Self {
        Self {
            learner,
            epsilon,
            delta,
            candidates: 6,
            x_bound: 1.0,
            y_bound: 1.0,
            beta: 0.05,
        }
    }

    /// `Λ(B) = (Y + √(H/2)·B·X)²`, the bound on a non-negative `H`-smooth loss on the ball.
    pub fn loss_bound(&self, radius: f64) -> f64 {
        loss_bound(self.learner.loss(), radius, self.x_bound, self.y_bound)
    }

    /// Runs the search; the returned model's report names the chosen radius (`0` for the zero
    /// model).
    ///
    /// # Errors
    /// Invalid settings, a learner not under replace-one, fewer than 4 rows, the learners'
    /// and the selection's errors; [`Error::ResourceLimit`] for more than [`MAX_CANDIDATES`]
    /// radii.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let budget = Budget::new(
            self.epsilon,
            self.delta,
            AccountantKind::Pld,
            Neighbouring::ReplaceOne,
        );
        budget.target()?;
        let k = self.candidates;
        ensure(k >= 1, "candidates", k as f64, "must be >= 1")?;
        if k > MAX_CANDIDATES {
            return Err(Error::ResourceLimit {
                name: "candidates",
                value: k as f64,
                needed: k as f64,
                limit: MAX_CANDIDATES as f64,
                unit: "radii",
            });
        }
        ensure(
            self.x_bound > 0.0 && self.x_bound.is_finite(),
            "x_bound",
            self.x_bound,
            "must be finite and > 0",
        )?;
        ensure(
            self.y_bound > 0.0 && self.y_bound.is_finite(),
            "y_bound",
            self.y_bound,
            "must be finite and > 0",
        )?;
        if self.learner.neighbouring() != Neighbouring::ReplaceOne {
            return Err(Error::UnsupportedNeighbouring {
                learner: "private grid search (paper 003, Alg. 4)",
                requested: self.learner.neighbouring(),
                supported: Neighbouring::ReplaceOne,
            });
        }
        let n = data.n_samples();
        ensure(n >= 4, "n", n as f64, "needs at least 4 rows to split")?;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        let (s1, s2) = (
            data.select_rows(&order[..n / 2])?,
            data.select_rows(&order[n / 2..])?,
        );
        let m = s2.n_samples() as f64;
        let loss = self.learner.loss();
        let (eps_run, delta_run) = (
            self.epsilon / (2.0 * k as f64),
            self.delta / (2.0 * k as f64),
        );
        let mut ledger = Ledger::new(Neighbouring::ReplaceOne);
        let mut models = Vec::with_capacity(k);
        let mut candidates = Vec::with_capacity(k + 1);
        for j in 1..=k {
            let radius = 2f64.powi(j as i32);
            let model = self.learner.fit_at(radius, eps_run, delta_run, &s1, rng)?;
            for e in model.privacy().event.releases() {
                ledger.record(
                    e.mechanism.clone(),
                    e.count,
                    &format!("B = {radius}: {}", e.label),
                );
            }
            let cap = self.loss_bound(radius);
            let score = clipped_mean_loss(model.coef(), &s2, loss, cap);
            candidates.push(Candidate {
                score,
                sensitivity: cap / m,
            });
            models.push((radius, model));
        }
        candidates.push(Candidate {
            score: self.y_bound * self.y_bound,
            sensitivity: 0.0,
        });
        const SELECTION: &str = "generalised exponential mechanism over the radii";
        let chosen = select(SELECTION, &candidates, self.epsilon / 2.0, self.beta, rng)?;
        ledger.record(Mechanism::pure_dp(self.epsilon / 2.0)?, 1, SELECTION);
        let (radius, coef) = match models.get(chosen) {
            Some((r, m)) => (*r, m.coef().to_owned()),
            None => (0.0, Array1::zeros(data.n_features())),
        };
        let noise = vec![
            ("chosen_radius".to_string(), radius),
            ("candidates".to_string(), k as f64),
            ("epsilon_per_run".to_string(), eps_run),
            ("delta_per_run".to_string(), delta_run),
            ("epsilon_selection".to_string(), self.epsilon / 2.0),
        ];
        let notes = vec![format!(
            "paper 003 Alg. 4: {k} radii 2..2^{k} fitted on a random half at ({eps_run}, \
             {delta_run}) each, GEM at epsilon/2 on the other half; basic composition gives \
             ({}, {})",
            self.epsilon,
            self.delta / 2.0
        )];
        let report = report(&budget, ledger, noise, notes)?;
        LinearModel::new(coef, 0.0, loss, report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::{logistic, rng};

    #[test]
    fn picks_a_useful_radius_and_reports_the_whole_search() {
        // ‖θ*‖ = 6: radii 2 and 4 underfit; at a generous ε the search should not pick them
        // nor the zero model.
        let (data, _) = logistic(4000, 3, 6.0, 1);
        let mut inner = NoisyProjectedGd::new(Loss::Logistic);
        inner.steps = Some(200);
        inner.y_bound = std::f64::consts::LN_2.sqrt();
        let mut search = PrivateGridSearch::new(inner, 8.0, 1e-5);
        search.candidates = 5;
        search.y_bound = std::f64::consts::LN_2.sqrt();
        let m = search.fit(&data, &mut rng(2)).unwrap();
        let r = m.privacy();
        let chosen = r.noise[0].1;
        assert!(chosen >= 4.0, "chose radius {chosen}");
        assert!(r.epsilon <= 8.0, "{}", r.epsilon);
        assert_eq!(r.neighbouring, Neighbouring::ReplaceOne);
        // Five runs' mechanisms plus the selection.
        assert_eq!(r.event.releases().len(), 6);
        assert!(r.event.releases()[5].label.contains("exponential"));
    }

    #[test]
    fn loss_bound_and_errors() {
        let s = PrivateGridSearch::new(NoisyProjectedGd::new(Loss::Squared), 1.0, 1e-5);
        // H = 1, X = Y = 1: (1 + √(1/2)·B)².
        assert!((s.loss_bound(2.0) - (1.0 + 2f64.sqrt()).powi(2)).abs() < 1e-12);
        let (data, _) = logistic(100, 2, 1.0, 3);
        let mut add_remove = NoisyProjectedGd::new(Loss::Logistic);
        add_remove.budget.neighbouring = Neighbouring::AddRemove;
        assert!(matches!(
            PrivateGridSearch::new(add_remove, 1.0, 1e-5).fit(&data, &mut rng(1)),
            Err(Error::UnsupportedNeighbouring { .. })
        ));
        let mut zero = PrivateGridSearch::new(NoisyProjectedGd::new(Loss::Logistic), 1.0, 1e-5);
        zero.candidates = 0;
        assert!(zero.fit(&data, &mut rng(1)).is_err());
    }
}
