//! The column pipeline: feature selection by name, one-hot encoding over public levels, label
//! mapping from a public class pair, the schema file and its overrides, columns matched by
//! name for scoring, and every error naming file, line, column and value.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use dp_data::schema::parse_categorical;
use dp_data::{
    Column, Error, Format, Labels, ParseErrorKind, Schema, TableSpec, Task, draft_schema,
    read_scoring_data, read_table_bytes, read_training_data,
};
use ndarray::array;
use proptest::prelude::*;
use tempfile::TempDir;

/// The file `name` in `dir` holding `text`.
fn file(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const ADULTISH: &str = "age,work,id,income\n\
                        30,Private,a1,<=50K\n\
                        50,State-gov,a2,>50K\n\
                        \n\
                        41,Private,a3,>50K\n";

fn schema(json: &str) -> Schema {
    Schema::from_json(json, "test").unwrap()
}

fn train(path: &Path, s: &Schema, task: Task) -> dp_data::Result<(dp_data::LoadedData, TableSpec)> {
    read_training_data(path, None, s, task)
}

fn parse_err<T: std::fmt::Debug>(r: dp_data::Result<T>) -> (usize, String, ParseErrorKind) {
    match r {
        Err(Error::Parse {
            line, field, kind, ..
        }) => (line, field, kind),
        other => panic!("expected Error::Parse, got {other:?}"),
    }
}

#[test]
fn one_hot_drop_and_class_pair() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"],
            "categorical": {"work": ["Private", "Self-emp", "State-gov"]}}"#,
    );
    let (data, spec) = train(&path, &s, Task::Classification).unwrap();
    assert_eq!(
        data.x,
        array![
            [30.0, 1.0, 0.0, 0.0],
            [50.0, 0.0, 0.0, 1.0],
            [41.0, 1.0, 0.0, 0.0]
        ]
    );
    assert_eq!(data.y, array![-1.0, 1.0, 1.0]);
    let names = ["age", "work=Private", "work=Self-emp", "work=State-gov"];
    assert_eq!(data.feature_names.as_deref().unwrap(), names);
    assert_eq!(spec.feature_names().unwrap(), names);
    assert_eq!(spec.label.as_deref(), Some("income"));
    // The level never seen in the data still has its column: levels are public, not read.
    assert!(data.x.column(2).iter().all(|&v| v == 0.0));
}

#[test]
fn features_choose_columns_in_their_order() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "features": ["work", "age"],
            "categorical": {"work": ["Private", "State-gov"]}}"#,
    );
    let (data, _) = train(&path, &s, Task::Classification).unwrap();
    assert_eq!(
        data.feature_names.unwrap(),
        ["work=Private", "work=State-gov", "age"]
    );
    assert_eq!(data.x.row(1), array![0.0, 1.0, 50.0]);
}

#[test]
fn a_value_outside_the_levels_names_file_line_column_and_value() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"],
            "categorical": {"work": ["Private"]}}"#,
    );
    let err = train(&path, &s, Task::Classification).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("adult.csv:3"), "{message}");
    assert!(message.contains("`work` (2)"), "{message}");
    assert!(message.contains("`State-gov`"), "{message}");
    let (line, field, kind) = parse_err(Err::<(), _>(err));
    assert_eq!((line, field.as_str()), (3, "column `work` (2)"));
    assert!(matches!(kind, ParseErrorKind::UnexpectedValue { value, .. } if value == "State-gov"));
    // With the catch-all level, the value is encoded as `work=*`.
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"],
            "categorical": {"work": ["Private", "*"]}}"#,
    );
    let (data, _) = train(&path, &s, Task::Classification).unwrap();
    assert_eq!(
        data.feature_names.unwrap(),
        ["age", "work=Private", "work=*"]
    );
    assert_eq!(data.x.column(2), array![0.0, 1.0, 0.0]);
}

#[test]
fn a_text_column_left_as_a_feature_says_how_to_drop_or_encode_it() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"]}"#);
    let err = train(&path, &s, Task::Classification).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("adult.csv:2"), "{message}");
    assert!(
        message.contains("--drop work") && message.contains("--categorical 'work="),
        "{message}"
    );
}

#[test]
fn labels_outside_the_class_pair_name_row_and_value() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "l.csv", "x,y\n1,1\n2,0\n3,2\n");
    let s = schema(r#"{"label": "y"}"#);
    let (line, field, kind) = parse_err(train(&path, &s, Task::Classification));
    assert_eq!((line, field.as_str()), (4, "column `y` (2)"));
    match kind {
        ParseErrorKind::UnexpectedValue { value, expected } => {
            assert_eq!(value, "2");
            assert!(expected.contains("--classes"), "{expected}");
        }
        other => panic!("{other:?}"),
    }
    let s = schema(r#"{"label": "y", "classes": ["no", "yes"]}"#);
    let path = file(&tmp, "l.csv", "x,y\n1,yes\n2,no\n3,maybe\n");
    let (line, _, kind) = parse_err(train(&path, &s, Task::Classification));
    assert_eq!(line, 4);
    assert!(matches!(kind, ParseErrorKind::UnexpectedValue { value, .. } if value == "maybe"));
}

#[test]
fn zero_one_and_minus_one_one_labels_are_accepted_as_they_are() {
    let tmp = TempDir::new().unwrap();
    let s = schema(r#"{"label": "y"}"#);
    for (text, y) in [
        ("x,y\n1,1\n2,0\n3,0\n", array![1.0, -1.0, -1.0]),
        ("x,y\n1,-1\n2,1\n3,1.0\n", array![-1.0, 1.0, 1.0]),
    ] {
        let (data, spec) = train(&file(&tmp, "s.csv", text), &s, Task::Classification).unwrap();
        assert_eq!(data.y, y);
        assert_eq!(spec.labels, Labels::Signs);
    }
    // Both 0 and -1: possibly three classes, an error at the row that mixes them.
    let (line, _, _) = parse_err(train(
        &file(&tmp, "mix.csv", "x,y\n1,0\n2,1\n3,-1\n"),
        &s,
        Task::Classification,
    ));
    assert_eq!(line, 4);
    // Numeric classes match numerically (`1.0` is class `1`).
    let s = schema(r#"{"label": "y", "classes": ["2", "4"]}"#);
    let (data, _) = train(
        &file(&tmp, "n.csv", "x,y\n1,2\n2,4.0\n"),
        &s,
        Task::Classification,
    )
    .unwrap();
    assert_eq!(data.y, array![-1.0, 1.0]);
}

#[test]
fn regression_labels_are_numbers_and_take_no_class_pair() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "r.csv", "x,y\n1,0.5\n2,-3\n");
    let (data, spec) = train(&path, &schema(r#"{"label": "y"}"#), Task::Regression).unwrap();
    assert_eq!(data.y, array![0.5, -3.0]);
    assert_eq!(spec.labels, Labels::Numeric);
    let err = train(
        &path,
        &schema(r#"{"label": "y", "classes": ["0", "1"]}"#),
        Task::Regression,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Schema { .. }), "{err:?}");
}

#[test]
fn unknown_columns_and_bad_schemas_are_named() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(r#"{"label": "income", "drop": ["nope"]}"#);
    match train(&path, &s, Task::Classification) {
        Err(Error::UnknownColumn {
            column, available, ..
        }) => {
            assert_eq!(column, "nope");
            assert_eq!(available, ["age", "work", "id", "income"]);
        }
        other => panic!("{other:?}"),
    }
    // A categorical column that is dropped is declared, not read.
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["work", "id"],
            "categorical": {"work": ["a"]}}"#,
    );
    let (data, _) = train(&path, &s, Task::Classification).unwrap();
    assert_eq!(data.feature_names.unwrap(), ["age"]);
    for bad in [
        r#"{"label": "y", "features": ["a"], "drop": ["b"]}"#,
        r#"{"classes": ["a"]}"#,
        r#"{"classes": ["a", "a"]}"#,
        r#"{"classes": ["1", "1.0"]}"#,
        r#"{"categorical": {"c": []}}"#,
        r#"{"categorical": {"c": ["a", "a"]}}"#,
        r#"{"categorical": {"c": ["*", "a"]}}"#,
        r#"{"label": "y", "features": ["y"]}"#,
        r#"{"scaling": {"a": {"min": 1, "max": 1}}}"#,
        r#"{"unknown": 1}"#,
        r#"not json"#,
    ] {
        assert!(
            matches!(Schema::from_json(bad, "s.json"), Err(Error::Schema { .. })),
            "{bad}"
        );
    }
    // Column selection needs column names.
    let svm = file(&tmp, "d.svm", "1 1:1\n-1 2:1\n");
    let s = schema(r#"{"drop": ["a"]}"#);
    assert!(matches!(
        train(&svm, &s, Task::Classification),
        Err(Error::Schema { .. })
    ));
}

#[test]
fn flags_override_the_schema() {
    let file_schema = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "features": ["age"],
            "categorical": {"work": ["Private"]}}"#,
    );
    let flags = Schema {
        label: Some("other".into()),
        drop: Some(vec!["id".into()]),
        categorical: [(
            "work".to_owned(),
            vec!["Private".to_owned(), "*".to_owned()],
        )]
        .into(),
        ..Schema::default()
    };
    let s = file_schema.overridden_by(flags);
    assert_eq!(s.label.as_deref(), Some("other"));
    assert_eq!(s.classes.as_ref().unwrap()[1], ">50K");
    assert_eq!(s.features, None, "--drop replaces the schema's features");
    assert_eq!(s.drop.unwrap(), ["id"]);
    assert_eq!(s.categorical["work"], ["Private", "*"]);
}

#[test]
fn categorical_flags_parse() {
    assert_eq!(
        parse_categorical("sex=Female|Male").unwrap(),
        ("sex".into(), vec!["Female".into(), "Male".into()])
    );
    assert_eq!(parse_categorical("a=b=c|d").unwrap().0, "a=b");
    for bad in ["sex", "=a|b", "sex=", "sex=a||b", "sex=a|a", "sex=*|a"] {
        assert!(parse_categorical(bad).is_err(), "{bad}");
    }
}

#[test]
fn scoring_matches_columns_by_name() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let s = schema(
        r#"{"label": "income", "classes": ["<=50K", ">50K"], "drop": ["id"],
            "categorical": {"work": ["Private", "State-gov"]}}"#,
    );
    let (data, spec) = train(&path, &s, Task::Classification).unwrap();
    // Reordered columns, an extra one, no `id`: the same features.
    let reordered = file(
        &tmp,
        "score.csv",
        "income,extra,work,age\n<=50K,9,Private,30\n>50K,9,State-gov,50\n>50K,9,Private,41\n",
    );
    let scored = read_scoring_data(&reordered, None, &spec, 3, true).unwrap();
    assert_eq!(scored.x, data.x);
    assert_eq!(scored.y, data.y);
    // Without labels the label column may be missing.
    let no_label = file(&tmp, "nolabel.csv", "work,age\nPrivate,30\n");
    let scored = read_scoring_data(&no_label, None, &spec, 3, false).unwrap();
    assert_eq!(scored.x, array![[30.0, 1.0, 0.0]]);
    assert!(scored.y.is_empty());
    // A missing feature column is named.
    match read_scoring_data(&no_label, None, &spec, 3, true) {
        Err(Error::MissingLabelColumn { label, .. }) => assert_eq!(label.unwrap(), "income"),
        other => panic!("{other:?}"),
    }
    let missing = file(&tmp, "missing.csv", "income,work\n>50K,Private\n");
    match read_scoring_data(&missing, None, &spec, 3, true) {
        Err(Error::UnknownColumn { column, .. }) => assert_eq!(column, "age"),
        other => panic!("{other:?}"),
    }
    // Labels outside the training class pair are refused.
    let other_labels = file(&tmp, "o.csv", "income,work,age\n1,Private,30\n");
    let (line, _, _) = parse_err(read_scoring_data(&other_labels, None, &spec, 3, true));
    assert_eq!(line, 2);
}

#[test]
fn libsvm_labels_are_mapped_too() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "d.svm", "1 1:1\n0 2:1\n");
    // The width is public input: required, and wider than the largest index is fine.
    match train(&path, &Schema::default(), Task::Classification) {
        Err(Error::Schema { reason, .. }) => assert!(reason.contains("n_features"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let width = |n| Schema {
        n_features: Some(n),
        ..Schema::default()
    };
    let (data, _) = train(&path, &width(5), Task::Classification).unwrap();
    assert_eq!(data.x.ncols(), 5);
    match train(&path, &width(1), Task::Classification) {
        Err(Error::Parse { line: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    let (data, spec) = train(&path, &width(2), Task::Classification).unwrap();
    assert_eq!(data.y, array![1.0, -1.0]);
    assert_eq!(spec.columns, None);
    let bad = file(&tmp, "b.svm", "1 1:1\n3 2:1\n");
    match read_scoring_data(&bad, Some(Format::Libsvm), &spec, 2, true) {
        Err(Error::Label { reason, .. }) => assert!(reason.contains("row 2"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn specs_round_trip_and_are_validated() {
    let spec = TableSpec {
        label: Some("y".into()),
        labels: Labels::Classes {
            negative: "no".into(),
            positive: "yes".into(),
        },
        columns: Some(vec![
            Column::numeric("a"),
            Column::categorical("c", &["u".into(), "v".into(), "*".into()]).unwrap(),
        ]),
    };
    let json = serde_json::to_string(&spec).unwrap();
    let back: TableSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, spec);
    assert!(back.validate().is_ok());
    assert_eq!(back.feature_names().unwrap(), ["a", "c=u", "c=v", "c=*"]);
    let mut twice = spec.clone();
    twice.columns.as_mut().unwrap().push(Column::numeric("a"));
    assert!(twice.validate().is_err());
    let mut label_feature = spec;
    label_feature.label = Some("a".into());
    assert!(label_feature.validate().is_err());
}

#[test]
fn a_drafted_schema_says_it_is_not_private() {
    let tmp = TempDir::new().unwrap();
    let path = file(&tmp, "adult.csv", ADULTISH);
    let draft = draft_schema(&path, Some("income")).unwrap();
    assert!(draft.note.as_ref().unwrap().contains("NOT PRIVATE"));
    assert_eq!(draft.classes.as_ref().unwrap(), &["<=50K", ">50K"]);
    assert_eq!(draft.categorical["work"], ["Private", "State-gov"]);
    assert_eq!(draft.categorical["id"], ["a1", "a2", "a3"]);
    // It parses back as a schema and reads the file.
    let back = Schema::from_json(&draft.to_json(), "draft").unwrap();
    let (data, _) = train(&path, &back, Task::Classification).unwrap();
    assert_eq!(data.n_features(), 1 + 2 + 3);
    // 0/1 labels need no class pair; an unknown label column is named.
    let path = file(&tmp, "s.csv", "x,y\n1,1\n2,0\n");
    assert_eq!(draft_schema(&path, Some("y")).unwrap().classes, None);
    assert!(matches!(
        draft_schema(&path, Some("z")),
        Err(Error::MissingLabelColumn { .. })
    ));
}

const CSV: &str = "a,c,y\n1,u,no\n2.5,v,yes\n-3,w,no\n";

fn fuzz_spec() -> TableSpec {
    TableSpec {
        label: Some("y".into()),
        labels: Labels::Classes {
            negative: "no".into(),
            positive: "yes".into(),
        },
        columns: Some(vec![
            Column::numeric("a"),
            Column::categorical("c", &["u".into(), "v".into(), "*".into()]).unwrap(),
        ]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Mutated tables: a typed error, or rows with one-hot columns summing to 1 and ±1 labels.
    #[test]
    fn table_mutations(edits in prop::collection::vec((any::<usize>(), prop::sample::select(b",\n\"uvwy01.-e ".to_vec())), 1..6)) {
        let mut bytes = CSV.as_bytes().to_vec();
        for (i, b) in edits {
            let i = i % (bytes.len() + 1);
            bytes.insert(i, b);
        }
        if let Ok(d) = read_table_bytes(&bytes, "fuzz.csv", &fuzz_spec()) {
            prop_assert_eq!(d.x.nrows(), d.y.len());
            prop_assert_eq!(d.x.ncols(), 4);
            for row in d.x.rows() {
                prop_assert!(row[0].is_finite());
                prop_assert_eq!(row.iter().skip(1).sum::<f64>(), 1.0);
            }
            prop_assert!(d.y.iter().all(|&v| v == 1.0 || v == -1.0));
        }
    }
}

#[test]
fn the_fuzz_seed_is_a_valid_table() {
    let d = read_table_bytes(CSV.as_bytes(), "s.csv", &fuzz_spec()).unwrap();
    assert_eq!(d.x.row(2), array![-3.0, 0.0, 0.0, 1.0]);
    assert_eq!(d.y, array![-1.0, 1.0, -1.0]);
}
