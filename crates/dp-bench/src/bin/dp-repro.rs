//! `dp-repro`: regenerate the papers' figures and tables into a results directory.
//!
//! Run through `cargo xtask repro`, or directly:
//! `cargo run -p dp-bench --bin dp-repro -- [--quick | --full] [--only ID]... [--out DIR]`.

use std::path::PathBuf;
use std::process::ExitCode;

use dp_bench::{Error, Mode, RunOptions, registry, run_all};

const USAGE: &str = "\
usage: dp-repro [--quick | --full] [--only ID]... [--out DIR] [--blas DESC] [--threads N]
       dp-repro --list

Regenerates the papers' figures and tables into DIR (default: results) and writes DIR/index.md.

options:
  --quick       reduced settings, minutes for everything (default)
  --full        the papers' settings
  --only ID     run only experiment ID (repeatable; see --list)
  --out DIR     output directory (default: results)
  --blas DESC   BLAS configuration to record in the index (default: from the build)
  --threads N   worker threads for experiments, trials and gradients (default:
                RAYON_NUM_THREADS, else one per logical CPU); the numbers do not depend on it
  --list        print the experiments (id, paper, title) and exit
  -h, --help    print this help

environment:
  DPGLM_DATA    datasets' directory (default: ../shared/data next to the workspace);
                experiments that need data are skipped when it is missing
";

/// What the command line asked for.
enum Command {
    /// Run, on this many threads (`None`: rayon's default, which reads `RAYON_NUM_THREADS`).
    Run(RunOptions, Option<usize>),
    List,
    Help,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut options = RunOptions::default();
    let mut list = false;
    let mut threads = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .filter(|v| !v.starts_with("--"))
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match arg.as_str() {
            "--quick" => options.mode = Mode::Quick,
            "--full" => options.mode = Mode::Full,
            "--only" => options.only.push(value("--only")?),
            "--out" => options.out_dir = PathBuf::from(value("--out")?),
            "--blas" => options.blas = Some(value("--blas")?),
            "--threads" => {
                let v = value("--threads")?;
                threads = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| format!("--threads needs an integer >= 1, got `{v}`"))?,
                );
            }
            "--list" => list = true,
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if options.blas.is_none() {
        options.blas = built_blas();
    }
    Ok(if list {
        Command::List
    } else {
        Command::Run(options, threads)
    })
}

/// The BLAS this binary was built with, from the crate's `blas` feature.
fn built_blas() -> Option<String> {
    cfg!(feature = "blas").then(|| "OpenBLAS (system library, via openblas-src)".to_owned())
}

/// Sizes rayon's global pool (when `--threads` was given).
fn set_threads(threads: Option<usize>) -> Result<(), String> {
    let Some(n) = threads else { return Ok(()) };
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| format!("cannot start {n} threads: {e}"))
}

fn main() -> ExitCode {
    let command = match parse(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("dp-repro: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Command::List => {
            for exp in registry() {
                println!("{:<28} {:<14} {}", exp.id(), exp.paper(), exp.title());
            }
            ExitCode::SUCCESS
        }
        Command::Run(options, threads) => match set_threads(threads) {
            Err(msg) => {
                eprintln!("dp-repro: {msg}");
                ExitCode::FAILURE
            }
            Ok(()) => report(run_all(&options)),
        },
    }
}

/// Prints a run's summary; the exit code.
fn report(result: Result<dp_bench::Summary, Error>) -> ExitCode {
    match result {
        Ok(summary) => {
            println!(
                "wrote {} ({} experiments, {:.1} s)",
                summary.index.display(),
                summary.outcomes.len(),
                summary.elapsed.as_secs_f64()
            );
            let failed = summary.failed();
            if failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                eprintln!("dp-repro: FAILED: {}", failed.join(", "));
                ExitCode::FAILURE
            }
        }
        Err(e @ Error::UnknownExperiment { .. }) => {
            eprintln!("dp-repro: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("dp-repro: {e}");
            ExitCode::FAILURE
        }
    }
}
