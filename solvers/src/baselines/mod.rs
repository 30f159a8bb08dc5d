//! Baselines every researcher knows, one GPU per stage, GPU s for stage s:
//!
//! - `uniform`: equal layer counts (Megatron-LM); the first `L mod P` stages get one more layer.
//! - `balanced-time`: exact min-max of stage compute time sum(forward + backward)
//!   (torchgpipe's balance by time).
//! - `balanced-params`: exact min-max of stage parameter bytes (DeepSpeed's "parameters").
//! - `balanced-memory`: exact min-max of stage memory under the evaluator's memory model with
//!   the schedule's in-flight counts (1f1b: min(P - s, m); gpipe: m; async: P - s, PipeDream's
//!   steady-state count).
//! - `ilp-balanced-time`: the min-max stage-time problem as a MILP solved by HiGHS.

mod ilp_time;
mod partitions;

pub use ilp_time::IlpBalancedTime;
pub use partitions::{BalancedMemory, BalancedParams, BalancedTime, Uniform};

use crate::algorithm::{Algorithm, Objective, ObjectiveKind};
use pipeplan_formulations::{Instance, Plan, Schedule};

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![
        Box::new(Uniform),
        Box::new(BalancedTime),
        Box::new(BalancedParams),
        Box::new(BalancedMemory),
        Box::new(IlpBalancedTime),
    ]
}

fn ends_to_plan(inst: &Instance, ends: &[usize]) -> Plan {
    Plan::contiguous(ends, Schedule::default_for(inst))
}

fn compute_objective(value: f64) -> Objective {
    Objective::new(ObjectiveKind::MaxStageCompute, value)
}
