//! Opening data files (gzip detected by its magic bytes) and reading them line by line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;

use super::ParseErrorKind;
use crate::error::{Error, Result};

const BUFFER: usize = 1 << 16;

/// Open `path` for buffered reading, decompressing it on the fly when it starts with the gzip
/// magic bytes (whatever its name).
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(BUFFER, file);
    let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Physical lines of a text file with their 1-based numbers; strips `\n`, `\r\n` and a UTF-8
/// byte-order mark on the first line.
pub(crate) struct Lines {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    buf: Vec<u8>,
    line: usize,
}

impl Lines {
    /// Open `path` (gzip or plain).
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            reader: open(path)?,
            path: path.to_owned(),
            buf: Vec::with_capacity(256),
            line: 0,
        })
    }

    /// The next line and its 1-based number, or `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &str)>> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(&self.path, e))?;
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
            && let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF")
        {
            bytes = rest;
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Some((self.line, text))),
            Err(_) => Err(Error::Parse {
                path: self.path.clone(),
                line: self.line,
                field: "line".to_owned(),
                kind: ParseErrorKind::InvalidUtf8,
            }),
        }
    }
}

/// A parse error at `line` of `path`.
pub(crate) fn parse_error(
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

/// Parse a finite `f64`, or say why not.
pub(crate) fn parse_finite(text: &str) -> std::result::Result<f64, ParseErrorKind> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(ParseErrorKind::NonFinite(text.to_owned())),
        Err(_) => Err(ParseErrorKind::NotANumber(text.to_owned())),
    }
}
