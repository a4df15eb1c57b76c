//! Running `dpglm` in-process through [`dp_cli::run`], for the integration tests that call it
//! many times.

/// Runs `dpglm args…`; returns the exit code, stdout and stderr.
pub fn dpglm<S: AsRef<str>>(args: &[S]) -> (i32, String, String) {
    let mut argv = vec!["dpglm".to_string()];
    argv.extend(args.iter().map(|s| s.as_ref().to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = dp_cli::run(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("stdout is UTF-8"),
        String::from_utf8(err).expect("stderr is UTF-8"),
    )
}
