//! `pipeplan profile-plan`: the profiling runs a CAPTURE / mCAP / CAPSlog user must measure.

use super::Failure;
use clap::Args;

/// Options of `profile-plan`.
#[derive(Debug, Args)]
pub struct ProfilePlanArgs {}

/// Runs `profile-plan`.
pub fn run(_a: ProfilePlanArgs) -> Result<(), Failure> {
    Err(Failure::input("profile-plan: not built yet"))
}
