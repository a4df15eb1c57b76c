//! LIBSVM / SVMlight sparse text: `label idx:val idx:val …` with 1-based indices.

use std::path::Path;

use ndarray::{Array1, Array2};

use super::source::{Lines, Source, parse_error, parse_finite};
use super::{LoadedData, ParseErrorKind};
use crate::blocks::{BlockBuf, BlockReader};
use crate::error::{Error, Result};
use crate::schema::{LabelMapper, Labels};

/// Read a LIBSVM file into dense arrays.
///
/// Each non-blank line is `label idx:val idx:val …`, separated by spaces or tabs, with 1-based,
/// strictly increasing feature indices; missing indices are zeros. A `#` starts a comment that
/// runs to the end of the line. The number of features is `n_features` when given (every index
/// must then be at most `n_features`; use it to read a test file with the training file's
/// width), else the largest index in the file. Gzip compression is detected from the content.
/// [`LoadedData::feature_names`] is `None`.
///
/// # Errors
///
/// [`Error::Parse`] naming the file, the 1-based line and the token:
/// [`ParseErrorKind::MalformedToken`] (no `:`, an index that is not an unsigned integer,
/// `qid:` tokens), [`ParseErrorKind::NotANumber`], [`ParseErrorKind::NonFinite`],
/// [`ParseErrorKind::ZeroIndex`], [`ParseErrorKind::NonIncreasingIndex`],
/// [`ParseErrorKind::IndexOutOfRange`], [`ParseErrorKind::IndexTooLarge`] (an index whose
/// dense column could not fit in [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES)),
/// [`ParseErrorKind::InvalidUtf8`],
/// [`ParseErrorKind::LineTooLong`], [`ParseErrorKind::OverMemoryBudget`];
/// [`Error::EmptyData`] for a file without samples; [`Error::DataMismatch`] when the dense
/// `n × d` matrix would not fit in the memory budget (checked before it is allocated; the
/// message names the line of the largest index); [`Error::Io`] when it cannot be read or is
/// not a regular file.
pub fn read_libsvm(path: impl AsRef<Path>, n_features: Option<usize>) -> Result<LoadedData> {
    read_libsvm_lines(Lines::open(path.as_ref())?, n_features)
}

/// [`read_libsvm`] on bytes in memory (plain or gzip), named `name` in errors.
///
/// # Errors
///
/// As [`read_libsvm`].
pub fn read_libsvm_bytes(
    bytes: &[u8],
    name: impl AsRef<Path>,
    n_features: Option<usize>,
) -> Result<LoadedData> {
    read_libsvm_lines(
        Lines::new(Source::from_bytes(bytes, name.as_ref())?),
        n_features,
    )
}

/// Read a LIBSVM file into compressed sparse rows (CSR): memory grows with the non-zero
/// entries, not with `n × d`.
///
/// The same parser as [`read_libsvm`], with the same rules (1-based strictly increasing
/// indices, `#` comments, blank lines skipped, gzip detected from the content) and the same
/// labels (the first token of each line as read, any finite value). Entries whose value is
/// zero are not stored. The number of features is `n_features` when given — every index must
/// then be at most `n_features`, so a file whose widest row is narrower than a model can be
/// read at the model's width — else the largest index in the file (0 for a file without
/// features).
///
/// # Errors
///
/// As [`read_libsvm`], except that there is no dense matrix to refuse: [`Error::Parse`] with
/// [`ParseErrorKind::IndexOutOfRange`] naming the line and the index beyond `n_features`,
/// [`ParseErrorKind::IndexTooLarge`] for an index beyond the memory budget in values (a
/// model's `d`-vectors must fit it), [`ParseErrorKind::OverMemoryBudget`] when the entries read
/// exceed [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES) (each entry counts 16 bytes, each
/// row 16), and the other parse errors; [`Error::EmptyData`]; [`Error::Io`].
pub fn read_libsvm_sparse(path: impl AsRef<Path>, n_features: Option<usize>) -> Result<CsrData> {
    Ok(read_csr(Lines::open(path.as_ref())?, n_features)?.data)
}

/// [`read_libsvm_sparse`] on bytes in memory (plain or gzip), named `name` in errors.
///
/// # Errors
///
/// As [`read_libsvm_sparse`].
pub fn read_libsvm_sparse_bytes(
    bytes: &[u8],
    name: impl AsRef<Path>,
    n_features: Option<usize>,
) -> Result<CsrData> {
    let lines = Lines::new(Source::from_bytes(bytes, name.as_ref())?);
    Ok(read_csr(lines, n_features)?.data)
}

/// Sparse rows in compressed sparse row (CSR) form, with their labels: what
/// [`read_libsvm_sparse`] returns.
///
/// Row `i` holds the entries `indptr[i]..indptr[i + 1]` of `indices` (0-based columns,
/// strictly increasing within a row, each below `n_features`) and `values` (finite, non-zero);
/// every other entry of the row is zero. `indptr` has `n + 1` entries, starting at 0 and ending
/// at the number of stored entries. The readers return data with these properties; a value
/// built by hand is checked by its consumer (dp-glm's `SparseDataset::new`).
#[derive(Clone, Debug, PartialEq)]
pub struct CsrData {
    /// The number of features `d`.
    pub n_features: usize,
    /// Row pointers, `n + 1` of them.
    pub indptr: Vec<usize>,
    /// 0-based column of each stored entry.
    pub indices: Vec<usize>,
    /// Value of each stored entry.
    pub values: Vec<f64>,
    /// `n` labels, as read.
    pub y: Vec<f64>,
}

impl CsrData {
    /// Number of samples `n`.
    pub fn n_samples(&self) -> usize {
        self.y.len()
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The columns and values of row `i`.
    ///
    /// # Panics
    ///
    /// When `i ≥ n`, or for `indptr` not as documented on [`CsrData`].
    pub fn row(&self, i: usize) -> (&[usize], &[f64]) {
        let range = self.indptr[i]..self.indptr[i + 1];
        (&self.indices[range.clone()], &self.values[range])
    }
}

/// Values (of 8 bytes) held per stored entry of [`Csr`]: its index and its value.
const ENTRY_VALUES: usize = std::mem::size_of::<(usize, f64)>() / 8;

/// Parses one line into `entries` (0-based column, non-zero value): its label and largest
/// index (0 without features), or `None` for a blank or comment line.
fn parse_line(
    path: &Path,
    line: usize,
    text: &str,
    n_features: Option<usize>,
    budget: usize,
    entries: &mut Vec<(usize, f64)>,
) -> Result<Option<(f64, usize)>> {
    entries.clear();
    let content = text.split_once('#').map_or(text, |(before, _)| before);
    let mut tokens = content.split_ascii_whitespace();
    let Some(label) = tokens.next() else {
        return Ok(None);
    };
    let label = parse_finite(label).map_err(|kind| parse_error(path, line, "label", kind))?;
    let mut previous = 0usize;
    for (t, token) in tokens.enumerate() {
        let field = || format!("token {} `{token}`", t + 2);
        let malformed = || {
            parse_error(
                path,
                line,
                field(),
                ParseErrorKind::MalformedToken(token.to_owned()),
            )
        };
        let Some((index, value)) = token.split_once(':') else {
            return Err(malformed());
        };
        if index == "qid" || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        // All digits: the only failure left is overflow, which is out of range anyway.
        let index = index.parse::<usize>().unwrap_or(usize::MAX);
        if index == 0 {
            return Err(parse_error(path, line, field(), ParseErrorKind::ZeroIndex));
        }
        if index <= previous {
            return Err(parse_error(
                path,
                line,
                field(),
                ParseErrorKind::NonIncreasingIndex { previous, index },
            ));
        }
        if let Some(d) = n_features
            && index > d
        {
            return Err(parse_error(
                path,
                line,
                field(),
                ParseErrorKind::IndexOutOfRange { index, d },
            ));
        }
        if index > budget {
            return Err(parse_error(
                path,
                line,
                field(),
                ParseErrorKind::IndexTooLarge { index, max: budget },
            ));
        }
        let value = parse_finite(value).map_err(|kind| parse_error(path, line, field(), kind))?;
        previous = index;
        if value != 0.0 {
            entries.push((index - 1, value));
        }
    }
    Ok(Some((label, previous)))
}

/// The rows of a LIBSVM file as read: compressed sparse rows and the raw labels, with where
/// the widest row is (for the dense reader's error).
struct Csr {
    data: CsrData,
    /// The largest index in the file (0 without features).
    max_index: usize,
    /// The line holding the largest index.
    max_index_line: usize,
}

/// Reads every line of `lines` into compressed sparse rows, within the source's budget: each
/// entry counts [`ENTRY_VALUES`] values and each row two (its label and row pointer), checked
/// line by line before the line's entries are stored, so that memory grows only with the
/// entries read (never with a claimed index or width).
fn read_csr(mut lines: Lines<'_>, n_features: Option<usize>) -> Result<Csr> {
    let path = &lines.path().to_owned();
    // The budget in values; also the widest dense row it allows.
    let budget = lines.budget();
    let mut data = CsrData {
        n_features: 0,
        indptr: vec![0],
        indices: Vec::new(),
        values: Vec::new(),
        y: Vec::new(),
    };
    let mut line_entries = Vec::new();
    let (mut max_index, mut max_index_line) = (0usize, 0usize);
    while let Some((line, text)) = lines.next_line()? {
        let Some((label, widest)) =
            parse_line(path, line, text, n_features, budget, &mut line_entries)?
        else {
            continue;
        };
        if widest > max_index {
            max_index = widest;
            max_index_line = line;
        }
        let rows = data.y.len() + 1;
        let nnz = data.values.len() + line_entries.len();
        if nnz
            .saturating_mul(ENTRY_VALUES)
            .saturating_add(2 * rows + 1)
            > budget
        {
            return Err(parse_error(
                path,
                line,
                "row",
                ParseErrorKind::OverMemoryBudget {
                    values: data.values.len() + data.y.len(),
                },
            ));
        }
        data.y.push(label);
        data.indices
            .extend(line_entries.iter().map(|&(col, _)| col));
        data.values
            .extend(line_entries.iter().map(|&(_, value)| value));
        data.indptr.push(data.values.len());
    }
    if data.y.is_empty() {
        return Err(Error::EmptyData { path: path.into() });
    }
    data.n_features = n_features.unwrap_or(max_index);
    Ok(Csr {
        data,
        max_index,
        max_index_line,
    })
}

fn read_libsvm_lines(lines: Lines<'_>, n_features: Option<usize>) -> Result<LoadedData> {
    let path = &lines.path().to_owned();
    let budget = lines.budget();
    let Csr {
        data,
        max_index,
        max_index_line,
    } = read_csr(lines, n_features)?;
    let (n, d) = (data.n_samples(), data.n_features);
    // Checked before the allocation: n·d values (plus the labels) within the budget.
    if n.checked_mul(d)
        .and_then(|len| len.checked_add(n))
        .is_none_or(|values| values > budget)
    {
        let widest = if let Some(d) = n_features {
            format!("{d} features asked for")
        } else {
            format!("the largest feature index, {max_index} at line {max_index_line}")
        };
        return Err(Error::DataMismatch {
            path: path.into(),
            reason: format!(
                "{n} rows × {d} features ({widest}) as a dense matrix exceed the memory budget \
                 of {budget} values ({} bytes)",
                budget * 8
            ),
        });
    }
    let mut x = Array2::<f64>::zeros((n, d));
    for (i, mut row) in x.rows_mut().into_iter().enumerate() {
        let (indices, values) = data.row(i);
        for (&col, &value) in indices.iter().zip(values) {
            row[col] = value;
        }
    }
    Ok(LoadedData {
        x,
        y: Array1::from_vec(data.y),
        feature_names: None,
    })
}

/// The number of features of a LIBSVM file read in blocks: `n_features`, or else its largest
/// index (one pass over the file, checking every line).
///
/// # Errors
///
/// As [`read_libsvm`].
pub(crate) fn width(path: &Path, n_features: Option<usize>) -> Result<usize> {
    if let Some(d) = n_features {
        return Ok(d);
    }
    let mut lines = Lines::open(path)?;
    let budget = lines.budget();
    let mut entries = Vec::new();
    let mut d = 0;
    while let Some((line, text)) = lines.next_line()? {
        if let Some((_, widest)) = parse_line(path, line, text, None, budget, &mut entries)? {
            d = d.max(widest);
        }
    }
    Ok(d)
}

/// The rows of a LIBSVM file `d` features wide, densified a block at a time, labels mapped.
pub(crate) struct LibsvmRows {
    lines: Lines<'static>,
    d: usize,
    labels: Labels,
    negative: Option<f64>,
    with_labels: bool,
    entries: Vec<(usize, f64)>,
    /// Rows read so far.
    row: usize,
}

impl LibsvmRows {
    /// The rows of `path`, `d` features wide, labels mapped by `labels` (or dropped unless
    /// `with_labels`).
    ///
    /// # Errors
    ///
    /// [`Error::Io`].
    pub(crate) fn open(path: &Path, d: usize, labels: Labels, with_labels: bool) -> Result<Self> {
        Ok(Self {
            lines: Lines::open(path)?,
            d,
            labels,
            negative: None,
            with_labels,
            entries: Vec::new(),
            row: 0,
        })
    }
}

impl BlockReader for LibsvmRows {
    fn n_features(&self) -> usize {
        self.d
    }

    fn read_rows(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize> {
        let path = self.lines.path().to_owned();
        let mut mapper = LabelMapper::resume(&self.labels, self.negative);
        let mut rows = 0;
        while rows < max_rows {
            let Some((line, text)) = self.lines.next_line()? else {
                break;
            };
            let Some((label, _)) = parse_line(
                &path,
                line,
                text,
                Some(self.d),
                usize::MAX,
                &mut self.entries,
            )?
            else {
                continue;
            };
            let start = buf.x.len();
            buf.x.resize(start + self.d, 0.0);
            for &(col, value) in &self.entries {
                buf.x[start + col] = value;
            }
            if self.with_labels {
                buf.y.push(mapper.map_value(label, self.row, &path)?);
            }
            self.row += 1;
            rows += 1;
        }
        self.negative = mapper.negative();
        buf.rows += rows;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, budget: usize) -> Result<LoadedData> {
        let source = Source::from_bytes(text.as_bytes(), Path::new("b.libsvm"))?;
        read_libsvm_lines(Lines::new(source.with_budget(budget)), None)
    }

    #[test]
    fn the_budget_bounds_indices_entries_and_the_dense_matrix() {
        // An index beyond the budget is refused at its line, before any allocation.
        match read("1 1:1\n-1 11:1\n", 10) {
            Err(Error::Parse {
                line: 2,
                kind: ParseErrorKind::IndexTooLarge { index: 11, max: 10 },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        // 2 rows × 4 columns + 2 labels = 10 values fit in 10, not in 9.
        assert_eq!(read("1 1:1\n-1 4:1\n", 10).unwrap().x.shape(), [2, 4]);
        match read("1 1:1\n-1 4:1\n", 9) {
            Err(Error::DataMismatch { reason, .. }) => {
                assert!(reason.contains("2 rows × 4 features"), "{reason}");
                assert!(reason.contains("4 at line 2"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Entries count 2 values and rows 2 while reading (+1 row pointer): the second row needs
        // 2·4 + 2·2 + 1 = 13 > 10 values.
        match read("1 1:1 2:1\n-1 1:1 2:1\n", 10) {
            Err(Error::Parse {
                line: 2,
                kind: ParseErrorKind::OverMemoryBudget { .. },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
