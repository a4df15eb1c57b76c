//! `dpglm predict`: a saved model's predictions (and, for logistic models, the probability of
//! the positive class) for every row of a data file; labels are not needed.

use std::io::Write;

use dp_bench::data::{Format, read_csv_features};
use ndarray::Array1;
use serde_json::{Value, json};

use crate::CliError;
use crate::cli::PredictArgs;
use crate::mechanism_args::show;
use crate::model_file::{ModelFile, finite, write_atomically};
use crate::train::{check_output, data_error, io, match_columns, read};

/// `dpglm predict`.
pub(crate) fn predict(a: &PredictArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(path) = &a.output {
        check_output(
            "--output",
            path,
            &[("--data", Some(&a.data)), ("--model", Some(&a.model))],
        )?;
    }
    let model = ModelFile::read(&a.model)?;
    let format = a.format_arg.map(Format::from);
    let csv = format.or_else(|| Format::from_path(&a.data)) == Some(Format::Csv);
    // A CSV to predict on has no label column unless --label names one to leave out.
    let (x, names) = if csv && a.label.is_none() {
        let (x, names) = read_csv_features(&a.data).map_err(data_error)?;
        (x, Some(names))
    } else {
        let d = read(
            &a.data,
            format,
            a.label.as_deref(),
            Some(model.n_features_in),
        )?;
        (d.x, d.feature_names)
    };
    let x = match_columns(
        &a.data,
        x,
        names.as_deref(),
        model.feature_names.as_deref(),
        model.n_features_in,
        &format!("the model {}", a.model.display()),
    )?;
    let x = model.preprocessing.apply(x.view());
    let z = x.dot(&Array1::from(model.coefficients.clone())) + model.intercept;
    if let Some(row) = z.iter().position(|v| !v.is_finite()) {
        return Err(CliError::Usage(format!(
            "{}: row {row} (0-based): the model's decision value is {}: the features or \
             coefficients are too large for a finite prediction",
            a.data.display(),
            show(z[row])
        )));
    }
    let predictions: Vec<f64> = z
        .iter()
        .map(|&v| dp_glm::prediction(model.loss, v))
        .collect();
    let probabilities: Option<Vec<f64>> = z
        .iter()
        .map(|&v| dp_glm::positive_probability(model.loss, v))
        .collect();
    if let Some(path) = &a.output {
        write_atomically(path, &csv_text(&predictions, probabilities.as_deref()))?;
    }
    if a.json {
        let rows = match (&a.output, &probabilities) {
            (Some(_), _) => Value::Null,
            (None, p) => Value::Array(
                predictions
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| row_json(v, p.as_ref().map(|p| p[i])))
                    .collect::<Result<Vec<Value>, CliError>>()?,
            ),
        };
        let v = json!({
            "n": predictions.len(),
            "loss": model.loss.name(),
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

/// The predictions as CSV: a header, then one row per input row.
fn csv_text(predictions: &[f64], probabilities: Option<&[f64]>) -> String {
    let mut s = String::from(match probabilities {
        Some(_) => "prediction,probability\n",
        None => "prediction\n",
    });
    for (i, v) in predictions.iter().enumerate() {
        match probabilities {
            Some(p) => s.push_str(&format!("{v},{}\n", p[i])),
            None => s.push_str(&format!("{v}\n")),
        }
    }
    s
}

/// One row of `predict --json`.
fn row_json(prediction: f64, probability: Option<f64>) -> Result<Value, CliError> {
    let mut row = serde_json::Map::new();
    row.insert("prediction".into(), finite("prediction", prediction)?);
    if let Some(p) = probability {
        row.insert("probability".into(), finite("probability", p)?);
    }
    Ok(Value::Object(row))
}
