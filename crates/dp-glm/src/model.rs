//! Fitted linear models.

use dp_data::TableSpec;
use ndarray::{Array1, ArrayView1, ArrayView2};

use crate::error::{Error, Result};
use crate::loss::{LabelDomain, Loss, sigmoid};
use crate::model_file::BoundRecord;
use crate::pipeline::Preprocessing;
use crate::report::{NoiseSource, PrivacyReport};

/// A fitted linear model `x ↦ ⟨w, p(x)⟩ + b` with the loss it was trained for, its privacy
/// report, and the fitted preprocessing `p` ([`Preprocessing`]) it applies to raw rows.
///
/// A learner returns the model of the rows it was given (no preprocessing); the caller that
/// preprocessed them attaches the steps with [`LinearModel::with_preprocessing`], and the
/// public description of its input with [`LinearModel::with_input`], so that
/// [`LinearModel::predict`] takes raw rows and a saved model
/// ([`LinearModel::to_json`]) scores new data exactly as training saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearModel {
    coef: Array1<f64>,
    intercept: f64,
    loss: Loss,
    report: PrivacyReport,
    preprocessing: Preprocessing,
    feature_names: Option<Vec<String>>,
    input: Option<TableSpec>,
    noise_source: Option<NoiseSource>,
    algorithm: Option<String>,
    bounds: Vec<BoundRecord>,
}

impl LinearModel {
    /// Assembles a model (learners call this).
    ///
    /// # Errors
    /// A non-finite coefficient or intercept: a private learner never returns a NaN model.
    pub fn new(
        coef: Array1<f64>,
        intercept: f64,
        loss: Loss,
        report: PrivacyReport,
    ) -> Result<Self> {
        if let Some((i, v)) = coef.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite {
                array: "coefficients",
                row: i,
                col: 0,
                value: *v,
            });
        }
        if !intercept.is_finite() {
            return Err(Error::NonFinite {
                array: "intercept",
                row: 0,
                col: 0,
                value: intercept,
            });
        }
        Ok(Self {
            coef,
            intercept,
            loss,
            report,
            preprocessing: Preprocessing::default(),
            feature_names: None,
            input: None,
            noise_source: None,
            algorithm: None,
            bounds: Vec::new(),
        })
    }

    /// The model with the fitted steps that made its training rows from raw ones: the
    /// coefficients then act on `preprocessing.apply(x)`.
    ///
    /// # Errors
    /// As [`Preprocessing::validate`]; [`Error::ShapeMismatch`] when the coefficients do not
    /// cover at least one raw feature plus the columns the steps add.
    pub fn with_preprocessing(mut self, preprocessing: Preprocessing) -> Result<Self> {
        let extra = preprocessing.extra_columns();
        if self.coef.len() <= extra {
            return Err(Error::ShapeMismatch {
                left: "coefficients",
                left_shape: vec![self.coef.len()],
                right: "preprocessed features",
                right_shape: vec![extra + 1],
            });
        }
        preprocessing.validate(self.coef.len() - extra)?;
        self.preprocessing = preprocessing;
        Ok(self)
    }

    /// The model with the projection of rows onto the ball of radius `x_bound` after its other
    /// steps ([`Preprocessing::row_bound`]): what a learner whose guarantee needs `‖x‖ ≤ X`
    /// does to its training rows, so that scoring rows are projected too.
    ///
    /// # Errors
    /// As [`LinearModel::with_preprocessing`] (`x_bound` finite and `> 0`).
    pub fn with_row_bound(self, x_bound: f64) -> Result<Self> {
        let p = Preprocessing {
            row_bound: Some(x_bound),
            ..self.preprocessing.clone()
        };
        self.with_preprocessing(p)
    }

    /// The model with the public description of its input: the raw features' names (to
    /// match scoring data by name) and the table pipeline that read them (label column,
    /// label mapping, categorical levels; [`TableSpec`]).
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming the field: `feature_names` is not one distinct name per raw
    /// feature, or `input` is invalid, its labels do not fit the loss, or its columns' names
    /// differ from `feature_names`.
    pub fn with_input(
        mut self,
        feature_names: Option<Vec<String>>,
        input: Option<TableSpec>,
    ) -> Result<Self> {
        crate::model_file::check_input(
            self.loss,
            self.n_features_in(),
            feature_names.as_deref(),
            input.as_ref(),
        )?;
        self.feature_names = feature_names;
        self.input = input;
        Ok(self)
    }

    /// The model with the noise source its learner drew from (saved in the privacy report).
    pub fn with_noise_source(mut self, source: NoiseSource) -> Self {
        self.noise_source = Some(source);
        self
    }

    /// The model with the name of the algorithm that fitted it (as the front end names it).
    pub fn with_algorithm(mut self, name: impl Into<String>) -> Self {
        self.algorithm = Some(name.into());
        self
    }

    /// The model with the bounds its learner used and where each came from.
    ///
    /// # Errors
    /// As [`BoundRecord::validate`].
    pub fn with_bounds(mut self, bounds: Vec<BoundRecord>) -> Result<Self> {
        bounds.iter().try_for_each(BoundRecord::validate)?;
        self.bounds = bounds;
        Ok(self)
    }

    /// The coefficients `w`.
    pub fn coef(&self) -> ArrayView1<'_, f64> {
        self.coef.view()
    }

    /// The intercept `b` (0 when the bias is a feature column).
    pub fn intercept(&self) -> f64 {
        self.intercept
    }

    /// The loss the model was trained with.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// The privacy report.
    ///
    /// # Privacy
    /// See [`PrivacyReport`].
    pub fn privacy(&self) -> &PrivacyReport {
        &self.report
    }

    /// The privacy report, for a wrapper that adds to it (notes, never a smaller ε).
    pub(crate) fn privacy_mut(&mut self) -> &mut PrivacyReport {
        &mut self.report
    }

    /// The fitted preprocessing applied to raw rows.
    pub fn preprocessing(&self) -> &Preprocessing {
        &self.preprocessing
    }

    /// The number of raw features a row must have.
    pub fn n_features_in(&self) -> usize {
        self.coef.len() - self.preprocessing.extra_columns()
    }

    /// The raw features' names, when the training data had them.
    pub fn feature_names(&self) -> Option<&[String]> {
        self.feature_names.as_deref()
    }

    /// The table pipeline that read the training data, when recorded.
    pub fn input(&self) -> Option<&TableSpec> {
        self.input.as_ref()
    }

    /// Where the learner's noise came from, when recorded.
    pub fn noise_source(&self) -> Option<NoiseSource> {
        self.noise_source
    }

    /// The algorithm's name, when recorded.
    pub fn algorithm(&self) -> Option<&str> {
        self.algorithm.as_deref()
    }

    /// The bounds the learner used, when recorded.
    pub fn bounds(&self) -> &[BoundRecord] {
        &self.bounds
    }

    /// `⟨w, p(x_i)⟩ + b` for every raw row `x_i` (`p` the model's [`Preprocessing`]).
    ///
    /// # Errors
    /// `x` does not have [`LinearModel::n_features_in`] columns; a step refuses a row (as
    /// [`Preprocessing::apply`]).
    pub fn decision_function(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        if x.ncols() != self.n_features_in() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "model features",
                right_shape: vec![self.n_features_in()],
            });
        }
        let x = self.preprocessing.apply(x)?;
        Ok(x.dot(&self.coef) + self.intercept)
    }

    /// `P(y = +1 | x) = 1/(1 + e^{−(⟨w, x⟩ + b)})` for every row, for the logistic loss (the
    /// negative log-likelihood of that model); `None` for the other losses, which model no
    /// probability. Post-processing of the released model: no privacy cost.
    ///
    /// # Errors
    /// As [`LinearModel::decision_function`].
    pub fn predict_proba(&self, x: ArrayView2<'_, f64>) -> Result<Option<Array1<f64>>> {
        if self.loss != Loss::Logistic {
            return Ok(None);
        }
        Ok(Some(self.decision_function(x)?.mapv(sigmoid)))
    }

    /// Predictions: the sign (±1) for classification losses, the decision value otherwise.
    ///
    /// # Errors
    /// As [`LinearModel::decision_function`].
    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        let z = self.decision_function(x)?;
        Ok(z.mapv(|v| prediction(self.loss, v)))
    }
}

/// The prediction of a model trained with `loss` at decision value `z`: its sign (±1, +1 at
/// 0) for classification losses, `z` itself otherwise.
pub fn prediction(loss: Loss, z: f64) -> f64 {
    match loss.label_domain() {
        LabelDomain::Signs if z >= 0.0 => 1.0,
        LabelDomain::Signs => -1.0,
        LabelDomain::Real => z,
    }
}

/// The probability of the positive class a model trained with `loss` gives at decision value
/// `z`: `σ(z) = 1/(1 + e^{−z})` for the logistic loss (the negative log-likelihood of that
/// model), `None` for the losses that model no probability.
pub fn positive_probability(loss: Loss, z: f64) -> Option<f64> {
    (loss == Loss::Logistic).then(|| sigmoid(z))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use crate::pipeline::Preprocessing;
    use dp_accounting::{AccountantKind, Ledger, Neighbouring};
    use ndarray::array;

    fn model(loss: Loss) -> LinearModel {
        let report = PrivacyReport {
            target: (1.0, 1e-5),
            epsilon: 1.0,
            delta: 1e-5,
            accountant: AccountantKind::Exact,
            neighbouring: Neighbouring::AddRemove,
            noise: Vec::new(),
            event: Ledger::new(Neighbouring::AddRemove).into(),
            notes: Vec::new(),
        };
        LinearModel::new(array![2.0, -1.0], 0.5, loss, report).unwrap()
    }

    #[test]
    fn probabilities_are_the_logistic_of_the_decision_value() {
        let x = array![[0.0, 0.0], [1.0, 0.0], [0.0, 1e4], [1e4, 0.0], [-0.25, 0.0]];
        let p = model(Loss::Logistic)
            .predict_proba(x.view())
            .unwrap()
            .unwrap();
        // z = 0.5, 2.5, −9999.5, 20000.5, 0.
        let want = [
            1.0 / (1.0 + (-0.5f64).exp()),
            1.0 / (1.0 + (-2.5f64).exp()),
            (-9999.5f64).exp(),
            1.0,
            0.5,
        ];
        for (got, want) in p.iter().zip(want) {
            assert!((got - want).abs() <= 1e-15, "{p} vs {want}");
        }
        assert!(p.iter().all(|v| (0.0..=1.0).contains(v)));
        // Consistent with predict: P ≥ 1/2 exactly where the sign is +1.
        let y = model(Loss::Logistic).predict(x.view()).unwrap();
        for (pi, yi) in p.iter().zip(&y) {
            assert_eq!(*pi >= 0.5, *yi == 1.0);
        }
        assert_eq!(model(Loss::Squared).predict_proba(x.view()).unwrap(), None);
        assert!(
            model(Loss::Logistic)
                .predict_proba(array![[1.0]].view())
                .is_err()
        );
    }

    /// `predict` and `predict_proba` take raw rows and apply the stored steps first.
    #[test]
    fn raw_rows_go_through_the_pipeline() {
        let m = model(Loss::Logistic)
            .with_preprocessing(Preprocessing {
                bias: Some(2.0),
                row_bound: Some(1.0),
                ..Preprocessing::default()
            })
            .unwrap();
        assert_eq!(m.n_features_in(), 1);
        // (3, bias 2) projected onto the unit ball: (3, 2)/√13; z = (2·3 − 2)/√13 + 0.5.
        let z = m.decision_function(array![[3.0]].view()).unwrap();
        let want = 4.0 / 13.0_f64.sqrt() + 0.5;
        assert!((z[0] - want).abs() <= 1e-15, "{z}");
        let p = m.predict_proba(array![[3.0]].view()).unwrap().unwrap();
        assert!((p[0] - 1.0 / (1.0 + (-want).exp())).abs() <= 1e-15);
        assert_eq!(
            m.predict(array![[3.0], [-3.0]].view()).unwrap(),
            array![1.0, -1.0]
        );
        // Rows of the preprocessed width are refused, as are steps that do not fit.
        assert!(m.predict(array![[3.0, 2.0]].view()).is_err());
        assert!(
            model(Loss::Logistic)
                .with_preprocessing(Preprocessing {
                    bias: Some(1.0),
                    unit_norm: true,
                    ..Preprocessing::default()
                })
                .unwrap()
                .with_preprocessing(Preprocessing {
                    scaling: Some(crate::scaling::FittedScaling {
                        method: crate::scaling::ScalingMethod::MinMax,
                        features: Vec::new(),
                    }),
                    ..Preprocessing::default()
                })
                .is_err()
        );
    }
}
