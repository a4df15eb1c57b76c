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

pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Values read (and converted) per read call: 256 KiB of `<f8`, a size that stays in cache.
const CHUNK: usize = 1 << 15;
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

/// An `.npy` file opened past its header: values read in order, a chunk at a time.
pub(crate) struct NpyStream<'a> {
    reader: Box<dyn std::io::BufRead + 'a>,
    path: PathBuf,
    dtype: Dtype,
    /// The array's shape.
    pub(crate) shape: Vec<usize>,
    /// Whether the file's size is known (not gzip).
    sized: bool,
    /// Values in the array.
    count: usize,
    /// Values read so far.
    read: usize,
    /// The bytes of one chunk of values, reused.
    bytes: Vec<u8>,
}

impl<'a> NpyStream<'a> {
    /// Reads and checks the header of `source` (see [`read_npy`]).
    ///
    /// # Errors
    ///
    /// As [`read_npy`], except for the data itself.
    pub(crate) fn open(source: Source<'a>) -> Result<Self> {
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
        Ok(Self {
            reader,
            path: path.to_owned(),
            dtype,
            shape: header.shape,
            sized: file_len.is_some(),
            count,
            read: 0,
            bytes: Vec::new(),
        })
    }

    /// Writes the next `k` values (at most what is left), converted to `f64`, to `data` from
    /// index `at` on: over what `data` holds there (a buffer kept from an earlier block is
    /// not zeroed first), growing it where it is shorter.
    ///
    /// # Errors
    ///
    /// [`Error::Npy`] when the data ends early or an `<i8` value is beyond 2⁵³;
    /// [`Error::Io`].
    pub(crate) fn read_values(&mut self, k: usize, data: &mut Vec<f64>, at: usize) -> Result<()> {
        let path = self.path.as_path();
        let npy_err = |reason: String| Error::Npy {
            path: path.into(),
            reason,
        };
        let size = self.dtype.size();
        let end = self.read + k.min(self.count - self.read);
        data.reserve((at + (end - self.read)).saturating_sub(data.len()));
        let mut at = at;
        while self.read < end {
            let k = CHUNK.min(end - self.read);
            if data.len() < at + k {
                data.resize(at + k, 0.0);
            }
            let values = &mut data[at..at + k];
            let read = if self.dtype == Dtype::F8 {
                // Read straight into the values' memory (on a little-endian machine the bytes
                // are the values): no second copy.
                let read = self.reader.read_exact(bytemuck::cast_slice_mut(values));
                if cfg!(target_endian = "big") {
                    for v in values.iter_mut() {
                        *v = f64::from_bits(u64::from_le(v.to_bits()));
                    }
                }
                read
            } else {
                self.bytes.resize(k * size, 0);
                self.reader.read_exact(&mut self.bytes)
            };
            if let Err(e) = read {
                return Err(if e.kind() == ErrorKind::UnexpectedEof {
                    npy_err(format!(
                        "the data ends early: the shape {:?} needs {} values",
                        self.shape, self.count
                    ))
                } else {
                    Error::io(path, e)
                });
            }
            let bytes = &self.bytes;
            match self.dtype {
                Dtype::F8 => {}
                Dtype::F4 => {
                    for (v, c) in values.iter_mut().zip(bytes.chunks_exact(4)) {
                        *v = f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                    }
                }
                Dtype::I8 => {
                    for (i, (v, c)) in values.iter_mut().zip(bytes.chunks_exact(8)).enumerate() {
                        let n =
                            i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                        if !(-EXACT_INT..=EXACT_INT).contains(&n) {
                            return Err(npy_err(format!(
                                "int64 value {n} (flat index {}) is not exactly representable \
                                 as f64",
                                self.read + i
                            )));
                        }
                        // Exact: |n| ≤ 2^53.
                        *v = n as f64;
                    }
                }
            }
            self.read += k;
            at += k;
        }
        Ok(())
    }

    /// Checks that no bytes follow the values (call after reading them all).
    ///
    /// # Errors
    ///
    /// [`Error::Npy`] when bytes follow; [`Error::Io`].
    pub(crate) fn finish(&mut self) -> Result<()> {
        let mut extra = [0u8; 1];
        loop {
            match self.reader.read(&mut extra) {
                Ok(0) => return Ok(()),
                Ok(_) => {
                    return Err(Error::Npy {
                        path: self.path.clone(),
                        reason: format!(
                            "bytes follow the {} values the shape {:?} describes",
                            self.count, self.shape
                        ),
                    });
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
    }
}

fn read_npy_source(source: Source<'_>) -> Result<ArrayD<f64>> {
    let mut stream = NpyStream::open(source)?;
    let count = stream.count;
    let mut data: Vec<f64> = Vec::with_capacity(if stream.sized {
        count
    } else {
        count.min(INITIAL_VALUES)
    });
    stream.read_values(count, &mut data, 0)?;
    stream.finish()?;
    let shape = std::mem::take(&mut stream.shape);
    ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|e| Error::Npy {
        path: stream.path,
        reason: e.to_string(),
    })
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
    check_finite(x_path, x.view(), 0)?;
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
            check_finite_labels(y_path, y.as_slice().unwrap_or_default(), 0)?;
            y
        }
        NpyLabels::Column(column) => {
            let d = x.ncols();
            let index = label_index(x_path, column, d)?;
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

/// Where the labels of an NPY feature file are, resolved (see
/// [`read_dataset`](crate::read_dataset)).
pub(crate) enum LabelSource {
    /// A column of the features.
    Column(isize),
    /// A label file.
    File(PathBuf),
}

impl LabelSource {
    /// The labels `label` names for the features `path`: a column index, a label file (tried
    /// as given, then next to `path`), or when `None` the label file next to `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Label`] when `label` is `None` and no label file is found.
    pub(crate) fn find(path: &Path, label: Option<&str>) -> Result<Self> {
        Ok(match label {
            Some(text) => match text.trim().parse::<isize>() {
                Ok(column) => Self::Column(column),
                Err(_) => {
                    let given = PathBuf::from(text);
                    Self::File(match path.parent() {
                        Some(dir) if given.is_relative() && !given.exists() => {
                            let beside = dir.join(&given);
                            if beside.exists() { beside } else { given }
                        }
                        _ => given,
                    })
                }
            },
            None => Self::File(sibling_label_file(path).ok_or_else(|| {
                Error::Label {
                    path: path.into(),
                    reason: "no label file found next to it (looked for NAME_y.npy[.gz] for \
                         NAME_X.npy[.gz], y_NAME.npy for x_NAME.npy, y.npy for X.npy); give \
                         the label file or a column index as the label"
                        .into(),
                }
            })?),
        })
    }

    /// As [`NpyLabels`].
    pub(crate) fn as_labels(&self) -> NpyLabels<'_> {
        match self {
            Self::Column(c) => NpyLabels::Column(*c),
            Self::File(p) => NpyLabels::File(p),
        }
    }
}

/// The 0-based index of label column `column` (negative from the end) among `d`.
fn label_index(path: &Path, column: isize, d: usize) -> Result<usize> {
    let index = if column < 0 {
        d.checked_sub(column.unsigned_abs())
    } else {
        usize::try_from(column).ok().filter(|&c| c < d)
    };
    index.ok_or_else(|| Error::Label {
        path: path.into(),
        reason: format!("label column {column} is out of range for {d} columns"),
    })
}

/// Where an NPY block reader takes its labels from.
enum BlockLabels {
    /// None (scoring without labels).
    Without,
    /// A column of the features (0-based), removed from them.
    Column(usize),
    /// A label file read alongside.
    File(NpyStream<'static>),
}

/// The rows of a 2-D `.npy` feature file, a block at a time, with labels from a column or a
/// second file, mapped by a [`Labels`](crate::Labels).
pub(crate) struct NpyRows {
    x: NpyStream<'static>,
    labels: BlockLabels,
    mapper: crate::Labels,
    negative: Option<f64>,
    with_labels: bool,
    /// Rows, and columns in the file.
    n: usize,
    cols: usize,
    /// Rows read so far.
    row: usize,
    /// One block's values (with a label column), reused.
    scratch: Vec<f64>,
    /// One block's labels, reused.
    labels_scratch: Vec<f64>,
}

impl NpyRows {
    /// The rows of `path` with the labels `labels` (`None`: no labels), mapped by `mapper`
    /// (a label column is removed from the features, and its labels dropped unless
    /// `with_labels`).
    /// The values are read a block at a time, so the file may exceed the memory budget.
    ///
    /// # Errors
    ///
    /// As [`read_npy_dataset`], for the headers; the data's errors come with the blocks.
    pub(crate) fn open(
        path: &Path,
        labels: Option<&LabelSource>,
        mapper: crate::Labels,
        with_labels: bool,
    ) -> Result<Self> {
        let x = NpyStream::open(Source::open(path)?.with_budget(usize::MAX))?;
        let [n, cols] = x.shape[..] else {
            return Err(Error::Npy {
                path: path.into(),
                reason: format!("expected a 2-D array, found shape {:?}", x.shape),
            });
        };
        let labels = match labels {
            None => BlockLabels::Without,
            Some(LabelSource::Column(c)) => BlockLabels::Column(label_index(path, *c, cols)?),
            Some(LabelSource::File(y_path)) => {
                let y = NpyStream::open(Source::open(y_path)?.with_budget(usize::MAX))?;
                match y.shape[..] {
                    [m] | [m, 1] if m == n => BlockLabels::File(y),
                    [m] | [m, 1] => {
                        return Err(Error::DataMismatch {
                            path: y_path.clone(),
                            reason: format!("{m} labels for the {n} rows of {}", path.display()),
                        });
                    }
                    ref shape => {
                        return Err(Error::Npy {
                            path: y_path.clone(),
                            reason: format!(
                                "expected a vector (shape (n,) or (n, 1)), found shape \
                                 {shape:?}"
                            ),
                        });
                    }
                }
            }
        };
        Ok(Self {
            x,
            labels,
            mapper,
            negative: None,
            with_labels,
            n,
            cols,
            row: 0,
            scratch: Vec::new(),
            labels_scratch: Vec::new(),
        })
    }
}

impl crate::blocks::BlockReader for NpyRows {
    fn n_features(&self) -> usize {
        self.cols - usize::from(matches!(self.labels, BlockLabels::Column(_)))
    }

    fn overwrites(&self) -> bool {
        true
    }

    fn read_rows(&mut self, max_rows: usize, buf: &mut crate::blocks::BlockBuf) -> Result<usize> {
        let k = max_rows.min(self.n - self.row);
        if k == 0 {
            self.x.finish()?;
            if let BlockLabels::File(y) = &mut self.labels {
                y.finish()?;
            }
            return Ok(0);
        }
        // The values go straight into the block, except with a label column (read aside,
        // then split).
        let with_column = matches!(self.labels, BlockLabels::Column(_));
        // Over the values a kept buffer holds (`overwrites`): the block's rows from
        // `buf.rows` on.
        let (values, first) = if with_column {
            (&mut self.scratch, 0)
        } else {
            (&mut buf.x, buf.rows * self.cols)
        };
        // A piece of at most `CHUNK` values at a time, checked while it is in cache.
        let piece = (CHUNK / self.cols.max(1)).max(1);
        let mut done = 0;
        while done < k {
            let rows = piece.min(k - done);
            let start = first + done * self.cols;
            self.x.read_values(rows * self.cols, values, start)?;
            let path = &self.x.path;
            let read = rows_of(
                path,
                rows,
                self.cols,
                &values[start..start + rows * self.cols],
            )?;
            check_finite(path, read, self.row + done)?;
            done += rows;
        }
        let mut mapper = crate::schema::LabelMapper::resume(&self.mapper, self.negative);
        self.labels_scratch.clear();
        let y = &mut self.labels_scratch;
        match &mut self.labels {
            BlockLabels::Without => {}
            BlockLabels::Column(index) => {
                let block = rows_of(&self.x.path, k, self.cols, &self.scratch[..k * self.cols])?;
                y.extend(block.column(*index).iter().copied());
                buf.x.truncate(buf.rows * (self.cols - 1));
                for row in block.rows() {
                    buf.x.extend(
                        row.iter()
                            .enumerate()
                            .filter(|(j, _)| j != index)
                            .map(|(_, v)| *v),
                    );
                }
            }
            BlockLabels::File(stream) => {
                stream.read_values(k, y, 0)?;
                check_finite_labels(&stream.path, y, self.row)?;
            }
        }
        let path = match &self.labels {
            BlockLabels::File(stream) => &stream.path,
            _ => &self.x.path,
        };
        if self.with_labels {
            buf.y.reserve(y.len());
            for (i, &v) in y.iter().enumerate() {
                buf.y.push(mapper.map_value(v, self.row + i, path)?);
            }
        }
        self.negative = mapper.negative();
        self.row += k;
        buf.rows += k;
        Ok(k)
    }
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

/// `values` as `k × cols` rows (of the file `path`, for the error).
fn rows_of<'v>(
    path: &Path,
    k: usize,
    cols: usize,
    values: &'v [f64],
) -> Result<ndarray::ArrayView2<'v, f64>> {
    ndarray::ArrayView2::from_shape((k, cols), values).map_err(|e| Error::Npy {
        path: path.into(),
        reason: e.to_string(),
    })
}

/// Checks labels that start at the file's 0-based row `first`.
fn check_finite_labels(path: &Path, y: &[f64], first: usize) -> Result<()> {
    match y.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::Npy {
            path: path.into(),
            reason: format!("non-finite label {} at row {} (0-based)", y[i], first + i),
        }),
    }
}

/// Checks rows that start at the file's 0-based row `first`.
fn check_finite(path: &Path, x: ndarray::ArrayView2<'_, f64>, first: usize) -> Result<()> {
    // The common case in one vectorised sweep; the position only when something is wrong.
    let finite = match x.as_slice() {
        Some(v) => v.iter().fold(true, |ok, v| ok & v.is_finite()),
        None => x.iter().all(|v| v.is_finite()),
    };
    if finite {
        return Ok(());
    }
    for ((i, j), v) in x.indexed_iter() {
        if !v.is_finite() {
            return Err(Error::Npy {
                path: path.into(),
                reason: format!(
                    "non-finite value {v} at row {}, column {j} (0-based)",
                    first + i
                ),
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
