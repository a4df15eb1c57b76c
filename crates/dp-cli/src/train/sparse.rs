//! `dpglm train` on a LIBSVM file with sparse rows: the rows are read into compressed sparse
//! rows ([`dp_data::read_training_sparse`]), preprocessed on them
//! ([`SparseDataset::preprocessed`]: unit norm, bias) and fitted by the catalog
//! ([`dp_glm::catalog::Learner::fit_sparse`]) without ever building the `n × d` matrix: memory
//! grows with the stored entries (16 bytes each, plus one per row for the bias), not with
//! `n × d`. The model file is the dense path's bit for bit (the preprocessed values, the row
//! norms, the bounds' estimates, the exact clipped sums of DP-GD, DP-SGD and noisy GD, DP-SGD's
//! batches, tuned DP-SGD's split and validation counts, and the values and gradients the
//! perturbation learners minimise are the same numbers; in builds with BLAS a row norm of 32
//! entries or more may differ in the last place, see [`dp_glm::sparse`]).
//!
//! [`route`] decides, before anything is read: LIBSVM training data (by `--format` or the
//! extension), outside `--stream`, is fitted on sparse rows when the algorithm has a sparse
//! path ([`dp_glm::catalog::Learner::fits_sparse`]: dp-gd; dp-sgd,
//! with `--tune` too, whose split, runs and validation counts read the sparse rows; noisy-gd;
//! objpert; amp, the default for classification, with either `--solver`;
//! output-perturbation; ssp, the default for `--loss squared`) and no feature scaling is asked
//! (`--scale minmax|standard` maps zeros to non-zero values: the rows would be dense).
//! Otherwise the rows are densified as before, and a warning says why (stderr; `warnings` in
//! `--json`).
//!
//! A LIBSVM `--test` file is read sparse too and scored with sparse dot products; a test file
//! in another format is read dense.

use dp_glm::sparse::SparseDataset;

use super::*;

/// How `train` reads its training data.
pub(super) enum Route {
    /// Sparse rows: [`train`].
    Sparse,
    /// The dense path, with the reason it is taken for a LIBSVM file (`None` for the other
    /// formats).
    Dense(Option<String>),
}

/// The [`Route`] for `a` (module docs). A format that cannot be inferred is the dense path's
/// error to report.
pub(super) fn route(a: &TrainArgs) -> Result<Route, CliError> {
    if !matches!(
        Format::infer(&a.data, a.format_arg.map(Format::from)),
        Ok(Format::Libsvm)
    ) {
        return Ok(Route::Dense(None));
    }
    let densified = |why: String| {
        Ok(Route::Dense(Some(format!(
            "the LIBSVM rows are densified (n × d values in memory): {why}"
        ))))
    };
    let learner = learner_of(a)?;
    if !learner.fits_sparse() {
        let sparse: Vec<&str> = catalog::LEARNERS
            .iter()
            .filter(|l| l.fits_sparse())
            .map(|l| l.name)
            .collect();
        let (last, others) = sparse.split_last().unwrap_or((&"", &[]));
        return densified(format!(
            "--algorithm {} has no sparse path ({} and {last} train on sparse rows)",
            learner.name,
            others.join(", ")
        ));
    }
    if let Some(scale @ (ScaleArg::Minmax | ScaleArg::Standard)) = a.scale {
        return densified(format!(
            "--scale {} maps zeros to non-zero values (leave it out, or give --scale none, to \
             train on sparse rows)",
            value_name(&scale).unwrap_or_default()
        ));
    }
    Ok(Route::Sparse)
}

/// Rows to score: sparse (a LIBSVM file) or dense (another format).
enum Rows {
    Sparse(SparseDataset),
    Dense(Dataset),
}

/// `dpglm train` on sparse rows (module docs): the dense `train` with the rows read, kept and
/// scored sparse, and no feature scaling.
pub(super) fn train(
    a: &TrainArgs,
    loss: Loss,
    budget: Option<Reservation<'_>>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let start = Instant::now();
    let classification = matches!(loss.label_domain(), dp_glm::LabelDomain::Signs);
    let schema = schema_of(a.label.as_deref(), &a.columns)?;
    let (csr, spec) =
        dp_data::read_training_sparse(&a.data, &schema, task_of(loss)).map_err(data_error)?;
    let width = csr.n_features;
    check_has_features(a, width, &spec)?;
    // As the dense path without a scaling plan (which LIBSVM data never gets by default).
    let prep = row_steps(a, classification);
    let data = SparseDataset::preprocessed(csr, &prep).map_err(|e| data_glm_error(&a.data, e))?;
    let test = match &a.test {
        Some(p) => Some((p, read_test(a, p, &spec, width, &prep)?)),
        None => None,
    };
    let (noise_source, mut rng) = noise(a)?;
    let row_bound = prep.unit_norm.then(|| 1f64.hypot(prep.bias.unwrap_or(0.0)));
    let learner = learner_of(a)?;
    let params = params_of(a);
    let needs = learner
        .needs(loss, row_bound, &params)
        .map_err(|e| catalog_error(a, e))?;
    let request = Request {
        loss,
        delta: a.delta,
        params: &params,
        needs: &needs,
    };
    // Counted first, as on the dense path (the same noise in the same order).
    let mut bounds = bounds_budget(a, &needs, 0)?;
    if let Some(count) = learner
        .count_rows(loss, &params, data.n_samples(), a.epsilon, &mut *rng)
        .map_err(|e| catalog_error(a, e))?
    {
        bounds.count(count).map_err(|e| fit_error(a, e))?;
    }
    let mut progress = Bar::new(a.json);
    let fitted = learner.fit_sparse(&request, &data, bounds, &mut *rng, &mut progress);
    progress.finish();
    let (model, bounds) = fitted.map_err(|e| catalog_error(a, e))?;
    let fit = Fit {
        model,
        bounds,
        noise_source,
        spec,
        prep,
        names: None,
        headline: ", from sparse rows".into(),
        budget,
    };
    let test = test
        .as_ref()
        .map(|(p, t)| (p.as_path(), t as &dyn Scorable));
    conclude(a, start, fit, &data, test, Vec::new(), out)
}

/// The test file with the training preprocessing: sparse rows for a LIBSVM file, else dense
/// (as the dense path reads it).
fn read_test(
    a: &TrainArgs,
    p: &Path,
    spec: &TableSpec,
    width: usize,
    prep: &Preprocessing,
) -> Result<Rows, CliError> {
    let format = a.format_arg.map(Format::from);
    if let Ok(Format::Libsvm) = Format::infer(p, format) {
        let csr = dp_data::read_scoring_sparse(p, spec, width, true).map_err(data_error)?;
        return SparseDataset::preprocessed(csr, prep)
            .map(Rows::Sparse)
            .map_err(|e| data_glm_error(p, e));
    }
    let t = dp_data::read_scoring_data(p, format, spec, width, true).map_err(data_error)?;
    prep.apply(t.x.view())
        .and_then(|x| Dataset::new(x, t.y))
        .map(Rows::Dense)
        .map_err(|e| data_glm_error(p, e))
}

impl Scorable for Rows {
    fn scores(&self, model: &LinearModel, path: &Path) -> Result<(usize, Scores), CliError> {
        match self {
            Rows::Dense(d) => d.scores(model, path),
            Rows::Sparse(s) => s.scores(model, path),
        }
    }
}

impl Scorable for SparseDataset {
    fn scores(&self, model: &LinearModel, path: &Path) -> Result<(usize, Scores), CliError> {
        Ok((self.n_samples(), score_sparse(model, self, path)?))
    }
}

/// [`score`] on sparse rows: the model's own steps applied to them
/// ([`SparseDataset::decision_function`]) and its decision values from sparse dot products.
pub(super) fn score_sparse(
    model: &LinearModel,
    data: &SparseDataset,
    path: &Path,
) -> Result<Scores, CliError> {
    let glm = |e| data_glm_error(path, e);
    data.check_labels(&model.loss()).map_err(glm)?;
    let z = data.decision_function(model).map_err(glm)?;
    Ok(scores(model.loss(), &z, data.y()))
}
