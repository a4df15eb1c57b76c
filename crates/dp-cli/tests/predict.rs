//! `dpglm predict`: one row per input with `prediction` (and `probability` for logistic
//! models), no labels needed, columns matched by name, atomic `--output`, located errors.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

mod inprocess;
use inprocess::dpglm;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Rows `(a, b, y)`: y = sign(2a − b) for classification, 2a − b for regression.
fn rows(n: usize, regression: bool) -> Vec<(f64, f64, f64)> {
    (0..n)
        .map(|i| {
            let a = ((i * 37) % 101) as f64 / 50.0 - 1.0;
            let b = ((i * 53) % 97) as f64 / 48.0 - 1.0;
            let z = 2.0 * a - b;
            let y = if regression {
                z
            } else if z > 0.0 {
                1.0
            } else {
                -1.0
            };
            (a, b, y)
        })
        .collect()
}

/// Writes 2000 rows (columns `a,b,label`) to `dir/train.csv`; returns its path.
fn training_file(dir: &Path, regression: bool) -> PathBuf {
    let data = dir.join("train.csv");
    let mut text = String::from("a,b,label\n");
    for (a, b, y) in rows(2000, regression) {
        text.push_str(&format!("{a},{b},{y}\n"));
    }
    std::fs::write(&data, text).unwrap();
    data
}

/// Trains `algorithm` with `loss` on 2000 rows (columns `a,b,label`); returns the model path.
fn train(dir: &Path, algorithm: &str, loss: &str, regression: bool) -> PathBuf {
    train_with(dir, algorithm, loss, regression, &[]).0
}

/// [`train`] with `extra` flags; returns the model path and what `train` printed.
fn train_with(
    dir: &Path,
    algorithm: &str,
    loss: &str,
    regression: bool,
    extra: &[&str],
) -> (PathBuf, String) {
    let data = training_file(dir, regression);
    let model = dir.join("model.json");
    let mut args = vec![
        "train",
        "--data",
        s(&data),
        "--label",
        "label",
        "--algorithm",
        algorithm,
        "--scale",
        "none",
        "--loss",
        loss,
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--seed",
        "3",
        "--out",
        s(&model),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = dpglm(&args);
    assert_eq!(code, 0, "{err}");
    (model, out)
}

/// The model file's coefficients.
fn coefficients(model: &Path) -> Vec<f64> {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(model).unwrap()).unwrap();
    m["coefficients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect()
}

/// Parses `prediction[,probability]` CSV text.
fn parse(text: &str) -> (String, Vec<Vec<f64>>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

#[test]
fn logistic_predictions_and_probabilities_without_labels_in_any_column_order() {
    let dir = TempDir::new().unwrap();
    let model = train(dir.path(), "dp-gd", "logistic", false);
    // Columns reordered, no label column.
    let test = rows(300, false);
    let data = dir.path().join("new.csv");
    let mut text = String::from("b,a\n");
    for (a, b, _) in &test {
        text.push_str(&format!("{b},{a}\n"));
    }
    std::fs::write(&data, text).unwrap();
    let (code, out, err) = dpglm(&["predict", "--model", s(&model), "--data", s(&data)]);
    assert_eq!(code, 0, "{err}");
    let (header, got) = parse(&out);
    assert_eq!(header, "prediction,probability");
    assert_eq!(got.len(), 300);
    // The model's own map: unit-norm rows (logistic default), then the bias feature 1.
    let w = coefficients(&model);
    let mut right = 0;
    for ((a, b, y), row) in test.iter().zip(&got) {
        let norm = a.hypot(*b);
        let (ua, ub) = if norm > 0.0 {
            (a / norm, b / norm)
        } else {
            (0.0, 0.0)
        };
        let z = w[0] * ua + w[1] * ub + w[2];
        let p = 1.0 / (1.0 + (-z).exp());
        assert!((row[1] - p).abs() <= 1e-12, "{row:?} vs {p}");
        assert_eq!(row[0], if z >= 0.0 { 1.0 } else { -1.0 });
        assert_eq!(row[0] == 1.0, row[1] >= 0.5);
        right += usize::from(row[0] == *y);
    }
    assert!(right > 240, "{right}/300 right");

    // --json: the same rows; --output: the same CSV, written atomically.
    let (code, out, err) = dpglm(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["n"], 300);
    assert_eq!(v["loss"], "logistic");
    assert!(v["output"].is_null());
    let rows = v["predictions"].as_array().unwrap();
    assert_eq!(rows.len(), 300);
    for (r, g) in rows.iter().zip(&got) {
        assert_eq!(r["prediction"].as_f64().unwrap(), g[0]);
        // serde_json's default float parser may land one ulp off the printed value.
        let p = r["probability"].as_f64().unwrap();
        assert!((p - g[1]).abs() <= 1e-15, "{p} vs {}", g[1]);
    }
    let preds = dir.path().join("preds.csv");
    let (code, out, err) = dpglm(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--output",
        s(&preds),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote 300 predictions"), "{out}");
    let (_, written) = parse(&std::fs::read_to_string(&preds).unwrap());
    assert_eq!(written, got);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["model.json", "new.csv", "preds.csv", "train.csv"],
        "no temporary file left"
    );
}

#[test]
fn regression_predictions_have_no_probability_and_a_label_column_can_be_left_out() {
    let dir = TempDir::new().unwrap();
    let model = train(dir.path(), "ssp", "squared", true);
    let w = coefficients(&model);
    let data = dir.path().join("scored.csv");
    let mut text = String::from("label,a,b\n");
    let test = rows(50, true);
    for (a, b, y) in &test {
        text.push_str(&format!("{y},{a},{b}\n"));
    }
    std::fs::write(&data, text).unwrap();
    let (code, out, err) = dpglm(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--label",
        "label",
    ]);
    assert_eq!(code, 0, "{err}");
    let (header, got) = parse(&out);
    assert_eq!(header, "prediction");
    assert_eq!(got.len(), 50);
    // SSP projects its rows onto the ball of its (here estimated) X, and so does the model.
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let r = file["preprocessing"]["row_bound"].as_f64().unwrap();
    for ((a, b, _), row) in test.iter().zip(&got) {
        // No other row preprocessing for regression; the bias feature 1.
        let norm = (a * a + b * b + 1.0).sqrt();
        let z = (w[0] * a + w[1] * b + w[2]) * (r / norm).min(1.0);
        assert!(
            (row[0] - z).abs() <= 1e-12 * (1.0 + z.abs()),
            "{row:?} vs {z}"
        );
    }
    // Without --label the label column is an extra column, which is not read: the same
    // predictions.
    let (code, again, err) = dpglm(&["predict", "--model", s(&model), "--data", s(&data)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, out);
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = TempDir::new().unwrap();
    let model = train(dir.path(), "dp-gd", "logistic", false);
    let data = dir.path().join("new.csv");
    std::fs::write(&data, "a,c\n1,2\n").unwrap();
    let preds = dir.path().join("preds.csv");
    let missing = dir.path().join("missing.csv");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec![
                "--model",
                s(&model),
                "--data",
                s(&data),
                "--output",
                s(&preds),
            ],
            "no column `b`",
        ),
        (
            vec![
                "--model",
                s(&model),
                "--data",
                s(&data),
                "--output",
                s(&data),
            ],
            "is the same file as --data",
        ),
        (
            vec![
                "--model",
                s(&model),
                "--data",
                s(&data),
                "--output",
                s(&model),
            ],
            "is the same file as --model",
        ),
        (
            vec!["--model", s(&data), "--data", s(&data)],
            "not a dpglm model file",
        ),
        (
            vec!["--model", s(&model), "--data", s(&missing)],
            "missing.csv",
        ),
    ];
    for (args, message) in cases {
        let mut argv = vec!["predict"];
        argv.extend(args);
        let (code, out, err) = dpglm(&argv);
        assert_eq!(code, 2, "{argv:?}: {err}");
        assert!(err.contains(message), "{argv:?}: {err}");
        assert!(out.is_empty());
    }
    assert!(!preds.exists());
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,c\n1,2\n");
}

/// A model trained with a named class pair predicts the classes as the data wrote them (a name
/// with a comma, given in a schema file, quoted in the CSV output), and its probability is
/// that of the positive class.
#[test]
fn class_pair_models_predict_their_class_names() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("train.csv");
    let mut text = String::from("a,b,label\n");
    for (a, b, y) in &rows(2000, false) {
        let class = if *y > 0.0 { "\"yes, sure\"" } else { "no" };
        text.push_str(&format!("{a},{b},{class}\n"));
    }
    std::fs::write(&data, text).unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"label": "label", "classes": ["no", "yes, sure"]}"#,
    )
    .unwrap();
    let model = dir.path().join("model.json");
    let (code, _, err) = dpglm(&[
        "train",
        "--data",
        s(&data),
        "--schema",
        s(&schema),
        "--algorithm",
        "objpert",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--seed",
        "3",
        "--out",
        s(&model),
    ]);
    assert_eq!(code, 0, "{err}");
    let scored = dir.path().join("new.csv");
    std::fs::write(&scored, "b,a\n-1,1\n1,-1\n").unwrap();
    let (code, out, err) = dpglm(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&scored),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let p = v["predictions"].as_array().unwrap();
    // Row 1: 2a − b = 3 > 0 (the positive class); row 2: −3 (the negative one).
    assert_eq!(p[0]["prediction"], "yes, sure", "{out}");
    assert_eq!(p[1]["prediction"], "no", "{out}");
    assert!(p[0]["probability"].as_f64().unwrap() > 0.5, "{out}");
    assert!(p[1]["probability"].as_f64().unwrap() < 0.5, "{out}");
    let (code, out, err) = dpglm(&["predict", "--model", s(&model), "--data", s(&scored)]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "prediction,probability");
    assert!(lines[1].starts_with("\"yes, sure\","), "{out}");
    assert!(lines[2].starts_with("no,"), "{out}");
}

/// A model file of format 1, written by main before the library format (fixture and script in
/// dp-glm's tests/fixtures), scores and predicts exactly as that version printed.
#[test]
fn version_1_model_files_score_as_before() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dp-glm/tests/fixtures");
    let (model, data) = (dir.join("model-v1.json"), dir.join("model-v1-data.csv"));
    for (command, expected) in [
        ("evaluate", "model-v1-evaluate.json"),
        ("predict", "model-v1-predict.json"),
    ] {
        let (code, out, err) =
            dpglm(&[command, "--model", s(&model), "--data", s(&data), "--json"]);
        assert_eq!(code, 0, "{err}");
        let got: Value = serde_json::from_str(&out).unwrap();
        let want: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(expected)).unwrap()).unwrap();
        assert_eq!(got, want, "{command}");
    }
}

/// A learner that projects its rows onto the ball of radius `X` (given by `--x-bound`, or
/// estimated privately) stores that step: evaluate and predict project scoring rows too, so
/// evaluate on the training file gives train's loss exactly, and predictions are those of the
/// projected rows.
#[test]
fn the_learners_row_projection_is_stored_and_applied() {
    let dir = TempDir::new().unwrap();
    let cases: [(&str, &[&str], Option<f64>); 3] = [
        ("objpert", &["--x-bound", "0.5", "--clip", "3"], Some(0.5)),
        ("ssp", &["--x-bound", "0.5", "--y-bound", "3"], Some(0.5)),
        ("objpert", &["--clip", "3"], None),
    ];
    for (algorithm, flags, given) in cases {
        let flags = [flags, &["--json"]].concat();
        let (model, out) = train_with(dir.path(), algorithm, "squared", true, &flags);
        let data = dir.path().join("train.csv");
        let trained: Value = serde_json::from_str(&out).unwrap();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
        let r = file["preprocessing"]["row_bound"].as_f64().unwrap();
        let x_bound = &file["privacy"]["bounds"][0];
        assert_eq!(x_bound["name"], "x_bound");
        assert_eq!(x_bound["value"], r, "{algorithm} {flags:?}");
        match given {
            Some(x) => assert_eq!(r, x),
            None => assert_eq!(x_bound["source"], "estimated"),
        }
        let (code, out, err) = dpglm(&[
            "evaluate",
            "--model",
            s(&model),
            "--data",
            s(&data),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let scored: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            scored["loss"], trained["train_loss"],
            "{algorithm} {flags:?}"
        );
        // The row (2, 0) and its bias 1, of norm √5, projected onto the ball of radius r.
        let one = dir.path().join("one.csv");
        std::fs::write(&one, "a,b\n2,0\n").unwrap();
        let (code, out, err) = dpglm(&["predict", "--model", s(&model), "--data", s(&one)]);
        assert_eq!(code, 0, "{err}");
        let w = coefficients(&model);
        assert_eq!(w.len(), 3);
        let want = (2.0 * w[0] + w[2]) * (r / 5f64.sqrt()).min(1.0);
        let p: f64 = out.lines().nth(1).unwrap().parse().unwrap();
        assert!(
            (p - want).abs() <= 1e-12,
            "{algorithm} {flags:?}: {p} vs {want}"
        );
    }
}
