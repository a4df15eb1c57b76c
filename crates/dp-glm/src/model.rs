//! Fitted linear models.

use ndarray::{Array1, ArrayView1, ArrayView2};

use crate::error::{Error, Result};
use crate::loss::{LabelDomain, Loss};
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

    /// Predictions: the sign (±1) for classification losses, the decision value otherwise.
    ///
    /// # Errors
    /// As [`LinearModel::decision_function`].
    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        let z = self.decision_function(x)?;
        Ok(match self.loss.label_domain() {
            LabelDomain::Signs => z.mapv(|v| if v >= 0.0 { 1.0 } else { -1.0 }),
            LabelDomain::Real => z,
        })
    }
}
