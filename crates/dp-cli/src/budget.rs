//! `dpglm budget new | show` and `train --budget FILE`: a privacy budget shared by many fits
//! on the same rows ([`dp_glm::shared_budget`]).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use dp_accounting::AccountantKind;
use dp_glm::shared_budget::{BudgetError, Plan, Reservation, SharedBudget};
use dp_glm::{Loss, text_down, text_up};
use serde_json::json;

use crate::CliError;
use crate::cli::{AccountantArg, TrainArgs};

/// `dpglm budget`.
#[derive(Debug, Args)]
pub(crate) struct BudgetArgs {
    #[command(subcommand)]
    action: BudgetAction,
}

#[derive(Debug, Subcommand)]
enum BudgetAction {
    /// Create a budget file of (epsilon, delta) for `train --budget FILE`.
    New {
        /// The budget file to create (it must not exist).
        file: PathBuf,
        /// Total epsilon of every fit charged to it.
        #[arg(long)]
        epsilon: f64,
        /// Total delta.
        #[arg(long)]
        delta: f64,
        /// Accountant that composes the recorded fits.
        #[arg(long, value_enum, default_value = "pld")]
        accountant: AccountantArg,
    },
    /// What a budget file has recorded, spent and left.
    Show {
        /// The budget file.
        file: PathBuf,
        /// What is left is given for a fit at this delta (default: a tenth of the budget's).
        #[arg(long)]
        delta: Option<f64>,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// A budget error as the CLI reports it: refusals and bad files are usage errors (exit 2).
fn cli_error(e: BudgetError) -> CliError {
    match e {
        BudgetError::Pricing(_) => CliError::Failure(e.to_string()),
        _ => CliError::Usage(e.to_string()),
    }
}

fn io(e: std::io::Error) -> CliError {
    CliError::Failure(format!("cannot write the output: {e}"))
}

/// Runs `dpglm budget`.
///
/// # Privacy
/// `show` reports [`SharedBudget::spent`] and [`SharedBudget::left_for`]: the accountant's
/// price of the recorded events' composition.
pub(crate) fn budget(b: &BudgetArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &b.action {
        BudgetAction::New {
            file,
            epsilon,
            delta,
            accountant,
        } => {
            let kind = AccountantKind::from(*accountant);
            SharedBudget::create(file, *epsilon, *delta, kind).map_err(cli_error)?;
            writeln!(
                out,
                "created {}: epsilon = {epsilon}, delta = {delta:e} ({kind} accountant)",
                file.display()
            )
            .map_err(io)
        }
        BudgetAction::Show { file, delta, json } => {
            let budget = SharedBudget::open(file).map_err(cli_error)?;
            let at = delta.unwrap_or(budget.delta() / 10.0);
            let spent = budget.spent().map_err(cli_error)?;
            let left = budget.left_for(at).map_err(cli_error)?;
            let fits = budget.fits().map_err(cli_error)?;
            if *json {
                let fits: Vec<_> = fits
                    .iter()
                    .map(|f| json!({"label": f.label, "epsilon": f.epsilon, "delta": f.delta}))
                    .collect();
                let v = json!({
                    "path": file.display().to_string(),
                    "epsilon": budget.epsilon(),
                    "delta": budget.delta(),
                    "accountant": budget.accountant().as_str(),
                    "spent_epsilon": spent.epsilon,
                    "left_epsilon": left.unwrap_or(0.0),
                    "left_at_delta": at,
                    "fits": fits,
                });
                writeln!(out, "{v}").map_err(io)
            } else {
                writeln!(
                    out,
                    "{}: epsilon = {}, delta = {:e} ({} accountant)\n  {} fit(s) recorded, \
                     together epsilon = {} at delta = {:e}\n  left for a fit at delta = {at:e}: \
                     epsilon = {}",
                    file.display(),
                    budget.epsilon(),
                    budget.delta(),
                    budget.accountant(),
                    spent.fits,
                    text_up(spent.epsilon, 6),
                    budget.delta(),
                    text_down(left.unwrap_or(0.0), 6),
                )
                .map_err(io)?;
                for f in &fits {
                    writeln!(
                        out,
                        "  {}: target epsilon = {}, delta = {:e}",
                        f.label, f.epsilon, f.delta
                    )
                    .map_err(io)?;
                }
                Ok(())
            }
        }
    }
}

/// The budget file of `train --budget`, opened before any data is read.
pub(crate) fn open(a: &TrainArgs) -> Result<Option<SharedBudget>, CliError> {
    a.budget
        .as_ref()
        .map(|p| {
            SharedBudget::open(p).map_err(|e| {
                CliError::Usage(format!(
                    "invalid value for --budget: {e} (create one with `dpglm budget new {} \
                     --epsilon E --delta D`)",
                    p.display()
                ))
            })
        })
        .transpose()
}

/// Admits this run's target `(--epsilon, --delta)` under its relation, before any data is
/// read; the reservation holds the budget until the model is recorded.
pub(crate) fn reserve<'a>(
    a: &TrainArgs,
    loss: Loss,
    budget: Option<&'a SharedBudget>,
) -> Result<Option<Reservation<'a>>, CliError> {
    let Some(budget) = budget else {
        return Ok(None);
    };
    let neighbouring = crate::train::learner_of(a)?
        .relation(loss, &crate::train::params_of(a))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let plan = Plan {
        epsilon: a.epsilon,
        delta: a.delta,
        neighbouring,
    };
    budget.reserve(&plan).map(Some).map_err(cli_error)
}
