//! What a solver returns: the point, why it stopped, and what it released.

use dp_accounting::Ledger;
use ndarray::{Array1, ArrayView1};

/// Why a solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// The stopping rule (e.g. `‖∇f‖ ≤ τ`) holds at the returned point.
    Converged,
    /// The iteration (or step, or epoch) budget ran out; for fixed-length private methods
    /// this is the normal end.
    IterationLimit,
    /// An observer asked to stop.
    StoppedByObserver,
    /// The line search could not find an acceptable step.
    LineSearchFailed,
}

/// One iteration's summary, shown to observers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationInfo {
    /// Iteration (step) index, from 0.
    pub iteration: usize,
    /// Objective value where the solver knows it (non-private methods), else NaN.
    pub value: f64,
    /// Gradient norm where the solver knows it, else NaN.
    pub grad_norm: f64,
    /// Step size used.
    pub step_size: f64,
}

/// Watches a run; returning `false` stops it.
pub trait Observer {
    /// Called after every iteration.
    fn observe(&mut self, info: &IterationInfo) -> bool;

    /// Called at every iteration, just before [`Observer::observe`], with the gradient the
    /// step used: the exact gradient for non-private solvers, the released noisy gradient
    /// estimate for private ones (watching it is post-processing of what the ledger already
    /// accounts for). The default ignores it.
    fn observe_gradient(&mut self, iteration: usize, gradient: ArrayView1<'_, f64>) {
        let _ = (iteration, gradient);
    }
}

/// An observer that records every iteration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The recorded iterations.
    pub iterations: Vec<IterationInfo>,
}

impl Observer for Trace {
    fn observe(&mut self, info: &IterationInfo) -> bool {
        self.iterations.push(*info);
        true
    }
}

/// The result of a solver run.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The returned point (last or averaged iterate, per the solver's settings).
    pub x: Array1<f64>,
    /// Why the run stopped.
    pub status: Status,
    /// Iterations performed.
    pub iterations: usize,
    /// Mechanisms released by noisy solvers (empty ledger for non-private ones). The solver
    /// never states an ε: the caller prices this ledger with an accountant.
    pub ledger: Option<Ledger>,
}
