//! Fitted linear models.

use ndarray::{Array1, ArrayView1, ArrayView2};

use crate::error::{Error, Result};
use crate::loss::{LabelDomain, Loss, sigmoid};
use crate::report::PrivacyReport;

/// A fitted linear model `x ↦ ⟨w, x⟩ + b` with the loss it was trained for and its privacy
/// report.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearModel {
    coef: Array1<f64>,
    intercept: f64,
    loss: Loss,
    report: PrivacyReport,
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
        })
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

    /// `⟨w, x_i⟩ + b` for every row.
    ///
    /// # Errors
    /// `x` has the wrong number of columns.
    pub fn decision_function(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        if x.ncols() != self.coef.len() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "coefficients",
                right_shape: vec![self.coef.len()],
            });
        }
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
            ledger: Ledger::new(Neighbouring::AddRemove),
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
}
