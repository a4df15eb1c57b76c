//! Paper 000 (Song, Steinke, Thakkar, Thakurta 2021, *Evading the curse of dimensionality in
//! unconstrained private GLMs*): Fig. 2 (DP-SGD on Cod-RNA with zero features appended,
//! Gaussian vs Gamma-ball noise) and App. D.2 (the bias of aggressive clipping).

use dp_glm::{ClippedLoss, Dataset, DpGd, DpSgd, GlmObjective, Loss, Scale, SgdNoise};
use dp_optim::{Averaging, Lbfgs, Objective, seeded_rng};
use ndarray::{Array1, Array2};
use rayon::prelude::*;

use super::synthetic::{glm, mean_over};
use crate::data::cod_rna;
use crate::error::{Error, Result};
use crate::experiment::{Artifact, Experiment, RunContext};
use crate::figure::{Figure, Series};

/// Fig. 2: test accuracy against the dimension after appending zero features.
pub(crate) struct Fig2Dimension;

const EPSILON: f64 = 5.0;
const DELTA: f64 = 1e-5;

impl Experiment for Fig2Dimension {
    fn id(&self) -> &'static str {
        "000-fig2-codrna-dimension"
    }

    fn title(&self) -> &'static str {
        "DP-SGD on Cod-RNA: Gaussian against Gamma-ball noise as the dimension grows"
    }

    fn paper(&self) -> &'static str {
        "000 Fig. 2"
    }

    fn description(&self) -> &'static str {
        "Test accuracy of DP-SGD (ε = 5, δ = 1e-5, batch 250, 10 epochs, best learning rate on \
         the {1,2,5}×10^i grid) on Cod-RNA padded with zero features to dimension d, with \
         Gaussian and with Gamma-ball noise."
    }

    fn reading(&self) -> &'static str {
        "Follow each curve from left to right: the paper's claim is that the Gaussian curve stays \
         flat as zero features are appended while the Gamma-ball curve falls, because only the \
         Gaussian's noise on the data's own coordinates is independent of d."
    }

    fn needs_data(&self) -> bool {
        true
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let split = cod_rna(ctx.require_data()?)?;
        let dims: &[usize] = if quick {
            &[9, 100, 1000]
        } else {
            &[9, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000]
        };
        let rates: &[f64] = if quick {
            &[0.1, 1.0, 5.0]
        } else {
            &[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
        };
        let seeds = if quick { 1 } else { 2 };
        let (train, test) = (&split.train, &split.test);
        let native = train.x.ncols();
        ctx.progress().set_steps(dims.len() as u64);
        let accuracy = |coef: ndarray::ArrayView1<'_, f64>| {
            // Appended features are zero, so only the native coefficients act on a test row.
            let native_coef: Array1<f64> = coef.iter().take(native).copied().collect();
            let z = test.x.dot(&native_coef);
            let right = z
                .iter()
                .zip(&test.y)
                .filter(|&(z, y)| (if *z >= 0.0 { 1.0 } else { -1.0 }) == *y)
                .count();
            right as f64 / test.y.len() as f64
        };
        let noises = [SgdNoise::Gaussian, SgdNoise::GammaBall];
        let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); noises.len()];
        // The noise multipliers seed 0 was calibrated to at the first (d, learning rate).
        let mut calibrated = Vec::new();
        for &d in dims {
            let mut x = Array2::zeros((train.x.nrows(), d.max(native)));
            for j in 0..native {
                x.column_mut(j).assign(&train.x.column(j));
            }
            let data = glm(Dataset::new(x, train.y.clone()))?;
            // Every (noise, learning rate, seed) is an independent task; results are reduced
            // in task order, so the numbers do not depend on the number of threads.
            let per_noise = rates.len() * seeds as usize;
            let runs = (0..noises.len() * per_noise)
                .into_par_iter()
                .map(|k| {
                    let (noise, lr) =
                        (noises[k / per_noise], rates[k % per_noise / seeds as usize]);
                    let seed = (k % seeds as usize) as u64;
                    let mut learner = DpSgd::new(Loss::Logistic).budget(EPSILON, DELTA);
                    learner.batch_size = 250;
                    learner.epochs = 10;
                    learner.clip = 1.0;
                    learner.learning_rate = lr;
                    learner.noise = noise;
                    // The Gamma ball is floating-point noise: a reproduction, not a release.
                    learner.allow_float_noise = true;
                    let m = glm(learner.fit(&data, &mut seeded_rng(7_000 + seed)))?;
                    let note = (d == dims[0] && lr == rates[0] && seed == 0).then(|| {
                        format!(
                            "{noise:?}: {}",
                            m.privacy()
                                .noise
                                .first()
                                .map(|(k, v)| format!("{k} = {v:.4}"))
                                .unwrap_or_default()
                        )
                    });
                    Ok((accuracy(m.coef()), note))
                })
                .collect::<Result<Vec<_>>>()?;
            for (points, by_rate) in series.iter_mut().zip(runs.chunks(per_noise)) {
                let mut best = f64::NEG_INFINITY;
                for by_seed in by_rate.chunks(seeds as usize) {
                    // The mean over the seeds, summed in seed order.
                    let mut total = 0.0;
                    for (acc, note) in by_seed {
                        total += acc;
                        calibrated.extend(note.clone());
                    }
                    best = best.max(total / seeds as f64);
                }
                points.push((d as f64, best));
            }
            ctx.progress().step(&format!("d = {d}"));
        }
        let mut fig = Figure::new(
            "test-accuracy-vs-dimension",
            "Cod-RNA, DP-SGD, ε = 5",
            "dimension d (zero features appended)",
            "test accuracy",
        )
        .log_x();
        for (noise, points) in noises.into_iter().zip(series) {
            let label = match noise {
                SgdNoise::Gaussian => "Gaussian noise",
                SgdNoise::GammaBall => "Gamma-ball noise",
            };
            fig = fig.with_series(Series::line_with_points(label, points));
        }
        Ok(vec![Artifact::figure(fig).with_note(format!(
            "Preprocessing as in the datasets' README, §2 (min-max to [−0.5, 0.5] on train, rows \
             projected to radius √(8/9), constant 1/3 appended: d = 9, ‖x‖ ≤ 1); clip 1; PLD \
             accounting, add/remove; calibrated noise: {}. The paper reports σ = 0.63 and \
             Gamma scale 0.57 from its own accounting. Mean of {seeds} seed(s); the learning \
             rate is picked by test accuracy for each point, as in the paper (a non-private \
             choice). Expected shape (paper): Gaussian accuracy flat in d, Gamma-ball accuracy \
             falling as d grows, since the Gamma ball's noise norm grows like d while the \
             Gaussian's component on the data's 9 coordinates does not depend on d.",
            calibrated.join(", ")
        ))])
    }
}

/// App. D.2: the clipped objective's minimiser and its excess risk on the paper's example.
pub(crate) struct AppD2ClippingBias;

impl Experiment for AppD2ClippingBias {
    fn id(&self) -> &'static str {
        "000-appd2-clipping-bias"
    }

    fn title(&self) -> &'static str {
        "The bias of aggressive clipping"
    }

    fn paper(&self) -> &'static str {
        "000 App. D.2 (Thm D.4)"
    }

    fn description(&self) -> &'static str {
        "Logistic regression on {(1/2, +1)}×2m ∪ {(1, −1)}×m (θ* = 0): the minimiser of the \
         clipped objective and its excess risk against the clipping norm B, with DP-GD (ε = 1) \
         run at the same B."
    }

    fn reading(&self) -> &'static str {
        "Read both figures against the clipping norm B: below B = 1/4 the clipped minimiser \
         moves away from θ* = 0 along 2·log(1/B − 1) and the excess risk grows as B shrinks, \
         the bias of Thm D.4 that no amount of data removes; above B = 1 it vanishes."
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let m = if quick { 500 } else { 5_000 };
        let seeds = if quick { 3 } else { 10 };
        let n = 3 * m;
        let x = Array2::from_shape_fn((n, 1), |(i, _)| if i < 2 * m { 0.5 } else { 1.0 });
        let y = Array1::from_shape_fn(n, |i| if i < 2 * m { 1.0 } else { -1.0 });
        let data = glm(Dataset::new(x, y))?;
        let original = glm(GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Mean))?;
        let risk = |t: f64| original.value(Array1::from_elem(1, t).view());
        let floor = risk(0.0);
        let clips: Vec<f64> = (0..if quick { 9 } else { 25 })
            .map(|k| {
                let steps = if quick { 8.0 } else { 24.0 };
                10f64.powf(-3.0 + 3.0 * k as f64 / steps)
            })
            .collect();
        ctx.progress().set_steps(clips.len() as u64);
        let (mut minimiser, mut closed, mut excess, mut dpgd) = (vec![], vec![], vec![], vec![]);
        for &b in &clips {
            let clipped = ClippedLoss::new(Loss::Logistic, b)
                .map_err(|e| Error::Experiment(format!("clipped loss: {e}")))?;
            let obj = glm(GlmObjective::clipped(&data, clipped, 0.0, Scale::Mean))?;
            let theta = Lbfgs::new()
                .max_iters(500)
                .grad_tol(1e-12)
                .minimize(&obj, Array1::zeros(1).view(), None)
                .map_err(|e| Error::Experiment(format!("optimiser: {e}")))?
                .x[0];
            minimiser.push((b, theta));
            if b < 0.25 {
                closed.push((b, 2.0 * (1.0 / b - 1.0).ln()));
            }
            excess.push((b, (risk(theta) - floor).max(1e-16)));
            let r = mean_over(seeds, |s| {
                let mut l = DpGd::new(Loss::Logistic).budget(1.0, 1e-5);
                l.clip = b;
                l.steps = 200;
                l.learning_rate = 1.0 / b;
                l.averaging = Averaging::Tail(0.5);
                let model = glm(l.fit(&data, &mut seeded_rng(300 + s)))?;
                Ok(risk(model.coef()[0]) - floor)
            })?;
            dpgd.push((b, r.max(1e-16)));
            ctx.progress().step(&format!("B = {b:.4}"));
        }
        let theta_fig = Figure::new(
            "clipped-minimiser",
            format!("Minimiser of the clipped objective (n = {n})"),
            "clipping norm B",
            "θ_B (θ* = 0)",
        )
        .log_x()
        .with_series(Series::line_with_points(
            "argmin of the clipped loss",
            minimiser,
        ))
        .with_series(Series::line("2·log(1/B − 1) (B < 1/4)", closed).dashed());
        let risk_fig = Figure::new(
            "clipping-excess-risk",
            "Excess empirical risk caused by clipping",
            "clipping norm B",
            "L(θ) − L(θ*)",
        )
        .log_x()
        .log_y()
        .with_series(Series::line_with_points("clipped minimiser", excess))
        .with_series(Series::line_with_points(
            format!("DP-GD at clip B (ε = 1, mean of {seeds})"),
            dpgd,
        ));
        let note = "Paper 000's Thm D.4 instance. With B below 1/4 the clipped objective's \
                    minimiser is 2·log(1/B − 1) (checked to 1e-9 in dp-glm's tests), so the \
                    excess risk grows like log(1/B) however much data there is; with B ≥ 1 \
                    (the largest gradient norm) clipping is inactive and the bias vanishes.";
        Ok(vec![
            Artifact::figure(theta_fig).with_note(note),
            Artifact::figure(risk_fig),
        ])
    }
}
