//! The mechanism flags shared by `account` and `calibrate`.

use clap::{Args, ValueEnum};
use dp_accounting::{Error, Mechanism, Neighbouring, ObjPertParams};

use crate::CliError;

/// Mechanism names on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MechanismName {
    Gaussian,
    SubsampledGaussian,
    Laplace,
    Objpert,
    Amp,
    GammaBall,
    /// `n` shuffled (ε0, δ0)-DP local randomisers (Feldman, McMillan & Talwar 2021).
    Shuffling,
}

/// How a subsampled batch is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SamplingArg {
    Poisson,
    WithoutReplacement,
}

/// Mechanism and its parameters.
#[derive(Debug, Args)]
pub(crate) struct MechanismArgs {
    /// The mechanism.
    #[arg(long, value_enum)]
    pub mechanism: MechanismName,
    /// Noise standard deviation (gaussian, objpert, amp) or noise multiplier
    /// (subsampled-gaussian).
    #[arg(long)]
    pub sigma: Option<f64>,
    /// Per-record sensitivity bound (default 1).
    #[arg(long)]
    pub sensitivity: Option<f64>,
    /// Sampling rate.
    #[arg(long)]
    pub q: Option<f64>,
    /// Batch sampling scheme (subsampled-gaussian).
    #[arg(long, value_enum)]
    pub sampling: Option<SamplingArg>,
    /// Dataset size (sampling without replacement; with --batch-size; shuffling).
    #[arg(long)]
    pub n: Option<u64>,
    /// Batch size B (subsampled-gaussian, TF Privacy's vocabulary): q = B/n, with --n.
    #[arg(long, conflicts_with = "q", requires = "n")]
    pub batch_size: Option<u64>,
    /// Noise scale (laplace, gamma-ball).
    #[arg(long)]
    pub scale: Option<f64>,
    /// Regularisation λ (objpert, amp).
    #[arg(long)]
    pub lambda: Option<f64>,
    /// Smoothness β (objpert, amp).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Lipschitz bound L (objpert, amp).
    #[arg(long)]
    pub lipschitz: Option<f64>,
    /// Gradient-norm tolerance τ (amp).
    #[arg(long)]
    pub tau: Option<f64>,
    /// Output noise σ_out (amp).
    #[arg(long)]
    pub sigma_out: Option<f64>,
    /// Dimension (gamma-ball).
    #[arg(long)]
    pub dim: Option<u64>,
    /// ε0 of each local randomiser (shuffling).
    #[arg(long)]
    pub eps0: Option<f64>,
    /// δ0 of each local randomiser (shuffling; default 0).
    #[arg(long)]
    pub delta0: Option<f64>,
}

/// The flag that carries a library parameter's value.
fn flag_of(param: &str) -> String {
    match param {
        "noise_multiplier" => "--sigma".into(),
        "batch" => "--q".into(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

/// The batch `q·n` of sampling without replacement, which must be a whole number ≥ 1.
fn whole_batch(q: f64, n: u64) -> Result<u64, CliError> {
    let batch = q * n as f64;
    if batch >= 1.0 && (batch - batch.round()).abs() < 1e-9 * batch {
        Ok(batch.round() as u64)
    } else {
        Err(CliError::Usage(format!(
            "invalid value for --q: {q} (q x n = {batch} must be a whole batch size of at least 1)"
        )))
    }
}

/// A number as a user would have typed it: exponent form for very small or large values.
pub(crate) fn show(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-3..1e6).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Maps a library error to the CLI's: invalid parameters and unsupported combinations are
/// usage errors (exit 2), the rest failures (exit 1).
pub(crate) fn map_error(e: Error) -> CliError {
    match e {
        Error::InvalidParameter {
            name,
            value,
            reason,
        } => CliError::Usage(format!(
            "invalid value for {}: {} ({reason})",
            flag_of(name),
            show(value)
        )),
        Error::Unsupported { .. } => CliError::Usage(e.to_string()),
        other => CliError::Failure(other.to_string()),
    }
}

impl MechanismArgs {
    /// The mechanism's name as in the contract.
    pub fn name(&self) -> &'static str {
        match self.mechanism {
            MechanismName::Gaussian => "gaussian",
            MechanismName::SubsampledGaussian => "subsampled-gaussian",
            MechanismName::Laplace => "laplace",
            MechanismName::Objpert => "objpert",
            MechanismName::Amp => "amp",
            MechanismName::GammaBall => "gamma-ball",
            MechanismName::Shuffling => "shuffling",
        }
    }

    /// The flag holding this mechanism's noise (what `calibrate` computes).
    pub fn noise_flag(&self) -> &'static str {
        match self.mechanism {
            MechanismName::Laplace | MechanismName::GammaBall => "--scale",
            MechanismName::Shuffling => "--eps0",
            _ => "--sigma",
        }
    }

    /// The relation the mechanism's analysis is natural for.
    pub fn natural_relation(&self) -> Neighbouring {
        if self.sampling == Some(SamplingArg::WithoutReplacement)
            || self.mechanism == MechanismName::Shuffling
        {
            Neighbouring::ReplaceOne
        } else {
            Neighbouring::AddRemove
        }
    }

    fn given(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--sigma", self.sigma.is_some()),
            ("--sensitivity", self.sensitivity.is_some()),
            ("--q", self.q.is_some()),
            ("--sampling", self.sampling.is_some()),
            ("--n", self.n.is_some()),
            ("--batch-size", self.batch_size.is_some()),
            ("--scale", self.scale.is_some()),
            ("--lambda", self.lambda.is_some()),
            ("--beta", self.beta.is_some()),
            ("--lipschitz", self.lipschitz.is_some()),
            ("--tau", self.tau.is_some()),
            ("--sigma-out", self.sigma_out.is_some()),
            ("--dim", self.dim.is_some()),
            ("--eps0", self.eps0.is_some()),
            ("--delta0", self.delta0.is_some()),
        ]
    }

    fn allowed(&self) -> &'static [&'static str] {
        match self.mechanism {
            MechanismName::Gaussian => &["--sigma", "--sensitivity"],
            MechanismName::SubsampledGaussian => {
                &["--sigma", "--q", "--batch-size", "--sampling", "--n"]
            }
            MechanismName::Laplace => &["--scale", "--sensitivity"],
            MechanismName::Objpert => &["--sigma", "--lambda", "--beta", "--lipschitz"],
            MechanismName::Amp => &[
                "--sigma",
                "--lambda",
                "--beta",
                "--lipschitz",
                "--tau",
                "--sigma-out",
            ],
            MechanismName::GammaBall => &["--scale", "--q", "--dim", "--sensitivity"],
            MechanismName::Shuffling => &["--eps0", "--delta0", "--n"],
        }
    }

    /// Errors on flags that do not apply to the mechanism, and (when `calibrating`) on the
    /// noise flag, which `calibrate` computes.
    pub fn check_flags(&self, calibrating: bool) -> Result<(), CliError> {
        for (flag, present) in self.given() {
            if present && !self.allowed().contains(&flag) {
                return Err(CliError::Usage(format!(
                    "{flag} does not apply to --mechanism {}",
                    self.name()
                )));
            }
            if present && calibrating && flag == self.noise_flag() {
                return Err(CliError::Usage(format!(
                    "{flag} is what calibrate computes; drop it"
                )));
            }
        }
        Ok(())
    }

    /// The sampling rate: `--q`, or TF Privacy's `--batch-size B` over `--n N`, `q = B/N`
    /// (`None` when neither is given).
    ///
    /// # Errors
    /// A batch size of 0 or larger than `--n`.
    pub fn sampling_rate(&self) -> Result<Option<f64>, CliError> {
        match (self.batch_size, self.n) {
            (Some(b), Some(n)) if b >= 1 && b <= n => Ok(Some(b as f64 / n as f64)),
            (Some(b), Some(n)) => Err(CliError::Usage(format!(
                "invalid value for --batch-size: {b} (must be in [1, --n = {n}])"
            ))),
            (Some(_), None) => Err(CliError::Usage("--batch-size needs --n".into())),
            (None, _) => Ok(self.q),
        }
    }

    /// The mechanism, with `noise` (if given) in place of the noise flag.
    pub fn build(&self, noise: Option<f64>) -> Result<Mechanism, CliError> {
        let need = |v: Option<f64>, flag: &str| {
            v.ok_or_else(|| {
                CliError::Usage(format!(
                    "{flag} is required for --mechanism {}",
                    self.name()
                ))
            })
        };
        let sigma = || need(noise.or(self.sigma), "--sigma");
        let scale = || need(noise.or(self.scale), "--scale");
        let sens = self.sensitivity.unwrap_or(1.0);
        let objpert = || -> Result<ObjPertParams, CliError> {
            ObjPertParams::new(
                sigma()?,
                need(self.lambda, "--lambda")?,
                need(self.beta, "--beta")?,
                need(self.lipschitz, "--lipschitz")?,
            )
            .map_err(map_error)
        };
        let m = match self.mechanism {
            MechanismName::Gaussian => Mechanism::gaussian(sigma()?, sens),
            MechanismName::Laplace => Mechanism::laplace(scale()?, sens),
            MechanismName::SubsampledGaussian => {
                let q = need(self.sampling_rate()?, "--q (or --batch-size with --n)")?;
                match self.sampling.unwrap_or(SamplingArg::Poisson) {
                    SamplingArg::Poisson => {
                        if self.n.is_some() && self.batch_size.is_none() {
                            return Err(CliError::Usage(
                                "--n applies only to --sampling without-replacement or with \
                                 --batch-size"
                                    .into(),
                            ));
                        }
                        Mechanism::subsampled_gaussian(sigma()?, q)
                    }
                    SamplingArg::WithoutReplacement => {
                        let n = self.n.ok_or_else(|| {
                            CliError::Usage(
                                "--n is required for --sampling without-replacement".into(),
                            )
                        })?;
                        let batch = match self.batch_size {
                            Some(b) => b,
                            None => whole_batch(q, n)?,
                        };
                        Mechanism::subsampled_gaussian_without_replacement(sigma()?, batch, n)
                    }
                }
            }
            MechanismName::Objpert => Ok(Mechanism::objective_perturbation(objpert()?)),
            MechanismName::Amp => Mechanism::amp(
                objpert()?,
                need(self.tau, "--tau")?,
                need(self.sigma_out, "--sigma-out")?,
            ),
            MechanismName::GammaBall => Mechanism::gamma_ball(
                scale()?,
                need(self.q, "--q")?,
                self.dim.ok_or_else(|| {
                    CliError::Usage("--dim is required for --mechanism gamma-ball".into())
                })?,
                sens,
            ),
            MechanismName::Shuffling => {
                return Err(CliError::Usage(
                    "--mechanism shuffling is priced by its own bound in `dpglm account` \
                     (one shuffled round); it cannot be calibrated or composed"
                        .into(),
                ));
            }
        };
        m.map_err(map_error)
    }
}
