//! The narrow traits optimisers work over.
//!
//! Values and gradients are written into caller-owned buffers so that hot loops allocate
//! nothing.

use ndarray::{Array1, ArrayView1, ArrayViewMut1};

use crate::error::Result;
use crate::exact::ExactSum;

/// A differentiable objective `f: R^d → R`.
pub trait Objective {
    /// Dimension `d` of the parameter.
    fn dim(&self) -> usize;

    /// `f(x)`.
    fn value(&self, x: ArrayView1<'_, f64>) -> f64;

    /// Writes `∇f(x)` into `grad` (length `d`, overwritten) and returns `f(x)`.
    fn value_grad(&self, x: ArrayView1<'_, f64>, grad: ArrayViewMut1<'_, f64>) -> f64;

    /// An upper bound on the curvature `pᵀ∇²f(y)p` along direction `p` at every point `y`
    /// (a global quadratic majoriser along lines), if the objective knows one; `None` (the
    /// default) otherwise. [`crate::Lbfgs`] takes its first step, which has no curvature
    /// pairs to scale it, as the minimiser of that majoriser along the search direction.
    fn curvature_bound(&self, _p: ArrayView1<'_, f64>) -> Option<f64> {
        None
    }
}

/// An objective that is a finite sum `f(x) = Σ_{i<n} f_i(x) + r(x)`, for stochastic and
/// variance-reduced methods.
pub trait FiniteSum: Objective {
    /// Number of terms `n`.
    fn n_terms(&self) -> usize;

    /// Writes `Σ_{i ∈ batch} ∇f_i(x)` (the sum, without the regulariser) into `grad`
    /// (overwritten).
    fn batch_grad(&self, x: ArrayView1<'_, f64>, batch: &[usize], grad: ArrayViewMut1<'_, f64>);

    /// Writes `∇r(x)` of the regulariser (zero when there is none) into `grad` (overwritten).
    fn regulariser_grad(&self, x: ArrayView1<'_, f64>, grad: ArrayViewMut1<'_, f64>);
}

/// A finite sum of generalised-linear terms `f_i(x) = φ_i(⟨a_i, x⟩)`: the gradient of term
/// `i` is the scalar `φ_i'(⟨a_i, x⟩)` times `a_i`, so SAG stores one scalar per term.
pub trait GlmSum: FiniteSum {
    /// `φ_i'(⟨a_i, x⟩)`.
    fn term_scalar(&self, x: ArrayView1<'_, f64>, i: usize) -> f64;

    /// `grad += c · a_i`.
    fn add_scaled_row(&self, i: usize, c: f64, grad: ArrayViewMut1<'_, f64>);
}

/// Per-example clipped gradient sums: what a private first-order method releases (before
/// noise). Implementations must clip every per-example gradient to L2 norm `≤ clip`, for any
/// input, so the sum's sensitivity is `clip` (add/remove) whatever the data. The private
/// solvers release [`ClippedSum::exact_clipped_sum`], whose sensitivity holds for the value
/// computed; [`ClippedSum::clipped_sum`] is the plain `f64` sum (rounding error up to about
/// `h·u·n·C` for summation height `h`), for the Gamma-ball option and for diagnostics.
pub trait ClippedSum {
    /// Number of examples `n`.
    fn n_examples(&self) -> usize;

    /// Dimension `d` of the parameter.
    fn dim(&self) -> usize;

    /// Writes `Σ_{i ∈ batch} clip_C(∇ℓ_i(x))` into `out` (overwritten); `batch = None` means
    /// every example.
    fn clipped_sum(
        &self,
        x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        clip: f64,
        out: ArrayViewMut1<'_, f64>,
    );

    /// Overwrites `out` with the exact sum over `batch` (`None`: every example) of the
    /// quantised terms of `clip_C(∇ℓ_i(x))`, `C = out.quantiser().clip()` ([`ExactSum`], the
    /// `exact` module's fixed-point argument): what the private solvers release. Each term
    /// must depend only on its own example (and `x`, `C`); its norm bound is enforced on the
    /// integers, so the sum's sensitivity holds even for an oracle that clips imprecisely.
    ///
    /// The default computes each term with [`ClippedSum::clipped_sum`] on a one-example
    /// batch; implementations override it with a faster kernel giving the same terms' sum.
    ///
    /// # Panics
    /// If `out`'s dimension is not [`ClippedSum::dim`].
    fn exact_clipped_sum(
        &self,
        x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        out: &mut ExactSum,
    ) {
        out.clear();
        let clip = out.quantiser().clip();
        let mut term = Array1::zeros(self.dim());
        let mut add = |i: usize| {
            self.clipped_sum(x, Some(&[i]), clip, term.view_mut());
            out.add_term(term.view());
        };
        match batch {
            Some(b) => b.iter().for_each(|&i| add(i)),
            None => (0..self.n_examples()).for_each(add),
        }
    }

    /// Called once before a run that reads random batches of examples (DP-SGD): a hint to
    /// prepare the data for random access (the GLM objective asks for huge pages under its
    /// rows). It changes no value. The default does nothing.
    fn prepare_for_batches(&self) {}
}

/// A Euclidean projection onto a closed convex set.
pub trait Projection {
    /// Replaces `x` by its projection.
    fn project(&self, x: ArrayViewMut1<'_, f64>);

    /// `true` when the projection is the identity (no constraint): solvers then measure
    /// stationarity by `‖∇f‖` itself rather than by the gradient mapping. Defaults to
    /// `false`.
    fn is_identity(&self) -> bool {
        false
    }

    /// Checks the set's parameters; solvers call it before running. Defaults to `Ok`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for a malformed set (e.g. a ball whose radius is
    /// not finite and positive).
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// No constraint.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Unconstrained;

impl Projection for Unconstrained {
    fn project(&self, _x: ArrayViewMut1<'_, f64>) {}

    fn is_identity(&self) -> bool {
        true
    }
}

/// The L2 ball `{x : ‖x‖ ≤ radius}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L2Ball {
    /// Radius (> 0).
    pub radius: f64,
}

impl Projection for L2Ball {
    fn project(&self, mut x: ArrayViewMut1<'_, f64>) {
        let norm = crate::numeric::l2_norm(x.view());
        if norm > self.radius {
            if norm.is_finite() {
                x *= self.radius / norm;
            } else {
                // ‖x‖ > f64::MAX: r/‖x‖ would be 0; rescale by the largest entry first.
                crate::numeric::scale_to_norm(x, self.radius);
            }
        }
    }

    fn check(&self) -> Result<()> {
        crate::error::positive("radius", self.radius).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn ball_projection() {
        let mut x = array![3.0, 4.0];
        L2Ball { radius: 1.0 }.project(x.view_mut());
        assert!((x[0] - 0.6).abs() < 1e-15 && (x[1] - 0.8).abs() < 1e-15);
        let mut y = array![0.3, 0.4];
        L2Ball { radius: 1.0 }.project(y.view_mut());
        assert_eq!(y, array![0.3, 0.4]);
        Unconstrained.project(y.view_mut());
        assert_eq!(y, array![0.3, 0.4]);
        assert!(Unconstrained.is_identity() && !L2Ball { radius: 1.0 }.is_identity());
        assert!(L2Ball { radius: 1.0 }.check().is_ok() && Unconstrained.check().is_ok());
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(matches!(
                L2Ball { radius: bad }.check(),
                Err(crate::Error::InvalidParameter { name: "radius", .. })
            ));
        }
    }
}
