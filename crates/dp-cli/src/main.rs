//! The `dpglm` command-line tool (contract: spec/CLI.md).

fn main() {
    let mut args = Vec::new();
    for (i, arg) in std::env::args_os().enumerate() {
        match arg.into_string() {
            Ok(a) => args.push(a),
            Err(raw) => {
                // `std::env::args` would panic here; a non-UTF-8 argument is invalid input.
                eprintln!(
                    "error: argument {i} ({}) is not valid UTF-8",
                    raw.to_string_lossy()
                );
                std::process::exit(2);
            }
        }
    }
    let code = dp_cli::run(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
