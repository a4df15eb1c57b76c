//! Drafting a schema from a CSV file, for a person to review (`dpglm schema`).
//!
//! # Privacy
//!
//! Not private. The draft lists the values that occur in the file (categorical levels, the
//! label's values): publishing it, or training with it unchanged, reveals which values occur.
//! Its `note` says so; replace what it read with public lists before use.

use std::collections::BTreeSet;
use std::path::Path;

use crate::csv::{for_each_row, read_header};
use crate::schema::OTHER_LEVEL;
use crate::source::Lines;
use crate::{Error, Result, Schema};

/// Distinct text values a drafted categorical column may have; a text column with more is put
/// in the draft's `drop` list instead (an identifier or free text, not a category).
pub const MAX_DRAFT_LEVELS: usize = 100;

/// What the draft saw in one column.
#[derive(Default)]
struct Seen {
    /// Every value parsed as a finite number.
    numeric: bool,
    /// Distinct values, up to one more than [`MAX_DRAFT_LEVELS`].
    values: BTreeSet<String>,
}

/// Drafts a schema from the CSV file `path`: `label` as the label column; every text column
/// (a value that is not a number) as categorical with the sorted values found, or dropped
/// when it has more than [`MAX_DRAFT_LEVELS`]; for the label, the class pair found when it
/// has exactly two values other than `{0, 1}` / `{-1, 1}` (sorted: check which is positive,
/// the second). The draft's `note` says that it was read from the data and is not private.
///
/// # Errors
///
/// [`Error::Schema`] for a file that is not CSV (by its name); [`Error::MissingLabelColumn`]
/// for a label not in the header; the CSV reader's errors (ragged rows, encoding, size).
pub fn draft_schema(path: &Path, label: Option<&str>) -> Result<Schema> {
    if crate::Format::from_path(path) != Some(crate::Format::Csv) {
        return Err(Error::Schema {
            origin: path.display().to_string(),
            reason: "a schema can be drafted from a CSV file with a header only (other formats \
                     have no column names)"
                .into(),
        });
    }
    let mut lines = Lines::open(path)?;
    let header = read_header(&mut lines)?;
    if let Some(label) = label
        && !header.iter().any(|h| h == label)
    {
        return Err(Error::MissingLabelColumn {
            path: path.into(),
            label: Some(label.to_owned()),
            available: header,
        });
    }
    let mut seen: Vec<Seen> = header
        .iter()
        .map(|_| Seen {
            numeric: true,
            ..Seen::default()
        })
        .collect();
    // Bytes held in the distinct values: bounded by the memory budget.
    let mut held = 0usize;
    let budget = crate::MEMORY_BUDGET_BYTES;
    for_each_row(&mut lines, header.len(), |n, fields| {
        for (s, cell) in seen.iter_mut().zip(fields) {
            s.numeric &= cell.parse::<f64>().is_ok_and(f64::is_finite);
            if s.values.len() <= MAX_DRAFT_LEVELS && !s.values.contains(cell.as_ref()) {
                held += cell.len();
                if held > budget {
                    return Err(crate::parse_error(
                        path,
                        n,
                        "row",
                        crate::ParseErrorKind::OverMemoryBudget { values: held / 8 },
                    ));
                }
                s.values.insert(cell.to_string());
            }
        }
        Ok(())
    })?;
    let mut schema = Schema {
        label: label.map(str::to_owned),
        ..Schema::default()
    };
    let mut drop = Vec::new();
    let mut notes = Vec::new();
    for (name, s) in header.iter().zip(seen) {
        if Some(name.as_str()) == label {
            if let Some(classes) = draft_classes(&s) {
                notes.push(
                    "classes: the label's two values, sorted; check which is the positive class \
                     (the second) and that these are the public class names"
                        .to_owned(),
                );
                schema.classes = Some(classes);
            } else if !s.numeric {
                notes.push(format!(
                    "the label `{name}` has more than two text values: give the public class \
                     pair (\"classes\": [NEGATIVE, POSITIVE]) or pick another label"
                ));
            }
        } else if s.numeric {
            // A numeric feature: nothing to declare.
        } else if s.values.len() > MAX_DRAFT_LEVELS || s.values.contains(OTHER_LEVEL) {
            drop.push(name.clone());
            notes.push(format!(
                "`{name}` holds text with more than {MAX_DRAFT_LEVELS} distinct values (or \
                 `{OTHER_LEVEL}`): dropped; declare it categorical with public levels to use it"
            ));
        } else {
            schema
                .categorical
                .insert(name.clone(), s.values.into_iter().collect());
        }
    }
    if !drop.is_empty() {
        schema.drop = Some(drop);
    }
    let mut note = format!(
        "DRAFT READ FROM THE DATA IN {} — NOT PRIVATE. The categorical levels and the label's \
         classes below are the values that occur in that file: publishing this schema, or \
         training with it as it is, reveals which values occur. Review it and replace them with \
         public lists (from the data's documentation), ending a level list with \"{OTHER_LEVEL}\" \
         to catch other values.",
        path.display()
    );
    for n in notes {
        note.push(' ');
        note.push_str(&n);
        note.push('.');
    }
    schema.note = Some(note);
    Ok(schema)
}

/// The class pair of a drafted label: its two values when they are not `{0, 1}` or `{-1, 1}`
/// (which need no pair), sorted (numerically when both are numbers).
fn draft_classes(s: &Seen) -> Option<Vec<String>> {
    if s.values.len() != 2 {
        return None;
    }
    let mut values: Vec<String> = s.values.iter().cloned().collect();
    if s.numeric {
        let mut numbers: Vec<f64> = values.iter().filter_map(|v| v.parse().ok()).collect();
        numbers.sort_by(f64::total_cmp);
        if numbers == [0.0, 1.0] || numbers == [-1.0, 1.0] {
            return None;
        }
        values.sort_by(|a, b| {
            let (a, b): (f64, f64) = (a.parse().unwrap_or(0.0), b.parse().unwrap_or(0.0));
            a.total_cmp(&b)
        });
    }
    Some(values)
}
