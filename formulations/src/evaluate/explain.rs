//! Why a plan's figures are what they are: per stage the binding constraint and by how much,
//! and what sets the period or iteration time; and, for an instance without feasible plans, a
//! certificate (`docs/evaluator.md`, "Explanations").

use super::breakdown::{memory_breakdown, MemoryBreakdown};
use super::{pipeline_resources, Evaluation};
use crate::cost::{cut_costs, stage_costs, StageCost};
use crate::instance::{Instance, ScheduleKind};
use crate::memory_limit;
use crate::plan::Plan;
use crate::units::{fmt_bytes, fmt_ms};
use serde::Serialize;

/// What limits one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageExplanation {
    /// Stage index.
    pub stage: usize,
    /// Compute per micro-batch (forward + backward, ms), tensor-parallel all-reduces,
    /// recomputation, swap waits and ZeRO's per-micro-batch gathers and reductions included.
    pub compute_ms: f64,
    /// Of which recomputation and waiting for swapped tensors (ms).
    pub recompute_and_swap_ms: f64,
    /// Point-to-point transfers of its cuts per micro-batch (ms, both directions).
    pub communication_ms: f64,
    /// Data-parallel communication once per weight update (ms; [`StageCost::grad_sync`]).
    pub grad_sync_ms: f64,
    /// Its load as a pipeline resource (ms per micro-batch).
    pub load_ms: f64,
    /// The largest load of the pipeline (ms per micro-batch).
    pub bottleneck_ms: f64,
    /// Memory of its busiest GPU, by part.
    pub memory: MemoryBreakdown,
    /// GPU memory.
    pub memory_limit: f64,
    /// `time` when the stage is the pipeline's bottleneck, `memory` when its busiest GPU is at
    /// (or over) its memory, `none` otherwise.
    pub binding: &'static str,
    /// One sentence per finding.
    pub findings: Vec<String>,
}

/// A plan explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// Per stage.
    pub stages: Vec<StageExplanation>,
    /// What sets the period or the iteration time.
    pub why: Vec<String>,
}

/// A GPU this full (of its memory) counts as memory-bound.
const MEMORY_BOUND: f64 = 0.97;

/// Explains `plan` on `inst`, given its evaluation `ev`.
pub fn explain(inst: &Instance, plan: &Plan, ev: &Evaluation) -> Explanation {
    let (inst, plan) = super::judged(inst, plan);
    let plan = &plan;
    let kind = plan.schedule.kind();
    let chain = inst.chain();
    let costs = stage_costs(&inst, &chain, plan);
    let cuts = cut_costs(&inst, &chain, plan);
    let (resources, of_stage) = pipeline_resources(&costs, &cuts, kind);
    let loads: Vec<f64> = resources.iter().map(|r| r.load()).collect();
    let bottleneck = loads.iter().copied().fold(0.0, f64::max);
    let memory = memory_breakdown(&inst, plan, ev);
    let n = plan.stages.len();
    let stages = plan
        .stages
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let comm: f64 = [s.checked_sub(1), (s + 1 < n).then_some(s)]
                .into_iter()
                .flatten()
                .map(|k| 2.0 * (cuts[k].transfer + cuts[k].blocking))
                .sum();
            let busiest = st
                .gpus
                .iter()
                .filter_map(|g| memory.iter().find(|b| b.gpu == *g))
                .fold(None::<&MemoryBreakdown>, |best, b| match best {
                    Some(x) if x.total() >= b.total() => Some(x),
                    _ => Some(b),
                })
                .cloned()
                .expect("a stage has GPUs");
            let load = Load {
                load: loads[of_stage[s]],
                bottleneck,
                comm,
            };
            explain_stage(s, &costs[s], load, busiest, ev)
        })
        .collect();
    let why = why(kind, ev, &loads, bottleneck, &costs);
    Explanation { stages, why }
}

/// A stage's load as a pipeline resource, the pipeline's largest, and its cuts' transfers
/// (ms per micro-batch).
struct Load {
    load: f64,
    bottleneck: f64,
    comm: f64,
}

/// What limits stage `s` of cost `c`, whose busiest GPU is `busiest`.
fn explain_stage(
    s: usize,
    c: &StageCost,
    Load {
        load,
        bottleneck,
        comm,
    }: Load,
    busiest: MemoryBreakdown,
    ev: &Evaluation,
) -> StageExplanation {
    let used = busiest.total() / ev.memory_limit;
    let mut findings = Vec::new();
    let time_bound = load >= bottleneck * (1.0 - 1e-9) && bottleneck > 0.0;
    if time_bound {
        findings.push(format!(
            "bottleneck: its load {} per micro-batch sets the pace",
            fmt_ms(load)
        ));
    } else if bottleneck > 0.0 {
        findings.push(format!(
            "slack {} per micro-batch ({:.0}% below the bottleneck {})",
            fmt_ms(bottleneck - load),
            100.0 * (1.0 - load / bottleneck),
            fmt_ms(bottleneck)
        ));
    }
    let in_flight = ev.in_flight.get(s).copied().unwrap_or(0);
    findings.push(memory_finding(&busiest, ev, used, in_flight, c.act_per_mb));
    let overheads = c.recompute + c.reforward + c.swap_stall;
    let mut time = format!(
        "time: compute {} per micro-batch",
        fmt_ms(c.forward + c.backward)
    );
    if overheads > 0.0 {
        time.push_str(&format!(
            ", of which recomputation {} and swap waits {}",
            fmt_ms(c.recompute + c.reforward),
            fmt_ms(c.swap_stall)
        ));
    }
    if c.zero_comm > 0.0 {
        time.push_str(&format!(
            "{} ZeRO's gathers and reductions {}",
            if overheads > 0.0 {
                ", and"
            } else {
                ", of which"
            },
            fmt_ms(c.zero_comm)
        ));
    }
    findings.push(time);
    if comm > 0.0 {
        findings.push(format!(
            "communication: {} per micro-batch over its cuts ({:.0}% of its compute)",
            fmt_ms(comm),
            100.0 * comm / (c.forward + c.backward).max(1e-12)
        ));
    }
    let binding = if used >= MEMORY_BOUND {
        if !memory_limit::fits(busiest.total(), ev.memory_limit) {
            findings.push(format!(
                "memory: over the limit by {}",
                fmt_bytes(busiest.total() - ev.memory_limit)
            ));
        } else {
            findings.push(format!(
                "memory: {} left",
                fmt_bytes(ev.memory_limit - busiest.total())
            ));
        }
        "memory"
    } else if time_bound {
        "time"
    } else {
        "none"
    };
    StageExplanation {
        stage: s,
        compute_ms: c.forward + c.backward,
        recompute_and_swap_ms: overheads,
        communication_ms: comm,
        grad_sync_ms: c.grad_sync,
        load_ms: load,
        bottleneck_ms: bottleneck,
        memory: busiest,
        memory_limit: ev.memory_limit,
        binding,
        findings,
    }
}

/// The busiest GPU's memory by part, `used` = its share of the limit.
fn memory_finding(
    busiest: &MemoryBreakdown,
    ev: &Evaluation,
    used: f64,
    in_flight: u32,
    act_per_mb: f64,
) -> String {
    let batches = if in_flight == 1 {
        "micro-batch"
    } else {
        "micro-batches"
    };
    format!(
        "GPU {} holds {} of {} ({:.0}%): states {} (weights {}, gradients {}, optimizer {}), \
         activations {} ({in_flight} {batches} in flight x {}), buffers {}, transient {}, \
         reserved {}",
        busiest.gpu,
        fmt_bytes(busiest.total()),
        fmt_bytes(ev.memory_limit),
        100.0 * used,
        fmt_bytes(busiest.weights + busiest.gradients + busiest.optimizer),
        fmt_bytes(busiest.weights),
        fmt_bytes(busiest.gradients),
        fmt_bytes(busiest.optimizer),
        fmt_bytes(busiest.activations),
        fmt_bytes(act_per_mb),
        fmt_bytes(busiest.buffers),
        fmt_bytes(busiest.transient),
        fmt_bytes(busiest.reserved),
    )
}

fn why(
    kind: ScheduleKind,
    ev: &Evaluation,
    loads: &[f64],
    bottleneck: f64,
    costs: &[crate::cost::StageCost],
) -> Vec<String> {
    let mut out = Vec::new();
    match kind {
        ScheduleKind::Async => {
            let t = ev.period_ms.unwrap_or(0.0);
            if t <= bottleneck * (1.0 + 1e-9) {
                out.push(format!(
                    "period {}: the largest load of the pipeline's resources (stages and links); \
                     no periodic schedule can be faster",
                    fmt_ms(t)
                ));
            } else {
                out.push(format!(
                    "period {}: {} above the largest load {} (the plan asks for it, e.g. so that \
                     1F1B* keeps fewer micro-batches in flight and fits)",
                    fmt_ms(t),
                    fmt_ms(t - bottleneck),
                    fmt_ms(bottleneck)
                ));
            }
        }
        _ => {
            let m = ev.micro_batches.unwrap_or(1) as f64;
            let sum: f64 = loads.iter().sum();
            let sync = costs.iter().map(|c| c.grad_sync).fold(0.0, f64::max);
            let it = ev.iteration_ms.unwrap_or(0.0);
            if kind == ScheduleKind::OneFOneB {
                out.push(format!(
                    "iteration {} = (m - 1) x bottleneck {} = {} (steady state, m = {m}) + fill \
                     and drain {} (every resource once) + gradient synchronisation {}",
                    fmt_ms(it),
                    fmt_ms(bottleneck),
                    fmt_ms((m - 1.0) * bottleneck),
                    fmt_ms(sum),
                    fmt_ms(sync)
                ));
            } else {
                out.push(format!(
                    "iteration {} (GPipe: every forward, then every backward, m = {m}); \
                     gradient synchronisation {}",
                    fmt_ms(it),
                    fmt_ms(sync)
                ));
            }
        }
    }
    out.push(format!(
        "bubble {:.1}%: the share of GPU time idle over the {}",
        100.0 * ev.bubble,
        if kind == ScheduleKind::Async {
            "period"
        } else {
            "iteration"
        }
    ));
    out
}

/// Why no plan can fit: bounds that hold for every plan of the evaluator's model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Certificate {
    /// Least memory the busiest GPU needs in any plan (bytes).
    pub memory_lower_bound: f64,
    /// How [`Certificate::memory_lower_bound`] is computed.
    pub memory_formula: String,
    /// Least number of GPUs of this memory that could hold the model states.
    pub min_gpus: u64,
    /// How [`Certificate::min_gpus`] is computed.
    pub gpus_formula: String,
}

/// The certificate of `inst`: model states cannot be split finer than over all GPUs (tensor,
/// data and sharded-data parallelism divide them at best evenly), and every plan keeps at least
/// one weight version, one gradient and the optimizer state; activations only add.
pub fn certificate(inst: &Instance) -> Certificate {
    let w: f64 = inst.model.layers.iter().map(|l| l.weights).sum();
    let copies = 2.0 + inst.training.optimizer_state_factor;
    let g = inst.cluster.gpus as f64;
    let states = w * copies;
    let usable = inst.usable_memory();
    let bound = states / g + inst.calibration().reserved_memory;
    let min_gpus = if usable > 0.0 {
        (states / usable).ceil().max(1.0) as u64
    } else {
        u64::MAX
    };
    Certificate {
        memory_lower_bound: bound,
        memory_formula: format!(
            "W x (1 weight version + 1 gradient + optimizer factor {}) / GPUs + reserved = {} x {} \
             / {} + {} = {}",
            inst.training.optimizer_state_factor,
            fmt_bytes(w),
            copies,
            inst.cluster.gpus,
            fmt_bytes(inst.calibration().reserved_memory),
            fmt_bytes(bound)
        ),
        min_gpus,
        gpus_formula: format!(
            "ceil(W x {copies} / usable memory per GPU) = ceil({} / {})",
            fmt_bytes(states),
            fmt_bytes(usable)
        ),
    }
}

impl Certificate {
    /// One line for error messages.
    pub fn line(&self) -> String {
        format!(
            "certificate: the busiest GPU needs at least {} in any plan ({}); holding the model \
             states alone takes at least {} GPUs of this size ({})",
            fmt_bytes(self.memory_lower_bound),
            self.memory_formula,
            self.min_gpus,
            self.gpus_formula
        )
    }
}
