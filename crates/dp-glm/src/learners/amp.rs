//! Approximate minima perturbation with gradient clipping (paper 001, Alg. 1).

use dp_accounting::{AccountantKind, Mechanism, ObjPertParams};
use dp_optim::Noise;
use ndarray::Array1;
use rand::Rng;

use super::objpert::{
    BOUND_SLACK, BOX_NOTE, DataTerm, InMemory, Perturbed, ReleaseBox, b_slack_bound,
    calibrate_objpert, memoised, objpert_tau, perturbed_terms, release_grid, rows_note,
};
use super::streamed_glm::Stream;
use super::{ObjPertBounds, ObjectivePerturbation, positive, report};
use crate::error::{Error, Result};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::streamed::BlockSource;
use crate::sufficient::StreamError;

/// Approximate minima perturbation (Iyengar et al. 2019) with gradient clipping — paper 001,
/// Algorithm 1.
///
/// Builds the perturbed objective `J` of [`ObjectivePerturbation`] (same enforced bounds: rows
/// scaled to norm `≤ X`, the clipped loss when gradients are unbounded), draws `b` **once**,
/// minimises `J` with L-BFGS until `‖∇J(θ̂)‖ ≤ τ` — checked on the exact objective right before
/// the release; if the solver stops short nothing is released and `b` is never redrawn — and
/// releases `θ̂ + N(0, σ_out²I)`. `(σ, λ)` follow paper 001's rule for the **composed**
/// mechanism (MATH §6).
///
/// Defaults: `τ = 5e-4·L/√2` and `σ_out = 0.15·√2/L` ([`Amp::tau_and_sigma_out`]), paper
/// 001's `τ = 5e-4` and `σ_out = 0.15` at its `L = √2` — bit for bit (for its data, unit rows
/// plus a bias feature, set `x_bound = √2`, giving `L = √2`, `β = 1/2`). Scaling the rows
/// `x → a·x` scales `L` by `a` and `β`, and with it the rule's `λ`, by `a²`: `J`'s minimiser
/// maps `θ → θ/a` (the same predictions) and its gradient scales by `a`. So `τ ∝ L` and
/// `σ_out ∝ 1/L` give, at every row bound, the mechanism at `L = √2` rescaled, where fixed
/// values fail: `τ = 5e-4` is below the gradient's floating-point error at `x_bound = 1e12`
/// (the certification refuses), `σ_out = 0.15` far below the output sensitivity `2τ/λ` at
/// `x_bound = 1e-9` (the calibration refuses). A fit raises the default `τ` when it is below
/// the floor objective perturbation certifies at ([`ObjectivePerturbation`]:
/// `τ = max(1e-10, 8mu)·(nL + σ(√d + 8))`, `n` the public number of rows as for the release
/// box below; the floor binds from about 3.5 million rows while `d` is below about 48,000),
/// since no smaller `τ` could be certified; and it raises the default `σ_out` to the least
/// power of two whose output grid represents the release box below (for the logistic loss at
/// `ε = 1`, from a few times 10⁷ public rows), which no smaller `σ_out`'s grid could. Given
/// values are absolute and used as given. The report states the `τ` and `σ_out` used, and
/// whether a default was raised: they are computed from public values only (`L`, the public
/// `n`, `d`, the calibrated `σ` and `λ`), never from the rows.
///
/// # Privacy
/// Paper 001, Thm 4.1: `J` is `λ`-strongly convex, so `‖θ̂ − θ^P‖ ≤ τ/λ` and the release is
/// ObjPert (Thm 3.1 / 3.2) composed with a Gaussian mechanism of sensitivity `2τ/λ` and std
/// `σ_out`, under add/remove. As computed: `b` is an exact discrete Gaussian on a grid
/// `γ_b`, compared with the rounded real-valued Gaussian, which moves the exact minimiser by
/// at most `γ_b√d/(2λ)` (strong convexity), and the output is a grid release; so the output
/// Gaussian's sensitivity is `(2τ + γ_b√d)/λ + γ_o√d` and both entries carry their grids (the
/// argument of [`ObjectivePerturbation`], § Privacy). `‖∇J(θ̂)‖ ≤ τ` is certified including
/// the floating-point error of the gradient. The ledger records both mechanisms; the default
/// accountant (PLD) composes the ObjPert PLRV with the Gaussian's, tighter than the paper's
/// RDP (`rdp` gives the paper's analysis, with the grids' adjustment); `exact` cannot compose
/// them. The solver and its hyper-parameters cost no privacy: only `‖∇J(θ̂)‖ ≤ τ` matters,
/// and it is enforced. `τ` enters the guarantee only through that sensitivity, which the
/// calibration prices for the `τ` the fit uses — the default raised to its floor included
/// (at the cost of more objective noise `σ`); likewise the calibration and the ledger price
/// the `σ_out` the fit uses, the default raised to hold the release box included. The report
/// states that public certificate (`tau`), never the achieved `‖∇J(θ̂)‖`, which is computed
/// from the data without noise.
///
/// Before the output noise `θ̂` is clamped to the public box `|θ_j| ≤ (nL + σ(√d + 8) + τ)/λ`
/// (`n` the public number of rows, [`ObjectivePerturbation::public_n`], else the data's count
/// treated as public): a 1-Lipschitz map, so the output release keeps its sensitivity, and
/// the box holds the exact minimiser (so the clamp binds only on more than `n` rows or an
/// extreme `b`). Before the data is read the fit checks that `σ_out`'s output grid represents
/// every point of the box (raising a default `σ_out` until it does; an error naming a given
/// `sigma_out` otherwise), so the release cannot fail on the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Amp {
    /// Loss, budget (default accountant PLD), `X`, clip, λ, the λ rule's factor and the
    /// public number of rows (which sizes the release box), as in [`ObjectivePerturbation`].
    pub objpert: ObjectivePerturbation,
    /// Gradient-norm tolerance `τ`, used as given; `None` (default): `5e-4·L/√2`, raised in
    /// a fit to the gradient's floating-point floor when below it (see [`Amp`]).
    pub tau: Option<f64>,
    /// Output noise `σ_out`, used as given; `None` (default): `0.15·√2/L`, raised in a fit
    /// when its output grid cannot represent the release box (see [`Amp`]).
    pub sigma_out: Option<f64>,
    /// The solver tried first (default L-BFGS); if it stops with `‖∇J‖ > τ` the other one
    /// continues from its point on the same `J`.
    pub solver: AmpSolver,
}

/// Paper 001's tolerance `τ`, at its Lipschitz bound [`PAPER_LIPSCHITZ`].
const PAPER_TAU: f64 = 5e-4;

/// Paper 001's output noise `σ_out`, at its Lipschitz bound [`PAPER_LIPSCHITZ`].
const PAPER_SIGMA_OUT: f64 = 0.15;

/// Paper 001's `L = √2` as [`ObjPertBounds`] states it, rounded up by `BOUND_SLACK` like
/// every `L`: the defaults scale with `L` over this, which is exactly 1 at `x_bound = √2` for
/// a loss of `sup|φ'| = 1`.
const PAPER_LIPSCHITZ: f64 = std::f64::consts::SQRT_2 * BOUND_SLACK;

/// The most calibrations [`Amp::calibrated`] makes while raising the defaults `τ` and
/// `σ_out` to what the release needs.
const DEFAULT_ROUNDS: usize = 8;

/// The release [`Amp::calibrated`] settles on: the `(τ, σ_out)` used, defaults raised if
/// needed, the `(σ, λ)` calibrated for them and the release box they size.
#[derive(Debug, Clone, Copy)]
struct Calibrated {
    tau: f64,
    sigma_out: f64,
    sigma: f64,
    lambda: f64,
    release_box: ReleaseBox,
}

/// The optimiser AMP minimises its perturbed objective with. Either is valid: the privacy
/// analysis needs only `‖∇J(θ̂)‖ ≤ τ`, which is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AmpSolver {
    /// L-BFGS with a strong-Wolfe line search.
    #[default]
    Lbfgs,
    /// Stochastic average gradient (one scalar of memory per example; paper 001, App. G).
    Sag,
}

impl Amp {
    /// AMP with the scale-free defaults (`τ = 5e-4·L/√2`, `σ_out = 0.15·√2/L`: paper 001's
    /// at `L = √2`), PLD accounting.
    pub fn new(loss: Loss) -> Self {
        let mut objpert = ObjectivePerturbation::new(loss);
        objpert.budget.accountant = AccountantKind::Pld;
        Self {
            objpert,
            tau: None,
            sigma_out: None,
            solver: AmpSolver::Lbfgs,
        }
    }

    /// Sets the target (ε, δ).
    pub fn budget(mut self, epsilon: f64, delta: f64) -> Self {
        self.objpert = self.objpert.budget(epsilon, delta);
        self
    }

    /// The calibrated `(σ, λ)` of the composed mechanism, with the idealised output release
    /// (sensitivity `2τ/λ`); [`Amp::fit`] calibrates the release as computed (the grids'
    /// slack added to the sensitivity, their adjustment to the accountant), so its `(σ, λ)`
    /// can be a hair larger.
    ///
    /// `τ` and `σ_out` are [`Amp::tau_and_sigma_out`]'s: the fit knows `n` and `d` and may
    /// raise a default `τ` to its floating-point floor and a default `σ_out` to hold its
    /// release box.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::calibrate`] and [`Amp::tau_and_sigma_out`].
    ///
    /// # Privacy
    /// As [`ObjectivePerturbation::calibrate`], for [`Mechanism::amp`] (paper 001, Thm 4.1):
    /// an evaluated feasible point, so the composed ε is `≤` the target.
    pub fn calibrate(&self) -> Result<(f64, f64)> {
        let b = self.objpert.bounds()?;
        let (tau, sigma_out) = self.resolved(&b)?;
        self.calibrate_with(&b, tau, sigma_out, None)
    }

    /// The `(τ, σ_out)` [`Amp::calibrate`] prices: the given values, else the defaults
    /// `5e-4·L/√2` and `0.15·√2/L` for the enforced `L` ([`ObjectivePerturbation::bounds`];
    /// exactly `5e-4` and `0.15` at `x_bound = √2` with a loss of `sup|φ'| = 1`, such as the
    /// logistic loss). A fit may raise the default `τ` to its floating-point floor and the
    /// default `σ_out` to hold its release box (see [`Amp`]); its report states the values it
    /// used.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::bounds`]; `tau` or `sigma_out`, given or default, not
    /// finite and positive ([`Error::InvalidHyperParameter`] naming it).
    pub fn tau_and_sigma_out(&self) -> Result<(f64, f64)> {
        self.resolved(&self.objpert.bounds()?)
    }

    /// [`Amp::tau_and_sigma_out`] under the bounds `b`.
    fn resolved(&self, b: &ObjPertBounds) -> Result<(f64, f64)> {
        // Exactly 1 at paper 001's L: both L's carry the same rounding up.
        let scale = b.lipschitz / PAPER_LIPSCHITZ;
        Ok((
            positive("tau", self.tau.unwrap_or(PAPER_TAU * scale))?,
            positive(
                "sigma_out",
                self.sigma_out.unwrap_or(PAPER_SIGMA_OUT / scale),
            )?,
        ))
    }

    /// The calibrated release on `n` public rows and `d` features, from
    /// [`Amp::tau_and_sigma_out`]'s `(τ, σ_out)`. Given values are used as they are. A
    /// default is raised when the release needs more, from public values only:
    ///
    /// - `τ` below the floor `objpert_tau(n, d, L, σ)` at the `σ` calibrated for it: raised to
    ///   that floor and a sixteenth;
    /// - `σ_out` whose output grid cannot represent the release box `(nL + σ(√d + 8) + τ)/λ`
    ///   of the calibrated `(σ, λ)` and `τ` ([`ReleaseBox::check_grid`]): raised to the least
    ///   power of two whose grid does ([`ReleaseBox::min_sigma_out`], as
    ///   [`ObjectivePerturbation`] raises its own; the box's radius, rounded up, is then
    ///   strictly below `2^51` grid steps, a power-of-two grid making the ratio exact).
    ///
    /// Each raise is followed by a new calibration, so that `(σ, λ)` and the ledger price the
    /// `(τ, σ_out)` the release uses. The order of dependencies: `(τ, σ_out) → (σ, λ)` (the
    /// calibration) `→` the floor (through `σ`) and the box (through `σ, λ, τ`) `→` the raises.
    /// The rounds settle: both values only grow (`τ` by more than a sixteenth per raise, being
    /// raised above `17/16` of a floor above it; `σ_out` at least doubles after its first
    /// raise, a power of two above it), and under the `λ` rule both are bounded — its `λ` is
    /// at least `max(2β/ε, 1.05β)` and its `σ` at most `sigma_factor·σ_Gauss`, whatever
    /// `(τ, σ_out)`, which bounds the floor and the box. In practice one round settles `τ`
    /// (once the floor binds, `nL` dominates its `σ(√d + 8)`) and one or two `σ_out` (a
    /// larger `σ_out` can lower the rule's `λ`, widening the box); [`DEFAULT_ROUNDS`] caps
    /// the rounds (with a given `λ`, `σ` is not bounded above when `τ` grows).
    ///
    /// # Errors
    /// As [`Amp::calibrate`] and [`ReleaseBox::new`]; [`Error::InvalidHyperParameter`] naming
    /// the default raised last when the rounds do not settle within [`DEFAULT_ROUNDS`].
    fn calibrated(
        &self,
        b: &ObjPertBounds,
        (tau, sigma_out): (f64, f64),
        n: usize,
        d: usize,
    ) -> Result<Calibrated> {
        let o = &self.objpert;
        let (mut tau, mut sigma_out) = (tau, sigma_out);
        // The default raised last, with its value.
        let mut raised = ("tau", tau);
        for _ in 0..DEFAULT_ROUNDS {
            let key = format!(
                "amp release {:?} {b:?} {:?} {:?} {tau:?} {sigma_out:?} {d}",
                o.budget, o.lambda, o.sigma_factor
            );
            let (sigma, lambda) =
                memoised(key, || self.calibrate_with(b, tau, sigma_out, Some(d)))?;
            let floor = objpert_tau(n, d, b.lipschitz, sigma);
            if self.tau.is_none() && floor > tau {
                tau = floor * (1.0 + 1.0 / 16.0);
                raised = ("tau", tau);
                continue;
            }
            let release_box = ReleaseBox::new(n, d, b.lipschitz, sigma, lambda, tau)?;
            let least = release_box.min_sigma_out();
            if self.sigma_out.is_none()
                && release_box.check_grid(sigma_out).is_err()
                && least > sigma_out
            {
                sigma_out = least;
                raised = ("sigma_out", sigma_out);
                continue;
            }
            return Ok(Calibrated {
                tau,
                sigma_out,
                sigma,
                lambda,
                release_box,
            });
        }
        Err(Error::InvalidHyperParameter {
            name: raised.0,
            value: raised.1,
            reason: "the defaults raised to what the release needs (tau to the gradient's \
                     floating-point floor, sigma_out to hold the release box; both grow with \
                     the public number of rows) did not settle: give tau and sigma_out",
        })
    }

    /// Calibrates the mechanism with the release on `dim` features as computed (`Some(dim)`)
    /// or idealised (`None`). As computed, the output Gaussian's sensitivity `2τ/λ` grows by
    /// the grids' slack — `b`'s, at most `σ√d·2^-GRID_BITS` ([`b_slack_bound`]), over `λ`,
    /// and the output grid's `γ_o√d` — stated through `τ`, and the mechanism carries the
    /// grids' descriptor ([`release_grid`]).
    fn calibrate_with(
        &self,
        b: &ObjPertBounds,
        tau: f64,
        sigma_out: f64,
        dim: Option<usize>,
    ) -> Result<(f64, f64)> {
        let o = &self.objpert;
        let computed = match dim {
            Some(d) => {
                let out = Noise::Gaussian { std: sigma_out }.on_grid(None)?.slack(d);
                Some((d, out, release_grid(d)?))
            }
            None => None,
        };
        let tau_at = |p: &ObjPertParams| match computed {
            Some((d, out, _)) => {
                (tau + 0.5 * b_slack_bound(p.sigma, d) + 0.5 * p.lambda * out)
                    * (1.0 + 4.0 * f64::EPSILON)
            }
            None => tau,
        };
        calibrate_objpert(
            &o.budget,
            b,
            o.lambda,
            o.sigma_factor,
            |p| {
                let m = Mechanism::amp(p, tau_at(&p), sigma_out)?;
                Ok(match computed {
                    Some((_, _, grid)) => m.with_grid(grid),
                    None => m,
                })
            },
            // The output noise: a Gaussian of sensitivity at least 2τ/λ (paper 001, Thm 4.1);
            // a lower bound suffices for this necessary condition.
            |lambda| Some((sigma_out, 2.0 * tau / lambda)),
        )
    }

    in_memory_fits! {
        /// Fits the model.
        ///
        /// # Errors
        /// As [`Amp::calibrate`]; a given `sigma_out` too small for its output grid to
        /// represent the release box (checked before the data is read); the defaults' raises
        /// not settling ([`Error::InvalidHyperParameter`] naming `tau` or `sigma_out`); labels
        /// outside the loss's domain; the solver stopping with `‖∇J‖ > τ` (nothing is
        /// released).
        fn fit;

        /// [`Amp::fit`] on sparse rows ([`SparseDataset`](crate::sparse::SparseDataset), e.g.
        /// a LIBSVM file read by [`dp_data::read_libsvm_sparse`]), with either solver: each
        /// value and gradient of `J` (L-BFGS) costs `O(nnz + d)`, each SAG step
        /// `O(nnz_i + d)`, and memory grows with the stored entries, never with `n × d`. Rows
        /// bounded and losses clipped per row as on dense rows; the sums, SAG's per-row terms
        /// included, are the dense objective's bit for bit ([`crate::sparse`]), so the model
        /// is bit-identical to [`Amp::fit`]'s on the same rows densified, with the same `rng`,
        /// whichever solver certifies the point.
        ///
        /// # Errors
        /// As [`Amp::fit`].
        fn fit_sparse;
    }

    /// The fit on rows in memory, dense or sparse, SAG available.
    fn fit_rows<D: InMemory, R: Rng + ?Sized>(&self, data: &D, rng: &mut R) -> Result<LinearModel> {
        let o = &self.objpert;
        let b = o.bounds()?;
        let given = self.resolved(&b)?;
        data.check_labels(&o.loss)?;
        let rows = data.bounded(o.x_bound)?;
        let terms = perturbed_terms(&b, o.x_bound);
        let sag =
            |j: &Perturbed<D::Term<'_>>, x0, tol, rng: &mut R| j.minimise_sag(x0, b.beta, tol, rng);
        self.fit_term(
            &b,
            given,
            data.shape(),
            |lambda| rows.term(&terms, lambda),
            Some(&sag),
            rng,
        )
    }

    /// [`Amp::fit`] on data read block by block, with L-BFGS: one pass checks and counts the
    /// rows, then one pass per value and gradient of `J`, memory `O(d)` plus a block and a
    /// leaf of 8192 rows; rows bounded, losses clipped and every pass checked as in
    /// [`ObjectivePerturbation::fit_blocks`]. The sums are the in-memory objective's bit for
    /// bit, so the model is bit-identical to [`Amp::fit`]'s with the same `rng` whenever
    /// L-BFGS certifies its point (in memory SAG would then continue from it; streamed, the
    /// fit fails and nothing is released).
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`StreamError::Fit`] as
    /// [`Amp::fit`] and [`crate::streamed::StreamedSum::new`], and
    /// [`Error::InvalidHyperParameter`] for the SAG solver (it needs the rows in memory).
    pub fn fit_blocks<R, S>(
        &self,
        source: S,
        rng: &mut R,
    ) -> std::result::Result<LinearModel, StreamError<S::Error>>
    where
        R: Rng + ?Sized,
        S: BlockSource,
    {
        let o = &self.objpert;
        let b = o.bounds()?;
        let given = self.resolved(&b)?;
        if self.solver == AmpSolver::Sag {
            return Err(no_sag().into());
        }
        Stream::new(source, o.loss)?.fit_with(|stream| {
            let terms = perturbed_terms(&b, o.x_bound);
            self.fit_term(
                &b,
                given,
                stream.shape(),
                |l| stream.glm(terms, l),
                None,
                rng,
            )
        })
    }

    /// The fit on `rows × d` data whose (bounded) GLM term with ridge `λ` is `term(λ)`, with
    /// `given` [`Amp::tau_and_sigma_out`]'s `(τ, σ_out)` and SAG when the rows are in memory
    /// (`sag`).
    fn fit_term<G, R>(
        &self,
        b: &ObjPertBounds,
        given: (f64, f64),
        (rows, d): (usize, usize),
        term: impl FnOnce(f64) -> Result<G>,
        sag: Option<&Sag<'_, G, R>>,
        rng: &mut R,
    ) -> Result<LinearModel>
    where
        G: DataTerm,
        R: Rng + ?Sized,
    {
        let o = &self.objpert;
        // τ, σ_out, the release box and its grid check use public values only, before the
        // rows are read: the fit cannot fail on the data at the output grid.
        let n = o.public_n.unwrap_or(rows);
        let Calibrated {
            tau,
            sigma_out,
            sigma,
            lambda,
            release_box,
        } = self.calibrated(b, given, n, d)?;
        // A given σ_out is used as given: too small, the fit stops here.
        release_box.check_grid(sigma_out)?;
        let objective = Perturbed::draw(term(lambda)?, b, sigma, rng)?;
        // The certificate adds the gradient's floating-point error to the computed norm: aim
        // a little below τ.
        let aim = 0.5 * tau;
        let zero = Array1::zeros(d);
        let mut theta = match (self.solver, sag) {
            (AmpSolver::Lbfgs, _) => objective.minimise_from(zero, aim)?,
            (AmpSolver::Sag, Some(sag)) => sag(&objective, zero, aim, rng)?,
            (AmpSolver::Sag, None) => return Err(no_sag()),
        };
        if let (Err(_), Some(sag)) = (objective.certify(theta.view(), tau, b.lipschitz), sag) {
            theta = match self.solver {
                AmpSolver::Lbfgs => sag(&objective, theta, aim, rng)?,
                AmpSolver::Sag => objective.minimise_from(theta, aim)?,
            };
        }
        objective.certify(theta.view(), tau, b.lipschitz)?;
        // Grid-safe output release: θ̂ rounded to the grid plus exact discrete Gaussian noise;
        // both grids' slack is in the sensitivity.
        let (released, ledger, noise) =
            objective.release(theta, tau, sigma_out, &release_box, b, rng)?;
        // ‖∇J(θ̂)‖ itself is computed from the data without noise: only the public
        // certificate ‖∇J(θ̂)‖ ≤ τ (checked above) goes into the report.
        let mut notes = b.notes(o.x_bound);
        notes.push(format!(
            "the approximate minimiser was clamped to the public box {BOX_NOTE} before its \
             output noise"
        ));
        notes.extend(self.defaults_note(given.0 < tau, given.1 < sigma_out));
        let uses = match self.tau {
            None => "the release box and the default tau's floating-point floor use",
            Some(_) => "the release box uses",
        };
        notes.extend(rows_note(o.public_n, o.budget.neighbouring, uses));
        let report = report(&o.budget, ledger, noise, notes)?;
        LinearModel::new(released, 0.0, o.loss, report)?.with_row_bound(o.x_bound)
    }

    /// The report's note on the defaults a fit used (`raised_tau`: the default `τ` was raised
    /// to its floating-point floor; `raised_sigma_out`: the default `σ_out` was raised to hold
    /// the release box); `None` when `τ` and `σ_out` were both given. The values are in the
    /// report's noise parameters.
    fn defaults_note(&self, raised_tau: bool, raised_sigma_out: bool) -> Option<String> {
        // A default's text, with how it was raised when it was; nothing for a given value.
        let default = |given: Option<f64>, raised: bool, text: &'static str, how: &str| {
            given.is_none().then(|| {
                if raised {
                    format!("{text} raised to {how}")
                } else {
                    text.to_string()
                }
            })
        };
        let tau = default(
            self.tau,
            raised_tau,
            "tau = 5e-4·L/√2",
            "the gradient's floating-point floor max(1e-10, 8mu)·(n·L + sigma(√d + 8))",
        );
        let sigma_out = default(
            self.sigma_out,
            raised_sigma_out,
            "sigma_out = 0.15·√2/L",
            "the least power of two whose output grid (sigma_out·2^-24) represents the release \
             box within 2^51 steps",
        );
        let used: Vec<String> = tau.into_iter().chain(sigma_out).collect();
        (!used.is_empty()).then(|| {
            format!(
                "{}: the scale-free defaults (Redberg, Koskela & Wang's tau = 5e-4 and \
                 sigma_out = 0.15 at L = √2), from public values only",
                used.join(" and ")
            )
        })
    }
}

/// SAG on an in-memory `J` from a starting point to a gradient-norm tolerance (its
/// smoothness fixed).
type Sag<'s, G, R> = dyn Fn(&Perturbed<G>, Array1<f64>, f64, &mut R) -> Result<Array1<f64>> + 's;

/// The refusal of SAG on data that is not in memory.
fn no_sag() -> Error {
    Error::InvalidHyperParameter {
        name: "solver",
        value: f64::NAN,
        reason: "sag samples random rows, which a pass over a stream does not give: use lbfgs",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::learners::Prior;
    use crate::learners::testdata::{
        accuracy, accuracy_of, logistic, logistic_with, non_private, rng,
    };
    use dp_accounting::{Ledger, Neighbouring};

    fn paper(eps: f64) -> Amp {
        let mut a = Amp::new(Loss::Logistic).budget(eps, 1e-5);
        a.objpert.x_bound = 2f64.sqrt();
        a
    }

    #[test]
    fn spends_at_most_the_target_composing_both_mechanisms() {
        let (data, theta) = logistic(3000, 5, 4.0, 1);
        let test = logistic_with(&theta, 5000, &mut rng(2));
        let m = paper(1.0).fit(&data, &mut rng(3)).unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.95, "{}", r.epsilon);
        assert_eq!(r.accountant, AccountantKind::Pld);
        let e = r.event.releases();
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0].mechanism.name(),
            Mechanism::objective_perturbation(ObjPertParams::new(1.0, 1.0, 0.5, 1.0).unwrap())
                .name()
        );
        // The report holds only values fixed before the data is read: not ‖∇J(θ̂)‖, whose
        // public certificate is ‖∇J(θ̂)‖ ≤ tau (fit returns an error otherwise).
        let names: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["sigma", "lambda", "lipschitz", "beta", "tau", "sigma_out"]
        );
        let base = accuracy_of(&non_private(&data, Loss::Logistic, 0.0), &test);
        let acc = accuracy(&m, &test);
        assert!(acc > base - 0.03, "AMP {acc}, non-private {base}");
    }

    #[test]
    fn pld_epsilon_is_at_most_rdp_epsilon_and_calibration_is_tight() {
        let a = paper(1.0);
        let b = a.objpert.bounds().unwrap();
        let (sigma, lambda) = a.calibrate().unwrap();
        let (tau, sigma_out) = a.tau_and_sigma_out().unwrap();
        let p = ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz).unwrap();
        let amp = Mechanism::amp(p, tau, sigma_out).unwrap();
        let eps = |kind: AccountantKind| {
            let mut acc = kind.build(Neighbouring::AddRemove);
            acc.compose(&amp, 1).unwrap();
            acc.epsilon(1e-5).unwrap()
        };
        let (pld, rdp) = (eps(AccountantKind::Pld), eps(AccountantKind::Rdp));
        assert!(pld <= 1.0 && pld <= rdp, "pld {pld}, rdp {rdp}");
        // 0.1% less objective noise misses the target: the calibration wastes nothing.
        let less = ObjPertParams::new(sigma * 0.999, lambda, b.beta, b.lipschitz).unwrap();
        let mut acc = AccountantKind::Pld.build(Neighbouring::AddRemove);
        acc.compose(&Mechanism::amp(less, tau, sigma_out).unwrap(), 1)
            .unwrap();
        assert!(acc.epsilon(1e-5).unwrap() > 1.0);
    }

    /// With a prior (ten 0.02-DP estimates, as `bounds` records them) AMP and objective
    /// perturbation are calibrated so that the whole ledger, priced by PLD, meets ε = 1 and
    /// nearly exhausts it; with the prior paid by basic composition instead (ε 0.8 for the
    /// learner) the same ledger spends visibly less and the noise is larger.
    #[test]
    fn calibrates_against_the_whole_ledger_after_a_prior() {
        let (data, _) = logistic(3000, 5, 4.0, 1);
        let prior = Prior {
            count: 10,
            epsilon: 0.02,
            one: None,
        };
        let total = |m: &LinearModel| {
            let mut ledger = Ledger::new(Neighbouring::AddRemove);
            ledger.record(
                Mechanism::pure_dp(prior.epsilon).unwrap(),
                prior.count,
                "prior",
            );
            for e in m.privacy().event.releases() {
                ledger.record(e.mechanism.clone(), e.count, &e.label);
            }
            ledger.epsilon(AccountantKind::Pld, 1e-5).unwrap()
        };
        let sigma = |m: &LinearModel| {
            m.privacy()
                .noise
                .iter()
                .find(|(k, _)| k == "sigma")
                .map(|(_, v)| *v)
                .unwrap()
        };
        let mut amp = paper(1.0);
        amp.objpert.budget.prior = prior;
        let mut split = amp.clone();
        split.objpert.budget = amp.objpert.budget.split();
        let (objpert, objpert_split) = (&amp.objpert, &split.objpert);
        let fits = [
            (amp.fit(&data, &mut rng(3)), split.fit(&data, &mut rng(3))),
            (
                objpert.fit(&data, &mut rng(3)),
                objpert_split.fit(&data, &mut rng(3)),
            ),
        ];
        // The fits' (σ, λ) is a fresh calibration's, whether or not it was memoised.
        let (tau, sigma_out) = amp.tau_and_sigma_out().unwrap();
        let fresh = amp
            .calibrate_with(
                &amp.objpert.bounds().unwrap(),
                tau,
                sigma_out,
                Some(data.n_features()),
            )
            .unwrap();
        let again = amp.fit(&data, &mut rng(4)).unwrap();
        assert_eq!(sigma(&again), fresh.0);
        for (joint, split) in fits {
            let (joint, split) = (joint.unwrap(), split.unwrap());
            let (t, ts) = (total(&joint), total(&split));
            eprintln!(
                "total {t} (sigma {}), split {ts} (sigma {})",
                sigma(&joint),
                sigma(&split)
            );
            assert!(t <= 1.0 && t > 0.99, "joint {t}");
            assert!(ts < 0.95, "split {ts}");
            assert!(sigma(&joint) < sigma(&split));
        }
    }

    #[test]
    fn sag_reaches_the_tolerance_on_the_same_objective() {
        let (data, _) = logistic(800, 3, 3.0, 5);
        let mut a = paper(1.0);
        a.solver = AmpSolver::Sag;
        // A model is released only once ‖∇J(θ̂)‖ ≤ tau is checked.
        let m = a.fit(&data, &mut rng(6)).unwrap();
        assert!(m.privacy().epsilon <= 1.0);
    }

    /// The fit's `τ`: the default as it is on few rows; on 10⁷ public rows raised to its
    /// floor (`≈ 1e-10·nL = 1.4e-3`) with a sixteenth to spare, which the `σ` calibrated for
    /// the raised `τ` keeps above the floor; a given `τ` as given, even below the floor.
    #[test]
    fn a_default_tau_below_its_floor_is_raised_to_it() {
        let a = paper(1.0);
        let b = a.objpert.bounds().unwrap();
        let given = a.resolved(&b).unwrap();
        assert_eq!(a.calibrated(&b, given, 1000, 3).unwrap().tau, 5e-4);
        let n = 10_000_000;
        let Calibrated { tau, sigma, .. } = a.calibrated(&b, given, n, 3).unwrap();
        let floor = objpert_tau(n, 3, b.lipschitz, sigma);
        assert!(
            floor <= tau && tau <= floor * (1.0 + 1.0 / 16.0) && tau > 1e-3,
            "tau {tau}, floor {floor}"
        );
        let mut fixed = a.clone();
        fixed.tau = Some(5e-4);
        assert_eq!(fixed.calibrated(&b, given, n, 3).unwrap().tau, 5e-4);
    }

    /// On 5·10⁷ public rows the default `σ_out` (0.15 at paper 001's `L`) cannot hold the
    /// release box (radius `≈ nL/λ ≈ 5·10⁷`, against `2^51` steps of `0.15·2^-24`, about
    /// `2·10⁷`): it is raised to the least power of two that can, and `(σ, λ)` are a fresh
    /// calibration's for the `(τ, σ_out)` used. A given `σ_out` is kept, even too small.
    #[test]
    fn a_default_sigma_out_is_raised_to_hold_the_release_box() {
        let a = paper(1.0);
        let b = a.objpert.bounds().unwrap();
        let given = a.resolved(&b).unwrap();
        let (n, d) = (50_000_000, 3);
        let c = a.calibrated(&b, given, n, d).unwrap();
        assert!(c.sigma_out > given.1, "{}", c.sigma_out);
        assert_eq!(c.sigma_out, c.release_box.min_sigma_out());
        c.release_box.check_grid(c.sigma_out).unwrap();
        assert!(c.release_box.check_grid(0.5 * c.sigma_out).is_err());
        assert_eq!(
            a.calibrate_with(&b, c.tau, c.sigma_out, Some(d)).unwrap(),
            (c.sigma, c.lambda)
        );
        assert!(objpert_tau(n, d, b.lipschitz, c.sigma) <= c.tau);
        let mut fixed = a.clone();
        fixed.sigma_out = Some(given.1);
        let c = fixed.calibrated(&b, given, n, d).unwrap();
        assert_eq!(c.sigma_out, given.1);
        assert!(c.release_box.check_grid(c.sigma_out).is_err());
    }

    #[test]
    fn rejects_bad_hyper_parameters() {
        let (data, _) = logistic(100, 2, 1.0, 4);
        let hp = |a: Amp| match a.fit(&data, &mut rng(1)) {
            Err(Error::InvalidHyperParameter { name, .. }) => name,
            other => panic!("{other:?}"),
        };
        let mut a = paper(1.0);
        a.tau = Some(0.0);
        assert_eq!(hp(a), "tau");
        let mut a = paper(1.0);
        a.sigma_out = Some(f64::INFINITY);
        assert_eq!(hp(a), "sigma_out");
        // Defaults out of range name the parameter too: σ_out = 0.15·√2/L overflows.
        let mut a = Amp::new(Loss::Logistic);
        a.objpert.x_bound = 1e-310;
        assert_eq!(hp(a), "sigma_out");
        let mut a = paper(1.0);
        a.objpert.sigma_factor = 0.5;
        assert_eq!(hp(a), "sigma_factor");
    }
}
