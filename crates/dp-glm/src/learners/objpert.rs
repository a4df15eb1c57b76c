//! Objective perturbation (paper 001): minimise the sum-form loss plus a random linear term and
//! a ridge, release the exact minimiser. Shared with [`Amp`](super::Amp): the enforced bounds
//! (`L`, `β`), the perturbed objective and the `(σ, λ)` calibration.

use std::borrow::Cow;
use std::sync::Mutex;

use dp_accounting::{
    AccountantKind, GridGaussian, Ledger, Mechanism, Neighbouring, ObjPertParams, gaussian_sigma,
};
use dp_optim::{
    FiniteSum, GRID_BITS, GlmSum, GridRelease, IterationInfo, Lbfgs, Noise, Objective, Observer,
    Sag,
};
use ndarray::{Array1, ArrayView1, ArrayViewMut1};
use rand::Rng;

use super::{Budget, calibrate_scaled, joint_epsilon, positive, public_n_note, report};
use crate::clipping::ClippedLoss;
use crate::data::Dataset;
use crate::error::{Error, Result, ensure};
use crate::glm::{GlmObjective, Scale};
use crate::glm_rows::GlmRows;
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::preprocess::BallProjector;
use crate::sparse::{SparseDataset, SparseGlmObjective};
use crate::streamed::BlockSource;
use crate::sufficient::StreamError;

use super::streamed_glm::{Stream, StreamedGlm, Terms};

/// The label of objective perturbation's event, whose linear term's noise it draws.
const LINEAR_LABEL: &str = "objective perturbation (discrete Gaussian linear term)";

/// The label of AMP's output noise event.
const OUTPUT_LABEL: &str = "output noise on the approximate minimiser (sensitivity (2·tau + b \
                            grid slack)/lambda + output grid slack)";

/// Objective perturbation for convex GLMs (Chaudhuri et al. 2011, Kifer et al. 2012; analysis
/// of paper 001, Redberg, Koskela, Wang 2023), released so that it is private as computed.
///
/// Draws the linear term `b` once, as an exact discrete Gaussian on a fine grid
/// (`b = γ_b·K`, `K ~ N_ℤ(0, (σ/γ_b)²)^d`, `γ_b` the power of two with `σ/γ_b ∈ [2^24, 2^25)`;
/// dp_optim's noise docs), minimises `J(θ) = Σ_i ℓ(θ; z_i) + (λ/2)‖θ‖² + bᵀθ` with L-BFGS to
/// a certified `‖∇J(θ̃)‖ ≤ τ` (the computed norm plus a bound on its floating-point error),
/// and releases `θ̃` through grid-safe Gaussian output noise `σ_out` — approximate minima
/// perturbation ([`Amp`](super::Amp)) with a tolerance and an output noise chosen
/// automatically: `τ = 1e-10·(nL + σ(√d + 8))` for `n` up to ~5·10⁴, more above
/// (`objpert_tau`: it must exceed the gradient's floating-point error; the number of rows `n`
/// is treated as public)
/// and `σ_out` the smallest std whose output release has sensitivity-to-std ratio at most
/// `κ·L/σ` with `κ =` `OUTPUT_SHARE` `= 0.05`, raised if needed (large ε: `σ` below about
/// `2L`) to the least power of two whose output grid represents the public release box
/// `|θ_j| ≤ (nL + σ(√d + 8) + τ)/λ` that `θ̃` is clamped to (`ReleaseBox`; it holds the
/// minimiser, so the clamp binds only on more than `n` rows or an extreme `b`): the release
/// cannot fail on the data. Rows of norm above `X` are scaled to norm
/// `X` (a per-record map, so it costs no privacy), which bounds every per-example Hessian by
/// `β = X²·sup φ''`; losses with an unbounded derivative (squared) are replaced by their
/// clipped loss at gradient norm `C` (MATH §5, paper 001 §4), so `L = C`; otherwise
/// `L = X·sup|φ'|`. With the paper's setting (unit rows plus a bias feature, `X = √2`,
/// logistic loss) this is `L = √2`, `β = 1/2`.
///
/// `(σ, λ)`: with `λ` given, the smallest `σ` meeting the target; otherwise paper 001's rule
/// (MATH §6): from `λ₀ = max(2β/ε, 1.05β)` up the grid `λ₀·1.05^k`, the first `λ` whose
/// calibrated `σ` is at most `1.3·σ_Gauss(ε, δ, L)` (a `λ` is accepted when `σ = 1.3·σ_Gauss`
/// meets the target; the first such `k` is found by regula falsi on the grid, acceptance being
/// monotone in `k`), then the smallest `σ ≥ σ_Gauss` meeting the target at that `λ`, to a
/// relative `1e-4`, feasible end. [`ObjectivePerturbation::calibrate`] applies the rule to the
/// idealised mechanism (paper 001's numbers); [`ObjectivePerturbation::fit`] to the released
/// one ([`ObjectivePerturbation::calibrate_release`]).
///
/// # Privacy
/// Under add/remove (the only relation paper 001's analysis covers). The released value is
/// `γ_o·(round(c(θ̃)/γ_o) + K_o)`, a point of the output grid, `c` the clamp to the public
/// release box (1-Lipschitz, so it keeps the output release's sensitivity: `ReleaseBox`);
/// the argument
/// ([`dp_accounting::discrete_gaussian`], § Objective perturbation):
/// 1. *Comparison mechanism.* Replace `K` by `round(Z/γ_b)`, `Z ~ N(0, σ'²I)` real-valued,
///    `σ' = γ_b·√⌈(σ/γ_b)²⌉ ≥ σ`. `J` is `λ`-strongly convex, so the minimiser map
///    `b ↦ θ*(b)` is `1/λ`-Lipschitz and `‖θ̃ − θ*(Z)‖ ≤ (τ + γ_b√d/2)/λ`. Releasing
///    `θ*(Z)` is objective perturbation (paper 001, Thm 3.1 / Thm 3.2); given it, `θ̃` moves by
///    at most `(2τ + γ_b√d)/λ` between neighbours, so the output release is a Gaussian
///    mechanism of that sensitivity plus the output grid's slack `γ_o√d` (paper 001,
///    Thm 4.1, the AMP argument of Iyengar et al. 2019). The profile of Thm 3.1 falls as `σ`
///    grows (its privacy loss `c + μ + |W|`, `μ = L²/(2σ²)`, `W ~ N(0, 2μ)`, is stochastically
///    smaller), so `σ' ≥ σ` is covered by the entry at `σ`.
/// 2. *Real mechanism.* `K` against `round(Z/γ_b)` and `K_o` against the rounded continuous
///    Gaussian: the pmf-ratio adjustment of [`dp_accounting::discrete_gaussian`] over the `2d`
///    grid coordinates, added by the accountant (the ledger's entries carry their grids).
///
/// The ledger records `objective perturbation (σ, λ)` and the output Gaussian; the default
/// accountant is PLD (Thm 3.1's privacy-loss distribution composed with the Gaussian's); `rdp`
/// uses Thm 3.2; `exact` cannot compose the two and is refused. With `κ = 0.05` the output
/// noise costs about `κ²/2 ≈ 0.1%` of the variance budget: σ grows by ≈ 0.1% over the
/// idealised mechanism's (measured: 0.12% at ε = 1, δ = 1e-5, `L = √2`, `β = 1/2`).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectivePerturbation {
    /// The loss (convex, bounded second derivative).
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, PLD accountant (Thm 3.1's privacy-loss distribution),
    /// add/remove.
    pub budget: Budget,
    /// Public bound `X` on the row norms; longer rows are scaled to it (default 1).
    pub x_bound: f64,
    /// Gradient clip `C` of the clipping lemma; required for losses with an unbounded
    /// derivative, optional (tighter `L` when `C < X·sup|φ'|`) for the others.
    pub clip: Option<f64>,
    /// The ridge `λ > β`; default chosen by paper 001's rule.
    pub lambda: Option<f64>,
    /// The factor of paper 001's rule: accept `λ` once `σ ≤ factor·σ_Gauss` (default 1.3).
    pub sigma_factor: f64,
    /// A public row count for the certified tolerance `τ` (which grows with `n`): with it the
    /// release (its `τ` and output noise) does not depend on the data's count, which is
    /// private under add/remove; without it the data's count is used and treated as public,
    /// as the report notes. A data set with more rows than this may fail certification
    /// (nothing is released).
    pub public_n: Option<usize>,
}

impl ObjectivePerturbation {
    /// Objective perturbation with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Pld, Neighbouring::AddRemove),
            x_bound: 1.0,
            clip: None,
            lambda: None,
            sigma_factor: 1.3,
            public_n: None,
        }
    }

    budget_setter!();

    /// The enforced per-example bounds `(L, β)` and the clipped loss (if any).
    ///
    /// # Errors
    /// A non-convex loss; `X`, `C` not finite and positive; an unbounded derivative and no
    /// clip.
    pub fn bounds(&self) -> Result<ObjPertBounds> {
        bounds(self.loss, self.x_bound, self.clip)
    }

    /// The calibrated `(σ, λ)` of the idealised mechanism (the exact minimiser of a
    /// real-valued Gaussian `b`, paper 001's setting); [`ObjectivePerturbation::fit`] releases
    /// the grid-safe mechanism of [`ObjectivePerturbation::calibrate_release`], whose `σ` is a
    /// hair larger.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::bounds`]; an invalid budget or λ; no `(σ, λ)` on the grid
    /// meets the rule; the accountant's errors (e.g. a replace-one budget).
    ///
    /// # Privacy
    /// `σ` is an evaluated feasible point of the mechanism's accountant (Thm 3.1 / 3.2 of
    /// paper 001): `L` times [`dp_accounting::calibrate_noise`]'s feasible end for the
    /// multiplier `σ/L` when `λ` is given (so any row bound `X` calibrates), the rule's
    /// feasible end otherwise, so its ε is `≤` the target. With a
    /// [`Prior`](super::Prior) in the budget the price is that of the prior and the mechanism
    /// composed (`calibrate_objpert`), or, where the accountant cannot compose them, the
    /// mechanism's own against the ε the prior leaves by basic composition.
    pub fn calibrate(&self) -> Result<(f64, f64)> {
        let b = self.bounds()?;
        calibrate_objpert(
            &self.budget,
            &b,
            self.lambda,
            self.sigma_factor,
            |p| Ok(Mechanism::objective_perturbation(p)),
            |_| None,
        )
    }

    /// The calibrated `(σ, λ)` of the released mechanism on `dim` features: objective
    /// perturbation composed with the output Gaussian of ratio `κ·L/σ` (`OUTPUT_SHARE`),
    /// both on grids (see [`ObjectivePerturbation`]).
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::calibrate`]; the `exact` accountant (it cannot compose the
    /// two mechanisms; use `pld` or `rdp`).
    ///
    /// # Privacy
    /// An evaluated feasible point of the accountant for [`Mechanism::amp`] with ratio
    /// `2τ/(λσ_out) = κL/σ` (paper 001, Thm 4.1) and the grids' adjustment over `2·dim`
    /// coordinates (`release_grid`), so its ε is `≤` the target; the released output noise
    /// has at most that ratio ([`ObjectivePerturbation::fit`]).
    pub fn calibrate_release(&self, dim: usize) -> Result<(f64, f64)> {
        if self.budget.accountant == AccountantKind::Exact {
            return Err(Error::Accounting(dp_accounting::Error::Unsupported {
                accountant: "exact",
                what: "objective perturbation's grid-safe release (objective perturbation \
                       composed with its output noise; use the pld or rdp accountant)"
                    .into(),
            }));
        }
        let b = self.bounds()?;
        let grid = release_grid(dim)?;
        let key = format!(
            "objpert release {:?} {b:?} {:?} {:?} {dim}",
            self.budget, self.lambda, self.sigma_factor
        );
        memoised(key, || {
            calibrate_objpert(
                &self.budget,
                &b,
                self.lambda,
                self.sigma_factor,
                |p| {
                    // τ = 1 and σ_out = 2/(λ·ratio): the output Gaussian's ratio is κL/σ.
                    let ratio = OUTPUT_SHARE * p.lipschitz / p.sigma;
                    Ok(Mechanism::amp(p, 1.0, 2.0 / (p.lambda * ratio))?.with_grid(grid))
                },
                |_| None,
            )
        })
    }

    in_memory_fits! {
        /// Fits the model.
        ///
        /// # Errors
        /// As [`ObjectivePerturbation::calibrate_release`]; labels outside the loss's domain; a
        /// solver that does not reach the certified tolerance, or a released value too large for
        /// its grid (nothing is released).
        fn fit;

        /// [`ObjectivePerturbation::fit`] on sparse rows ([`SparseDataset`], e.g. a LIBSVM file
        /// read by [`dp_data::read_libsvm_sparse`]): each value and gradient of `J` costs
        /// `O(nnz + d)` and memory grows with the stored entries, never with `n × d`. Rows longer
        /// than `X` are scaled to it and the clipped loss is used per row as on dense rows, and
        /// the sums are the dense objective's bit for bit ([`crate::sparse`]), so the model is
        /// bit-identical to [`ObjectivePerturbation::fit`]'s on the same rows densified, with the
        /// same `rng`.
        ///
        /// # Errors
        /// As [`ObjectivePerturbation::fit`].
        fn fit_sparse;
    }

    /// The fit on rows in memory, dense or sparse.
    fn fit_rows<D: InMemory, R: Rng + ?Sized>(&self, data: &D, rng: &mut R) -> Result<LinearModel> {
        let b = self.bounds()?;
        data.check_labels(&self.loss)?;
        let rows = data.bounded(self.x_bound)?;
        let terms = perturbed_terms(&b, self.x_bound);
        self.fit_term(&b, data.shape(), |lambda| rows.term(&terms, lambda), rng)
    }

    /// [`ObjectivePerturbation::fit`] on data read block by block: a first pass checks and
    /// counts the rows, then L-BFGS reads one pass per value and gradient of `J`, memory
    /// `O(d)` plus a block and a leaf of 8192 rows (`streamed_glm`). Rows longer than `X`
    /// are scaled to it and the clipped loss is used per row as in memory, and every pass is
    /// checked against the first (a source that changes is an error, nothing is released).
    /// The sums are those of the in-memory objective bit for bit, so the model is
    /// bit-identical to [`ObjectivePerturbation::fit`]'s on the same rows with the same
    /// `rng`, whatever the blocks.
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`StreamError::Fit`] as
    /// [`ObjectivePerturbation::fit`] and [`crate::streamed::StreamedSum::new`].
    pub fn fit_blocks<R, S>(
        &self,
        source: S,
        rng: &mut R,
    ) -> std::result::Result<LinearModel, StreamError<S::Error>>
    where
        R: Rng + ?Sized,
        S: BlockSource,
    {
        let b = self.bounds()?;
        Stream::new(source, self.loss)?.fit_with(|stream| {
            let terms = perturbed_terms(&b, self.x_bound);
            self.fit_term(&b, stream.shape(), |l| stream.glm(terms, l), rng)
        })
    }

    /// The fit on `rows × d` data whose (bounded) GLM term with ridge `λ` is `term(λ)`.
    fn fit_term<G, R>(
        &self,
        b: &ObjPertBounds,
        (rows, d): (usize, usize),
        term: impl FnOnce(f64) -> Result<G>,
        rng: &mut R,
    ) -> Result<LinearModel>
    where
        G: DataTerm,
        R: Rng + ?Sized,
    {
        let (sigma, lambda) = self.calibrate_release(d)?;
        // Everything the release is sized by is fixed before the rows are read: τ, the
        // release box and σ_out depend on the public n (or the data's count, treated as
        // public), d, L, σ and λ only.
        let n = self.public_n.unwrap_or(rows);
        let tau = objpert_tau(n, d, b.lipschitz, sigma);
        let release_box = ReleaseBox::new(n, d, b.lipschitz, sigma, lambda, tau)?;
        // The smallest σ_out with (core + γ_o√d)/σ_out ≤ κL/σ, using γ_o ≤ σ_out·2^-GRID_BITS,
        // raised if needed so that the output grid represents the whole release box (a larger
        // σ_out only lowers the output release's ratio).
        let ratio = OUTPUT_SHARE * b.lipschitz / sigma;
        let grid_part = (d as f64).sqrt() * 2f64.powi(-GRID_BITS) * (1.0 + 1e-12);
        if ratio <= 2.0 * grid_part {
            return Err(Error::Privacy(format!(
                "the output grid's rounding slack (ratio {grid_part:e}) is not small against \
                 the output noise's ratio {ratio:e}: too many features ({d}) for sigma = {sigma}"
            )));
        }
        // b's grid slack γ_b√d (Perturbed::b_slack): the grid depends on σ only.
        let b_slack = Noise::Gaussian { std: sigma }.rounding_slack(d)?;
        let core = (2.0 * tau + b_slack) / lambda;
        let sigma_out =
            (core / (ratio - grid_part) * (1.0 + 1e-12)).max(release_box.min_sigma_out());
        release_box.check_grid(sigma_out)?;
        let objective = Perturbed::draw(term(lambda)?, b, sigma, rng)?;
        let theta = objective.minimise(0.1 * tau)?;
        objective.certify(theta.view(), tau, b.lipschitz)?;
        let (released, ledger, noise) =
            objective.release(theta, tau, sigma_out, &release_box, b, rng)?;
        let mut notes = b.notes(self.x_bound);
        notes.push(format!(
            "the approximate minimiser (certified gradient norm <= tau) was clamped to the \
             public box {BOX_NOTE} and released through grid-safe Gaussian output noise \
             sigma_out = {sigma_out:e}, whose sensitivity-to-noise ratio is at most \
             {OUTPUT_SHARE}·L/sigma"
        ));
        notes.extend(rows_note(
            self.public_n,
            self.budget.neighbouring,
            "the certified tolerance tau and the release box use",
        ));
        let report = report(&self.budget, ledger, noise, notes)?;
        LinearModel::new(released, 0.0, self.loss, report)?.with_row_bound(self.x_bound)
    }
}

/// The terms of the GLM part of `J`, rows bounded by `x_bound`: the bounds' (clipped) loss in
/// sum form, values relative to `θ = 0` (same gradient and minimiser; finite for labels near
/// `f64::MAX`, whose losses at `θ = 0` are not).
pub(crate) fn perturbed_terms(b: &ObjPertBounds, x_bound: f64) -> Terms {
    Terms {
        loss: b.loss,
        clipped: b.clipped,
        scale: Scale::Sum,
        relative: true,
        x_bound,
    }
}

/// `squares[j] += Σ_i x_ij²` over `data`'s rows in storage order (`f32` storage widened a
/// block at a time): the same additions whatever blocks the rows come in.
pub(crate) fn add_column_squares(squares: &mut Array1<f64>, data: &Dataset) {
    for (_, x) in data.features().f64_blocks(crate::data::WIDEN_ROWS) {
        for row in x.rows() {
            squares.zip_mut_with(&row, |a, &v| *a += v * v);
        }
    }
}

/// The data term `Σ_i ℓ(θ; z_i) + (λ/2)‖θ‖²` of a [`Perturbed`] objective: dense rows in
/// memory ([`GlmObjective`]), sparse rows ([`SparseGlmObjective`]) or rows read block by
/// block ([`StreamedGlm`]), the same values bit for bit.
pub(crate) trait DataTerm: Objective {
    /// The ridge `λ`.
    fn lambda(&self) -> f64;
    /// The number of rows `n` summed.
    fn rows(&self) -> usize;
    /// `Σ_i x_ij²` for every column `j`, rows in order.
    fn column_squares(&self) -> Array1<f64>;
}

impl DataTerm for GlmObjective<'_> {
    fn lambda(&self) -> f64 {
        GlmObjective::lambda(self)
    }

    fn rows(&self) -> usize {
        self.n_samples()
    }

    fn column_squares(&self) -> Array1<f64> {
        let mut squares = Array1::zeros(self.n_features());
        add_column_squares(&mut squares, self.data());
        squares
    }
}

impl DataTerm for SparseGlmObjective<'_> {
    fn lambda(&self) -> f64 {
        SparseGlmObjective::lambda(self)
    }

    fn rows(&self) -> usize {
        self.n_samples()
    }

    fn column_squares(&self) -> Array1<f64> {
        self.data().column_squares()
    }
}

impl<S: BlockSource> DataTerm for StreamedGlm<'_, S> {
    fn lambda(&self) -> f64 {
        StreamedGlm::lambda(self)
    }

    fn rows(&self) -> usize {
        StreamedGlm::rows(self)
    }

    fn column_squares(&self) -> Array1<f64> {
        StreamedGlm::column_squares(self)
    }
}

/// The certified tolerance of [`ObjectivePerturbation`]: `τ = max(1e-10, 8·m·u)·(nL +
/// σ(√d + 8))` with `m = h(n) + d + 16`, `h` the summation height of the GLM sums
/// (`summation_height`: at most 8192 + 4 + ⌈log₂(n/8192)⌉) and `u` the unit round-off.
/// `σ(√d + 8)` bounds `‖b‖` except with probability below `e^{-32}`, and at a certified point
/// `λ‖θ‖ ≤ nL + ‖b‖ + τ`, so the gradient's floating-point error bound
/// `2mu(nL + λ‖θ‖ + ‖b‖)` ([`Perturbed::certify`]) stays below a fifth of `τ` at every `n`
/// (the relative `1e-10` wins while `m < 5.6·10⁴`, that is for `d` below about 48,000).
pub(crate) fn objpert_tau(n: usize, d: usize, lipschitz: f64, sigma: f64) -> f64 {
    let m = (crate::glm::summation_height(n) + d) as f64 + 16.0;
    let relative = (1e-10f64).max(8.0 * m * f64::EPSILON);
    relative * (n as f64 * lipschitz + sigma * ((d as f64).sqrt() + 8.0))
}

/// `κ`: the released objective perturbation's output noise has sensitivity-to-std ratio
/// `κ·L/σ`, `κ` times the linear term's (see [`ObjectivePerturbation`]).
pub(crate) const OUTPUT_SHARE: f64 = 0.05;

/// The grid descriptor a calibration of a grid-safe objective perturbation states: both the
/// linear term and the output noise are discrete Gaussians of parameter at least
/// `2^GRID_BITS` grid units (dp_optim's default grid: `s/γ ∈ [2^24, 2^25)`, the variance
/// rounded up), on `2·dim` coordinates.
///
/// # Errors
/// `dim` so large that `2·dim` overflows.
pub(crate) fn release_grid(dim: usize) -> Result<GridGaussian> {
    let coordinates = (dim.max(1) as u64)
        .checked_mul(2)
        .ok_or(Error::InvalidHyperParameter {
            name: "dim",
            value: dim as f64,
            reason: "too many features",
        })?;
    // Two relative ulps down cover GridRelease::discrete_gaussian's own rounding down.
    let s = 2f64.powi(GRID_BITS) * (1.0 - 2.0 * f64::EPSILON);
    Ok(GridGaussian::new(s, coordinates)?)
}

/// An upper bound on the linear term's grid slack `γ_b√d` at noise `σ`: `γ_b ≤ σ·2^-GRID_BITS`.
pub(crate) fn b_slack_bound(sigma: f64, dim: usize) -> f64 {
    sigma * (dim as f64).sqrt() * 2f64.powi(-GRID_BITS) * (1.0 + 8.0 * f64::EPSILON)
}

/// The release box as the report's notes state it (a formula: its radius would repeat `n`).
pub(crate) const BOX_NOTE: &str = "|theta_j| <= (n·L + sigma(√d + 8) + tau)/lambda";

/// The public box `|θ_j| ≤ R` the released point of [`ObjectivePerturbation`] and
/// [`Amp`](super::Amp) is clamped to before its output grid, with
/// `R = (n·L + σ(√d + 8) + τ)/λ` (rounded up) for the public number of rows `n`.
///
/// Why it holds the minimiser: at the exact minimiser `θ*` of `J`,
/// `λθ* = −(Σ_i ∇ℓ_i(θ*) + b)`, so `‖θ*‖ ≤ (nL + ‖b‖)/λ`; a point certified at
/// `‖∇J(θ̃)‖ ≤ τ` is within `τ/λ` of `θ*` (`J` is `λ`-strongly convex); and
/// `‖b‖ ≤ σ(√d + 8)` except with probability about `e^{-32}` (the norm of a Gaussian vector
/// concentrates: `P(‖Z‖ ≥ σ(√d + t)) ≤ e^{−t²/2}`). So on a data set of at most `n` rows the
/// clamp changes nothing, except with that probability; on more rows it may bind (the release
/// stays private, only less accurate).
///
/// # Privacy
/// The clamp `c(v)_j = min(max(v_j, −R), R)` is the Euclidean projection onto a box: exact in
/// floating point (no rounding) and 1-Lipschitz in ℓ2 (coordinate-wise), with `R` fixed
/// before the data is read. The output release (paper 001, Thm 4.1; the argument of
/// [`ObjectivePerturbation`], § Privacy) is a Gaussian mechanism on the query `θ̃` whose
/// sensitivity, given the objective-perturbation output `θ*`, is `Δ = (2τ + γ_b√d)/λ`:
/// both neighbours' `θ̃` lie within `(τ + γ_b√d/2)/λ` of `θ*`. The query `c(θ̃)` has
/// sensitivity at most `Δ` too (`‖c(u) − c(v)‖ ≤ ‖u − v‖`), so the same ledger entry covers
/// the clamped release whether or not the clamp binds; and since the box holds `θ*` (when
/// `‖b‖` is within its bound) the clamp cannot move the point away from it
/// (`‖c(θ̃) − θ*‖ ≤ ‖θ̃ − θ*‖`). [`ReleaseBox::check_grid`] makes every point of the box
/// representable on the output grid, so the release cannot fail on the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReleaseBox {
    radius: f64,
}

impl ReleaseBox {
    /// The box for `n` rows, `d` features, Lipschitz bound `L`, linear-term noise `σ`, ridge
    /// `λ` and certified tolerance `τ`.
    ///
    /// # Errors
    /// A radius that is not finite (the grid could represent no such box).
    pub(crate) fn new(
        n: usize,
        d: usize,
        lipschitz: f64,
        sigma: f64,
        lambda: f64,
        tau: f64,
    ) -> Result<Self> {
        let b_norm = sigma * ((d as f64).sqrt() + 8.0);
        // A few relative ulps up cover the roundings of the sum and the quotient.
        let radius = (n as f64 * lipschitz + b_norm + tau) / lambda * (1.0 + 1e-12);
        ensure(
            radius.is_finite() && radius > 0.0,
            "lambda",
            lambda,
            "gives a release box (n·L + sigma(√d + 8) + tau)/lambda that is not finite",
        )?;
        Ok(Self { radius })
    }

    /// The least power of two `s` whose default output grid (`γ = 2^(⌊log₂ s⌋ − GRID_BITS)`,
    /// dp_optim's [`Noise::on_grid`]) represents the box: `R/γ ≤ 2^51`.
    pub(crate) fn min_sigma_out(&self) -> f64 {
        // 2^(⌊log₂ R⌋ + 1) > R, so γ = 2^(⌊log₂ R⌋ + 1 − 51) makes R/γ < 2^51.
        2f64.powi(self.radius.log2().floor() as i32 + 1 - 51 + GRID_BITS)
    }

    /// Checks, before the data is read, that the output grid of `sigma_out` represents every
    /// point of the box: `R/γ_o ≤ 2^51`, so that rounding a clamped point to the grid is
    /// exact and adding the discrete noise `K` stays below `2^53` grid units unless
    /// `|K| ≥ 2^52`, a `2^26`-standard-deviation draw that never happens (it would fail
    /// whatever the data).
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] naming `sigma_out` when its grid is too fine for the
    /// box (raise `sigma_out` or `lambda`, or give a smaller public `n`), or the output grid's
    /// own errors.
    pub(crate) fn check_grid(&self, sigma_out: f64) -> Result<()> {
        const LIMIT: f64 = 2_251_799_813_685_248.0; // 2^51
        let gamma = Noise::Gaussian { std: sigma_out }.grid()?;
        ensure(
            self.radius / gamma <= LIMIT,
            "sigma_out",
            sigma_out,
            "is too small for its output grid (sigma_out·2^-24) to represent every point of \
             the release box |theta_j| <= (n·L + sigma(√d + 8) + tau)/lambda within 2^51 \
             steps: raise sigma_out or lambda, or give a smaller public n",
        )
    }

    /// Clamps every coordinate of `theta` to `[−R, R]` (exact).
    fn clamp(&self, theta: &mut Array1<f64>) {
        theta.mapv_inplace(|v| v.clamp(-self.radius, self.radius));
    }
}

/// The per-example bounds objective perturbation relies on, as enforced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObjPertBounds {
    /// The loss.
    pub loss: Loss,
    /// `L`: every per-example gradient norm is at most this.
    pub lipschitz: f64,
    /// `β`: every per-example Hessian's top eigenvalue is at most this.
    pub beta: f64,
    /// The clipped loss used instead of the loss, if any.
    pub clipped: Option<ClippedLoss>,
}

impl ObjPertBounds {
    /// Notes for the privacy report.
    pub(crate) fn notes(&self, x_bound: f64) -> Vec<String> {
        let mut notes = vec![format!(
            "rows longer than X = {x_bound} were scaled to norm X (a per-record map); \
             L = {}, beta = {}",
            self.lipschitz, self.beta
        )];
        if let Some(c) = self.clipped {
            notes.push(format!(
                "the loss was replaced by its clipped loss at gradient norm {} (clipping lemma)",
                c.clip()
            ));
        }
        notes
    }
}

/// Rounds `L` and `β` up past the rows [`bounded_rows`] keeps: their true norms are at most
/// `X(1 + KEEP_SLACK)`, and `(1 + KEEP_SLACK)² ≤ BOUND_SLACK`.
pub(crate) const BOUND_SLACK: f64 = 1.0 + 1e-10;

/// Relative margin above `X` within which a row's true norm may lie (see [`bounded_rows`]).
const KEEP_SLACK: f64 = 1e-11;

pub(crate) fn bounds(loss: Loss, x_bound: f64, clip: Option<f64>) -> Result<ObjPertBounds> {
    loss.validate()?;
    if !loss.is_convex() {
        return Err(Error::NotConvex {
            loss: loss.name(),
            what: "objective perturbation",
        });
    }
    let x = positive("x_bound", x_bound)?;
    let natural = loss.lipschitz().map(|l| l * x);
    let (lipschitz, clipped) = match (clip, natural) {
        (Some(c), Some(l)) if l <= c => (l, None),
        (Some(c), _) => (c, Some(ClippedLoss::new(loss, c)?)),
        (None, Some(l)) => (l, None),
        (None, None) => {
            return Err(Error::InvalidHyperParameter {
                name: "clip",
                value: f64::NAN,
                reason: "is required for a loss with an unbounded derivative",
            });
        }
    };
    Ok(ObjPertBounds {
        loss,
        lipschitz: lipschitz * BOUND_SLACK,
        beta: loss.smoothness() * x * x * BOUND_SLACK,
        clipped,
    })
}

/// `data` with every row longer than `r` scaled to norm `r`, where
/// `r = X(1 + KEEP_SLACK − 2(d + 4)u)` ([`keep_radius`]). Borrowed when no row is longer than
/// `r` — as for rows already scaled to norm `X` exactly, whose computed norms land a few `u`
/// above it.
pub(crate) fn bounded_rows(data: &Dataset, x_bound: f64) -> Result<Cow<'_, Dataset>> {
    let radius = keep_radius(x_bound, data.n_features());
    if data.row_norms().iter().all(|&r| r <= radius) {
        return Ok(Cow::Borrowed(data));
    }
    let x = BallProjector::new(radius)?.transform(data.x().view())?;
    // Narrowed toward zero for f32 storage: no norm grows.
    let rows = Dataset::with_storage(x, data.y().to_owned(), data.storage())?;
    Ok(Cow::Owned(rows))
}

/// The radius `r = X(1 + KEEP_SLACK − 2(d + 4)u)` rows of `d` features are kept within: a
/// computed norm is within `(d/2 + 2)u` of the true one (`u` the unit round-off; a sparse
/// row's norm adds fewer terms, in the dense row's order), so every kept row's true norm is
/// at most `X(1 + KEEP_SLACK)`, for any `d`.
fn keep_radius(x_bound: f64, d: usize) -> f64 {
    x_bound * (1.0 + KEEP_SLACK - 2.0 * (d as f64 + 4.0) * f64::EPSILON)
}

/// Rows held in memory as the perturbation learners (objective perturbation, AMP, output
/// perturbation) fit them: dense ([`Dataset`]) or sparse ([`SparseDataset`]), with the same
/// per-row bound and the same objective, whose sums are bit-identical ([`crate::sparse`]).
///
/// # Privacy
/// Both forms enforce the bounds the analyses assume per row, in the same way: a row longer
/// than `X` is scaled to it (its own norm decides), and a clipped loss takes its break points
/// from the row's own label and norm. What the fit reads of the data beyond the rows' terms is
/// the same for both — the row count `n` (treated as public, or replaced by the public
/// `public_n`) and the shape `d` — so the sensitivity arguments are unchanged; nothing of the
/// sparsity pattern (which entries are stored, how many) reaches the release.
pub(crate) trait InMemory: GlmRows + Clone {
    /// The GLM objective over these rows.
    type Term<'a>: DataTerm + GlmSum
    where
        Self: 'a;

    /// `(n, d)`.
    fn shape(&self) -> (usize, usize) {
        (self.n_samples(), self.n_features())
    }

    /// The rows with every row longer than [`keep_radius`]`(x_bound, d)` scaled to it
    /// ([`bounded_rows`]; on sparse rows [`SparseDataset::projected`], the same values bit
    /// for bit), borrowed when none is: a per-record map.
    ///
    /// # Errors
    /// An `x_bound` that is not finite and positive.
    fn bounded(&self, x_bound: f64) -> Result<Cow<'_, Self>>;

    /// The objective of `terms` with ridge `lambda` on these rows as they are (bound them
    /// first): the (clipped) loss of each row from its label and norm.
    ///
    /// # Errors
    /// As [`GlmObjective::new`].
    fn term(&self, terms: &Terms, lambda: f64) -> Result<Self::Term<'_>>;
}

/// [`InMemory`] for `$rows`, whose objective is `$objective` (with the constructors `new` and
/// `clipped` and the method `relative_to_zero`) and whose rows `$bounded(rows, x_bound)`
/// bounds.
macro_rules! in_memory {
    ($rows:ty, $objective:ident, $bounded:expr) => {
        impl InMemory for $rows {
            type Term<'a> = $objective<'a>;

            fn bounded(&self, x_bound: f64) -> Result<Cow<'_, Self>> {
                $bounded(self, x_bound)
            }

            fn term(&self, terms: &Terms, lambda: f64) -> Result<$objective<'_>> {
                let glm = match terms.clipped {
                    Some(c) => $objective::clipped(self, c, lambda, terms.scale)?,
                    None => $objective::new(self, terms.loss, lambda, terms.scale)?,
                };
                Ok(if terms.relative {
                    glm.relative_to_zero()
                } else {
                    glm
                })
            }
        }
    };
}

in_memory!(Dataset, GlmObjective, bounded_rows);
in_memory!(SparseDataset, SparseGlmObjective, bounded_sparse);

/// [`bounded_rows`] on sparse rows: [`SparseDataset::projected`], the same values bit for bit.
fn bounded_sparse(rows: &SparseDataset, x_bound: f64) -> Result<Cow<'_, SparseDataset>> {
    let projected = rows.projected(keep_radius(x_bound, rows.n_features()))?;
    Ok(projected.map_or(Cow::Borrowed(rows), Cow::Owned))
}

/// The noise parameters a report lists for ObjPert.
pub(crate) fn objpert_noise(sigma: f64, lambda: f64, b: &ObjPertBounds) -> Vec<(String, f64)> {
    vec![
        ("sigma".to_string(), sigma),
        ("lambda".to_string(), lambda),
        ("lipschitz".to_string(), b.lipschitz),
        ("beta".to_string(), b.beta),
    ]
}

/// Whether a Gaussian mechanism with sensitivity-to-noise ratio `s` is certainly not
/// `(ε, δ)`-DP, by a closed form needing no special function: its exact profile (Balle & Wang
/// 2018, Thm 8) is `δ(ε) = P[Z ≥ a] − e^ε·P[Z ≥ b]` with `a = ε/s − s/2`, `b = ε/s + s/2`;
/// when `s² ≥ 2ε`, `a ≤ 0` gives `P[Z ≥ a] ≥ 1/2`, and `P[Z ≥ b] ≤ e^{−b²/2}/2` (`b ≥ 0`)
/// gives `e^ε·P[Z ≥ b] ≤ e^{ε/2 − s²/8}/2`. So `s² ≥ 4ε + 8 ln 2` forces `δ(ε) ≥ 1/4`, more
/// than any target `δ < 1/4`. `false` means "not decided here", not "feasible".
fn gaussian_misses(s: f64, epsilon: f64, delta: f64) -> bool {
    let s2 = s * s;
    delta < 0.25 && s2 >= 2.0 * epsilon && s2 >= 4.0 * epsilon + 8.0 * std::f64::consts::LN_2
}

/// `(σ, λ)` for the mechanism `make` builds from ObjPert parameters: the smallest `σ` at the
/// given `λ`, or paper 001's rule (see [`ObjectivePerturbation`]). `gaussian_part(λ)` is the
/// `(std, sensitivity)` of a Gaussian component of the mechanism that does not depend on `σ`
/// (AMP's output noise), or `None`.
///
/// # Privacy
/// Only points the accountant found feasible are returned. The Gaussian component is used
/// as a necessary condition only: when it alone is certainly not (ε, δ)-DP at the target
/// ([`gaussian_misses`]), the composed mechanism is not either, since releasing both outputs
/// is at least as revealing as releasing one; such a `λ` is rejected without asking the
/// accountant, whose grid for it could need terabytes.
///
/// With a [`Prior`](super::Prior) in the budget every price is that of the prior followed by
/// the mechanism, composed by the budget's accountant ([`joint_epsilon`]), so the whole
/// ledger meets the target; `σ_Gauss` is then the least Gaussian `σ` meeting it after the
/// prior ([`calibrate`]). Every search is on the multiplier `σ/L`, whatever the scale of `L`,
/// and returns `L` times the multiplier it priced. If the accountant cannot price that
/// composition (an accounting error) the calibration is made for the budget
/// [`Budget::split`] leaves, without the prior (basic composition, Dwork & Roth Thm 3.16).
pub(crate) fn calibrate_objpert<F, G>(
    budget: &Budget,
    b: &ObjPertBounds,
    lambda: Option<f64>,
    factor: f64,
    make: F,
    gaussian_part: G,
) -> Result<(f64, f64)>
where
    F: Fn(ObjPertParams) -> dp_accounting::Result<Mechanism>,
    G: Fn(f64) -> Option<(f64, f64)>,
{
    match objpert_rule(budget, b, lambda, factor, &make, &gaussian_part) {
        // The accountant could not price the prior with the mechanism: basic composition.
        Err(Error::Accounting(_)) if !budget.prior.is_empty() => {
            objpert_rule(&budget.split(), b, lambda, factor, &make, &gaussian_part)
        }
        joint => joint,
    }
}

/// [`calibrate_objpert`]'s rule with every price including the budget's prior (none: the
/// mechanism's own price).
fn objpert_rule<F, G>(
    budget: &Budget,
    b: &ObjPertBounds,
    lambda: Option<f64>,
    factor: f64,
    make: &F,
    gaussian_part: &G,
) -> Result<(f64, f64)>
where
    F: Fn(ObjPertParams) -> dp_accounting::Result<Mechanism>,
    G: Fn(f64) -> Option<(f64, f64)>,
{
    let target = budget.target()?;
    budget.require_relation(
        Neighbouring::AddRemove,
        "objective perturbation (paper 001)",
    )?;
    // The Gaussian component's ratio sensitivity/std at λ, when it alone misses the target.
    let missed = |lambda: f64| {
        gaussian_part(lambda)
            .map(|(std, sensitivity)| sensitivity / std)
            .filter(|&s| gaussian_misses(s, target.epsilon(), target.delta()))
    };
    // Searches calibrate the scale-free multiplier σ/L, never σ itself: L follows the row
    // bound X, which can be arbitrarily small or large; the multiplier that meets a budget
    // cannot.
    let sigma_at = |lambda: f64| -> Result<f64> {
        if let Some(s) = missed(lambda) {
            return Err(Error::Privacy(format!(
                "at lambda = {lambda} the output noise alone (sensitivity/std = {s}) misses \
                 the target: no sigma can meet it"
            )));
        }
        calibrate_scaled(budget, 1, b.lipschitz, |s| {
            make(ObjPertParams::new(s, lambda, b.beta, b.lipschitz)?)
        })
    };
    if let Some(l) = lambda {
        ensure(
            l.is_finite() && l > b.beta,
            "lambda",
            l,
            "must be finite and > beta",
        )?;
        return Ok((sigma_at(l)?, l));
    }
    ensure(
        factor.is_finite() && factor >= 1.0,
        "sigma_factor",
        factor,
        "must be finite and >= 1",
    )?;
    let reference = if budget.prior.is_empty() {
        gaussian_sigma(target.epsilon(), target.delta(), b.lipschitz)?
    } else {
        calibrate_scaled(budget, 1, b.lipschitz, |s| {
            Mechanism::gaussian(s, b.lipschitz)
        })?
    };
    let lambda0 = (2.0 * b.beta / target.epsilon()).max(1.05 * b.beta);
    let lambda_k = |k: i32| lambda0 * 1.05_f64.powi(k);
    // λ is accepted when the calibrated σ is at most factor·σ_Gauss, i.e. (ε being monotone
    // in σ) when σ = factor·σ_Gauss already meets the target: one accountant evaluation per λ
    // instead of a calibration. Acceptance is monotone in k (ε falls as λ grows).
    let ceiling = factor * reference;
    // ε(σ, λ) − target: feasible when ≤ 0, non-increasing in σ and in λ.
    let excess = |sigma: f64, lambda: f64| -> Result<f64> {
        // A component that alone misses the target makes the composition miss it too
        // (dropping an output is post-processing): say so from a closed form, without asking
        // the accountant about a mechanism whose ε may be huge (AMP with a large τ would need
        // a PLD grid of terabytes). The value returned is only a guide for the search.
        if let Some(s) = missed(lambda) {
            return Ok((0.125 * s * s - target.epsilon()).max(f64::MIN_POSITIVE));
        }
        let mech = make(ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz)?)?;
        Ok(joint_epsilon(budget, &mech, 1)? - target.epsilon())
    };
    const TOP: i32 = 600;
    let first = excess(ceiling, lambda_k(0))?;
    // The accepted k, and ε − target at (ceiling, λ_k).
    let (k, at_ceiling) = if first <= 0.0 {
        (0, first)
    } else {
        let top = excess(ceiling, lambda_k(TOP))?;
        if top > 0.0 {
            return Err(Error::Privacy(format!(
                "no lambda up to {:e} gives sigma <= {factor}·sigma_Gauss: epsilon = {} is too \
                 small for objective perturbation with these bounds (nothing was released); \
                 give a larger epsilon, public bounds that are smaller, or lambda explicitly",
                lambda_k(TOP),
                target.epsilon()
            )));
        }
        // The smallest accepted k, searched in u = log(1 − β/λ_k) = −c (ε is close to affine
        // in c, so the secant lands near it); each point is snapped to the grid.
        let u_of = |k: f64| (-b.beta / lambda_k(k as i32)).ln_1p();
        let k_of = |u: f64| (b.beta / -u.exp_m1() / lambda0).ln() / 1.05_f64.ln();
        let (u, at) = smallest_feasible(
            (u_of(0.0), first),
            (u_of(f64::from(TOP)), top),
            |ua, ub| k_of(ub).round() - k_of(ua).round() <= 1.0,
            |ua, ub, u, moved| {
                let (ka, kb) = (k_of(ua).round(), k_of(ub).round());
                let k = match moved {
                    Moved::Feasible => k_of(u).floor(),
                    _ => k_of(u).ceil(),
                };
                u_of(k.clamp(ka + 1.0, kb - 1.0))
            },
            |u| excess(ceiling, lambda_k(k_of(u).round() as i32)),
        )?;
        (k_of(u).round() as i32, at)
    };
    let lambda = lambda_k(k);
    // σ = ceiling is feasible at this λ; below σ_Gauss nothing is (ObjPert is never more
    // private than the Gaussian with the same σ, paper 001 Lemma 3.4), but if σ_Gauss is
    // feasible it is the answer.
    let sigma = least_sigma(
        (reference, ceiling, at_ceiling),
        target.epsilon(),
        |sigma| excess(sigma, lambda),
    )?;
    Ok((sigma, lambda))
}

/// The smallest feasible `σ` of `excess` (`ε(σ) − target`, non-increasing, feasible when
/// `≤ 0`) in `[reference, ceiling]` to a relative [`SIGMA_TOL`], given `at_ceiling =
/// excess(ceiling) ≤ 0`: an evaluated feasible `σ` whose relative distance to an evaluated
/// infeasible one (or to `reference`, if that is feasible, which is then returned) is at
/// most the tolerance.
///
/// Secant steps in `log σ`, the first with the slope of `ε ∝ 1/σ` (Gaussian-like profiles),
/// each proposal leaning a quarter of the tolerance towards the end of the bracket farther
/// from the predicted root, so that both ends close on it: two or three evaluations on a
/// smooth `ε`. After [`LEAST_SIGMA_STEPS`] steps the bracket (`reference` evaluated if no
/// infeasible point was found) goes to [`smallest_feasible`].
///
/// # Privacy
/// Only a point `excess` found feasible is returned, and exactly the `σ` it was evaluated at.
fn least_sigma(
    (reference, ceiling, at_ceiling): (f64, f64, f64),
    target: f64,
    mut excess: impl FnMut(f64) -> Result<f64>,
) -> Result<f64> {
    let tol = SIGMA_TOL.ln_1p();
    let floor = reference.ln();
    // Feasible end (log σ, excess, σ) and infeasible end (log σ, excess).
    let mut feasible = (ceiling.ln(), at_ceiling, ceiling);
    let mut infeasible: Option<(f64, f64)> = None;
    // The newest point and the secant slope of excess in log σ; ε ∝ 1/σ gives −ε.
    let mut last = (feasible.0, at_ceiling);
    let mut slope = -(at_ceiling + target);
    for _ in 0..LEAST_SIGMA_STEPS {
        let lower = match infeasible {
            Some((a, _)) if feasible.0 - a <= tol => return Ok(feasible.2),
            Some((a, _)) => a,
            None if feasible.0 <= floor => return Ok(feasible.2),
            None => floor,
        };
        let root = last.0 - last.1 / slope;
        let lean = if feasible.0 - root > root - lower {
            0.25 * tol
        } else {
            -0.25 * tol
        };
        let mut x = root + lean;
        if infeasible.is_none() && x <= floor {
            x = floor;
        } else if !(x > lower && x < feasible.0) {
            x = 0.5 * (lower + feasible.0);
        }
        let sigma = if x == floor { reference } else { x.exp() };
        let fx = excess(sigma)?;
        if fx <= 0.0 {
            feasible = (x, fx, sigma);
        } else {
            infeasible = Some((x, fx));
        }
        let s = (fx - last.1) / (x - last.0);
        if s < 0.0 && s.is_finite() {
            slope = s;
        }
        last = (x, fx);
    }
    let a = match infeasible {
        Some(a) => a,
        None => {
            let at_reference = excess(reference)?;
            if at_reference <= 0.0 {
                return Ok(reference);
            }
            (floor, at_reference)
        }
    };
    let (x, _) = smallest_feasible(
        a,
        (feasible.0, feasible.1),
        |a, b| b - a <= tol,
        leaning(SIGMA_TOL),
        |x| excess(x.exp()),
    )?;
    // The σ returned is the one that was evaluated: exp(x) for a point the search evaluated,
    // or the feasible end's own σ (exp(ln c) may round below c).
    Ok(if x == feasible.0 { feasible.2 } else { x.exp() })
}

/// The secant steps of [`least_sigma`] before its fallback to [`smallest_feasible`].
const LEAST_SIGMA_STEPS: usize = 8;

/// The released mechanisms' `(σ, λ)` calibrations made in this process (at most
/// [`CALIBRATIONS_KEPT`], the oldest dropped first), by a key naming every input of the
/// calibration: a fit repeated with the same public settings (a benchmark, a sweep over
/// seeds or data sets of one shape) calibrates once.
static CALIBRATIONS: Mutex<Vec<(String, (f64, f64))>> = Mutex::new(Vec::new());

/// How many calibrations [`CALIBRATIONS`] keeps.
const CALIBRATIONS_KEPT: usize = 16;

/// `calibrate()`, or the value it returned before for the same `key`.
///
/// # Privacy
/// A calibration reads no data: it is a deterministic function of public settings, all of
/// which `key` must state exactly (callers format them with `{:?}`, which prints every
/// `f64` so that it parses back to the same value). The value kept is the one the
/// calibration returned, so a repeated fit gets the same feasible `(σ, λ)` a new
/// calibration would, and its report prices the ledger again as always.
pub(crate) fn memoised(
    key: String,
    calibrate: impl FnOnce() -> Result<(f64, f64)>,
) -> Result<(f64, f64)> {
    // A poisoned lock (a panic elsewhere while holding it) only disables the memo.
    let kept = CALIBRATIONS
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(k, _)| *k == key).map(|(_, v)| *v));
    if let Some(v) = kept {
        return Ok(v);
    }
    let v = calibrate()?;
    if let Ok(mut c) = CALIBRATIONS.lock() {
        if c.len() >= CALIBRATIONS_KEPT {
            c.remove(0);
        }
        c.push((key, v));
    }
    Ok(v)
}

/// Which end of a bracket the last evaluation moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moved {
    Neither,
    /// The infeasible end: the next proposal should lean towards the feasible one.
    Infeasible,
    /// The feasible end: the next proposal should lean towards the infeasible one.
    Feasible,
}

/// The proposal of [`smallest_feasible`] on a continuous line with tolerance `tol`: the root
/// moved `0.3·tol` away from the end that moved last, kept `tol/4` inside the bracket (whose
/// width exceeds `tol` while the search runs).
fn leaning(tol: f64) -> impl Fn(f64, f64, f64, Moved) -> f64 {
    move |a, b, root, moved| {
        let lean = match moved {
            Moved::Feasible => -0.3 * tol,
            Moved::Infeasible => 0.3 * tol,
            Moved::Neither => 0.0,
        };
        (root + lean).clamp(a + 0.25 * tol, b - 0.25 * tol)
    }
}

/// The smallest feasible point of a non-increasing `f` (feasible: `f ≤ 0`), bracketed by an
/// infeasible `a` (`f(a) > 0`) and a feasible `b`, until `done(a, b)`. Regula falsi with the
/// Illinois modification: `propose(a, b, root, moved)` turns the interpolated root into the
/// next point, strictly inside `(a, b)`, leaning away from the end that moved last so that
/// both ends close in on the boundary. A bisection step follows two steps in a row that did
/// not halve the bracket. Returns `(b, f(b))`: always an evaluated feasible point.
fn smallest_feasible(
    (mut a, fa): (f64, f64),
    (mut b, fb): (f64, f64),
    done: impl Fn(f64, f64) -> bool,
    propose: impl Fn(f64, f64, f64, Moved) -> f64,
    mut f: impl FnMut(f64) -> Result<f64>,
) -> Result<(f64, f64)> {
    // The values the interpolation uses (Illinois halves a stale end's value); `fb` stays the
    // true value at `b`.
    let (mut ga, mut gb, mut fb) = (fa, fb, fb);
    let mut moved = Moved::Neither;
    let mut slow = 0;
    while !done(a, b) {
        let width = b - a;
        // NaN values or equal ones give no secant: bisect.
        let secant = ga > gb;
        let x = if slow < 2 && secant {
            propose(a, b, a + width * ga / (ga - gb), moved)
        } else {
            0.5 * (a + b)
        };
        if !(x > a && x < b) {
            break;
        }
        let fx = f(x)?;
        if fx <= 0.0 {
            (b, fb, gb) = (x, fx, fx);
            if moved == Moved::Feasible {
                ga *= 0.5;
            }
            moved = Moved::Feasible;
        } else {
            (a, ga) = (x, fx);
            if moved == Moved::Infeasible {
                gb *= 0.5;
            }
            moved = Moved::Infeasible;
        }
        slow = if b - a > 0.5 * width { slow + 1 } else { 0 };
    }
    Ok((b, fb))
}

/// Relative precision of the rule's σ: 1e-4 (its feasible end is returned).
const SIGMA_TOL: f64 = 1e-4;

fn norm(v: ArrayView1<'_, f64>) -> f64 {
    v.dot(&v).sqrt()
}

/// A grid-safe release of [`Perturbed::release`]: the released value, its ledger and the
/// report's noise parameters.
pub(crate) type Released = (Array1<f64>, Ledger, Vec<(String, f64)>);

/// `J(θ) = Σ_i ℓ(θ; z_i) + (λ/2)‖θ‖² + bᵀθ` with its linear term `b`, the data term `G`
/// ([`DataTerm`]) in memory or streamed.
pub(crate) struct Perturbed<G> {
    glm: G,
    /// The random linear term `b`, a point of `grid`'s lattice.
    pub(crate) linear: Array1<f64>,
    /// The grid release `b` was drawn from.
    grid: GridRelease,
    /// The std `σ` `b` was drawn for.
    sigma: f64,
    /// The last point `value_grad` was evaluated at and the gradient it computed there, for
    /// [`Perturbed::gradient_norm`] (the solvers' last evaluation is at the point they
    /// return).
    last: Mutex<Option<(Array1<f64>, Array1<f64>)>>,
    /// The diagonal preconditioner of [`Perturbed::minimise_from`]: `1/√h_j` with
    /// `h_j = sup φ''·Σ_i x_ij² + λ`, a bound on `J`'s Hessian diagonal.
    scale: Array1<f64>,
}

impl<G: DataTerm> Perturbed<G> {
    /// Draws `b = γ_b·K`, `K ~ N_ℤ(0, ⌈(σ/γ_b)²⌉)^d` exactly (dp_optim's grid release of
    /// `N(0, σ²I)` added to 0), once, and builds `J` on the data term `glm` (the bounds'
    /// loss, [`perturbed_terms`]).
    ///
    /// # Privacy
    /// `b` is never released. Its discrete law is compared with the rounded continuous
    /// Gaussian (see [`ObjectivePerturbation`], § Privacy): callers record the objective
    /// perturbation entry with [`Perturbed::b_grid`] and add [`Perturbed::b_slack`]`/λ` to
    /// the output release's sensitivity.
    pub(crate) fn draw<R: Rng + ?Sized>(
        glm: G,
        b: &ObjPertBounds,
        sigma: f64,
        rng: &mut R,
    ) -> Result<Self> {
        let grid = Noise::Gaussian { std: sigma }.on_grid(None)?;
        let mut linear = Array1::zeros(glm.dim());
        // γ_b·(round(0) + K) = γ_b·K, exact in f64.
        grid.add_to(LINEAR_LABEL, rng, linear.view_mut())?;
        // One pass over the rows (in storage order) for the squared column norms.
        let curvature = b.loss.smoothness();
        let lambda = glm.lambda();
        let scale = glm
            .column_squares()
            .mapv(|q| 1.0 / (curvature * q + lambda).sqrt());
        Ok(Self {
            glm,
            linear,
            grid,
            sigma,
            last: Mutex::new(None),
            scale,
        })
    }

    /// `γ_b√d` rounded up: how far `b` is from the real-valued Gaussian it stands for, at
    /// most (coordinate-wise `γ_b/2`, so `‖·‖ ≤ γ_b√d/2` on each side of a neighbour pair).
    pub(crate) fn b_slack(&self) -> f64 {
        self.grid.slack(self.dim())
    }

    /// The discrete Gaussian `b` was drawn from, for the ledger's objective-perturbation
    /// entry ([`dp_accounting::Mechanism::with_grid`]).
    ///
    /// # Errors
    /// None in practice (a Gaussian grid release always has one).
    pub(crate) fn b_grid(&self) -> Result<GridGaussian> {
        Ok(self.grid.discrete_gaussian(self.dim())?)
    }

    /// Checks that `‖∇J(θ)‖ ≤ tau` holds for the exact gradient: the computed norm plus a
    /// bound on its floating-point error must be at most `tau`.
    ///
    /// The gradient `Σ_i φ'_i x_i + λθ + b` is computed with `n + 2` terms per coordinate,
    /// summed over leaves and a fixed tree of height at most `h(n)` (`summation_height`); a
    /// summation of height `h` errs by at most `γ_h·Σ|terms|`, `γ_h = h·u/(1 − h·u)`
    /// (Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §3.1 and §4.2), and
    /// `‖Σ|terms|‖ ≤ nL + λ‖θ‖ + ‖b‖` (each `|φ'_i|·‖x_i‖ ≤ L`). With `m = h(n) + d + 16`
    /// (the norm's own sum, the few roundings of `φ'` and of the products) the error of the
    /// computed norm is below `2·m·u·(nL + λ‖θ‖ + ‖b‖)` while `m·u < 1/2`.
    ///
    /// # Errors
    /// [`Error::Privacy`] (nothing may be released) when the check fails.
    pub(crate) fn certify(
        &self,
        theta: ArrayView1<'_, f64>,
        tau: f64,
        lipschitz: f64,
    ) -> Result<()> {
        let g = self.gradient_norm(theta);
        let n = self.glm.rows() as f64;
        let m = (crate::glm::summation_height(self.glm.rows()) + self.dim()) as f64 + 16.0;
        let scale = n * lipschitz + self.glm.lambda() * norm(theta) + norm(self.linear.view());
        let error = 2.0 * m * f64::EPSILON * scale * (1.0 + 1e-9);
        let certified = g + error;
        if !(m * f64::EPSILON < 0.5 && certified <= tau) {
            return Err(Error::Privacy(format!(
                "the solver stopped at ‖∇J‖ = {g:e} (floating-point error up to {error:e}), \
                 not certified below tau = {tau:e}: nothing is released"
            )));
        }
        Ok(())
    }

    /// Releases the approximate minimiser `theta` (certified `‖∇J(θ)‖ ≤ tau`), clamped to
    /// `release_box`, through grid Gaussian noise of std `sigma_out`: returns the released
    /// value, the ledger (objective perturbation with `b`'s grid; the output release, a
    /// Gaussian of sensitivity `(2τ + γ_b√d)/λ + γ_o√d` with its grid) and the report's noise
    /// parameters. The caller checks [`ReleaseBox::check_grid`] for `sigma_out` before the
    /// data is read.
    ///
    /// # Privacy
    /// Paper 001, Thm 4.1, with the linear term's rounding (see [`ObjectivePerturbation`]);
    /// the clamp is 1-Lipschitz and keeps the sensitivity ([`ReleaseBox`]).
    ///
    /// # Errors
    /// An invalid `sigma_out` or objective-perturbation parameter; a noise draw too large for
    /// the output grid (see [`ReleaseBox::check_grid`]).
    pub(crate) fn release<R: Rng + ?Sized>(
        &self,
        theta: Array1<f64>,
        tau: f64,
        sigma_out: f64,
        release_box: &ReleaseBox,
        bounds: &ObjPertBounds,
        rng: &mut R,
    ) -> Result<Released> {
        let d = self.dim();
        let (sigma, lambda) = (self.sigma, self.glm.lambda());
        let params = ObjPertParams::new(sigma, lambda, bounds.beta, bounds.lipschitz)?;
        let grid = Noise::Gaussian { std: sigma_out }.on_grid(None)?;
        let sensitivity = (2.0 * tau + self.b_slack()) / lambda + grid.slack(d);
        // Rounded up by a few ulps: the sum above is not exact.
        let sensitivity = sensitivity * (1.0 + 4.0 * f64::EPSILON);
        let output =
            Mechanism::gaussian(sigma_out, sensitivity)?.with_grid(grid.discrete_gaussian(d)?);
        let mut released = theta;
        release_box.clamp(&mut released);
        grid.add_to(OUTPUT_LABEL, rng, released.view_mut())?;
        let mut ledger = Ledger::new(Neighbouring::AddRemove);
        ledger.record(
            Mechanism::objective_perturbation(params).with_grid(self.b_grid()?),
            1,
            LINEAR_LABEL,
        );
        ledger.record(output, 1, OUTPUT_LABEL);
        let mut noise = objpert_noise(sigma, lambda, bounds);
        noise.push(("tau".to_string(), tau));
        noise.push(("sigma_out".to_string(), sigma_out));
        Ok((released, ledger, noise))
    }

    /// `‖∇J(θ)‖`, of the gradient `value_grad` computes at `θ`: the one it computed last if
    /// that was at exactly this `θ` (the sums are over a fixed tree, so a new evaluation
    /// would give the same bits: `glm`'s § Threads), else a new evaluation.
    pub(crate) fn gradient_norm(&self, theta: ArrayView1<'_, f64>) -> f64 {
        let kept = self.last.lock().ok().and_then(|last| match &*last {
            Some((x, g))
                if x.iter()
                    .map(|v| v.to_bits())
                    .eq(theta.iter().map(|v| v.to_bits())) =>
            {
                Some(norm(g.view()))
            }
            _ => None,
        });
        kept.unwrap_or_else(|| {
            let mut g = Array1::zeros(self.dim());
            self.value_grad(theta, g.view_mut());
            norm(g.view())
        })
    }

    /// L-BFGS from 0 to `‖∇J‖ ≤ tol` (the result is checked by the caller).
    pub(crate) fn minimise(&self, tol: f64) -> Result<Array1<f64>> {
        self.minimise_from(Array1::zeros(self.dim()), tol)
    }

    /// L-BFGS from `x0` to `‖∇J‖ ≤ tol`, in the coordinates `φ = θ/s` of the Jacobi
    /// preconditioner `s` (`scale`; on rows of unequal column norms, such as a bias feature
    /// beside unit rows, it needs about a quarter fewer passes over the data). It stops as
    /// soon as the gradient of `J` itself at the accepted point is within `tol` (or the
    /// preconditioned one within `tol·min s`, which implies it). The solver costs no
    /// privacy: the caller certifies the point it returns.
    pub(crate) fn minimise_from(&self, x0: Array1<f64>, tol: f64) -> Result<Array1<f64>> {
        let scaled = Preconditioned { objective: self };
        let smallest = self.scale.fold(f64::INFINITY, |m, &v| m.min(v));
        let mut reached = Reached {
            objective: self,
            tol,
        };
        let sol = Lbfgs::new()
            .max_iters(10_000)
            .grad_tol(tol * smallest)
            .minimize(&scaled, (&x0 / &self.scale).view(), Some(&mut reached))?;
        Ok(scaled.theta(sol.x.view()))
    }

    /// `‖∇J‖` at the point `value_grad` evaluated last, if any.
    fn last_gradient_norm(&self) -> Option<f64> {
        self.last
            .lock()
            .ok()
            .and_then(|last| last.as_ref().map(|(_, g)| norm(g.view())))
    }
}

impl<G: DataTerm + GlmSum> Perturbed<G> {
    /// SAG from `x0` to `‖∇J‖ ≤ tol`, with the per-term smoothness `β + λ/n` (rows in
    /// memory, dense or sparse).
    pub(crate) fn minimise_sag<R: Rng + ?Sized>(
        &self,
        x0: Array1<f64>,
        beta: f64,
        tol: f64,
        rng: &mut R,
    ) -> Result<Array1<f64>> {
        let n = self.n_terms() as f64;
        let sol = Sag::new(beta + self.glm.lambda() / n)
            .grad_tol(tol)
            .minimize(self, x0.view(), rng, None)?;
        Ok(sol.x)
    }
}

/// `J(s ⊙ φ)` as a function of `φ`, `s` the Jacobi preconditioner of [`Perturbed`].
struct Preconditioned<'o, G> {
    objective: &'o Perturbed<G>,
}

impl<G: DataTerm> Preconditioned<'_, G> {
    /// `θ = s ⊙ φ` (the same bits at every call).
    fn theta(&self, phi: ArrayView1<'_, f64>) -> Array1<f64> {
        &phi * &self.objective.scale
    }
}

impl<G: DataTerm> Objective for Preconditioned<'_, G> {
    fn dim(&self) -> usize {
        self.objective.dim()
    }

    fn value(&self, phi: ArrayView1<'_, f64>) -> f64 {
        self.objective.value(self.theta(phi).view())
    }

    fn value_grad(&self, phi: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
        let v = self
            .objective
            .value_grad(self.theta(phi).view(), grad.view_mut());
        grad *= &self.objective.scale;
        v
    }

    /// `J`'s bound at `s ⊙ p` (`∇²_φ = S∇²_θS`).
    fn curvature_bound(&self, p: ArrayView1<'_, f64>) -> Option<f64> {
        self.objective.curvature_bound(self.theta(p).view())
    }
}

/// Stops L-BFGS once `J`'s own gradient at the accepted point (its last evaluation) is
/// within `tol`.
struct Reached<'o, G> {
    objective: &'o Perturbed<G>,
    tol: f64,
}

impl<G: DataTerm> Observer for Reached<'_, G> {
    fn observe(&mut self, _: &IterationInfo) -> bool {
        !self
            .objective
            .last_gradient_norm()
            .is_some_and(|g| g <= self.tol)
    }
}

/// `J` as a finite sum of GLM terms with the regulariser `(λ/2)‖θ‖² + bᵀθ` (for SAG).
impl<G: DataTerm + GlmSum> FiniteSum for Perturbed<G> {
    fn n_terms(&self) -> usize {
        self.glm.n_terms()
    }

    fn batch_grad(&self, x: ArrayView1<'_, f64>, batch: &[usize], grad: ArrayViewMut1<'_, f64>) {
        self.glm.batch_grad(x, batch, grad);
    }

    fn regulariser_grad(&self, x: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) {
        self.glm.regulariser_grad(x, grad.view_mut());
        grad += &self.linear;
    }
}

impl<G: DataTerm + GlmSum> GlmSum for Perturbed<G> {
    fn term_scalar(&self, x: ArrayView1<'_, f64>, i: usize) -> f64 {
        self.glm.term_scalar(x, i)
    }

    fn add_scaled_row(&self, i: usize, c: f64, grad: ArrayViewMut1<'_, f64>) {
        self.glm.add_scaled_row(i, c, grad);
    }
}

impl<G: DataTerm> Objective for Perturbed<G> {
    fn dim(&self) -> usize {
        self.linear.len()
    }

    fn value(&self, theta: ArrayView1<'_, f64>) -> f64 {
        self.glm.value(theta) + self.linear.dot(&theta)
    }

    fn value_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
        let v = self.glm.value_grad(theta, grad.view_mut());
        grad += &self.linear;
        if let Ok(mut last) = self.last.lock() {
            *last = Some((theta.to_owned(), grad.to_owned()));
        }
        v + self.linear.dot(&theta)
    }

    /// The GLM part's (the linear term has no curvature).
    fn curvature_bound(&self, p: ArrayView1<'_, f64>) -> Option<f64> {
        self.glm.curvature_bound(p)
    }
}

/// The report's note on the number of rows `n` a release is sized by; `what` names what uses
/// it, with its verb ("the release box uses"). `n` is the given public value, or the data's
/// count, which is private under add/remove and treated as public (`public_n_note`).
pub(crate) fn rows_note(
    public_n: Option<usize>,
    relation: Neighbouring,
    what: &str,
) -> Option<String> {
    match public_n {
        Some(n) => Some(format!("{what} {}, not the data's", super::given_rows(n))),
        None => public_n_note(relation, &format!("{what} n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::{accuracy, accuracy_of, logistic, non_private, rng};

    /// Whether every coordinate of `v` is an integer multiple of `gamma`.
    fn on_grid(v: ArrayView1<'_, f64>, gamma: f64) -> bool {
        v.iter().all(|&x| (x / gamma).fract() == 0.0)
    }

    #[test]
    fn releases_a_grid_point_near_the_minimiser_of_its_grid_perturbed_objective() {
        let (data, _) = logistic(1500, 4, 3.0, 1);
        let learner = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        let model = learner.fit(&data, &mut rng(8)).unwrap();
        // The same stream draws the same b: rebuild J.
        let b = learner.bounds().unwrap();
        let (sigma, lambda) = learner.calibrate_release(4).unwrap();
        let j = Perturbed::draw(
            data.term(&perturbed_terms(&b, 1.0), lambda).unwrap(),
            &b,
            sigma,
            &mut rng(8),
        )
        .unwrap();
        // b is a point of its grid (γ_b = 2^(⌊log₂σ⌋ − 24)), not a floating-point Gaussian.
        let gamma_b = Noise::Gaussian { std: sigma }.grid().unwrap();
        assert_eq!(gamma_b, 2f64.powi(sigma.log2().floor() as i32 - GRID_BITS));
        assert!(on_grid(j.linear.view(), gamma_b) && norm(j.linear.view()) > 0.0);
        // The released value is a point of the output grid, not the solver's output.
        let r = model.privacy();
        let get = |name: &str| r.noise.iter().find(|(k, _)| k == name).unwrap().1;
        let (tau, sigma_out) = (get("tau"), get("sigma_out"));
        let gamma_o = Noise::Gaussian { std: sigma_out }.grid().unwrap();
        assert!(on_grid(model.coef(), gamma_o), "{:?}", model.coef());
        let theta = j.minimise(0.1 * tau).unwrap();
        assert!(!on_grid(theta.view(), gamma_o));
        // ... within 6 σ_out per coordinate of the certified minimiser (P(|Z| > 6) = 2e-9).
        let gap = (&model.coef() - &theta).mapv(f64::abs);
        assert!(
            gap.iter().all(|&g| g <= 6.0 * sigma_out),
            "{gap} vs {sigma_out}"
        );
        // The output noise's ratio is κL/σ: sensitivity (2τ + γ_b√d)/λ + γ_o·2 over σ_out.
        let sensitivity = (2.0 * tau + gamma_b * 2.0) / lambda + gamma_o * 2.0;
        let ratio = sensitivity / sigma_out;
        assert!(ratio <= OUTPUT_SHARE * b.lipschitz / sigma, "{ratio}");
        assert!(ratio > 0.99 * OUTPUT_SHARE * b.lipschitz / sigma, "{ratio}");
        assert_eq!(tau, 1e-10 * (1500.0 * b.lipschitz + sigma * 10.0));
    }

    #[test]
    fn spends_at_most_the_target_with_a_complete_report_and_learns() {
        let (data, theta) = logistic(3000, 4, 4.0, 2);
        let test = crate::learners::testdata::logistic_with(&theta, 5000, &mut rng(3));
        let learner = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        let m = learner.fit(&data, &mut rng(4)).unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.95, "{}", r.epsilon);
        assert_eq!(r.neighbouring, Neighbouring::AddRemove);
        assert_eq!(r.accountant, AccountantKind::Pld);
        // Objective perturbation with its linear term's grid, and the output noise with its.
        let e = r.event.releases();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].mechanism.name(), "objpert");
        assert_eq!(e[1].mechanism.name(), "gaussian");
        let grid = |i: usize| e[i].mechanism.grid().unwrap();
        assert_eq!((grid(0).dim(), grid(1).dim()), (4, 4));
        assert!(grid(0).sigma() >= 2f64.powi(GRID_BITS) * (1.0 - 1e-15));
        let names: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["sigma", "lambda", "lipschitz", "beta", "tau", "sigma_out"]
        );
        assert!(r.notes.iter().any(|n| n.contains("grid-safe")));
        // The accountant prices the ledger again: the same ε, at most the target.
        let mut acc = AccountantKind::Pld.build(Neighbouring::AddRemove);
        for entry in e {
            acc.compose(&entry.mechanism, entry.count).unwrap();
        }
        assert_eq!(acc.epsilon(1e-5).unwrap(), r.epsilon);
        // The released σ is within 0.5% of the idealised mechanism's (the output noise's
        // share); the PLD idealised calibration is the reference.
        let mut ideal = learner.clone();
        ideal.lambda = Some(r.noise[1].1);
        let (s_ideal, _) = ideal.calibrate().unwrap();
        let s = r.noise[0].1;
        assert!(s >= s_ideal && s <= 1.005 * s_ideal, "{s} vs {s_ideal}");
        let acc = accuracy(&m, &test);
        let base = accuracy_of(&non_private(&data, Loss::Logistic, 0.0), &test);
        assert!(acc > base - 0.03, "accuracy {acc}, non-private {base}");
    }

    #[test]
    fn refuses_the_exact_accountant_and_what_it_cannot_certify() {
        let (data, _) = logistic(300, 3, 2.0, 9);
        let mut l = ObjectivePerturbation::new(Loss::Logistic);
        l.budget.accountant = AccountantKind::Exact;
        // The idealised mechanism is a single release the exact accountant prices...
        assert!(l.calibrate().is_ok());
        // ... the released one is not.
        match l.fit(&data, &mut rng(1)) {
            Err(Error::Accounting(dp_accounting::Error::Unsupported { accountant, what })) => {
                assert_eq!(accountant, "exact");
                assert!(what.contains("pld"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        // The RDP accountant prices the release (with the grids' adjustment).
        l.budget.accountant = AccountantKind::Rdp;
        let m = l.fit(&data, &mut rng(1)).unwrap();
        assert!(m.privacy().epsilon <= 1.0);
        // A tolerance the floating-point error cannot be certified below is refused.
        let b = l.bounds().unwrap();
        let j = Perturbed::draw(
            data.term(&perturbed_terms(&b, 1.0), 1.0).unwrap(),
            &b,
            1.0,
            &mut rng(2),
        )
        .unwrap();
        let theta = j.minimise(1e-9).unwrap();
        assert!(j.certify(theta.view(), 1e-6, b.lipschitz).is_ok());
        assert!(matches!(
            j.certify(theta.view(), 1e-14, b.lipschitz),
            Err(Error::Privacy(_))
        ));
    }

    #[test]
    fn smallest_feasible_returns_an_evaluated_feasible_point_at_the_boundary() {
        let search = |f: &dyn Fn(f64) -> f64, tol: f64| {
            let mut calls = 0;
            let (x, fx) = smallest_feasible(
                (0.0, f(0.0)),
                (10.0, f(10.0)),
                |a, b| b - a <= tol,
                leaning(tol),
                |x| {
                    calls += 1;
                    Ok(f(x))
                },
            )
            .unwrap();
            assert_eq!(fx, f(x));
            (x, calls)
        };
        // Smooth: the secant finds the boundary in far fewer calls than bisection (34).
        let root = 2f64.sqrt();
        let (x, calls) = search(&|x| (root - x) * (1.0 + x), 1e-9);
        assert!(x >= root && x - root <= 1e-9, "{x}");
        assert!(calls <= 20, "{calls}");
        // A step (a discretised accountant can be flat): the bisection fallback still closes.
        let (x, calls) = search(&|x| if x >= 3.3 { -1.0 } else { 1.0 }, 1e-6);
        assert!((3.3..=3.3 + 1e-6).contains(&x), "{x}");
        assert!(calls <= 60, "{calls}");
    }

    /// `least_sigma` returns an evaluated feasible σ within the tolerance of the boundary:
    /// in four evaluations on a Gaussian-like `ε = C/σ^0.9`, through its fallback on a
    /// step, and `reference` when that is feasible.
    #[test]
    fn least_sigma_returns_an_evaluated_feasible_sigma_at_the_boundary() {
        let search = |eps: &dyn Fn(f64) -> f64, reference: f64| {
            let mut seen = Vec::new();
            let sigma = least_sigma((reference, 6.5, eps(6.5) - 1.0), 1.0, |s| {
                seen.push(s);
                Ok(eps(s) - 1.0)
            })
            .unwrap();
            assert!(
                seen.contains(&sigma) || sigma == 6.5,
                "{sigma} not evaluated"
            );
            assert!(eps(sigma) <= 1.0, "{sigma}");
            (sigma, seen.len())
        };
        // Boundary at σ = 5.
        let smooth = |s: f64| (5.0 / s).powf(0.9);
        let (sigma, calls) = search(&smooth, 4.0);
        assert!((5.0..=5.0 * (1.0 + SIGMA_TOL)).contains(&sigma), "{sigma}");
        assert!(calls <= 4, "{calls}");
        let step = |s: f64| if s >= 5.2 { 0.5 } else { 2.0 };
        let (sigma, calls) = search(&step, 4.0);
        assert!((5.2..=5.2 * (1.0 + SIGMA_TOL)).contains(&sigma), "{sigma}");
        assert!(calls <= 40, "{calls}");
        let (sigma, _) = search(&smooth, 5.5);
        assert_eq!(sigma, 5.5);
    }

    /// The certificate's gradient norm is the same whether it is the solver's last
    /// evaluation, remembered, or a new one.
    #[test]
    fn the_remembered_gradient_is_the_one_computed_anew() {
        let (data, _) = logistic(20_000, 4, 3.0, 8);
        let b = bounds(Loss::Logistic, 1.0, None).unwrap();
        let j = Perturbed::draw(
            data.term(&perturbed_terms(&b, 1.0), 2.0).unwrap(),
            &b,
            3.0,
            &mut rng(1),
        )
        .unwrap();
        let theta = j.minimise(1e-6).unwrap();
        // L-BFGS evaluated the point it returns last.
        let last = j.last.lock().unwrap().as_ref().map(|(x, _)| x.clone());
        assert_eq!(last, Some(theta.clone()));
        let remembered = j.gradient_norm(theta.view());
        let mut g = Array1::zeros(4);
        j.value_grad(Array1::zeros(4).view(), g.view_mut());
        let anew = j.gradient_norm(theta.view());
        assert_eq!(remembered.to_bits(), anew.to_bits());
        assert!(anew <= 1e-6 && anew > 0.0, "{anew}");
    }

    #[test]
    fn memoised_calibrations_are_the_values_computed_for_the_same_key() {
        let key = format!("test {:?}", std::thread::current().id());
        let mut calls = 0;
        let first = memoised(key.clone(), || {
            calls += 1;
            Ok((1.5, 2.5))
        });
        let again = memoised(key.clone(), || {
            calls += 1;
            Ok((9.0, 9.0))
        });
        assert_eq!(
            (first.unwrap(), again.unwrap(), calls),
            ((1.5, 2.5), (1.5, 2.5), 1)
        );
        // An error is not kept.
        let other = format!("{key} error");
        assert!(memoised(other.clone(), || Err(Error::Privacy("no".into()))).is_err());
        assert_eq!(memoised(other, || Ok((3.0, 4.0))).unwrap(), (3.0, 4.0));
    }

    #[test]
    fn paper_defaults_and_the_lambda_rule() {
        let mut l = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        l.budget.accountant = AccountantKind::Exact;
        l.x_bound = 2f64.sqrt();
        let b = l.bounds().unwrap();
        assert!((b.lipschitz - 2f64.sqrt()).abs() < 1e-9 && b.lipschitz >= 2f64.sqrt());
        assert!((b.beta - 0.5).abs() < 1e-9 && b.beta >= 0.5);
        let (sigma, lambda) = l.calibrate().unwrap();
        let reference = gaussian_sigma(1.0, 1e-5, b.lipschitz).unwrap();
        assert!(sigma <= 1.3 * reference, "{sigma} vs {reference}");
        // One grid step lower is rejected (or is below λ₀).
        let lambda0 = (2.0 * b.beta).max(1.05 * b.beta);
        if lambda > lambda0 * 1.0001 {
            let mut lower = l.clone();
            lower.lambda = Some(lambda / 1.05);
            let below = lower.calibrate().map(|(s, _)| s);
            assert!(below.is_err() || below.unwrap() > 1.3 * reference);
        }
        // Thm 3.1 (exact profile) is tighter than Thm 3.2 (RDP): less noise at the same λ.
        let mut fixed = l.clone();
        fixed.lambda = Some(lambda);
        let mut rdp = fixed.clone();
        rdp.budget.accountant = AccountantKind::Rdp;
        let (s_exact, s_rdp) = (fixed.calibrate().unwrap().0, rdp.calibrate().unwrap().0);
        assert!(s_exact < s_rdp, "{s_exact} vs {s_rdp}");
    }

    /// The exact accountant prices objective perturbation alone but not after pure-DP
    /// estimates: with a prior the rule falls back to the ε basic composition leaves (the
    /// split budget), while PLD composes the two and needs less noise than that split.
    #[test]
    fn a_prior_the_accountant_cannot_compose_falls_back_to_the_split_budget() {
        let mut l = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        l.budget.prior = super::super::Prior {
            count: 10,
            epsilon: 0.02,
            one: None,
        };
        let mut split = l.clone();
        split.budget = l.budget.split();
        assert!((split.budget.epsilon - 0.8).abs() < 1e-12);
        for kind in [AccountantKind::Exact, AccountantKind::Pld] {
            l.budget.accountant = kind;
            split.budget.accountant = kind;
            let (joint, alone) = (l.calibrate().unwrap(), split.calibrate().unwrap());
            eprintln!("{kind:?}: joint {joint:?}, split {alone:?}");
            if kind == AccountantKind::Exact {
                assert_eq!(joint, alone);
            } else {
                assert!(joint.0 < 0.98 * alone.0, "{joint:?} vs {alone:?}");
            }
        }
    }

    #[test]
    fn squared_loss_is_clipped_and_rows_projected() {
        let (data, _) = crate::learners::ssp::tests::gaussian_linreg(800, 3, 0.1, 5);
        let mut l = ObjectivePerturbation::new(Loss::Squared).budget(2.0, 1e-5);
        assert!(matches!(
            l.fit(&data, &mut rng(1)),
            Err(Error::InvalidHyperParameter { name: "clip", .. })
        ));
        l.clip = Some(2.0);
        l.x_bound = 1.5;
        let b = l.bounds().unwrap();
        assert!(b.clipped.is_some() && (b.lipschitz - 2.0).abs() < 1e-9);
        assert!((b.beta - 2.25).abs() < 1e-9);
        let m = l.fit(&data, &mut rng(2)).unwrap();
        assert!(m.privacy().epsilon <= 2.0);
        assert!(m.privacy().notes.iter().any(|n| n.contains("clipped loss")));
        // Some rows of N(0, I_3) are longer than 1.5: the projection happened.
        assert!(data.row_norms().iter().any(|&r| r > 1.5));
    }

    #[test]
    fn rejects_what_the_analysis_does_not_cover() {
        let (data, _) = logistic(200, 2, 1.0, 6);
        let fit = |l: ObjectivePerturbation| l.fit(&data, &mut rng(1));
        assert!(matches!(
            fit(ObjectivePerturbation::new(Loss::Savage)),
            Err(Error::NotConvex { .. })
        ));
        let mut replace = ObjectivePerturbation::new(Loss::Logistic);
        replace.budget.neighbouring = Neighbouring::ReplaceOne;
        assert!(matches!(
            fit(replace),
            Err(Error::UnsupportedNeighbouring {
                requested: Neighbouring::ReplaceOne,
                supported: Neighbouring::AddRemove,
                ..
            })
        ));
        let mut small = ObjectivePerturbation::new(Loss::Logistic);
        small.lambda = Some(0.2); // β = 1/4 for X = 1
        assert!(matches!(
            fit(small),
            Err(Error::InvalidHyperParameter { name: "lambda", .. })
        ));
        let mut x = ObjectivePerturbation::new(Loss::Logistic);
        x.x_bound = f64::NAN;
        assert!(fit(x).is_err());
        assert!(fit(ObjectivePerturbation::new(Loss::Logistic).budget(0.0, 1e-5)).is_err());
    }
}
