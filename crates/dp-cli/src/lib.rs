//! The `dpglm` command-line tool: privacy accounting and calibration (and, as they land,
//! private training and evaluation).
//!
//! The binary is a thin wrapper around [`run`], which takes the arguments and the two output
//! streams and returns the exit code, so the command-line contract is testable in-process.
//! Exit codes: 0 success, 2 invalid input (the message names the flag and value), 1 anything
//! else.

mod account;
mod account_models;
mod budget;
mod cli;
mod mechanism_args;
mod model_file;
mod predict;
mod schema;
mod train;

use std::io::Write;

use clap::Parser;

pub use cli::Cli;

/// `--flag -1e-5` → `--flag=-1e-5`: a negative number after a long flag is that flag's value
/// (so validation can name it), not an unknown short option.
fn join_negative_values(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match args.get(i + 1) {
            Some(next)
                if a.starts_with("--")
                    && !a.contains('=')
                    && next.starts_with('-')
                    && next.parse::<f64>().is_ok() =>
            {
                out.push(format!("{a}={next}"));
                i += 2;
            }
            _ => {
                out.push(a.clone());
                i += 1;
            }
        }
    }
    out
}

/// Failure of a command, mapped to an exit code.
#[derive(Debug)]
pub enum CliError {
    /// Invalid input: exit code 2.
    Usage(String),
    /// Anything else: exit code 1.
    Failure(String),
}

impl CliError {
    fn code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failure(_) => 1,
        }
    }

    fn message(&self) -> &str {
        match self {
            CliError::Usage(m) | CliError::Failure(m) => m,
        }
    }
}

/// Runs `dpglm` with `args` (including the program name), writing results to `out` and
/// diagnostics to `err`; returns the process exit code.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let args = join_negative_values(args);
    if account_models::asks_for_models(&args) {
        let rest = args.iter().skip(2).cloned();
        return match account_models::ModelQuery::try_parse_from(
            std::iter::once("dpglm account".to_string()).chain(rest),
        ) {
            Ok(q) => finish(account_models::account_models(&q, out), err),
            Err(e) => parse_failure(&e, out, err),
        };
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return parse_failure(&e, out, err),
    };
    finish(dispatch_on_threads(cli, out, err), err)
}

/// The exit code of a command line clap refused (0 for `--help` and `--version`, printed on
/// `out`), its message on `err`.
fn parse_failure(e: &clap::Error, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let code = if e.use_stderr() { 2 } else { 0 };
    let text = e.render().to_string();
    let _ = if code == 0 {
        write!(out, "{text}")
    } else {
        write!(err, "{text}")
    };
    code
}

/// The exit code of a command's result, its error message on `err`.
fn finish(result: Result<(), CliError>, err: &mut dyn Write) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "error: {}", e.message());
            e.code()
        }
    }
}

/// Runs the command on a rayon pool of `--threads` threads, or on rayon's global pool (sized by
/// `RAYON_NUM_THREADS`, else one thread per CPU) without the flag. On a pool of its own the
/// command's standard output is collected and written when it finishes (the writer cannot
/// cross threads).
fn dispatch_on_threads(
    cli: cli::Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let Some(threads) = cli.threads else {
        return cli::dispatch(cli, out, err);
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(usize::from(threads))
        .build()
        .map_err(|e| CliError::Failure(format!("cannot start {threads} threads: {e}")))?;
    let (mut buffer, mut warnings) = (Vec::new(), Vec::new());
    let result = pool.install(|| cli::dispatch(cli, &mut buffer, &mut warnings));
    err.write_all(&warnings)
        .and_then(|()| out.write_all(&buffer))
        .map_err(|e| CliError::Failure(format!("cannot write the output: {e}")))?;
    result
}
