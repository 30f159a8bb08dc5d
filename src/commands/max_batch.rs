//! `pipeplan max-batch`: the largest batch size whose plan fits, per algorithm.

use super::Failure;
use clap::Args;

/// Options of `max-batch`.
#[derive(Debug, Args)]
pub struct MaxBatchArgs {}

/// Runs `max-batch`.
pub fn run(_a: MaxBatchArgs) -> Result<(), Failure> {
    Err(Failure::input("max-batch: not built yet"))
}
