//! The papers' datasets, preprocessed as `shared/data/README.md` describes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ndarray::{Array1, Array2, Axis, concatenate};

use dp_data::{
    Lines, LoadedData, ParseErrorKind, Split, parse_error, parse_finite, read_libsvm, read_npy_1d,
    read_npy_2d,
};

use super::project_rows_to_ball;
use crate::error::{Error, Result};

/// The seed [`PaperDataset::load`] callers use for Adult by default. It is the number Iyengar
/// et al. pass to `np.random.seed`, but it seeds Xoshiro256++ here, so the permutation is not
/// theirs (see [`adult`]).
pub const ADULT_SPLIT_SEED: u64 = 10_000_019;

/// The radius Cod-RNA's 8 features are projected to, `√(8/9)`, so that appending the constant
/// `1/3` gives `‖x‖ ≤ 1` (paper 000, Appendix E; shared/data/README.md section 2, step 3).
pub const COD_RNA_RADIUS: f64 = 0.942_809_041_582_063_4;

/// The datasets staged in the data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaperDataset {
    /// UCI Adult, Iyengar et al.'s preprocessing ([`adult`]).
    Adult,
    /// LIBSVM Cod-RNA, paper 000's preprocessing ([`cod_rna`]).
    CodRna,
    /// Iyengar et al.'s low-dimensional synthetic set ([`synthetic_l`]).
    SyntheticL,
    /// Iyengar et al.'s high-dimensional synthetic set ([`synthetic_h`]).
    SyntheticH,
}

impl PaperDataset {
    /// Every staged dataset.
    pub const ALL: [Self; 4] = [
        Self::Adult,
        Self::CodRna,
        Self::SyntheticL,
        Self::SyntheticH,
    ];

    /// The name used in the data directory and on command lines: `adult`, `cod-rna`,
    /// `synthetic-L`, `synthetic-H`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Adult => "adult",
            Self::CodRna => "cod-rna",
            Self::SyntheticL => "synthetic-L",
            Self::SyntheticH => "synthetic-H",
        }
    }

    /// Load the train/test split from `data_dir` (see the per-dataset functions). `seed` is
    /// used by Adult only (the others have fixed splits); [`ADULT_SPLIT_SEED`] is the default.
    ///
    /// # Errors
    ///
    /// As the per-dataset functions.
    pub fn load(self, data_dir: &Path, seed: u64) -> Result<Split> {
        match self {
            Self::Adult => adult(data_dir, seed),
            Self::CodRna => cod_rna(data_dir),
            Self::SyntheticL => synthetic_l(data_dir),
            Self::SyntheticH => synthetic_h(data_dir),
        }
    }
}

impl fmt::Display for PaperDataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PaperDataset {
    type Err = Error;

    /// Parse a [`PaperDataset::name`] (case-insensitive; `codrna` is accepted too).
    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.to_ascii_lowercase().replace(['_', ' '], "-");
        let wanted = if wanted == "codrna" {
            "cod-rna".to_owned()
        } else {
            wanted
        };
        Self::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| Error::InvalidParameter {
                name: "dataset",
                reason: format!(
                    "unknown dataset `{s}`; expected one of adult, cod-rna, synthetic-L, \
                     synthetic-H"
                ),
            })
    }
}

/// `data_dir/relative.gz` if it exists, else `data_dir/relative` if it exists, else the `.gz`
/// path (so that the I/O error names the staged file).
fn staged(data_dir: &Path, relative: &str) -> PathBuf {
    let gz = data_dir.join(format!("{relative}.gz"));
    let plain = data_dir.join(relative);
    if !gz.is_file() && plain.is_file() {
        plain
    } else {
        gz
    }
}

fn mismatch(path: &Path, reason: String) -> Error {
    Error::DataMismatch {
        path: path.into(),
        reason,
    }
}

// ---------------------------------------------------------------------------------------------
// Adult

/// Adult's 15 fields, in file order.
const ADULT_FIELDS: [&str; 15] = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
];

/// The continuous fields (indices into [`ADULT_FIELDS`]), in output order.
const CONTINUOUS: [usize; 6] = [0, 2, 4, 10, 11, 12];

/// The categorical fields and their levels in encoding order (sorted distinct strings, as
/// listed in shared/data/README.md section 1, step 5).
const CATEGORICAL: [(usize, &[&str]); 8] = [
    (
        1,
        &[
            "Federal-gov",
            "Local-gov",
            "Private",
            "Self-emp-inc",
            "Self-emp-not-inc",
            "State-gov",
            "Without-pay",
        ],
    ),
    (
        3,
        &[
            "10th",
            "11th",
            "12th",
            "1st-4th",
            "5th-6th",
            "7th-8th",
            "9th",
            "Assoc-acdm",
            "Assoc-voc",
            "Bachelors",
            "Doctorate",
            "HS-grad",
            "Masters",
            "Preschool",
            "Prof-school",
            "Some-college",
        ],
    ),
    (
        5,
        &[
            "Divorced",
            "Married-AF-spouse",
            "Married-civ-spouse",
            "Married-spouse-absent",
            "Never-married",
            "Separated",
            "Widowed",
        ],
    ),
    (
        6,
        &[
            "Adm-clerical",
            "Armed-Forces",
            "Craft-repair",
            "Exec-managerial",
            "Farming-fishing",
            "Handlers-cleaners",
            "Machine-op-inspct",
            "Other-service",
            "Priv-house-serv",
            "Prof-specialty",
            "Protective-serv",
            "Sales",
            "Tech-support",
            "Transport-moving",
        ],
    ),
    (
        7,
        &[
            "Husband",
            "Not-in-family",
            "Other-relative",
            "Own-child",
            "Unmarried",
            "Wife",
        ],
    ),
    (
        8,
        &[
            "Amer-Indian-Eskimo",
            "Asian-Pac-Islander",
            "Black",
            "Other",
            "White",
        ],
    ),
    (9, &["Female", "Male"]),
    (
        13,
        &[
            "Cambodia",
            "Canada",
            "China",
            "Columbia",
            "Cuba",
            "Dominican-Republic",
            "Ecuador",
            "El-Salvador",
            "England",
            "France",
            "Germany",
            "Greece",
            "Guatemala",
            "Haiti",
            "Holand-Netherlands",
            "Honduras",
            "Hong",
            "Hungary",
            "India",
            "Iran",
            "Ireland",
            "Italy",
            "Jamaica",
            "Japan",
            "Laos",
            "Mexico",
            "Nicaragua",
            "Outlying-US(Guam-USVI-etc)",
            "Peru",
            "Philippines",
            "Poland",
            "Portugal",
            "Puerto-Rico",
            "Scotland",
            "South",
            "Taiwan",
            "Thailand",
            "Trinadad&Tobago",
            "United-States",
            "Vietnam",
            "Yugoslavia",
        ],
    ),
];

/// Rows Iyengar et al.'s recipe keeps from `adult.data` and `adult.test`.
const ADULT_ROWS: (usize, usize) = (30_161, 15_059);

/// One complete Adult row: category codes, raw continuous values, label.
struct AdultRow {
    codes: [usize; 8],
    continuous: [f64; 6],
    label: f64,
}

/// Read one Adult file: skip blank lines and `|` lines, drop rows with a `?` field, then drop
/// the last remaining row (Iyengar et al.'s `[:-2]` quirk).
fn read_adult_file(path: &Path) -> Result<Vec<AdultRow>> {
    let mut lines = Lines::open(path)?;
    let mut rows = Vec::new();
    while let Some((n, text)) = lines.next_line()? {
        if text.trim().is_empty() || text.starts_with('|') {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != ADULT_FIELDS.len() {
            return Err(parse_error(
                path,
                n,
                "row",
                ParseErrorKind::RaggedRow {
                    expected: ADULT_FIELDS.len(),
                    found: fields.len(),
                },
            )
            .into());
        }
        if fields.contains(&"?") {
            continue;
        }
        let mut codes = [0usize; 8];
        for (code, &(field, levels)) in codes.iter_mut().zip(&CATEGORICAL) {
            let value = fields[field];
            *code = levels.iter().position(|&l| l == value).ok_or_else(|| {
                parse_error(
                    path,
                    n,
                    ADULT_FIELDS[field],
                    ParseErrorKind::UnexpectedValue {
                        value: value.to_owned(),
                        expected: format!(
                            "one of the {} levels listed in shared/data/README.md",
                            levels.len()
                        ),
                    },
                )
            })?;
        }
        let mut continuous = [0.0; 6];
        for (v, &field) in continuous.iter_mut().zip(&CONTINUOUS) {
            *v = parse_finite(fields[field])
                .map_err(|kind| parse_error(path, n, ADULT_FIELDS[field], kind))?;
        }
        let label = match fields[14].strip_suffix('.').unwrap_or(fields[14]) {
            "<=50K" => -1.0,
            ">50K" => 1.0,
            other => {
                return Err(parse_error(
                    path,
                    n,
                    "income",
                    ParseErrorKind::UnexpectedValue {
                        value: other.to_owned(),
                        expected: "<=50K or >50K".into(),
                    },
                )
                .into());
            }
        };
        rows.push(AdultRow {
            codes,
            continuous,
            label,
        });
    }
    rows.pop();
    Ok(rows)
}

/// All 45,220 rows of Adult after Iyengar et al.'s preprocessing, `adult.data`'s rows first,
/// in file order (not shuffled). [`adult`] shuffles and splits them.
///
/// Recipe (shared/data/README.md, section 1, "Standard preprocessing: Iyengar et al. 2019"):
/// 1. read `adult/adult.data(.gz)` and `adult/adult.test(.gz)` (fields split on `,` and
///    trimmed; blank lines and the test file's `|1x3 Cross validator` line skipped);
/// 2. drop every row with a `?` field;
/// 3. drop the last remaining row of each file (the `train[:-2]` / `test[1:-2]` quirk), giving
///    30,161 + 15,059 = 45,220 rows;
/// 4. divide age, fnlwgt, education-num, capital-gain, capital-loss and hours-per-week by their
///    maxima over all 45,220 rows (90, 1,490,400, 16, 99,999, 4,356, 99);
/// 5. one-hot encode the 8 categorical columns over all rows in the README's level order
///    (98 columns), and lay out the one-hot columns first, in field order, then the 6 scaled
///    continuous columns: d = 104;
/// 6. labels `<=50K` → −1, `>50K` → +1 (a trailing `.` in the test file ignored).
///
/// Feature names are `field=level` for the one-hot columns and the field name for the
/// continuous ones. Note that the maxima and levels come from train and test together, as in
/// Iyengar et al.'s code.
///
/// # Errors
///
/// [`Error::Data`] with [`dp_data::Error::Io`] when a file is missing, or with
/// [`dp_data::Error::Parse`] for a row without 15 fields, a category or label outside the
/// README's lists, or a non-numeric continuous value;
/// [`Error::DataMismatch`] when the row counts differ from 30,161 / 15,059 or a level never
/// occurs (the files are then not the staged UCI originals).
pub fn adult_rows(data_dir: &Path) -> Result<LoadedData> {
    let train_path = staged(data_dir, "adult/adult.data");
    let test_path = staged(data_dir, "adult/adult.test");
    let train = read_adult_file(&train_path)?;
    let test = read_adult_file(&test_path)?;
    for (path, rows, expected) in [
        (&train_path, &train, ADULT_ROWS.0),
        (&test_path, &test, ADULT_ROWS.1),
    ] {
        if rows.len() != expected {
            return Err(mismatch(
                path,
                format!(
                    "{} complete rows after the recipe, expected {expected} (not the UCI file?)",
                    rows.len()
                ),
            ));
        }
    }
    let rows: Vec<&AdultRow> = train.iter().chain(&test).collect();

    let mut maxima = [0.0f64; 6];
    for row in &rows {
        for (m, &v) in maxima.iter_mut().zip(&row.continuous) {
            *m = m.max(v);
        }
    }
    let offsets: Vec<usize> = CATEGORICAL
        .iter()
        .scan(0, |acc, (_, levels)| {
            let start = *acc;
            *acc += levels.len();
            Some(start)
        })
        .collect();
    let n_onehot: usize = CATEGORICAL.iter().map(|(_, l)| l.len()).sum();
    let d = n_onehot + CONTINUOUS.len();

    let mut x = Array2::<f64>::zeros((rows.len(), d));
    let mut y = Array1::<f64>::zeros(rows.len());
    for (i, row) in rows.iter().enumerate() {
        for (&offset, &code) in offsets.iter().zip(&row.codes) {
            x[[i, offset + code]] = 1.0;
        }
        for (k, (&v, &m)) in row.continuous.iter().zip(&maxima).enumerate() {
            x[[i, n_onehot + k]] = if m > 0.0 { v / m } else { v };
        }
        y[i] = row.label;
    }
    let counts = x.sum_axis(Axis(0));
    let mut names = Vec::with_capacity(d);
    for &(field, levels) in &CATEGORICAL {
        for level in levels {
            names.push(format!("{}={level}", ADULT_FIELDS[field]));
        }
    }
    names.extend(CONTINUOUS.iter().map(|&f| ADULT_FIELDS[f].to_owned()));
    if let Some(j) = (0..n_onehot).find(|&j| counts[j] == 0.0) {
        return Err(mismatch(
            &train_path,
            format!("the level `{}` never occurs in train or test", names[j]),
        ));
    }
    Ok(LoadedData {
        x,
        y,
        feature_names: Some(names),
    })
}

/// Adult (Iyengar et al. 2019's preprocessing, see [`adult_rows`]), shuffled and split 80/20:
/// the first `⌊0.8·45,220⌋ = 36,176` rows of the shuffled set train, the other 9,044 test.
///
/// Iyengar et al. shuffle with NumPy's legacy MT19937 stream (`np.random.seed(10000019)`,
/// `np.random.shuffle`), which is not reproduced here: the permutation is
/// [`permutation`](dp_data::permutation) on a Xoshiro256++ stream seeded with `seed`
/// ([`ADULT_SPLIT_SEED`] by default). The split sizes are theirs; which rows fall in which
/// part is not.
///
/// # Errors
///
/// As [`adult_rows`].
pub fn adult(data_dir: &Path, seed: u64) -> Result<Split> {
    Ok(adult_split(adult_rows(data_dir)?, seed))
}

/// [`adult`]'s split of rows already read by [`adult_rows`]: for several splits, the files are
/// read once.
pub fn adult_split(rows: LoadedData, seed: u64) -> Split {
    let all = rows.shuffled(seed);
    let n_train = iyengar_train_size(all.n_samples());
    all.split_at(n_train)
}

/// `int(0.8 * n)`, as Iyengar et al.'s `gridsearch.py` computes it.
fn iyengar_train_size(n: usize) -> usize {
    // Exact for every n below 2^53, and truncation is Python's `int`.
    (0.8 * n as f64) as usize
}

// ---------------------------------------------------------------------------------------------
// Cod-RNA

/// Cod-RNA with paper 000's preprocessing (Song et al. 2021, Appendix E, after Jain &
/// Thakurta 2014; shared/data/README.md section 2):
/// 1. train = `cod-rna/cod-rna(.gz)` (59,535 rows), test = `cod-rna/cod-rna.t(.gz)`
///    (271,617 rows), LIBSVM with 8 features;
/// 2. each feature mapped with the **train** minimum and maximum to
///    `(x − min)/(max − min) − 0.5` ∈ [−0.5, 0.5] (test values stay inside);
/// 3. each row projected onto the L2 ball of radius [`COD_RNA_RADIUS`] = √(8/9)
///    (1,048 train and 5,165 test rows move);
/// 4. the constant feature 1/3 appended: d = 9 and ‖x‖ ≤ 1.
///
/// Labels are ±1 as stored. Feature names are `f1`…`f8`, `const`.
///
/// # Errors
///
/// [`Error::Data`] with [`dp_data::Error::Io`] when a file is missing or the LIBSVM reader's errors;
/// [`Error::DataMismatch`] when the row counts differ from the LIBSVM files'.
pub fn cod_rna(data_dir: &Path) -> Result<Split> {
    let train_path = staged(data_dir, "cod-rna/cod-rna");
    let test_path = staged(data_dir, "cod-rna/cod-rna.t");
    let mut train = read_libsvm(&train_path, Some(8))?;
    let mut test = read_libsvm(&test_path, Some(8))?;
    for (path, data, expected) in [(&train_path, &train, 59_535), (&test_path, &test, 271_617)] {
        if data.n_samples() != expected {
            return Err(mismatch(
                path,
                format!("{} rows, expected {expected}", data.n_samples()),
            ));
        }
    }
    let min = train.x.fold_axis(Axis(0), f64::INFINITY, |&a, &b| a.min(b));
    let max = train
        .x
        .fold_axis(Axis(0), f64::NEG_INFINITY, |&a, &b| a.max(b));
    for data in [&mut train, &mut test] {
        for mut row in data.x.axis_iter_mut(Axis(0)) {
            for ((v, &lo), &hi) in row.iter_mut().zip(&min).zip(&max) {
                // A constant train column maps to 0 (the middle of the range).
                *v = if hi > lo {
                    (*v - lo) / (hi - lo) - 0.5
                } else {
                    0.0
                };
            }
        }
        project_rows_to_ball(&mut data.x, COD_RNA_RADIUS)?;
        let n = data.n_samples();
        let constant = Array2::from_elem((n, 1), 1.0 / 3.0);
        data.x = concatenate(Axis(1), &[data.x.view(), constant.view()])
            .map_err(|e| mismatch(&train_path, e.to_string()))?;
        let mut names: Vec<String> = (1..=8).map(|j| format!("f{j}")).collect();
        names.push("const".into());
        data.feature_names = Some(names);
    }
    Ok(Split { train, test })
}

// ---------------------------------------------------------------------------------------------
// Synthetic-L / Synthetic-H

fn synthetic(data_dir: &Path, name: &str, n: usize, d: usize) -> Result<Split> {
    let x_path = staged(data_dir, &format!("{name}/{name}_X.npy"));
    let y_path = staged(data_dir, &format!("{name}/{name}_y.npy"));
    let x = read_npy_2d(&x_path)?;
    if x.dim() != (n, d) {
        return Err(mismatch(
            &x_path,
            format!("shape {:?}, expected ({n}, {d})", x.dim()),
        ));
    }
    let y = read_npy_1d(&y_path)?;
    if y.len() != n {
        return Err(mismatch(
            &y_path,
            format!("{} labels, expected {n}", y.len()),
        ));
    }
    if let Some(bad) = y.iter().find(|&&v| v != 1.0 && v != -1.0) {
        return Err(mismatch(&y_path, format!("label {bad}, expected ±1")));
    }
    if let Some(bad) = x.iter().find(|v| !v.is_finite()) {
        return Err(mismatch(&x_path, format!("non-finite value {bad}")));
    }
    let data = LoadedData {
        x,
        y,
        feature_names: None,
    };
    Ok(data.split_at(iyengar_train_size(n)))
}

/// Synthetic-L (Iyengar et al. 2019, `make_classification` with 10,000 samples and 40
/// features, regenerated: shared/data/README.md section 3) from
/// `synthetic-L/synthetic-L_{X,y}.npy(.gz)`, split as Iyengar et al.: the first 8,000 rows
/// train, the last 2,000 test (the rows are already in `make_classification`'s shuffled
/// order). Labels ±1; features as stored (no row bounding).
///
/// # Errors
///
/// [`Error::Data`] for a missing file or the NPY reader's errors; [`Error::DataMismatch`]
/// for a shape other than 10,000 × 40, labels other than ±1 or non-finite values.
pub fn synthetic_l(data_dir: &Path) -> Result<Split> {
    synthetic(data_dir, "synthetic-L", 10_000, 40)
}

/// Synthetic-H (Iyengar et al. 2019, `make_classification` with 2,000 samples and 2,000
/// features, regenerated: shared/data/README.md section 3) from
/// `synthetic-H/synthetic-H_{X,y}.npy(.gz)`, split as Iyengar et al.: the first 1,600 rows
/// train, the last 400 test. Labels ±1; features as stored (no row bounding).
///
/// # Errors
///
/// As [`synthetic_l`], with the shape 2,000 × 2,000.
pub fn synthetic_h(data_dir: &Path) -> Result<Split> {
    synthetic(data_dir, "synthetic-H", 2_000, 2_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn train_sizes_match_python_int() {
        assert_eq!(iyengar_train_size(45_220), 36_176);
        assert_eq!(iyengar_train_size(10_000), 8_000);
        assert_eq!(iyengar_train_size(2_000), 1_600);
    }

    #[test]
    fn radius_constant() {
        assert!((COD_RNA_RADIUS - (8.0f64 / 9.0).sqrt()).abs() < 1e-16);
        assert!((COD_RNA_RADIUS.powi(2) + 1.0 / 9.0 - 1.0).abs() < 1e-15);
    }

    #[test]
    fn adult_layout() {
        let levels: usize = CATEGORICAL.iter().map(|(_, l)| l.len()).sum();
        assert_eq!(levels, 98);
        for (_, l) in CATEGORICAL {
            assert!(l.windows(2).all(|w| w[0] < w[1]), "levels sorted: {l:?}");
        }
    }

    #[test]
    fn dataset_names_round_trip() {
        for d in PaperDataset::ALL {
            assert_eq!(d.name().parse::<PaperDataset>().unwrap(), d);
        }
        assert_eq!(
            "CodRNA".parse::<PaperDataset>().unwrap(),
            PaperDataset::CodRna
        );
        assert!("gisette".parse::<PaperDataset>().is_err());
    }
}
