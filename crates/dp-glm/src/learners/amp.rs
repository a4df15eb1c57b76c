//! Approximate minima perturbation with gradient clipping (paper 001, Alg. 1).

use dp_accounting::{AccountantKind, GridGaussian, Ledger, Mechanism, Neighbouring, ObjPertParams};
use dp_optim::Noise;
use ndarray::Array1;
use rand::Rng;

use super::objpert::{Perturbed, bounded_rows, calibrate_objpert, objpert_noise};
use super::{ObjPertBounds, ObjectivePerturbation, positive, report};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::loss::Loss;
use crate::model::LinearModel;

/// Approximate minima perturbation (Iyengar et al. 2019) with gradient clipping — paper 001,
/// Algorithm 1.
///
/// Builds the perturbed objective `J` of [`ObjectivePerturbation`] (same enforced bounds: rows
/// scaled to norm `≤ X`, the clipped loss when gradients are unbounded), draws `b` **once**,
/// minimises `J` with L-BFGS until `‖∇J(θ̂)‖ ≤ τ` — checked on the exact objective right before
/// the release; if the solver stops short nothing is released and `b` is never redrawn — and
/// releases `θ̂ + N(0, σ_out²I)`. `(σ, λ)` follow paper 001's rule for the **composed**
/// mechanism (MATH §6). Paper 001's defaults: `τ = 5e-4`, `σ_out = 0.15`; for its data (unit
/// rows plus a bias feature) set `x_bound = √2`, giving `L = √2`, `β = 1/2`.
///
/// # Privacy
/// Paper 001, Thm 4.1: `J` is `λ`-strongly convex, so `‖θ̂ − θ^P‖ ≤ τ/λ` and the release is
/// ObjPert (Thm 3.1 / 3.2) composed with a Gaussian mechanism of sensitivity `2τ/λ` and std
/// `σ_out`, under add/remove. The ledger records both mechanisms; the default accountant (PLD)
/// composes the ObjPert PLRV with the Gaussian's, tighter than the paper's RDP (`rdp` gives
/// the paper's analysis). The solver and its hyper-parameters cost no privacy: only
/// `‖∇J(θ̂)‖ ≤ τ` matters, and it is enforced. The report states that public certificate
/// (`tau`), never the achieved `‖∇J(θ̂)‖`, which is computed from the data without noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Amp {
    /// Loss, budget (default accountant PLD), `X`, clip, λ and the λ rule's factor, as in
    /// [`ObjectivePerturbation`].
    pub objpert: ObjectivePerturbation,
    /// Gradient-norm tolerance `τ` (default 5e-4).
    pub tau: f64,
    /// Output noise `σ_out` (default 0.15).
    pub sigma_out: f64,
    /// The solver tried first (default L-BFGS); if it stops with `‖∇J‖ > τ` the other one
    /// continues from its point on the same `J`.
    pub solver: AmpSolver,
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
    /// AMP with paper 001's defaults (`τ = 5e-4`, `σ_out = 0.15`, PLD accounting).
    pub fn new(loss: Loss) -> Self {
        let mut objpert = ObjectivePerturbation::new(loss);
        objpert.budget.accountant = AccountantKind::Pld;
        Self {
            objpert,
            tau: 5e-4,
            sigma_out: 0.15,
            solver: AmpSolver::Lbfgs,
        }
    }

    /// Sets the target (ε, δ).
    pub fn budget(mut self, epsilon: f64, delta: f64) -> Self {
        self.objpert = self.objpert.budget(epsilon, delta);
        self
    }

    /// The calibrated `(σ, λ)` of the composed mechanism, with the idealised output release
    /// (sensitivity `2τ/λ`); [`Amp::fit`] calibrates with the grid release's rounding slack
    /// `γ√d` added (dp_optim's noise docs), so its `(σ, λ)` can be a hair larger.
    ///
    /// # Errors
    /// As [`ObjectivePerturbation::calibrate`], and τ or σ_out not finite and positive.
    ///
    /// # Privacy
    /// As [`ObjectivePerturbation::calibrate`], for [`Mechanism::amp`] (paper 001, Thm 4.1):
    /// an evaluated feasible point, so the composed ε is `≤` the target.
    pub fn calibrate(&self) -> Result<(f64, f64)> {
        let (tau, sigma_out) = self.checked()?;
        let b = self.objpert.bounds()?;
        self.calibrate_with(&b, tau, sigma_out, 0.0, None)
    }

    fn checked(&self) -> Result<(f64, f64)> {
        Ok((
            positive("tau", self.tau)?,
            positive("sigma_out", self.sigma_out)?,
        ))
    }

    /// Calibrates with `slack` added to the output release's sensitivity `2τ/λ` (the grid
    /// release's rounding slack; 0 for the idealised mechanism [`Amp::calibrate`] prices), by
    /// stating the mechanism with `τ + λ·slack/2`, and with the output noise's discrete
    /// Gaussian `grid` (none for the idealised mechanism).
    fn calibrate_with(
        &self,
        b: &ObjPertBounds,
        tau: f64,
        sigma_out: f64,
        slack: f64,
        grid: Option<GridGaussian>,
    ) -> Result<(f64, f64)> {
        let o = &self.objpert;
        calibrate_objpert(
            &o.budget,
            b,
            o.lambda,
            o.sigma_factor,
            |p| {
                let m = Mechanism::amp(p, tau + p.lambda * slack / 2.0, sigma_out)?;
                Ok(match grid {
                    Some(g) => m.with_grid(g),
                    None => m,
                })
            },
            // The output noise: a Gaussian of sensitivity 2τ/λ (paper 001, Thm 4.1), plus the
            // grid rounding's slack.
            |lambda| Some((sigma_out, 2.0 * tau / lambda + slack)),
        )
    }

    /// Fits the model.
    ///
    /// # Errors
    /// As [`Amp::calibrate`]; labels outside the loss's domain; the solver stopping with
    /// `‖∇J‖ > τ` (nothing is released).
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let (tau, sigma_out) = self.checked()?;
        let o = &self.objpert;
        let b = o.bounds()?;
        data.check_labels(&o.loss)?;
        // The output is a grid release (dp_optim's noise docs): calibrate with its slack.
        let grid = Noise::Gaussian { std: sigma_out }.on_grid(None)?;
        let slack = grid.slack(data.n_features());
        let discrete = grid.discrete_gaussian(data.n_features())?;
        let (sigma, lambda) = self.calibrate_with(&b, tau, sigma_out, slack, Some(discrete))?;
        let params = ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz)?;
        let rows = bounded_rows(data, o.x_bound)?;
        let objective = Perturbed::draw(&rows, &b, lambda, sigma, rng)?;
        // The final check recomputes the same gradient, so the solver may stop at τ itself; a
        // hair below keeps any reordering of the norm's sum from failing a converged run.
        let aim = (1.0 - 1e-6) * tau;
        let zero = Array1::zeros(data.n_features());
        let sag = |x0, rng: &mut R| objective.minimise_sag(x0, b.beta, aim, rng);
        let mut theta = match self.solver {
            AmpSolver::Lbfgs => objective.minimise_from(zero, aim)?,
            AmpSolver::Sag => sag(zero, rng)?,
        };
        if objective.gradient_norm(theta.view()) > tau {
            theta = match self.solver {
                AmpSolver::Lbfgs => sag(theta, rng)?,
                AmpSolver::Sag => objective.minimise_from(theta, aim)?,
            };
        }
        let g = objective.gradient_norm(theta.view());
        if g.is_nan() || g > tau {
            return Err(Error::Privacy(format!(
                "the solver stopped at ‖∇J‖ = {g:e} > tau = {tau:e}: nothing is released"
            )));
        }
        // Grid-safe output release (dp_optim's noise docs): θ rounded to the grid plus exact
        // discrete Gaussian noise; the rounding's slack is in the sensitivity below.
        let mut released = theta;
        grid.add_to(rng, released.view_mut())?;
        let mut ledger = Ledger::new(Neighbouring::AddRemove);
        ledger.record(
            Mechanism::objective_perturbation(params),
            1,
            "objective perturbation",
        );
        ledger.record(
            Mechanism::gaussian(sigma_out, 2.0 * tau / lambda + slack)?.with_grid(discrete),
            1,
            "output noise on the approximate minimiser (sensitivity 2·tau/lambda + grid slack)",
        );
        let mut noise = objpert_noise(sigma, lambda, &b);
        noise.push(("tau".to_string(), tau));
        noise.push(("sigma_out".to_string(), sigma_out));
        // ‖∇J(θ̂)‖ itself is computed from the data without noise: only the public
        // certificate ‖∇J(θ̂)‖ ≤ τ (checked above) goes into the report.
        let report = report(&o.budget, ledger, noise, b.notes(o.x_bound))?;
        LinearModel::new(released, 0.0, o.loss, report)?.with_row_bound(o.x_bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::{
        accuracy, accuracy_of, logistic, logistic_with, non_private, rng,
    };

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
        let e = r.ledger.entries();
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
        let p = ObjPertParams::new(sigma, lambda, b.beta, b.lipschitz).unwrap();
        let amp = Mechanism::amp(p, a.tau, a.sigma_out).unwrap();
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
        acc.compose(&Mechanism::amp(less, a.tau, a.sigma_out).unwrap(), 1)
            .unwrap();
        assert!(acc.epsilon(1e-5).unwrap() > 1.0);
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

    #[test]
    fn rejects_bad_hyper_parameters() {
        let (data, _) = logistic(100, 2, 1.0, 4);
        let hp = |a: Amp| match a.fit(&data, &mut rng(1)) {
            Err(Error::InvalidHyperParameter { name, .. }) => name,
            other => panic!("{other:?}"),
        };
        let mut a = paper(1.0);
        a.tau = 0.0;
        assert_eq!(hp(a), "tau");
        let mut a = paper(1.0);
        a.sigma_out = f64::INFINITY;
        assert_eq!(hp(a), "sigma_out");
        let mut a = paper(1.0);
        a.objpert.sigma_factor = 0.5;
        assert_eq!(hp(a), "sigma_factor");
    }
}
