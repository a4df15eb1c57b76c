//! The generic data readers (CSV, LIBSVM, NPY, `read_dataset`) on small files written to a
//! temporary directory: good files, and each kind of bad input giving the right error variant
//! with the right line number.

use std::io::Write;
use std::path::{Path, PathBuf};

use dp_data::Error;
use dp_data::{
    Format, NpyLabels, ParseErrorKind, read_csv, read_dataset, read_libsvm, read_npy, read_npy_1d,
    read_npy_2d, read_npy_dataset,
};
use flate2::Compression;
use flate2::write::GzEncoder;
use ndarray::{Array1, array};
use tempfile::TempDir;

/// Write `bytes` to `name` in `dir` (gzip-compressed when `name` ends in `.gz`).
fn file(dir: &TempDir, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    let bytes = bytes.as_ref();
    if name.ends_with(".gz") {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(bytes).expect("gzip");
        std::fs::write(&path, enc.finish().expect("gzip")).expect("write test file");
    } else {
        std::fs::write(&path, bytes).expect("write test file");
    }
    path
}

/// Unpack an `Error::Parse` into (line, field, kind), or panic with the error.
fn parse_err(result: dp_data::Result<impl std::fmt::Debug>) -> (usize, String, ParseErrorKind) {
    match result {
        Err(Error::Parse {
            line, field, kind, ..
        }) => (line, field, kind),
        other => panic!("expected Error::Parse, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// CSV

#[test]
fn csv_good_file_with_crlf_quotes_spaces_and_trailing_blank_line() {
    let dir = TempDir::new().unwrap();
    let path = file(
        &dir,
        "good.csv",
        "\u{feff}a, \"b\",label,\"c, with comma\"\r\n1, 2.5 ,-1,3e2\r\n\r\n\"4\",5,1,-6\r\n\r\n",
    );
    let data = read_csv(&path, "label").unwrap();
    assert_eq!(data.x, array![[1.0, 2.5, 300.0], [4.0, 5.0, -6.0]]);
    assert_eq!(data.y, array![-1.0, 1.0]);
    assert_eq!(
        data.feature_names.as_deref(),
        Some(&["a".to_owned(), "b".into(), "c, with comma".into()][..])
    );
    // The label may be any column, including the first and the last.
    let first = read_csv(&path, "a").unwrap();
    assert_eq!(first.y, array![1.0, 4.0]);
    assert_eq!(first.x.ncols(), 3);
}

#[test]
fn csv_gzip_is_transparent() {
    let dir = TempDir::new().unwrap();
    let text = "x1,x2,y\n0.5,1,1\n2,3,-1\n";
    let plain = read_csv(file(&dir, "d.csv", text), "y").unwrap();
    let gz = read_csv(file(&dir, "d.csv.gz", text), "y").unwrap();
    assert_eq!(plain, gz);
    // read_dataset infers csv through the .gz suffix.
    let inferred = read_dataset(dir.path().join("d.csv.gz"), None, Some("y")).unwrap();
    assert_eq!(inferred, plain);
    // gzip is detected from the content, whatever the name.
    let renamed = dir.path().join("gz-in-disguise.csv");
    std::fs::copy(dir.path().join("d.csv.gz"), &renamed).unwrap();
    assert_eq!(read_csv(&renamed, "y").unwrap(), plain);
}

#[test]
fn csv_non_numeric_cell_names_line_and_column() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "bad.csv", "a,b,y\n1,2,1\n\n1,abc,1\n");
    let (line, field, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!(line, 4, "blank lines count");
    assert!(field.contains("`b`") && field.contains("(2)"), "{field}");
    assert_eq!(
        kind,
        ParseErrorKind::TextInNumericColumn {
            value: "abc".into(),
            column: "b".into()
        }
    );
    let message = read_csv(&path, "y").unwrap_err().to_string();
    assert!(message.contains("bad.csv:4"), "{message}");
    // The message says how to drop or encode the text column.
    assert!(
        message.contains("--drop b") && message.contains("--categorical 'b="),
        "{message}"
    );

    let path = file(&dir, "empty-cell.csv", "a,b,y\n1,,1\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!((line, kind), (2, ParseErrorKind::NotANumber(String::new())));

    // A non-numeric label is an error too.
    let path = file(&dir, "label.csv", "a,y\n1,yes\n");
    let (line, field, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!((line, kind), (2, ParseErrorKind::NotANumber("yes".into())));
    assert!(field.contains("`y`"));
}

#[test]
fn csv_non_finite_cell() {
    let dir = TempDir::new().unwrap();
    for (cell, line) in [("nan", 3), ("inf", 3), ("-Infinity", 3)] {
        let path = file(&dir, "bad.csv", format!("a,y\n1,1\n{cell},1\n"));
        let (l, _, kind) = parse_err(read_csv(&path, "y"));
        assert_eq!(l, line);
        assert_eq!(kind, ParseErrorKind::NonFinite(cell.into()));
    }
}

#[test]
fn csv_ragged_rows() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "short.csv", "a,b,y\n1,2,1\n1,2,1\n1,2\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!(line, 4);
    assert_eq!(
        kind,
        ParseErrorKind::RaggedRow {
            expected: 3,
            found: 2
        }
    );
    let path = file(&dir, "long.csv", "a,b,y\r\n1,2,1,4\r\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!(line, 2);
    assert_eq!(
        kind,
        ParseErrorKind::RaggedRow {
            expected: 3,
            found: 4
        }
    );
}

#[test]
fn csv_missing_label_column_lists_the_columns() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "d.csv", "age,income,target\n1,2,1\n");
    let err = read_csv(&path, "label").unwrap_err();
    match &err {
        Error::MissingLabelColumn {
            label, available, ..
        } => {
            assert_eq!(label.as_deref(), Some("label"));
            assert_eq!(available, &["age", "income", "target"]);
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("d.csv") && message.contains("age, income, target"),
        "{message}"
    );
    // read_dataset without a label: the same variant, with no label.
    match read_dataset(&path, None, None) {
        Err(Error::MissingLabelColumn {
            label: None,
            available,
            ..
        }) => assert_eq!(available.len(), 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn csv_empty_files() {
    let dir = TempDir::new().unwrap();
    for (name, text) in [
        ("empty.csv", ""),
        ("blank.csv", "\n\r\n  \n"),
        ("header-only.csv", "a,y\n"),
        ("header-and-blanks.csv", "a,y\n\n\n"),
    ] {
        let path = file(&dir, name, text);
        assert!(
            matches!(read_csv(&path, "y"), Err(Error::EmptyData { .. })),
            "{name}"
        );
    }
}

#[test]
fn csv_quotes_duplicates_and_encoding() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "q.csv", "a,y\n\"1,1\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!((line, kind), (2, ParseErrorKind::UnterminatedQuote));

    // A quoted cell holding a comma is one (non-numeric) field, not a ragged row.
    let path = file(&dir, "q2.csv", "a,y\n\"1,5\",1\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!(
        (line, kind),
        (
            2,
            ParseErrorKind::TextInNumericColumn {
                value: "1,5".into(),
                column: "a".into()
            }
        )
    );

    let path = file(&dir, "dup.csv", "\na,b,a,y\n1,2,3,1\n");
    let (line, field, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!((line, kind), (2, ParseErrorKind::DuplicateColumn));
    assert!(field.contains("`a` (3)"), "{field}");

    let path = file(&dir, "utf8.csv", b"a,y\n1,\xff\n");
    let (line, _, kind) = parse_err(read_csv(&path, "y"));
    assert_eq!((line, kind), (2, ParseErrorKind::InvalidUtf8));
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("nope.csv");
    let err = read_csv(&path, "y").unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("nope.csv"));
}

#[test]
fn corrupt_gzip_is_an_io_error() {
    let dir = TempDir::new().unwrap();
    let good = file(&dir, "d.csv.gz", "a,y\n1,1\n2,-1\n".repeat(100));
    let mut bytes = std::fs::read(&good).unwrap();
    let len = bytes.len();
    bytes.truncate(len / 2);
    let path = file(&dir, "truncated.csv", bytes);
    assert!(matches!(read_csv(&path, "y"), Err(Error::Io { .. })));
}

// ---------------------------------------------------------------------------------------------
// LIBSVM

#[test]
fn libsvm_good_file() {
    let dir = TempDir::new().unwrap();
    let text = "+1 1:0.5 3:2\r\n-1\t2:1 # a comment\n\n# a comment line\n0 \n-1 1:-766 4:1e-3\n";
    let data = read_libsvm(file(&dir, "d.svm", text), None).unwrap();
    assert_eq!(
        data.x,
        array![
            [0.5, 0.0, 2.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [-766.0, 0.0, 0.0, 1e-3]
        ]
    );
    assert_eq!(data.y, array![1.0, -1.0, 0.0, -1.0]);
    assert_eq!(data.feature_names, None);

    // A given d pads with zero columns.
    let wide = read_libsvm(dir.path().join("d.svm"), Some(6)).unwrap();
    assert_eq!(wide.x.ncols(), 6);
    assert_eq!(wide.x.column(5).sum(), 0.0);

    // gzip, and read_dataset inferring libsvm.
    let gz = read_dataset(file(&dir, "d.libsvm.gz", text), None, None).unwrap();
    assert_eq!(gz, data);
}

#[test]
fn libsvm_bad_tokens() {
    let dir = TempDir::new().unwrap();
    let cases: Vec<(&str, ParseErrorKind, &str)> = vec![
        ("1 3=2", ParseErrorKind::MalformedToken("3=2".into()), "3=2"),
        ("1 a:2", ParseErrorKind::MalformedToken("a:2".into()), "a:2"),
        (
            "1 -1:2",
            ParseErrorKind::MalformedToken("-1:2".into()),
            "-1:2",
        ),
        ("1 :2", ParseErrorKind::MalformedToken(":2".into()), ":2"),
        (
            "1 qid:3 1:2",
            ParseErrorKind::MalformedToken("qid:3".into()),
            "qid:3",
        ),
        ("1 1:x", ParseErrorKind::NotANumber("x".into()), "1:x"),
        ("1 1:", ParseErrorKind::NotANumber(String::new()), "1:"),
        ("1 1:inf", ParseErrorKind::NonFinite("inf".into()), "1:inf"),
        (
            "1 2:1 1:nan",
            ParseErrorKind::NonIncreasingIndex {
                previous: 2,
                index: 1,
            },
            "1:nan",
        ),
        ("1 0:1", ParseErrorKind::ZeroIndex, "0:1"),
        (
            "1 3:1 2:1",
            ParseErrorKind::NonIncreasingIndex {
                previous: 3,
                index: 2,
            },
            "2:1",
        ),
        (
            "1 2:1 2:1",
            ParseErrorKind::NonIncreasingIndex {
                previous: 2,
                index: 2,
            },
            "2:1",
        ),
        ("abc 1:1", ParseErrorKind::NotANumber("abc".into()), "label"),
        ("NaN 1:1", ParseErrorKind::NonFinite("NaN".into()), "label"),
    ];
    for (bad_line, expected, token) in cases {
        // The bad line is line 3, after a good line and a blank one.
        let path = file(
            &dir,
            "bad.svm",
            format!("-1 1:1 2:2\n\n{bad_line}\n1 1:1\n"),
        );
        let (line, field, kind) = parse_err(read_libsvm(&path, None));
        assert_eq!(line, 3, "{bad_line}");
        assert_eq!(kind, expected, "{bad_line}");
        assert!(field.contains(token), "{bad_line}: field {field}");
    }
}

#[test]
fn libsvm_index_beyond_given_d() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "d.svm", "1 1:1\n-1 1:1 9:2\n");
    let (line, _, kind) = parse_err(read_libsvm(&path, Some(8)));
    assert_eq!(
        (line, kind),
        (2, ParseErrorKind::IndexOutOfRange { index: 9, d: 8 })
    );
    assert_eq!(read_libsvm(&path, None).unwrap().x.ncols(), 9);
}

#[test]
fn libsvm_empty_and_label_option() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "empty.svm", "\n# only a comment\n\n");
    assert!(matches!(
        read_libsvm(&path, None),
        Err(Error::EmptyData { .. })
    ));
    let path = file(&dir, "d.svm", "1 1:1\n");
    assert!(matches!(
        read_dataset(&path, None, Some("y")),
        Err(Error::Label { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// NPY

/// A `.npy` file: the given version, descr, fortran flag and shape, then `data` as is.
fn npy_bytes(version: u8, descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let shape_text = match shape {
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let fortran = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}");
    let prefix = if version == 1 { 10 } else { 12 };
    while (prefix + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend(
            u16::try_from(header.len())
                .expect("short header")
                .to_le_bytes(),
        );
    } else {
        out.extend(
            u32::try_from(header.len())
                .expect("short header")
                .to_le_bytes(),
        );
    }
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn f8(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn npy_versions_and_dtypes() {
    let dir = TempDir::new().unwrap();
    let values = [1.0, -2.5, 3.0, 4.0, 5.0, 6.25];
    let v1 = file(
        &dir,
        "v1.npy",
        npy_bytes(1, "<f8", false, &[2, 3], &f8(&values)),
    );
    let x = read_npy_2d(&v1).unwrap();
    assert_eq!(x, array![[1.0, -2.5, 3.0], [4.0, 5.0, 6.25]]);
    let v2 = file(
        &dir,
        "v2.npy.gz",
        npy_bytes(2, "<f8", false, &[2, 3], &f8(&values)),
    );
    assert_eq!(read_npy_2d(&v2).unwrap(), x);

    let f4: Vec<u8> = values
        .iter()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect();
    let path = file(&dir, "f4.npy", npy_bytes(1, "<f4", false, &[2, 3], &f4));
    assert_eq!(read_npy_2d(&path).unwrap(), x);

    let ints: Vec<u8> = [-1i64, 1, 1, -1, 1i64 << 53]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let path = file(&dir, "i8.npy", npy_bytes(1, "<i8", false, &[5], &ints));
    assert_eq!(
        read_npy_1d(&path).unwrap(),
        array![-1.0, 1.0, 1.0, -1.0, 9_007_199_254_740_992.0]
    );
    // (n, 1) is a vector too; 3-D arrays are read by read_npy.
    let path = file(
        &dir,
        "col.npy",
        npy_bytes(1, "<f8", false, &[3, 1], &f8(&[1.0, 2.0, 3.0])),
    );
    assert_eq!(read_npy_1d(&path).unwrap(), array![1.0, 2.0, 3.0]);
    let path = file(
        &dir,
        "3d.npy",
        npy_bytes(1, "<f8", false, &[1, 2, 3], &f8(&values)),
    );
    assert_eq!(read_npy(&path).unwrap().shape(), [1, 2, 3]);
}

/// The `Error::Npy` reason, or panic.
fn npy_reason(result: dp_data::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(Error::Npy { reason, .. }) => reason,
        other => panic!("expected Error::Npy, got {other:?}"),
    }
}

#[test]
fn npy_bad_files() {
    let dir = TempDir::new().unwrap();
    let data = f8(&[1.0, 2.0, 3.0, 4.0]);
    let fortran = file(&dir, "f.npy", npy_bytes(1, "<f8", true, &[2, 2], &data));
    assert!(npy_reason(read_npy_2d(&fortran)).contains("fortran_order"));
    for descr in [">f8", "<i4", "|u1", "<c16"] {
        let path = file(
            &dir,
            "dtype.npy",
            npy_bytes(1, descr, false, &[2, 2], &data),
        );
        let reason = npy_reason(read_npy_2d(&path));
        assert!(
            reason.contains(descr) && reason.contains("not supported"),
            "{reason}"
        );
    }
    let path = file(&dir, "magic.npy", b"\x93NUMPX\x01\x00\x10\x00{}");
    assert!(npy_reason(read_npy(&path)).contains("magic"));
    let path = file(&dir, "v9.npy", b"\x93NUMPY\x09\x00\x10\x00{}");
    assert!(npy_reason(read_npy(&path)).contains("version"));
    let path = file(&dir, "tiny.npy", b"\x93NU");
    assert!(npy_reason(read_npy(&path)).contains("ends"));
    let path = file(
        &dir,
        "short.npy",
        npy_bytes(1, "<f8", false, &[2, 3], &data),
    );
    assert!(npy_reason(read_npy(&path)).contains("ends early"));
    let path = file(&dir, "long.npy", npy_bytes(1, "<f8", false, &[3], &data));
    assert!(npy_reason(read_npy(&path)).contains("bytes follow"));
    let path = file(&dir, "1d.npy", npy_bytes(1, "<f8", false, &[4], &data));
    assert!(npy_reason(read_npy_2d(&path)).contains("2-D"));
    assert!(npy_reason(read_npy_1d(dir.path().join("f.npy"))).contains("fortran"));
    let path = file(&dir, "2d.npy", npy_bytes(1, "<f8", false, &[2, 2], &data));
    assert!(npy_reason(read_npy_1d(&path)).contains("vector"));
    let big: Vec<u8> = [(1i64 << 53) + 1]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let path = file(&dir, "big.npy", npy_bytes(1, "<i8", false, &[1], &big));
    assert!(npy_reason(read_npy(&path)).contains("not exactly representable"));
    let mut bad_header = npy_bytes(1, "<f8", false, &[2, 2], &data);
    bad_header[12] = b'[';
    let path = file(&dir, "header.npy", bad_header);
    assert!(npy_reason(read_npy(&path)).contains("header"));
}

#[test]
fn npy_dataset_labels_from_file_or_column() {
    let dir = TempDir::new().unwrap();
    let x_values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x_path = file(
        &dir,
        "toy_X.npy.gz",
        npy_bytes(1, "<f8", false, &[3, 2], &f8(&x_values)),
    );
    let y_path = file(
        &dir,
        "toy_y.npy.gz",
        npy_bytes(1, "<f8", false, &[3], &f8(&[1.0, -1.0, 1.0])),
    );

    let data = read_npy_dataset(&x_path, NpyLabels::File(&y_path)).unwrap();
    assert_eq!(data.x, array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]);
    assert_eq!(data.y, array![1.0, -1.0, 1.0]);
    assert_eq!(data.feature_names, None);

    // read_dataset finds NAME_y next to NAME_X.
    assert_eq!(read_dataset(&x_path, None, None).unwrap(), data);
    // ... or takes a label file relative to the feature file's directory, or a column.
    assert_eq!(
        read_dataset(&x_path, None, Some("toy_y.npy.gz")).unwrap(),
        data
    );
    let last = read_dataset(&x_path, Some(Format::Npy), Some("-1")).unwrap();
    assert_eq!(last.y, array![2.0, 4.0, 6.0]);
    assert_eq!(last.x, array![[1.0], [3.0], [5.0]]);
    let first = read_npy_dataset(&x_path, NpyLabels::Column(0)).unwrap();
    assert_eq!(first.y, array![1.0, 3.0, 5.0]);
    for column in [2, -3] {
        assert!(matches!(
            read_npy_dataset(&x_path, NpyLabels::Column(column)),
            Err(Error::Label { .. })
        ));
    }

    // x_train.npy → y_train.npy
    let xt = file(
        &dir,
        "x_train.npy",
        npy_bytes(1, "<f8", false, &[3, 2], &f8(&x_values)),
    );
    file(
        &dir,
        "y_train.npy",
        npy_bytes(1, "<f8", false, &[3], &f8(&[1.0, 1.0, -1.0])),
    );
    assert_eq!(
        read_dataset(&xt, None, None).unwrap().y,
        array![1.0, 1.0, -1.0]
    );

    // No label file next to it.
    let lonely = file(
        &dir,
        "features.npy",
        npy_bytes(1, "<f8", false, &[3, 2], &f8(&x_values)),
    );
    let err = read_dataset(&lonely, None, None).unwrap_err();
    assert!(matches!(err, Error::Label { .. }), "{err:?}");

    // Label vector of the wrong length.
    let short = file(
        &dir,
        "short_y.npy",
        npy_bytes(1, "<f8", false, &[2], &f8(&[1.0, -1.0])),
    );
    assert!(matches!(
        read_npy_dataset(&x_path, NpyLabels::File(&short)),
        Err(Error::DataMismatch { .. })
    ));

    // Non-finite values are rejected with their position.
    let nan = file(
        &dir,
        "nan_X.npy",
        npy_bytes(1, "<f8", false, &[2, 2], &f8(&[1.0, 2.0, f64::NAN, 4.0])),
    );
    let reason = npy_reason(read_npy_dataset(&nan, NpyLabels::Column(0)));
    assert!(reason.contains("row 1"), "{reason}");
}

#[test]
fn npy_dataset_with_zero_rows_is_empty() {
    let dir = TempDir::new().unwrap();
    let x = file(&dir, "e_X.npy", npy_bytes(1, "<f8", false, &[0, 3], &[]));
    let y = file(&dir, "e_y.npy", npy_bytes(1, "<f8", false, &[0], &[]));
    assert!(matches!(
        read_npy_dataset(&x, NpyLabels::File(&y)),
        Err(Error::EmptyData { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// read_dataset and Format

#[test]
fn read_dataset_infers_or_takes_the_format() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "cod-rna.t", "-1 1:1 2:2\n1 2:3\n");
    let err = read_dataset(&path, None, None).unwrap_err();
    assert!(matches!(err, Error::FormatNotInferred { .. }));
    assert!(err.to_string().contains("--format"), "{err}");
    let data = read_dataset(&path, Some(Format::Libsvm), None).unwrap();
    assert_eq!(data.y, Array1::from(vec![-1.0, 1.0]));

    // An explicit format overrides the extension.
    let csv_named_txt = file(&dir, "table.txt", "a,y\n1,1\n");
    assert_eq!(
        read_dataset(&csv_named_txt, Some("csv".parse().unwrap()), Some("y"))
            .unwrap()
            .x,
        array![[1.0]]
    );
}

#[test]
fn error_messages_name_file_line_and_field() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "m.svm", "1 1:1\n1 2:1 1:1\n");
    let message = read_libsvm(&path, None).unwrap_err().to_string();
    assert!(message.contains("m.svm:2:"), "{message}");
    assert!(message.contains("1:1"), "{message}");
    assert!(message.contains("does not increase"), "{message}");
    let _: &Path = &path;
}
