//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0), C order, `<f8`, `<f4` or `<i8`.
//!
//! Format reference: NumPy's `numpy.lib.format` documentation (the magic string `\x93NUMPY`,
//! a major and minor version byte, a little-endian header length — `u16` in version 1, `u32`
//! in versions 2 and 3 — and an ASCII (UTF-8 in version 3) Python dict literal with the keys
//! `descr`, `fortran_order` and `shape`, padded with spaces and ended by `\n`).

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2, ArrayD, Axis, Ix2, IxDyn};

use super::LoadedData;
use super::source::Source;
use crate::error::{Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Values converted per read.
const CHUNK: usize = 8192;
/// 2^53: integers up to this magnitude convert to `f64` exactly.
const EXACT_INT: i64 = 1 << 53;
/// The longest header accepted (NumPy itself refuses headers over 10,000 bytes by default).
const MAX_HEADER_BYTES: usize = 1 << 20;
/// Values set aside before any data is read when the data's size is not known in advance
/// (gzip): the vector then grows with what actually arrives.
const INITIAL_VALUES: usize = 1 << 20;

/// Where the labels of an NPY feature matrix come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpyLabels<'a> {
    /// A second `.npy` file holding a vector (shape `(n,)` or `(n, 1)`).
    File(&'a Path),
    /// A column of the feature matrix, 0-based; negative values count from the end (`-1` is
    /// the last column). The column is removed from the features.
    Column(isize),
}

/// The element types that can be read; all are converted to `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    F8,
    F4,
    I8,
}

impl Dtype {
    fn parse(descr: &str) -> Option<Self> {
        match descr {
            "<f8" => Some(Self::F8),
            "<f4" => Some(Self::F4),
            "<i8" => Some(Self::I8),
            _ => None,
        }
    }

    fn size(self) -> usize {
        match self {
            Self::F8 | Self::I8 => 8,
            Self::F4 => 4,
        }
    }
}

/// The parsed header dict.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Read a `.npy` file (gzip detected from the content) as an `f64` array of its shape.
///
/// Accepted: format versions 1.0, 2.0 and 3.0; dtypes `<f8`, `<f4` (widened exactly) and
/// `<i8` (converted when exactly representable, i.e. |v| ≤ 2⁵³); C order. Values are not
/// checked for finiteness here ([`read_npy_dataset`] does).
///
/// # Errors
///
/// [`Error::Npy`] for a bad magic string, an unsupported version, a malformed header dict, an
/// unsupported dtype (big-endian, structured, other types), `fortran_order: True`, data shorter
/// or longer than the shape says, a shape whose values exceed
/// [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES) or (for an uncompressed file) differ
/// from the file's real size — both checked before anything is allocated — or an `<i8` value
/// beyond 2⁵³; [`Error::Io`] when the file cannot be read or is not a regular file.
pub fn read_npy(path: impl AsRef<Path>) -> Result<ArrayD<f64>> {
    read_npy_source(Source::open(path.as_ref())?)
}

/// [`read_npy`] on bytes in memory (plain or gzip), named `name` in errors.
///
/// # Errors
///
/// As [`read_npy`].
pub fn read_npy_bytes(bytes: &[u8], name: impl AsRef<Path>) -> Result<ArrayD<f64>> {
    read_npy_source(Source::from_bytes(bytes, name.as_ref())?)
}

fn read_npy_source(source: Source<'_>) -> Result<ArrayD<f64>> {
    let Source {
        mut reader,
        path,
        len: file_len,
        budget,
    } = source;
    let path = path.as_path();
    let npy_err = |reason: String| Error::Npy {
        path: path.into(),
        reason,
    };
    let mut preamble = [0u8; 8];
    read_exactly(&mut reader, &mut preamble, path, "the magic string")?;
    if &preamble[..6] != MAGIC {
        return Err(npy_err(
            "does not start with the magic string \\x93NUMPY".into(),
        ));
    }
    let (major, minor) = (preamble[6], preamble[7]);
    let (header_len, len_bytes) = match major {
        1 => {
            let mut len = [0u8; 2];
            read_exactly(&mut reader, &mut len, path, "the header length")?;
            (usize::from(u16::from_le_bytes(len)), 2)
        }
        2 | 3 => {
            let mut len = [0u8; 4];
            read_exactly(&mut reader, &mut len, path, "the header length")?;
            let len = u32::from_le_bytes(len);
            (usize::try_from(len).unwrap_or(usize::MAX), 4)
        }
        _ => {
            return Err(npy_err(format!(
                "format version {major}.{minor} is not supported (1.0, 2.0 and 3.0 are)"
            )));
        }
    };
    if header_len > MAX_HEADER_BYTES {
        return Err(npy_err(format!(
            "the header length {header_len} is over the limit of {MAX_HEADER_BYTES} bytes"
        )));
    }
    let data_offset = (8 + len_bytes + header_len) as u64;
    if file_len.is_some_and(|len| len < data_offset) {
        return Err(npy_err(format!(
            "the file ends inside the header (it claims {header_len} bytes)"
        )));
    }
    let mut header = vec![0u8; header_len];
    read_exactly(&mut reader, &mut header, path, "the header")?;
    let header = std::str::from_utf8(&header)
        .map_err(|_| npy_err("the header is not ASCII/UTF-8 text".into()))
        .and_then(|text| parse_header(text).map_err(npy_err))?;

    let dtype = Dtype::parse(&header.descr).ok_or_else(|| {
        npy_err(format!(
            "dtype '{}' is not supported (supported: '<f8', '<f4', '<i8')",
            header.descr
        ))
    })?;
    if header.fortran_order {
        return Err(npy_err(
            "fortran_order is True; only C-order arrays are supported (save with \
             np.ascontiguousarray)"
                .into(),
        ));
    }
    let size = dtype.size();
    // Checked before any allocation: the claimed shape within the memory budget and, when the
    // size is known, exactly the bytes the file holds.
    // Zero-length axes count as 1 in the bound, so that no axis (e.g. the width of an empty
    // matrix, which sizes everything computed from it) is beyond the budget either.
    let bounded = header
        .shape
        .iter()
        .try_fold(1usize, |acc, &dim| acc.checked_mul(dim.max(1)))
        .is_some_and(|values| values <= budget);
    if !bounded {
        return Err(npy_err(format!(
            "the shape {:?} claims more values than fit in the memory budget of {budget} \
             values ({} bytes)",
            header.shape,
            budget * 8
        )));
    }
    // No overflow: bounded by the product just checked.
    let count: usize = header.shape.iter().product();
    if let Some(len) = file_len {
        let needed = count as u64 * size as u64;
        let held = len - data_offset;
        if needed != held {
            let what = if needed > held {
                "the data ends early"
            } else {
                "bytes follow the values"
            };
            return Err(npy_err(format!(
                "{what}: the shape {:?} needs {needed} bytes of '{}' data, but the file holds \
                 {held}",
                header.shape, header.descr
            )));
        }
    }

    let mut data: Vec<f64> = Vec::with_capacity(if file_len.is_some() {
        count
    } else {
        count.min(INITIAL_VALUES)
    });
    let mut buf = vec![0u8; CHUNK * size];
    while data.len() < count {
        let k = CHUNK.min(count - data.len());
        let bytes = &mut buf[..k * size];
        if let Err(e) = reader.read_exact(bytes) {
            return Err(if e.kind() == ErrorKind::UnexpectedEof {
                npy_err(format!(
                    "the data ends early: the shape {:?} needs {count} values",
                    header.shape
                ))
            } else {
                Error::io(path, e)
            });
        }
        match dtype {
            Dtype::F8 => data.extend(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
            ),
            Dtype::F4 => data.extend(
                bytes
                    .chunks_exact(4)
                    .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            ),
            Dtype::I8 => {
                for c in bytes.chunks_exact(8) {
                    let v = i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                    if !(-EXACT_INT..=EXACT_INT).contains(&v) {
                        return Err(npy_err(format!(
                            "int64 value {v} (flat index {}) is not exactly representable as \
                             f64",
                            data.len()
                        )));
                    }
                    // Exact: |v| ≤ 2^53.
                    data.push(v as f64);
                }
            }
        }
    }
    let mut extra = [0u8; 1];
    loop {
        match reader.read(&mut extra) {
            Ok(0) => break,
            Ok(_) => {
                return Err(npy_err(format!(
                    "bytes follow the {count} values the shape {:?} describes",
                    header.shape
                )));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    ArrayD::from_shape_vec(IxDyn(&header.shape), data).map_err(|e| npy_err(e.to_string()))
}

/// Read a 2-D `.npy` array (see [`read_npy`]).
///
/// # Errors
///
/// As [`read_npy`], and [`Error::Npy`] when the array is not 2-D.
pub fn read_npy_2d(path: impl AsRef<Path>) -> Result<Array2<f64>> {
    let path = path.as_ref();
    let array = read_npy(path)?;
    let shape = array.shape().to_vec();
    array.into_dimensionality::<Ix2>().map_err(|_| Error::Npy {
        path: path.into(),
        reason: format!("expected a 2-D array, found shape {shape:?}"),
    })
}

/// Read a vector from a `.npy` file of shape `(n,)` or `(n, 1)` (see [`read_npy`]).
///
/// # Errors
///
/// As [`read_npy`], and [`Error::Npy`] for any other shape.
pub fn read_npy_1d(path: impl AsRef<Path>) -> Result<Array1<f64>> {
    let path = path.as_ref();
    let array = read_npy(path)?;
    match *array.shape() {
        [n] | [n, 1] => {
            Array1::from_shape_vec(n, array.into_iter().collect()).map_err(|e| Error::Npy {
                path: path.into(),
                reason: e.to_string(),
            })
        }
        ref shape => Err(Error::Npy {
            path: path.into(),
            reason: format!("expected a vector (shape (n,) or (n, 1)), found shape {shape:?}"),
        }),
    }
}

/// Read a feature matrix from a 2-D `.npy` file and its labels from a second `.npy` file or a
/// column (see [`NpyLabels`]). [`LoadedData::feature_names`] is `None`.
///
/// # Errors
///
/// As [`read_npy`]; [`Error::DataMismatch`] when the label vector's length differs from the
/// number of rows; [`Error::Label`] for a label column out of range; [`Error::EmptyData`] for
/// zero rows; [`Error::Npy`] for a non-finite value (with its row and column).
pub fn read_npy_dataset(x_path: impl AsRef<Path>, labels: NpyLabels<'_>) -> Result<LoadedData> {
    let x_path = x_path.as_ref();
    let mut x = read_npy_2d(x_path)?;
    // Before a label column is removed, so that positions are the file's.
    check_finite(x_path, x.view())?;
    let y = match labels {
        NpyLabels::File(y_path) => {
            let y = read_npy_1d(y_path)?;
            if y.len() != x.nrows() {
                return Err(Error::DataMismatch {
                    path: y_path.into(),
                    reason: format!(
                        "{} labels for the {} rows of {}",
                        y.len(),
                        x.nrows(),
                        x_path.display()
                    ),
                });
            }
            check_finite_labels(y_path, &y)?;
            y
        }
        NpyLabels::Column(column) => {
            let d = x.ncols();
            let index = if column < 0 {
                d.checked_sub(column.unsigned_abs())
            } else {
                usize::try_from(column).ok().filter(|&c| c < d)
            };
            let Some(index) = index else {
                return Err(Error::Label {
                    path: x_path.into(),
                    reason: format!("label column {column} is out of range for {d} columns"),
                });
            };
            let y = x.column(index).to_owned();
            let keep: Vec<usize> = (0..d).filter(|&j| j != index).collect();
            x = x.select(Axis(1), &keep);
            y
        }
    };
    if x.nrows() == 0 {
        return Err(Error::EmptyData {
            path: x_path.into(),
        });
    }
    Ok(LoadedData {
        x,
        y,
        feature_names: None,
    })
}

/// The label file that goes with an NPY feature file, if one exists next to it:
/// `NAME_X.npy[.gz]` → `NAME_y.npy[.gz]`, `x_NAME.npy` → `y_NAME.npy`, `X.npy` → `y.npy`
/// (either case of `x`).
pub(crate) fn sibling_label_file(x_path: &Path) -> Option<PathBuf> {
    let name = x_path.file_name()?.to_str()?;
    let mut candidates = Vec::new();
    for marker in ["_X", "_x"] {
        if let Some(at) = name.rfind(marker) {
            candidates.push(format!("{}_y{}", &name[..at], &name[at + 2..]));
        }
    }
    for prefix in ["X_", "x_"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            candidates.push(format!("y_{rest}"));
        }
    }
    for stem in ["X.", "x."] {
        if let Some(rest) = name.strip_prefix(stem) {
            candidates.push(format!("y.{rest}"));
        }
    }
    candidates
        .into_iter()
        .map(|c| x_path.with_file_name(c))
        .find(|p| p != x_path && p.is_file())
}

fn check_finite_labels(path: &Path, y: &Array1<f64>) -> Result<()> {
    match y.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::Npy {
            path: path.into(),
            reason: format!("non-finite label {} at row {i} (0-based)", y[i]),
        }),
    }
}

fn check_finite(path: &Path, x: ndarray::ArrayView2<'_, f64>) -> Result<()> {
    for ((i, j), v) in x.indexed_iter() {
        if !v.is_finite() {
            return Err(Error::Npy {
                path: path.into(),
                reason: format!("non-finite value {v} at row {i}, column {j} (0-based)"),
            });
        }
    }
    Ok(())
}

fn read_exactly(reader: &mut impl Read, buf: &mut [u8], path: &Path, what: &str) -> Result<()> {
    reader.read_exact(buf).map_err(|e| {
        if e.kind() == ErrorKind::UnexpectedEof {
            Error::Npy {
                path: path.into(),
                reason: format!("the file ends inside {what}"),
            }
        } else {
            Error::io(path, e)
        }
    })
}

/// Parse the header's Python dict literal.
fn parse_header(text: &str) -> std::result::Result<Header, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => {
                p.skip_ws();
                if p.peek() != Some(b'\'') && p.peek() != Some(b'"') {
                    return Err(
                        "structured dtypes are not supported (descr must be a string)".into(),
                    );
                }
                descr = Some(p.string()?);
            }
            "fortran_order" => fortran_order = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(format!("unexpected header key '{other}'")),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err("text after the header dict".into());
    }
    Ok(Header {
        descr: descr.ok_or("the header has no 'descr'")?,
        fortran_order: fortran_order.ok_or("the header has no 'fortran_order'")?,
        shape: shape.ok_or("the header has no 'shape'")?,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> std::result::Result<(), String> {
        self.skip_ws();
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!(
                "malformed header dict: expected '{}' at byte {}",
                char::from(b),
                self.pos
            ))
        }
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "malformed header dict: expected a string at byte {}",
                    self.pos
                ));
            }
        };
        self.pos += 1;
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b == quote {
                let value = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                return Ok(value);
            }
            self.pos += 1;
        }
        Err("malformed header dict: unterminated string".into())
    }

    fn boolean(&mut self) -> std::result::Result<bool, String> {
        self.skip_ws();
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.pos..].starts_with(word) {
                self.pos += word.len();
                return Ok(value);
            }
        }
        Err(format!(
            "malformed header dict: expected True or False at byte {}",
            self.pos
        ))
    }

    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
            // Python 2 wrote long integers with an `L` suffix.
            let digits = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
            let dim = digits.parse::<usize>().map_err(|_| {
                format!("malformed header dict: expected a dimension at byte {start}")
            })?;
            let _ = self.eat(b'L');
            dims.push(dim);
            self.skip_ws();
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_headers() {
        let h = parse_header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (10000, 40), }          \n",
        )
        .unwrap();
        assert_eq!(
            h,
            Header {
                descr: "<f8".into(),
                fortran_order: false,
                shape: vec![10000, 40]
            }
        );
        let h = parse_header("{'descr': '<i8', 'fortran_order': True, 'shape': (7,)}").unwrap();
        assert_eq!(h.shape, [7]);
        assert!(h.fortran_order);
        let h = parse_header("{'shape': (), 'descr': \"<f4\", 'fortran_order': False}").unwrap();
        assert!(h.shape.is_empty());
        assert_eq!(h.descr, "<f4");
    }

    #[test]
    fn the_budget_bounds_the_claimed_shape() {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let dict = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}\n";
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict);
        bytes.extend((0..6).flat_map(|v| f64::from(v).to_le_bytes()));
        let read = |budget| {
            read_npy_source(
                Source::from_bytes(&bytes, Path::new("b.npy"))
                    .unwrap()
                    .with_budget(budget),
            )
        };
        assert_eq!(read(6).unwrap().shape(), [2, 3]);
        match read(5) {
            Err(Error::Npy { reason, .. }) => {
                assert!(
                    reason.contains("[2, 3]") && reason.contains("budget of 5"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_malformed_headers() {
        for bad in [
            "",
            "{",
            "{'descr': '<f8', 'shape': (3,)}",
            "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (3,)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, x)}",
            "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} junk",
        ] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
    }
}
