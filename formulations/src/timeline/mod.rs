//! A plan's schedule as concrete operations over time, with each GPU's memory: what `trace`
//! writes and `plot` draws (`docs/evaluator.md`, "Timelines").
//!
//! - **Asynchronous plans**: the simulator's periodic pattern (the plan's own, or 1F1B* at its
//!   period) unrolled from micro-batch 0 over the warm-up and `periods` further periods.
//! - **Synchronous plans** (1F1B, GPipe): one iteration by discrete-event simulation. Each device
//!   group runs its operations in the schedule's order (1F1B: Megatron's warm-up of `positions -
//!   position - 1` forwards, then one forward and one backward alternately, then the remaining
//!   backwards; GPipe: every forward, then every backward), each waiting for its inputs; a link
//!   sends in the order its messages become ready; after its last backward a group synchronises
//!   its gradients. The closed form the evaluator reports is `(m - 1) max + sum + sync`; the
//!   simulation equals it for balanced stages without transfers, may end earlier when the stages
//!   are unbalanced, and later when transfers lie on 1F1B's cycle of in-flight micro-batches,
//!   which the closed form counts once (`docs/evaluator.md`, "Known limitations"; `trace`
//!   records both).
//!
//! Every backward is split into its parts: waiting for swapped tensors, recomputation
//! (DawnPiper's `recompute` and the forward of checkpointed layers again), the backward itself
//! and, in an asynchronous pipeline, the replicas' gradient synchronisation. Memory per GPU:
//! model states, buffers and the calibration's reserve all along, plus the stored activations of
//! every micro-batch between the start of its forward and the end of its backward, plus a
//! checkpointed stage's transient during its backward.

mod asynchronous;
mod host;
mod memory;
mod synchronous;
pub mod trace;

use crate::cost::{cut_costs, stage_costs, StageCost};
use crate::error::InputError;
use crate::evaluate::one_f_one_b_star_pattern;
use crate::instance::{Instance, ScheduleKind};
use crate::plan::{OpKind, Plan, Schedule};
use asynchronous::asynchronous;
use host::swap_transfers;
use memory::memory;
use std::collections::BTreeMap;
use synchronous::synchronous;

/// What an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// Forward of a stage.
    Forward,
    /// Waiting for swapped tensors to come back before the backward.
    Swap,
    /// Swapped tensors copied to host memory after the forward (host link).
    SwapOut,
    /// Swapped tensors copied back before the backward (host link).
    SwapIn,
    /// Recomputation before the backward.
    Recompute,
    /// Backward of a stage.
    Backward,
    /// Gradient synchronisation across data-parallel replicas.
    GradSync,
    /// Activation sent to the next stage.
    SendForward,
    /// Gradient sent to the previous stage.
    SendBackward,
}

impl EventKind {
    /// Short name used in traces and charts.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Forward => "forward",
            EventKind::Swap => "swap wait",
            EventKind::SwapOut => "swap out",
            EventKind::SwapIn => "swap in",
            EventKind::Recompute => "recompute",
            EventKind::Backward => "backward",
            EventKind::GradSync => "grad sync",
            EventKind::SendForward => "send activation",
            EventKind::SendBackward => "send gradient",
        }
    }
}

/// Where an event runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Track {
    /// On every GPU of a stage's device group.
    Gpus(Vec<u32>),
    /// On the link between two device groups (first GPU of each).
    Link(u32, u32),
    /// On the host links (PCIe) of a stage's GPUs.
    Host(Vec<u32>),
}

/// One operation of one micro-batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// What it is.
    pub kind: EventKind,
    /// Stage (for sends: the stage before the cut; for a synchronous gradient synchronisation:
    /// the group's first stage).
    pub stage: usize,
    /// Micro-batch (none for a synchronous gradient synchronisation).
    pub micro_batch: Option<i64>,
    /// Start (ms).
    pub start: f64,
    /// End (ms).
    pub end: f64,
    /// Where it runs.
    pub track: Track,
}

/// The schedule over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Schedule family.
    pub schedule: ScheduleKind,
    /// Events in start order.
    pub events: Vec<Event>,
    /// Memory of every GPU the plan uses: `(time ms, bytes)` steps, the value holding until the
    /// next step.
    pub memory: BTreeMap<u32, Vec<(f64, f64)>>,
    /// Period of an asynchronous plan (ms).
    pub period: Option<f64>,
    /// End of the warm-up of an asynchronous plan: from here on every period repeats (ms).
    pub steady_from: Option<f64>,
    /// End of the last event (ms).
    pub end: f64,
}

impl Timeline {
    /// The links that carry a transfer, `(from, to)` GPUs, sorted.
    pub fn links(&self) -> Vec<(u32, u32)> {
        let mut links: Vec<(u32, u32)> = self
            .events
            .iter()
            .filter_map(|e| match e.track {
                Track::Link(a, b) => Some((a, b)),
                Track::Gpus(_) | Track::Host(_) => None,
            })
            .collect();
        links.sort_unstable();
        links.dedup();
        links
    }

    /// The GPUs whose host link (PCIe) carries a swap, sorted.
    pub fn host_gpus(&self) -> Vec<u32> {
        let mut gpus: Vec<u32> = self
            .events
            .iter()
            .filter_map(|e| match &e.track {
                Track::Host(g) => Some(g.clone()),
                Track::Gpus(_) | Track::Link(..) => None,
            })
            .flatten()
            .collect();
        gpus.sort_unstable();
        gpus.dedup();
        gpus
    }
}

/// The most operations (forwards, backwards, a pattern's transfers) a timeline unrolls. Each
/// takes a few kilobytes with its events and memory samples; a pattern whose shifts ask for a
/// warm-up of millions of periods, or an iteration of millions of micro-batches, would exhaust
/// memory, and no trace viewer opens the result.
pub const MAX_OPERATIONS: u64 = 1_000_000;

fn too_large(field: &str, ops: u64, why: &str) -> InputError {
    InputError::field(
        field,
        format!(
            "the timeline would unroll {ops} operations ({why}), more than the \
             {MAX_OPERATIONS} a timeline holds"
        ),
    )
}

/// Refuses a pattern unrolled over its warm-up (its largest shift, in periods) and `periods`
/// more that exceeds [`MAX_OPERATIONS`], naming the shift or `periods`, whichever asks more.
fn check_async_size(pattern: &crate::plan::Pattern, periods: usize) -> Result<(), InputError> {
    let (at, warm) = pattern
        .ops
        .iter()
        .enumerate()
        .map(|(i, o)| (i, o.shift.max(0) as u64))
        .max_by_key(|&(i, h)| (h, std::cmp::Reverse(i)))
        .unwrap_or((0, 0));
    let shown = periods.max(1) as u64;
    let ops = warm
        .saturating_add(shown)
        .saturating_mul(pattern.ops.len() as u64);
    if ops <= MAX_OPERATIONS {
        return Ok(());
    }
    let why = format!(
        "{} operations a period, over a warm-up of {warm} periods and {shown} more",
        pattern.ops.len()
    );
    let field = if warm >= shown {
        format!("plan.schedule.pattern.ops[{at}].shift")
    } else {
        "periods".to_string()
    };
    Err(too_large(&field, ops, &why))
}

/// The timeline of `plan` on `inst`; `periods` steady periods for an asynchronous plan.
pub fn timeline(inst: &Instance, plan: &Plan, periods: usize) -> Result<Timeline, InputError> {
    if plan.order.is_some() {
        // Resolving checks the order; the plan is checked in it.
        let (inst, plan) = crate::layer_order::resolve(inst, plan)?;
        return timeline(&inst, &plan, periods);
    }
    plan.check(inst)?;
    if let Some(b) = plan.schedule.micro_batch() {
        if b != inst.micro_batch() {
            return timeline(&inst.with_micro_batch(b), plan, periods);
        }
    }
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, plan);
    let cuts = cut_costs(inst, &chain, plan);
    let mut t = match &plan.schedule {
        Schedule::Async { period, pattern } => {
            let pattern = match pattern {
                Some(p) => p.clone(),
                None => one_f_one_b_star_pattern(inst, plan, *period)?,
            };
            check_async_size(&pattern, periods)?;
            asynchronous(inst, plan, &costs, &pattern, periods)
        }
        Schedule::OneFOneB { micro_batches, .. } | Schedule::Gpipe { micro_batches, .. } => {
            let m = micro_batches.unwrap_or(inst.micro_batches());
            let ops = 2 * u64::from(m) * plan.stages.len() as u64;
            if ops > MAX_OPERATIONS {
                let field = match micro_batches {
                    Some(_) => "plan.schedule.micro_batches",
                    None => "training.micro_batches",
                };
                return Err(too_large(field, ops, &format!("{m} micro-batches")));
            }
            synchronous(plan, &costs, &cuts, plan.schedule.kind(), m)?
        }
    };
    t.events.extend(swap_transfers(plan, &costs, &t.events));
    t.events.sort_by(|a, b| {
        a.start
            .total_cmp(&b.start)
            .then(a.stage.cmp(&b.stage))
            .then(a.kind.cmp(&b.kind))
    });
    t.memory = memory(inst, plan, &costs, &t.events, t.end);
    Ok(t)
}

/// The events of one operation `op` of `stage` on micro-batch `mb`, running `(start,
/// duration)`: a forward, a backward in its parts (with the replicas' gradient synchronisation
/// when `sync` is given), or a transfer to the next stage on the link between their first GPUs.
fn op_events(
    plan: &Plan,
    c: &StageCost,
    op: OpKind,
    stage: usize,
    mb: i64,
    (start, duration): (f64, f64),
    sync: Option<f64>,
) -> Vec<Event> {
    let gpus = Track::Gpus(plan.stages[stage].gpus.clone());
    let event = |kind, track| Event {
        kind,
        stage,
        micro_batch: Some(mb),
        start,
        end: start + duration,
        track,
    };
    let link = || Track::Link(plan.stages[stage].gpus[0], plan.stages[stage + 1].gpus[0]);
    match op {
        OpKind::F => vec![event(EventKind::Forward, gpus)],
        OpKind::B => backward_parts(c, stage, mb, start, sync, &gpus),
        OpKind::SendF => vec![event(EventKind::SendForward, link())],
        OpKind::SendB => vec![event(EventKind::SendBackward, link())],
    }
}

/// A backward (with its gradient synchronisation when `sync` is given) split into its parts.
fn backward_parts(
    c: &StageCost,
    stage: usize,
    mb: i64,
    start: f64,
    with_sync: Option<f64>,
    track: &Track,
) -> Vec<Event> {
    let parts = [
        (EventKind::Swap, c.swap_stall),
        (EventKind::Recompute, c.recompute + c.reforward),
        (
            EventKind::Backward,
            c.backward - c.swap_stall - c.recompute - c.reforward,
        ),
        (EventKind::GradSync, with_sync.unwrap_or(0.0)),
    ];
    let mut at = start;
    let mut out = Vec::new();
    for (kind, d) in parts {
        if d > 0.0 || kind == EventKind::Backward {
            out.push(Event {
                kind,
                stage,
                micro_batch: Some(mb),
                start: at,
                end: at + d.max(0.0),
                track: track.clone(),
            });
            at += d.max(0.0);
        }
    }
    out
}
