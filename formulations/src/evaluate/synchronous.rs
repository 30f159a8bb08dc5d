//! The timing of a synchronous plan (1f1b, gpipe): one resource per pipeline position and one per
//! crossing link, the iteration by the closed forms of `docs/evaluator.md`.

use super::{activations_by_gpu, Timing, ZERO_WORK};
use crate::cost::{CutCost, StageCost};
use crate::error::InputError;
use crate::instance::{Instance, ScheduleKind};
use crate::one_f_one_b_star::Resource;
use crate::plan::Plan;

/// Timing of `plan` under a synchronous schedule of `kind` with `micro_batches` (default: the
/// instance's).
pub(super) fn timing(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    cuts: &[CutCost],
    kind: ScheduleKind,
    micro_batches: Option<u32>,
) -> Result<Timing, InputError> {
    let n = plan.stages.len();
    let Some(position) = plan.positions() else {
        return Err(InputError::field(
            "plan.stages",
            "stages share GPUs: synchronous schedules need every GPU in one pipeline \
             position (stages may share a device group only when they are neighbours \
             with the same GPUs)",
        ));
    };
    // One resource per position (its segments run back to back on the same GPUs) and
    // one per crossing link, in chain order.
    let npos = position.last().map_or(0, |&p| p + 1);
    let mut sync_of = vec![0.0f64; npos];
    for (s, c) in costs.iter().enumerate() {
        sync_of[position[s]] += c.grad_sync;
    }
    let mut seq: Vec<Resource> = Vec::with_capacity(2 * npos);
    for s in 0..n {
        if s > 0 && position[s] == position[s - 1] {
            let last = seq.last_mut().expect("a resource per position");
            last.forward += costs[s].forward;
            last.backward += costs[s].backward;
        } else {
            seq.push(Resource {
                forward: costs[s].forward,
                backward: costs[s].backward,
            });
        }
        if s + 1 < n && cuts[s].crosses {
            seq.push(Resource {
                forward: cuts[s].transfer,
                backward: cuts[s].transfer,
            });
        }
    }
    let resources = seq;
    let m = micro_batches.unwrap_or(inst.micro_batches());
    let mf = m as f64;
    let sync = sync_of.iter().copied().fold(0.0, f64::max);
    let iteration = if kind == ScheduleKind::OneFOneB {
        let max = resources.iter().map(Resource::load).fold(0.0, f64::max);
        let sum: f64 = resources.iter().map(Resource::load).sum();
        (mf - 1.0) * max + sum + sync
    } else {
        let maxf = resources.iter().map(|r| r.forward).fold(0.0, f64::max);
        let maxb = resources.iter().map(|r| r.backward).fold(0.0, f64::max);
        let sumf: f64 = resources.iter().map(|r| r.forward).sum();
        let sumb: f64 = resources.iter().map(|r| r.backward).sum();
        (mf - 1.0) * (maxf + maxb) + sumf + sumb + sync
    };
    // Zero only when every operation takes 0 ms: no period to fall back on here.
    if iteration <= 0.0 || iteration.is_nan() {
        return Err(InputError::field(
            "model.layers",
            format!(
                "{ZERO_WORK}, so a synchronous iteration takes 0 ms and its throughput is \
                 undefined; the evaluator needs at least one positive time"
            ),
        ));
    }
    let in_flight: Vec<u32> = (0..n)
        .map(|s| {
            if kind == ScheduleKind::OneFOneB {
                ((npos - position[s]) as u32).min(m)
            } else {
                m
            }
        })
        .collect();
    let acts = activations_by_gpu(inst, plan, costs, &in_flight);
    let busy: f64 = (0..n)
        .map(|s| {
            plan.stages[s].gpus.len() as f64
                * (mf * (costs[s].forward + costs[s].backward) + costs[s].grad_sync)
        })
        .sum();
    Ok(Timing {
        in_flight,
        activations: acts,
        period: None,
        iteration: Some(iteration),
        micro_batches: Some(m),
        grad_sync: Some(sync),
        valid: None,
        busy,
        span: iteration,
        notes: Vec::new(),
    })
}
