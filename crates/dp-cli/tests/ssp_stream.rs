//! `dpglm train --stream`: AdaSSP read block by block writes the same model file as the
//! in-memory fit with the same seed (CSV and Parquet, with row groups smaller than a block);
//! what it cannot do without a pass over the data first is refused with a usage error.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use dp_data::ParquetColumn;
use tempfile::TempDir;

mod inprocess;
use inprocess::dpglm;

const N: usize = 3000;

/// Deterministic rows: three features in [−1, 1] and a linear response.
fn columns() -> [Vec<f64>; 4] {
    let f = |i: usize, m: usize, p: usize| ((i * m) % p) as f64 / (p as f64 / 2.0) - 1.0;
    let a: Vec<f64> = (0..N).map(|i| f(i, 37, 101)).collect();
    let b: Vec<f64> = (0..N).map(|i| f(i, 53, 97)).collect();
    let c: Vec<f64> = (0..N).map(|i| f(i, 29, 89)).collect();
    let y = (0..N).map(|i| 0.5 * a[i] - b[i] + 0.25 * c[i]).collect();
    [a, b, c, y]
}

fn write_csv(path: &Path) {
    let [a, b, c, y] = columns();
    let mut text = String::from("a,b,c,y\n");
    for i in 0..N {
        text.push_str(&format!("{},{},{},{}\n", a[i], b[i], c[i], y[i]));
    }
    std::fs::write(path, text).unwrap();
}

fn write_parquet(path: &Path) {
    let [a, b, c, y] = columns();
    let cols = [
        ("a", ParquetColumn::Double(a)),
        ("b", ParquetColumn::Double(b)),
        ("c", ParquetColumn::Double(c)),
        ("y", ParquetColumn::Double(y)),
    ];
    let file = std::fs::File::create(path).unwrap();
    dp_data::write_parquet(file, path, &cols, 700).unwrap();
}

/// `train` on `data` with the common flags and `extra`; returns (code, stdout, stderr).
fn train(data: &Path, out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "train",
        "--data",
        data.to_str().unwrap(),
        "--label",
        "y",
        "--loss",
        "squared",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--x-bound",
        "2",
        "--y-bound",
        "2",
        "--seed",
        "11",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    dpglm(&args)
}

#[test]
fn streamed_model_files_equal_the_in_memory_ones() {
    let dir = TempDir::new().unwrap();
    for (name, write) in [
        ("d.csv", write_csv as fn(&Path)),
        ("d.parquet", write_parquet),
    ] {
        let data = dir.path().join(name);
        write(&data);
        let (mem, streamed) = (dir.path().join("mem.json"), dir.path().join("stream.json"));
        for extra in [&[][..], &["--n", "5000", "--neighbouring", "replace-one"]] {
            let (code, _, err) = train(&data, &mem, extra);
            assert_eq!(code, 0, "{name}: {err}");
            let with_stream: Vec<&str> = extra.iter().copied().chain(["--stream"]).collect();
            let (code, text, err) = train(&data, &streamed, &with_stream);
            assert_eq!(code, 0, "{name}: {err}");
            assert!(
                text.contains("streamed") && text.contains("n = 3000"),
                "{text}"
            );
            let (m, s) = (
                std::fs::read_to_string(&mem).unwrap(),
                std::fs::read_to_string(&streamed).unwrap(),
            );
            assert_eq!(m, s, "{name} {extra:?}");
            assert!(m.contains("\"coefficients\""), "{m}");
        }
    }
}

#[test]
fn what_needs_a_first_pass_is_refused() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("d.csv");
    write_csv(&data);
    let out = dir.path().join("m.json");
    for (extra, says) in [
        (&["--algorithm", "dp-sgd"][..], "--algorithm dp-sgd"),
        (&["--scale", "minmax"][..], "feature scaling"),
        (&["--n", "100"][..], "--n"),
    ] {
        let args: Vec<&str> = extra.iter().copied().chain(["--stream"]).collect();
        let (code, _, err) = train(&data, &out, &args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?}: a model was written");
    }
    // Bounds to be estimated privately.
    let (code, _, err) = dpglm(&[
        "train",
        "--data",
        data.to_str().unwrap(),
        "--label",
        "y",
        "--loss",
        "squared",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--stream",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--x-bound and --y-bound"), "{err}");
}
