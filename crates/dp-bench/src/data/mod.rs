//! The papers' datasets with their preprocessing recipes, and the integrity check of the
//! staged files. The file formats live in the [`dp_data`] crate ([`LoadedData`] and [`Split`]
//! are re-exported here: the loaders return them).
//!
//! - [`adult`], [`cod_rna`], [`synthetic_l`], [`synthetic_h`] (or [`PaperDataset::load`]):
//!   the datasets staged in the data directory ([`locate_data_dir`](crate::locate_data_dir)),
//!   preprocessed as `shared/data/README.md` describes, as train/test [`Split`]s.
//! - [`normalize_rows`], [`project_rows_to_ball`], [`clip_entries`]: the row-bounding steps
//!   the papers apply on top (they depend on the experiment, so the loaders do not apply them).
//! - [`verify_checksums`]: compare the staged files with the sizes and SHA-256 digests of the
//!   data README (slow-ish: it decompresses everything; the loaders never call it).
//!
//! ```no_run
//! use dp_bench::data::PaperDataset;
//!
//! let dir = dp_bench::locate_data_dir().expect("datasets staged");
//! let cod_rna = PaperDataset::CodRna.load(&dir, 0)?;
//! assert_eq!(cod_rna.train.n_features(), 9);
//! # Ok::<(), dp_bench::Error>(())
//! ```

mod checksum;
mod paper;
mod preprocess;

pub use checksum::{StagedFile, VerifiedFile, sha256_hex, staged_files, verify_checksums};
pub use dp_data::{LoadedData, Split};
pub use paper::{
    ADULT_SPLIT_SEED, COD_RNA_RADIUS, PaperDataset, adult, adult_rows, adult_split, cod_rna,
    synthetic_h, synthetic_l,
};
pub use preprocess::{clip_entries, normalize_rows, project_rows_to_ball};
