//! Running `dpglm` in-process through [`dp_cli::run`], and scratch directories, for the
//! integration tests that call it many times.

use std::path::PathBuf;

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

/// A fresh, empty directory `dpglm-NAME-PID` under the system temp dir.
pub fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpglm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("the temp dir is writable");
    d
}
