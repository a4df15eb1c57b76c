//! Argument definitions.

use std::io::Write;

use clap::{Args, Parser, Subcommand, ValueEnum};
use dp_accounting::{AccountantKind, Neighbouring};

use crate::CliError;
use crate::account;
use crate::mechanism_args::MechanismArgs;

/// Differentially private linear models with tight privacy accounting.
#[derive(Debug, Parser)]
#[command(name = "dpglm", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The privacy (ε or δ) of a composition of mechanisms.
    Account(AccountArgs),
    /// The smallest noise meeting a target (ε, δ).
    Calibrate(CalibrateArgs),
}

/// Accountant names on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum AccountantArg {
    Pld,
    Rdp,
    Zcdp,
    Exact,
}

impl From<AccountantArg> for AccountantKind {
    fn from(a: AccountantArg) -> Self {
        match a {
            AccountantArg::Pld => AccountantKind::Pld,
            AccountantArg::Rdp => AccountantKind::Rdp,
            AccountantArg::Zcdp => AccountantKind::Zcdp,
            AccountantArg::Exact => AccountantKind::Exact,
        }
    }
}

/// Calibration supports the general accountants only.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CalibrationAccountantArg {
    Pld,
    Rdp,
}

/// Neighbouring relations on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum NeighbouringArg {
    AddRemove,
    ReplaceOne,
}

impl From<NeighbouringArg> for Neighbouring {
    fn from(n: NeighbouringArg) -> Self {
        match n {
            NeighbouringArg::AddRemove => Neighbouring::AddRemove,
            NeighbouringArg::ReplaceOne => Neighbouring::ReplaceOne,
        }
    }
}

/// `dpglm account`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("query").required(true).args(["delta", "epsilon"])))]
pub(crate) struct AccountArgs {
    #[command(flatten)]
    pub mechanism: MechanismArgs,
    /// Number of compositions.
    #[arg(long, default_value_t = 1)]
    pub steps: u64,
    /// Report ε at this δ.
    #[arg(long)]
    pub delta: Option<f64>,
    /// Report δ at this ε.
    #[arg(long)]
    pub epsilon: Option<f64>,
    /// Accountant (default: pld, or rdp where pld does not apply).
    #[arg(long, value_enum)]
    pub accountant: Option<AccountantArg>,
    /// Neighbouring relation (default: the mechanism's own — replace-one for sampling
    /// without replacement, add-remove otherwise).
    #[arg(long, value_enum)]
    pub neighbouring: Option<NeighbouringArg>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `dpglm calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    #[command(flatten)]
    pub mechanism: MechanismArgs,
    /// Number of compositions.
    #[arg(long)]
    pub steps: u64,
    /// Target ε.
    #[arg(long)]
    pub target_epsilon: f64,
    /// Target δ.
    #[arg(long)]
    pub delta: f64,
    /// Accountant (default pld, or rdp where pld does not apply).
    #[arg(long, value_enum)]
    pub accountant: Option<CalibrationAccountantArg>,
    /// Neighbouring relation (default as for `account`).
    #[arg(long, value_enum)]
    pub neighbouring: Option<NeighbouringArg>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the parsed command.
pub(crate) fn dispatch(cli: Cli, out: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Account(a) => account::account(&a, out),
        Command::Calibrate(c) => account::calibrate(&c, out),
    }
}
