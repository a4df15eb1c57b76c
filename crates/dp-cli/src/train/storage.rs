//! `dpglm train --storage f32`: the training features held as `f32` in memory (half of
//! `f64`), every sum still in `f64` ([`dp_glm::Storage`]).
//!
//! With `--storage f32` the file is read block by block ([`dp_data::open_blocks`]); each
//! block's rows go through the per-row preprocessing in `f64` and are then narrowed toward
//! zero into the dataset ([`dp_glm::DatasetBuilder`]), so the `f64` rows are never held
//! whole: peak memory is the `f32` dataset plus one block. An `f32` file (NPY `<f4`, Parquet
//! `FLOAT`) round-trips exactly; an `f64` file is narrowed block by block. Feature ranges
//! estimated from the data (`--scale`, or the default min–max scaling of classification on a
//! file with named columns) would need the rows before the preprocessing: refused, with the
//! flags that avoid them; public scaling values (the schema's, for every feature) are used.
//!
//! # Privacy
//! Rounding each preprocessed value to `f32` is a fixed public per-row transformation made
//! before any learner sees the rows: the guarantees are unchanged, and the learners clip with
//! the norms of the stored values (see [`dp_glm::Storage`]).

use dp_data::RowBlocks;
use dp_glm::{DatasetBuilder, Storage};
use ndarray::{Array1, Array2, CowArray, Ix2};

use super::*;
use crate::cli::StorageArg;

/// Rows per block read: 2^14 (12.6 MiB of `f64` at d = 100).
const BLOCK_ROWS: usize = 1 << 14;

/// Rows per block scored by [`decision_values`].
const SCORE_ROWS: usize = 1 << 14;

/// The training data as read: whole (`f64` storage) or still to be read block by block
/// (`f32`).
pub(super) enum Raw {
    /// Read whole as `f64`.
    Loaded(LoadedData),
    /// Opened, to be read into `f32` storage after the preprocessing is fitted.
    Blocks(RowBlocks<'static>),
}

impl Raw {
    /// The number of rows, when known before reading.
    pub(super) fn n_rows(&self) -> Option<usize> {
        match self {
            Self::Loaded(d) => Some(d.x.nrows()),
            Self::Blocks(_) => None,
        }
    }

    /// The number of features.
    pub(super) fn n_features(&self) -> usize {
        match self {
            Self::Loaded(d) => d.x.ncols(),
            Self::Blocks(b) => b.n_features(),
        }
    }

    /// The features' names, when the file has them.
    pub(super) fn feature_names(&self) -> Option<Vec<String>> {
        match self {
            Self::Loaded(d) => d.feature_names.clone(),
            Self::Blocks(b) => b.feature_names().map(<[String]>::to_vec),
        }
    }

    /// The rows a scaling plan is fitted on: all of them, or none for data still to be read
    /// (whose plan must then be public: see [`check_plan`]).
    pub(super) fn for_scaling(&self) -> CowArray<'_, f64, Ix2> {
        match self {
            Self::Loaded(d) => CowArray::from(d.x.view()),
            Self::Blocks(b) => CowArray::from(Array2::zeros((0, b.n_features()))),
        }
    }

    /// The preprocessed dataset in the storage of `--storage`.
    pub(super) fn into_dataset(
        self,
        a: &TrainArgs,
        prep: &Preprocessing,
    ) -> Result<Dataset, CliError> {
        let glm = |e| data_glm_error(&a.data, e);
        match self {
            Self::Loaded(d) => prep
                .apply(d.x.view())
                .and_then(|x| Dataset::new(x, d.y))
                .map_err(glm),
            Self::Blocks(blocks) => {
                let width = blocks.n_features() + prep.extra_columns();
                let mut data = DatasetBuilder::new(width, Storage::from(a.storage));
                for block in blocks {
                    let block = block.map_err(data_error)?;
                    let x = prep.apply(block.x.view()).map_err(glm)?;
                    data.push(x.view(), block.y.view()).map_err(glm)?;
                }
                data.finish().map_err(glm)
            }
        }
    }
}

/// Reads the training data under the flags' schema ([`read`]), or with `--storage f32` opens
/// it to be read block by block.
pub(super) fn open(a: &TrainArgs, loss: Loss) -> Result<(Raw, TableSpec, Schema), CliError> {
    match a.storage {
        StorageArg::F64 => read(a, loss).map(|(d, spec, schema)| (Raw::Loaded(d), spec, schema)),
        StorageArg::F32 => {
            let schema: Schema = schema_of(a.label.as_deref(), &a.columns)?;
            let (blocks, spec) = dp_data::open_blocks(
                &a.data,
                a.format_arg.map(Format::from),
                &schema,
                task_of(loss),
                BLOCK_ROWS,
            )
            .map_err(data_error)?;
            Ok((Raw::Blocks(blocks), spec, schema))
        }
    }
}

/// Refuses `--storage f32` with `--stream` (not supported yet), and with a scaling plan that
/// estimates feature ranges from the data (they would need the raw rows before the
/// preprocessing that the `f32` rows are stored after).
pub(super) fn check_plan(a: &TrainArgs, plan: Option<&ScalingPlan>) -> Result<(), CliError> {
    if a.storage != StorageArg::F32 {
        return Ok(());
    }
    match plan {
        Some(p) if p.estimates() > 0 => Err(CliError::Usage(format!(
            "--storage f32 does not support feature ranges estimated from the data ({} \
             feature(s) without public scaling values, --scale {}): give --scale none (and \
             scale the file beforehand), or public scaling values for every feature in the \
             schema, or --storage f64",
            p.estimates() / 2,
            p.method.name()
        ))),
        _ => Ok(()),
    }
}

/// The usage error for `--stream --storage f32`.
pub(super) fn check_stream(a: &TrainArgs) -> Result<(), CliError> {
    if a.storage == StorageArg::F32 {
        return Err(CliError::Usage(
            "--stream does not support --storage f32 (the streamed fits hold one block of f64 \
             rows, never the data): leave out --storage"
                .into(),
        ));
    }
    Ok(())
}

/// The usage error for `--storage f32` on LIBSVM rows kept sparse (their CSR values are `f64`;
/// `f32` storage is for dense rows).
pub(super) fn check_sparse(a: &TrainArgs) -> Result<(), CliError> {
    if a.storage == StorageArg::F32 {
        return Err(CliError::Usage(format!(
            "--storage f32 stores dense rows, but the LIBSVM rows of --algorithm {} are kept              sparse (memory of the non-zeros only): leave out --storage",
            learner_of(a)?.name
        )));
    }
    Ok(())
}

/// The storage in the summary's first line (empty for the default `f64`).
pub(super) fn headline(a: &TrainArgs) -> String {
    match a.storage {
        StorageArg::F64 => String::new(),
        StorageArg::F32 => ", features stored as f32".into(),
    }
}

/// What the statement records as public about the storage (`None` for `f64`).
pub(super) fn assumption(a: &TrainArgs) -> Option<&'static str> {
    (a.storage == StorageArg::F32).then_some(
        "the feature storage f32: each preprocessed value rounded toward zero to f32 before \
         the learner saw it (a fixed per-row transformation; sums in f64)",
    )
}

/// The model's decision values `⟨w, x_i⟩ + b` on every row of `data`, [`SCORE_ROWS`] rows at a
/// time (an `f32` dataset is widened one block at a time, never whole).
///
/// # Errors
/// As [`LinearModel::decision_function`].
pub(super) fn decision_values(
    model: &LinearModel,
    data: &Dataset,
) -> Result<Array1<f64>, dp_glm::Error> {
    let mut z = Vec::with_capacity(data.n_samples());
    for (_, rows) in data.features().f64_blocks(SCORE_ROWS) {
        z.extend(model.decision_function(rows.view())?);
    }
    Ok(Array1::from(z))
}
