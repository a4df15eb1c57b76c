//! Paper 002 (Varshney, Thakurta, Jain 2022): excess risk of one-pass private linear
//! regression (DP-AMBSSGD, DP-SSGD) against DP-SGD, sufficient-statistics perturbation and
//! the non-private solution, as the sample size and the dimension grow.

use dp_glm::{Dataset, DpAmbSsgd, DpSgd, DpSsgd, LinearModel, Loss, Ssp};
use dp_optim::seeded_rng;
use ndarray::{Array1, ArrayView1};

use super::synthetic::{gaussian_linreg, glm, mean_over, minimiser};
use crate::error::Result;
use crate::experiment::{Artifact, Experiment, RunContext};
use crate::figure::{Figure, Series};

const EPSILON: f64 = 1.0;
const DELTA: f64 = 1e-6;
/// Standard deviation of the label noise.
const NOISE: f64 = 1.0;

/// The methods compared, in legend order.
const METHODS: [&str; 5] = ["DP-AMBSSGD", "DP-SSGD", "DP-SGD", "AdaSSP", "non-private"];

/// Population excess risk of `w` for `x ~ N(0, I)` and the loss `(⟨x,w⟩ − y)²/2`:
/// `‖w − w*‖²/2`.
fn excess(w: ArrayView1<'_, f64>, w_star: &Array1<f64>) -> f64 {
    let e = &w - w_star;
    0.5 * e.dot(&e)
}

/// Fits method `m` (an index into [`METHODS`]) on `data` (`n × d`) with `seed`; the
/// hyper-parameters follow the public scales of the problem (`‖x‖ ≈ √d`, residuals of
/// standard deviation `√(‖w*‖² + σ²) = √2` at `w = 0`), as a user who knows the data model
/// would set them; none is tuned on the data.
fn fit(m: usize, data: &Dataset, seed: u64) -> Result<Array1<f64>> {
    let (n, d) = (data.n_samples(), data.n_features());
    let sqrt_d = (d as f64).sqrt();
    let mut rng = seeded_rng(seed);
    let model: LinearModel = match m {
        0 => {
            let mut l = DpAmbSsgd::new(sqrt_d, 100.0).budget(EPSILON, DELTA);
            l.stat_size = (n / 20).clamp(20, 500);
            l.batch_size = (n / 8).saturating_sub(l.stat_size).max(1);
            l.learning_rate = 1.0;
            l.log_factor = Some(1.0);
            // The paper's DP-STAT stopping rule (our default stops 2 noise sds earlier).
            l.stat_margin = 0.0;
            glm(l.fit(data, &mut rng))?
        }
        1 => {
            let mut l = DpSsgd::new().budget(EPSILON, DELTA);
            l.clip = sqrt_d;
            l.learning_rate = 0.01 / d as f64;
            glm(l.fit(data, &mut rng))?
        }
        2 => {
            let mut l = DpSgd::new(Loss::Squared).budget(EPSILON, DELTA);
            l.batch_size = (n / 100).max(1);
            l.epochs = 5;
            l.clip = 2.0 * sqrt_d;
            l.learning_rate = 0.5;
            glm(l.fit(data, &mut rng))?
        }
        3 => glm(Ssp::new(sqrt_d, 4.0 * 2f64.sqrt())
            .budget(EPSILON, DELTA)
            .fit(data, &mut rng))?,
        _ => return minimiser(data, Loss::Squared, None),
    };
    Ok(model.coef().to_owned())
}

/// One figure: mean excess risk of every method at each `(n, d)` of `grid`, plotted against
/// the coordinate `x_of` picks.
fn sweep(
    ctx: &mut RunContext,
    grid: &[(usize, usize)],
    seeds: u64,
    x_of: impl Fn(usize, usize) -> f64,
) -> Result<Vec<Series>> {
    let mut points = vec![Vec::new(); METHODS.len()];
    for &(n, d) in grid {
        for (m, pts) in points.iter_mut().enumerate() {
            let r = mean_over(seeds, |s| {
                let (data, w) = gaussian_linreg(n, d, NOISE, 500 + s)?;
                Ok(excess(fit(m, &data, 900 + s)?.view(), &w))
            })?;
            pts.push((x_of(n, d), r));
        }
        ctx.progress().step(&format!("n = {n}, d = {d}"));
    }
    Ok(METHODS
        .iter()
        .zip(points)
        .map(|(name, pts)| Series::line_with_points(*name, pts))
        .collect())
}

/// The rate `σ²d/N + σ²d²/(ε²N²)` on the grid.
fn rate(grid: &[(usize, usize)], x_of: impl Fn(usize, usize) -> f64) -> Series {
    let pts = grid
        .iter()
        .map(|&(n, d)| {
            let (n, d) = (n as f64, d as f64);
            let s2 = NOISE * NOISE;
            (
                x_of(n as usize, d as usize),
                s2 * d / n + s2 * d * d / (EPSILON * EPSILON * n * n),
            )
        })
        .collect();
    Series::line("rate σ²d/N + σ²d²/(ε²N²)", pts).dashed()
}

/// Excess risk against `N` and against `d`.
pub(crate) struct ExcessRisk;

impl Experiment for ExcessRisk {
    fn id(&self) -> &'static str {
        "002-excess-risk"
    }

    fn title(&self) -> &'static str {
        "Private linear regression: excess risk against N and d"
    }

    fn paper(&self) -> &'static str {
        "002 (DP-AMBSSGD, DP-SSGD)"
    }

    fn description(&self) -> &'static str {
        "Population excess risk on Gaussian linear-regression data (σ = 1, ‖w*‖ = 1, ε = 1, \
         δ = 1e-6) of DP-AMBSSGD, DP-SSGD, DP-SGD, AdaSSP and least squares, against N and \
         against d."
    }

    fn reading(&self) -> &'static str {
        "On log–log axes a method's slope is its rate: the paper's claim is that DP-AMBSSGD \
         follows the dashed rate σ²d/N + σ²d²/(ε²N²), falling like 1/N as N grows and rising \
         with d; the note explains why it sits above DP-SGD and AdaSSP at these sizes."
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let seeds = if quick { 2 } else { 5 };
        let (ns, d_fixed): (&[usize], usize) = if quick {
            (&[2_000, 10_000, 50_000], 10)
        } else {
            (&[1_000, 3_000, 10_000, 30_000, 100_000, 300_000], 10)
        };
        let (ds, n_fixed): (&[usize], usize) = if quick {
            (&[5, 20, 50], 20_000)
        } else {
            (&[5, 10, 20, 50, 100, 200], 100_000)
        };
        let by_n: Vec<_> = ns.iter().map(|&n| (n, d_fixed)).collect();
        let by_d: Vec<_> = ds.iter().map(|&d| (n_fixed, d)).collect();
        ctx.progress().set_steps((by_n.len() + by_d.len()) as u64);
        let mut out = Vec::new();
        for (grid, x_of, name, x_label, title) in [
            (
                &by_n,
                (|n, _| n as f64) as fn(usize, usize) -> f64,
                "excess-risk-vs-n",
                "N",
                format!("d = {d_fixed}"),
            ),
            (
                &by_d,
                (|_, d| d as f64) as fn(usize, usize) -> f64,
                "excess-risk-vs-d",
                "d",
                format!("N = {n_fixed}"),
            ),
        ] {
            let mut fig = Figure::new(name, title, x_label, "excess risk ‖w − w*‖²/2")
                .log_x()
                .log_y();
            for s in sweep(ctx, grid, seeds, x_of)? {
                fig = fig.with_series(s);
            }
            fig = fig.with_series(rate(grid, x_of));
            out.push(Artifact::figure(fig).with_note(NOTE));
        }
        Ok(out)
    }
}

/// What the figures show and why DP-AMBSSGD does not win here.
const NOTE: &str = "Hyper-parameters from the public scales of the data model, not tuned on \
    the data: DP-AMBSSGD with R_x = √d, B = 100, κ = 1, T = 8 steps, s = N/20 (≤ 500); DP-SSGD \
    clip √d; DP-SGD (Poisson, batch N/100, 5 epochs, clip 2√d); AdaSSP with B_X = √d, \
    B_Y = 4√2. DP-AMBSSGD's adaptive clip ζ = R_x·γ·κ must bound ‖x‖·|residual| for nearly all \
    points, and DP-STAT's stopping rule (noisy count ≥ s) overshoots the largest residual by \
    one or two doublings, so ζ is ~20× the typical gradient norm; and as a one-pass method each \
    record enters one step of N/T points (parallel composition), so its per-step noise is \
    ∝ T/N where full-batch and multi-pass methods pay ∝ √T/N. At these N the paper's rate \
    constant is therefore far larger than DP-SGD's and AdaSSP's; the paper's asymptotic \
    advantage is its one-pass cost and its freedom from a clipping hyper-parameter.";
