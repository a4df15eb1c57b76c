//! Which path a fit from Python takes for rows that are not float64: float32 rows kept in
//! `f32` storage ([`ArrayFit::fit_f32`]) when the fit leaves their values as given, sparse
//! rows kept sparse ([`ArrayFit::fit_sparse`]) when the learner has a sparse path and no
//! feature scaling is fitted — else the rows are widened or densified for [`ArrayFit::fit`].

use dp_glm::LabelDomain;
use dp_glm::frontdoor::{ArrayFit, Scaling};

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

/// Whether `run` can keep float32 rows in `f32` storage with the numbers unchanged
/// ([`ArrayFit::fit_f32`]): no feature scaling, no unit-norm rows (the default for
/// classification without a scaling), and a bias `f32` holds exactly — the rows the learner
/// sees are then the float32 values as given, and the model is the one of the same values in
/// float64 (but for rows a learner projects onto its row bound, stored in `f32` again).
pub(crate) fn keeps_f32(run: &ArrayFit<'_>) -> bool {
    let unit_norm = run.unit_norm.unwrap_or(classification(run));
    unscaled(run) && !unit_norm && run.bias.is_none_or(|b| f64::from(b as f32) == b)
}

/// Why `run` cannot fit sparse rows as they are (they are then densified), or `None`: a
/// learner without a sparse path
/// ([`Learner::fits_sparse`](dp_glm::catalog::Learner::fits_sparse)), parameters that leave
/// it ([`Learner::sparse_path`](dp_glm::catalog::Learner::sparse_path); none does today:
/// tuned DP-SGD keeps sparse rows too), or a feature scaling (it maps zeros to non-zero
/// values). `asked` names the scaling asked for
/// (`scale='minmax'`, `feature_ranges`).
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
    } else if let Err(e) = run.learner.sparse_path(run.params) {
        e.to_string()
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
