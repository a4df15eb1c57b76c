//! The table schema on the command line: the `--schema` file with the column flags laid over
//! it, and `dpglm schema`, which drafts one from a CSV file.

use std::io::Write;

use dp_data::schema::parse_categorical;
use dp_data::{Schema, Task};
use dp_glm::Loss;
use serde_json::json;

use crate::CliError;
use crate::cli::{ColumnArgs, SchemaArgs};
use crate::model_file::{resolved, write_atomically};

/// Errors reading data or a schema are the user's input: exit 2, with the reader's
/// file/line/field.
pub(crate) fn data_error(e: dp_data::Error) -> CliError {
    CliError::Usage(e.to_string())
}

/// Whether `loss` takes classes or numbers as labels.
pub(crate) fn task_of(loss: Loss) -> Task {
    match loss.label_domain() {
        dp_glm::LabelDomain::Signs => Task::Classification,
        dp_glm::LabelDomain::Real => Task::Regression,
    }
}

/// The schema `dpglm train` reads with: the `--schema` file, if any, overridden by the flags
/// (`--label` and the column flags).
///
/// # Errors
///
/// [`CliError::Usage`] for an unreadable or invalid schema file, a malformed `--categorical`,
/// or a column named twice. The schema's public `scaling` values are applied by `train`
/// (`--scale`).
pub(crate) fn schema_of(label: Option<&str>, c: &ColumnArgs) -> Result<Schema, CliError> {
    let base = match &c.schema {
        Some(path) => Schema::read(path).map_err(data_error)?,
        None => Schema::default(),
    };
    let mut flags = Schema {
        label: label.map(str::to_owned),
        classes: c.classes.clone(),
        features: c.features.clone(),
        drop: c.drop.clone(),
        n_features: c.n_features,
        ..Schema::default()
    };
    for text in &c.categorical {
        let (column, levels) = parse_categorical(text)
            .map_err(|e| CliError::Usage(format!("invalid value for --categorical: {e}")))?;
        if flags.categorical.insert(column.clone(), levels).is_some() {
            return Err(CliError::Usage(format!(
                "invalid value for --categorical: column `{column}` given twice"
            )));
        }
    }
    flags
        .validate("the column flags")
        .map_err(|e| CliError::Usage(format!("invalid column flags: {e}")))?;
    let schema = base.overridden_by(flags);
    schema
        .validate("the schema with the flags applied")
        .map_err(data_error)?;
    Ok(schema)
}

/// `dpglm schema`: drafts a schema from the data for the user to review; it is not private
/// and says so.
pub(crate) fn schema(a: &SchemaArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let draft = dp_data::draft_schema(&a.data, a.label.as_deref()).map_err(data_error)?;
    let io = |e: std::io::Error| CliError::Failure(format!("cannot write output: {e}"));
    let note = draft.note.clone().unwrap_or_default();
    match &a.out {
        None => writeln!(out, "{}", draft.to_json()).map_err(io),
        Some(path) => {
            if resolved(path).is_some() && resolved(path) == a.data.canonicalize().ok() {
                return Err(CliError::Usage(format!(
                    "invalid value for --out: {} is the data file; refusing to overwrite it",
                    path.display()
                )));
            }
            // TOML for a `.toml` name, JSON otherwise (as `--schema` reads them back).
            let format =
                dp_data::SchemaFormat::of_name(path).unwrap_or(dp_data::SchemaFormat::Json);
            write_atomically(path, &format!("{}\n", draft.to_text(format)))?;
            if a.json {
                let v = json!({
                    "schema": path.display().to_string(),
                    "private": false,
                    "note": note,
                });
                writeln!(out, "{v}").map_err(io)
            } else {
                writeln!(out, "wrote {}. {note}", path.display()).map_err(io)
            }
        }
    }
}
