//! `dpglm account --model FILE` and `--models FILE…`: the privacy event trees stored in model
//! files priced again, alone or composed (models trained on the same rows).

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use dp_accounting::{AccountantKind, PrivacyEvent, price};
use dp_glm::text_up;
use serde_json::json;

use crate::CliError;
use crate::cli::AccountantArg;
use crate::model_file::read_model;

/// `dpglm account --model FILE` or `--models FILE FILE…`: the privacy event trees stored in
/// model files, priced again.
#[derive(Debug, Parser)]
#[command(
    name = "dpglm account",
    about = "Price the privacy event tree stored in a model file again (and check the \
             reported epsilon), or the composition of several models trained on the same rows"
)]
pub(crate) struct ModelQuery {
    /// A model file: its stored event tree is priced again at its delta by its accountant,
    /// and compared with the reported epsilon (exit 1 if the tree costs more).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "models",
        conflicts_with = "models"
    )]
    pub model: Option<PathBuf>,
    /// Two or more model files trained on the same rows: their trees composed in this order
    /// (one neighbouring relation) and priced together.
    #[arg(long, value_name = "FILE", num_args = 2..)]
    pub models: Vec<PathBuf>,
    /// Accountant (default: the model's own for one model, pld for several).
    #[arg(long, value_enum)]
    pub accountant: Option<AccountantArg>,
    /// Report epsilon at this delta (default: the models' delta; several models must share
    /// one).
    #[arg(long)]
    pub delta: Option<f64>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Whether `args` (after the program name) ask `account` to price model files.
pub(crate) fn asks_for_models(args: &[String]) -> bool {
    args.get(1).is_some_and(|a| a == "account")
        && args[2..].iter().any(|a| {
            let flag = a.split('=').next().unwrap_or(a);
            flag == "--model" || flag == "--models"
        })
}

fn io(e: std::io::Error) -> CliError {
    CliError::Failure(format!("cannot write the output: {e}"))
}

/// Prices the stored trees and prints the answer.
///
/// # Privacy
/// [`dp_accounting::price`] on each model's stored tree, or on their composition in the
/// order given (one relation: models stated under different relations are refused).
///
/// # Errors
/// An unreadable model file, mixed relations, or no analysis that can price the tree.
pub(crate) fn account_models(q: &ModelQuery, out: &mut dyn Write) -> Result<(), CliError> {
    let paths: Vec<PathBuf> = q.model.iter().chain(&q.models).cloned().collect();
    if let Some(d) = q.delta
        && !(dp_accounting::DELTA_MIN..1.0).contains(&d)
    {
        return Err(CliError::Usage(format!(
            "invalid value for --delta: {d} (must be in [{:e}, 1))",
            dp_accounting::DELTA_MIN
        )));
    }
    let mut events = Vec::with_capacity(paths.len());
    let mut reports = Vec::with_capacity(paths.len());
    for path in &paths {
        let m = read_model(path)?;
        events.push(m.privacy().event.clone());
        reports.push((path, m.privacy().clone()));
    }
    let (first_path, first) = &reports[0];
    let delta = match q.delta {
        Some(d) => d,
        None => {
            if let Some((p, r)) = reports.iter().find(|(_, r)| r.delta != first.delta) {
                return Err(CliError::Usage(format!(
                    "{} was priced at delta = {:e} and {} at delta = {:e}: give --delta to \
                     price their composition at one delta",
                    first_path.display(),
                    first.delta,
                    p.display(),
                    r.delta
                )));
            }
            first.delta
        }
    };
    let accountant = q
        .accountant
        .map(AccountantKind::from)
        .unwrap_or(if reports.len() == 1 {
            first.accountant
        } else {
            AccountantKind::Pld
        });
    let rel = first.neighbouring;
    let tree = if events.len() == 1 {
        events.remove(0)
    } else {
        PrivacyEvent::composed(events).map_err(|e| {
            CliError::Usage(format!(
                "the models cannot be composed: {e} (each model's relation is in its \
                 privacy.neighbouring)"
            ))
        })?
    };
    let priced = price(&tree, accountant, delta)
        .map_err(|e| CliError::Usage(format!("the stored events cannot be priced: {e}")))?;
    // For one model at its own δ and accountant: does the price equal the reported ε?
    let reported = (reports.len() == 1
        && q.delta.is_none_or(|d| d == first.delta)
        && accountant == first.accountant)
        .then_some(first.epsilon);
    if q.json {
        let models: Vec<_> = reports
            .iter()
            .map(|(p, r)| {
                json!({
                    "path": p.display().to_string(),
                    "epsilon": r.epsilon,
                    "delta": r.delta,
                    "accountant": r.accountant.as_str(),
                    "neighbouring": r.neighbouring.as_str(),
                })
            })
            .collect();
        let v = json!({
            "epsilon": priced.epsilon,
            "delta": delta,
            "accountant": accountant.as_str(),
            "method": priced.method.as_str(),
            "neighbouring": rel.as_str(),
            "models": models,
            "reported_epsilon": reported,
            "matches_reported": reported.map(|r| r == priced.epsilon),
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "epsilon = {} at delta = {delta:e} ({} accountant, {} relation, root priced by {})",
            text_up(priced.epsilon, 6),
            accountant,
            rel,
            priced.method
        )
        .map_err(io)?;
        for (p, r) in &reports {
            writeln!(
                out,
                "  {}: reported epsilon = {} at delta = {:e} ({})",
                p.display(),
                text_up(r.epsilon, 6),
                r.delta,
                r.accountant
            )
            .map_err(io)?;
        }
        if let Some(r) = reported {
            let verdict = if r == priced.epsilon {
                "equals the reported epsilon"
            } else {
                "DIFFERS from the reported epsilon"
            };
            writeln!(out, "  the price of the stored event tree {verdict}").map_err(io)?;
        }
    }
    if let Some(r) = reported
        && r < priced.epsilon
    {
        return Err(CliError::Failure(format!(
            "{}: the stored event tree costs epsilon = {} but the model reports {}: the \
             report under-states its privacy loss",
            first_path.display(),
            priced.epsilon,
            r
        )));
    }
    Ok(())
}
