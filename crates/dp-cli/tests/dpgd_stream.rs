//! `dpglm train --stream`: DP-GD and noisy projected GD read block by block (one pass per
//! step), and objective perturbation, AMP and output perturbation (one pass per evaluation of
//! their objective) write the same model file as the in-memory fit with the same seed (NPY
//! over more than one block, CSV); what they cannot do without a pass over the data first is
//! refused with a usage error and no model file.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

mod inprocess;
use inprocess::dpglm;
use tempfile::TempDir;

/// Deterministic rows: three features in [−1, 1] and a ±1 label from a noisy linear rule.
fn rows(n: usize) -> Vec<[f64; 4]> {
    let f = |i: usize, m: usize, p: usize| ((i * m) % p) as f64 / (p as f64 / 2.0) - 1.0;
    (0..n)
        .map(|i| {
            let (a, b, c) = (f(i, 37, 101), f(i, 53, 97), f(i, 29, 89));
            let flip = i % 11 == 0;
            let y = if (a - b + 0.3 * c > 0.0) != flip {
                1.0
            } else {
                -1.0
            };
            [a, b, c, y]
        })
        .collect()
}

/// An `n × 4` little-endian `f64` NPY file (version 1.0, C order), the label in column 3.
fn write_npy(path: &Path, n: usize) {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({n}, 4), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend(header.as_bytes());
    for v in rows(n).iter().flatten() {
        bytes.extend(v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

fn write_csv(path: &Path, n: usize) {
    let mut text = String::from("a,b,c,y\n");
    for [a, b, c, y] in rows(n) {
        text.push_str(&format!("{a},{b},{c},{y}\n"));
    }
    std::fs::write(path, text).unwrap();
}

/// `train` on `data` with the common flags, 8 steps and `extra`; returns (code, stdout,
/// stderr).
fn train(data: &Path, out: &Path, extra: &[&str]) -> (i32, String, String) {
    fit(data, out, &[&["--steps", "8"], extra].concat())
}

/// `train` on `data` with the common flags and `extra`.
fn fit(data: &Path, out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "train",
        "--data",
        data.to_str().unwrap(),
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    dpglm(&args)
}

/// The model's coefficients.
fn coefficients(model: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(model).unwrap();
    let c = v["coefficients"].as_array().unwrap();
    c.iter().map(|x| x.as_f64().unwrap()).collect()
}

/// 20,000 NPY rows (two blocks of 2^14 rows and less) and 3,000 CSV rows. DP-GD with the
/// defaults (unit-norm rows, the default clip), and public bounds without preprocessing, a
/// bias, a ridge, a radius, a public n under add/remove, the squared loss, another loss and
/// accountant; noisy GD with the unit-norm bound and a radius, and with public bounds on
/// regression data.
#[test]
fn streamed_model_files_equal_the_in_memory_ones() {
    let dir = TempDir::new().unwrap();
    let (npy, csv) = (dir.path().join("d.npy"), dir.path().join("d.csv"));
    write_npy(&npy, 20_000);
    write_csv(&csv, 3000);
    let public = [
        "--preprocess",
        "none",
        "--clip",
        "0.5",
        "--bias",
        "1",
        "--lambda",
        "0.01",
        "--radius",
        "5",
        "--n",
        "21000",
        "--neighbouring",
        "add-remove",
    ];
    let cases: [(&Path, usize, &str, &[&str]); 7] = [
        (
            &npy,
            20_000,
            "dp-gd",
            &["--label", "3", "--loss", "logistic"],
        ),
        (
            &npy,
            20_000,
            "dp-gd",
            &[&["--label", "3", "--loss", "logistic"], &public[..]].concat(),
        ),
        (
            &npy,
            20_000,
            "dp-gd",
            &[
                "--label",
                "3",
                "--loss",
                "squared",
                "--clip",
                "2",
                "--learning-rate",
                "0.5",
            ],
        ),
        (
            &csv,
            3000,
            "dp-gd",
            &["--label", "y", "--loss", "logistic", "--scale", "none"],
        ),
        (
            &csv,
            3000,
            "dp-gd",
            &[
                "--label",
                "y",
                "--loss",
                "huber-svm",
                "--scale",
                "none",
                "--accountant",
                "rdp",
            ],
        ),
        (
            &npy,
            20_000,
            "noisy-gd",
            &["--label", "3", "--loss", "logistic", "--radius", "2"],
        ),
        (
            &csv,
            3000,
            "noisy-gd",
            &[
                "--label",
                "y",
                "--loss",
                "squared",
                "--x-bound",
                "2",
                "--y-bound",
                "1.5",
            ],
        ),
    ];
    for (data, n, algorithm, extra) in cases {
        let extra = [&["--algorithm", algorithm, "--steps", "8"], extra].concat();
        same_model_file(data, n, dir.path(), &extra);
    }
}

/// Trains with `extra` in memory and with `--stream`: the same model file, with non-zero
/// coefficients, and the streamed run says so and counts `n` rows.
fn same_model_file(data: &Path, n: usize, dir: &Path, extra: &[&str]) {
    let (mem, streamed) = (dir.join("mem.json"), dir.join("stream.json"));
    let (code, _, err) = fit(data, &mem, extra);
    assert_eq!(code, 0, "{extra:?}: {err}");
    let with_stream: Vec<&str> = extra.iter().copied().chain(["--stream"]).collect();
    let (code, text, err) = fit(data, &streamed, &with_stream);
    assert_eq!(code, 0, "{extra:?}: {err}");
    assert!(
        text.contains("streamed") && text.contains(&format!("n = {n}")),
        "{text}"
    );
    let (m, s) = (
        std::fs::read_to_string(&mem).unwrap(),
        std::fs::read_to_string(&streamed).unwrap(),
    );
    assert_eq!(m, s, "{extra:?}");
    let coef = coefficients(&m);
    assert!(coef.len() >= 3 && coef.iter().any(|c| *c != 0.0), "{m}");
}

/// Objective perturbation, AMP and output perturbation: 20,000 NPY rows (two blocks of 2^14
/// rows and less, three leaves of the summation tree) and 3,000 CSV rows; the defaults
/// (unit-norm rows; output perturbation's ridge from the counted rows), and public bounds
/// without preprocessing, a clip, a ridge, a radius, a bias, a public n under add/remove,
/// the squared loss, another loss and accountant.
#[test]
fn streamed_perturbation_model_files_equal_the_in_memory_ones() {
    let dir = TempDir::new().unwrap();
    let (npy, csv) = (dir.path().join("d.npy"), dir.path().join("d.csv"));
    write_npy(&npy, 20_000);
    write_csv(&csv, 3000);
    let npy_logistic = ["--label", "3", "--loss", "logistic"];
    let csv_plain = ["--label", "y", "--scale", "none"];
    let cases: [(&Path, usize, &str, Vec<&str>); 7] = [
        (&npy, 20_000, "objpert", npy_logistic.to_vec()),
        (&npy, 20_000, "amp", npy_logistic.to_vec()),
        (&npy, 20_000, "output-perturbation", npy_logistic.to_vec()),
        (
            &csv,
            3000,
            "objpert",
            [
                &csv_plain[..],
                &[
                    "--loss",
                    "squared",
                    "--preprocess",
                    "none",
                    "--x-bound",
                    "2",
                ],
                &["--clip", "1", "--lambda", "10", "--accountant", "rdp"],
            ]
            .concat(),
        ),
        (
            &csv,
            3000,
            "amp",
            [
                &csv_plain[..],
                &["--loss", "huber-svm", "--bias", "1", "--n", "3500"],
                &["--neighbouring", "add-remove", "--tau", "1e-4"],
            ]
            .concat(),
        ),
        (
            &csv,
            3000,
            "output-perturbation",
            [
                &csv_plain[..],
                &["--loss", "logistic", "--lambda", "0.05", "--radius", "2"],
                &["--n", "3200", "--neighbouring", "add-remove"],
            ]
            .concat(),
        ),
        (
            &csv,
            3000,
            "output-perturbation",
            [
                &csv_plain[..],
                &["--loss", "squared", "--x-bound", "1.5", "--y-bound", "1"],
            ]
            .concat(),
        ),
    ];
    for (data, n, algorithm, extra) in cases {
        let extra = [&["--algorithm", algorithm], &extra[..]].concat();
        same_model_file(data, n, dir.path(), &extra);
    }
    // AMP's SAG samples random rows: refused, no model.
    let out = dir.path().join("sag.json");
    let args = [
        &npy_logistic[..],
        &["--algorithm", "amp", "--solver", "sag"],
    ]
    .concat();
    let (code, _, err) = fit(&npy, &out, &[&args[..], &["--stream"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--solver sag"), "{err}");
    assert!(!out.exists());
}

/// Feature scaling (asked for, or the default for classification on a file with named
/// columns) and bounds to be estimated privately are refused: exit 2, naming what to give.
#[test]
fn what_needs_a_first_pass_is_refused() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("d.csv");
    write_csv(&data, 200);
    let out = dir.path().join("m.json");
    let gd = "dp-gd";
    for (algorithm, extra, says) in [
        (
            gd,
            &["--loss", "logistic"][..],
            "feature scaling (min-max, the default",
        ),
        (
            gd,
            &["--loss", "logistic", "--scale", "standard"],
            "feature scaling",
        ),
        (
            gd,
            &[
                "--loss",
                "logistic",
                "--scale",
                "none",
                "--preprocess",
                "none",
            ],
            "give --clip",
        ),
        (gd, &["--loss", "squared", "--scale", "none"], "give --clip"),
        (
            "noisy-gd",
            &["--loss", "squared", "--scale", "none"],
            "give --x-bound and --y-bound",
        ),
    ] {
        let args: Vec<&str> = ["--label", "y", "--algorithm", algorithm]
            .into_iter()
            .chain(extra.iter().copied())
            .chain(["--stream"])
            .collect();
        let (code, _, err) = train(&data, &out, &args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?}: a model was written");
    }
}

/// The learners without a streamed fit are refused (exit 2, no model file) with the reason:
/// DP-SGD's random batches, the shuffled learners' secret order, the in-memory procedures.
#[test]
fn learners_without_a_streamed_fit_say_why() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("d.csv");
    write_csv(&data, 200);
    let out = dir.path().join("m.json");
    for (algorithm, loss, says) in [
        ("dp-sgd", "logistic", "its Poisson batches are random rows"),
        ("dp-ssgd", "squared", "needs a secret random order"),
        ("dp-ambssgd", "squared", "needs a secret random order"),
        (
            "jl-noisy-gd",
            "logistic",
            "--algorithm jl-noisy-gd (it needs the rows in memory",
        ),
    ] {
        let (code, _, err) = dpglm(&[
            "train",
            "--data",
            data.to_str().unwrap(),
            "--label",
            "y",
            "--loss",
            loss,
            "--algorithm",
            algorithm,
            "--scale",
            "none",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--stream",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{algorithm}: {err}");
        assert!(err.contains(says), "{algorithm}: {err}");
        assert!(!out.exists(), "{algorithm}: a model was written");
    }
}
