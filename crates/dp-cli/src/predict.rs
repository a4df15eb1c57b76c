//! `dpglm predict`: a saved model's predictions (and, for logistic models, the probability of
//! the positive class) for every row of a data file; labels are not needed.

use std::io::Write;

use dp_data::Labels;
use serde_json::{Value, json};

use crate::CliError;
use crate::cli::PredictArgs;
use crate::mechanism_args::show;
use crate::model_file::{finite, write_atomically};
use crate::train::{check_output, data_glm_error, io, scored};

/// `dpglm predict`.
pub(crate) fn predict(a: &PredictArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(path) = &a.output {
        check_output(
            "--output",
            path,
            &[
                ("--data", Some(&a.scoring.data)),
                ("--model", Some(&a.scoring.model)),
            ],
        )?;
    }
    let (model, spec, data) = scored(&a.scoring, false)?;
    let z = data
        .decision_function(&model)
        .map_err(|e| data_glm_error(&a.scoring.data, e))?;
    if let Some(row) = z.iter().position(|v| !v.is_finite()) {
        return Err(CliError::Usage(format!(
            "{}: row {row} (0-based): the model's decision value is {}: the features or \
             coefficients are too large for a finite prediction",
            a.scoring.data.display(),
            show(z[row])
        )));
    }
    let predictions: Vec<Predicted> = z
        .iter()
        .map(|&v| Predicted::of(dp_glm::prediction(model.loss(), v), &spec.labels))
        .collect();
    let probabilities: Option<Vec<f64>> = z
        .iter()
        .map(|&v| dp_glm::positive_probability(model.loss(), v))
        .collect();
    if let Some(path) = &a.output {
        write_atomically(path, &csv_text(&predictions, probabilities.as_deref()))?;
    }
    if a.scoring.json {
        let rows = match (&a.output, &probabilities) {
            (Some(_), _) => Value::Null,
            (None, p) => Value::Array(
                predictions
                    .iter()
                    .enumerate()
                    .map(|(i, v)| row_json(v, p.as_ref().map(|p| p[i])))
                    .collect::<Result<Vec<Value>, CliError>>()?,
            ),
        };
        let v = json!({
            "n": predictions.len(),
            "loss": model.loss().name(),
            "output": a.output.as_ref().map(|p| p.display().to_string()),
            "predictions": rows,
        });
        writeln!(out, "{v}").map_err(io)?;
    } else if let Some(path) = &a.output {
        writeln!(
            out,
            "wrote {} predictions to {}",
            predictions.len(),
            path.display()
        )
        .map_err(io)?;
    } else {
        write!(out, "{}", csv_text(&predictions, probabilities.as_deref())).map_err(io)?;
    }
    Ok(())
}

/// One prediction: a number (regression, or ±1 for classification without a class pair) or
/// the class as the training data wrote it (a class pair given with `--classes`).
enum Predicted {
    Number(f64),
    Class(String),
}

impl Predicted {
    /// The prediction `v` (±1 for classification) in the model's label vocabulary.
    fn of(v: f64, labels: &Labels) -> Self {
        match labels {
            Labels::Classes { negative, positive } => {
                Predicted::Class(if v > 0.0 { positive } else { negative }.clone())
            }
            Labels::Numeric | Labels::Signs => Predicted::Number(v),
        }
    }

    /// The CSV field (RFC 4180 quoting for a class name with a comma, quote or line break).
    fn csv_field(&self) -> String {
        match self {
            Predicted::Number(v) => v.to_string(),
            Predicted::Class(c) if c.contains([',', '"', '\n', '\r']) => {
                format!("\"{}\"", c.replace('"', "\"\""))
            }
            Predicted::Class(c) => c.clone(),
        }
    }

    fn json(&self) -> Result<Value, CliError> {
        match self {
            Predicted::Number(v) => finite("prediction", *v),
            Predicted::Class(c) => Ok(Value::String(c.clone())),
        }
    }
}

/// The predictions as CSV: a header, then one row per input row.
fn csv_text(predictions: &[Predicted], probabilities: Option<&[f64]>) -> String {
    let mut s = String::from(match probabilities {
        Some(_) => "prediction,probability\n",
        None => "prediction\n",
    });
    for (i, v) in predictions.iter().enumerate() {
        let v = v.csv_field();
        match probabilities {
            Some(p) => s.push_str(&format!("{v},{}\n", p[i])),
            None => s.push_str(&format!("{v}\n")),
        }
    }
    s
}

/// One row of `predict --json`.
fn row_json(prediction: &Predicted, probability: Option<f64>) -> Result<Value, CliError> {
    let mut row = serde_json::Map::new();
    row.insert("prediction".into(), prediction.json()?);
    if let Some(p) = probability {
        row.insert("probability".into(), finite("probability", p)?);
    }
    Ok(Value::Object(row))
}
