//! [`ArrayFit::fit`] for rows it cannot take — float32 rows kept in `f32` storage, and sparse
//! rows kept sparse — when no feature scaling is fitted: the same steps in the same order
//! (parameters checked, unit-norm rows and bias, the learner's bounds given, implied,
//! defaulted or estimated within the same share of ε, the same random stream), the learner
//! fitted by [`Learner::fit`] on an `f32` [`Dataset`] or by [`Learner::fit_sparse`] on a
//! [`SparseDataset`], and the same model, bounds and [`PrivacyStatement`].
//!
//! `dp_glm::frontdoor` takes `f64` rows only and keeps its statement private, so these steps
//! mirror it: they are to be replaced by an `ArrayFit` entry point for `f32` and sparse rows
//! when `dp-glm` has one.
//!
//! [`Learner::fit`]: dp_glm::catalog::Learner::fit
//! [`Learner::fit_sparse`]: dp_glm::catalog::Learner::fit_sparse

use dp_data::CsrData;
use dp_glm::bounds::{Bound, BoundSource, DEFAULT_SHARE, PrivateBounds};
use dp_glm::catalog::{CatalogError, NoProgress, Request};
use dp_glm::frontdoor::{ArrayFit, Fitted, Scaling, assume_preprocessing};
use dp_glm::sparse::SparseDataset;
use dp_glm::{
    BoundRecord, Dataset, DatasetBuilder, Features, LabelDomain, LinearModel, NoiseSource,
    Preprocessing, PrivacyStatement, Storage,
};
use ndarray::{Array1, ArrayView2, Axis, Slice};
use rand::Rng;

/// Rows widened to `f64` at a time on their way into `f32` storage: 2^14.
const BLOCK_ROWS: usize = 1 << 14;

/// What the statement records as public about `f32` storage.
const F32_STORAGE: &str = "the feature storage f32: the float32 values as given (rows a learner \
                           projects onto its row bound are rounded toward zero to f32 again; \
                           sums in f64)";

/// Whether `run` fits no feature scaling: [`Scaling::None`], or [`Scaling::Auto`] for a loss
/// on real labels (which it never scales).
fn unscaled(run: &ArrayFit<'_>) -> bool {
    match run.scaling {
        Scaling::None => true,
        Scaling::Auto => !classification(run),
        Scaling::Plan(_) => false,
    }
}

/// Whether `run`'s loss is a classification loss (labels ±1).
fn classification(run: &ArrayFit<'_>) -> bool {
    matches!(run.loss.label_domain(), LabelDomain::Signs)
}

/// The per-row steps of an unscaled `run`: unit-norm rows (by default for classification, as
/// [`ArrayFit::fit`] without a scaling) and the bias.
fn row_steps(run: &ArrayFit<'_>) -> Preprocessing {
    Preprocessing {
        scaling: None,
        row_bound: None,
        unit_norm: run.unit_norm.unwrap_or(classification(run)),
        bias: run.bias,
    }
}

/// Whether `run` can keep float32 rows in `f32` storage with the numbers unchanged: no feature
/// scaling, no unit-norm rows, and a bias `f32` holds exactly — the rows the learner sees are
/// then the float32 values as given (module docs of [`dp_glm::Storage`]), and the model is the
/// one of the same values in float64 (but for rows a learner projects onto its row bound,
/// stored in `f32` again).
pub(crate) fn keeps_f32(run: &ArrayFit<'_>) -> bool {
    let steps = row_steps(run);
    unscaled(run) && !steps.unit_norm && steps.bias.is_none_or(|b| f64::from(b as f32) == b)
}

/// Why `run` cannot fit sparse rows as they are (they are then densified), or `None`: a
/// learner without a sparse path
/// ([`Learner::fits_sparse`](dp_glm::catalog::Learner::fits_sparse)), or a feature scaling
/// (it maps zeros to non-zero values). `asked` names the scaling asked for (`scale='minmax'`,
/// `feature_ranges`).
pub(crate) fn densified(run: &ArrayFit<'_>, asked: &str) -> Option<String> {
    let why = if !run.learner.fits_sparse() {
        let sparse: Vec<&str> = dp_glm::catalog::LEARNERS
            .iter()
            .filter(|l| l.fits_sparse())
            .map(|l| l.name)
            .collect();
        format!(
            "algorithm='{}' has no sparse path ({} train on sparse rows)",
            run.learner.name,
            sparse.join(", ")
        )
    } else if !unscaled(run) {
        format!(
            "{asked} maps zeros to non-zero values (leave scale='auto' without \
             feature_ranges, or give scale='none', to train on sparse rows)"
        )
    } else {
        return None;
    };
    Some(format!(
        "the sparse rows are densified (n × d values in memory): {why}"
    ))
}

/// The rows the learner reads.
enum Rows {
    /// Dense rows (here: `f32` storage).
    Dense(Dataset),
    /// Sparse rows.
    Sparse(SparseDataset),
}

/// Fits `run` on float32 rows `x` kept in `f32` storage (for a `run` that [`keeps_f32`]),
/// widened and preprocessed [`BLOCK_ROWS`] at a time: the `f64` rows are never held whole.
///
/// # Privacy
/// As [`ArrayFit::fit`]; storing the rows as `f32` is a fixed public per-row transformation
/// (here the identity on the values given), recorded in the statement.
///
/// # Errors
/// As [`ArrayFit::fit`].
pub(crate) fn fit_f32(
    run: &ArrayFit<'_>,
    x: ArrayView2<'_, f32>,
    y: Array1<f64>,
    feature_names: Option<Vec<String>>,
) -> Result<Fitted, CatalogError> {
    let rows = |prep: &Preprocessing| {
        let width = x.ncols() + prep.extra_columns();
        let mut data = DatasetBuilder::new(width, Storage::F32);
        for (range, block) in Features::F32(x).f64_blocks(BLOCK_ROWS) {
            let block = prep.apply(block.view())?;
            data.push(block.view(), y.slice_axis(Axis(0), Slice::from(range)))?;
        }
        Ok(Rows::Dense(data.finish()?))
    };
    let mut fitted = fit(run, rows, feature_names)?;
    fitted.statement.assume_public(F32_STORAGE);
    Ok(fitted)
}

/// Fits `run` (which has no feature scaling: [`densified`] is `None`) on the sparse rows
/// `csr`, never densified: unit norm and bias applied to them
/// ([`SparseDataset::preprocessed`]), the learner fitted by
/// [`Learner::fit_sparse`](dp_glm::catalog::Learner::fit_sparse) — the model of
/// [`ArrayFit::fit`] on the same rows dense.
///
/// # Privacy
/// As [`ArrayFit::fit`].
///
/// # Errors
/// As [`ArrayFit::fit`]; malformed sparse rows ([`SparseDataset::new`]).
pub(crate) fn fit_sparse(
    run: &ArrayFit<'_>,
    csr: CsrData,
    feature_names: Option<Vec<String>>,
) -> Result<Fitted, CatalogError> {
    let rows = |prep: &Preprocessing| SparseDataset::preprocessed(csr, prep).map(Rows::Sparse);
    fit(run, rows, feature_names)
}

/// [`ArrayFit::fit`] without a feature scaling, on the rows `rows` builds from the per-row
/// steps (module docs).
fn fit(
    run: &ArrayFit<'_>,
    rows: impl FnOnce(&Preprocessing) -> dp_glm::Result<Rows>,
    feature_names: Option<Vec<String>>,
) -> Result<Fitted, CatalogError> {
    run.learner.check(run.params)?;
    let prep = row_steps(run);
    let mut rng: Box<dyn Rng> = match run.seed {
        Some(s) => Box::new(dp_optim::seeded_rng(s)),
        None => Box::new(dp_optim::secure_rng().map_err(dp_glm::Error::from)?),
    };
    let row_bound = prep.unit_norm.then(|| 1f64.hypot(prep.bias.unwrap_or(0.0)));
    let needs = run.learner.needs(run.loss, row_bound, run.params)?;
    let planned = needs.iter().filter(|n| n.is_estimated()).count();
    let share = run.bounds_budget.unwrap_or(DEFAULT_SHARE);
    let bounds = PrivateBounds::new(run.epsilon, run.delta, share, planned)?;
    let data = rows(&prep)?;
    let request = Request {
        loss: run.loss,
        delta: run.delta,
        params: run.params,
        needs: &needs,
    };
    let (model, bounds) = match &data {
        Rows::Dense(d) => run
            .learner
            .fit(&request, d, bounds, &mut *rng, &mut NoProgress)?,
        Rows::Sparse(s) => {
            run.learner
                .fit_sparse(&request, s, bounds, &mut *rng, &mut NoProgress)?
        }
    };
    let source = match run.seed {
        Some(seed) => NoiseSource::Seeded { seed },
        None => NoiseSource::Secure,
    };
    let statement = statement(
        run,
        &model,
        source,
        &bounds,
        &prep,
        feature_names.as_deref(),
    );
    let records = bounds
        .bounds()
        .iter()
        .map(|b| BoundRecord::of(b, run.params.contains(b.name)))
        .collect();
    let learned = Preprocessing {
        row_bound: model.preprocessing().row_bound,
        ..prep
    };
    let model = model
        .with_preprocessing(learned)?
        .with_input(feature_names, None)?
        .with_bounds(records)?
        .with_noise_source(source)
        .with_algorithm(run.learner.name);
    Ok(Fitted {
        model,
        statement,
        warnings: Vec::new(),
    })
}

/// The statement of a fit, as [`ArrayFit::fit`] words it: the report's guarantee, and what
/// was treated as public.
fn statement(
    run: &ArrayFit<'_>,
    model: &LinearModel,
    source: NoiseSource,
    bounds: &PrivateBounds,
    prep: &Preprocessing,
    names: Option<&[String]>,
) -> PrivacyStatement {
    let mut s = model.privacy().statement(source);
    let d = model.coef().len() - prep.extra_columns();
    match names {
        Some(names) => s.assume_public(format!(
            "the feature names and their order ({})",
            names.join(", ")
        )),
        None => s.assume_public(format!("the number of features d = {d}")),
    };
    if classification(run) {
        s.assume_public(match &run.classes {
            Some((neg, pos)) => format!("the class pair (negative {neg}, positive {pos})"),
            None => "the class pair (negative, positive)".to_string(),
        });
    }
    assume_preprocessing(&mut s, prep);
    s.assume_public(format!(
        "the algorithm ({}) and its hyper-parameters (as given, or the defaults the report \
         above records)",
        run.learner.name
    ));
    let (given, other): (Vec<Bound>, Vec<Bound>) = bounds
        .bounds()
        .iter()
        .partition(|b| b.source == BoundSource::Public && run.params.contains(b.name));
    for b in &given {
        s.assume_public(format!(
            "the bound {} = {}, given as a public value; values beyond it are clipped",
            b.name, b.value
        ));
    }
    s.bounds(&other);
    s
}
