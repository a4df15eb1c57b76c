//! The papers' datasets as staged in the data directory, checked against the counts and values
//! in shared/data/README.md. Every test skips (passes with a printed message) when no data
//! directory is found (`DPGLM_DATA` or `../shared/data`).
//!
//! Load times are printed; run with `--release -- --nocapture --test-threads=1` to measure.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dp_bench::data::{
    self, ADULT_SPLIT_SEED, COD_RNA_RADIUS, LoadedData, PaperDataset, sha256_hex, staged_files,
    verify_checksums,
};
use dp_bench::{Error, locate_data_dir};
use dp_data::{read_libsvm, read_npy};
use ndarray::{Array2, ArrayView2, Axis, Slice};

/// The data directory, if it holds `files` (paths relative to it, with or without `.gz`);
/// otherwise `None` after telling why the test is skipped.
fn data_dir(test: &str, files: &[&str]) -> Option<PathBuf> {
    let Some(dir) = locate_data_dir() else {
        skip(
            test,
            &format!(
                "no data directory (set {} or stage the datasets in ../shared/data)",
                dp_bench::DATA_ENV
            ),
        );
        return None;
    };
    for file in files {
        let plain = dir.join(file.strip_suffix(".gz").unwrap_or(file));
        let gz = dir.join(format!("{}.gz", plain.display()));
        if !plain.is_file() && !gz.is_file() {
            skip(test, &format!("{} is not staged", gz.display()));
            return None;
        }
    }
    Some(dir)
}

/// Print a skip notice straight to stderr (not captured by the test harness, so it shows in
/// ordinary `cargo test` output).
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!("load time {what}: {:.3} s", start.elapsed().as_secs_f64());
    out
}

fn count(y: &ndarray::Array1<f64>, value: f64) -> usize {
    y.iter().filter(|&&v| v == value).count()
}

fn stack(a: &LoadedData, b: &LoadedData) -> LoadedData {
    LoadedData {
        x: ndarray::concatenate(Axis(0), &[a.x.view(), b.x.view()]).expect("same width"),
        y: ndarray::concatenate(Axis(0), &[a.y.view(), b.y.view()]).expect("vectors"),
        feature_names: a.feature_names.clone(),
    }
}

/// Columns `start..end` (the `s!` macro is unusable under `forbid(unsafe_code)`).
fn columns(x: &Array2<f64>, start: usize, end: usize) -> ArrayView2<'_, f64> {
    x.slice_axis(Axis(1), Slice::from(start..end))
}

fn row_norms(x: &Array2<f64>) -> Vec<f64> {
    x.axis_iter(Axis(0)).map(|r| r.dot(&r).sqrt()).collect()
}

// ---------------------------------------------------------------------------------------------
// Adult

#[test]
fn adult_rows_match_the_iyengar_recipe() {
    let Some(dir) = data_dir(
        "adult_rows_match_the_iyengar_recipe",
        &["adult/adult.data.gz", "adult/adult.test.gz"],
    ) else {
        return;
    };
    let all = timed("adult (all rows)", || data::adult_rows(&dir)).unwrap();
    assert_eq!(all.x.dim(), (45_220, 104));
    assert_eq!(count(&all.y, -1.0), 34_014);
    assert_eq!(count(&all.y, 1.0), 11_206);

    let names = all.feature_names.as_ref().unwrap();
    assert_eq!(names.len(), 104);
    assert_eq!(names[0], "workclass=Federal-gov");
    assert_eq!(names[7], "education=10th");
    assert_eq!(names[97], "native-country=Yugoslavia");
    assert_eq!(
        &names[98..],
        [
            "age",
            "fnlwgt",
            "education-num",
            "capital-gain",
            "capital-loss",
            "hours-per-week"
        ]
    );

    // One-hot block: exactly one level per categorical field, every level present.
    let onehot = columns(&all.x, 0, 98);
    assert!(onehot.iter().all(|&v| v == 0.0 || v == 1.0));
    assert!(onehot.sum_axis(Axis(1)).iter().all(|&s| s == 8.0));
    assert!(onehot.sum_axis(Axis(0)).iter().all(|&c| c >= 1.0));

    // Continuous block: divided by the README's maxima, so each column's max is exactly 1.
    let continuous = columns(&all.x, 98, 104);
    for column in continuous.axis_iter(Axis(1)) {
        let max = column.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        assert_eq!(max, 1.0);
        assert!(column.iter().all(|&v| v >= 0.0));
    }
    // First row of adult.data: 39, State-gov, 77516, Bachelors, 13, Never-married,
    // Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K.
    let maxima = [90.0, 1_490_400.0, 16.0, 99_999.0, 4_356.0, 99.0];
    let raw = [39.0, 77_516.0, 13.0, 2_174.0, 0.0, 40.0];
    for k in 0..6 {
        assert_eq!(all.x[[0, 98 + k]], raw[k] / maxima[k], "{}", names[98 + k]);
    }
    let hot: Vec<&str> = (0..98)
        .filter(|&j| all.x[[0, j]] == 1.0)
        .map(|j| names[j].as_str())
        .collect();
    assert_eq!(
        hot,
        [
            "workclass=State-gov",
            "education=Bachelors",
            "marital-status=Never-married",
            "occupation=Adm-clerical",
            "relationship=Not-in-family",
            "race=White",
            "sex=Male",
            "native-country=United-States"
        ]
    );
    assert_eq!(all.y[0], -1.0);
}

#[test]
fn adult_split_is_seeded_80_20() {
    let Some(dir) = data_dir(
        "adult_split_is_seeded_80_20",
        &["adult/adult.data.gz", "adult/adult.test.gz"],
    ) else {
        return;
    };
    let split = timed("adult (rows + shuffle + split)", || {
        data::adult(&dir, ADULT_SPLIT_SEED)
    })
    .unwrap();
    assert_eq!(split.train.x.dim(), (36_176, 104));
    assert_eq!(split.test.x.dim(), (9_044, 104));
    let both = stack(&split.train, &split.test);
    assert_eq!(count(&both.y, -1.0), 34_014);

    // Reproducible for a seed, different for another, and a permutation of the rows.
    let again = PaperDataset::Adult.load(&dir, ADULT_SPLIT_SEED).unwrap();
    assert_eq!(again, split);
    let other = data::adult(&dir, 1).unwrap();
    assert_ne!(other.train.x, split.train.x);
    let all = data::adult_rows(&dir).unwrap();
    let column_sums = |d: &LoadedData| d.x.sum_axis(Axis(0));
    let diff = (&column_sums(&both) - &column_sums(&all)).mapv(f64::abs);
    assert!(diff.iter().all(|&d| d < 1e-9), "same rows, reordered");
}

// ---------------------------------------------------------------------------------------------
// Cod-RNA

#[test]
fn cod_rna_matches_paper_000_recipe() {
    let Some(dir) = data_dir(
        "cod_rna_matches_paper_000_recipe",
        &["cod-rna/cod-rna.gz", "cod-rna/cod-rna.t.gz"],
    ) else {
        return;
    };
    let split = timed("cod-rna (train + test)", || data::cod_rna(&dir)).unwrap();
    assert_eq!(split.train.x.dim(), (59_535, 9));
    assert_eq!(split.test.x.dim(), (271_617, 9));
    assert_eq!(
        (count(&split.train.y, -1.0), count(&split.train.y, 1.0)),
        (39_690, 19_845)
    );
    assert_eq!(
        (count(&split.test.y, -1.0), count(&split.test.y, 1.0)),
        (181_078, 90_539)
    );

    for (part, moved) in [(&split.train, 1_048), (&split.test, 5_165)] {
        assert!(part.x.column(8).iter().all(|&v| v == 1.0 / 3.0));
        assert!(row_norms(&part.x).iter().all(|&n| n <= 1.0 + 1e-12));
        let inner = row_norms(&columns(&part.x, 0, 8).to_owned());
        assert!(inner.iter().all(|&n| n <= COD_RNA_RADIUS * (1.0 + 1e-12)));
        let on_sphere = inner
            .iter()
            .filter(|&&n| (n - COD_RNA_RADIUS).abs() < 1e-12)
            .count();
        assert_eq!(on_sphere, moved, "rows projected onto the sphere");
        assert!(columns(&part.x, 0, 8).iter().all(|v| v.abs() <= 0.5));
    }

    // First train row, by hand: -1 1:-766 2:128 3:0.140625 4:0.304688 5:0.234375 (6-8 = 3-5);
    // train ranges f1 [-1868, 0], f2 [67, 133], f3 [0.105263, 0.478873],
    // f4 [0.107692, 0.42029], f5 [0.0833333, 0.361538] (README, section 2).
    let raw = [
        -766.0, 128.0, 0.140625, 0.304688, 0.234375, 0.140625, 0.304688, 0.234375,
    ];
    let lo = [
        -1868.0, 67.0, 0.105263, 0.107692, 0.0833333, 0.105263, 0.107692, 0.0833333,
    ];
    let hi = [
        0.0, 133.0, 0.478873, 0.42029, 0.361538, 0.478873, 0.42029, 0.361538,
    ];
    let scaled: Vec<f64> = (0..8)
        .map(|j| (raw[j] - lo[j]) / (hi[j] - lo[j]) - 0.5)
        .collect();
    let norm = scaled.iter().map(|v| v * v).sum::<f64>().sqrt();
    let factor = (COD_RNA_RADIUS / norm).min(1.0);
    for (j, v) in scaled.iter().enumerate() {
        assert!(
            (split.train.x[[0, j]] - v * factor).abs() < 1e-12,
            "f{}",
            j + 1
        );
    }
    assert_eq!(split.train.y[0], -1.0);
}

#[test]
fn cod_rna_projection_counts_from_the_raw_files() {
    let Some(dir) = data_dir(
        "cod_rna_projection_counts_from_the_raw_files",
        &["cod-rna/cod-rna.gz", "cod-rna/cod-rna.t.gz"],
    ) else {
        return;
    };
    // The recipe step by step with the public pieces: raw LIBSVM, train min-max, projection.
    let mut train = read_libsvm(dir.join("cod-rna/cod-rna.gz"), None).unwrap();
    let mut test = read_libsvm(dir.join("cod-rna/cod-rna.t.gz"), None).unwrap();
    assert_eq!((train.x.ncols(), test.x.ncols()), (8, 8));
    let min = train.x.fold_axis(Axis(0), f64::INFINITY, |&a, &b| a.min(b));
    let max = train
        .x
        .fold_axis(Axis(0), f64::NEG_INFINITY, |&a, &b| a.max(b));
    assert_eq!(
        (min[0], max[0], min[1], max[1]),
        (-1868.0, 0.0, 67.0, 133.0)
    );
    let test_min = test.x.fold_axis(Axis(0), f64::INFINITY, |&a, &b| a.min(b));
    let test_max = test
        .x
        .fold_axis(Axis(0), f64::NEG_INFINITY, |&a, &b| a.max(b));
    assert!((0..8).all(|j| test_min[j] >= min[j] && test_max[j] <= max[j]));
    let mut moved = Vec::new();
    for d in [&mut train, &mut test] {
        d.x = (&d.x - &min) / (&max - &min) - 0.5;
        moved.push(data::project_rows_to_ball(&mut d.x, (8.0f64 / 9.0).sqrt()).unwrap());
    }
    assert_eq!(moved, [1_048, 5_165]);
}

// ---------------------------------------------------------------------------------------------
// Synthetic-L / Synthetic-H

/// SHA-256 of an array's values as little-endian f64 bytes (the `.npy` data without header).
fn data_sha256(x: &ndarray::ArrayD<f64>) -> String {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    sha256_hex(&bytes)
}

#[test]
fn synthetic_l_matches_the_readme() {
    let Some(dir) = data_dir(
        "synthetic_l_matches_the_readme",
        &[
            "synthetic-L/synthetic-L_X.npy.gz",
            "synthetic-L/synthetic-L_y.npy.gz",
        ],
    ) else {
        return;
    };
    let split = timed("synthetic-L", || data::synthetic_l(&dir)).unwrap();
    assert_eq!(split.train.x.dim(), (8_000, 40));
    assert_eq!(split.test.x.dim(), (2_000, 40));
    let all = stack(&split.train, &split.test);
    assert_eq!((count(&all.y, -1.0), count(&all.y, 1.0)), (5_003, 4_997));
    assert_eq!(
        all.x.row(0).iter().take(4).copied().collect::<Vec<_>>(),
        [
            -1.9322261154917397,
            -2.6387434733871924,
            4.849737241502297,
            -3.217310769647182
        ]
    );
    assert_eq!(
        all.y.iter().take(10).copied().collect::<Vec<_>>(),
        [1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0]
    );
    let norms = row_norms(&all.x);
    let (lo, hi) = norms
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &n| (l.min(n), h.max(n)));
    assert!(
        (lo - 12.29).abs() < 0.005 && (hi - 75.74).abs() < 0.005,
        "{lo} {hi}"
    );
    // The README's digest of the raw X data bytes: the whole array is bit-exact.
    let raw = read_npy(dir.join("synthetic-L/synthetic-L_X.npy.gz")).unwrap();
    assert_eq!(
        data_sha256(&raw),
        "6347560e059d85ab39b9aa71d90859460c729a0529ecafe52d778e9d015e8624"
    );
}

#[test]
fn synthetic_h_matches_the_readme() {
    let Some(dir) = data_dir(
        "synthetic_h_matches_the_readme",
        &[
            "synthetic-H/synthetic-H_X.npy.gz",
            "synthetic-H/synthetic-H_y.npy.gz",
        ],
    ) else {
        return;
    };
    let split = timed("synthetic-H", || data::synthetic_h(&dir)).unwrap();
    assert_eq!(split.train.x.dim(), (1_600, 2_000));
    assert_eq!(split.test.x.dim(), (400, 2_000));
    let all = stack(&split.train, &split.test);
    assert_eq!((count(&all.y, -1.0), count(&all.y, 1.0)), (1_000, 1_000));
    assert_eq!(
        all.x.row(0).iter().take(4).copied().collect::<Vec<_>>(),
        [
            -0.02671330435518223,
            1.2831171281373013,
            -0.39808749829361434,
            -0.27403579527478117
        ]
    );
    assert_eq!(
        all.y.iter().take(10).copied().collect::<Vec<_>>(),
        [1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, 1.0]
    );
    let raw = read_npy(dir.join("synthetic-H/synthetic-H_X.npy.gz")).unwrap();
    assert_eq!(
        data_sha256(&raw),
        "7c056640891fe20919e78993997471f769ef6588e81cf1cb26d58843dcdcd35b"
    );
}

// ---------------------------------------------------------------------------------------------
// Checksums, and errors for a directory without the data

#[test]
fn staged_files_match_the_readme_checksums() {
    let Some(dir) = data_dir(
        "staged_files_match_the_readme_checksums",
        &staged_files().iter().map(|f| f.path).collect::<Vec<_>>(),
    ) else {
        return;
    };
    let verified = timed("verify_checksums (all staged files)", || {
        verify_checksums(&dir)
    })
    .unwrap();
    assert_eq!(verified.len(), staged_files().len());
}

#[test]
fn a_directory_without_the_data_gives_io_errors() {
    let empty = tempfile::TempDir::new().unwrap();
    for dataset in PaperDataset::ALL {
        match dataset.load(empty.path(), 0) {
            Err(Error::Data(dp_data::Error::Io { path, .. })) => {
                assert!(path.starts_with(empty.path()), "{}", path.display());
            }
            other => panic!("{dataset}: {other:?}"),
        }
    }
    assert!(matches!(
        verify_checksums(empty.path()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn checksum_mismatch_is_reported() {
    // A copy of the data directory with one file replaced would be large; instead check the
    // size comparison on a fake tree with a too-small first file.
    let fake = tempfile::TempDir::new().unwrap();
    let first = Path::new(staged_files()[0].path);
    std::fs::create_dir_all(fake.path().join(first.parent().unwrap())).unwrap();
    std::fs::write(fake.path().join(first), b"not the UCI file").unwrap();
    match verify_checksums(fake.path()) {
        Err(Error::Checksum { what, found, .. }) => {
            assert_eq!(what, "compressed size");
            assert_eq!(found, "16");
        }
        other => panic!("{other:?}"),
    }
}
