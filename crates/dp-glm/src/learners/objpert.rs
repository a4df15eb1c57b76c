//! Objective perturbation (paper 001): minimise the sum-form loss plus a random linear term and
//! a ridge, release the exact minimiser. Shared with [`Amp`](super::Amp): the enforced bounds
//! (`L`, `β`), the perturbed objective and the `(σ, λ)` calibration.

use std::borrow::Cow;

use dp_accounting::{
    AccountantKind, Ledger, Mechanism, Neighbouring, ObjPertParams, calibrate_noise, epsilon_of,
    gaussian_sigma,
};
use dp_optim::{FiniteSum, GlmSum, Lbfgs, Objective, Sag};
use ndarray::{Array1, ArrayView1, ArrayViewMut1};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::{Budget, positive, public_n_note, report};
use crate::clipping::ClippedLoss;
use crate::data::Dataset;
use crate::error::{Error, Result, ensure};
use crate::glm::{GlmObjective, Scale};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::preprocess::BallProjector;

/// Objective perturbation for convex GLMs (Chaudhuri et al. 2011, Kifer et al. 2012; analysis
/// of paper 001, Redberg, Koskela, Wang 2023).
///
/// Draws `b ~ N(0, σ²I)` once and releases the exact minimiser of
/// `J(θ) = Σ_i ℓ(θ; z_i) + (λ/2)‖θ‖² + bᵀθ` (L-BFGS to `‖∇J‖ ≤ 1e-10·(nL + ‖b‖)`, checked
/// to `1e-9·(nL + ‖b‖)` before release). Rows of norm above `X` are scaled to norm `X` (a
/// per-record map, so it costs no privacy), which bounds every per-example Hessian by
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
/// relative `1e-4`, feasible end.
///
/// # Privacy
/// Paper 001, Thm 3.1 (privacy profile of ObjPert, `δ(ε)` from the PLRV `c + μ + |Z|`,
/// `c = −log(1 − β/λ)`, `μ = L²/(2σ²)`) or Thm 3.2 (its RDP), under add/remove — the only
/// relation that analysis covers. The default accountant is `exact` (the Thm 3.1 profile
/// evaluated directly); `rdp` uses Thm 3.2, `pld` the discretised PLRV. The bounds `L` and `β`
/// are enforced on every input (row projection, clipped loss), `λ > β` is checked, and `σ` is
/// calibrated before the data is read. The guarantee assumes the exact minimiser is released;
/// numerical solving is accurate to float precision (the tolerance above). For a release with
/// a certified tolerance use [`Amp`](super::Amp).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectivePerturbation {
    /// The loss (convex, bounded second derivative).
    pub loss: Loss,
    /// Budget; default `(1, 1e-5)`, exact accountant (Thm 3.1), add/remove.
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
}

impl ObjectivePerturbation {
    /// Objective perturbation with the defaults above.
    pub fn new(loss: Loss) -> Self {
        Self {
            loss,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Exact, Neighbouring::AddRemove),
            x_bound: 1.0,
            clip: None,
            lambda: None,
            sigma_factor: 1.3,
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

    /// The calibrated `(σ, λ)` for this budget.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::bounds`]; an invalid budget or λ; no `(σ, λ)` on the grid
    /// meets the rule; the accountant's errors (e.g. a replace-one budget).
    ///
    /// # Privacy
    /// `σ` is an evaluated feasible point of the mechanism's accountant (Thm 3.1 / 3.2 of
    /// paper 001): [`dp_accounting::calibrate_noise`]'s feasible end when `λ` is given, the
    /// rule's feasible end otherwise, so its ε is `≤` the target.
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

    /// Fits the model.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::calibrate`]; labels outside the loss's domain; a solver
    /// that does not reach the tolerance (nothing is released).
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let b = self.bounds()?;
        data.check_labels(&self.loss)?;
        let (sigma, lambda) = self.calibrate()?;
        let params = ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz)?;
        let rows = bounded_rows(data, self.x_bound)?;
        let objective = Perturbed::draw(&rows, &b, lambda, sigma, rng)?;
        let scale = rows.n_samples() as f64 * b.lipschitz + norm(objective.linear.view());
        let theta = objective.minimise(1e-10 * scale)?;
        let g = objective.gradient_norm(theta.view());
        if g > 1e-9 * scale {
            return Err(Error::Privacy(format!(
                "the solver stopped at ‖∇J‖ = {g:e} > {:e}: the exact minimiser was not found, \
                 nothing is released",
                1e-9 * scale
            )));
        }
        let mut ledger = Ledger::new(Neighbouring::AddRemove);
        ledger.record(
            Mechanism::objective_perturbation(params),
            1,
            "objective perturbation",
        );
        let noise = objpert_noise(sigma, lambda, &b);
        let mut notes = b.notes(self.x_bound);
        notes.extend(solver_n_note(self.budget.neighbouring));
        let report = report(&self.budget, ledger, noise, notes)?;
        LinearModel::new(theta, 0.0, self.loss, report)?.with_row_bound(self.x_bound)
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
/// `r = X(1 + KEEP_SLACK − 2(d + 4)u)`: a computed norm is within `(d/2 + 2)u` of the true
/// one (`u` the unit round-off), so every row's true norm is at most `X(1 + KEEP_SLACK)`, for
/// any `d`. Borrowed when no row is longer than `r` — as for rows already scaled to norm `X`
/// exactly, whose computed norms land a few `u` above it.
pub(crate) fn bounded_rows(data: &Dataset, x_bound: f64) -> Result<Cow<'_, Dataset>> {
    let d = data.n_features() as f64;
    let radius = x_bound * (1.0 + KEEP_SLACK - 2.0 * (d + 4.0) * f64::EPSILON);
    if data.row_norms().iter().all(|&r| r <= radius) {
        return Ok(Cow::Borrowed(data));
    }
    let x = BallProjector::new(radius)?.transform(data.x())?;
    Ok(Cow::Owned(Dataset::new(x, data.y().to_owned())?))
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
    let sigma_at = |lambda: f64| -> Result<f64> {
        if let Some(s) = missed(lambda) {
            return Err(Error::Privacy(format!(
                "at lambda = {lambda} the output noise alone (sensitivity/std = {s}) misses \
                 the target: no sigma can meet it"
            )));
        }
        let c = calibrate_noise(target, budget.accountant, budget.neighbouring, 1, |s| {
            make(ObjPertParams::new(s, lambda, b.beta, b.lipschitz)?)
        })?;
        Ok(c.value)
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
    let reference = gaussian_sigma(target.epsilon(), target.delta(), b.lipschitz)?;
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
        let eps = epsilon_of(
            budget.accountant,
            budget.neighbouring,
            &mech,
            1,
            target.delta(),
        )?;
        Ok(eps - target.epsilon())
    };
    const TOP: i32 = 600;
    let top = excess(ceiling, lambda_k(TOP))?;
    if top > 0.0 {
        return Err(Error::Privacy(format!(
            "no lambda up to {:e} gives sigma <= {factor}·sigma_Gauss",
            lambda_k(TOP)
        )));
    }
    let first = excess(ceiling, lambda_k(0))?;
    // The accepted k, and ε − target at (ceiling, λ_k).
    let (k, at_ceiling) = if first <= 0.0 {
        (0, first)
    } else {
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
    // feasible it is the answer. Searched in log σ.
    let at_reference = excess(reference, lambda)?;
    if at_reference <= 0.0 {
        return Ok((reference, lambda));
    }
    let (log_sigma, _) = smallest_feasible(
        (reference.ln(), at_reference),
        (ceiling.ln(), at_ceiling),
        |a, b| b - a <= SIGMA_TOL.ln_1p(),
        leaning(SIGMA_TOL),
        |x| excess(x.exp(), lambda),
    )?;
    // The σ returned is the one that was evaluated: exp(x) for a point the search evaluated,
    // or the ceiling itself (exp(ln c) may round below c).
    let sigma = if log_sigma == ceiling.ln() {
        ceiling
    } else {
        log_sigma.exp()
    };
    Ok((sigma, lambda))
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

/// `J(θ) = Σ_i ℓ(θ; z_i) + (λ/2)‖θ‖² + bᵀθ` with its linear term `b`.
pub(crate) struct Perturbed<'a> {
    glm: GlmObjective<'a>,
    /// The random linear term `b`.
    pub(crate) linear: Array1<f64>,
}

impl<'a> Perturbed<'a> {
    /// Draws `b ~ N(0, σ²I)` (once) and builds `J` on `data` with the bounds' loss.
    pub(crate) fn draw<R: Rng + ?Sized>(
        data: &'a Dataset,
        b: &ObjPertBounds,
        lambda: f64,
        sigma: f64,
        rng: &mut R,
    ) -> Result<Self> {
        // Values relative to θ = 0 (same gradient and minimiser): finite for labels near
        // f64::MAX, whose losses at θ = 0 are not.
        let glm = match b.clipped {
            Some(c) => GlmObjective::clipped(data, c, lambda, Scale::Sum)?,
            None => GlmObjective::new(data, b.loss, lambda, Scale::Sum)?,
        }
        .relative_to_zero();
        // `b` stays continuous-law floating-point noise, deliberately not a grid release:
        // ObjPert's proof (a change of variables `b ↔ θ*` through the density of `b`) needs a
        // density; with grid-valued `b` the neighbour's `b' = b + ∇ℓ(θ*; x) − ∇ℓ(θ*; x')` is off
        // the grid, so the exact minimiser would be impossible under the neighbour (ε = ∞).
        // `b` is never released: what leaves the library is the solver's approximate
        // minimiser — for AMP with grid-safe output noise on top (dp_optim's noise docs), whose
        // analysis needs only `‖∇J‖ ≤ τ`, so the released low-order bits carry no data. Plain
        // ObjPert releases the solver's output itself; its low-order bits are not covered by
        // any grid argument (use AMP when that matters).
        let mut linear = Array1::zeros(data.n_features());
        linear.mapv_inplace(|_| {
            let z: f64 = StandardNormal.sample(rng);
            sigma * z
        });
        Ok(Self { glm, linear })
    }

    /// `‖∇J(θ)‖`.
    pub(crate) fn gradient_norm(&self, theta: ArrayView1<'_, f64>) -> f64 {
        let mut g = Array1::zeros(self.dim());
        self.value_grad(theta, g.view_mut());
        norm(g.view())
    }

    /// L-BFGS from 0 to `‖∇J‖ ≤ tol` (the result is checked by the caller).
    pub(crate) fn minimise(&self, tol: f64) -> Result<Array1<f64>> {
        self.minimise_from(Array1::zeros(self.dim()), tol)
    }

    /// L-BFGS from `x0` to `‖∇J‖ ≤ tol`.
    pub(crate) fn minimise_from(&self, x0: Array1<f64>, tol: f64) -> Result<Array1<f64>> {
        let sol = Lbfgs::new()
            .max_iters(10_000)
            .grad_tol(tol)
            .minimize(self, x0.view(), None)?;
        Ok(sol.x)
    }

    /// SAG from `x0` to `‖∇J‖ ≤ tol`, with the per-term smoothness `β + λ/n`.
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

/// `J` as a finite sum of GLM terms with the regulariser `(λ/2)‖θ‖² + bᵀθ` (for SAG).
impl FiniteSum for Perturbed<'_> {
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

impl GlmSum for Perturbed<'_> {
    fn term_scalar(&self, x: ArrayView1<'_, f64>, i: usize) -> f64 {
        self.glm.term_scalar(x, i)
    }

    fn add_scaled_row(&self, i: usize, c: f64, grad: ArrayViewMut1<'_, f64>) {
        self.glm.add_scaled_row(i, c, grad);
    }
}

impl Objective for Perturbed<'_> {
    fn dim(&self) -> usize {
        self.linear.len()
    }

    fn value(&self, theta: ArrayView1<'_, f64>) -> f64 {
        self.glm.value(theta) + self.linear.dot(&theta)
    }

    fn value_grad(&self, theta: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
        let v = self.glm.value_grad(theta, grad.view_mut());
        grad += &self.linear;
        v + self.linear.dot(&theta)
    }
}

/// The note saying that the solver's stopping tolerance (relative to `n·L`) uses the number
/// of rows, treated as public under add/remove.
pub(crate) fn solver_n_note(relation: Neighbouring) -> Option<String> {
    public_n_note(
        relation,
        "the solver's stopping tolerance is relative to n·L (the released minimiser is exact \
         to within it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::{accuracy, accuracy_of, logistic, non_private, rng};

    #[test]
    fn releases_the_exact_minimiser_of_its_perturbed_objective() {
        let (data, _) = logistic(1500, 4, 3.0, 1);
        let learner = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        let model = learner.fit(&data, &mut rng(8)).unwrap();
        // The same stream draws the same b: rebuild J and check the release minimises it.
        let b = learner.bounds().unwrap();
        let (sigma, lambda) = learner.calibrate().unwrap();
        let j = Perturbed::draw(&data, &b, lambda, sigma, &mut rng(8)).unwrap();
        let scale = 1500.0 * b.lipschitz + norm(j.linear.view());
        let g = j.gradient_norm(model.coef());
        assert!(g <= 1e-9 * scale, "‖∇J‖ = {g}, scale {scale}");
        assert!(norm(j.linear.view()) > 0.0);
    }

    #[test]
    fn spends_at_most_the_target_with_a_complete_report_and_learns() {
        let (data, theta) = logistic(3000, 4, 4.0, 2);
        let test = crate::learners::testdata::logistic_with(&theta, 5000, &mut rng(3));
        let m = ObjectivePerturbation::new(Loss::Logistic)
            .budget(1.0, 1e-5)
            .fit(&data, &mut rng(4))
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.95, "{}", r.epsilon);
        assert_eq!(r.neighbouring, Neighbouring::AddRemove);
        assert_eq!(r.accountant, AccountantKind::Exact);
        assert_eq!(r.ledger.entries().len(), 1);
        let names: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["sigma", "lambda", "lipschitz", "beta"]);
        assert!(!r.notes.is_empty());
        let acc = accuracy(&m, &test);
        let base = accuracy_of(&non_private(&data, Loss::Logistic, 0.0), &test);
        assert!(acc > base - 0.03, "accuracy {acc}, non-private {base}");
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

    #[test]
    fn paper_defaults_and_the_lambda_rule() {
        let mut l = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
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
