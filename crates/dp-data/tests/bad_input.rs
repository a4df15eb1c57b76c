//! The readers on bad input (issue 9, "Bad input").
//!
//! Resource bounds: claimed shapes and indices are checked against the file's real size and
//! the memory budget before anything is allocated, lines are bounded, and only regular files
//! are read (each test a reproducer from the issue).
//!
//! Property-based fuzzing of every reader (CSV, LIBSVM, NPY, Parquet) on arbitrary bytes and on
//! structured mutations of valid files: no panic, no hang, no allocation beyond the input's
//! size — a typed error or a valid value (features and labels of matching length, all
//! finite). 10,000 cases per property (the readers are given bytes in memory, so a case costs
//! microseconds).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::Write;
use std::path::{Path, PathBuf};

use dp_data::Error;
use dp_data::LoadedData;
use dp_data::{Column, Labels, ParquetColumn, TableSpec, read_parquet_bytes, write_parquet};
use dp_data::{
    MAX_LINE_BYTES, MEMORY_BUDGET_BYTES, ParseErrorKind, read_csv, read_csv_bytes, read_dataset,
    read_libsvm, read_libsvm_bytes, read_npy, read_npy_bytes,
};
use flate2::Compression;
use flate2::write::GzEncoder;
use proptest::prelude::*;
use tempfile::TempDir;

/// An NPY version-1 file: the header dict padded so the data starts at a multiple of 64.
fn npy(shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(dict.len()).unwrap().to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn npy_reason<T: std::fmt::Debug>(r: dp_data::Result<T>) -> (PathBuf, String) {
    match r {
        Err(Error::Npy { path, reason }) => (path, reason),
        other => panic!("expected Error::Npy, got {other:?}"),
    }
}

/// `bytes` written to the file `name` in `dir`.
fn temp_file(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn npy_claiming_1e9_by_1e9_is_refused_naming_file_and_shape() {
    let bytes = npy("(1000000000, 1000000000)", &[0u8; 16]);
    let tmp = TempDir::new().unwrap();
    let path = temp_file(&tmp, "huge.npy", &bytes);
    let (p, reason) = npy_reason(read_npy(&path));
    assert_eq!(p, path);
    assert!(reason.contains("[1000000000, 1000000000]"), "{reason}");
    assert!(reason.contains("memory budget"), "{reason}");
    // The same bytes in memory, and gzip-compressed (whose real size is unknown up front).
    let (p, reason) = npy_reason(read_npy_bytes(&bytes, "mem.npy"));
    assert_eq!(p, Path::new("mem.npy"));
    assert!(reason.contains("[1000000000, 1000000000]"), "{reason}");
    let (_, reason) = npy_reason(read_npy_bytes(&gzip(&bytes), "mem.npy.gz"));
    assert!(reason.contains("memory budget"), "{reason}");
}

#[test]
fn npy_shape_is_checked_against_the_real_file_size() {
    // Within the budget (10^6 values, 8 MB) but the file holds 2 values.
    let bytes = npy("(1000, 1000)", &[0u8; 16]);
    let (_, reason) = npy_reason(read_npy_bytes(&bytes, "short.npy"));
    assert!(
        reason.contains("needs 8000000 bytes") && reason.contains("holds 16"),
        "{reason}"
    );
    // One byte too many is refused the same way.
    let bytes = npy("(2,)", &[0u8; 17]);
    let (_, reason) = npy_reason(read_npy_bytes(&bytes, "long.npy"));
    assert!(
        reason.contains("needs 16 bytes") && reason.contains("holds 17"),
        "{reason}"
    );
    // Gzip: no size up front, the data runs out while reading.
    let bytes = gzip(&npy("(1000, 1000)", &[0u8; 16]));
    let (_, reason) = npy_reason(read_npy_bytes(&bytes, "short.npy.gz"));
    assert!(reason.contains("ends early"), "{reason}");
    // And an exact file reads.
    let values: Vec<u8> = [1.5f64, -2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a = read_npy_bytes(&npy("(2,)", &values), "ok.npy").unwrap();
    assert_eq!(a.iter().copied().collect::<Vec<_>>(), [1.5, -2.0]);
}

#[test]
fn npy_empty_axis_does_not_hide_a_huge_one() {
    // (0, 10^18) holds no values but an allocation sized by its width would abort.
    let (_, reason) = npy_reason(read_npy_bytes(
        &npy("(0, 1000000000000000000)", &[]),
        "w.npy",
    ));
    assert!(reason.contains("memory budget"), "{reason}");
}

#[test]
fn npy_header_length_beyond_the_limit_is_refused_before_allocating() {
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(b"{}");
    let (_, reason) = npy_reason(read_npy_bytes(&bytes, "hdr.npy"));
    assert!(reason.contains("header length 4294967295"), "{reason}");
}

#[test]
fn libsvm_index_4e9_is_a_parse_error_naming_line_and_index() {
    let text = "1 1:0.5\n-1 2:1 4000000000:1\n";
    let tmp = TempDir::new().unwrap();
    let path = temp_file(&tmp, "index.libsvm", text.as_bytes());
    match read_libsvm(&path, None) {
        Err(Error::Parse {
            path: p,
            line,
            field,
            kind: ParseErrorKind::IndexTooLarge { index, max },
        }) => {
            assert_eq!(p, path);
            assert_eq!(line, 2);
            assert_eq!(field, "token 3 `4000000000:1`");
            assert_eq!(index, 4_000_000_000);
            assert_eq!(max, MEMORY_BUDGET_BYTES / 8);
        }
        other => panic!("{other:?}"),
    }
    let message = read_libsvm(&path, None).unwrap_err().to_string();
    assert!(message.contains("index.libsvm:2:"), "{message}");
    assert!(message.contains("4000000000"), "{message}");
}

#[test]
fn libsvm_dense_matrix_over_the_budget_is_refused_naming_the_widest_line() {
    // Each index is allowed alone, but 3 rows × the widest index exceed the budget.
    let max = MEMORY_BUDGET_BYTES / 8;
    let text = format!("1 1:1\n-1 {max}:1\n1 2:1\n");
    match read_libsvm_bytes(text.as_bytes(), "wide.libsvm", None) {
        Err(Error::DataMismatch { path, reason }) => {
            assert_eq!(path, Path::new("wide.libsvm"));
            assert!(
                reason.contains(&format!("3 rows × {max} features")),
                "{reason}"
            );
            assert!(reason.contains(&format!("{max} at line 2")), "{reason}");
            assert!(reason.contains("memory budget"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn devices_and_directories_are_not_read() {
    let dir = TempDir::new().unwrap();
    let mut sources: Vec<PathBuf> = vec![dir.path().to_owned()];
    if Path::new("/dev/zero").exists() {
        sources.push("/dev/zero".into());
    }
    for path in &sources {
        for result in [
            read_csv(path, "y").map(drop),
            read_libsvm(path, None).map(drop),
            read_npy(path).map(drop),
            read_dataset(path, Some(dp_data::Format::Csv), Some("y")).map(drop),
        ] {
            match result {
                Err(Error::Io { path: p, source }) => {
                    assert_eq!(&p, path);
                    assert!(
                        source.to_string().contains("not a regular file")
                            || source.kind() == std::io::ErrorKind::IsADirectory,
                        "{source}"
                    );
                }
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }
}

#[test]
fn a_line_longer_than_the_limit_is_refused() {
    let mut bytes = b"a,y\n".to_vec();
    bytes.resize(bytes.len() + MAX_LINE_BYTES + 1, b'7');
    match read_csv_bytes(&bytes, "long.csv", "y") {
        Err(Error::Parse {
            line,
            kind: ParseErrorKind::LineTooLong { limit },
            ..
        }) => {
            assert_eq!(line, 2);
            assert_eq!(limit, MAX_LINE_BYTES);
        }
        other => panic!("{other:?}"),
    }
    match read_libsvm_bytes(&bytes[4..], "long.libsvm", None) {
        Err(Error::Parse {
            line: 1,
            kind: ParseErrorKind::LineTooLong { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn bytes_and_files_read_the_same() {
    let csv = b"a,b,y\n1,2,1\n3,4,-1\n";
    let tmp = TempDir::new().unwrap();
    let path = temp_file(&tmp, "same.csv", csv);
    let from_file = read_csv(&path, "y").unwrap();
    assert_eq!(read_csv_bytes(csv, &path, "y").unwrap(), from_file);
    assert_eq!(read_csv_bytes(&gzip(csv), &path, "y").unwrap(), from_file);
    assert_eq!(from_file.x.shape(), [2, 2]);
    let svm = b"1 1:2 3:4\n-1 2:5\n";
    let data = read_libsvm_bytes(svm, "s.libsvm", None).unwrap();
    assert_eq!(data.x.shape(), [2, 3]);
    assert_eq!(data.x[[0, 2]], 4.0);
}

#[test]
fn npy_non_finite_positions_are_the_files_even_with_a_label_column() {
    let values: Vec<u8> = [1.0f64, f64::NAN, -1.0, 2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let tmp = TempDir::new().unwrap();
    let path = temp_file(&tmp, "nan_X.npy", &npy("(2, 2)", &values));
    let r = dp_data::read_npy_dataset(&path, dp_data::NpyLabels::Column(0));
    let (_, reason) = npy_reason(r);
    assert!(reason.contains("row 0, column 1"), "{reason}");
}

#[test]
fn a_sparse_libsvm_file_takes_the_width_it_is_scored_at() {
    let tmp = TempDir::new().unwrap();
    let path = temp_file(&tmp, "narrow.libsvm", b"1 1:0.5\n-1 2:1\n");
    let fmt = Some(dp_data::Format::Libsvm);
    let d = dp_data::read_dataset_with_width(&path, fmt, None, Some(4)).unwrap();
    assert_eq!(d.x.shape(), [2, 4]);
    assert_eq!(d.x[[1, 1]], 1.0);
    assert_eq!(read_dataset(&path, fmt, None).unwrap().x.shape(), [2, 2]);
    match dp_data::read_dataset_with_width(&path, fmt, None, Some(1)) {
        Err(Error::Parse {
            line: 2,
            kind: ParseErrorKind::IndexOutOfRange { index: 2, d: 1 },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzzing

const CASES: u32 = 10_000;

/// A value a reader may return: one label per row and only finite numbers.
fn check_valid(r: dp_data::Result<LoadedData>) -> Result<(), TestCaseError> {
    if let Ok(d) = r {
        prop_assert_eq!(d.x.nrows(), d.y.len());
        prop_assert!(d.x.nrows() > 0);
        prop_assert!(d.x.iter().chain(d.y.iter()).all(|v| v.is_finite()));
        if let Some(names) = &d.feature_names {
            prop_assert_eq!(names.len(), d.x.ncols());
        }
    }
    Ok(())
}

const CSV: &str = "a,b,label\n1,2.5,1\n-3e2,\"4\",-1\n\n0.5,6,1\n";
const LIBSVM: &str = "1 1:0.5 3:2\n-1 2:1e-3 # comment\n\n1 1:1 2:2 3:3\n";

fn npy_valid() -> Vec<u8> {
    let values: Vec<u8> = (1..=6).flat_map(|v| f64::from(v).to_le_bytes()).collect();
    npy("(2, 3)", &values)
}

/// A small Parquet table (two row groups): numbers, a categorical string column and a
/// string label.
fn parquet_valid() -> &'static Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let mut out = Vec::new();
        let text = |v: &[&str]| ParquetColumn::Text(v.iter().map(|s| (*s).to_owned()).collect());
        write_parquet(
            &mut out,
            "seed.parquet",
            &[
                ("a", ParquetColumn::Double(vec![1.0, -2.5, 3.0])),
                ("k", ParquetColumn::Int64(vec![4, 5, -6])),
                ("c", text(&["u", "v", "u"])),
                ("y", text(&["no", "yes", "yes"])),
            ],
            2,
        )
        .unwrap();
        out
    })
}

fn parquet_spec() -> TableSpec {
    TableSpec {
        label: Some("y".into()),
        labels: Labels::Classes {
            negative: "no".into(),
            positive: "yes".into(),
        },
        columns: Some(vec![
            Column::numeric("a"),
            Column::numeric("k"),
            Column::categorical("c", &["u".into(), "v".into()]).unwrap(),
        ]),
    }
}

/// A mutation of a valid file: overwrite, insert or delete a few bytes (biased toward the
/// characters the formats care about), or truncate.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn special_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        prop::sample::select(b",:\"\n\r #.-+eE0123456789()'{}L\x00\xff".to_vec()),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), special_byte()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), prop::collection::vec(special_byte(), 1..12))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        (any::<usize>(), 1usize..8).prop_map(|(i, k)| Edit::Delete(i, k)),
        any::<usize>().prop_map(Edit::Truncate),
        // Big numbers where digits were: claimed shapes, indices, values.
        (
            any::<usize>(),
            prop::sample::select(vec![
                "4000000000",
                "18446744073709551615",
                "99999999999999999999",
                "1e309",
                "nan",
                "-inf",
                "1000000000, 1000000000",
                "0",
            ])
        )
            .prop_map(|(i, s)| Edit::Insert(i, s.as_bytes().to_vec())),
    ]
}

fn mutate(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = bytes.len().max(1);
        match e {
            Edit::Set(i, b) => {
                if !bytes.is_empty() {
                    let i = i % bytes.len();
                    bytes[i] = *b;
                }
            }
            Edit::Insert(i, v) => {
                let i = i % (bytes.len() + 1);
                bytes.splice(i..i, v.iter().copied());
            }
            Edit::Delete(i, k) => {
                let i = i % n;
                let end = (i + k).min(bytes.len());
                if i < end {
                    bytes.drain(i..end);
                }
            }
            Edit::Truncate(i) => bytes.truncate(i % n),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn csv_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_valid(read_csv_bytes(&bytes, "fuzz.csv", "label"))?;
    }

    #[test]
    fn csv_mutations(edits in prop::collection::vec(edit(), 1..6)) {
        let bytes = mutate(CSV.as_bytes().to_vec(), &edits);
        check_valid(read_csv_bytes(&bytes, "fuzz.csv", "label"))?;
    }

    #[test]
    fn libsvm_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_valid(read_libsvm_bytes(&bytes, "fuzz.libsvm", None))?;
    }

    #[test]
    fn libsvm_mutations(edits in prop::collection::vec(edit(), 1..6), d in prop::option::of(0usize..6)) {
        let bytes = mutate(LIBSVM.as_bytes().to_vec(), &edits);
        let r = read_libsvm_bytes(&bytes, "fuzz.libsvm", d);
        if let (Ok(data), Some(d)) = (&r, d) {
            prop_assert_eq!(data.x.ncols(), d);
        }
        check_valid(r)?;
    }

    #[test]
    fn npy_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        // Start from the magic string half the time so the header parser is reached.
        let mut with_magic = b"\x93NUMPY\x01\x00".to_vec();
        with_magic.extend_from_slice(&bytes);
        for b in [&bytes, &with_magic] {
            if let Ok(a) = read_npy_bytes(b, "fuzz.npy") {
                // A value: exactly as many values as the shape says, from bytes that hold them.
                prop_assert_eq!(a.len(), a.shape().iter().product::<usize>());
                prop_assert!(a.len() * 4 <= b.len());
            }
        }
    }

    #[test]
    fn parquet_mutations(edits in prop::collection::vec(edit(), 1..6)) {
        let bytes = mutate(parquet_valid().clone(), &edits);
        let r = read_parquet_bytes(&bytes, "fuzz.parquet", &parquet_spec());
        if let Ok(d) = &r {
            // The footer's claims are bounded by what a valid read delivers.
            prop_assert!(d.x.nrows() * d.x.ncols() <= 8 * bytes.len());
        }
        check_valid(r)?;
    }

    #[test]
    fn npy_mutations(edits in prop::collection::vec(edit(), 1..6)) {
        let bytes = mutate(npy_valid(), &edits);
        if let Ok(a) = read_npy_bytes(&bytes, "fuzz.npy") {
            prop_assert_eq!(a.len(), a.shape().iter().product::<usize>());
            prop_assert!(a.len() * 4 <= bytes.len());
        }
    }
}

#[test]
fn the_seeds_of_the_mutations_are_valid_files() {
    assert_eq!(
        read_csv_bytes(CSV.as_bytes(), "s.csv", "label")
            .unwrap()
            .x
            .shape(),
        [3, 2]
    );
    assert_eq!(
        read_libsvm_bytes(LIBSVM.as_bytes(), "s.libsvm", None)
            .unwrap()
            .x
            .shape(),
        [3, 3]
    );
    assert_eq!(
        read_npy_bytes(&npy_valid(), "s.npy").unwrap().shape(),
        [2, 3]
    );
    let pq = read_parquet_bytes(parquet_valid(), "s.parquet", &parquet_spec()).unwrap();
    assert_eq!(pq.x.shape(), [3, 4]);
    assert_eq!(pq.y.to_vec(), [-1.0, 1.0, 1.0]);
}
