//! Paper 003 (Arora et al., smooth non-negative GLMs): noisy projected GD (Alg. 1) against the
//! JL method (Alg. 2) in low and in high dimension.

use dp_glm::{Dataset, JlNoisyGd, Loss, NoisyProjectedGd};
use dp_optim::seeded_rng;
use ndarray::Array1;

use super::synthetic::{bounded_regression, glm, mean_loss, mean_over, minimiser};
use crate::error::Result;
use crate::experiment::{Artifact, Experiment, RunContext};
use crate::figure::{Figure, Series};
use crate::format::parameter;

/// Test risk of Alg. 1 and Alg. 2 against ε, in a low- and a high-dimensional setting.
pub(crate) struct NoisyGdVsJl;

const DELTA: f64 = 1e-5;
/// `B`, the norm bound both algorithms are given (`‖w*‖ = 0.8 ≤ B`).
const RADIUS: f64 = 1.0;
/// The number of coordinates carrying the signal (the rest hold small isotropic noise).
const INFORMATIVE: usize = 5;

/// One panel: `(n, d)` and its label.
struct Setting {
    n: usize,
    d: usize,
    label: &'static str,
}

impl NoisyGdVsJl {
    fn panel(
        &self,
        ctx: &mut RunContext,
        setting: &Setting,
        epsilons: &[f64],
        seeds: u64,
    ) -> Result<Artifact> {
        let (n, d) = (setting.n, setting.d);
        let loss = Loss::Squared;
        let (train, _) = bounded_regression(n, d, INFORMATIVE, 0.8, 0.1, (3, 30))?;
        let (test, _) = bounded_regression(5_000, d, INFORMATIVE, 0.8, 0.1, (3, 31))?;
        let base = |eps: f64| {
            let mut m = NoisyProjectedGd::new(loss)
                .budget(eps, DELTA)
                .radius(RADIUS);
            // φ(0, y) = y²/2 ≤ 1/2 for |y| ≤ 1.
            m.y_bound = 0.5_f64.sqrt();
            // The paper's T = n (the learner defaults to min(n, 1000)).
            m.paper_steps = true;
            m
        };
        let risk = |w: ndarray::ArrayView1<'_, f64>, data: &Dataset| mean_loss(w, data, loss);
        let mut gd = Vec::new();
        let mut jl = Vec::new();
        let mut k_used = 0;
        for &eps in epsilons {
            gd.push((
                eps,
                mean_over(seeds, |s| {
                    let m = glm(base(eps).fit(&train, &mut seeded_rng(100 + s)))?;
                    risk(m.coef(), &test)
                })?,
            ));
            let jl_learner = JlNoisyGd {
                base: base(eps),
                k: None,
            };
            k_used = glm(jl_learner.dimension(n, d))?;
            jl.push((
                eps,
                mean_over(seeds, |s| {
                    let m = glm(jl_learner.fit(&train, &mut seeded_rng(200 + s)))?;
                    risk(m.coef(), &test)
                })?,
            ));
            ctx.progress()
                .step(&format!("{}: ε = {eps}", setting.label));
        }
        let zero = risk(Array1::zeros(d).view(), &test)?;
        let best = minimiser(&train, loss, Some(RADIUS))?;
        let non_private = risk(best.view(), &test)?;
        let fig = Figure::new(
            format!("test-risk-vs-epsilon-{}", setting.label),
            format!("{}: n = {n}, d = {d}", setting.label),
            "ε",
            "test risk (mean squared loss / 2)",
        )
        .log_x()
        .with_ref_line(zero, Some("zero model"))
        .with_ref_line(non_private, Some("non-private, ‖w‖ ≤ B"))
        .with_series(Series::line_with_points("noisy projected GD (Alg. 1)", gd))
        .with_series(Series::line_with_points(
            format!("JL method (Alg. 2), k = {k_used} at the largest ε"),
            jl,
        ));
        Ok(Artifact::figure(fig).with_note(format!(
            "Squared loss, ‖x‖ ≤ 1 with the signal in {INFORMATIVE} coordinates (the others \
             carry small isotropic noise), |y| ≤ 1, ‖w*‖ = 0.8, B = {RADIUS}, δ = {}, mean of \
             {seeds} seeds; both algorithms calibrated exactly (replace-one, T = n steps). \
             Paper 003's claim: the JL method's risk does not grow with d, so it should match \
             Alg. 1 in low dimension and beat it when d ≫ n.",
            parameter(DELTA)
        )))
    }
}

impl Experiment for NoisyGdVsJl {
    fn id(&self) -> &'static str {
        "003-noisy-gd-vs-jl"
    }

    fn title(&self) -> &'static str {
        "Noisy projected GD against the JL method"
    }

    fn paper(&self) -> &'static str {
        "003 Alg. 1 vs Alg. 2"
    }

    fn description(&self) -> &'static str {
        "Test risk against ε of noisy projected GD and of the JL method on a smooth \
         (squared-loss) GLM with bounded data, in low (d ≪ n) and high (d ≫ n) dimension."
    }

    fn reading(&self) -> &'static str {
        "Compare the two curves in each panel between the zero model's risk (top line) and the \
         non-private risk (bottom line): the paper's claim is that they coincide in low \
         dimension and the JL method is lower when d ≫ n."
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let epsilons: &[f64] = if quick {
            &[0.5, 8.0]
        } else {
            &[0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
        };
        let seeds = if quick { 2 } else { 5 };
        let settings = if quick {
            [
                Setting {
                    n: 2_000,
                    d: 10,
                    label: "low-dimension",
                },
                Setting {
                    n: 300,
                    d: 1_500,
                    label: "high-dimension",
                },
            ]
        } else {
            [
                Setting {
                    n: 5_000,
                    d: 20,
                    label: "low-dimension",
                },
                Setting {
                    n: 1_000,
                    d: 5_000,
                    label: "high-dimension",
                },
            ]
        };
        ctx.progress()
            .set_steps((settings.len() * epsilons.len()) as u64);
        settings
            .iter()
            .map(|s| self.panel(ctx, s, epsilons, seeds))
            .collect()
    }
}
