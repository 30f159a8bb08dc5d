//! The grammar of `pipeplan sweep` (clap derive): `run`, `slurm`, `merge`, `report`, `diff`, and
//! the hidden `run-one` that each run's process executes.

use crate::args::TimeLimit;
use crate::cli::{CalibrationArgs, OutputArgs};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `pipeplan sweep` subcommands.
#[derive(Debug, Subcommand)]
pub enum Sweep {
    /// Make every (instance, algorithm, settings, seed, repeat) run, each in its own process,
    /// storing each in a SQLite file as it finishes (`--resume` makes only the missing ones).
    Run(RunArgs),
    /// Write a Slurm job-array script whose tasks each run one shard of the sweep into their
    /// own store, and print how to merge them.
    Slurm(SlurmArgs),
    /// Merge stores (shards) into one; the same run with different results is an error.
    Merge(MergeArgs),
    /// Summarise a store per algorithm: share solved and fitting, gap to the best-known value,
    /// shifted geometric mean time, performance profiles.
    Report(ReportArgs),
    /// Compare two stores run by run (every column but timings, memory and version); exit
    /// code 1 when they differ.
    Diff(DiffArgs),
    /// One run, as the sweep's child process (prints one JSON line).
    #[command(hide = true)]
    RunOne(RunOneArgs),
}

/// What a sweep runs (shared by `run` and `slurm`).
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Suite folders (with `manifest.jsonl`; every member's hash is checked first) and instance
    /// files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Comma-separated algorithm names (repeatable).
    #[arg(
        long,
        short,
        visible_alias = "algo",
        value_delimiter = ',',
        required = true
    )]
    pub algos: Vec<String>,
    /// Algorithm-specific setting KEY=VALUE (repeatable), for the listed algorithms that take
    /// KEY; a key none of them takes is an error.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::args::key_value)]
    pub set: Vec<(String, String)>,
    /// Runs per (instance, algorithm, settings, seed).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Seeds, comma-separated: every run is made once per seed.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub seed: Vec<u64>,
    /// Time limit of every solve, in seconds (or with a unit: 500ms, 2min); `none` for no limit.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = crate::args::time_limit)]
    pub time_limit: TimeLimit,
    /// The store (SQLite file; created when missing).
    #[arg(long, value_name = "FILE")]
    pub store: PathBuf,
    /// Every instance under this calibration; it becomes part of the instance's identity (its
    /// hash), so calibrated and reference runs never mix in a store.
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// `pipeplan sweep run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Make only the runs the store lacks (without it, a store holding any run of this sweep is
    /// an error: nothing is overwritten).
    #[arg(long)]
    pub resume: bool,
    /// Make only shard K of N (0 <= K < N; by a hash of each run's key). Default: the Slurm
    /// array task's (SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT), else every run.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Runs at a time (default: the number of cores).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `pipeplan sweep slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Write the batch script here (`-`: standard output).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Array tasks (shards); default: one per 200 runs, at most 1000.
    #[arg(long)]
    pub array_size: Option<u64>,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit of each task, in Slurm's format (e.g. 2:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// CPUs of each task; also its runs at a time.
    #[arg(long, default_value_t = 1)]
    pub cpus_per_task: u32,
    /// Job name (also names the task logs, beside the store).
    #[arg(long, default_value = "pipeplan-sweep")]
    pub job_name: String,
}

/// `pipeplan sweep merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Stores to merge.
    #[arg(required = true)]
    pub stores: Vec<PathBuf>,
    /// The merged store (written atomically; when it exists its runs are kept and merged too).
    #[arg(long, short)]
    pub output: PathBuf,
}

/// `pipeplan sweep report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The store.
    pub store: PathBuf,
    /// The suite whose `best-known.json` gaps refer to (and `--update-best-known` updates).
    #[arg(long, value_name = "DIR", conflicts_with = "best_known")]
    pub suite: Option<PathBuf>,
    /// A best-known file gaps refer to (default: the best value in the store).
    #[arg(long, value_name = "FILE")]
    pub best_known: Option<PathBuf>,
    /// Fold the store's values into the best-known file (of `--suite` or `--best-known`).
    #[arg(long)]
    pub update_best_known: bool,
    /// Also write a self-contained HTML report (tables, performance-profile charts).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the performance profiles as an SVG chart.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write the performance profiles' data as CSV (metric, configuration, tau, share).
    #[arg(long, value_name = "FILE")]
    pub profile_csv: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `pipeplan sweep diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// First store.
    pub first: PathBuf,
    /// Second store.
    pub second: PathBuf,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `pipeplan sweep run-one` (internal).
#[derive(Debug, Args)]
pub struct RunOneArgs {
    /// Instance file.
    #[arg(long)]
    pub instance: PathBuf,
    /// The hash the sweep planned with.
    #[arg(long)]
    pub hash: String,
    /// Algorithm.
    #[arg(long)]
    pub algo: String,
    /// Seed.
    #[arg(long)]
    pub seed: u64,
    /// Time limit.
    #[arg(long, value_parser = crate::args::time_limit)]
    pub time_limit: TimeLimit,
    /// Settings.
    #[arg(long = "set", value_parser = crate::args::key_value)]
    pub set: Vec<(String, String)>,
    /// The sweep's calibration.
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}
