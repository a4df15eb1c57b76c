//! Differentially private generalised linear models.
//!
//! This crate will hold the GLM losses (logistic, squared, Huber), the GLM objective's fast
//! path, the per-example clipping lemma, Johnson–Lindenstrauss projections and the private
//! learners of the dpglm papers (noisy and DP gradient descent, DP-SGD, objective
//! perturbation, approximate minima perturbation, output perturbation and the private
//! linear-regression methods), each returning a fitted model with its privacy report:
//! the (ε, δ) spent, the accountant, the neighbouring relation and the noise.
//!
//! Hyper-parameters are plain values checked when `fit` is called, and the fitted model is
//! a separate type. Privacy is always priced with `dp-accounting` from the ledger of
//! mechanisms the optimiser (`dp-optim`) released.
//!
//! Clipping a GLM gradient needs only the scalar `φ'(⟨θ, x_i⟩)` and `‖x_i‖`, so a clipped
//! batch gradient is two matrix–vector products; per-example gradient vectors are never
//! materialised. The crate picks no BLAS backend: the `blas` feature (off by default)
//! switches `ndarray` to BLAS and links the system OpenBLAS through `openblas-src`.
//!
//! The crate is an empty stub for now.

#[cfg(feature = "blas")]
use openblas_src as _;
