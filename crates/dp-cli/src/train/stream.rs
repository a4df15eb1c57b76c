//! `dpglm train --stream`: AdaSSP fitted from the data file read block by block
//! ([`dp_data::open_blocks`]), never whole: its exact sufficient statistics are summed in one
//! pass ([`dp_glm::learners::Ssp::fit_blocks`]), memory `O(d²)` plus one block; a second pass
//! scores the training rows for the operator's (not private) diagnostics.
//!
//! Supported: `--algorithm ssp` (the default for `--loss squared`), public bounds
//! (`--x-bound`, `--y-bound`; the unit-norm preprocessing implies `--x-bound`), the per-row
//! preprocessing (unit norm, bias), `--n`, `--test` (read into memory). Refused with a usage
//! error: other algorithms, feature scaling (`--scale minmax|standard` or the schema's
//! scaling values) and bounds to be estimated privately — each would need a pass over the
//! data before the fit.

use dp_glm::learners::Ssp;
use dp_glm::sufficient::StreamError;

use super::*;
use crate::cli::{AlgorithmArg, CalibrationAccountantArg};

/// Rows per block: 2^14 rows (12.6 MiB of `f64` at d = 100).
const BLOCK_ROWS: usize = 1 << 14;

/// The training rows, block by block.
type Blocks<'p> = Box<dyn Iterator<Item = Result<dp_data::RowBlock, dp_data::Error>> + 'p>;

/// A usage error for a flag `--stream` does not support.
fn unsupported(what: &str) -> CliError {
    CliError::Usage(format!(
        "--stream does not support {what}: leave out --stream to load the data into memory"
    ))
}

/// The training file's blocks, with the per-row preprocessing applied.
fn blocks<'p>(
    a: &TrainArgs,
    loss: Loss,
    prep: &'p Preprocessing,
) -> Result<(Blocks<'p>, TableSpec, Option<Vec<String>>), CliError> {
    let schema = schema_of(a.label.as_deref(), &a.columns)?;
    if matches!(a.scale, Some(ScaleArg::Standard | ScaleArg::Minmax)) || !schema.scaling.is_empty()
    {
        return Err(unsupported(
            "feature scaling (--scale or the schema's scaling values): give --scale none and \
             scale the file beforehand",
        ));
    }
    let (blocks, spec) = dp_data::open_blocks(
        &a.data,
        a.format_arg.map(Format::from),
        &schema,
        task_of(loss),
        BLOCK_ROWS,
    )
    .map_err(data_error)?;
    let names = blocks.feature_names().map(<[String]>::to_vec);
    let path = a.data.clone();
    let mapped = blocks.map(move |b| {
        let mut b = b?;
        b.x = prep
            .apply(b.x.view())
            .map_err(|e| dp_data::Error::DataMismatch {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Ok(b)
    });
    Ok((Box::new(mapped), spec, names))
}

/// `dpglm train --stream` (module docs).
pub(super) fn train(a: &TrainArgs, loss: Loss, out: &mut dyn Write) -> Result<(), CliError> {
    let start = Instant::now();
    if a.algorithm() != AlgorithmArg::Ssp {
        return Err(unsupported(&format!(
            "--algorithm {} (only ssp, whose sufficient statistics take one pass)",
            a.algorithm().name()
        )));
    }
    let prep = Preprocessing {
        scaling: None,
        row_bound: None,
        unit_norm: matches!(a.preprocess, Some(PreprocessArg::UnitNorm)),
        bias: (a.bias != 0.0).then_some(a.bias),
    };
    let row_bound = prep.unit_norm.then(|| 1f64.hypot(prep.bias.unwrap_or(0.0)));
    let params = params_of(a);
    let needs = learner_of(a)?
        .needs(loss, row_bound, &params)
        .map_err(|e| catalog_error(a, e))?;
    if needs.iter().any(catalog::Need::is_estimated) {
        return Err(unsupported(
            "bounds estimated privately (a pass over the data first): give --x-bound and \
             --y-bound",
        ));
    }
    let mut bounds = bounds_budget(a, &needs, 0)?;
    let mut value = |name: &'static str| {
        let need = needs.iter().find(|n| n.name == name);
        match need.map(|n| (n.given, n.fallback)) {
            Some((Some(v), _)) | Some((None, catalog::Fallback::Default(v))) => {
                Some(bounds.public(name, v, false))
            }
            Some((None, catalog::Fallback::Preprocessing(v))) => Some(bounds.public(name, v, true)),
            _ => None,
        }
    };
    let (bx, by) = (value("x_bound"), value("y_bound"));
    let mut ssp = Ssp::new(bx.unwrap_or(1.0), by.unwrap_or(1.0));
    ssp.budget.epsilon = bounds.learner_epsilon();
    ssp.budget.delta = a.delta;
    if let Some(n) = a.neighbouring {
        ssp.budget.neighbouring = n.into();
    }
    match a.accountant {
        Some(CalibrationAccountantArg::Pld) => {
            ssp.budget.accountant = dp_accounting::AccountantKind::Pld
        }
        Some(CalibrationAccountantArg::Rdp) => {
            ssp.budget.accountant = dp_accounting::AccountantKind::Rdp
        }
        None => {}
    }
    ssp.public_n = a.public_n;
    let (source, spec, names) = blocks(a, loss, &prep)?;
    let test = match &a.test {
        Some(p) => Some((p, read_test(a, p, &spec, &prep)?)),
        None => None,
    };
    let noise_source = match a.seed {
        Some(seed) => NoiseSource::Seeded { seed },
        None => NoiseSource::Secure,
    };
    let mut rng: Box<dyn rand::Rng> = match a.seed {
        Some(s) => Box::new(dp_optim::seeded_rng(s)),
        None => Box::new(dp_optim::secure_rng().map_err(|e| CliError::Failure(e.to_string()))?),
    };
    let model = ssp
        .fit_blocks(source, &mut *rng)
        .map_err(|e| match e {
            StreamError::Source(e) => data_error(e),
            StreamError::Fit(e) => fit_error(a, e),
        })
        .and_then(|m| bounds.compose(m).map_err(|e| fit_error(a, e)))?;
    // Second pass: the training scores, for the operator only.
    let (source, _, _) = blocks(a, loss, &prep)?;
    let (n, tr) = streamed_score(&model, source, &a.data)?;
    let test = match &test {
        Some((p, t)) => Some(score(&model, t, p)?),
        None => None,
    };
    let fit = Fit {
        model,
        bounds,
        noise_source,
        spec,
        prep,
        names,
        headline: format!(", streamed in blocks of {BLOCK_ROWS} rows"),
        streamed: true,
    };
    let diagnostics = NotPrivate {
        n,
        train: tr,
        test,
        seconds: start.elapsed().as_secs_f64(),
        warnings: Vec::new(),
    };
    release(a, fit, diagnostics, out)
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

/// The rows and the training scores over a second pass of the blocks (row-weighted means of
/// each block's [`score`]).
fn streamed_score(
    model: &LinearModel,
    source: impl Iterator<Item = Result<dp_data::RowBlock, dp_data::Error>>,
    path: &Path,
) -> Result<(usize, Scores), CliError> {
    let (mut n, mut loss, mut acc, mut mse) = (0usize, 0.0, None::<f64>, None::<f64>);
    for block in source {
        let b = block.map_err(data_error)?;
        let rows = b.x.nrows();
        let data = Dataset::new(b.x, b.y).map_err(|e| data_glm_error(path, e))?;
        let s = score(model, &data, path)?;
        let w = rows as f64;
        loss += s.loss * w;
        acc = s.accuracy.map(|v| acc.unwrap_or(0.0) + v * w);
        mse = s.mse.map(|v| mse.unwrap_or(0.0) + v * w);
        n += rows;
    }
    let total = n.max(1) as f64;
    Ok((
        n,
        Scores {
            loss: loss / total,
            accuracy: acc.map(|v| v / total),
            mse: mse.map(|v| v / total),
        },
    ))
}
