//! The LIBSVM reader into compressed sparse rows (issue 12 §2): the same rows, labels and
//! errors as the dense reader, memory growing with the stored entries; a property test on
//! arbitrary bytes and on mutations of a valid file (no panic; a typed error, or valid CSR
//! that densifies to the dense reader's matrix).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::Write;

use dp_data::{
    CsrData, Error, LoadedData, ParseErrorKind, read_libsvm, read_libsvm_bytes, read_libsvm_sparse,
    read_libsvm_sparse_bytes,
};
use flate2::Compression;
use flate2::write::GzEncoder;
use ndarray::{Array2, array};
use proptest::prelude::*;

/// Every property `CsrData` documents.
fn check_csr(c: &CsrData) -> Result<(), TestCaseError> {
    let n = c.n_samples();
    prop_assert!(n > 0);
    prop_assert_eq!(c.indptr.len(), n + 1);
    prop_assert_eq!(c.indptr[0], 0);
    prop_assert_eq!(c.indptr[n], c.nnz());
    prop_assert_eq!(c.indices.len(), c.values.len());
    prop_assert!(c.y.iter().all(|v| v.is_finite()));
    for i in 0..n {
        prop_assert!(c.indptr[i] <= c.indptr[i + 1]);
        let (cols, vals) = c.row(i);
        prop_assert!(cols.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(cols.iter().all(|&j| j < c.n_features));
        prop_assert!(vals.iter().all(|v| v.is_finite() && *v != 0.0));
    }
    Ok(())
}

/// The dense matrix of `c` (small test data only).
fn densify(c: &CsrData) -> Array2<f64> {
    let mut x = Array2::zeros((c.n_samples(), c.n_features));
    for i in 0..c.n_samples() {
        let (cols, vals) = c.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            x[[i, j]] = v;
        }
    }
    x
}

/// The sparse reader agrees with the dense one on `bytes`: both succeed with the same rows and
/// labels, or both fail with the same error (the dense reader's refusal of a dense matrix over
/// the budget aside, which cannot happen on inputs this small).
fn agree(bytes: &[u8], d: Option<usize>) -> Result<(), TestCaseError> {
    let sparse = read_libsvm_sparse_bytes(bytes, "s.libsvm", d);
    let dense = read_libsvm_bytes(bytes, "s.libsvm", d);
    match (&sparse, &dense) {
        (Ok(s), Ok(LoadedData { x, y, .. })) => {
            check_csr(s)?;
            prop_assert_eq!(&densify(s), x);
            prop_assert_eq!(s.y.as_slice(), y.as_slice().unwrap());
            if let Some(d) = d {
                prop_assert_eq!(s.n_features, d);
            }
        }
        (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
        _ => prop_assert!(false, "sparse {sparse:?} but dense {dense:?}"),
    }
    Ok(())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Comments, a comment line, blank lines, tabs, trailing whitespace, CRLF, a byte-order mark,
/// an explicit zero, an empty row (label only) and a row ending in a comment.
const GOOD: &str = "\u{feff}+1 1:0.5 3:2  \r\n-1\t2:1 # a comment\n\n# a comment line\n0 \n\
                    -1 1:-766 4:1e-3\t\n1 2:0 3:-0.25 #\n";

#[test]
fn the_good_file_in_csr() {
    let c = read_libsvm_sparse_bytes(GOOD.as_bytes(), "g.libsvm", None).unwrap();
    assert_eq!(c.n_features, 4);
    assert_eq!(c.indptr, [0, 2, 3, 3, 5, 6]);
    assert_eq!(c.indices, [0, 2, 1, 0, 3, 2]);
    assert_eq!(c.values, [0.5, 2.0, 1.0, -766.0, 1e-3, -0.25]);
    assert_eq!(c.y, [1.0, -1.0, 0.0, -1.0, 1.0]);
    assert_eq!(c.row(2), (&[][..], &[][..]));
    assert_eq!(
        densify(&c),
        array![
            [0.5, 0.0, 2.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [-766.0, 0.0, 0.0, 1e-3],
            [0.0, 0.0, -0.25, 0.0]
        ]
    );
    agree(GOOD.as_bytes(), None).unwrap();
    agree(GOOD.as_bytes(), Some(7)).unwrap();
    // gzip detected from the content, and a file on disk.
    assert_eq!(
        read_libsvm_sparse_bytes(&gzip(GOOD.as_bytes()), "g.libsvm", None).unwrap(),
        c
    );
    let tmp = tempfile::TempDir::new().unwrap();
    let path = tmp.path().join("g.libsvm");
    std::fs::write(&path, GOOD).unwrap();
    assert_eq!(read_libsvm_sparse(&path, None).unwrap(), c);
    let dense = read_libsvm(&path, None).unwrap();
    assert_eq!(densify(&c), dense.x);
}

#[test]
fn a_given_width_pads_and_an_index_beyond_it_is_an_error_naming_line_and_index() {
    let c = read_libsvm_sparse_bytes(GOOD.as_bytes(), "g.libsvm", Some(10)).unwrap();
    assert_eq!(c.n_features, 10);
    assert_eq!(c.nnz(), 6);
    match read_libsvm_sparse_bytes(GOOD.as_bytes(), "g.libsvm", Some(3)) {
        Err(Error::Parse {
            line: 6,
            field,
            kind: ParseErrorKind::IndexOutOfRange { index: 4, d: 3 },
            ..
        }) => assert!(field.contains("4:1e-3"), "{field}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_absurd_index_is_a_typed_error_not_an_allocation() {
    // 4e9 lies beyond the memory budget's widest row: refused at its line, nothing allocated
    // for it. Without that check, a CSR would still take it, but a model's d-vectors not.
    let text = b"1 1:1\n-1 4000000000:1\n";
    match read_libsvm_sparse_bytes(text, "big.libsvm", None) {
        Err(Error::Parse {
            line: 2,
            kind:
                ParseErrorKind::IndexTooLarge {
                    index: 4_000_000_000,
                    ..
                },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // An index within the budget but far beyond any dense matrix: the sparse reader stores
    // two entries, where the dense one refuses the n × d matrix.
    let text = b"1 1:1\n-1 300000000:2\n";
    let c = read_libsvm_sparse_bytes(text, "wide.libsvm", None).unwrap();
    assert_eq!((c.n_features, c.nnz()), (300_000_000, 2));
    assert_eq!(c.row(1), (&[299_999_999][..], &[2.0][..]));
    assert!(matches!(
        read_libsvm_bytes(text, "wide.libsvm", None),
        Err(Error::DataMismatch { .. })
    ));
}

#[test]
fn bad_lines_give_the_dense_readers_errors() {
    for text in [
        "1 1:1\n-1 2:x\n",
        "1 3:1 2:1\n",
        "1 0:1\n",
        "1 1:1 1:2\n",
        "1 qid:3 1:1\n",
        "1 1\n",
        "nan 1:1\n",
        "1 1:inf\n",
        "1 a:1\n",
        "",
        "# only a comment\n\n",
    ] {
        let err = read_libsvm_sparse_bytes(text.as_bytes(), "bad.libsvm", None).unwrap_err();
        let dense = read_libsvm_bytes(text.as_bytes(), "bad.libsvm", None).unwrap_err();
        assert_eq!(err.to_string(), dense.to_string(), "{text:?}");
        assert!(
            matches!(err, Error::Parse { .. } | Error::EmptyData { .. }),
            "{err:?}"
        );
    }
    let bytes = [b"1 1:1\n1 2:".as_slice(), &[0xff, 0xfe], b"\n"].concat();
    assert!(matches!(
        read_libsvm_sparse_bytes(&bytes, "utf.libsvm", None),
        Err(Error::Parse {
            line: 2,
            kind: ParseErrorKind::InvalidUtf8,
            ..
        })
    ));
}

/// The mutation strategy's base file.
const BASE: &str = "1 1:0.5 3:2\n-1 2:1e-3 # comment\n\n1 1:1 2:2 3:3\n0\n";

proptest! {
    // 10,000 cases each: bytes in memory, microseconds a case.
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256), d in prop::option::of(0usize..6)) {
        agree(&bytes, d)?;
    }

    #[test]
    fn libsvm_like_text(
        lines in prop::collection::vec("[-+0-9.e]{0,4}( [0-9]{1,2}:[-0-9.e]{1,4}){0,4}[ \t#x]{0,2}", 0..6),
        d in prop::option::of(0usize..12),
    ) {
        agree(lines.join("\n").as_bytes(), d)?;
    }

    #[test]
    fn mutations(at in 0usize..64, insert in "[ :#\n0-9a-z.-]{0,4}", cut in 0usize..4, d in prop::option::of(0usize..6)) {
        let mut bytes = BASE.as_bytes().to_vec();
        let at = at % (bytes.len() + 1);
        let end = (at + cut).min(bytes.len());
        bytes.splice(at..end, insert.bytes());
        agree(&bytes, d)?;
    }
}
