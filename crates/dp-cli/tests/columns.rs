//! Ordinary tables through `dpglm train` / `dpglm evaluate` / `dpglm schema` (issue 10, §2):
//! label mapping from a public class pair, columns matched by name, categorical columns
//! one-hot encoded over public levels, the schema file and its flags, and the errors, run as
//! the real binary.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

/// Runs `dpglm` (whitespace-separated `args`): exit code, stdout, stderr; never a panic.
fn run(args: &str) -> (i32, String, String) {
    let o = common::dpglm(args);
    let (out, err) = (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    );
    assert!(!err.contains("panicked"), "{args}: {err}");
    (o.status.code().unwrap(), out, err)
}

/// Exit 0 and stdout as JSON.
fn ok_json(args: &str) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// Exit 2 with every needle in stderr.
fn usage(args: &str, needles: &[&str]) {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args}: stdout {out} stderr {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `n` rows: a numeric `x`, a categorical `work` (A or B), an `id`, and the label
/// `[neg, pos]` = pos when x + (1 if A else -1) > 0, on a fixed grid.
fn table(n: usize, neg: &str, pos: &str) -> String {
    let mut text = String::from("x,work,id,income\n");
    for i in 0..n {
        let x = (i % 29) as f64 / 7.0 - 2.0;
        let a = i % 3 != 0;
        let label = if x + if a { 1.0 } else { -1.0 } > 0.0 {
            pos
        } else {
            neg
        };
        text.push_str(&format!("{x},{},r{i},{label}\n", if a { "A" } else { "B" }));
    }
    text
}

const TRAIN: &str =
    "train --algorithm objpert --epsilon 1 --delta 1e-5 --seed 1 --scale none --json";

#[test]
fn zero_one_labels_score_as_their_signs() {
    let dir = TempDir::new().unwrap();
    let signs = write(dir.path(), "pm.csv", &table(600, "-1", "1"));
    let zero_one = write(dir.path(), "01.csv", &table(600, "0", "1"));
    let model = dir.path().join("m.json");
    let m = model.to_str().unwrap();
    let cols = "--label income --drop id --categorical work=A|B";
    let trained = ok_json(&format!("{TRAIN} --data {signs} {cols} --out {m}"));
    let a = ok_json(&format!("evaluate --model {m} --data {signs} --json"));
    let b = ok_json(&format!("evaluate --model {m} --data {zero_one} --json"));
    // Before: 0/1 labels scored 0/1 against ±1 predictions (accuracy 0.395 on real data).
    assert_eq!(a, b);
    assert_eq!(a["accuracy"], trained["train_accuracy"]);
    assert!(a["accuracy"].as_f64().unwrap() > 0.8, "{a}");
    // Training on 0/1 labels is the same fit as on ±1 labels.
    let trained01 = ok_json(&format!("{TRAIN} --data {zero_one} {cols}"));
    assert_eq!(trained01["train_accuracy"], trained["train_accuracy"]);
    // Labels outside {0,1}/{-1,1}: the row and the value, and how to give a pair.
    let three = write(dir.path(), "3.csv", "x,work,id,income\n1,A,r,1\n2,B,r,5\n");
    usage(
        &format!("{TRAIN} --data {three} {cols}"),
        &["3.csv:3", "column `income`", "`5`", "--classes"],
    );
    usage(
        &format!("evaluate --model {m} --data {three}"),
        &["3.csv:3", "`5`"],
    );
}

/// A Parquet file (written here) trains, evaluates and predicts as the same table in CSV:
/// columns by name, the class pair, one-hot levels; `--format parquet` for a file without
/// the extension.
#[test]
fn parquet_data_trains_evaluates_and_predicts_as_csv() {
    use dp_data::ParquetColumn;
    let dir = TempDir::new().unwrap();
    let n = 600;
    let csv_text = table(n, "no", "yes");
    let csv = write(dir.path(), "t.csv", &csv_text);
    // The same rows as Parquet columns (in the same order: the default features are every
    // column but the label and the dropped ones, in file order).
    let rows: Vec<Vec<&str>> = csv_text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let column = |j: usize| -> Vec<String> { rows.iter().map(|r| r[j].to_owned()).collect() };
    let x: Vec<f64> = column(0).iter().map(|v| v.parse().unwrap()).collect();
    let pq_path = dir.path().join("t.parquet");
    let columns = [
        ("x", ParquetColumn::Double(x)),
        ("work", ParquetColumn::Text(column(1))),
        ("id", ParquetColumn::Text(column(2))),
        ("income", ParquetColumn::Text(column(3))),
    ];
    let file = std::fs::File::create(&pq_path).unwrap();
    dp_data::write_parquet(file, &pq_path, &columns, 128).unwrap();
    let pq = pq_path.to_str().unwrap();
    let bare = dir.path().join("t_data");
    std::fs::copy(&pq_path, &bare).unwrap();
    let bare = bare.to_str().unwrap();
    let cols = "--label income --classes no,yes --drop id --categorical work=A|B";
    let model = dir.path().join("m.json");
    let m = model.to_str().unwrap();
    let from_csv = ok_json(&format!("{TRAIN} --data {csv} {cols}"));
    let from_pq = ok_json(&format!("{TRAIN} --data {pq} {cols} --out {m}"));
    assert_eq!(from_pq["train_accuracy"], from_csv["train_accuracy"]);
    assert!(
        from_pq["train_accuracy"].as_f64().unwrap() > 0.8,
        "{from_pq}"
    );
    let forced = ok_json(&format!("{TRAIN} --data {bare} --format parquet {cols}"));
    assert_eq!(forced["train_accuracy"], from_pq["train_accuracy"]);
    let a = ok_json(&format!("evaluate --model {m} --data {pq} --json"));
    let b = ok_json(&format!("evaluate --model {m} --data {csv} --json"));
    assert_eq!(a, b);
    assert_eq!(a["n"], 600);
    let (code, p_pq, err) = run(&format!("predict --model {m} --data {pq}"));
    assert_eq!(code, 0, "{err}");
    let (_, p_csv, _) = run(&format!("predict --model {m} --data {csv}"));
    assert_eq!(p_pq, p_csv);
    assert_eq!(p_pq.lines().count(), n + 1);
    // A string column read as a number: exit 2 naming it and the way out.
    usage(
        &format!("{TRAIN} --data {pq} --label income --classes no,yes --categorical work=A|B"),
        &["t.parquet", "`id` holds strings", "--drop id"],
    );
}

#[test]
fn a_named_class_pair_is_stored_and_used_by_evaluate() {
    let dir = TempDir::new().unwrap();
    let data = write(dir.path(), "adult.csv", &table(600, "<=50K", ">50K"));
    let model = dir.path().join("m.json");
    let m = model.to_str().unwrap();
    let trained = ok_json(&format!(
        "{TRAIN} --data {data} --label income --classes <=50K,>50K --drop id \
         --categorical work=A|B --out {m}"
    ));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["input"]["label"], "income");
    assert_eq!(
        file["input"]["labels"]["classes"],
        serde_json::json!({"negative": "<=50K", "positive": ">50K"})
    );
    assert_eq!(
        file["feature_names"],
        serde_json::json!(["x", "work=A", "work=B"])
    );
    // evaluate needs only the model and the data.
    let scored = ok_json(&format!("evaluate --model {m} --data {data} --json"));
    assert_eq!(scored["accuracy"], trained["train_accuracy"]);
    assert_eq!(scored["n"], 600);
    // A label outside the pair: row and value.
    let bad = write(dir.path(), "bad.csv", "x,work,income\n1,A,>50K\n1,A,50K\n");
    usage(
        &format!("evaluate --model {m} --data {bad}"),
        &["bad.csv:3", "`50K`", "`<=50K` (negative)"],
    );
    // Without the pair, string labels are refused with the way to give it.
    usage(
        &format!("{TRAIN} --data {data} --label income --drop id --categorical work=A|B"),
        &["adult.csv:2", "--classes"],
    );
    // A class pair does not apply to regression.
    usage(
        &format!(
            "{TRAIN} --data {data} --label income --classes <=50K,>50K --loss squared \
             --drop id,work"
        ),
        &["class pair", "classification"],
    );
}

#[test]
fn columns_are_matched_by_name_and_categories_by_public_levels() {
    let dir = TempDir::new().unwrap();
    let text = table(300, "-1", "1");
    let data = write(dir.path(), "d.csv", &text);
    // The same rows with the columns in another order and without `id`.
    let mut reordered = String::from("income,x,work\n");
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        reordered.push_str(&format!("{},{},{}\n", f[3], f[0], f[1]));
    }
    let reordered = write(dir.path(), "r.csv", &reordered);
    let model = dir.path().join("m.json");
    let m = model.to_str().unwrap();
    ok_json(&format!(
        "{TRAIN} --data {data} --label income --features work,x --categorical work=A|B|* \
         --out {m}"
    ));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(
        file["feature_names"],
        serde_json::json!(["work=A", "work=B", "work=*", "x"])
    );
    assert_eq!(
        ok_json(&format!("evaluate --model {m} --data {data} --json")),
        ok_json(&format!("evaluate --model {m} --data {reordered} --json"))
    );
    // A missing column is named; exit 2.
    let missing = write(dir.path(), "miss.csv", "income,work\n1,A\n");
    usage(
        &format!("evaluate --model {m} --data {missing}"),
        &["miss.csv", "no column `x`"],
    );
    // Without `*`, a value outside the levels names file, line, column and value.
    let other = write(dir.path(), "o.csv", "x,work,id,income\n1,A,r,1\n1,C,r,1\n");
    usage(
        &format!("{TRAIN} --data {other} --label income --drop id --categorical work=A|B"),
        &["o.csv:3", "column `work` (2)", "`C`", "A|B"],
    );
    // A text column that is neither dropped nor categorical: how to drop or encode it.
    usage(
        &format!("{TRAIN} --data {data} --label income --categorical work=A|B"),
        &["d.csv:2", "column `id`", "--drop id", "--categorical 'id="],
    );
    // Unknown columns in the flags are named with the columns the file has.
    usage(
        &format!("{TRAIN} --data {data} --label income --drop nope"),
        &["no column `nope`", "x, work, id, income"],
    );
    usage(
        &format!("{TRAIN} --data {data} --label income --categorical work"),
        &["--categorical", "COLUMN=LEVEL1|LEVEL2"],
    );
    usage(
        &format!("{TRAIN} --data {data} --label income --features x --drop id"),
        &["--features", "--drop"],
    );
}

#[test]
fn a_schema_file_with_flags_over_it() {
    let dir = TempDir::new().unwrap();
    let data = write(dir.path(), "adult.csv", &table(300, "<=50K", ">50K"));
    let schema = write(
        dir.path(),
        "s.json",
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"],
            "categorical": {"work": ["A", "B"]}}"#,
    );
    let model = dir.path().join("m.json");
    let m = model.to_str().unwrap();
    let a = ok_json(&format!(
        "{TRAIN} --data {data} --schema {schema} --out {m}"
    ));
    // The same as the flags.
    let b = ok_json(&format!(
        "{TRAIN} --data {data} --label income --classes <=50K,>50K --drop id \
         --categorical work=A|B"
    ));
    assert_eq!(a["train_accuracy"], b["train_accuracy"]);
    assert_eq!(a["d"], 3);
    // A flag overrides the schema: --features replaces its drop list.
    let c = ok_json(&format!(
        "{TRAIN} --data {data} --schema {schema} --features x"
    ));
    assert_eq!(c["d"], 1);
    // Invalid schemas are input errors naming the file.
    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"label": "income", "colour": 1}"#,
    );
    usage(
        &format!("{TRAIN} --data {data} --schema {bad}"),
        &["bad.json", "colour"],
    );
    // The same schema in TOML trains the same; TOML errors name the file too.
    let toml = write(
        dir.path(),
        "s.toml",
        "label = \"income\"\nclasses = [\"<=50K\", \">50K\"]\ndrop = [\"id\"]\n\n\
         [categorical]\nwork = [\"A\", \"B\"]\n",
    );
    let t = ok_json(&format!("{TRAIN} --data {data} --schema {toml}"));
    assert_eq!(t["train_accuracy"], a["train_accuracy"]);
    let bad = write(dir.path(), "bad.toml", "label = \"income\"\ncolour = 1\n");
    usage(
        &format!("{TRAIN} --data {data} --schema {bad}"),
        &["bad.toml", "colour"],
    );
    let scaled = write(
        dir.path(),
        "scaled.json",
        r#"{"label": "income", "scaling": {"x": {"min": 1, "max": 1}}}"#,
    );
    usage(
        &format!("{TRAIN} --data {data} --schema {scaled}"),
        &["scaled.json", "scaling"],
    );
}

#[test]
fn drafted_schemas_say_they_are_not_private() {
    let dir = TempDir::new().unwrap();
    let data = write(dir.path(), "adult.csv", &table(60, "<=50K", ">50K"));
    let draft = ok_json(&format!("schema --data {data} --label income --json"));
    let note = draft["note"].as_str().unwrap();
    assert!(
        note.contains("NOT PRIVATE") && note.contains("adult.csv"),
        "{note}"
    );
    assert_eq!(draft["classes"], serde_json::json!(["<=50K", ">50K"]));
    assert_eq!(draft["categorical"]["work"], serde_json::json!(["A", "B"]));
    // 60 distinct ids: categorical too (≤ 100 levels) — the note asks for a review.
    assert_eq!(draft["categorical"]["id"].as_array().unwrap().len(), 60);
    // Written to a file, it trains as it is (after review).
    let out = dir.path().join("s.json");
    let o = out.to_str().unwrap();
    let (code, said, err) = run(&format!("schema --data {data} --label income --out {o}"));
    assert_eq!(code, 0, "{err}");
    assert!(said.contains("NOT PRIVATE"), "{said}");
    let trained = ok_json(&format!("{TRAIN} --data {data} --schema {o}"));
    assert_eq!(trained["d"], 1 + 2 + 60);
    // A `.toml` name drafts TOML, which trains the same.
    let toml = dir.path().join("s.toml");
    let t = toml.to_str().unwrap();
    let (code, _, err) = run(&format!("schema --data {data} --label income --out {t}"));
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(
        text.contains("label = \"income\"") && text.contains("NOT PRIVATE"),
        "{text}"
    );
    let from_toml = ok_json(&format!("{TRAIN} --data {data} --schema {t}"));
    assert_eq!(from_toml["train_accuracy"], trained["train_accuracy"]);
    usage(
        &format!("schema --data {data} --label nope"),
        &["no label column `nope`"],
    );
    usage(&format!("schema --data {data} --out {data}"), &["--out"]);
}
