//! Apache Parquet tables: flat columns found by name, read a row group at a time and within a
//! row group a bounded number of rows at a time (never the whole file).
//!
//! Format reference: the Apache Parquet format specification (file layout `PAR1` … footer …
//! `PAR1`, row groups of column chunks, logical types). Decoding is the `parquet` crate's
//! column readers (no Arrow).
//!
//! Column types: `BOOLEAN` (1 / 0), `INT32` / `INT64` (signed or unsigned integers; `INT64`
//! values beyond ±2⁵³ are refused, as they would not convert to `f64` exactly), `FLOAT`,
//! `DOUBLE`, decimals (`INT32`, `INT64`, `FIXED_LEN_BYTE_ARRAY` or `BYTE_ARRAY` with a
//! `DECIMAL` annotation: the unscaled integer divided by 10^scale), and strings (`BYTE_ARRAY`
//! annotated `STRING`/`UTF8`/`ENUM`, for categorical features and class labels). Anything else
//! (nested groups, lists, maps, plain binary, dates, times, timestamps, `INT96`) is refused by
//! name when a column of that type is read; unread columns may have any type.

use std::path::{Path, PathBuf};

use parquet::basic::{ConvertedType, LogicalType, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::blocks::{BlockBuf, BlockReader, RowBlocks, WHOLE_FILE_BLOCK};
use crate::error::{Error, Result};
use crate::schema::LabelMapper;
use crate::table::{Layout, Role};
use crate::{Labels, LoadedData, ParseErrorKind, TableSpec};

/// The four bytes a Parquet file starts and ends with.
pub(crate) const MAGIC: &[u8; 4] = b"PAR1";

/// 2^53: integers up to this magnitude convert to `f64` exactly.
const EXACT_INT: i64 = 1 << 53;

/// How a supported column's values become numbers or text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    /// `INT32`/`INT64`, possibly unsigned, possibly a decimal with this scale.
    Int {
        unsigned: bool,
        scale: i32,
    },
    Float,
    /// A decimal stored as big-endian two's complement bytes.
    DecimalBytes {
        scale: i32,
    },
    Text,
}

/// One top-level column: its name, and its leaf column and kind or why it is not supported.
struct Field {
    name: String,
    kind: std::result::Result<(usize, Kind), String>,
}

/// An open Parquet file: its reader, name and top-level columns.
pub(crate) struct ParquetTable {
    reader: Box<dyn FileReader>,
    path: PathBuf,
    fields: Vec<Field>,
}

/// Runs `f`, turning a panic inside the `parquet` crate's decoder into [`Error::Parquet`].
///
/// The decoder (57.x) unwraps some fields of malformed footers and page headers instead of
/// returning an error (found by this crate's fuzz test); a malformed file must be an input
/// error, not a crash. The panic's message still goes to the panic hook (stderr).
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::Parquet {
            path: path.into(),
            reason: format!("malformed file (the decoder failed: {what})"),
        })
    })
}

fn parquet_error(path: &Path, e: &ParquetError) -> Error {
    Error::Parquet {
        path: path.into(),
        reason: e.to_string(),
    }
}

impl ParquetTable {
    /// Opens the regular file `path` and reads its footer (schema and row groups).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be opened or is not a regular file; [`Error::Parquet`]
    /// for a file that is not Parquet or whose footer is corrupt.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let (file, _) = crate::source::open_regular(path)?;
        guarded(path, || {
            let reader = SerializedFileReader::new(file).map_err(|e| parquet_error(path, &e))?;
            Self::new(Box::new(reader), path)
        })
    }

    /// A Parquet file in memory, named `name` in errors.
    ///
    /// # Errors
    ///
    /// As [`ParquetTable::open`].
    pub(crate) fn from_bytes(bytes: &[u8], name: &Path) -> Result<Self> {
        guarded(name, || {
            let reader = SerializedFileReader::new(bytes::Bytes::copy_from_slice(bytes))
                .map_err(|e| parquet_error(name, &e))?;
            Self::new(Box::new(reader), name)
        })
    }

    fn new(reader: Box<dyn FileReader>, path: &Path) -> Result<Self> {
        let schema = reader.metadata().file_metadata().schema_descr();
        let mut fields: Vec<Field> = schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| Field {
                name: f.name().to_owned(),
                kind: Err(if f.is_group() {
                    "a nested group (struct, list or map)".into()
                } else {
                    "a repeated column".into()
                }),
            })
            .collect();
        for leaf in 0..schema.num_columns() {
            let column = schema.column(leaf);
            let parts = column.path().parts();
            if parts.len() != 1 || column.max_rep_level() != 0 {
                continue;
            }
            if let Some(field) = fields.iter_mut().find(|f| f.name == parts[0]) {
                field.kind = kind_of(&column).map(|k| (leaf, k));
            }
        }
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].iter().any(|o| o.name == f.name) {
                return Err(Error::Parquet {
                    path: path.into(),
                    reason: format!("column `{}` appears twice in the schema", f.name),
                });
            }
        }
        Ok(Self {
            reader,
            path: path.into(),
            fields,
        })
    }

    /// The top-level column names, in file order.
    pub(crate) fn header(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.clone()).collect()
    }

    /// Rows the footer claims.
    fn claimed_rows(&self) -> i64 {
        self.reader.metadata().file_metadata().num_rows()
    }

    /// Blocks of the rows `spec` describes (labels only when `with_labels`).
    ///
    /// # Errors
    ///
    /// The [`Layout`]'s errors; [`Error::Parquet`] for a read column of an unsupported type or
    /// a string column read as a numeric feature.
    pub(crate) fn blocks(
        self,
        spec: &TableSpec,
        with_labels: bool,
        block_rows: usize,
    ) -> Result<RowBlocks<'static>> {
        let layout = Layout::new(&self.header(), spec, with_labels, &self.path)?;
        let mut read = Vec::new();
        for (field, &role) in self.fields.iter().zip(&layout.roles) {
            if role == Role::Skip {
                continue;
            }
            let (leaf, kind) = field.kind.clone().map_err(|what| Error::Parquet {
                path: self.path.clone(),
                reason: format!(
                    "column `{}` is {what}, which is not supported; drop it (--drop {0}, or \
                     \"drop\" in the schema)",
                    field.name
                ),
            })?;
            if kind == Kind::Text && matches!(role, Role::Numeric(_)) {
                return Err(Error::Parquet {
                    path: self.path.clone(),
                    reason: format!(
                        "column `{0}` holds strings: drop it (--drop {0}) or one-hot encode \
                         it with its public levels (--categorical '{0}=LEVEL1|LEVEL2|...')",
                        field.name
                    ),
                });
            }
            read.push(ReadColumn {
                name: field.name.clone(),
                leaf,
                kind,
                role,
            });
        }
        let names = spec.feature_names();
        let reader = ParquetRows {
            table: self,
            layout,
            columns: read,
            labels: spec.labels.clone(),
            negative: None,
            group: 0,
            readers: Vec::new(),
            left_in_group: 0,
            row: 0,
        };
        Ok(RowBlocks::new(Box::new(reader), block_rows, names))
    }

    /// The whole table as `spec` describes it.
    ///
    /// # Errors
    ///
    /// As [`ParquetTable::blocks`] and the cell errors ([`Error::Value`]);
    /// [`Error::DataMismatch`] when the rows the footer claims do not fit in
    /// [`MEMORY_BUDGET_BYTES`](crate::MEMORY_BUDGET_BYTES); [`Error::EmptyData`].
    pub(crate) fn read_all(self, spec: &TableSpec, with_labels: bool) -> Result<LoadedData> {
        let path = self.path.clone();
        let budget = crate::MEMORY_BUDGET_BYTES / 8;
        let claimed = self.claimed_rows();
        let blocks = self.blocks(spec, with_labels, WHOLE_FILE_BLOCK)?;
        let per_row = blocks.n_features() + usize::from(with_labels);
        let fits = usize::try_from(claimed)
            .ok()
            .and_then(|n| n.checked_mul(per_row))
            .is_some_and(|v| v <= budget);
        if !fits {
            return Err(Error::DataMismatch {
                path,
                reason: format!(
                    "{claimed} rows × {per_row} values exceed the memory budget of {budget} \
                     values; read the file in blocks (dp_data::read_blocks)"
                ),
            });
        }
        blocks.collect_all(budget, &path)
    }
}

/// Whether a leaf column is supported, and how.
fn kind_of(column: &parquet::schema::types::ColumnDescriptor) -> std::result::Result<Kind, String> {
    let logical = column.logical_type_ref();
    let converted = column.converted_type();
    let scale = column.type_scale();
    let decimal =
        matches!(logical, Some(LogicalType::Decimal { .. })) || converted == ConvertedType::DECIMAL;
    let unsigned = matches!(
        logical,
        Some(LogicalType::Integer {
            is_signed: false,
            ..
        })
    ) || matches!(
        converted,
        ConvertedType::UINT_8
            | ConvertedType::UINT_16
            | ConvertedType::UINT_32
            | ConvertedType::UINT_64
    );
    let plain_int = matches!(logical, None | Some(LogicalType::Integer { .. }))
        && matches!(
            converted,
            ConvertedType::NONE
                | ConvertedType::INT_8
                | ConvertedType::INT_16
                | ConvertedType::INT_32
                | ConvertedType::INT_64
                | ConvertedType::UINT_8
                | ConvertedType::UINT_16
                | ConvertedType::UINT_32
                | ConvertedType::UINT_64
        );
    let text = matches!(logical, Some(LogicalType::String | LogicalType::Enum))
        || matches!(converted, ConvertedType::UTF8 | ConvertedType::ENUM);
    let annotation = || logical.map_or_else(|| format!("{converted}"), |l| format!("{l:?}"));
    match column.physical_type() {
        Physical::BOOLEAN => Ok(Kind::Bool),
        Physical::FLOAT | Physical::DOUBLE if logical.is_none() => Ok(Kind::Float),
        Physical::INT32 | Physical::INT64 if decimal => Ok(Kind::Int {
            unsigned: false,
            scale,
        }),
        Physical::INT32 | Physical::INT64 if plain_int => Ok(Kind::Int { unsigned, scale: 0 }),
        Physical::FIXED_LEN_BYTE_ARRAY | Physical::BYTE_ARRAY if decimal => {
            Ok(Kind::DecimalBytes { scale })
        }
        Physical::BYTE_ARRAY if text => Ok(Kind::Text),
        Physical::BYTE_ARRAY => Err("binary (BYTE_ARRAY without a STRING annotation)".into()),
        other => Err(format!("of type {other} ({})", annotation())),
    }
}

/// A column that is read: its name, leaf, kind and role.
struct ReadColumn {
    name: String,
    leaf: usize,
    kind: Kind,
    role: Role,
}

/// One column's values for a run of rows.
enum Values {
    Num(Vec<f64>),
    Bool(Vec<bool>),
    Text(Vec<ByteArray>),
}

/// The rows of a Parquet table under a [`Layout`], a row group at a time.
struct ParquetRows {
    table: ParquetTable,
    layout: Layout,
    columns: Vec<ReadColumn>,
    labels: Labels,
    /// The negative class as first written ([`Labels::Signs`]), kept across blocks.
    negative: Option<f64>,
    /// The next row group to open.
    group: usize,
    /// The open row group's column readers (one per read column).
    readers: Vec<ColumnReader>,
    /// Rows of the open row group not read yet.
    left_in_group: usize,
    /// Rows read so far (0-based index of the next row).
    row: usize,
}

impl ParquetRows {
    fn err(&self, e: &ParquetError) -> Error {
        parquet_error(&self.table.path, e)
    }

    /// Opens the next row group with rows; `false` at the end of the file.
    fn next_group(&mut self) -> Result<bool> {
        let metadata = self.table.reader.metadata();
        while self.group < metadata.num_row_groups() {
            let g = self.group;
            self.group += 1;
            let claimed = metadata.row_group(g).num_rows();
            let rows = usize::try_from(claimed).map_err(|_| Error::Parquet {
                path: self.table.path.clone(),
                reason: format!("row group {g} claims {claimed} rows"),
            })?;
            if rows == 0 {
                continue;
            }
            let group = self
                .table
                .reader
                .get_row_group(g)
                .map_err(|e| self.err(&e))?;
            let mut readers = Vec::with_capacity(self.columns.len());
            for c in &self.columns {
                if c.leaf >= group.num_columns() {
                    return Err(Error::Parquet {
                        path: self.table.path.clone(),
                        reason: format!("row group {g} has no column chunk for `{}`", c.name),
                    });
                }
                readers.push(group.get_column_reader(c.leaf).map_err(|e| self.err(&e))?);
            }
            self.readers = readers;
            self.left_in_group = rows;
            return Ok(true);
        }
        Ok(false)
    }

    /// `k` values of read column `c` from the open row group.
    fn read_column(&mut self, c: usize, k: usize) -> Result<Values> {
        let column = &self.columns[c];
        let max_def = self
            .table
            .reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .column(column.leaf)
            .max_def_level();
        let mut defs: Vec<i16> = Vec::new();
        let defs_arg = (max_def > 0).then_some(&mut defs);
        let path = &self.table.path;
        let perr = |e: ParquetError| parquet_error(path, &e);
        let (records, values) = match &mut self.readers[c] {
            ColumnReader::BoolColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                (n, Values::Bool(v))
            }
            ColumnReader::Int32ColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                let unsigned = matches!(column.kind, Kind::Int { unsigned: true, .. });
                let ints = v.into_iter().map(|x| {
                    if unsigned {
                        i64::from(x.cast_unsigned())
                    } else {
                        i64::from(x)
                    }
                });
                (
                    n,
                    Values::Num(ints.map(|x| scaled(x as f64, column.kind)).collect()),
                )
            }
            ColumnReader::Int64ColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                let unsigned = matches!(column.kind, Kind::Int { unsigned: true, .. });
                let mut out = Vec::with_capacity(v.len());
                for (i, x) in v.into_iter().enumerate() {
                    let exact = if unsigned {
                        x.cast_unsigned() <= EXACT_INT.cast_unsigned()
                    } else {
                        (-EXACT_INT..=EXACT_INT).contains(&x)
                    };
                    if !exact && matches!(column.kind, Kind::Int { scale: 0, .. }) {
                        let text = if unsigned {
                            x.cast_unsigned().to_string()
                        } else {
                            x.to_string()
                        };
                        return Err(self.cell_error(
                            c,
                            i,
                            ParseErrorKind::UnexpectedValue {
                                value: text,
                                expected: "an integer of magnitude at most 2^53 (exact as f64)"
                                    .into(),
                            },
                        ));
                    }
                    // Exact for |x| ≤ 2^53; a decimal's unscaled value rounds once.
                    let v = if unsigned {
                        x.cast_unsigned() as f64
                    } else {
                        x as f64
                    };
                    out.push(scaled(v, column.kind));
                }
                (n, Values::Num(out))
            }
            ColumnReader::FloatColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                (n, Values::Num(v.into_iter().map(f64::from).collect()))
            }
            ColumnReader::DoubleColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                (n, Values::Num(v))
            }
            ColumnReader::ByteArrayColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                (n, Values::Text(v))
            }
            ColumnReader::FixedLenByteArrayColumnReader(r) => {
                let mut v = Vec::new();
                let (n, _, _) = r.read_records(k, defs_arg, None, &mut v).map_err(perr)?;
                (
                    n,
                    Values::Text(
                        v.into_iter()
                            .map(|b| ByteArray::from(b.data().to_vec()))
                            .collect(),
                    ),
                )
            }
            ColumnReader::Int96ColumnReader(_) => {
                return Err(Error::Parquet {
                    path: path.clone(),
                    reason: format!("column `{}` is INT96, which is not supported", column.name),
                });
            }
        };
        if records != k {
            return Err(Error::Parquet {
                path: path.clone(),
                reason: format!(
                    "column `{}` ends after {} of the rows its row group claims",
                    column.name,
                    self.row + records
                ),
            });
        }
        if let Some(i) = defs.iter().position(|&d| d < max_def) {
            return Err(self.cell_error(c, i, ParseErrorKind::Null));
        }
        let held = match &values {
            Values::Num(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Text(v) => v.len(),
        };
        if held != k {
            return Err(Error::Parquet {
                path: path.clone(),
                reason: format!("column `{}` holds {held} values for {k} rows", column.name),
            });
        }
        Ok(values)
    }

    /// An [`Error::Value`] at row `i` of the current run, in read column `c`.
    fn cell_error(&self, c: usize, i: usize, kind: ParseErrorKind) -> Error {
        Error::Value {
            path: self.table.path.clone(),
            row_group: self.group - 1,
            row: self.row + i,
            column: self.columns[c].name.clone(),
            kind,
        }
    }
}

/// An integer column's value divided by 10^scale (a decimal), or as is.
fn scaled(v: f64, kind: Kind) -> f64 {
    match kind {
        Kind::Int { scale, .. } | Kind::DecimalBytes { scale } if scale != 0 => {
            v / 10f64.powi(scale)
        }
        _ => v,
    }
}

/// A decimal's unscaled value from big-endian two's complement bytes (at most 16).
fn decimal_bytes(bytes: &[u8]) -> Option<f64> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut wide = [fill; 16];
    wide[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(wide) as f64)
}

impl BlockReader for ParquetRows {
    fn n_features(&self) -> usize {
        self.layout.d
    }

    fn read_rows(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize> {
        let path = self.table.path.clone();
        guarded(&path, || self.read_rows_unguarded(max_rows, buf))
    }
}

impl ParquetRows {
    /// [`BlockReader::read_rows`], which may panic inside the decoder on malformed input.
    fn read_rows_unguarded(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize> {
        if self.left_in_group == 0 && !self.next_group()? {
            return Ok(0);
        }
        let k = max_rows.min(self.left_in_group);
        let d = self.layout.d;
        let start = buf.x.len();
        buf.x.resize(start + k * d, 0.0);
        let label_map = self.labels.clone();
        let mut labels = LabelMapper::resume(&label_map, self.negative);
        for c in 0..self.columns.len() {
            let values = self.read_column(c, k)?;
            let role = self.columns[c].role;
            let at = |i: usize, kind| self.cell_error(c, i, kind);
            match (role, values) {
                (Role::Numeric(j), Values::Num(v)) => {
                    for (i, x) in v.into_iter().enumerate() {
                        if !x.is_finite() {
                            return Err(at(i, ParseErrorKind::NonFinite(x.to_string())));
                        }
                        buf.x[start + i * d + j] = x;
                    }
                }
                (Role::Numeric(j), Values::Bool(v)) => {
                    for (i, b) in v.into_iter().enumerate() {
                        buf.x[start + i * d + j] = f64::from(u8::from(b));
                    }
                }
                // Decimal bytes (string columns are refused as numeric features when opened).
                (Role::Numeric(j), Values::Text(v)) => {
                    for (i, b) in v.into_iter().enumerate() {
                        let x = decimal_bytes(b.data())
                            .map(|x| scaled(x, self.columns[c].kind))
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| {
                                at(
                                    i,
                                    ParseErrorKind::NotANumber(format!(
                                        "{} decimal bytes",
                                        b.len()
                                    )),
                                )
                            })?;
                        buf.x[start + i * d + j] = x;
                    }
                }
                (Role::Categorical(cat, j), values) => {
                    for i in 0..k {
                        let text = cell_text(&values, i, self.columns[c].kind)
                            .map_err(|kind| at(i, kind))?;
                        let offset = self.layout.level(cat, &text).map_err(|kind| at(i, kind))?;
                        buf.x[start + i * d + j + offset] = 1.0;
                    }
                }
                (Role::Label, values) => {
                    let classes = matches!(label_map, Labels::Classes { .. });
                    for i in 0..k {
                        let text = match &values {
                            Values::Bool(v) if !classes => u8::from(v[i]).to_string(),
                            _ => cell_text(&values, i, self.columns[c].kind)
                                .map_err(|kind| at(i, kind))?,
                        };
                        buf.y
                            .push(labels.map_text(&text).map_err(|kind| at(i, kind))?);
                    }
                }
                (Role::Skip, _) => {}
            }
        }
        self.negative = labels.negative();
        self.left_in_group -= k;
        self.row += k;
        buf.rows += k;
        Ok(k)
    }
}

/// A cell as text (categorical levels and class labels are compared as text): strings as they
/// are, booleans as `true` / `false`, numbers as Rust prints them (`3`, `0.5`).
fn cell_text(values: &Values, i: usize, kind: Kind) -> std::result::Result<String, ParseErrorKind> {
    match values {
        Values::Num(v) => Ok(v[i].to_string()),
        Values::Bool(v) => Ok(v[i].to_string()),
        Values::Text(v) if kind == Kind::Text => v[i]
            .as_utf8()
            .map(str::to_owned)
            .map_err(|_| ParseErrorKind::InvalidUtf8),
        Values::Text(v) => decimal_bytes(v[i].data())
            .map(|x| scaled(x, kind).to_string())
            .ok_or_else(|| ParseErrorKind::NotANumber(format!("{} decimal bytes", v[i].len()))),
    }
}

/// A column for [`write_parquet`]: its values, all present (`required`).
#[derive(Clone, Debug, PartialEq)]
pub enum ParquetColumn {
    /// `DOUBLE` values.
    Double(Vec<f64>),
    /// `FLOAT` values.
    Float(Vec<f32>),
    /// `INT64` values.
    Int64(Vec<i64>),
    /// `BOOLEAN` values.
    Bool(Vec<bool>),
    /// `BYTE_ARRAY` values annotated `STRING`.
    Text(Vec<String>),
}

impl ParquetColumn {
    fn len(&self) -> usize {
        match self {
            Self::Double(v) => v.len(),
            Self::Float(v) => v.len(),
            Self::Int64(v) => v.len(),
            Self::Bool(v) => v.len(),
            Self::Text(v) => v.len(),
        }
    }
}

/// Writes a flat table as Parquet (snappy pages, row groups of `row_group_rows` rows) to
/// `out`, named `name` in errors: for tests, examples and benchmarks that need a Parquet file
/// (dpglm itself only reads them).
///
/// # Errors
///
/// [`Error::Parquet`] for columns of different lengths, a `row_group_rows` of 0, or a failed
/// write.
pub fn write_parquet<W: std::io::Write + Send>(
    out: W,
    name: impl AsRef<Path>,
    columns: &[(&str, ParquetColumn)],
    row_group_rows: usize,
) -> Result<()> {
    use parquet::basic::{Compression, Repetition};
    use parquet::data_type::{BoolType, ByteArrayType, DoubleType, FloatType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;
    use std::sync::Arc;

    let name = name.as_ref();
    let fail = |reason: String| Error::Parquet {
        path: name.into(),
        reason,
    };
    let n = columns.first().map_or(0, |(_, c)| c.len());
    if columns.iter().any(|(_, c)| c.len() != n) || row_group_rows == 0 {
        return Err(fail(
            "columns of different lengths, or row groups of 0 rows".into(),
        ));
    }
    let fields = columns
        .iter()
        .map(|(field, c)| {
            let (physical, logical) = match c {
                ParquetColumn::Double(_) => (Physical::DOUBLE, None),
                ParquetColumn::Float(_) => (Physical::FLOAT, None),
                ParquetColumn::Int64(_) => (Physical::INT64, None),
                ParquetColumn::Bool(_) => (Physical::BOOLEAN, None),
                ParquetColumn::Text(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            Type::primitive_type_builder(field, physical)
                .with_repetition(Repetition::REQUIRED)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| parquet_error(name, &e))?;
    let schema = Type::group_type_builder("table")
        .with_fields(fields)
        .build()
        .map_err(|e| parquet_error(name, &e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))
        .map_err(|e| parquet_error(name, &e))?;
    let write = |writer: &mut SerializedFileWriter<W>, lo: usize, hi: usize| {
        let mut group = writer.next_row_group()?;
        for (_, c) in columns {
            let Some(mut col) = group.next_column()? else {
                break;
            };
            match c {
                ParquetColumn::Double(v) => {
                    col.typed::<DoubleType>()
                        .write_batch(&v[lo..hi], None, None)?;
                }
                ParquetColumn::Float(v) => {
                    col.typed::<FloatType>()
                        .write_batch(&v[lo..hi], None, None)?;
                }
                ParquetColumn::Int64(v) => {
                    col.typed::<Int64Type>()
                        .write_batch(&v[lo..hi], None, None)?;
                }
                ParquetColumn::Bool(v) => {
                    col.typed::<BoolType>()
                        .write_batch(&v[lo..hi], None, None)?;
                }
                ParquetColumn::Text(v) => {
                    let bytes: Vec<ByteArray> = v[lo..hi]
                        .iter()
                        .map(|s| ByteArray::from(s.as_str()))
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&bytes, None, None)?;
                }
            }
            col.close()?;
        }
        group.close().map(|_| ())
    };
    let mut lo = 0;
    while lo < n {
        let hi = n.min(lo + row_group_rows);
        write(&mut writer, lo, hi).map_err(|e| parquet_error(name, &e))?;
        lo = hi;
    }
    writer.close().map_err(|e| parquet_error(name, &e))?;
    Ok(())
}
