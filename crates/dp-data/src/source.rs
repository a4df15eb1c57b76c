//! Opening data files (gzip detected by its magic bytes) and reading them line by line, with
//! every allocation bounded: only regular files are read, lines are at most
//! [`MAX_LINE_BYTES`] long, and the values of one file fit in [`MEMORY_BUDGET_BYTES`].

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;

use super::ParseErrorKind;
use crate::error::{Error, Result};

const BUFFER: usize = 1 << 16;

/// The most memory a reader sets aside for the values of one file (features, labels and, for
/// LIBSVM, the sparse entries before densifying): 4 GiB. A file needing more is refused with
/// a typed error before the allocation is made.
pub const MEMORY_BUDGET_BYTES: usize = 4 << 30;

/// The longest physical line a text reader accepts (64 MiB): a file without line breaks (or a
/// binary file read as text) is refused instead of being buffered whole.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// A data source opened for reading: the (decompressed) content and how to name it in errors.
pub(crate) struct Source<'a> {
    /// The content, decompressed when it starts with the gzip magic bytes.
    pub(crate) reader: Box<dyn BufRead + 'a>,
    /// The name used in errors (the file's path).
    pub(crate) path: PathBuf,
    /// The content's exact length in bytes when it is known before reading (a plain regular
    /// file or a byte slice; `None` for gzip, whose decompressed size is not).
    pub(crate) len: Option<u64>,
    /// The most `f64` values a reader may hold for this source: [`MEMORY_BUDGET_BYTES`] / 8
    /// (smaller in tests).
    pub(crate) budget: usize,
}

impl Source<'static> {
    /// Open the regular file `path`. Devices, pipes and directories are refused (an endless
    /// source such as `/dev/zero` could never be read to its end).
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let (file, len) = open_regular(path)?;
        Self::new(BufReader::with_capacity(BUFFER, file), path, len)
    }
}

/// Opens the regular file `path` and gives its length. Devices, pipes and directories are
/// refused.
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (a directory, device or pipe); data is read from regular \
                 files only",
            ),
        ));
    }
    Ok((file, meta.len()))
}

impl<'a> Source<'a> {
    /// Read from bytes in memory, named `name` in errors.
    pub(crate) fn from_bytes(bytes: &'a [u8], name: &Path) -> Result<Self> {
        Self::new(bytes, name, bytes.len() as u64)
    }

    fn new<R: BufRead + 'a>(mut reader: R, path: &Path, raw_len: u64) -> Result<Self> {
        let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
        let (reader, len): (Box<dyn BufRead + 'a>, _) = if head.starts_with(&[0x1f, 0x8b]) {
            (
                Box::new(BufReader::with_capacity(
                    BUFFER,
                    MultiGzDecoder::new(reader),
                )),
                None,
            )
        } else {
            (Box::new(reader), Some(raw_len))
        };
        Ok(Self {
            reader,
            path: path.to_owned(),
            len,
            budget: MEMORY_BUDGET_BYTES / 8,
        })
    }

    /// The same source with a budget of `values` (`usize::MAX` for a reader that streams; small
    /// to test the budget checks cheaply).
    pub(crate) fn with_budget(self, values: usize) -> Self {
        Self {
            budget: values,
            ..self
        }
    }
}

/// Physical lines of a text source with their 1-based numbers; strips `\n`, `\r\n` and a
/// UTF-8 byte-order mark on the first line. Bounded: a line longer than [`MAX_LINE_BYTES`] is
/// an error, not a buffer that grows without end.
pub struct Lines<'a> {
    source: Source<'a>,
    buf: Vec<u8>,
    line: usize,
    /// Where the last line's text lies in `buf`.
    text: std::ops::Range<usize>,
}

/// Open the regular file `path` for reading whole, decompressed when it starts with the gzip
/// magic bytes. Devices, pipes and directories are refused (an endless source such as
/// `/dev/zero` could never be read to its end).
///
/// # Errors
///
/// [`Error::Io`] naming `path`: it cannot be opened, or is not a regular file.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    Ok(Source::open(path)?.reader)
}

impl Lines<'static> {
    /// Lines of the regular file `path` (gzip detected from the content; see [`open`]).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self::new(Source::open(path)?))
    }
}

impl<'a> Lines<'a> {
    /// Lines of `source`.
    pub(crate) fn new(source: Source<'a>) -> Self {
        Self {
            source,
            buf: Vec::with_capacity(256),
            line: 0,
            text: 0..0,
        }
    }

    /// The source's name (its path).
    pub fn path(&self) -> &Path {
        &self.source.path
    }

    /// The most `f64` values a reader may hold for this source ([`Source::budget`]).
    pub(crate) fn budget(&self) -> usize {
        self.source.budget
    }

    /// The next line and its 1-based number, or `None` at the end of the file.
    ///
    /// # Errors
    /// [`ParseErrorKind::LineTooLong`] past [`MAX_LINE_BYTES`], [`ParseErrorKind::InvalidUtf8`],
    /// [`Error::Io`].
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>> {
        self.buf.clear();
        // Room for the longest accepted line and its `\r\n`.
        let limit = MAX_LINE_BYTES as u64 + 2;
        let n = (&mut self.source.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(&self.source.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut bytes = self.buf.as_slice();
        if let Some(rest) = bytes.strip_suffix(b"\n") {
            bytes = rest;
        }
        if let Some(rest) = bytes.strip_suffix(b"\r") {
            bytes = rest;
        }
        if self.line == 1
            && let Some(format) = binary_format(bytes)
            && (bytes.len() > MAX_LINE_BYTES || std::str::from_utf8(bytes).is_err())
        {
            return Err(Error::BinaryFormat {
                path: self.source.path.clone(),
                format,
            });
        }
        if bytes.len() > MAX_LINE_BYTES {
            return Err(parse_error(
                &self.source.path,
                self.line,
                "line",
                ParseErrorKind::LineTooLong {
                    limit: MAX_LINE_BYTES,
                },
            ));
        }
        if self.line == 1
            && let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF")
        {
            bytes = rest;
        }
        let start = bytes.as_ptr() as usize - self.buf.as_ptr() as usize;
        self.text = start..start + bytes.len();
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Some((self.line, text))),
            Err(_) => Err(parse_error(
                &self.source.path,
                self.line,
                "line",
                ParseErrorKind::InvalidUtf8,
            )),
        }
    }
}

impl Lines<'_> {
    /// The line [`Lines::next_line`] returned last, again (empty before the first).
    pub(crate) fn last_line(&self) -> (usize, &str) {
        // Checked as UTF-8 when it was read.
        let text = std::str::from_utf8(&self.buf[self.text.clone()]).unwrap_or_default();
        (self.line, text)
    }
}

/// The binary format whose magic bytes open `head` (the first line of a file read as text):
/// Parquet's `PAR1` or NumPy's `\x93NUMPY`.
fn binary_format(head: &[u8]) -> Option<crate::Format> {
    if head.starts_with(crate::parquet::MAGIC) {
        Some(crate::Format::Parquet)
    } else if head.starts_with(crate::npy::MAGIC) {
        Some(crate::Format::Npy)
    } else {
        None
    }
}

/// An [`Error::Parse`] at the 1-based `line` of `path`, in the field `field` (e.g. a column).
pub fn parse_error(
    path: &Path,
    line: usize,
    field: impl Into<String>,
    kind: ParseErrorKind,
) -> Error {
    Error::Parse {
        path: path.to_owned(),
        line,
        field: field.into(),
        kind,
    }
}

/// Parse a finite `f64`, or say why not ([`ParseErrorKind::NotANumber`] or
/// [`ParseErrorKind::NonFinite`], keeping the text).
///
/// # Errors
///
/// As above.
pub fn parse_finite(text: &str) -> std::result::Result<f64, ParseErrorKind> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(ParseErrorKind::NonFinite(text.to_owned())),
        Err(_) => Err(ParseErrorKind::NotANumber(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    /// The first line of `bytes` read as text (named `t.csv`).
    fn first_line(bytes: &[u8]) -> Result<Option<String>> {
        let mut lines = Lines::new(Source::from_bytes(bytes, Path::new("t.csv"))?);
        Ok(lines.next_line()?.map(|(_, text)| text.to_owned()))
    }

    #[test]
    fn binary_formats_read_as_text_are_named() {
        // A Parquet file starts with PAR1 and a page header (binary, not UTF-8); NPY with
        // \x93NUMPY.
        for (bytes, format) in [
            (&b"PAR1\x15\x04\x15\xa0\x01,x\n"[..], Format::Parquet),
            (
                &b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'}\n"[..],
                Format::Npy,
            ),
        ] {
            match first_line(bytes) {
                Err(e @ Error::BinaryFormat { format: f, .. }) if f == format => {
                    let name = format.name();
                    assert!(e.to_string().starts_with("t.csv looks like "), "{e}");
                    assert!(
                        e.to_string()
                            .ends_with(&format!("name it .{name} or pass --format {name}")),
                        "{e}"
                    );
                }
                other => panic!("{format:?}: {other:?}"),
            }
        }
        // Text that merely starts with the letters PAR1 is text; other binary is still
        // "not valid UTF-8".
        assert_eq!(first_line(b"PAR1,y\n1,2\n").unwrap().unwrap(), "PAR1,y");
        assert!(matches!(
            first_line(b"\xff\xfe,y\n"),
            Err(Error::Parse {
                kind: ParseErrorKind::InvalidUtf8,
                ..
            })
        ));
    }
}
