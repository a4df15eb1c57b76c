//! Tables: named columns and rows of text or numbers, written as CSV and shown as Markdown.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::{check_id, csv_field, csv_number, markdown_cell, parameter, significant};

/// Significant digits of numbers in the Markdown rendering (the CSV keeps full precision).
const MARKDOWN_DIGITS: usize = 4;

/// One table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Free text.
    Text(String),
    /// An integer (counts, seeds, dimensions).
    Int(i64),
    /// A measured real number, written in full precision to CSV and to 4 significant digits
    /// (trailing zeros kept) in Markdown.
    Number(f64),
    /// A set parameter (ε, δ, a radius): full precision in CSV, the shortest exact form in
    /// Markdown (`0.1`, `8`, `1e-5`).
    Param(f64),
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Self::Text(s) => csv_field(s),
            Self::Int(i) => i.to_string(),
            Self::Number(v) | Self::Param(v) => csv_number(*v),
        }
    }

    fn markdown(&self) -> String {
        match self {
            Self::Text(s) => markdown_cell(s),
            Self::Int(i) => i.to_string(),
            Self::Number(v) => significant(*v, MARKDOWN_DIGITS),
            Self::Param(v) => parameter(*v),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Self::Text(s.to_owned())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Self::Text(s)
    }
}

impl From<f64> for Cell {
    fn from(v: f64) -> Self {
        Self::Number(v)
    }
}

impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<usize> for Cell {
    fn from(v: usize) -> Self {
        i64::try_from(v).map_or(Self::Number(v as f64), Self::Int)
    }
}

/// A table artifact; the runner writes `<id>.csv` and inlines it in the index as Markdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// File stem of the CSV: ASCII letters, digits, `-`, `_` and `.`.
    pub id: String,
    /// Caption shown above the table in the index.
    pub title: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows; each must have one cell per column.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with the given column names.
    pub fn new<S: Into<String>>(
        id: impl Into<String>,
        title: impl Into<String>,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row (checked against the number of columns by [`Table::validate`]).
    pub fn push_row(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    /// Append a row, builder style.
    #[must_use]
    pub fn with_row(mut self, row: Vec<Cell>) -> Self {
        self.rows.push(row);
        self
    }

    /// Check the id and that every row has one cell per column.
    pub fn validate(&self) -> Result<()> {
        check_id(&self.id)?;
        if self.columns.is_empty() {
            return Err(Error::InvalidArtifact {
                id: self.id.clone(),
                reason: "a table needs at least one column".to_owned(),
            });
        }
        if let Some((i, row)) = self
            .rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != self.columns.len())
        {
            return Err(Error::InvalidArtifact {
                id: self.id.clone(),
                reason: format!(
                    "row {i} has {} cells but there are {} columns",
                    row.len(),
                    self.columns.len()
                ),
            });
        }
        Ok(())
    }

    /// The table as CSV: a header of column names, then one line per row; numbers in full
    /// (round-trip) precision, non-finite values as `inf`, `-inf`, `nan`.
    pub fn to_csv(&self) -> String {
        let mut out = join(self.columns.iter().map(|c| csv_field(c)), ",");
        out.push('\n');
        for row in &self.rows {
            out.push_str(&join(row.iter().map(Cell::csv), ","));
            out.push('\n');
        }
        out
    }

    /// Write [`Table::to_csv`] to `path` (after [`Table::validate`]).
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        self.validate()?;
        std::fs::write(path, self.to_csv()).map_err(|e| Error::io(path, e))
    }

    /// The table as a GitHub-flavoured Markdown table (measured numbers to 4 significant
    /// digits, parameters as given, numeric columns right-aligned).
    pub fn to_markdown(&self) -> String {
        let numeric = |j: usize| {
            !self.rows.is_empty()
                && self.rows.iter().all(|r| {
                    matches!(
                        r.get(j),
                        Some(Cell::Int(_) | Cell::Number(_) | Cell::Param(_))
                    )
                })
        };
        let mut out = format!(
            "| {} |\n",
            join(self.columns.iter().map(|c| markdown_cell(c)), " | ")
        );
        let rule = (0..self.columns.len()).map(|j| if numeric(j) { "---:" } else { "---" });
        out.push_str(&format!("| {} |\n", join(rule.map(str::to_owned), " | ")));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                join(row.iter().map(Cell::markdown), " | ")
            ));
        }
        out
    }
}

fn join(items: impl Iterator<Item = String>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}
