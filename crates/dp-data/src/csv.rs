//! CSV with a header row: the plain reader (one label column chosen by name, every other
//! column a numeric feature) and the rows reader behind the schema's column pipeline.

use std::borrow::Cow;
use std::path::Path;

use super::source::{Lines, Source, parse_error, parse_finite};
use super::{LoadedData, ParseErrorKind, TableSpec};
use crate::blocks::{BlockBuf, BlockReader, RowBlocks};
use crate::error::{Error, Result};
use crate::schema::{LabelMapper, Labels};
use crate::table::{Layout, Role};

/// Read a comma-separated file with a header row; `label` names the label column and every
/// other column is a numeric feature (in file order, their names kept in
/// [`LoadedData::feature_names`]).
///
/// Accepted: `\n` or `\r\n` line ends, blank lines (skipped, but counted in line numbers), a
/// UTF-8 byte-order mark, spaces around fields, RFC 4180 double-quoted fields (`"a,b"`, `""`
/// for a quote; no line breaks inside quotes), gzip compression (detected from the content).
///
/// # Errors
///
/// Every error names the file; parse errors also give the 1-based line and the column:
/// - [`Error::EmptyData`]: no header, or a header and no rows;
/// - [`Error::MissingLabelColumn`]: `label` is not in the header (the message lists the
///   columns);
/// - [`Error::Parse`] with [`ParseErrorKind::RaggedRow`] (a row with a different number of
///   fields than the header), [`ParseErrorKind::NotANumber`], [`ParseErrorKind::NonFinite`]
///   (`nan`, `inf`), [`ParseErrorKind::UnterminatedQuote`],
///   [`ParseErrorKind::DuplicateColumn`], [`ParseErrorKind::InvalidUtf8`],
///   [`ParseErrorKind::LineTooLong`], [`ParseErrorKind::OverMemoryBudget`] (more values than
///   [`MEMORY_BUDGET_BYTES`](super::MEMORY_BUDGET_BYTES) holds);
/// - [`Error::Io`]: the file cannot be read, is not a regular file, or is not valid gzip.
pub fn read_csv(path: impl AsRef<Path>, label: &str) -> Result<LoadedData> {
    read_csv_impl(path.as_ref(), Some(label))
}

/// [`read_csv`] on bytes in memory (plain or gzip), named `name` in errors.
///
/// # Errors
///
/// As [`read_csv`].
pub fn read_csv_bytes(bytes: &[u8], name: impl AsRef<Path>, label: &str) -> Result<LoadedData> {
    read_csv_lines(
        Lines::new(Source::from_bytes(bytes, name.as_ref())?),
        Some(label),
    )
}

/// [`read_csv`] with an optional label: `None` gives [`Error::MissingLabelColumn`] listing
/// the columns (used by [`read_dataset`](super::read_dataset)).
pub(crate) fn read_csv_impl(path: &Path, label: Option<&str>) -> Result<LoadedData> {
    read_csv_lines(Lines::open(path)?, label)
}

/// Every column but the label a numeric feature, labels as numbers (the plain CSV reader).
fn read_csv_lines(mut lines: Lines<'_>, label: Option<&str>) -> Result<LoadedData> {
    let header = read_header(&mut lines)?;
    let schema = crate::Schema {
        label: label.map(str::to_owned),
        ..crate::Schema::default()
    };
    let spec = schema.resolve(&header, lines.path(), crate::Task::Regression)?;
    read_rows(lines, &header, &spec, true)
}

/// The header: the first non-blank line, split into column names, which must be distinct.
///
/// # Errors
///
/// [`Error::EmptyData`] for a file without one; [`ParseErrorKind::DuplicateColumn`].
pub(crate) fn read_header(lines: &mut Lines<'_>) -> Result<Vec<String>> {
    let path = lines.path().to_owned();
    let (line, names) = loop {
        match lines.next_line()? {
            None => return Err(Error::EmptyData { path }),
            Some((_, text)) if text.trim().is_empty() => {}
            Some((n, text)) => {
                let mut fields = Vec::new();
                split_fields(text, &mut fields)
                    .map_err(|kind| parse_error(&path, n, "header", kind))?;
                let names: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
                break (n, names);
            }
        }
    };
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(parse_error(
                &path,
                line,
                column_field(name, i),
                ParseErrorKind::DuplicateColumn,
            ));
        }
    }
    Ok(names)
}

/// The next non-blank row after the header, split into exactly `width` fields, with its
/// 1-based line number; `None` at the end of the file.
///
/// # Errors
///
/// [`ParseErrorKind::RaggedRow`], the errors of [`split_fields`] and [`Lines::next_line`].
fn next_row<'l>(
    lines: &'l mut Lines<'_>,
    width: usize,
) -> Result<Option<(usize, Vec<Cow<'l, str>>)>> {
    let path = lines.path().to_owned();
    loop {
        match lines.next_line()? {
            None => return Ok(None),
            Some((_, text)) if text.trim().is_empty() => {}
            Some(_) => break,
        }
    }
    {
        let (n, text) = lines.last_line();
        let mut fields = Vec::with_capacity(width);
        split_fields(text, &mut fields).map_err(|kind| parse_error(&path, n, "row", kind))?;
        if fields.len() != width {
            return Err(parse_error(
                &path,
                n,
                "row",
                ParseErrorKind::RaggedRow {
                    expected: width,
                    found: fields.len(),
                },
            ));
        }
        Ok(Some((n, fields)))
    }
}

/// Calls `f(line, fields)` for every non-blank row after the header, each split into exactly
/// `width` fields.
///
/// # Errors
///
/// As [`next_row`], and those of `f`.
pub(crate) fn for_each_row(
    lines: &mut Lines<'_>,
    width: usize,
    mut f: impl FnMut(usize, &[Cow<'_, str>]) -> Result<()>,
) -> Result<()> {
    while let Some((n, fields)) = next_row(lines, width)? {
        f(n, &fields)?;
    }
    Ok(())
}

/// The rows after a CSV header under a [`Layout`], read a block at a time.
pub(crate) struct CsvRows<'a> {
    lines: Lines<'a>,
    header: Vec<String>,
    layout: Layout,
    labels: Labels,
    /// The negative class as first written ([`Labels::Signs`]), kept across blocks.
    negative: Option<f64>,
    /// The most values held in one [`BlockBuf`] (the whole-file budget).
    budget: usize,
}

impl<'a> CsvRows<'a> {
    /// The rows of `lines` (after `header`) under `spec`, labels only when `with_labels`.
    ///
    /// # Errors
    ///
    /// The [`Layout`]'s: [`Error::UnknownColumn`], [`Error::MissingLabelColumn`].
    pub(crate) fn new(
        lines: Lines<'a>,
        header: Vec<String>,
        spec: &TableSpec,
        with_labels: bool,
    ) -> Result<Self> {
        let layout = Layout::new(&header, spec, with_labels, lines.path())?;
        let budget = lines.budget();
        Ok(Self {
            lines,
            header,
            layout,
            labels: spec.labels.clone(),
            negative: None,
            budget,
        })
    }
}

impl BlockReader for CsvRows<'_> {
    fn n_features(&self) -> usize {
        self.layout.d
    }

    fn read_rows(&mut self, max_rows: usize, buf: &mut BlockBuf) -> Result<usize> {
        let path = self.lines.path().to_owned();
        let d = self.layout.d;
        let per_row = d + usize::from(self.layout.with_labels);
        let mut labels = LabelMapper::resume(&self.labels, self.negative);
        let mut rows = 0;
        while rows < max_rows {
            let Some((n, fields)) = next_row(&mut self.lines, self.header.len())? else {
                break;
            };
            if buf.x.len() + buf.y.len() + per_row > self.budget {
                return Err(parse_error(
                    &path,
                    n,
                    "row",
                    ParseErrorKind::OverMemoryBudget {
                        values: buf.x.len() + buf.y.len(),
                    },
                ));
            }
            let start = buf.x.len();
            buf.x.resize(start + d, 0.0);
            for (i, cell) in fields.iter().enumerate() {
                let header = &self.header;
                let at = |kind| parse_error(&path, n, column_field(&header[i], i), kind);
                match self.layout.roles[i] {
                    Role::Skip => {}
                    Role::Label => buf.y.push(labels.map_text(cell).map_err(at)?),
                    Role::Numeric(j) => {
                        buf.x[start + j] = parse_finite(cell).map_err(|kind| match kind {
                            ParseErrorKind::NotANumber(text) if !text.is_empty() => {
                                at(ParseErrorKind::TextInNumericColumn {
                                    value: text,
                                    column: header[i].clone(),
                                })
                            }
                            kind => at(kind),
                        })?;
                    }
                    Role::Categorical(c, j) => {
                        buf.x[start + j + self.layout.level(c, cell).map_err(at)?] = 1.0;
                    }
                }
            }
            rows += 1;
        }
        self.negative = labels.negative();
        buf.rows += rows;
        Ok(rows)
    }
}

/// Reads the rows after `header` into the features and labels `spec` describes (labels only
/// when `with_labels`; the label column may then be absent). Columns are found by name, so
/// the file's column order does not matter.
///
/// # Errors
///
/// [`Error::UnknownColumn`] for a column of the spec missing from the header;
/// [`Error::MissingLabelColumn`]; per cell, [`Error::Parse`] naming line and column:
/// [`ParseErrorKind::TextInNumericColumn`] (text in a numeric feature),
/// [`ParseErrorKind::NotANumber`] (an empty numeric cell, a non-numeric regression label),
/// [`ParseErrorKind::NonFinite`], [`ParseErrorKind::UnexpectedValue`] (a categorical value
/// outside its levels, a label outside the class pair), [`ParseErrorKind::OverMemoryBudget`];
/// [`Error::EmptyData`] without rows.
pub(crate) fn read_rows(
    lines: Lines<'_>,
    header: &[String],
    spec: &TableSpec,
    with_labels: bool,
) -> Result<LoadedData> {
    let path = lines.path().to_owned();
    let rows = CsvRows::new(lines, header.to_vec(), spec, with_labels)?;
    RowBlocks::new(Box::new(rows), usize::MAX, spec.feature_names()).collect_all(usize::MAX, &path)
}

/// How a CSV column is named in errors: its header name and 1-based position.
pub(crate) fn column_field(name: &str, index: usize) -> String {
    format!("column `{name}` ({})", index + 1)
}

/// Split one line into trimmed fields, unquoting RFC 4180 double-quoted fields.
fn split_fields<'a>(
    line: &'a str,
    out: &mut Vec<Cow<'a, str>>,
) -> std::result::Result<(), ParseErrorKind> {
    out.clear();
    if !line.contains('"') {
        out.extend(line.split(',').map(|f| Cow::Borrowed(f.trim())));
        return Ok(());
    }
    let bytes = line.as_bytes();
    let mut start = 0;
    let mut in_quotes = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => in_quotes = !in_quotes,
            b',' if !in_quotes => {
                out.push(unquote(&line[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    if in_quotes {
        return Err(ParseErrorKind::UnterminatedQuote);
    }
    out.push(unquote(&line[start..]));
    Ok(())
}

/// Trim a raw field and remove its surrounding quotes (`""` inside becomes `"`).
fn unquote(raw: &str) -> Cow<'_, str> {
    let field = raw.trim();
    match field
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    {
        Some(inner) if inner.contains("\"\"") => Cow::Owned(inner.replace("\"\"", "\"")),
        Some(inner) => Cow::Borrowed(inner),
        None => Cow::Borrowed(field),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        split_fields(line, &mut out).unwrap();
        out.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn fields_are_trimmed_and_unquoted() {
        assert_eq!(split("a, b ,c"), ["a", "b", "c"]);
        assert_eq!(
            split(r#""a,b", "say ""hi""",3"#),
            ["a,b", r#"say "hi""#, "3"]
        );
        assert_eq!(split(""), [""]);
        assert_eq!(split(r#""""#), [""]);
    }

    #[test]
    fn values_beyond_the_budget_are_refused_at_their_line() {
        let text = b"a,b,y\n1,2,3\n\n4,5,6\n7,8,9\n";
        let lines = |budget| {
            Lines::new(
                Source::from_bytes(text, Path::new("b.csv"))
                    .unwrap()
                    .with_budget(budget),
            )
        };
        // 9 values fit in 9, and not in 8: the third row (line 5) is refused.
        assert_eq!(read_csv_lines(lines(9), Some("y")).unwrap().x.nrows(), 3);
        match read_csv_lines(lines(8), Some("y")) {
            Err(Error::Parse {
                line: 5,
                kind: ParseErrorKind::OverMemoryBudget { values: 6 },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unterminated_quote_is_an_error() {
        let mut out = Vec::new();
        assert_eq!(
            split_fields(r#"1,"2,3"#, &mut out),
            Err(ParseErrorKind::UnterminatedQuote)
        );
    }
}
