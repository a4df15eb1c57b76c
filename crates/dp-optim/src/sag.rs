//! Stochastic average gradient (Schmidt, Le Roux & Bach, *Minimizing finite sums with the
//! stochastic average gradient*, Math. Program. 2017) over [`GlmSum`].

use ndarray::{Array1, ArrayView1};
use rand::{Rng, RngExt};

use crate::error::{Error, Result, count, non_negative, positive, same_dim};
use crate::objective::GlmSum;
use crate::solution::{IterationInfo, Observer, Solution, Status};

/// SAG for `f(x) = Σ_{i<n} φ_i(⟨a_i, x⟩) + r(x)`.
///
/// The memory of past gradients is one scalar per term (`φ_i'` at the last visit; the
/// gradient of term `i` is that scalar times `a_i`), so it costs `O(n)` rather than
/// `O(nd)`. Each inner step picks a term uniformly at random, refreshes its scalar, and steps
/// on the averaged objective `f/n`: `x ← x − (η/n)(Σ_i s_i a_i + ∇r(x))` with
/// `η = step_scale / L`, where the caller gives `L`, a bound on the smoothness constant of
/// every `φ_i(⟨a_i, ·⟩) + r/n` (e.g. `max_i ‖a_i‖² · sup φ'' + λ/n` for `r = (λ/2)‖x‖²`).
///
/// The memory is initialised with all scalars at `x0` (one full pass, which also gives the
/// exact gradient there). After every epoch of `n` inner steps, the running sum
/// `Σ s_i a_i` is recomputed from the stored scalars (removing the rounding drift of the
/// incremental updates) and the *exact* gradient `∇f(x) = Σ_i φ_i'(⟨a_i, x⟩) a_i + ∇r(x)` is
/// computed from fresh scalars in a separate buffer; the stopping rule `‖∇f(x)‖ ≤ τ` is
/// checked on it — the same rule, on the same scale (the sum, not the mean), as
/// [`crate::Lbfgs`]. The memory itself is not reset at these checks: resetting all of it at
/// once makes SAG unstable at the step `1/L`. Each epoch thus costs about two passes over
/// the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Sag {
    /// Smoothness bound `L` of one term (finite, > 0).
    pub lipschitz: f64,
    /// Step `η = step_scale / L` (finite, > 0). Default 1 (the practical choice of the
    /// paper; its theory uses 1/16).
    pub step_scale: f64,
    /// Epoch limit (≥ 1). Default 1000.
    pub max_epochs: usize,
    /// Gradient-norm tolerance τ ≥ 0 (absolute, on `f`). Default 1e-6.
    pub grad_tol: f64,
}

impl Sag {
    /// SAG with smoothness bound `L = lipschitz` and the default settings.
    pub fn new(lipschitz: f64) -> Self {
        Self {
            lipschitz,
            step_scale: 1.0,
            max_epochs: 1000,
            grad_tol: 1e-6,
        }
    }

    /// Sets `step_scale`.
    pub fn step_scale(mut self, step_scale: f64) -> Self {
        self.step_scale = step_scale;
        self
    }

    /// Sets the epoch limit.
    pub fn max_epochs(mut self, max_epochs: usize) -> Self {
        self.max_epochs = max_epochs;
        self
    }

    /// Sets the gradient-norm tolerance τ.
    pub fn grad_tol(mut self, grad_tol: f64) -> Self {
        self.grad_tol = grad_tol;
        self
    }

    /// Minimises `f` from `x0`, drawing terms with `rng`.
    ///
    /// # Errors
    /// A bad hyper-parameter ([`Error::InvalidParameter`]), no terms ([`Error::EmptyData`]),
    /// `x0` of the wrong length ([`Error::DimensionMismatch`]).
    pub fn minimize<O, R>(
        &self,
        f: &O,
        x0: ArrayView1<'_, f64>,
        rng: &mut R,
        mut observer: Option<&mut dyn Observer>,
    ) -> Result<Solution>
    where
        O: GlmSum + ?Sized,
        R: Rng + ?Sized,
    {
        let l = positive("lipschitz", self.lipschitz)?;
        let eta = positive("step_scale", self.step_scale)? / l;
        count("max_epochs", self.max_epochs)?;
        let tol = non_negative("grad_tol", self.grad_tol)?;
        let n = f.n_terms();
        if n == 0 {
            return Err(Error::EmptyData);
        }
        let d = f.dim();
        same_dim("x0", d, x0.len())?;

        let mut x = x0.to_owned();
        let mut scalars = vec![0.0; n];
        let mut sum = Array1::zeros(d);
        let mut rg = Array1::zeros(d);
        let mut grad = Array1::zeros(d);
        let step = eta / n as f64;

        fill_memory(f, &x, &mut scalars, &mut sum);
        f.regulariser_grad(x.view(), rg.view_mut());
        grad.assign(&sum);
        grad += &rg;
        let mut gnorm = grad.dot(&grad).sqrt();
        let mut status = Status::IterationLimit;
        let mut epochs = 0;
        if gnorm <= tol {
            status = Status::Converged;
        } else {
            for epoch in 0..self.max_epochs {
                for _ in 0..n {
                    let i = rng.random_range(0..n);
                    let c = f.term_scalar(x.view(), i);
                    f.add_scaled_row(i, c - scalars[i], sum.view_mut());
                    scalars[i] = c;
                    f.regulariser_grad(x.view(), rg.view_mut());
                    x.scaled_add(-step, &sum);
                    x.scaled_add(-step, &rg);
                }
                epochs = epoch + 1;
                resum(f, &scalars, &mut sum);
                gnorm = exact_gradient(f, &x, &mut rg, &mut grad);
                if gnorm <= tol {
                    status = Status::Converged;
                    break;
                }
                if let Some(obs) = observer.as_deref_mut() {
                    obs.observe_gradient(epoch, grad.view());
                    let info = IterationInfo {
                        iteration: epoch,
                        value: f.value(x.view()),
                        grad_norm: gnorm,
                        step_size: eta,
                    };
                    if !obs.observe(&info) {
                        status = Status::StoppedByObserver;
                        break;
                    }
                }
            }
        }
        Ok(Solution {
            x,
            status,
            iterations: epochs,
            ledger: None,
        })
    }
}

/// Fills the memory with every scalar at `x` and `sum = Σ s_i a_i`.
fn fill_memory<O: GlmSum + ?Sized>(
    f: &O,
    x: &Array1<f64>,
    scalars: &mut [f64],
    sum: &mut Array1<f64>,
) {
    sum.fill(0.0);
    for (i, s) in scalars.iter_mut().enumerate() {
        *s = f.term_scalar(x.view(), i);
        f.add_scaled_row(i, *s, sum.view_mut());
    }
}

/// Recomputes `sum = Σ s_i a_i` from the stored scalars (removing the rounding drift of the
/// incremental updates, without changing the memory).
fn resum<O: GlmSum + ?Sized>(f: &O, scalars: &[f64], sum: &mut Array1<f64>) {
    sum.fill(0.0);
    for (i, &s) in scalars.iter().enumerate() {
        f.add_scaled_row(i, s, sum.view_mut());
    }
}

/// Writes the exact gradient `Σ_i φ_i'(⟨a_i, x⟩) a_i + ∇r(x)` into `grad` (using `rg` as
/// scratch) and returns its norm. The memory is not touched.
fn exact_gradient<O: GlmSum + ?Sized>(
    f: &O,
    x: &Array1<f64>,
    rg: &mut Array1<f64>,
    grad: &mut Array1<f64>,
) -> f64 {
    f.regulariser_grad(x.view(), rg.view_mut());
    grad.assign(rg);
    for i in 0..f.n_terms() {
        let c = f.term_scalar(x.view(), i);
        f.add_scaled_row(i, c, grad.view_mut());
    }
    grad.dot(grad).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded_rng;
    use crate::testutil::glm::{Loss, random_problem, ridge_closed_form};
    use crate::{Lbfgs, Objective, Trace};
    use ndarray::array;

    fn norm(v: &Array1<f64>) -> f64 {
        v.dot(v).sqrt()
    }

    /// Ridge: SAG reaches ‖∇f‖ ≤ τ and agrees with L-BFGS and the closed form.
    #[test]
    fn ridge_matches_lbfgs() {
        let p = random_problem(300, 6, 2.0, Loss::Squared, 60);
        let tol = 1e-8;
        let sag = Sag::new(p.term_lipschitz())
            .grad_tol(tol)
            .minimize(&p, Array1::zeros(6).view(), &mut seeded_rng(61), None)
            .unwrap();
        assert_eq!(sag.status, Status::Converged);
        let mut g = Array1::zeros(6);
        p.value_grad(sag.x.view(), g.view_mut());
        assert!(norm(&g) <= tol * (1.0 + 1e-6));
        let lb = Lbfgs::new()
            .grad_tol(tol)
            .minimize(&p, Array1::zeros(6).view(), None)
            .unwrap();
        // f is (λ + λ_min(AᵀA))-strongly convex, λ = 2: both are within τ/2 of x*.
        assert!(norm(&(&sag.x - &lb.x)) <= tol);
        assert!(norm(&(&sag.x - &ridge_closed_form(&p))) <= tol / 2.0);
        assert!(sag.ledger.is_none());
    }

    /// L2-regularised logistic regression: SAG agrees with L-BFGS to `2τ/λ`.
    #[test]
    fn logistic_matches_lbfgs() {
        let (n, d, lambda) = (400, 5, 0.5);
        let p = random_problem(n, d, lambda, Loss::Logistic, 62);
        let tol = 1e-7;
        let mut trace = Trace::default();
        let sag = Sag::new(p.term_lipschitz())
            .grad_tol(tol)
            .minimize(
                &p,
                Array1::zeros(d).view(),
                &mut seeded_rng(63),
                Some(&mut trace),
            )
            .unwrap();
        assert_eq!(sag.status, Status::Converged);
        let lb = Lbfgs::new()
            .grad_tol(tol)
            .minimize(&p, Array1::zeros(d).view(), None)
            .unwrap();
        assert!(norm(&(&sag.x - &lb.x)) <= 2.0 * tol / lambda);
        // The observer saw the exact gradient norm after each epoch.
        let last = trace.iterations.last().unwrap();
        assert!(last.grad_norm > tol && last.value.is_finite());
        assert_eq!(trace.iterations.len() + 1, sag.iterations);
    }

    /// Epoch limit, convergence at the start, and reproducibility by seed.
    #[test]
    fn stopping_and_reproducibility() {
        let p = random_problem(100, 4, 1.0, Loss::Logistic, 64);
        let cfg = Sag::new(p.term_lipschitz()).grad_tol(0.0).max_epochs(3);
        let a = cfg
            .minimize(&p, Array1::zeros(4).view(), &mut seeded_rng(65), None)
            .unwrap();
        let b = cfg
            .minimize(&p, Array1::zeros(4).view(), &mut seeded_rng(65), None)
            .unwrap();
        assert_eq!((a.status, a.iterations), (Status::IterationLimit, 3));
        assert_eq!(a.x, b.x);
        assert!(p.value(a.x.view()) < p.value(Array1::zeros(4).view()));
        let opt = Lbfgs::new()
            .grad_tol(1e-10)
            .minimize(&p, Array1::zeros(4).view(), None)
            .unwrap();
        let c = Sag::new(p.term_lipschitz())
            .grad_tol(1e-6)
            .minimize(&p, opt.x.view(), &mut seeded_rng(66), None)
            .unwrap();
        assert_eq!((c.status, c.iterations), (Status::Converged, 0));
    }

    #[test]
    fn bad_input_errors() {
        let p = random_problem(10, 2, 1.0, Loss::Squared, 67);
        let x0 = array![0.0, 0.0];
        let name = |cfg: Sag| match cfg.minimize(&p, x0.view(), &mut seeded_rng(0), None) {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("unexpected {other:?}"),
        };
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(name(Sag::new(bad)), "lipschitz");
            assert_eq!(name(Sag::new(1.0).step_scale(bad)), "step_scale");
        }
        assert_eq!(name(Sag::new(1.0).max_epochs(0)), "max_epochs");
        assert_eq!(name(Sag::new(1.0).grad_tol(-1.0)), "grad_tol");
        assert!(matches!(
            Sag::new(1.0).minimize(&p, array![0.0].view(), &mut seeded_rng(0), None),
            Err(Error::DimensionMismatch { .. })
        ));
        let empty = random_problem(0, 2, 1.0, Loss::Squared, 68);
        assert_eq!(
            Sag::new(1.0).minimize(&empty, x0.view(), &mut seeded_rng(0), None),
            Err(Error::EmptyData)
        );
    }
}
