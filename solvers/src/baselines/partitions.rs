//! The four partition baselines: equal layer counts, and the exact min-max DPs on stage compute,
//! parameters and memory.

use super::{compute_objective, ends_to_plan};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status,
};
use crate::minmax::{min_max_partition, Partition};
use pipeplan_formulations::baselines::{max_stage, StageSums};
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::Instance;

/// Equal layer counts per stage.
pub struct Uniform;

impl Algorithm for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "equal layer counts per stage (Megatron-LM); claims its max stage compute"
    }
    fn exact(&self) -> bool {
        false
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let p = ctx.stage_count(inst)?;
        let l = inst.num_layers();
        let (q, r) = (l / p, l % p);
        let mut ends = Vec::with_capacity(p);
        let mut last = 0;
        for s in 0..p {
            last += q + usize::from(s < r);
            ends.push(last - 1);
        }
        let pre = StageSums::new(inst);
        let claimed = Claimed {
            objective: Some(compute_objective(max_stage(&ends, |k, l| {
                pre.compute(k, l)
            }))),
            ..Claimed::default()
        };
        Ok(solution(
            self,
            inst,
            ends_to_plan(inst, &ends),
            claimed,
            Stats::new(Status::Heuristic),
        ))
    }
}

/// Exact min-max DP on stage compute time.
pub struct BalancedTime;

impl Algorithm for BalancedTime {
    fn name(&self) -> &'static str {
        "balanced-time"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage compute time, sum(forward + backward) (torchgpipe balance by time)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let p = ctx.stage_count(inst)?;
        let pre = StageSums::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |_, k, l| pre.compute(k, l));
        let claimed = Claimed {
            objective: Some(compute_objective(part.value)),
            ..Claimed::default()
        };
        let mut sol = proven(self, inst, &part, claimed);
        sol.stats.count("cost evaluations", part.evaluations as f64);
        Ok(sol)
    }
}

/// Exact min-max DP on stage parameter bytes.
pub struct BalancedParams;

impl Algorithm for BalancedParams {
    fn name(&self) -> &'static str {
        "balanced-params"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage parameter bytes (DeepSpeed partition_method=parameters)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let p = ctx.stage_count(inst)?;
        let pre = StageSums::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |_, k, l| pre.weights(k, l));
        let claimed = Claimed {
            objective: Some(Objective::new(
                ObjectiveKind::MaxStageParameters,
                part.value,
            )),
            ..Claimed::default()
        };
        Ok(proven(self, inst, &part, claimed))
    }
}

/// Exact min-max DP on stage memory (evaluator's model, schedule-dependent in-flight counts).
pub struct BalancedMemory;

impl Algorithm for BalancedMemory {
    fn name(&self) -> &'static str {
        "balanced-memory"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage memory (reference model; in-flight 1f1b min(P-s,m), gpipe m, async P-s)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let p = ctx.stage_count(inst)?;
        let pre = StageSums::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |s, k, l| pre.memory(inst, p, s, k, l));
        let mut peak = vec![0.0; inst.cluster.gpus as usize];
        let mut first = 0;
        for (s, &e) in part.ends.iter().enumerate() {
            peak[s] = pre.memory(inst, p, s, first, e + 1);
            first = e + 1;
        }
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::MaxStageMemory, part.value)),
            max_memory: Some(part.value),
            fits: Some(memory_limit::fits(part.value, inst.usable_memory())),
            peak_memory: Some(peak),
            ..Claimed::default()
        };
        let mut sol = proven(self, inst, &part, claimed);
        if inst.training.schedule == ScheduleKind::Async {
            sol.notes.push(
                "async in-flight counts use PipeDream's P - s; the evaluator's 1F1B* counts \
                 communications as stages and may keep more"
                    .into(),
            );
        }
        Ok(sol)
    }
}

/// The solution of an exact min-max split: proven optimal, its value the bound.
fn proven(algo: &dyn Algorithm, inst: &Instance, part: &Partition, claimed: Claimed) -> Solution {
    let mut stats = Stats::new(Status::Optimal);
    stats.bound = Some(part.value);
    stats.gap = Some(0.0);
    solution(algo, inst, ends_to_plan(inst, &part.ends), claimed, stats)
}
