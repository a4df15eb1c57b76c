//! Gradient descent and projected gradient descent.

use ndarray::{Array1, ArrayView1};

use crate::error::{Result, count, non_negative, same_dim};
use crate::objective::{Objective, Projection, Unconstrained};
use crate::solution::{IterationInfo, Observer, Solution, Status};
use crate::step::{Averager, Averaging, StepSize};

/// (Projected) gradient descent: `x_{t+1} = Π(x_t − η_t ∇f(x_t))`.
///
/// Stops when the iteration limit is reached or when the stationarity measure is `≤ τ`
/// (`grad_tol`): `‖∇f(x_t)‖` without a constraint, and the norm of the gradient mapping
/// `‖x_t − Π(x_t − η_t∇f(x_t))‖/η_t` with one (it equals `‖∇f‖` in the interior and is zero
/// exactly at constrained minimisers). A converged run returns the iterate that met the
/// rule; a run that ends otherwise returns the point chosen by `averaging`. The starting
/// point is projected first.
///
/// ```
/// use dp_optim::{GradientDescent, Objective, StepSize};
/// use ndarray::{ArrayView1, ArrayViewMut1, array};
///
/// /// f(x) = ½‖x − (1, 2)‖²
/// struct Quad;
/// impl Objective for Quad {
///     fn dim(&self) -> usize { 2 }
///     fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
///         0.5 * ((x[0] - 1.0).powi(2) + (x[1] - 2.0).powi(2))
///     }
///     fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
///         g[0] = x[0] - 1.0;
///         g[1] = x[1] - 2.0;
///         self.value(x)
///     }
/// }
///
/// let sol = GradientDescent::new(StepSize::Constant(0.5))
///     .grad_tol(1e-10)
///     .minimize(&Quad, array![0.0, 0.0].view(), None)?;
/// assert!((sol.x[1] - 2.0).abs() < 1e-9);
/// # Ok::<(), dp_optim::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GradientDescent {
    /// Step-size schedule.
    pub step: StepSize,
    /// Iteration limit (≥ 1). Default 1000.
    pub max_iters: usize,
    /// Stationarity tolerance τ ≥ 0 (absolute). Default 1e-6.
    pub grad_tol: f64,
    /// Which point a run that does not converge returns. Default: the last iterate.
    pub averaging: Averaging,
}

impl GradientDescent {
    /// Gradient descent with `step` and the default limits.
    pub fn new(step: StepSize) -> Self {
        Self {
            step,
            max_iters: 1000,
            grad_tol: 1e-6,
            averaging: Averaging::Last,
        }
    }

    /// Sets the iteration limit.
    pub fn max_iters(mut self, max_iters: usize) -> Self {
        self.max_iters = max_iters;
        self
    }

    /// Sets the stationarity tolerance τ.
    pub fn grad_tol(mut self, grad_tol: f64) -> Self {
        self.grad_tol = grad_tol;
        self
    }

    /// Sets the averaging mode.
    pub fn averaging(mut self, averaging: Averaging) -> Self {
        self.averaging = averaging;
        self
    }

    fn check(&self) -> Result<()> {
        self.step.check()?;
        count("max_iters", self.max_iters)?;
        non_negative("grad_tol", self.grad_tol)?;
        self.averaging.check()
    }

    /// Minimises `f` without constraint from `x0`.
    ///
    /// # Errors
    /// A bad hyper-parameter ([`crate::Error::InvalidParameter`]) or `x0` of the wrong
    /// length ([`crate::Error::DimensionMismatch`]).
    pub fn minimize<O: Objective + ?Sized>(
        &self,
        f: &O,
        x0: ArrayView1<'_, f64>,
        observer: Option<&mut dyn Observer>,
    ) -> Result<Solution> {
        self.minimize_projected(f, &Unconstrained, x0, observer)
    }

    /// Minimises `f` over the set of `proj` from `x0` (projected first).
    ///
    /// # Errors
    /// As [`GradientDescent::minimize`], and a malformed set ([`Projection::check`]).
    pub fn minimize_projected<O, P>(
        &self,
        f: &O,
        proj: &P,
        x0: ArrayView1<'_, f64>,
        mut observer: Option<&mut dyn Observer>,
    ) -> Result<Solution>
    where
        O: Objective + ?Sized,
        P: Projection + ?Sized,
    {
        self.check()?;
        proj.check()?;
        let d = f.dim();
        same_dim("x0", d, x0.len())?;
        let mut x = x0.to_owned();
        proj.project(x.view_mut());
        let mut g = Array1::zeros(d);
        let mut y = Array1::zeros(d);
        let mut avg = Averager::new(self.averaging, self.max_iters, d);
        let mut status = Status::IterationLimit;
        let mut iterations = 0;
        for t in 0..self.max_iters {
            let value = f.value_grad(x.view(), g.view_mut());
            let eta = self.step.at(t);
            y.assign(&x);
            y.scaled_add(-eta, &g);
            proj.project(y.view_mut());
            let stat = if proj.is_identity() {
                g.dot(&g).sqrt()
            } else {
                let diff = &x - &y;
                diff.dot(&diff).sqrt() / eta
            };
            if stat <= self.grad_tol {
                status = Status::Converged;
                break;
            }
            std::mem::swap(&mut x, &mut y);
            iterations = t + 1;
            avg.push(t, x.view());
            if let Some(obs) = observer.as_deref_mut() {
                obs.observe_gradient(t, g.view());
                let info = IterationInfo {
                    iteration: t,
                    value,
                    grad_norm: stat,
                    step_size: eta,
                };
                if !obs.observe(&info) {
                    status = Status::StoppedByObserver;
                    break;
                }
            }
        }
        let x = if status == Status::Converged {
            x
        } else {
            avg.finish(x)
        };
        Ok(Solution {
            x,
            status,
            iterations,
            ledger: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::glm::{Loss, random_problem, ridge_closed_form};
    use crate::{Error, L2Ball, Trace};
    use ndarray::{Array2, ArrayViewMut1, array};

    /// `f(x) = ½ xᵀMx − bᵀx`.
    struct Quadratic {
        m: Array2<f64>,
        b: Array1<f64>,
    }

    impl Objective for Quadratic {
        fn dim(&self) -> usize {
            self.b.len()
        }
        fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
            0.5 * x.dot(&self.m.dot(&x)) - self.b.dot(&x)
        }
        fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
            g.assign(&(self.m.dot(&x) - &self.b));
            self.value(x)
        }
    }

    fn quad() -> Quadratic {
        Quadratic {
            m: array![[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]],
            b: array![1.0, -2.0, 0.5],
        }
    }

    fn norm(v: &Array1<f64>) -> f64 {
        v.dot(v).sqrt()
    }

    /// Constant step 1/L on a quadratic converges to `M⁻¹b` with `‖∇f‖ ≤ τ`.
    #[test]
    fn quadratic_converges() {
        let q = quad();
        let exact = crate::testutil::glm::solve(&q.m, &q.b);
        let mut trace = Trace::default();
        let sol = GradientDescent::new(StepSize::Constant(0.25))
            .grad_tol(1e-10)
            .max_iters(10_000)
            .minimize(&q, array![0.0, 0.0, 0.0].view(), Some(&mut trace))
            .unwrap();
        assert_eq!(sol.status, Status::Converged);
        assert!(sol.ledger.is_none());
        assert!(norm(&(&sol.x - &exact)) < 1e-9);
        let mut g = Array1::zeros(3);
        q.value_grad(sol.x.view(), g.view_mut());
        assert!(norm(&g) <= 1e-10);
        // Monotone decrease for a step below 2/L.
        assert_eq!(trace.iterations.len(), sol.iterations);
        assert!(
            trace
                .iterations
                .windows(2)
                .all(|w| w[1].value <= w[0].value + 1e-14)
        );
    }

    /// Ridge regression (as a `FiniteSum` objective) against its closed form.
    #[test]
    fn ridge_matches_closed_form() {
        let p = random_problem(60, 5, 2.0, Loss::Squared, 10);
        let exact = ridge_closed_form(&p);
        let l = crate::testutil::glm::max_eigen(&p.hessian(exact.view()));
        let sol = GradientDescent::new(StepSize::Constant(1.0 / l))
            .grad_tol(1e-9)
            .max_iters(100_000)
            .minimize(&p, Array1::zeros(5).view(), None)
            .unwrap();
        assert_eq!(sol.status, Status::Converged);
        assert!(norm(&(&sol.x - &exact)) < 1e-8 * norm(&exact).max(1.0));
    }

    /// Projected GD onto a ball: the minimiser of `½‖x − c‖²` over `‖x‖ ≤ R` is `Rc/‖c‖`,
    /// where the gradient is not zero but the gradient mapping is.
    #[test]
    fn projected_onto_ball() {
        let q = Quadratic {
            m: Array2::eye(2),
            b: array![3.0, 4.0],
        };
        let ball = L2Ball { radius: 1.0 };
        let sol = GradientDescent::new(StepSize::Constant(0.5))
            .grad_tol(1e-12)
            .minimize_projected(&q, &ball, array![-5.0, 0.0].view(), None)
            .unwrap();
        assert_eq!(sol.status, Status::Converged);
        assert!(norm(&(&sol.x - &array![0.6, 0.8])) < 1e-12);
        // The starting point is projected: with one iteration allowed the result is in the
        // ball whatever the step.
        let sol = GradientDescent::new(StepSize::Constant(10.0))
            .max_iters(1)
            .minimize_projected(&q, &ball, array![-5.0, 0.0].view(), None)
            .unwrap();
        assert!(norm(&sol.x) <= 1.0 + 1e-15);
        assert_eq!(sol.status, Status::IterationLimit);
    }

    /// Decaying steps `η/√(t+1)` and `η/(t+1)` still approach the minimiser.
    #[test]
    fn decaying_steps() {
        let q = quad();
        let exact = crate::testutil::glm::solve(&q.m, &q.b);
        for (step, iters, tol) in [
            (StepSize::InvSqrt(0.5), 2000, 1e-6),
            (StepSize::Inv(0.9), 5000, 1e-2),
        ] {
            let sol = GradientDescent::new(step)
                .grad_tol(0.0)
                .max_iters(iters)
                .minimize(&q, array![0.0, 0.0, 0.0].view(), None)
                .unwrap();
            assert!(norm(&(&sol.x - &exact)) < tol, "{step:?}: {}", sol.x);
        }
    }

    /// Averaging on `f(x) = x²/2` with step η: `x_t = (1−η)^t x_0`; the returned point is the
    /// uniform / tail mean of `x_1..x_T`.
    #[test]
    fn averaging_modes() {
        let q = Quadratic {
            m: array![[1.0]],
            b: array![0.0],
        };
        let (eta, t_max, x0) = (0.1f64, 10usize, 1.0f64);
        let iterates: Vec<f64> = (1..=t_max)
            .map(|t| x0 * (1.0 - eta).powi(t as i32))
            .collect();
        let run = |avg| {
            GradientDescent::new(StepSize::Constant(eta))
                .max_iters(t_max)
                .grad_tol(0.0)
                .averaging(avg)
                .minimize(&q, array![x0].view(), None)
                .unwrap()
                .x[0]
        };
        let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
        assert!((run(Averaging::Last) - iterates[t_max - 1]).abs() < 1e-15);
        assert!((run(Averaging::Uniform) - mean(&iterates)).abs() < 1e-14);
        assert!((run(Averaging::Tail(0.3)) - mean(&iterates[7..])).abs() < 1e-14);
    }

    /// An observer returning `false` stops the run.
    #[test]
    fn observer_stops() {
        struct StopAt(usize);
        impl Observer for StopAt {
            fn observe(&mut self, info: &IterationInfo) -> bool {
                info.iteration + 1 < self.0
            }
        }
        let sol = GradientDescent::new(StepSize::Constant(0.1))
            .minimize(&quad(), array![0.0, 0.0, 0.0].view(), Some(&mut StopAt(3)))
            .unwrap();
        assert_eq!(sol.status, Status::StoppedByObserver);
        assert_eq!(sol.iterations, 3);
    }

    #[test]
    fn bad_input_errors() {
        let q = quad();
        let x0 = array![0.0, 0.0, 0.0];
        let gd = GradientDescent::new(StepSize::Constant(0.1));
        assert!(matches!(
            gd.clone().max_iters(0).minimize(&q, x0.view(), None),
            Err(Error::InvalidParameter {
                name: "max_iters",
                ..
            })
        ));
        assert!(matches!(
            GradientDescent::new(StepSize::Constant(f64::NAN)).minimize(&q, x0.view(), None),
            Err(Error::InvalidParameter {
                name: "step_size",
                ..
            })
        ));
        assert!(matches!(
            gd.clone().grad_tol(-1.0).minimize(&q, x0.view(), None),
            Err(Error::InvalidParameter {
                name: "grad_tol",
                ..
            })
        ));
        assert!(matches!(
            gd.clone()
                .averaging(Averaging::Tail(2.0))
                .minimize(&q, x0.view(), None),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            gd.minimize(&q, array![0.0].view(), None),
            Err(Error::DimensionMismatch {
                what: "x0",
                expected: 3,
                got: 1
            })
        ));
        assert!(matches!(
            gd.minimize_projected(&q, &L2Ball { radius: -1.0 }, x0.view(), None),
            Err(Error::InvalidParameter { name: "radius", .. })
        ));
    }
}
