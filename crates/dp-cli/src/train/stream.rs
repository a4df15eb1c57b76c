//! `dpglm train --stream`: a model fitted from the data file read block by block
//! ([`dp_data::open_blocks`]), never whole, with memory bounded by one block plus the
//! learner's state:
//! - AdaSSP ([`dp_glm::learners::Ssp::fit_blocks`]): its exact sufficient statistics are
//!   summed in one pass, memory `O(d²)` plus one block;
//! - DP-GD ([`dp_glm::DpGd::fit_blocks`]) and noisy projected GD
//!   ([`dp_glm::NoisyProjectedGd::fit_blocks`]): one pass checks and counts the rows, then one
//!   pass per step sums the exact clipped gradients, memory `O(d)` plus one block;
//! - objective perturbation ([`dp_glm::ObjectivePerturbation::fit_blocks`]) and AMP
//!   ([`dp_glm::Amp::fit_blocks`], L-BFGS only): one pass checks and counts the rows, then one
//!   pass per value and gradient of the perturbed objective (L-BFGS: tens of passes);
//!   output perturbation ([`dp_glm::OutputPerturbation::fit_blocks_with`]): one pass per
//!   projected gradient step (hundreds of passes at a small ridge). Memory `O(d)` plus one
//!   block and a leaf of 8192 rows.
//!
//! Every model is bit-identical to the in-memory fit's with the same seed — the exact sums
//! are integers, whatever the blocks, and the perturbation learners' objective sums the
//! in-memory leaves over the in-memory tree — and goes through the same [`release`]. A last
//! pass scores the training rows for the operator's (not private) diagnostics.
//!
//! Supported: `--algorithm ssp|dp-gd|noisy-gd|objpert|amp|output-perturbation`, public bounds
//! (`--x-bound`, `--y-bound`, `--clip`; the unit-norm preprocessing implies `--x-bound` and
//! makes DP-GD's default clip public for Lipschitz losses), the per-row preprocessing (unit
//! norm — the default for classification, as in memory without feature scaling — and bias),
//! `--n`, `--test` (read into memory).
//! Refused with a usage error: other algorithms (with the reason: DP-SGD's random batches,
//! the shuffled learners' secret order, the in-memory procedures), AMP's `--solver sag`
//! (random rows), feature scaling (`--scale minmax|standard`, the schema's scaling values, or
//! the default min–max scaling of classification on a file with named columns) and bounds to
//! be estimated privately — each would need a pass over the data before the fit.

use std::cell::RefCell;

use dp_glm::catalog::Fallback;
use dp_glm::learners::Ssp;
use dp_glm::row_count::PrivateCount;
use dp_glm::streamed::{BlockSource, Preprocessed, Reopen};
use dp_glm::sufficient::StreamError;
use dp_glm::{Amp, DpGd, NoisyProjectedGd, ObjectivePerturbation, OutputPerturbation};

use super::*;
use crate::cli::CalibrationAccountantArg;

/// Rows per block: 2^14 rows (12.6 MiB of `f64` at d = 100).
const BLOCK_ROWS: usize = 1 << 14;

/// A usage error for a flag `--stream` does not support.
fn unsupported(what: &str) -> CliError {
    CliError::Usage(format!(
        "--stream does not support {what}: leave out --stream to load the data into memory"
    ))
}

/// Whether `algorithm` has a streamed fit (module docs).
fn streamed(algorithm: AlgorithmArg) -> bool {
    matches!(
        algorithm,
        AlgorithmArg::Ssp
            | AlgorithmArg::DpGd
            | AlgorithmArg::NoisyGd
            | AlgorithmArg::Objpert
            | AlgorithmArg::Amp
            | AlgorithmArg::OutputPerturbation
    )
}

/// Why `algorithm` (not one of [`streamed`]) has no streamed fit.
///
/// DP-SGD's privacy amplification by Poisson subsampling needs each batch to be a fresh
/// random subset of the rows: read in file order, every batch of a few hundred rows would
/// cost a pass over the whole file, the price of a full-batch DP-GD step. The shuffled
/// learners' amplification (Feldman, McMillan & Talwar, "Hiding Among the Clones") assumes a
/// secret uniformly random order, which the order rows happen to have in a file is not;
/// claiming it for a pass in file order would under-report ε.
fn not_streamed(algorithm: AlgorithmArg) -> &'static str {
    match algorithm {
        AlgorithmArg::DpSgd => {
            "its Poisson batches are random rows: each batch would cost a pass over the file; \
             use dp-gd, or load the data with --storage f32 to halve its memory"
        }
        AlgorithmArg::DpSsgd | AlgorithmArg::DpAmbssgd => {
            "its shuffling amplification needs a secret random order of the rows, which a pass \
             over the file in its stored order is not; use dp-gd, or load the data with \
             --storage f32 to halve its memory"
        }
        _ => {
            "it needs the rows in memory (its projection, its non-convex objective or its \
             selection among models fitted on parts of the data)"
        }
    }
}

/// The feature-scaling refusal.
fn scaling(which: &str) -> CliError {
    unsupported(&format!(
        "feature scaling ({which}): give --scale none and scale the file beforehand"
    ))
}

/// `blocks` with the per-row preprocessing applied, each block a new allocation (for AdaSSP's
/// one pass).
fn preprocessed<'p>(
    blocks: dp_data::Result<dp_data::RowBlocks<'static>>,
    prep: &'p Preprocessing,
    path: &'p Path,
) -> Box<dyn Iterator<Item = dp_data::Result<dp_data::RowBlock>> + 'p> {
    let blocks = match blocks {
        Ok(b) => b,
        Err(e) => return Box::new(std::iter::once(Err(e))),
    };
    Box::new(blocks.map(move |b| {
        let mut b = b?;
        b.x = prep
            .apply(b.x.view())
            .map_err(|e| dp_data::Error::DataMismatch {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        Ok(b)
    }))
}

/// `dpglm train --stream` (module docs).
pub(super) fn train(
    a: &TrainArgs,
    loss: Loss,
    reservation: Option<Reservation<'_>>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let start = Instant::now();
    let algorithm = a.algorithm();
    if !streamed(algorithm) {
        return Err(unsupported(&format!(
            "--algorithm {} ({}; streamed are ssp, whose sufficient statistics take one pass, \
             dp-gd, noisy-gd and output-perturbation, one pass per step, and objpert and amp, \
             one pass per evaluation of their objective)",
            algorithm.name(),
            not_streamed(algorithm)
        )));
    }
    if algorithm == AlgorithmArg::Amp && a.solver.as_deref() == Some("sag") {
        return Err(unsupported(
            "--solver sag (SAG samples random rows, each a pass over the file): use the \
             default lbfgs",
        ));
    }
    let schema = schema_of(a.label.as_deref(), &a.columns)?;
    if matches!(a.scale, Some(ScaleArg::Standard | ScaleArg::Minmax)) || !schema.scaling.is_empty()
    {
        return Err(scaling("--scale or the schema's scaling values"));
    }
    let classification = matches!(loss.label_domain(), dp_glm::LabelDomain::Signs);
    // As in memory without a scaling plan.
    let prep = row_steps(a, classification);
    let row_bound = prep.unit_norm.then(|| 1f64.hypot(prep.bias.unwrap_or(0.0)));
    let learner = learner_of(a)?;
    let params = params_of(a);
    let needs = learner
        .needs(loss, row_bound, &params)
        .map_err(|e| catalog_error(a, e))?;
    let estimated: Vec<String> = needs
        .iter()
        .filter(|n| n.is_estimated())
        .map(|n| bound_flag(n.name))
        .collect();
    if !estimated.is_empty() {
        return Err(unsupported(&format!(
            "bounds estimated privately (a pass over the data first): give {}",
            estimated.join(" and ")
        )));
    }
    // The public bounds and the learner's budget, as `catalog::Learner::fit` records them.
    let mut bounds = bounds_budget(a, &needs, 0)?;
    for need in &needs {
        match (need.given, need.fallback) {
            (Some(v), _) | (None, Fallback::Default(v)) => bounds.public(need.name, v, false),
            (None, Fallback::Preprocessing(v)) => bounds.public(need.name, v, true),
            (None, Fallback::Estimate(_)) => continue,
        };
    }
    let bound = |name: &str| {
        bounds
            .bounds()
            .iter()
            .find(|b| b.name == name)
            .map(|b| b.value)
    };
    let (x_bound, y_bound, clip) = (bound("x_bound"), bound("y_bound"), bound("clip"));
    let mut budget = (learner.default_budget)(loss);
    budget.delta = a.delta;
    if let Some(n) = a.neighbouring {
        budget.neighbouring = n.into();
    }
    match a.accountant {
        Some(CalibrationAccountantArg::Pld) => {
            budget.accountant = dp_accounting::AccountantKind::Pld
        }
        Some(CalibrationAccountantArg::Rdp) => {
            budget.accountant = dp_accounting::AccountantKind::Rdp
        }
        None => {}
    }

    let format = a.format_arg.map(Format::from);
    let open = || dp_data::open_blocks(&a.data, format, &schema, task_of(loss), BLOCK_ROWS);
    let (first, spec) = open().map_err(data_error)?;
    check_has_features(a, first.n_features(), &spec)?;
    if classification && a.scale.is_none() && spec.columns.is_some() {
        return Err(scaling(
            "min-max, the default for classification on a file with named columns",
        ));
    }
    let names = first.feature_names().map(<[String]>::to_vec);
    // The first pass reads the blocks opened above; every later one opens the file anew,
    // into the same buffers.
    let first = RefCell::new(Some(first));
    let blocks = || {
        first
            .borrow_mut()
            .take()
            .map_or_else(|| open().map(|(b, _)| b), Ok)
    };
    let source = Preprocessed::new(Reopen::new(blocks), &prep);
    let test = match &a.test {
        Some(p) => Some((p, read_test(a, p, &spec, &prep)?)),
        None => None,
    };
    let (noise_source, mut rng) = noise(a)?;
    // Under add/remove without --n, a first pass counts the rows for the private count the
    // learner then reads as its n (as `catalog::Learner::fit` does in memory).
    let public_n = if learner
        .rows_to_count(loss, &params)
        .map_err(|e| catalog_error(a, e))?
    {
        let mut rows = 0usize;
        source
            .pass(&mut |b| {
                rows += b.x.nrows();
                Ok(())
            })
            .map_err(|e| match e {
                StreamError::Source(e) => data_error(e),
                StreamError::Fit(e) => fit_error(a, e),
            })?;
        let count =
            PrivateCount::estimate(rows, a.epsilon, &mut *rng).map_err(|e| fit_error(a, e))?;
        Some(bounds.count(count).map_err(|e| fit_error(a, e))?)
    } else {
        a.public_n
    };
    let budget = bounds.learner_budget(budget, learner.calibrates_jointly(&params));
    // Each learner set up as the catalog's builder does.
    let fitted = match algorithm {
        AlgorithmArg::Ssp => {
            let mut ssp = Ssp::new(x_bound.unwrap_or(1.0), y_bound.unwrap_or(1.0));
            ssp.budget = budget;
            ssp.public_n = public_n;
            ssp.fit_blocks(preprocessed(blocks(), &prep, &a.data), &mut *rng)
        }
        AlgorithmArg::NoisyGd => {
            let mut gd = NoisyProjectedGd::new(loss);
            gd.budget = budget;
            gd.radius = a.radius.unwrap_or(gd.radius);
            gd.x_bound = x_bound.unwrap_or(gd.x_bound);
            gd.y_bound = y_bound.unwrap_or(gd.y_bound);
            gd.steps = a.steps.or(gd.steps);
            gd.learning_rate = a.learning_rate.or(gd.learning_rate);
            gd.public_n = public_n;
            gd.fit_blocks(&source, &mut *rng)
        }
        AlgorithmArg::Objpert => {
            let o = objective_perturbation(loss, budget, (x_bound, clip, public_n), a);
            o.fit_blocks(&source, &mut *rng)
        }
        AlgorithmArg::Amp => {
            let mut amp = Amp::new(loss);
            amp.objpert = objective_perturbation(loss, budget, (x_bound, clip, public_n), a);
            amp.tau = a.tau;
            amp.sigma_out = a.sigma_out;
            amp.fit_blocks(&source, &mut *rng)
        }
        AlgorithmArg::OutputPerturbation => {
            let mut op = OutputPerturbation::new(loss);
            op.budget = budget;
            op.x_bound = x_bound.unwrap_or(op.x_bound);
            op.radius = a.radius.unwrap_or(op.radius);
            op.y_bound = y_bound.unwrap_or(op.y_bound);
            op.public_n = public_n;
            // The catalog's ridge rule needs the shape the first pass counts.
            let lambda = |l: &OutputPerturbation, shape| match a.lambda {
                Some(lambda) => Ok(lambda),
                None => l.default_lambda(shape),
            };
            op.fit_blocks_with(&source, lambda, &mut *rng)
        }
        // dp-gd (the others are refused above).
        _ => {
            let mut gd = DpGd::new(loss);
            gd.budget = budget;
            gd.clip = clip.unwrap_or(gd.clip);
            gd.steps = a.steps.unwrap_or(gd.steps);
            gd.learning_rate = a.learning_rate.unwrap_or(gd.learning_rate);
            gd.lambda = a.lambda.unwrap_or(gd.lambda);
            gd.radius = a.radius;
            gd.public_n = public_n;
            gd.fit_blocks(&source, &mut *rng)
        }
    };
    let model = fitted
        .map_err(|e| match e {
            StreamError::Source(e) => data_error(e),
            StreamError::Fit(e) => fit_error(a, e),
        })
        .and_then(|m| bounds.compose(m).map_err(|e| fit_error(a, e)))?;
    let fit = Fit {
        model,
        bounds,
        noise_source,
        spec,
        prep: prep.clone(),
        names,
        headline: format!(", streamed in blocks of {BLOCK_ROWS} rows"),
        budget: reservation,
    };
    // A last pass: the training scores, for the operator only.
    let test = test
        .as_ref()
        .map(|(p, t)| (p.as_path(), t as &dyn Scorable));
    conclude(a, start, fit, &Blocks(&source), test, Vec::new(), out)
}

/// Objective perturbation set up as the catalog's builder does (AMP's inner settings too),
/// with the run's bounds `X` and clip and its number of rows (public or privately counted).
fn objective_perturbation(
    loss: Loss,
    budget: dp_glm::Budget,
    (x_bound, clip, public_n): (Option<f64>, Option<f64>, Option<usize>),
    a: &TrainArgs,
) -> ObjectivePerturbation {
    let mut o = ObjectivePerturbation::new(loss);
    o.budget = budget;
    o.x_bound = x_bound.unwrap_or(o.x_bound);
    o.clip = clip;
    o.lambda = a.lambda;
    o.public_n = public_n;
    o
}

/// The test file, read into memory with the training pipeline and the preprocessing.
fn read_test(
    a: &TrainArgs,
    p: &Path,
    spec: &TableSpec,
    prep: &Preprocessing,
) -> Result<Dataset, CliError> {
    let width = spec.feature_names().map_or(0, |f| f.len());
    let t = dp_data::read_scoring_data(p, a.format_arg.map(Format::from), spec, width, true)
        .map_err(data_error)?;
    prep.apply(t.x.view())
        .and_then(|x| Dataset::new(x, t.y))
        .map_err(|e| data_glm_error(p, e))
}

/// The rows of a [`BlockSource`], scored over a last pass of its blocks.
struct Blocks<'s, S>(&'s S);

impl<S: BlockSource<Error = dp_data::Error>> Scorable for Blocks<'_, S> {
    /// The rows and the scores as row-weighted means of each block's [`score`] (`+∞` once a
    /// block's, or their sum, overflowed).
    fn scores(&self, model: &LinearModel, path: &Path) -> Result<(usize, Scores), CliError> {
        let source = self.0;
        let (mut n, mut loss, mut acc, mut mse) = (0usize, 0.0, None::<f64>, None::<f64>);
        let mut overflowed_row = None;
        let mut failure = None;
        source
            .pass(&mut |b| {
                if failure.is_some() {
                    return Ok(());
                }
                let rows = b.x.nrows();
                let data = Dataset::new(std::mem::take(&mut b.x), std::mem::take(&mut b.y))?;
                let scored = score(model, &data, path);
                (b.x, b.y) = data.into_parts();
                match scored {
                    Ok(s) => {
                        let w = rows as f64;
                        loss += s.loss * w;
                        acc = s.accuracy.map(|v| acc.unwrap_or(0.0) + v * w);
                        mse = s.mse.map(|v| mse.unwrap_or(0.0) + v * w);
                        overflowed_row = overflowed_row.or(s.overflowed_row.map(|r| n + r));
                        n += rows;
                    }
                    Err(e) => failure = Some(e),
                }
                Ok(())
            })
            .map_err(|e| match e {
                StreamError::Source(e) => data_error(e),
                StreamError::Fit(e) => data_glm_error(path, e),
            })?;
        if let Some(e) = failure {
            return Err(e);
        }
        let total = n.max(1) as f64;
        Ok((
            n,
            Scores {
                loss: loss / total,
                accuracy: acc.map(|v| v / total),
                mse: mse.map(|v| v / total),
                overflowed_row,
            },
        ))
    }
}
