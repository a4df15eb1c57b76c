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
    /// Worker threads for the full-batch gradients (default: RAYON_NUM_THREADS, else one per
    /// CPU); a seeded fit is bit-identical whatever the number.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) threads: Option<u16>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The privacy (ε or δ) of a composition of mechanisms, or of the privacy event trees
    /// stored in model files (`--model FILE`, `--models FILE FILE…`).
    Account(AccountArgs),
    /// The smallest noise meeting a target (ε, δ).
    Calibrate(CalibrateArgs),
    /// Fit a private model.
    Train(Box<TrainArgs>),
    /// Score a saved model on a dataset.
    Evaluate(EvaluateArgs),
    /// Draft a schema from a CSV file for you to review (NOT private: it lists the values that
    /// occur in the data).
    Schema(SchemaArgs),
    /// Predictions (and, for logistic models, probabilities) of a saved model; no labels needed.
    Predict(PredictArgs),
    /// A privacy budget shared by many fits on the same rows (`train --budget FILE`).
    Budget(crate::budget::BudgetArgs),
}

/// Learning algorithms (spec/CLI.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AlgorithmArg {
    DpGd,
    DpSgd,
    NoisyGd,
    Objpert,
    Amp,
    OutputPerturbation,
    JlNoisyGd,
    DpSsgd,
    DpAmbssgd,
    Ssp,
    NonconvexDpGd,
    GridSearch,
    ConfidenceBoosting,
}

impl AlgorithmArg {
    /// The name as on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AlgorithmArg::DpGd => "dp-gd",
            AlgorithmArg::DpSgd => "dp-sgd",
            AlgorithmArg::NoisyGd => "noisy-gd",
            AlgorithmArg::Objpert => "objpert",
            AlgorithmArg::Amp => "amp",
            AlgorithmArg::OutputPerturbation => "output-perturbation",
            AlgorithmArg::JlNoisyGd => "jl-noisy-gd",
            AlgorithmArg::DpSsgd => "dp-ssgd",
            AlgorithmArg::DpAmbssgd => "dp-ambssgd",
            AlgorithmArg::Ssp => "ssp",
            AlgorithmArg::NonconvexDpGd => "nonconvex-dp-gd",
            AlgorithmArg::GridSearch => "grid-search",
            AlgorithmArg::ConfidenceBoosting => "confidence-boosting",
        }
    }
}

/// Losses on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LossArg {
    Logistic,
    Squared,
    Huber,
    /// The smoothed hinge (Iyengar et al. 2019), classification.
    HuberSvm,
    /// The Savage loss (non-convex, classification; for nonconvex-dp-gd).
    Savage,
}

impl LossArg {
    /// The name as on the command line (and in [`dp_glm::catalog::loss`]).
    pub(crate) fn name(self) -> &'static str {
        match self {
            LossArg::Logistic => "logistic",
            LossArg::Squared => "squared",
            LossArg::Huber => "huber",
            LossArg::HuberSvm => "huber-svm",
            LossArg::Savage => "savage",
        }
    }
}

/// Data file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    Csv,
    Libsvm,
    Npy,
    Parquet,
}

impl From<FormatArg> for dp_data::Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Csv => dp_data::Format::Csv,
            FormatArg::Libsvm => dp_data::Format::Libsvm,
            FormatArg::Npy => dp_data::Format::Npy,
            FormatArg::Parquet => dp_data::Format::Parquet,
        }
    }
}

/// Per-row preprocessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PreprocessArg {
    /// Rows as given.
    None,
    /// Every row scaled to unit L2 norm (paper 001).
    UnitNorm,
}

/// Per-feature scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScaleArg {
    /// `(v - center)/scale`, clipped to the feature's range.
    Standard,
    /// `[min, max]` to `[-1, 1]`, clipped.
    Minmax,
    /// Features as given.
    None,
}

/// How the training features are held in memory (`--storage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StorageArg {
    /// 8 bytes per value.
    F64,
    /// 4 bytes per value: f64 values rounded toward zero, every sum in f64.
    F32,
}

impl From<StorageArg> for dp_glm::Storage {
    fn from(s: StorageArg) -> Self {
        match s {
            StorageArg::F64 => dp_glm::Storage::F64,
            StorageArg::F32 => dp_glm::Storage::F32,
        }
    }
}

/// How `--tune` tunes DP-SGD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TuneArg {
    /// Papernot–Steinke: a random number of trials, accounted end to end.
    Honest,
    /// Every candidate at the full budget; the tuning is not accounted.
    Unaccounted,
}

/// The names a choice parameter of the learners' catalog takes, as the flag's possible values.
fn choices(param: &str) -> clap::builder::PossibleValuesParser {
    let names = dp_glm::catalog::LEARNERS
        .iter()
        .filter_map(|l| l.param(param))
        .find_map(|p| match p.kind {
            dp_glm::catalog::Kind::Choice(c) => Some(c),
            _ => None,
        })
        .unwrap_or_default();
    clap::builder::PossibleValuesParser::new(names.iter().copied())
}

/// `dpglm train`.
#[derive(Debug, Args)]
pub(crate) struct TrainArgs {
    /// Training data file.
    #[arg(long)]
    pub data: std::path::PathBuf,
    /// File format (default: from the extension).
    #[arg(long = "format", value_enum)]
    pub format_arg: Option<FormatArg>,
    /// Label column (CSV) or label column index (NPY); overrides the schema's.
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// Test data file, scored with the trained model (read like the training data).
    #[arg(long)]
    pub test: Option<std::path::PathBuf>,
    /// The learning algorithm (default by the loss: amp for logistic, huber and huber-svm,
    /// ssp for squared, nonconvex-dp-gd for savage).
    #[arg(long = "algorithm", value_enum)]
    pub algorithm_arg: Option<AlgorithmArg>,
    /// The loss (logistic, huber-svm, savage: classification; squared, huber: regression).
    #[arg(long, value_enum, default_value = "logistic")]
    pub loss: LossArg,
    /// The threshold h of --loss huber (default 1) or huber-svm (default 0.1).
    #[arg(long)]
    pub huber_h: Option<f64>,
    /// Target ε.
    #[arg(long)]
    pub epsilon: f64,
    /// Target δ.
    #[arg(long)]
    pub delta: f64,
    /// Accountant (default: the algorithm's).
    #[arg(long, value_enum)]
    pub accountant: Option<CalibrationAccountantArg>,
    /// Neighbouring relation (default: the algorithm's).
    #[arg(long, value_enum)]
    pub neighbouring: Option<NeighbouringArg>,
    /// Per-row preprocessing, after any feature scaling (default: unit-norm for logistic
    /// without feature scaling, none otherwise).
    #[arg(long, value_enum)]
    pub preprocess: Option<PreprocessArg>,
    /// Per-feature scaling: the schema's public `scaling` values where given, ranges estimated
    /// privately within --bounds-budget for the other numeric features (one-hot columns
    /// mapped from [0, 1]). Default: minmax for logistic on CSV files (estimated ranges:
    /// centre ± 3 scales from private quartiles), or as the schema's scaling values say
    /// (standard if any gives a center or scale, else minmax); none otherwise.
    #[arg(long, value_enum)]
    pub scale: Option<ScaleArg>,
    /// Value of an appended bias feature (0: none).
    #[arg(long, default_value_t = 1.0)]
    pub bias: f64,
    /// Clipping norm (default: the learner's when the preprocessing bounds the rows and the
    /// loss is Lipschitz, else estimated privately within --bounds-budget).
    #[arg(long)]
    pub clip: Option<f64>,
    /// Number of full-batch steps.
    #[arg(long)]
    pub steps: Option<usize>,
    /// Number of epochs (dp-sgd).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Batch size (stochastic methods).
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// DP-SGD's Poisson sampling rate q in (0, 1], a public value used instead of
    /// `--batch-size`/n: q and the number of steps then do not depend on the number of rows.
    #[arg(long, conflicts_with = "batch_size")]
    pub sample_rate: Option<f64>,
    /// The number of training rows as a public value N, used wherever the learner reads n
    /// (DP-SGD: q = batch size/N and the expected batch q·N) instead of the true count, which
    /// is private under add/remove; without it, under add/remove, a private count of the rows
    /// (5% of --epsilon) takes its place; ssp: sizes the noise grids and λ_min's allowance
    /// (more rows than N: refused; without it the true count, treated as public).
    #[arg(long = "n", value_name = "N")]
    pub public_n: Option<usize>,
    /// Learning rate.
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// Ridge penalty λ.
    #[arg(long)]
    pub lambda: Option<f64>,
    /// Radius of the constraint ball (dp-gd, noisy-gd, jl-noisy-gd, output-perturbation,
    /// confidence-boosting; the domain bound of dp-ambssgd).
    #[arg(long)]
    pub radius: Option<f64>,
    /// Public bound on row norms (noisy-gd, jl-noisy-gd, ssp, dp-ambssgd, objpert, amp,
    /// output-perturbation, grid-search, confidence-boosting; default: implied by unit-norm
    /// preprocessing, else estimated privately within --bounds-budget).
    #[arg(long)]
    pub x_bound: Option<f64>,
    /// Public bound on labels (noisy-gd, jl-noisy-gd, ssp, output-perturbation, grid-search,
    /// confidence-boosting; default for regression: estimated privately within
    /// --bounds-budget; 1 for classification with grid-search and confidence-boosting).
    #[arg(long)]
    pub y_bound: Option<f64>,
    /// Fraction of epsilon spent on privately estimating the bounds the learner needs and the
    /// user did not give (--x-bound, --y-bound, --clip) and the feature ranges of --scale;
    /// the learner gets the rest.
    /// Default: 0.1, or 0.2 when feature ranges are estimated (--scale).
    #[arg(long)]
    pub bounds_budget: Option<f64>,
    /// JL target dimension (jl-noisy-gd).
    #[arg(long)]
    pub k: Option<usize>,
    /// AMP's gradient-norm tolerance τ, absolute (default 5e-4·L/√2 for the Lipschitz bound L
    /// of the row bound and clip: 5e-4 for unit rows plus a bias 1; raised to the gradient's
    /// floating-point floor on millions of rows).
    #[arg(long)]
    pub tau: Option<f64>,
    /// AMP's output noise σ_out, absolute (default 0.15·√2/L: 0.15 for unit rows plus a bias 1;
    /// raised to hold the release box on tens of millions of rows).
    #[arg(long)]
    pub sigma_out: Option<f64>,
    /// AMP's solver, tried first (lbfgs, sag; default lbfgs): costs no privacy.
    #[arg(long, value_parser = choices("solver"))]
    pub solver: Option<String>,
    /// DP-SGD's batch schedule (poisson, shuffle, fixed; default poisson): Poisson sampling
    /// under add/remove; shuffle (one pass) and fixed (fixed-size batches) under replace-one.
    #[arg(long, value_parser = choices("batch_schedule"))]
    pub batch_schedule: Option<String>,
    /// DP-SGD's update rule (sgd, momentum, adam; default sgd): post-processing.
    #[arg(long, value_parser = choices("update"))]
    pub update: Option<String>,
    /// DP-SGD's momentum coefficient β in [0, 1) (with --update momentum; default 0.9).
    #[arg(long)]
    pub momentum: Option<f64>,
    /// Number of radii of grid-search (default 6: radii 2, 4, …, 64).
    #[arg(long)]
    pub candidates: Option<usize>,
    /// Number of models of confidence-boosting (default 4).
    #[arg(long)]
    pub models: Option<usize>,
    /// Tune DP-SGD's learning rate over `--learning-rates`: `honest` (Papernot–Steinke,
    /// accounted) or `unaccounted` (every rate at the full budget; the report says the tuning
    /// is not accounted).
    #[arg(long, value_enum)]
    pub tune: Option<TuneArg>,
    /// Candidate learning rates for `--tune`, comma-separated.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub learning_rates: Option<Vec<f64>>,
    /// Mean number of trials for `--tune honest` (K ~ Poisson; default: the number of rates).
    #[arg(long)]
    pub tune_trials: Option<f64>,
    /// Seed of a reproducible (non-cryptographic) noise stream, for experiments only; without
    /// it the noise comes from the OS-seeded CSPRNG.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the model (coefficients, preprocessing, privacy report) to this JSON file: a new
    /// path or a regular file, replaced atomically (a symbolic link, FIFO or device is refused,
    /// not followed).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// A budget file (`dpglm budget new`) shared by fits on the same rows: the run is refused,
    /// before any data is read, when its --epsilon and --delta would take the recorded fits
    /// past the budget; else its privacy event is recorded before the model is written.
    #[arg(long, value_name = "FILE")]
    pub budget: Option<std::path::PathBuf>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Read the training data block by block instead of loading it (ssp: one pass over its
    /// exact sufficient statistics, memory O(d²) plus a block; dp-gd and noisy-gd: one pass
    /// per step, memory O(d) plus a block); needs public bounds (--x-bound, --y-bound, --clip)
    /// and no feature scaling. See the README.
    #[arg(long)]
    pub stream: bool,
    /// How the training features are held in memory: f64, or f32 (half the memory; f64 values
    /// rounded toward zero as they are read, block by block; every sum still in f64). A
    /// public choice, recorded in the report. With f32: no feature ranges estimated from the
    /// data (--scale), no --stream. See the README.
    #[arg(long, value_enum, default_value_t = StorageArg::F64)]
    pub storage: StorageArg,
}

impl TrainArgs {
    /// The learner: `--algorithm`, else the default for the loss (AMP for the convex losses
    /// but squared, AdaSSP for squared, non-convex DP-GD for the Savage loss).
    pub(crate) fn algorithm(&self) -> AlgorithmArg {
        self.algorithm_arg.unwrap_or(match self.loss {
            LossArg::Squared => AlgorithmArg::Ssp,
            LossArg::Savage => AlgorithmArg::NonconvexDpGd,
            LossArg::Logistic | LossArg::Huber | LossArg::HuberSvm => AlgorithmArg::Amp,
        })
    }
}

/// How a table's columns become features and labels (CSV; `--classes` for every format).
/// Each flag overrides the schema file's setting.
#[derive(Debug, Args)]
pub(crate) struct ColumnArgs {
    /// Schema file (JSON, or TOML for a `.toml` name or text not starting with `{`): label,
    /// classes, features or drop, categorical levels, scaling (the flags override it;
    /// `dpglm schema` drafts one).
    #[arg(long)]
    pub schema: Option<std::path::PathBuf>,
    /// The feature columns, comma-separated, in this order (default: every column but the
    /// label).
    #[arg(long, value_delimiter = ',', conflicts_with = "drop")]
    pub features: Option<Vec<String>>,
    /// Columns not to read, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub drop: Option<Vec<String>>,
    /// A categorical column and its public levels, `COLUMN=LEVEL1|LEVEL2|...` (repeatable),
    /// one-hot encoded; a last level `*` collects every other value, otherwise a value outside
    /// the levels is an error.
    #[arg(long)]
    pub categorical: Vec<String>,
    /// The public class pair `NEGATIVE,POSITIVE` (classification; default: labels 0/1 or
    /// -1/1).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub classes: Option<Vec<String>>,
    /// The public number of features (required for LIBSVM training files, whose width read
    /// from the file would be the largest index that occurs; checked against files that
    /// state their width).
    #[arg(long, value_name = "N")]
    pub n_features: Option<usize>,
}

/// `dpglm schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The CSV file to draft the schema from.
    #[arg(long)]
    pub data: std::path::PathBuf,
    /// The label column.
    #[arg(long)]
    pub label: Option<String>,
    /// Write the schema to this file instead of stdout (TOML for a `.toml` name, else JSON).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// One JSON object on stdout (the schema; with --out, where it was written).
    #[arg(long)]
    pub json: bool,
}

/// What `evaluate` and `predict` read: a model and the data to score with it.
#[derive(Debug, Args)]
pub(crate) struct ScoringArgs {
    /// The model file written by `dpglm train --out`.
    #[arg(long)]
    pub model: std::path::PathBuf,
    /// Data file (for `predict`, a CSV needs no label column).
    #[arg(long)]
    pub data: std::path::PathBuf,
    /// File format (default: from the extension).
    #[arg(long = "format", value_enum)]
    pub format_arg: Option<FormatArg>,
    /// Label column (CSV) or label column index (NPY), when it differs from training's (the
    /// model stores the label column, the class pair and the features).
    #[arg(long)]
    pub label: Option<String>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `dpglm evaluate`.
#[derive(Debug, Args)]
pub(crate) struct EvaluateArgs {
    /// The model and the data.
    #[command(flatten)]
    pub scoring: ScoringArgs,
}

/// `dpglm predict`.
#[derive(Debug, Args)]
pub(crate) struct PredictArgs {
    /// The model and the data.
    #[command(flatten)]
    pub scoring: ScoringArgs,
    /// Write the predictions as CSV (`prediction[,probability]`) to this file instead of stdout:
    /// a new path or a regular file, replaced atomically (a symbolic link, FIFO or device is
    /// refused, not followed).
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
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
#[command(
    after_help = "With --model FILE (or --models FILE FILE...) instead of a mechanism, \
    prices the privacy event trees stored in model files again: see `dpglm account --model \
    FILE --help`."
)]
pub(crate) struct AccountArgs {
    #[command(flatten)]
    pub mechanism: MechanismArgs,
    /// Number of compositions (default 1, or ceil(epochs·n/batch size) with --epochs).
    #[arg(long, conflicts_with = "epochs")]
    pub steps: Option<u64>,
    /// Epochs E (subsampled-gaussian, TF Privacy's vocabulary, with --n and --batch-size):
    /// steps = ceil(E·n/batch size).
    #[arg(long, requires = "batch_size")]
    pub epochs: Option<u64>,
    /// Report ε at this δ.
    #[arg(long)]
    pub delta: Option<f64>,
    /// Report δ at this ε.
    #[arg(long)]
    pub epsilon: Option<f64>,
    /// Accountant (default: pld, then exact, then rdp — the first that can answer is used and
    /// named in the output, with the reasons the others could not).
    #[arg(long, value_enum)]
    pub accountant: Option<AccountantArg>,
    /// Neighbouring relation (default: the mechanism's own — replace-one for sampling
    /// without replacement, add-remove otherwise).
    #[arg(long, value_enum)]
    pub neighbouring: Option<NeighbouringArg>,
    /// PLD: target relative error of ε against the limit of ever finer grids; the grid is
    /// refined until the estimate is below it (or the grid limit is reached).
    #[arg(long, default_value_t = 1e-3)]
    pub epsilon_error: f64,
    /// PLD: most grid points of one mechanism or of the composition (default 4194304).
    #[arg(long)]
    pub max_grid: Option<usize>,
    /// Also compute the PLD accountant's optimistic (lower) estimate `epsilon_lower`.
    #[arg(long)]
    pub lower: bool,
    /// Honest tuning (Papernot & Steinke 2022): the privacy of running the whole composition
    /// K ~ Poisson(MEAN) times (one run per hyper-parameter trial) and releasing only the
    /// best run; RDP accountant.
    #[arg(long, value_name = "MEAN")]
    pub tune_trials: Option<f64>,
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
pub(crate) fn dispatch(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Account(a) => account::account(&a, out),
        Command::Calibrate(c) => account::calibrate(&c, out),
        Command::Train(t) => crate::train::train(&t, out, err),
        Command::Evaluate(e) => crate::train::evaluate(&e, out),
        Command::Schema(s) => crate::schema::schema(&s, out),
        Command::Predict(p) => crate::predict::predict(&p, out),
        Command::Budget(b) => crate::budget::budget(&b, out),
    }
}
