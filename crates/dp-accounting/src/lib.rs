//! Tight differential-privacy accounting for the mechanisms of private linear models.
//!
//! `dp-accounting` answers "how private is this?" for compositions of the mechanisms used to
//! train differentially private GLMs — Gaussian and Laplace noise, Poisson-subsampled and
//! fixed-batch DP-SGD steps, pure-ε steps (paper 000's Gamma-ball noise), objective
//! perturbation and approximate minima perturbation (paper 001), zCDP mechanisms — with four
//! accountants behind one [`Accountant`] trait:
//!
//! * [`PldAccountant`] — privacy-loss distributions, connect-the-dots discretisation and FFT
//!   composition: the tightest general method; also reports an optimistic estimate.
//! * [`RdpAccountant`] — Rényi DP over an order grid, converted with the best of three
//!   conversions.
//! * [`ZcdpAccountant`] — zero-concentrated DP.
//! * [`ExactAccountant`] — closed forms where they are tight.
//!
//! Gaussian noise released as a discrete Gaussian on a grid (`dp-optim`'s safe sampler) is
//! marked on its mechanism ([`Mechanism::with_grid`]); the PLD and exact accountants, which
//! know the continuous Gaussian's profile, then add a proven adjustment
//! ([`discrete_gaussian`]).
//!
//! Every number is an upper bound, rounded up; calibration ([`calibrate_noise`]) returns the
//! noise on the safe side; questions an accountant cannot answer are errors. Every mechanism
//! is analysed under an explicit [`Neighbouring`] relation, and composing it into an
//! accountant with a relation its analysis does not cover is an error.
//!
//! No arrays, no BLAS, no random numbers: this crate is pure privacy mathematics.
//!
//! ```
//! use dp_accounting::{Accountant, Mechanism, Neighbouring, PldAccountant, PldConfig, RdpAccountant};
//!
//! // 10,000 DP-SGD steps, sampling rate 0.004, noise multiplier 1.
//! let step = Mechanism::subsampled_gaussian(1.0, 0.004)?;
//! let mut pld = PldAccountant::new(PldConfig::default(), Neighbouring::AddRemove);
//! pld.compose(&step, 10_000)?;
//! let mut rdp = RdpAccountant::new(Neighbouring::AddRemove);
//! rdp.compose(&step, 10_000)?;
//! let (e_pld, e_rdp) = (pld.epsilon(1e-5)?, rdp.epsilon(1e-5)?);
//! assert!(e_pld < e_rdp); // the PLD accountant is tighter
//! # Ok::<(), dp_accounting::Error>(())
//! ```

mod accountant;
pub mod audit;
mod calibrate;
mod checks;
pub mod discrete_gaussian;
mod error;
mod event;
mod exact;
mod gaussian;
mod ledger;
mod mechanism;
mod neighbouring;
mod objpert;
mod pld;
mod profile;
mod rdp;
mod search;
mod selection;
mod shuffle;
mod special;
mod zcdp;

pub use accountant::{
    Accountant, AccountantKind, Answer, DEFAULT_CHAIN, Note, NoteValue, Query, answer_with_fallback,
};
pub use calibrate::{
    Calibration, Target, calibrate_noise, calibrate_sampling_rate, calibrate_steps, epsilon_of,
};
pub use discrete_gaussian::{GridAdjusted, GridComposition, GridGaussian};
pub use error::{DELTA_MIN, Error, Result};
pub use event::{Event, Method, Price, PrivacyEvent, price, price_with, randomiser_epsilon};
pub use exact::ExactAccountant;
pub use gaussian::{gaussian_delta, gaussian_epsilon, gaussian_sigma};
pub use ledger::{Ledger, LedgerEntry};
pub use mechanism::{Mechanism, ObjPertParams, Sampling};
pub use neighbouring::Neighbouring;
pub use objpert::{kifer_epsilon, kifer_parameters, objpert_delta, objpert_epsilon};
pub use pld::{PldAccountant, PldConfig, PldDiagnostics};
pub use rdp::{
    Conversion, DroppedOrder, RdpAccountant, RdpDelta, RdpEpsilon, default_orders, objpert_rdp,
};
pub use selection::{Repetitions, tuned};
pub use shuffle::{
    ShuffleBound, ShuffleMethod, shuffle_delta, shuffle_delta_numerical, shuffle_epsilon,
    shuffle_epsilon_numerical,
};
pub use zcdp::{ZcdpAccountant, zcdp_delta, zcdp_epsilon};
