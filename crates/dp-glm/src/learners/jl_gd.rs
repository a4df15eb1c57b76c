//! The JL method for smooth non-negative GLMs (paper 003, Alg. 2): project the features with
//! a data-oblivious Johnson–Lindenstrauss matrix, run noisy projected GD in `R^k`, lift back.

use rand::Rng;

use super::{NoisyProjectedGd, check_memory, positive, row_count};
use crate::data::Dataset;
use crate::error::{Result, ensure};
use crate::jl::JlProjection;
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::preprocess::BallProjector;

/// Paper 003, Alg. 2: draw `Φ ∈ R^{k×d}` with `N(0, 1/k)` entries, map `x ↦ Φx`, run
/// [`NoisyProjectedGd`] in `R^k` on the ball of radius `2B`, return `Φᵀw̃ ∈ R^d` (not
/// projected).
///
/// The default `k` is the paper's `(B·H·X·log(2n/δ)·nε/(Y·X + H·B·X²))^{2/3}`, rounded up and
/// capped at `d` (a projection to `k ≥ d` dimensions gains nothing). The gradient bound in
/// `R^k` is computed with the same `X`; projected rows whose norm grew are handled by the clip.
/// Rows longer than `X` are scaled to norm `X` before the projection (a per-record map, as
/// the paper's `‖x‖ ≤ X` assumes), so that `Φx` is finite whatever one row holds.
///
/// # Privacy
/// Paper 003, Thm 2 (privacy part): `Φ` is drawn from the caller's generator without looking
/// at the data, so projecting is free; scaling rows longer than `X` to norm `X` acts on each
/// record alone (a neighbouring dataset maps to a neighbouring one); the run in `R^k` is the (ε, δ)-DP
/// [`NoisyProjectedGd`] (T Gaussian mechanisms with sensitivity `2G/n` under replace-one,
/// calibrated exactly, MATH §9), whose clip at `G` holds for any projected data; lifting with
/// `Φᵀ` is post-processing. The report is that run's, with `k` added.
#[derive(Debug, Clone, PartialEq)]
pub struct JlNoisyGd {
    /// The run in `R^k`, configured as in `R^d`: its `radius` is `B`, and the run uses the ball
    /// of radius `2B`; its other fields (loss, budget, bounds, steps, step size) are used as
    /// they are.
    pub base: NoisyProjectedGd,
    /// Target dimension `k` (default the paper's formula, capped at `d`).
    pub k: Option<usize>,
}

impl JlNoisyGd {
    /// The learner with [`NoisyProjectedGd::new`]'s defaults and the paper's `k`.
    pub fn new(loss: Loss) -> Self {
        Self {
            base: NoisyProjectedGd::new(loss),
            k: None,
        }
    }

    /// Sets the target (ε, δ).
    pub fn budget(mut self, epsilon: f64, delta: f64) -> Self {
        self.base = self.base.budget(epsilon, delta);
        self
    }

    /// Sets `B`.
    pub fn radius(mut self, radius: f64) -> Self {
        self.base.radius = radius;
        self
    }

    /// Sets the target dimension `k`.
    pub fn k(mut self, k: usize) -> Self {
        self.k = Some(k);
        self
    }

    /// The target dimension used on `n` records in dimension `d`.
    ///
    /// # Errors
    /// `k = 0`, or `B`, `X`, `Y`, ε, δ out of range (for the default).
    pub fn dimension(&self, n: usize, d: usize) -> Result<usize> {
        if let Some(k) = self.k {
            ensure(k >= 1, "k", k as f64, "must be >= 1")?;
            return Ok(k);
        }
        let base = &self.base;
        let b = positive("radius", base.radius)?;
        let x = positive("x_bound", base.x_bound)?;
        let y = positive("y_bound", base.y_bound)?;
        let target = base.budget.target()?;
        let h = base.loss.smoothness();
        let n = n as f64;
        let num = b * h * x * (2.0 * n / target.delta()).ln() * n * target.epsilon();
        let k = (num / (y * x + h * b * x * x)).powf(2.0 / 3.0).ceil();
        Ok((k.max(1.0) as usize).min(d))
    }

    /// Fits the model.
    ///
    /// # Errors
    /// As [`NoisyProjectedGd::fit`], and `k = 0`;
    /// [`Error::ResourceLimit`](crate::Error::ResourceLimit) if `Φ` and the projected data
    /// (`k·(n + d)` values) exceed [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES).
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let radius = positive("radius", self.base.radius)?;
        data.check_labels(&self.base.loss)?;
        // The default k grows with n: the public count when given.
        let k = self.dimension(
            row_count(self.base.public_n, data.n_samples())?,
            data.n_features(),
        )?;
        let inner = NoisyProjectedGd {
            radius: 2.0 * radius,
            ..self.base.clone()
        };
        // Validate everything that reads no data before drawing Φ.
        inner.gradient_bound()?;
        inner.budget.target()?;
        // Φ (k × d) and the projected rows (n × k), checked before they are allocated.
        let (n, d) = (data.n_samples() as f64, data.n_features() as f64);
        check_memory("k", k as f64, k as f64 * (n + d))?;
        let phi = JlProjection::gaussian(k, data.n_features(), rng)?;
        // Rows longer than X are scaled to norm X before projecting (a per-record map; the
        // paper assumes ‖x‖ ≤ X), so that Φx cannot overflow whatever a row holds.
        let x_bound = positive("x_bound", self.base.x_bound)?;
        let rows = BallProjector::new(x_bound)?.transform(data.x().view())?;
        let projected = Dataset::new(phi.apply(rows.view())?, data.y().to_owned())?;
        let fitted = inner.fit(&projected, rng)?;
        let coef = phi.lift(fitted.coef())?;
        let mut report = fitted.privacy().clone();
        report.noise.push(("jl_k".to_string(), k as f64));
        report.notes.push(format!(
            "noisy projected GD ran in R^{k} on a Gaussian JL projection of R^{}, ball radius {}",
            data.n_features(),
            2.0 * radius
        ));
        LinearModel::new(coef, 0.0, self.base.loss, report)?.with_row_bound(x_bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::learners::testdata::{accuracy, logistic, rng, separable};
    use ndarray::Array2;
    use rand_distr::{Distribution, StandardNormal};

    /// The separable 2-D problem embedded in `R^d` along two random orthonormal directions
    /// (a low-rank design, the setting where the JL method pays off).
    fn embedded(n: usize, d: usize) -> Dataset {
        let flat = separable(n);
        let mut r = rng(77);
        let mut u = Array2::<f64>::zeros((2, d));
        u.mapv_inplace(|_| StandardNormal.sample(&mut r));
        let u0 = u.row(0).to_owned() / u.row(0).dot(&u.row(0)).sqrt();
        let mut u1 = u.row(1).to_owned();
        let c = u1.dot(&u0);
        u1.scaled_add(-c, &u0);
        u1 /= u1.dot(&u1).sqrt();
        u.row_mut(0).assign(&u0);
        u.row_mut(1).assign(&u1);
        Dataset::new(flat.x().dot(&u), flat.y().to_owned()).unwrap()
    }

    #[test]
    fn learns_in_a_projected_space_within_budget() {
        let train = embedded(3000, 100);
        let m = JlNoisyGd::new(Loss::Logistic)
            .budget(2.0, 1e-5)
            .radius(4.0)
            .k(20)
            .fit(&train, &mut rng(43))
            .unwrap();
        assert_eq!(m.coef().len(), 100);
        let r = m.privacy();
        assert!(r.epsilon <= 2.0 && r.epsilon > 1.99, "{}", r.epsilon);
        assert_eq!(
            r.event.releases()[0].count,
            1000,
            "T = min(n, 1000) by default"
        );
        assert!(r.noise.contains(&("jl_k".to_string(), 20.0)));
        assert!(r.noise.contains(&("radius".to_string(), 8.0)));
        let acc = accuracy(&m, &train);
        assert!(acc > 0.9, "accuracy {acc}");
    }

    #[test]
    fn default_dimension_and_reproducibility() {
        let m = JlNoisyGd::new(Loss::Logistic);
        // The paper's formula is large here, so k is capped at d.
        assert_eq!(m.dimension(1000, 30).unwrap(), 30);
        // B·H·X·log(2n/δ)·nε/(YX + HBX²) = 0.25·ln(2e7)·100/1.25, to the power 2/3.
        let expect = (0.25 * (2e7f64).ln() * 100.0 / 1.25).powf(2.0 / 3.0).ceil() as usize;
        assert_eq!(m.dimension(100, 10_000).unwrap(), expect);
        let (train, _) = logistic(200, 30, 2.0, 1);
        let fit = |s| JlNoisyGd::new(Loss::Logistic).k(5).fit(&train, &mut rng(s));
        assert_eq!(fit(7).unwrap(), fit(7).unwrap());
        assert_ne!(fit(7).unwrap().coef(), fit(8).unwrap().coef());
    }

    #[test]
    fn rejects_bad_hyper_parameters() {
        let (train, _) = logistic(50, 4, 1.0, 1);
        let hp = |m: JlNoisyGd| match m.fit(&train, &mut rng(1)).unwrap_err() {
            Error::InvalidHyperParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(hp(JlNoisyGd::new(Loss::Logistic).k(0)), "k");
        assert_eq!(hp(JlNoisyGd::new(Loss::Logistic).radius(0.0)), "radius");
        let mut m = JlNoisyGd::new(Loss::Logistic);
        m.base.y_bound = f64::NAN;
        assert_eq!(hp(m), "y_bound");
        let mut m = JlNoisyGd::new(Loss::Logistic).k(2);
        m.base.steps = Some(0);
        assert_eq!(hp(m), "steps");
        assert!(matches!(
            JlNoisyGd::new(Loss::Logistic)
                .budget(1.0, 2.0)
                .fit(&train, &mut rng(1))
                .unwrap_err(),
            Error::Accounting(_)
        ));
    }
}
