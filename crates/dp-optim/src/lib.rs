//! Optimisers for the dpglm learners, written over narrow traits.
//!
//! Objectives ([`Objective`], [`FiniteSum`], [`GlmSum`]) write values and gradients into
//! caller-owned buffers; private first-order methods work over [`ClippedSum`], add the noise
//! themselves and return, in [`Solution::ledger`], the mechanisms they released. The
//! optimisers know nothing about privacy budgets: the caller (a learner in `dp-glm`) prices
//! the ledger with an accountant from `dp-accounting`. Randomness is passed in explicitly.
//!
//! Arrays are `ndarray` `f64`: views in, owned arrays out. The crate picks no BLAS backend;
//! the `blas` feature (off by default) switches `ndarray` to BLAS and links the system
//! OpenBLAS through `openblas-src`.

mod objective;
mod solution;

pub use objective::{ClippedSum, FiniteSum, GlmSum, L2Ball, Objective, Projection, Unconstrained};
pub use solution::{IterationInfo, Observer, Solution, Status, Trace};

#[cfg(feature = "blas")]
use openblas_src as _;
