//! Sweeps: many (instance, algorithm, settings, seed, repeat) runs, each made in its own process
//! and stored in SQLite as it finishes; resumable, shardable over a Slurm job array, mergeable,
//! and summarised the way optimization papers do (`docs/sweep.md`; at scale:
//! `docs/scaling.md`).
//!
//! - [`plan`]: the runs of a sweep and their keys; [`shard`]: which runs a shard makes;
//! - [`execute`]: runs in parallel, stored one transaction per row; [`child`]: one run's
//!   process (crash isolation, CPU time, peak memory);
//! - [`store`] and [`row`]: the SQLite file and its columns; [`merge`] and [`diff`]: several
//!   stores;
//! - [`report`]: summaries and performance profiles; [`slurm`]: the job-array script.

pub mod child;
pub mod diff;
pub mod execute;
pub mod merge;
pub mod plan;
pub mod report;
pub mod row;
pub mod shard;
pub mod slurm;
pub mod store;

use crate::suite::SuiteError;

/// Why a sweep command cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A bad option or input file.
    #[error("{0}")]
    Input(String),
    /// A suite that cannot be used (e.g. a member whose hash does not match its manifest).
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// A store that cannot be used.
    #[error("{path}: {message}")]
    Store {
        /// The store's file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Stores holding the same run with different results.
    #[error("{0}")]
    Conflict(String),
}
