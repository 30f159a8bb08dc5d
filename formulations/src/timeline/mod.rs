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
//!   simulation equals it when the stages are balanced and may end earlier otherwise (the
//!   timeline states both).
//!
//! Every backward is split into its parts: waiting for swapped tensors, recomputation
//! (DawnPiper's `recompute` and the forward of checkpointed layers again), the backward itself
//! and, in an asynchronous pipeline, the replicas' gradient synchronisation. Memory per GPU:
//! model states, buffers and the calibration's reserve all along, plus the stored activations of
//! every micro-batch between the start of its forward and the end of its backward, plus a
//! checkpointed stage's transient during its backward.

pub mod trace;

use crate::cost::{cut_costs, stage_costs, CutCost, StageCost};
use crate::error::InputError;
use crate::evaluate::one_f_one_b_star_pattern;
use crate::instance::{Instance, ScheduleKind};
use crate::plan::{OpKind, Plan, Schedule};
use crate::simulate::timed_ops;
use std::collections::{BTreeMap, BinaryHeap};

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
            asynchronous(inst, plan, &costs, &pattern, periods)
        }
        Schedule::OneFOneB { micro_batches, .. } | Schedule::Gpipe { micro_batches, .. } => {
            let m = micro_batches.unwrap_or(inst.micro_batches());
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

fn asynchronous(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    pattern: &crate::plan::Pattern,
    periods: usize,
) -> Timeline {
    let ops = timed_ops(inst, plan, pattern);
    let t = pattern.period;
    let warm = ops.iter().map(|o| o.shift).max().unwrap_or(0).max(0) as usize;
    let total = warm + periods.max(1);
    let mut events = Vec::new();
    for k in 0..total as i64 {
        for o in &ops {
            let mb = k - o.shift;
            if mb < 0 {
                continue;
            }
            let start = k as f64 * t + o.start;
            let s = o.id.stage;
            let gpus = Track::Gpus(plan.stages[s].gpus.clone());
            match o.id.op {
                OpKind::F => events.push(Event {
                    kind: EventKind::Forward,
                    stage: s,
                    micro_batch: Some(mb),
                    start,
                    end: start + o.duration,
                    track: gpus,
                }),
                OpKind::B => {
                    events.extend(backward_parts(
                        &costs[s],
                        s,
                        mb,
                        start,
                        Some(costs[s].grad_sync),
                        &gpus,
                    ));
                }
                OpKind::SendF | OpKind::SendB => {
                    let (a, b) = (plan.stages[s].gpus[0], plan.stages[s + 1].gpus[0]);
                    events.push(Event {
                        kind: if o.id.op == OpKind::SendF {
                            EventKind::SendForward
                        } else {
                            EventKind::SendBackward
                        },
                        stage: s,
                        micro_batch: Some(mb),
                        start,
                        end: start + o.duration,
                        track: Track::Link(a, b),
                    })
                }
            }
        }
    }
    let end = events.iter().map(|e| e.end).fold(0.0, f64::max);
    Timeline {
        schedule: ScheduleKind::Async,
        events,
        memory: BTreeMap::new(),
        period: Some(t),
        steady_from: Some(warm as f64 * t),
        end,
    }
}

/// One operation of the synchronous simulation.
struct Op {
    kind: OpKind,
    stage: usize,
    mb: u32,
    duration: f64,
    deps: Vec<usize>,
    /// Resource: device group (position) or link (index among crossing cuts).
    on: Res,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Res {
    Group(usize),
    Link(usize),
}

fn synchronous(
    plan: &Plan,
    costs: &[StageCost],
    cuts: &[CutCost],
    kind: ScheduleKind,
    m: u32,
) -> Result<Timeline, InputError> {
    let n = plan.stages.len();
    let position = plan.positions().ok_or_else(|| {
        InputError::field(
            "plan.stages",
            "stages share GPUs: synchronous schedules need every GPU in one pipeline position",
        )
    })?;
    let npos = position.last().map_or(0, |&p| p + 1);
    let link_of: Vec<Option<usize>> = {
        let mut k = 0;
        cuts.iter()
            .map(|c| {
                c.crosses.then(|| {
                    k += 1;
                    k - 1
                })
            })
            .collect()
    };
    let links = link_of.iter().flatten().count();
    // Operation ids: (kind, stage, micro-batch) -> index.
    let mut ops: Vec<Op> = Vec::new();
    let mut index: BTreeMap<(OpKind, usize, u32), usize> = BTreeMap::new();
    for j in 0..m {
        for s in 0..n {
            for k in [OpKind::F, OpKind::B] {
                let d = if k == OpKind::F {
                    costs[s].forward
                } else {
                    costs[s].backward
                };
                index.insert((k, s, j), ops.len());
                ops.push(Op {
                    kind: k,
                    stage: s,
                    mb: j,
                    duration: d,
                    deps: Vec::new(),
                    on: Res::Group(position[s]),
                });
            }
            if let Some(l) = link_of.get(s).copied().flatten() {
                for k in [OpKind::SendF, OpKind::SendB] {
                    index.insert((k, s, j), ops.len());
                    ops.push(Op {
                        kind: k,
                        stage: s,
                        mb: j,
                        duration: cuts[s].transfer,
                        deps: Vec::new(),
                        on: Res::Link(l),
                    });
                }
            }
        }
    }
    for j in 0..m {
        for s in 0..n {
            let id = |k, st| index[&(k, st, j)];
            let crossing = |st: usize| link_of.get(st).copied().flatten().is_some();
            if s > 0 {
                let f = id(OpKind::F, s);
                let dep = if crossing(s - 1) {
                    id(OpKind::SendF, s - 1)
                } else {
                    id(OpKind::F, s - 1)
                };
                ops[f].deps.push(dep);
            }
            let b = id(OpKind::B, s);
            let dep = if s + 1 == n {
                id(OpKind::F, s)
            } else if crossing(s) {
                id(OpKind::SendB, s)
            } else {
                id(OpKind::B, s + 1)
            };
            ops[b].deps.push(dep);
            if crossing(s) {
                let sf = id(OpKind::SendF, s);
                ops[sf].deps.push(id(OpKind::F, s));
                let sb = id(OpKind::SendB, s);
                ops[sb].deps.push(id(OpKind::B, s + 1));
            }
        }
    }
    // Each group's order: forwards in stage order, backwards in reverse stage order.
    let mut queues: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); npos];
    for (p, q) in queues.iter_mut().enumerate() {
        let stages: Vec<usize> = (0..n).filter(|&s| position[s] == p).collect();
        let fwd = |j: u32, q: &mut std::collections::VecDeque<usize>| {
            for &s in &stages {
                q.push_back(index[&(OpKind::F, s, j)]);
            }
        };
        let bwd = |j: u32, q: &mut std::collections::VecDeque<usize>| {
            for &s in stages.iter().rev() {
                q.push_back(index[&(OpKind::B, s, j)]);
            }
        };
        if kind == ScheduleKind::Gpipe {
            (0..m).for_each(|j| fwd(j, q));
            (0..m).for_each(|j| bwd(j, q));
        } else {
            let warm = ((npos - p - 1) as u32).min(m);
            (0..warm).for_each(|j| fwd(j, q));
            for j in 0..m {
                if j + warm < m {
                    fwd(j + warm, q);
                }
                bwd(j, q);
            }
        }
    }
    let mut end: Vec<Option<f64>> = vec![None; ops.len()];
    let mut start_of = vec![0.0; ops.len()];
    let mut free_group = vec![0.0f64; npos];
    let mut free_link = vec![0.0f64; links];
    // Messages ready to send, per link: (ready time, op) as a min-heap.
    let mut ready: Vec<BinaryHeap<std::cmp::Reverse<(Key, usize)>>> =
        (0..links).map(|_| BinaryHeap::new()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for (i, o) in ops.iter().enumerate() {
        for &d in &o.deps {
            dependents[d].push(i);
        }
    }
    let mut done = 0;
    while done < ops.len() {
        let mut best: Option<(f64, usize)> = None;
        let consider = |start: f64, op: usize, best: &mut Option<(f64, usize)>| {
            if best.is_none_or(|(s, _)| start < s) {
                *best = Some((start, op));
            }
        };
        for (p, q) in queues.iter().enumerate() {
            if let Some(&h) = q.front() {
                if let Some(dep_end) = deps_end(&ops[h].deps, &end) {
                    consider(free_group[p].max(dep_end), h, &mut best);
                }
            }
        }
        for (l, heap) in ready.iter().enumerate() {
            if let Some(std::cmp::Reverse((Key(r), op))) = heap.peek() {
                consider(free_link[l].max(*r), *op, &mut best);
            }
        }
        let Some((start, op)) = best else {
            return Err(InputError::field(
                "plan.schedule",
                "the synchronous schedule deadlocks (no operation can start)",
            ));
        };
        let finish = start + ops[op].duration;
        match ops[op].on {
            Res::Group(p) => {
                queues[p].pop_front();
                free_group[p] = finish;
            }
            Res::Link(l) => {
                ready[l].pop();
                free_link[l] = finish;
            }
        }
        start_of[op] = start;
        end[op] = Some(finish);
        done += 1;
        for &d in &dependents[op] {
            if let Res::Link(l) = ops[d].on {
                if let Some(r) = deps_end(&ops[d].deps, &end) {
                    ready[l].push(std::cmp::Reverse((Key(r), d)));
                }
            }
        }
    }
    let mut events = Vec::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        let s = o.stage;
        let gpus = Track::Gpus(plan.stages[s].gpus.clone());
        let mb = o.mb as i64;
        let start = start_of[i];
        match o.kind {
            OpKind::F => events.push(Event {
                kind: EventKind::Forward,
                stage: s,
                micro_batch: Some(mb),
                start,
                end: start + o.duration,
                track: gpus,
            }),
            OpKind::B => events.extend(backward_parts(&costs[s], s, mb, start, None, &gpus)),
            OpKind::SendF | OpKind::SendB => events.push(Event {
                kind: if o.kind == OpKind::SendF {
                    EventKind::SendForward
                } else {
                    EventKind::SendBackward
                },
                stage: s,
                micro_batch: Some(mb),
                start,
                end: start + o.duration,
                track: Track::Link(plan.stages[s].gpus[0], plan.stages[s + 1].gpus[0]),
            }),
        }
    }
    // Gradient synchronisation of each group after its last backward.
    for (p, &last) in free_group.iter().enumerate() {
        let stages: Vec<usize> = (0..n).filter(|&s| position[s] == p).collect();
        let sync: f64 = stages.iter().map(|&s| costs[s].grad_sync).sum();
        if sync > 0.0 {
            events.push(Event {
                kind: EventKind::GradSync,
                stage: stages[0],
                micro_batch: None,
                start: last,
                end: last + sync,
                track: Track::Gpus(plan.stages[stages[0]].gpus.clone()),
            });
        }
    }
    let end = events.iter().map(|e| e.end).fold(0.0, f64::max);
    Ok(Timeline {
        schedule: kind,
        events,
        memory: BTreeMap::new(),
        period: None,
        steady_from: None,
        end,
    })
}

/// Swap-out after each forward and swap-in before each backward of a stage that swaps, on the
/// host links; the swap-in ends when the backward proper may start (after the wait).
fn swap_transfers(plan: &Plan, costs: &[StageCost], events: &[Event]) -> Vec<Event> {
    let mut out = Vec::new();
    for e in events {
        let c = &costs[e.stage];
        if c.swap_transfer <= 0.0 || e.micro_batch.is_none() {
            continue;
        }
        let host = Track::Host(plan.stages[e.stage].gpus.clone());
        let (kind, start) = match e.kind {
            EventKind::Forward => (EventKind::SwapOut, e.end),
            // The first part of a backward: the wait when there is one, else the rest.
            EventKind::Swap => (EventKind::SwapIn, e.end - c.swap_transfer),
            EventKind::Recompute | EventKind::Backward
                if c.swap_stall <= 0.0
                    && (e.kind == EventKind::Recompute || c.recompute + c.reforward <= 0.0) =>
            {
                (EventKind::SwapIn, e.start - c.swap_transfer)
            }
            _ => continue,
        };
        out.push(Event {
            kind,
            stage: e.stage,
            micro_batch: e.micro_batch,
            start,
            end: start + c.swap_transfer,
            track: host.clone(),
        });
    }
    out
}

/// Totally ordered time for the heaps (times are finite).
#[derive(Debug, Clone, Copy)]
struct Key(f64);
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn deps_end(deps: &[usize], end: &[Option<f64>]) -> Option<f64> {
    deps.iter()
        .try_fold(0.0f64, |acc, &d| end[d].map(|e| acc.max(e)))
}

/// Memory per GPU over time from the events (see the module docs).
fn memory(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    events: &[Event],
    end: f64,
) -> BTreeMap<u32, Vec<(f64, f64)>> {
    let reserved = inst.calibration().reserved_memory;
    let mut base: BTreeMap<u32, f64> = BTreeMap::new();
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            *base.entry(g).or_insert(reserved) += costs[s].states + costs[s].buffers;
        }
    }
    // (time, order, gpu, delta): at equal times releases come before allocations.
    let mut deltas: Vec<(f64, u8, u32, f64)> = Vec::new();
    // Activations: from the forward's start to the end of the backward's last part.
    let mut life: BTreeMap<(usize, i64), (f64, f64)> = BTreeMap::new();
    for e in events {
        let (Some(mb), Track::Gpus(_)) = (e.micro_batch, &e.track) else {
            continue;
        };
        let entry = life
            .entry((e.stage, mb))
            .or_insert((f64::INFINITY, f64::NEG_INFINITY));
        match e.kind {
            EventKind::Forward => entry.0 = entry.0.min(e.start),
            EventKind::Swap | EventKind::Recompute | EventKind::Backward | EventKind::GradSync => {
                entry.1 = entry.1.max(e.end)
            }
            _ => {}
        }
        if e.kind == EventKind::Backward && costs[e.stage].transient > 0.0 {
            for &g in &plan.stages[e.stage].gpus {
                deltas.push((e.start, 1, g, costs[e.stage].transient));
                deltas.push((e.end, 0, g, -costs[e.stage].transient));
            }
        }
    }
    for (&(s, _), &(from, to)) in &life {
        if !from.is_finite() {
            continue;
        }
        // A micro-batch whose backward lies beyond the window stays stored until its end.
        let to = if to.is_finite() { to } else { end };
        for &g in &plan.stages[s].gpus {
            deltas.push((from, 1, g, costs[s].act_per_mb));
            deltas.push((to, 0, g, -costs[s].act_per_mb));
        }
    }
    // A release and an allocation computed at the same instant by different sums of durations
    // may differ by rounding: within a relative 1e-9 they count as simultaneous (release first,
    // as the simulator counts micro-batches in flight).
    let tol = 1e-9 * end.max(1.0);
    for d in deltas.iter_mut().filter(|d| d.1 == 0) {
        d.0 -= tol;
    }
    deltas.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for d in deltas.iter_mut().filter(|d| d.1 == 0) {
        d.0 = (d.0 + tol).max(0.0);
    }
    let mut out: BTreeMap<u32, Vec<(f64, f64)>> =
        base.iter().map(|(&g, &b)| (g, vec![(0.0, b)])).collect();
    for (t, _, g, d) in deltas {
        let steps = out.get_mut(&g).expect("a GPU of the plan");
        let v = steps.last().map_or(0.0, |s| s.1) + d;
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = v,
            _ => steps.push((t, v)),
        }
    }
    out
}
