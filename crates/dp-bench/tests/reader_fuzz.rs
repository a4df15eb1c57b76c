//! Property-based fuzzing of every data reader (CSV, LIBSVM, NPY) on arbitrary bytes and on
//! structured mutations of valid files: no panic, no hang, no allocation beyond the input's
//! size — a typed error or a valid value (features and labels of matching length, all
//! finite). 10,000 cases per property (the readers are given bytes in memory, so a case costs
//! microseconds).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_bench::data::{LoadedData, read_csv_bytes, read_libsvm_bytes, read_npy_bytes};
use proptest::prelude::*;

const CASES: u32 = 10_000;

/// A value a reader may return: one label per row and only finite numbers.
fn check_valid(r: dp_bench::Result<LoadedData>) -> Result<(), TestCaseError> {
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
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
    let mut h = dict.to_string();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    for v in [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
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
        (any::<usize>(), prop::sample::select(vec![
            "4000000000", "18446744073709551615", "99999999999999999999", "1e309", "nan",
            "-inf", "1000000000, 1000000000", "0",
        ]))
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
    assert_eq!(read_csv_bytes(CSV.as_bytes(), "s.csv", "label").unwrap().x.shape(), [3, 2]);
    assert_eq!(read_libsvm_bytes(LIBSVM.as_bytes(), "s.libsvm", None).unwrap().x.shape(), [3, 3]);
    assert_eq!(read_npy_bytes(&npy_valid(), "s.npy").unwrap().shape(), [2, 3]);
}
