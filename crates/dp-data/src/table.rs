//! What the columns of a table with named columns (CSV, Parquet) become under a
//! [`TableSpec`]: each header column's role (skipped, the label, a numeric feature, a one-hot
//! encoded categorical feature) and the public levels of the categorical ones.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::schema::Column;
use crate::{ParseErrorKind, TableSpec};

/// What one header column becomes under a [`TableSpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Not read (dropped, or not a feature of the spec).
    Skip,
    /// The label.
    Label,
    /// A numeric feature, at this output column.
    Numeric(usize),
    /// A categorical feature: the index of its spec column, and its first output column.
    Categorical(usize, usize),
}

/// The roles of a header's columns under a spec, with the categorical columns' level indices.
pub(crate) struct Layout {
    /// One role per header column.
    pub(crate) roles: Vec<Role>,
    /// Output features.
    pub(crate) d: usize,
    /// Whether a label column is read.
    pub(crate) with_labels: bool,
    /// The spec's feature columns.
    columns: Vec<Column>,
    /// Per spec column, its levels' positions.
    levels: Vec<HashMap<String, usize>>,
}

impl Layout {
    /// The roles of `header`'s columns under `spec` (the label's only when `with_labels`; the
    /// label column may then be absent). Columns are found by name.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownColumn`] for a column of the spec missing from the header;
    /// [`Error::MissingLabelColumn`] without a label, or with one missing from the header.
    pub(crate) fn new(
        header: &[String],
        spec: &TableSpec,
        with_labels: bool,
        path: &Path,
    ) -> Result<Self> {
        let columns = spec.columns.clone().unwrap_or_default();
        let mut roles = vec![Role::Skip; header.len()];
        let find = |name: &str| header.iter().position(|h| h == name);
        let mut d = 0;
        for (c, column) in columns.iter().enumerate() {
            let Some(i) = find(&column.name) else {
                return Err(Error::UnknownColumn {
                    path: path.into(),
                    column: column.name.clone(),
                    named_by: "the model or schema (a feature)".into(),
                    available: header.to_vec(),
                });
            };
            roles[i] = match column.levels {
                None => Role::Numeric(d),
                Some(_) => Role::Categorical(c, d),
            };
            d += column.width();
        }
        if with_labels {
            let label = spec.label.as_deref();
            match label.and_then(find) {
                Some(i) => roles[i] = Role::Label,
                None => {
                    return Err(Error::MissingLabelColumn {
                        path: path.into(),
                        label: label.map(str::to_owned),
                        available: header.to_vec(),
                    });
                }
            }
        }
        let levels = columns
            .iter()
            .map(|c| {
                c.levels
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(|(k, l)| (l.clone(), k))
                    .collect()
            })
            .collect();
        Ok(Self {
            roles,
            d,
            with_labels,
            columns,
            levels,
        })
    }

    /// The offset of `value` among the output columns of the categorical spec column `c`:
    /// its level's position, or the catch-all's.
    ///
    /// # Errors
    ///
    /// [`ParseErrorKind::UnexpectedValue`] for a value outside the levels without a catch-all.
    pub(crate) fn level(
        &self,
        c: usize,
        value: &str,
    ) -> std::result::Result<usize, ParseErrorKind> {
        match self.levels[c].get(value) {
            Some(&k) => Ok(k),
            None if self.columns[c].other => Ok(self.levels[c].len()),
            None => Err(ParseErrorKind::UnexpectedValue {
                value: value.to_owned(),
                expected: self.columns[c].levels_hint(),
            }),
        }
    }
}
