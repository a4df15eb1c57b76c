//! Optimisers for the dpglm learners, written over narrow traits.
//!
//! * **Traits.** Objectives ([`Objective`], [`FiniteSum`], [`GlmSum`]) write values and
//!   gradients into caller-owned buffers; [`ClippedSum`] gives per-example clipped gradient
//!   sums, what a private method releases before noise; [`Projection`] ([`Unconstrained`],
//!   [`L2Ball`]) constrains iterates; [`Regulariser`] adds a data-independent penalty's
//!   gradient to a private method's step; [`LineSearch`] abstracts L-BFGS's line search.
//! * **Non-private solvers.** [`GradientDescent`] (projected; constant or decaying
//!   [`StepSize`], [`Averaging`]), [`Lbfgs`] (with the [`StrongWolfe`] line search of
//!   Nocedal & Wright, Alg. 3.5/3.6) and [`Sag`] (one stored scalar per GLM term). They stop
//!   on `‖∇f‖ ≤ τ` (absolute) or an iteration limit and report why ([`Status`]).
//! * **Private solvers.** [`NoisyGd`] (full batch) and [`DpSgd`] ([`BatchSchedule`]: Poisson,
//!   one shuffled pass, fixed-size without replacement; [`UpdateRule`]: SGD, momentum, Adam;
//!   [`NoiseDistribution`]: Gaussian or paper 000's Gamma ball). They add the noise
//!   themselves and return, in [`Solution::ledger`], the `dp_accounting` mechanisms they
//!   released under the neighbouring relation the analysis needs. The sums they release are
//!   exact ([`ExactSum`]: clipped terms quantised to integers on the noise grid, their norm
//!   bound enforced on the integers, summed in integer arithmetic; [`SumRelease`] adds exact
//!   discrete Gaussian noise), so the recorded sensitivity holds for the values computed,
//!   whatever `n`, order or thread count. The optimisers know nothing
//!   about privacy budgets: the caller (a learner in `dp-glm`) prices the ledger with an
//!   accountant.
//! * **Noise and randomness.** [`Noise`] samples Gaussian, Laplace and Gamma-ball vectors
//!   into buffers; Gaussian and Laplace releases are placed on an exact power-of-two grid with
//!   discrete Gaussian / discrete Laplace noise ([`discrete`]), so that the privacy of the
//!   values actually computed in `f64` holds (the noise module's docs give the argument, and
//!   the private solvers state the rounding's extra sensitivity in their ledgers). Generators are passed in explicitly: [`secure_rng`] (a CSPRNG seeded by the
//!   operating system) for real releases, [`seeded_rng`] (Xoshiro256++) for reproducible
//!   experiments only.
//! * **Numerics.** [`numeric`]: norms, dot products and ball projections of data rows
//!   without overflow or underflow, so that no single record can make a run fail.
//! * **Observation.** An [`Observer`] (e.g. [`Trace`]) sees every iteration's summary and the
//!   gradient the step used, and may stop the run.
//!
//! Hyper-parameters are plain values checked when a solver runs; a bad one is an [`Error`]
//! naming it. Arrays are `ndarray` `f64`: views in, owned arrays out. The crate picks no BLAS
//! backend; the `blas` feature (off by default) switches `ndarray` to BLAS and links the
//! system OpenBLAS through `openblas-src`.
//!
//! ```
//! use dp_accounting::{AccountantKind, Mechanism, Neighbouring};
//! use dp_optim::{BatchSchedule, ClippedSum, DpSgd, Length, NoRegulariser, StepSize,
//!                Unconstrained, UpdateRule, seeded_rng};
//! use ndarray::{Array1, ArrayView1, ArrayViewMut1};
//!
//! /// Private mean of scalars: gradient of ½(θ − v_i)², clipped to |·| ≤ C.
//! struct Values(Vec<f64>);
//! impl ClippedSum for Values {
//!     fn n_examples(&self) -> usize { self.0.len() }
//!     fn dim(&self) -> usize { 1 }
//!     fn clipped_sum(&self, x: ArrayView1<'_, f64>, batch: Option<&[usize]>, clip: f64,
//!                    mut out: ArrayViewMut1<'_, f64>) {
//!         let all: Vec<usize> = (0..self.0.len()).collect();
//!         out[0] = batch.unwrap_or(&all).iter().map(|&i| (x[0] - self.0[i]).clamp(-clip, clip)).sum();
//!     }
//! }
//!
//! let data = Values((0..10_000).map(|i| (i % 10) as f64 / 10.0).collect());
//! // A seeded generator for a reproducible example; real releases use `secure_rng()`.
//! let mut rng = seeded_rng(1);
//! let sol = DpSgd::new(BatchSchedule::Poisson { q: 0.01 }, Length::Epochs(3),
//!                      StepSize::Constant(0.1), 1.0, 1.1)
//!     .update(UpdateRule::Momentum { beta: 0.9 })
//!     .minimize(&data, &NoRegulariser, &Unconstrained, Array1::zeros(1).view(), &mut rng, None)?;
//! assert!((sol.x[0] - 0.45).abs() < 0.1);
//! let ledger = sol.ledger.expect("private solvers return a ledger");
//! assert_eq!(ledger.neighbouring(), Neighbouring::AddRemove);
//! // The noisy sums are exact releases: the ledger's multiplier includes the quantisation's
//! // slack, and the mechanism carries the discrete Gaussian (which PLD and exact price).
//! let (release, z) = dp_optim::sum_multiplier(1.1, 1.0, 1)?;
//! assert!(z < 1.1 && z > 1.1 * (1.0 - 1e-6));
//! let step = Mechanism::subsampled_gaussian(z, 0.01)?.with_grid(release.discrete_gaussian()?);
//! assert_eq!(ledger.entries()[0].mechanism, step);
//! assert_eq!(ledger.entries()[0].count, 300);
//! let eps = ledger.epsilon(AccountantKind::Rdp, 1e-5)?;
//! assert!(eps > 0.0 && eps < 2.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod exact;
mod gd;
mod lbfgs;
mod linesearch;
mod noise;
mod noisy;
pub mod numeric;
mod objective;
mod rng;
mod sag;
mod solution;
mod step;
#[cfg(test)]
mod testutil;

pub use error::{Error, Result};
pub use exact::{ExactSum, Quantiser, SumRelease, Widen, sum_multiplier, sum_noise_multiplier};
pub use gd::GradientDescent;
pub use lbfgs::Lbfgs;
pub use linesearch::{LineSearch, LineSearchFailure, LineSearchOutcome, StrongWolfe};
pub use noise::tally;
pub use noise::{
    GRID_BITS, GridRelease, Noise, discrete, grid_multiplier, grid_noise_multiplier, laplace_for,
};
pub use noisy::{
    BatchSchedule, DpSgd, L2Regulariser, Length, NOISY_GRADIENT_LABEL, NoRegulariser,
    NoiseDistribution, NoisyGd, Regulariser, UpdateRule,
};
pub use objective::{ClippedSum, FiniteSum, GlmSum, L2Ball, Objective, Projection, Unconstrained};
pub use rng::{SecureRng, SeededRng, secure_rng, seeded_rng};
pub use sag::Sag;
pub use solution::{IterationInfo, Observer, Solution, Status, Trace};
pub use step::{Averaging, StepSize};

#[cfg(feature = "blas")]
use openblas_src as _;

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
