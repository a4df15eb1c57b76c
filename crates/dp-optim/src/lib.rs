//! Optimisers for the dpglm learners, written over narrow traits.
//!
//! This crate will hold gradient descent, stochastic gradient descent, L-BFGS (generic over
//! a line search) and SAG, in the solver / state / observer shape of `argmin`, with the
//! reason a run stopped reported as an enum. Every solver is tested on problems with known
//! optima.
//!
//! The optimisers know nothing about privacy budgets: a noisy step reports the mechanism it
//! released in a ledger, and the caller (a learner in `dp-glm`) prices that ledger with an
//! accountant from `dp-accounting`. Randomness is passed in explicitly as `&mut impl Rng`.
//!
//! Arrays are `ndarray` `f64`: views in, owned arrays out. The crate picks no BLAS backend;
//! the `blas` feature (off by default) switches `ndarray` to BLAS and links the system
//! OpenBLAS through `openblas-src`.
//!
//! The crate is an empty stub for now.

#[cfg(feature = "blas")]
use openblas_src as _;
