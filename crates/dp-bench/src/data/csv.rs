//! CSV with a header row: one label column chosen by name, every other column a numeric
//! feature.

use std::borrow::Cow;
use std::path::Path;

use ndarray::{Array1, Array2};

use super::source::{Lines, Source, parse_error, parse_finite};
use super::{LoadedData, ParseErrorKind};
use crate::error::{Error, Result};

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

/// A CSV with a header row and no label column (data to predict on): every column is a
/// numeric feature. Returns the `n × d` features and the column names.
///
/// # Errors
///
/// As [`read_csv`], but no column is looked for as the label.
pub fn read_csv_features(path: impl AsRef<Path>) -> Result<(Array2<f64>, Vec<String>)> {
    let (x, _, names) = read_table(Lines::open(path.as_ref())?, None)?;
    Ok((x, names))
}

fn read_csv_lines(lines: Lines<'_>, label: Option<&str>) -> Result<LoadedData> {
    let path = lines.path().to_owned();
    let (x, y, feature_names) = read_table(lines, Some(label))?;
    match y {
        Some(y) => Ok(LoadedData {
            x,
            y,
            feature_names: Some(feature_names),
        }),
        None => Err(Error::EmptyData { path }),
    }
}

/// The features, the labels (when `label` is `Some`: the named column, an error when it is
/// not named or not in the header) and the features' names.
#[allow(clippy::type_complexity)]
fn read_table(
    mut lines: Lines<'_>,
    label: Option<Option<&str>>,
) -> Result<(Array2<f64>, Option<Array1<f64>>, Vec<String>)> {
    let path = &lines.path().to_owned();
    let budget = lines.budget();

    // Header: the first non-blank line.
    let (header_line, header) = loop {
        match lines.next_line()? {
            None => return Err(Error::EmptyData { path: path.into() }),
            Some((_, text)) if text.trim().is_empty() => {}
            Some((n, text)) => {
                let mut fields = Vec::new();
                split_fields(text, &mut fields)
                    .map_err(|kind| parse_error(path, n, "header", kind))?;
                let names: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
                break (n, names);
            }
        }
    };
    for (i, name) in header.iter().enumerate() {
        if header[..i].contains(name) {
            return Err(parse_error(
                path,
                header_line,
                column_field(name, i),
                ParseErrorKind::DuplicateColumn,
            ));
        }
    }
    let label_index = match label {
        None => None,
        Some(label) => match label.and_then(|l| header.iter().position(|c| c == l)) {
            Some(i) => Some(i),
            None => {
                return Err(Error::MissingLabelColumn {
                    path: path.into(),
                    label: label.map(str::to_owned),
                    available: header,
                });
            }
        },
    };
    let width = header.len();
    let d = width - usize::from(label_index.is_some());
    let mut rows = 0;

    let mut x: Vec<f64> = Vec::new();
    let mut y: Vec<f64> = Vec::new();
    while let Some((n, text)) = lines.next_line()? {
        if text.trim().is_empty() {
            continue;
        }
        // A fresh vector per line: the fields borrow the line's text.
        let mut fields = Vec::with_capacity(width);
        split_fields(text, &mut fields).map_err(|kind| parse_error(path, n, "row", kind))?;
        if fields.len() != width {
            return Err(parse_error(
                path,
                n,
                "row",
                ParseErrorKind::RaggedRow {
                    expected: width,
                    found: fields.len(),
                },
            ));
        }
        if x.len() + y.len() + width > budget {
            return Err(parse_error(
                path,
                n,
                "row",
                ParseErrorKind::OverMemoryBudget {
                    values: x.len() + y.len(),
                },
            ));
        }
        for (i, cell) in fields.iter().enumerate() {
            let value = parse_finite(cell)
                .map_err(|kind| parse_error(path, n, column_field(&header[i], i), kind))?;
            if Some(i) == label_index {
                y.push(value);
            } else {
                x.push(value);
            }
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(Error::EmptyData { path: path.into() });
    }
    let x = Array2::from_shape_vec((rows, d), x).map_err(|e| Error::DataMismatch {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let mut names = header;
    if let Some(i) = label_index {
        names.remove(i);
    }
    Ok((x, label_index.map(|_| Array1::from_vec(y)), names))
}

/// How a CSV column is named in errors: its header name and 1-based position.
fn column_field(name: &str, index: usize) -> String {
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
    fn without_a_label_every_column_is_a_feature() {
        let lines =
            |text: &'static [u8]| Lines::new(Source::from_bytes(text, Path::new("f.csv")).unwrap());
        let (x, y, names) = read_table(lines(b"a,b\n1,2\n\n3,-4\n"), None).unwrap();
        assert_eq!(x, ndarray::array![[1.0, 2.0], [3.0, -4.0]]);
        assert_eq!(y, None);
        assert_eq!(names, ["a", "b"]);
        assert!(matches!(
            read_table(lines(b"a,b\n"), None),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            read_table(lines(b"a,b\n1,x\n"), None),
            Err(Error::Parse { line: 2, .. })
        ));
        // With a label the column is left out of the features.
        let (x, y, names) = read_table(lines(b"a,y,b\n1,5,2\n"), Some(Some("y"))).unwrap();
        assert_eq!(x, ndarray::array![[1.0, 2.0]]);
        assert_eq!(y, Some(ndarray::array![5.0]));
        assert_eq!(names, ["a", "b"]);
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
