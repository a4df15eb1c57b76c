//! Running the real `dpglm` binary from the integration tests.

use std::process::{Command, Output};

/// Runs `dpglm` with whitespace-separated `args`, with backtraces on so that a panic would
/// show in its stderr.
pub fn dpglm(args: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpglm"))
        .args(args.split_whitespace())
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the dpglm binary runs")
}
