//! Reading and writing model files for `dpglm`: the format is dp-glm's
//! ([`dp_glm::model_file`], `dpglm-model/3`, which also reads formats 2 and 1); this module
//! adds the file handling (a bounded read of a regular file, atomic writing) and the JSON
//! helpers of the CLI's own output.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dp_data::{Column, Labels, TableSpec, Task};
use dp_glm::model_file::MAX_MODEL_BYTES;
use dp_glm::{LinearModel, NoiseSource};
use serde_json::{Value, json};

use crate::CliError;
use crate::schema::task_of;

/// A finite number as JSON, or the typed refusal naming what it is (`serde_json` would
/// silently turn NaN and ±∞ into `null`).
pub(crate) fn finite(what: &str, v: f64) -> Result<Value, CliError> {
    if v.is_finite() {
        Ok(json!(v))
    } else {
        Err(CliError::Failure(format!(
            "{what} is {v}, not a finite number; refusing to print or save it"
        )))
    }
}

/// The JSON of the noise source (as the model file writes it).
pub(crate) fn noise_source_json(s: NoiseSource) -> Value {
    json!({
        "kind": s.kind(),
        "seed": s.seed(),
        "private_release": s.is_private_release(),
        "description": s.to_string(),
    })
}

/// How to read data for `model`: its stored pipeline, or for a file written before it was
/// recorded, its feature names as numeric columns (no label column: give `--label`) with the
/// default labels of its loss (0/1 or −1/1 for classification).
pub(crate) fn input_spec(model: &LinearModel) -> TableSpec {
    model.input().cloned().unwrap_or_else(|| TableSpec {
        label: None,
        labels: match task_of(model.loss()) {
            Task::Classification => Labels::Signs,
            Task::Regression => Labels::Numeric,
        },
        columns: model
            .feature_names()
            .map(|names| names.iter().map(Column::numeric).collect()),
    })
}

/// Reads and validates the model file at `path` (a regular file of at most
/// [`MAX_MODEL_BYTES`]).
///
/// # Errors
/// [`CliError::Usage`] naming the file and, for a file that is not a valid model, the field
/// at fault ([`dp_glm::ModelFileError`]).
pub(crate) fn read_model(path: &Path) -> Result<LinearModel, CliError> {
    let fail = |reason: String| CliError::Usage(format!("{}: {reason}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let limit = MAX_MODEL_BYTES as u64;
    if meta.len() > limit {
        return Err(fail(format!(
            "{} bytes is larger than any model file ({limit} bytes at most)",
            meta.len()
        )));
    }
    let mut text = String::new();
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    LinearModel::from_json(&text).map_err(|e| fail(e.to_string()))
}

/// Why the output path `path` must not be replaced, if it must not: it exists and is not a
/// regular file (a symbolic link, a directory, a FIFO, a socket or a device node), or cannot
/// be inspected. Renaming a file over such a path would replace the link, pipe or device
/// itself with a regular file, so outputs are written only to a new path or over a regular
/// file; a symbolic link is refused rather than followed (give the path it points to).
pub(crate) fn not_replaceable(path: &Path) -> Option<String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("{}: cannot inspect it: {e}", path.display())),
    };
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    let (what, hint) = if kind.is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| format!(" to {}", t.display()))
            .unwrap_or_default();
        (
            format!("a symbolic link{target}"),
            " (links are not followed: give the path of the file it points to)",
        )
    } else if kind.is_dir() {
        ("a directory".to_string(), "")
    } else {
        (special_file(&kind).to_string(), "")
    };
    Some(format!(
        "{} is {what}, not a regular file; refusing to replace it{hint}",
        path.display()
    ))
}

/// What a file that is neither a regular file, a directory nor a symbolic link is.
#[cfg(unix)]
fn special_file(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// What a file that is neither a regular file, a directory nor a symbolic link is.
#[cfg(not(unix))]
fn special_file(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Write `text` to `path` atomically: into a fresh temporary file in the same directory, then
/// renamed over `path`, so a reader never sees a half-written file and a failed write leaves
/// any previous file intact. Only a new path or a regular file is replaced
/// ([`not_replaceable`], checked again just before the rename).
///
/// # Errors
/// [`CliError::Usage`] naming the file when it exists and is not a regular file;
/// [`CliError::Failure`] naming it when it cannot be written.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    let fail =
        |e: std::io::Error| CliError::Failure(format!("cannot write {}: {e}", path.display()));
    let name = path.file_name().ok_or_else(|| {
        CliError::Usage(format!(
            "invalid value for --out: {} is not a file name",
            path.display()
        ))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
    let renamed = match (written, not_replaceable(path)) {
        (Err(e), _) => Err(fail(e)),
        (Ok(()), Some(reason)) => Err(CliError::Usage(reason)),
        (Ok(()), None) => std::fs::rename(&tmp, path).map_err(fail),
    };
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The file `path` names once it exists: its canonical path, or its canonical directory joined
/// with its name when the file does not exist yet (`None` when the directory does not exist).
pub(crate) fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.canonicalize().ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    /// The names in `dir`.
    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    }

    #[test]
    fn writes_atomically_and_resolves_paths() {
        let root = tempfile::TempDir::new().unwrap();
        let dir = root.path().join("models");
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("m.json");
        write_atomically(&path, "first").unwrap();
        write_atomically(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(names(&dir), ["m.json"], "no temporary file left behind");
        // A directory cannot be replaced: the error leaves it alone and no temp file beside it.
        assert!(write_atomically(&dir, "x").is_err());
        assert_eq!(
            names(root.path()),
            ["models"],
            "no temporary file left behind"
        );
        assert_eq!(names(&dir), ["m.json"]);
        let odd = dir.join("sub").join("..").join("m.json");
        assert!(resolved(&odd).is_none(), "no `sub` directory");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert_eq!(resolved(&odd), Some(path.canonicalize().unwrap()));
        assert_eq!(
            resolved(&dir.join("new.json")),
            Some(dir.canonicalize().unwrap().join("new.json"))
        );
    }

    /// The write itself refuses what is not a regular file (a FIFO made after the flags were
    /// checked, a symbolic link) and leaves it as it was, with no temporary file beside it.
    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let root = tempfile::TempDir::new().unwrap();
        let fifo = root.path().join("p");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let target = root.path().join("t.json");
        std::fs::write(&target, "kept").unwrap();
        let link = root.path().join("l.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for (path, what) in [
            (&fifo, "is a FIFO (named pipe), not a regular file"),
            (&link, "is a symbolic link to "),
            (&root.path().to_path_buf(), "is a directory"),
        ] {
            match write_atomically(path, "new") {
                Err(CliError::Usage(m)) => {
                    assert!(m.starts_with(&path.display().to_string()), "{m}");
                    assert!(m.contains(what), "{m}");
                    assert!(
                        m.contains(", not a regular file; refusing to replace it"),
                        "{m}"
                    );
                }
                other => panic!("{path:?}: {other:?}"),
            }
        }
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        let mut left = names(root.path());
        left.sort();
        assert_eq!(left, ["l.json", "p", "t.json"], "no temporary file left");
    }
}
