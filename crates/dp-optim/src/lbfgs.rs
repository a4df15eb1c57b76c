//! Limited-memory BFGS with a strong Wolfe line search.

use std::collections::VecDeque;

use ndarray::{Array1, ArrayView1, Zip};

use crate::error::{Error, Result, count, non_negative, same_dim};
use crate::linesearch::{LineSearch, StrongWolfe};
use crate::objective::Objective;
use crate::solution::{IterationInfo, Observer, Solution, Status};

/// L-BFGS (Nocedal & Wright, Alg. 7.4 and 7.5): the two-loop recursion with the last `m`
/// curvature pairs and initial scaling `γ = sᵀy/yᵀy`, a line search `L` meeting the strong
/// Wolfe conditions (default [`StrongWolfe`]).
///
/// Stops with [`Status::Converged`] as soon as `‖∇f(x)‖ ≤ τ` (absolute, checked at the
/// starting point and after every step), with [`Status::IterationLimit`] after `max_iters`
/// steps, and with [`Status::LineSearchFailed`] when the line search fails along the L-BFGS
/// direction and again along the steepest-descent direction (the memory is dropped in
/// between). The returned point is always the best (last accepted) iterate. Pairs with
/// `sᵀy ≤ 1e-10‖s‖‖y‖` are skipped, which keeps the implicit Hessian positive definite.
///
/// ```
/// use dp_optim::{Lbfgs, Objective, Status};
/// use ndarray::{ArrayView1, ArrayViewMut1, array};
///
/// /// Rosenbrock.
/// struct Rosen;
/// impl Objective for Rosen {
///     fn dim(&self) -> usize { 2 }
///     fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
///         (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2)
///     }
///     fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
///         let t = x[1] - x[0] * x[0];
///         g[0] = -2.0 * (1.0 - x[0]) - 400.0 * x[0] * t;
///         g[1] = 200.0 * t;
///         self.value(x)
///     }
/// }
///
/// let sol = Lbfgs::new().grad_tol(1e-8).minimize(&Rosen, array![-1.2, 1.0].view(), None)?;
/// assert_eq!(sol.status, Status::Converged);
/// assert!((sol.x[0] - 1.0).abs() < 1e-6);
/// # Ok::<(), dp_optim::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Lbfgs<L = StrongWolfe> {
    /// Memory `m` (number of curvature pairs, ≥ 1). Default 10.
    pub memory: usize,
    /// Iteration limit (≥ 1). Default 1000.
    pub max_iters: usize,
    /// Gradient-norm tolerance τ ≥ 0 (absolute). Default 1e-6.
    pub grad_tol: f64,
    /// The line search.
    pub line_search: L,
}

impl Default for Lbfgs<StrongWolfe> {
    fn default() -> Self {
        Self::new()
    }
}

impl Lbfgs<StrongWolfe> {
    /// L-BFGS with memory 10, 1000 iterations, τ = 1e-6 and the default strong Wolfe search.
    pub fn new() -> Self {
        Self {
            memory: 10,
            max_iters: 1000,
            grad_tol: 1e-6,
            line_search: StrongWolfe::default(),
        }
    }
}

impl<L: LineSearch> Lbfgs<L> {
    /// Replaces the line search.
    pub fn with_line_search<M: LineSearch>(self, line_search: M) -> Lbfgs<M> {
        Lbfgs {
            memory: self.memory,
            max_iters: self.max_iters,
            grad_tol: self.grad_tol,
            line_search,
        }
    }

    /// Sets the memory `m`.
    pub fn memory(mut self, memory: usize) -> Self {
        self.memory = memory;
        self
    }

    /// Sets the iteration limit.
    pub fn max_iters(mut self, max_iters: usize) -> Self {
        self.max_iters = max_iters;
        self
    }

    /// Sets the gradient-norm tolerance τ.
    pub fn grad_tol(mut self, grad_tol: f64) -> Self {
        self.grad_tol = grad_tol;
        self
    }

    /// Minimises `f` from `x0`.
    ///
    /// # Errors
    /// A bad hyper-parameter ([`Error::InvalidParameter`]), `x0` of the wrong length
    /// ([`Error::DimensionMismatch`]), or a value or gradient at `x0` that is not finite
    /// ([`Error::NonFinite`]).
    pub fn minimize<O: Objective + ?Sized>(
        &self,
        f: &O,
        x0: ArrayView1<'_, f64>,
        mut observer: Option<&mut dyn Observer>,
    ) -> Result<Solution> {
        count("memory", self.memory)?;
        count("max_iters", self.max_iters)?;
        let tol = non_negative("grad_tol", self.grad_tol)?;
        self.line_search.check()?;
        let d = f.dim();
        same_dim("x0", d, x0.len())?;

        let mut x = x0.to_owned();
        let mut g = Array1::zeros(d);
        let mut fx = f.value_grad(x.view(), g.view_mut());
        if !(fx.is_finite() && g.iter().all(|v| v.is_finite())) {
            return Err(Error::NonFinite("the starting point"));
        }
        let mut x_new = Array1::zeros(d);
        let mut g_new = Array1::zeros(d);
        let mut p = Array1::zeros(d);
        let mut pairs: VecDeque<Pair> = VecDeque::with_capacity(self.memory);
        let mut alphas = vec![0.0; self.memory];
        let mut status = Status::IterationLimit;
        let mut iterations = 0;
        for k in 0..self.max_iters {
            let gnorm = g.dot(&g).sqrt();
            if gnorm <= tol {
                status = Status::Converged;
                break;
            }
            // Try the quasi-Newton direction, then steepest descent with the memory dropped.
            let mut accepted = None;
            for attempt in 0..2 {
                if attempt == 1 && pairs.is_empty() {
                    break;
                }
                if attempt == 1 {
                    pairs.clear();
                }
                two_loop(&pairs, &g, &mut p, &mut alphas);
                let mut dphi0 = g.dot(&p);
                if dphi0.is_nan() || dphi0 >= 0.0 {
                    pairs.clear();
                    p.assign(&g);
                    p *= -1.0;
                    dphi0 = -gnorm * gnorm;
                }
                let alpha0 = if pairs.is_empty() {
                    // The majoriser's minimiser along p where the objective bounds its
                    // curvature (a sufficient decrease), else a unit-length step.
                    f.curvature_bound(p.view())
                        .map(|c| -dphi0 / c)
                        .filter(|a| a.is_finite() && *a > 0.0)
                        .unwrap_or((1.0 / gnorm).min(1.0))
                } else {
                    1.0
                };
                let mut last_alpha = f64::NAN;
                let mut phi = |a: f64| {
                    last_alpha = a;
                    x_new.assign(&x);
                    x_new.scaled_add(a, &p);
                    let v = f.value_grad(x_new.view(), g_new.view_mut());
                    (v, g_new.dot(&p))
                };
                if let Ok(out) = self.line_search.search(&mut phi, fx, dphi0, alpha0) {
                    if out.alpha != last_alpha {
                        x_new.assign(&x);
                        x_new.scaled_add(out.alpha, &p);
                        f.value_grad(x_new.view(), g_new.view_mut());
                    }
                    accepted = Some(out);
                    break;
                }
            }
            let Some(out) = accepted else {
                status = Status::LineSearchFailed;
                break;
            };
            // Curvature pair s = x_new − x, y = g_new − g.
            let mut pair = if pairs.len() == self.memory {
                pairs.pop_front().unwrap_or_else(|| Pair::zeros(d))
            } else {
                Pair::zeros(d)
            };
            Zip::from(&mut pair.s)
                .and(&x_new)
                .and(&x)
                .for_each(|s, &a, &b| *s = a - b);
            Zip::from(&mut pair.y)
                .and(&g_new)
                .and(&g)
                .for_each(|y, &a, &b| *y = a - b);
            let sy = pair.s.dot(&pair.y);
            let scale = (pair.s.dot(&pair.s) * pair.y.dot(&pair.y)).sqrt();
            if sy > 1e-10 * scale {
                pair.rho = 1.0 / sy;
                pairs.push_back(pair);
            }
            std::mem::swap(&mut x, &mut x_new);
            std::mem::swap(&mut g, &mut g_new);
            fx = out.value;
            iterations = k + 1;
            if let Some(obs) = observer.as_deref_mut() {
                obs.observe_gradient(k, g.view());
                let info = IterationInfo {
                    iteration: k,
                    value: fx,
                    grad_norm: g.dot(&g).sqrt(),
                    step_size: out.alpha,
                };
                if !obs.observe(&info) {
                    status = Status::StoppedByObserver;
                    break;
                }
            }
        }
        if status == Status::IterationLimit && g.dot(&g).sqrt() <= tol {
            status = Status::Converged;
        }
        Ok(Solution {
            x,
            status,
            iterations,
            ledger: None,
        })
    }
}

/// One curvature pair with `ρ = 1/sᵀy`.
#[derive(Debug)]
struct Pair {
    s: Array1<f64>,
    y: Array1<f64>,
    rho: f64,
}

impl Pair {
    fn zeros(d: usize) -> Self {
        Self {
            s: Array1::zeros(d),
            y: Array1::zeros(d),
            rho: 0.0,
        }
    }
}

/// `p = −H g` by the two-loop recursion (N&W Alg. 7.4), `H₀ = γI`, `γ = sᵀy/yᵀy` of the newest
/// pair (`γ = 1` without pairs).
fn two_loop(pairs: &VecDeque<Pair>, g: &Array1<f64>, p: &mut Array1<f64>, alphas: &mut [f64]) {
    p.assign(g);
    for (i, pr) in pairs.iter().enumerate().rev() {
        let a = pr.rho * pr.s.dot(p);
        alphas[i] = a;
        p.scaled_add(-a, &pr.y);
    }
    if let Some(last) = pairs.back() {
        let gamma = 1.0 / (last.rho * last.y.dot(&last.y));
        *p *= gamma;
    }
    for (i, pr) in pairs.iter().enumerate() {
        let b = pr.rho * pr.y.dot(p);
        p.scaled_add(alphas[i] - b, &pr.s);
    }
    *p *= -1.0;
}

#[cfg(test)]
mod tests;
