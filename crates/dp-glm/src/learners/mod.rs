//! The private learners, and what they share: the budget, noise calibration and the report.
//!
//! Every learner is a plain-value builder checked when `fit` is called; `fit(&data, &mut rng)`
//! returns a [`LinearModel`](crate::LinearModel) carrying its
//! [`PrivacyReport`]. The noise is calibrated to the target (ε, δ) by the
//! chosen accountant before any data is touched, and the ledger the optimiser returns is priced
//! again after the run: the report's spent ε is that second, independent number.

/// The builder method every learner with a `budget: Budget` field has.
macro_rules! budget_setter {
    () => {
        /// Sets the target (ε, δ), keeping the accountant and the neighbouring relation.
        pub fn budget(mut self, epsilon: f64, delta: f64) -> Self {
            self.budget.epsilon = epsilon;
            self.budget.delta = delta;
            self
        }
    };
}

/// A learner's public `fit` on dense rows and `fit_sparse` on sparse rows, both its generic
/// `fit_rows` over rows in memory (`objpert::InMemory` for the perturbation learners, `GlmRows`
/// for the tuning of DP-SGD), each with the docs given.
macro_rules! in_memory_fits {
    ($(#[$fit:meta])* fn fit; $(#[$sparse:meta])* fn fit_sparse;) => {
        $(#[$fit])*
        pub fn fit<R: rand::Rng + ?Sized>(
            &self,
            data: &crate::data::Dataset,
            rng: &mut R,
        ) -> crate::error::Result<crate::model::LinearModel> {
            self.fit_rows(data, rng)
        }

        $(#[$sparse])*
        pub fn fit_sparse<R: rand::Rng + ?Sized>(
            &self,
            data: &crate::sparse::SparseDataset,
            rng: &mut R,
        ) -> crate::error::Result<crate::model::LinearModel> {
            self.fit_rows(data, rng)
        }
    };
}
pub(crate) use in_memory_fits;

/// A gradient learner `$t`'s fits on dense or sparse rows: its `fit_rows(data, rng,
/// observer)`, generic over the rows (`GlmRows`), with the docs and body given (its
/// `fit_with_observer` calls it too); the public `fit_sparse_with_observer` on sparse rows,
/// and, with `fn fit_sparse` first, `fit_sparse` without an observer. Their docs say what
/// sparse rows cost and why the model is the dense one: `$how`, the words between the rows'
/// description and "so the model is bit-identical".
macro_rules! sparse_fits {
    (
        $t:ident, fn fit_sparse, $how:literal;
        $($rows:tt)*
    ) => {
        #[doc = sparse_fits!(@doc $t, fit, $how)]
        ///
        /// # Errors
        #[doc = concat!("As [`", stringify!($t), "::fit`].")]
        pub fn fit_sparse<R: rand::Rng + ?Sized>(
            &self,
            data: &crate::sparse::SparseDataset,
            rng: &mut R,
        ) -> crate::error::Result<crate::model::LinearModel> {
            self.fit_sparse_with_observer(data, rng, None)
        }

        sparse_fits!(@observer $t, concat!(
            "[`", stringify!($t), "::fit_sparse`], showing every optimiser step to `observer` \
             (as [`", stringify!($t), "::fit_with_observer`])."
        ));
        sparse_fits!(@rows $($rows)*);
    };
    ($t:ident, $how:literal; $($rows:tt)*) => {
        sparse_fits!(@observer $t, sparse_fits!(@doc $t, fit_with_observer, $how));
        sparse_fits!(@rows $($rows)*);
    };
    (@doc $t:ident, $fit:ident, $how:literal) => {
        concat!(
            "[`", stringify!($t), "::", stringify!($fit), "`] on sparse rows \
             ([`SparseDataset`](crate::sparse::SparseDataset), e.g. a LIBSVM file read by \
             [`dp_data::read_libsvm_sparse`])", $how, ", so the model is bit-identical to [`",
            stringify!($t), "::fit`]'s on the same rows densified, with the same `rng`."
        )
    };
    (@observer $t:ident, $doc:expr) => {
        #[doc = $doc]
        ///
        /// # Errors
        #[doc = concat!("As [`", stringify!($t), "::fit`].")]
        pub fn fit_sparse_with_observer<R: rand::Rng + ?Sized>(
            &self,
            data: &crate::sparse::SparseDataset,
            rng: &mut R,
            observer: Option<&mut dyn dp_optim::Observer>,
        ) -> crate::error::Result<crate::model::LinearModel> {
            self.fit_rows(data, rng, observer)
        }
    };
    (
        @rows $(#[$m:meta])*
        $vis:vis fn fit_rows(&$s:ident, $data:ident, $rng:ident, $observer:ident) $body:block
    ) => {
        $(#[$m])*
        $vis fn fit_rows<D, R>(
            &$s,
            $data: &D,
            $rng: &mut R,
            $observer: Option<&mut dyn dp_optim::Observer>,
        ) -> crate::error::Result<crate::model::LinearModel>
        where
            D: crate::glm_rows::GlmRows + ?Sized,
            R: rand::Rng + ?Sized,
        $body
    };
}

mod amp;
mod dpambssgd;
mod dpgd;
mod dpsgd;
mod dpssgd;
mod jl_gd;
mod nonconvex;
mod objpert;
mod output_perturbation;
mod projected;
mod ssp;
mod streamed_glm;
#[cfg(test)]
pub(crate) mod testdata;

pub use amp::{Amp, AmpSolver};
pub use dpambssgd::DpAmbSsgd;
pub use dpgd::DpGd;
pub(crate) use dpsgd::SgdPlan;
pub use dpsgd::{DpSgd, SgdNoise, SgdSchedule};
pub use dpssgd::DpSsgd;
pub use jl_gd::JlNoisyGd;
pub use nonconvex::NonConvexDpGd;
pub use objpert::{ObjPertBounds, ObjectivePerturbation};
pub use output_perturbation::OutputPerturbation;
pub use projected::NoisyProjectedGd;
pub use ssp::Ssp;

use dp_accounting::{
    Accountant, AccountantKind, Ledger, Mechanism, Neighbouring, PrivacyEvent, Target,
    calibrate_noise,
};

use crate::error::{Error, Result};
use crate::report::PrivacyReport;

/// A privacy budget and how it is accounted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Target ε (finite, > 0).
    pub epsilon: f64,
    /// Target δ in (0, 1).
    pub delta: f64,
    /// The accountant that calibrates the noise and prices the ledger.
    pub accountant: AccountantKind,
    /// The neighbouring relation of the guarantee.
    pub neighbouring: Neighbouring,
    /// Mechanisms released before the learner in the same run (default none), which its
    /// calibration composes with: the learner's noise is then the least for which they and
    /// its own ledger together meet `(epsilon, delta)`.
    pub prior: Prior,
}

/// What a run released before the learner: `count` pure-DP mechanisms, each at most
/// `epsilon`-DP (the private estimates of bounds and feature ranges, [`crate::bounds`]), and
/// at most one more of its own ε (a private row count, [`crate::row_count`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Prior {
    /// The number of mechanisms (0: none).
    pub count: u64,
    /// The ε of each (an upper bound).
    pub epsilon: f64,
    /// The ε of one more pure-DP mechanism, `None`: none.
    pub one: Option<f64>,
}

impl Prior {
    /// Whether nothing was released before the learner.
    pub fn is_empty(&self) -> bool {
        self.count == 0 && self.one.is_none()
    }

    /// Their ε by basic composition, `count·epsilon + one` (Dwork & Roth, Thm 3.16).
    pub fn basic_epsilon(&self) -> f64 {
        self.count as f64 * self.epsilon + self.one.unwrap_or(0.0)
    }

    /// Composes them into `acc`.
    ///
    /// # Privacy
    /// Each is a pure-DP mechanism at its ε (Dwork & Roth, Def. 2.4).
    ///
    /// # Errors
    /// An accountant that cannot compose pure DP, an invalid ε.
    pub(crate) fn compose_into(&self, acc: &mut dyn Accountant) -> dp_accounting::Result<()> {
        if self.count > 0 {
            acc.compose(&Mechanism::pure_dp(self.epsilon)?, self.count)?;
        }
        if let Some(e) = self.one {
            acc.compose(&Mechanism::pure_dp(e)?, 1)?;
        }
        Ok(())
    }
}

impl Budget {
    /// A budget with the given accountant and relation.
    pub fn new(
        epsilon: f64,
        delta: f64,
        accountant: AccountantKind,
        neighbouring: Neighbouring,
    ) -> Self {
        Self {
            epsilon,
            delta,
            accountant,
            neighbouring,
            prior: Prior::default(),
        }
    }

    /// The budget with its [`Prior`] paid by basic composition instead: ε less the prior's
    /// `count·epsilon`, no prior. For calibrations that cannot compose with the prior.
    pub fn split(&self) -> Self {
        Self {
            epsilon: self.epsilon - self.prior.basic_epsilon(),
            prior: Prior::default(),
            ..*self
        }
    }

    /// The validated target.
    ///
    /// # Errors
    /// ε or δ out of range.
    pub fn target(&self) -> Result<Target> {
        Target::new(self.epsilon, self.delta).map_err(Error::from)
    }

    /// Checks that the budget's relation is `supported`, the only one `learner`'s analysis
    /// covers.
    ///
    /// # Errors
    /// [`Error::UnsupportedNeighbouring`] otherwise.
    pub(crate) fn require_relation(
        &self,
        supported: Neighbouring,
        learner: &'static str,
    ) -> Result<()> {
        if self.neighbouring == supported {
            Ok(())
        } else {
            Err(Error::UnsupportedNeighbouring {
                learner,
                requested: self.neighbouring,
                supported,
            })
        }
    }
}

/// [`calibrate`] on the scale-free multiplier `z = σ/unit`, returning `σ = z·unit`: the σ
/// whose mechanism `make(σ)` was priced, bit for bit. For noise whose natural scale `unit`
/// (a sensitivity, a Lipschitz bound) can be arbitrarily small or large: the fixed search
/// range of the calibration then bounds the multiplier, not σ.
///
/// # Privacy
/// As [`calibrate`]: `make(σ)` at the returned σ was priced `≤` the target.
pub(crate) fn calibrate_scaled<F>(budget: &Budget, steps: u64, unit: f64, make: F) -> Result<f64>
where
    F: Fn(f64) -> dp_accounting::Result<Mechanism>,
{
    let sigma = |z: f64| z * unit;
    Ok(sigma(calibrate(budget, steps, |z| make(sigma(z)))?))
}

/// The smallest noise parameter for which `steps` applications of `make(x)`, after the
/// budget's [`Prior`], meet `budget`.
///
/// Without a prior: [`dp_accounting::calibrate_noise`]. With one: first the noise for the
/// target less the prior's basic-composition ε ([`Budget::split`]); then, if the budget's
/// accountant can price the prior and `steps × make(x)` together, the least noise (geometric
/// bisection to a relative [`JOINT_TOLERANCE`]) at which that joint price is `≤` the target,
/// searched below the split noise (where the accountant's price is checked first). An
/// accountant that cannot compose them gets the split noise.
///
/// # Privacy
/// [`dp_accounting::calibrate_noise`]: its noise is the feasible end of the final bracket,
/// so its ε is `≤` the target. The joint search also returns a feasible end, priced by the
/// accountant on the whole composition (its upper bound, MATH §3–4). The learner's report
/// prices its own ledger again, and the run's total is priced once more
/// ([`crate::bounds::PrivateBounds::compose`]) and refused above the target.
pub(crate) fn calibrate<F>(budget: &Budget, steps: u64, make: F) -> Result<f64>
where
    F: Fn(f64) -> dp_accounting::Result<Mechanism>,
{
    let split = budget.split();
    let c = calibrate_noise(
        split.target()?,
        budget.accountant,
        budget.neighbouring,
        steps,
        &make,
    )?;
    if budget.prior.is_empty() {
        return Ok(c.value);
    }
    let target = budget.target()?;
    let feasible = |x: f64| {
        make(x)
            .and_then(|m| joint_epsilon(budget, &m, steps))
            .is_ok_and(|e| e <= target.epsilon())
    };
    // The split noise is feasible for the joint price unless the accountant cannot compose
    // the two (then the split stands, as basic composition prices it).
    let mut hi = c.value;
    if !feasible(hi) {
        return Ok(hi);
    }
    let mut lo = 0.5 * hi;
    while feasible(lo) {
        hi = lo;
        lo *= 0.5;
        if lo < JOINT_TOLERANCE * c.value {
            return Ok(hi);
        }
    }
    while hi / lo > 1.0 + JOINT_TOLERANCE {
        let mid = (lo * hi).sqrt();
        if feasible(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The ε at the budget's δ of the budget's [`Prior`] followed by `steps` applications of
/// `mech`, priced together by the budget's accountant.
///
/// # Errors
/// The accountant's: it cannot compose the two, or cannot answer.
///
/// # Privacy
/// The accountant's upper bound on the whole composition (MATH §3–4); the prior's entries
/// are pure-DP mechanisms ([`Prior::compose_into`]).
pub(crate) fn joint_epsilon(
    budget: &Budget,
    mech: &Mechanism,
    steps: u64,
) -> dp_accounting::Result<f64> {
    let mut acc = budget.accountant.build(budget.neighbouring);
    budget.prior.compose_into(acc.as_mut())?;
    acc.compose(mech, steps)?;
    acc.epsilon(budget.delta)
}

/// Relative precision of the joint calibration with a [`Prior`] (each step prices the
/// whole composition, which costs a PLD accountant a convolution).
pub const JOINT_TOLERANCE: f64 = 1e-3;

/// Prices `ledger` (a plain composition, or any event tree) and assembles the report through
/// [`PrivacyReport::priced`]; errors if the spent ε exceeds the target (which calibration
/// rules out — this is the final check before a model is released).
///
/// # Privacy
/// As [`PrivacyReport::priced`]: the price of the whole tree, by the budget's accountant.
pub(crate) fn report(
    budget: &Budget,
    ledger: impl Into<PrivacyEvent>,
    noise: Vec<(String, f64)>,
    notes: Vec<String>,
) -> Result<PrivacyReport> {
    let event = ledger.into();
    if event.neighbouring() != budget.neighbouring {
        return Err(Error::Privacy(format!(
            "the ledger is stated under {} but the budget under {}",
            event.neighbouring(),
            budget.neighbouring
        )));
    }
    PrivacyReport::priced(
        (budget.epsilon, budget.delta),
        budget.accountant,
        event,
        noise,
        notes,
    )
}

/// The report's note for a learner that divides its noisy sums by the number of rows `n` (and
/// sizes their grid by it), under add/remove, where `n` is private: it is treated as public.
/// `None` under replace-one, whose neighbours have the same `n`.
pub(crate) fn public_n_note(relation: Neighbouring, uses: &str) -> Option<String> {
    (relation == Neighbouring::AddRemove).then(|| {
        format!(
            "the number of rows n is private under add/remove but treated as public here: {uses}"
        )
    })
}

/// How a report's note names a public number of rows `n` a learner was given (a user's, or
/// a private count, which [`PrivateBounds::compose`](crate::bounds::PrivateBounds::compose)
/// then names as such).
pub(crate) fn given_rows(n: usize) -> String {
    format!("the public number of rows n = {n}")
}

/// The report's note on the number of rows `n`, which a learner `uses` as the text says:
/// given as the public value `public_n`, or (`None`) the true count, treated as public under
/// add/remove ([`public_n_note`]).
pub(crate) fn rows_note(
    relation: Neighbouring,
    public_n: Option<usize>,
    uses: &str,
) -> Option<String> {
    match public_n {
        Some(n) => Some(format!("{}, not the data's count: {uses}", given_rows(n))),
        None => public_n_note(relation, uses),
    }
}

/// The number of rows a learner sizes its release for: `public_n` when given (a public
/// value: under add/remove the true count is private), else the data's count, treated as
/// public.
///
/// # Errors
/// `public_n = 0` ([`Error::InvalidHyperParameter`] naming `public_n`).
pub(crate) fn row_count(public_n: Option<usize>, rows: usize) -> Result<usize> {
    let n = public_n.unwrap_or(rows);
    crate::error::ensure(n >= 1, "public_n", n as f64, "must be >= 1")?;
    Ok(n)
}

/// A [`ClippedSum`](dp_optim::ClippedSum) that reports the public row count `n` in place of
/// the data's: the full-batch noisy solvers divide the noisy sum by it and size the grid of
/// their release for it, so that neither depends on the true count. The sums (f64 and exact)
/// are the wrapped oracle's, over every row of the data.
///
/// # Privacy
/// The clip bounds each row's contribution to the sum whatever the count, so the sum's
/// sensitivity is unchanged; dividing by a public `n` is post-processing. For full-batch
/// solvers only (`batch = None`): a sampler that draws indices below `n` would miss rows.
pub(crate) struct PublicCount<'a, S: ?Sized> {
    pub(crate) inner: &'a S,
    pub(crate) n: usize,
}

impl<S: dp_optim::ClippedSum + ?Sized> dp_optim::ClippedSum for PublicCount<'_, S> {
    fn n_examples(&self) -> usize {
        self.n
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn clipped_sum(
        &self,
        x: ndarray::ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        clip: f64,
        out: ndarray::ArrayViewMut1<'_, f64>,
    ) {
        self.inner.clipped_sum(x, batch, clip, out);
    }

    fn exact_clipped_sum(
        &self,
        x: ndarray::ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        out: &mut dp_optim::ExactSum,
    ) {
        self.inner.exact_clipped_sum(x, batch, out);
    }
}

/// The ledger a noisy optimiser returned; a privacy error if it returned none (a noisy
/// optimiser always does: without a ledger nothing could be priced).
pub(crate) fn ledger_of(ledger: Option<Ledger>) -> Result<Ledger> {
    ledger.ok_or_else(|| Error::Privacy("the optimiser returned no ledger".into()))
}

/// The self-bounding gradient bound `G = X(√(2H)·Y + H·B·X)` on the ball of radius `B`
/// (MATH §9, paper 003): `|φ'| ≤ √(2Hφ)` and `φ ≤ Λ(B)` there.
///
/// # Errors
/// `B`, `X` or `Y` not finite and positive.
pub(crate) fn self_bounding_gradient(
    loss: crate::loss::Loss,
    radius: f64,
    x_bound: f64,
    y_bound: f64,
) -> Result<f64> {
    let b = positive("radius", radius)?;
    let x = positive("x_bound", x_bound)?;
    let y = positive("y_bound", y_bound)?;
    let h = loss.smoothness();
    Ok(x * ((2.0 * h).sqrt() * y + h * b * x))
}

/// The memory a learner may allocate for buffers whose size derives from a hyper-parameter
/// (4 GiB): a JL matrix and the projected data (`k`), the iterates non-convex DP-GD keeps
/// (`steps`). A larger request is refused with [`Error::ResourceLimit`] before anything is
/// allocated, instead of aborting the process on a failed allocation.
pub const MEMORY_BUDGET_BYTES: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// Checks that `count` values of `f64` (a buffer sized by the hyper-parameter `name` =
/// `value`) fit in [`MEMORY_BUDGET_BYTES`]; `count` is a float so that the product of sizes
/// that computes it cannot wrap.
///
/// # Errors
/// [`Error::ResourceLimit`] naming the hyper-parameter and the bytes needed.
pub(crate) fn check_memory(name: &'static str, value: f64, count: f64) -> Result<()> {
    let needed = count * std::mem::size_of::<f64>() as f64;
    if needed <= MEMORY_BUDGET_BYTES {
        Ok(())
    } else {
        Err(Error::ResourceLimit {
            name,
            value,
            needed,
            limit: MEMORY_BUDGET_BYTES,
            unit: "bytes",
        })
    }
}

/// The most optimiser steps a learner runs (10⁸): every step reads the data (or a batch)
/// once, so more is days of work — refused up front with [`Error::ResourceLimit`] instead of
/// a run that looks hung. Applies to `steps` (DP-GD, non-convex DP-GD, noisy projected GD,
/// the JL method) and to the steps `epochs` implies for DP-SGD.
pub const MAX_STEPS: f64 = 1e8;

/// Checks that the hyper-parameter `name` = `value` asks for at most [`MAX_STEPS`] steps.
///
/// # Errors
/// [`Error::ResourceLimit`] naming the hyper-parameter and the steps it asks for.
pub(crate) fn check_steps(name: &'static str, value: f64, steps: f64) -> Result<()> {
    if steps <= MAX_STEPS {
        Ok(())
    } else {
        Err(Error::ResourceLimit {
            name,
            value,
            needed: steps,
            limit: MAX_STEPS,
            unit: "steps",
        })
    }
}

/// Checks a hyper-parameter is finite and positive.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::InvalidHyperParameter {
            name,
            value,
            reason: "must be finite and > 0",
        })
    }
}
