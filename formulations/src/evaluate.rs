//! The neutral evaluator: judges any plan under one documented reference model (DESIGN.md §3,
//! `docs/evaluator.md`), whatever algorithm produced it.
//!
//! - async: the explicit pattern if the plan has one, else the 1F1B* pattern of the contiguous
//!   partition at the plan's period (default: the least period the loads allow). Either way the
//!   pattern runs through the [simulator](crate::simulate), which measures the activations.
//! - 1f1b: iteration = (m-1) x max_r C_r + sum_r C_r + the slowest gradient all-reduce, with
//!   stage s (0-based, of P) keeping min(P - s, m) micro-batches.
//! - gpipe: iteration = (m-1) x max F + sum F + (m-1) x max B + sum B + all-reduce, m in flight.
//!
//! Communications between stages count as resources of the pipeline, as in MadPipe.

use crate::cost::{cut_costs, stage_costs, StageCost};
use crate::error::InputError;
use crate::instance::{Instance, ScheduleKind};
use crate::one_f_one_b_star::{one_f_one_b_star, Resource};
use crate::plan::{OpKind, Pattern, PatternOp, Plan, Schedule};
use crate::simulate::simulate;
use crate::units::fmt_bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the evaluator says of a plan. Every figure is the evaluator's own, never an algorithm's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evaluation {
    /// Schedule family evaluated.
    pub schedule: ScheduleKind,
    /// Every GPU within memory and the schedule valid.
    pub fits: bool,
    /// Memory per GPU of the cluster (bytes).
    pub memory_limit: f64,
    /// Peak memory of every GPU of the cluster, index = GPU id (0 for unused GPUs).
    pub peak_memory: Vec<f64>,
    /// Largest entry of `peak_memory`.
    pub max_memory: f64,
    /// GPU with the largest peak.
    pub max_memory_gpu: u32,
    /// Period of an asynchronous pipeline (ms per micro-batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// Iteration time of a synchronous pipeline (ms per batch of m micro-batches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// Micro-batches per iteration (synchronous schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro_batches: Option<u32>,
    /// Training throughput (samples/s).
    pub throughput: f64,
    /// Fraction of GPU time idle: 1 - busy / (GPUs used x period or iteration).
    pub bubble: f64,
    /// Micro-batches each stage keeps in flight at its peak.
    pub in_flight: Vec<u32>,
    /// Forward + backward time of each stage per micro-batch (ms, with TP and recompute).
    pub stage_time: Vec<f64>,
    /// GPUs the plan uses.
    pub gpus_used: u32,
    /// The simulator's verdict on the periodic pattern (async plans, explicit or 1F1B*).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_schedule: Option<bool>,
    /// Why the schedule is invalid, or why a GPU does not fit.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

/// Relative slack when comparing memory with the limit (rounding of byte sums).
const MEM_TOL: f64 = 1e-9;

/// Evaluates `plan` on `inst`. Fails only on a malformed plan (it does not cover the chain, names
/// missing GPUs, or needs an explicit pattern it lacks); a plan that is well-formed but does not
/// fit or has an invalid pattern is evaluated with `fits = false` and the reason in `notes`.
pub fn evaluate(inst: &Instance, plan: &Plan) -> Result<Evaluation, InputError> {
    plan.check(inst)?;
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, plan);
    let cuts = cut_costs(inst, &chain, plan);
    let kind = plan.schedule.kind();
    let n = plan.stages.len();
    let contiguous = plan.is_contiguous();
    let gpus_used = plan.gpus().len() as u32;
    let mut notes = Vec::new();
    let stage_time: Vec<f64> = costs.iter().map(|c| c.forward + c.backward).collect();
    let (resources, resource_of_stage) = pipeline_resources(&costs, &cuts, kind);
    let micro = inst.micro_batch() as f64;

    let (in_flight, activations, period, iteration, m, valid, busy_total, span) = match &plan
        .schedule
    {
        Schedule::Async { period, pattern } => {
            let pattern = match pattern {
                Some(p) => p.clone(),
                None => {
                    if !contiguous {
                        return Err(InputError::field(
                            "plan.schedule.pattern",
                            "stages share GPUs: an asynchronous plan with shared GPUs needs an \
                             explicit pattern (1F1B* is defined for contiguous allocations)",
                        ));
                    }
                    let least = resources.iter().map(Resource::load).fold(0.0, f64::max);
                    let t = period.unwrap_or(least);
                    match one_f_one_b_star(&resources, t) {
                        Ok(star) => star_to_pattern(&star, &resource_of_stage),
                        Err(r) => {
                            return Err(InputError::field(
                                "plan.schedule.period",
                                format!(
                                    "period {t} ms is below the load {:.6} ms of {}",
                                    resources[r].load(),
                                    describe_resource(r, &resource_of_stage)
                                ),
                            ))
                        }
                    }
                }
            };
            let t = pattern.period;
            let busy: f64 = (0..n)
                .map(|s| plan.stages[s].gpus.len() as f64 * resources[resource_of_stage[s]].load())
                .sum();
            match simulate(inst, plan, &pattern) {
                Ok(rep) => (
                    rep.in_flight,
                    rep.peak_activations,
                    Some(t),
                    None,
                    None,
                    Some(true),
                    busy,
                    t,
                ),
                Err(v) => {
                    notes.push(format!("invalid schedule: {v}"));
                    // Lower bound: one micro-batch in flight per stage.
                    let ones = vec![1; n];
                    let acts = activations_by_gpu(inst, plan, &costs, &ones);
                    (ones, acts, Some(t), None, None, Some(false), busy, t)
                }
            }
        }
        Schedule::OneFOneB { micro_batches } | Schedule::Gpipe { micro_batches } => {
            if !contiguous {
                return Err(InputError::field(
                    "plan.stages",
                    "stages share GPUs: synchronous schedules are evaluated for contiguous \
                     allocations only",
                ));
            }
            let m = micro_batches.unwrap_or(inst.micro_batches());
            let mf = m as f64;
            let sync = costs.iter().map(|c| c.grad_sync).fold(0.0, f64::max);
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
            let in_flight: Vec<u32> = (0..n)
                .map(|s| {
                    if kind == ScheduleKind::OneFOneB {
                        ((n - s) as u32).min(m)
                    } else {
                        m
                    }
                })
                .collect();
            let acts = activations_by_gpu(inst, plan, &costs, &in_flight);
            let busy: f64 = (0..n)
                .map(|s| {
                    plan.stages[s].gpus.len() as f64
                        * (mf * (costs[s].forward + costs[s].backward) + costs[s].grad_sync)
                })
                .sum();
            (
                in_flight,
                acts,
                None,
                Some(iteration),
                Some(m),
                None,
                busy,
                iteration,
            )
        }
    };

    // Peak memory per GPU: states + buffers + activations (+ one re-materialized layer).
    let mut peak = activations;
    let mut transient = vec![0.0f64; peak.len()];
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            peak[g as usize] += costs[s].states + costs[s].buffers;
            transient[g as usize] = transient[g as usize].max(costs[s].transient);
        }
    }
    for (p, t) in peak.iter_mut().zip(&transient) {
        *p += t;
    }
    let (max_gpu, max_memory) =
        peak.iter().enumerate().fold(
            (0, 0.0),
            |acc, (g, &v)| if v > acc.1 { (g, v) } else { acc },
        );
    let limit = inst.cluster.memory;
    let mut fits = valid != Some(false);
    for (g, &p) in peak.iter().enumerate() {
        if p > limit * (1.0 + MEM_TOL) {
            fits = false;
            notes.push(format!(
                "GPU {g} needs {} but has {}",
                fmt_bytes(p),
                fmt_bytes(limit)
            ));
        }
    }
    let samples = micro * m.unwrap_or(1) as f64;
    let throughput = if span > 0.0 {
        samples / span * 1e3
    } else {
        f64::INFINITY
    };
    let bubble = if span > 0.0 && gpus_used > 0 {
        (1.0 - busy_total / (gpus_used as f64 * span)).max(0.0)
    } else {
        0.0
    };
    Ok(Evaluation {
        schedule: kind,
        fits,
        memory_limit: limit,
        peak_memory: peak,
        max_memory,
        max_memory_gpu: max_gpu as u32,
        period_ms: period,
        iteration_ms: iteration,
        micro_batches: m,
        throughput,
        bubble,
        in_flight,
        stage_time,
        gpus_used,
        valid_schedule: valid,
        notes,
    })
}

/// The pipeline's resources in chain order: every stage, and after it the cut to the next stage
/// when that cut crosses device groups. Returns them with the resource index of each stage.
/// In an asynchronous pipeline a stage's backward includes its gradient synchronisation.
pub fn pipeline_resources(
    costs: &[StageCost],
    cuts: &[crate::cost::CutCost],
    kind: ScheduleKind,
) -> (Vec<Resource>, Vec<usize>) {
    let n = costs.len();
    let mut resources = Vec::with_capacity(2 * n);
    let mut resource_of_stage = Vec::with_capacity(n);
    for (s, c) in costs.iter().enumerate() {
        resource_of_stage.push(resources.len());
        let sync = if kind == ScheduleKind::Async {
            c.grad_sync
        } else {
            0.0
        };
        resources.push(Resource {
            forward: c.forward,
            backward: c.backward + sync,
        });
        if s + 1 < n && cuts[s].crosses {
            resources.push(Resource {
                forward: cuts[s].transfer,
                backward: cuts[s].transfer,
            });
        }
    }
    (resources, resource_of_stage)
}

fn describe_resource(r: usize, resource_of_stage: &[usize]) -> String {
    match resource_of_stage.iter().position(|&x| x == r) {
        Some(s) => format!("stage {s}"),
        None => {
            let s = resource_of_stage.iter().rposition(|&x| x < r).unwrap_or(0);
            format!("the link after stage {s}")
        }
    }
}

/// Activation bytes per GPU when stage s keeps `in_flight[s]` micro-batches.
fn activations_by_gpu(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    in_flight: &[u32],
) -> Vec<f64> {
    let mut v = vec![0.0; inst.cluster.gpus as usize];
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            v[g as usize] += in_flight[s] as f64 * costs[s].act_per_mb;
        }
    }
    v
}

/// Turns a 1F1B* pattern over the plan's resources into an explicit [`Pattern`].
/// `resource_of_stage[s]` is the resource index of stage s; the resource after it, if it is not
/// the next stage, is the cut after s.
pub fn star_to_pattern(
    star: &crate::one_f_one_b_star::StarPattern,
    resource_of_stage: &[usize],
) -> Pattern {
    let mut ops = Vec::new();
    let n = resource_of_stage.len();
    for (s, &r) in resource_of_stage.iter().enumerate() {
        ops.push(PatternOp {
            op: OpKind::F,
            stage: s,
            start: star.f_start[r],
            shift: star.f_shift[r],
        });
        ops.push(PatternOp {
            op: OpKind::B,
            stage: s,
            start: star.b_start[r],
            shift: star.b_shift[r],
        });
        let next = if s + 1 < n {
            resource_of_stage[s + 1]
        } else {
            star.group.len()
        };
        if next > r + 1 {
            let c = r + 1;
            ops.push(PatternOp {
                op: OpKind::SendF,
                stage: s,
                start: star.f_start[c],
                shift: star.f_shift[c],
            });
            ops.push(PatternOp {
                op: OpKind::SendB,
                stage: s,
                start: star.b_start[c],
                shift: star.b_shift[c],
            });
        }
    }
    Pattern {
        period: star.period,
        ops,
    }
}

/// The 1F1B* pattern of a contiguous async plan at period `t` (default: the least period).
/// Fails when the plan shares GPUs or a resource's load exceeds `t`.
pub fn one_f_one_b_star_pattern(
    inst: &Instance,
    plan: &Plan,
    t: Option<f64>,
) -> Result<Pattern, InputError> {
    let mut p = plan.clone();
    p.schedule = Schedule::Async {
        period: t,
        pattern: None,
    };
    if !p.is_contiguous() {
        return Err(InputError::field(
            "plan.stages",
            "stages share GPUs: 1F1B* is defined for contiguous allocations",
        ));
    }
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, &p);
    let cuts = cut_costs(inst, &chain, &p);
    let (resources, resource_of_stage) = pipeline_resources(&costs, &cuts, ScheduleKind::Async);
    let least = resources.iter().map(Resource::load).fold(0.0, f64::max);
    let t = t.unwrap_or(least);
    let star = one_f_one_b_star(&resources, t).map_err(|r| {
        InputError::field(
            "period",
            format!(
                "{t} ms is below the load {:.6} ms of {}",
                resources[r].load(),
                describe_resource(r, &resource_of_stage)
            ),
        )
    })?;
    Ok(star_to_pattern(&star, &resource_of_stage))
}
