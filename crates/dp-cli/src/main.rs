//! The `dpglm` command-line tool (contract: spec/CLI.md).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = dp_cli::run(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
