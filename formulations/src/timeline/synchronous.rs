//! A synchronous plan's timeline (1F1B, GPipe): one iteration by discrete-event simulation.

use super::{op_events, Event, EventKind, Timeline, Track};
use crate::cost::{CutCost, StageCost};
use crate::error::InputError;
use crate::instance::ScheduleKind;
use crate::plan::{OpKind, Plan};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

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

/// The operations of one iteration and the pipeline they run on.
struct Ops {
    ops: Vec<Op>,
    /// (kind, stage, micro-batch) -> index in `ops`.
    index: BTreeMap<(OpKind, usize, u32), usize>,
    /// The device group (pipeline position) of each stage.
    position: Vec<usize>,
    /// Device groups.
    groups: usize,
    /// Links: cuts that cross between device groups.
    links: usize,
}

pub(super) fn synchronous(
    plan: &Plan,
    costs: &[StageCost],
    cuts: &[CutCost],
    kind: ScheduleKind,
    m: u32,
) -> Result<Timeline, InputError> {
    let ops = operations(plan, costs, cuts, m)?;
    let queues = group_orders(&ops, plan.stages.len(), kind, m);
    let (start, group_free) = run(&ops, queues)?;
    let mut events = Vec::with_capacity(ops.ops.len());
    for (o, &at) in ops.ops.iter().zip(&start) {
        let s = o.stage;
        let span = (at, o.duration);
        events.extend(op_events(
            plan,
            &costs[s],
            o.kind,
            s,
            o.mb as i64,
            span,
            None,
        ));
    }
    // Gradient synchronisation of each group after its last backward.
    for (p, &last) in group_free.iter().enumerate() {
        let stages: Vec<usize> = (0..plan.stages.len())
            .filter(|&s| ops.position[s] == p)
            .collect();
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

/// Every operation of `m` micro-batches with its dependencies: forward and backward on the
/// stage's device group, and sends on the link of a crossing cut.
fn operations(
    plan: &Plan,
    costs: &[StageCost],
    cuts: &[CutCost],
    m: u32,
) -> Result<Ops, InputError> {
    let n = plan.stages.len();
    let position = plan.positions().ok_or_else(|| {
        InputError::field(
            "plan.stages",
            "stages share GPUs: synchronous schedules need every GPU in one pipeline position",
        )
    })?;
    let groups = position.last().map_or(0, |&p| p + 1);
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
    Ok(Ops {
        ops,
        index,
        position,
        groups,
        links,
    })
}

/// Each device group's order of operations: forwards in stage order, backwards in reverse
/// stage order; GPipe runs every forward first, 1F1B warms up with one forward per later group.
fn group_orders(ops: &Ops, n: usize, kind: ScheduleKind, m: u32) -> Vec<VecDeque<usize>> {
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); ops.groups];
    for (p, q) in queues.iter_mut().enumerate() {
        let stages: Vec<usize> = (0..n).filter(|&s| ops.position[s] == p).collect();
        let fwd = |j: u32, q: &mut VecDeque<usize>| {
            for &s in &stages {
                q.push_back(ops.index[&(OpKind::F, s, j)]);
            }
        };
        let bwd = |j: u32, q: &mut VecDeque<usize>| {
            for &s in stages.iter().rev() {
                q.push_back(ops.index[&(OpKind::B, s, j)]);
            }
        };
        if kind == ScheduleKind::Gpipe {
            (0..m).for_each(|j| fwd(j, q));
            (0..m).for_each(|j| bwd(j, q));
        } else {
            let warm = ((ops.groups - p - 1) as u32).min(m);
            (0..warm).for_each(|j| fwd(j, q));
            for j in 0..m {
                if j + warm < m {
                    fwd(j + warm, q);
                }
                bwd(j, q);
            }
        }
    }
    queues
}

/// The discrete-event simulation: repeatedly starts the operation that can start first, a
/// group's next in its order or a link's earliest ready message. Returns every operation's start
/// and when each group falls idle.
fn run(ops: &Ops, mut queues: Vec<VecDeque<usize>>) -> Result<(Vec<f64>, Vec<f64>), InputError> {
    let ops_n = ops.ops.len();
    let mut end: Vec<Option<f64>> = vec![None; ops_n];
    let mut start_of = vec![0.0; ops_n];
    let mut free_group = vec![0.0f64; ops.groups];
    let mut free_link = vec![0.0f64; ops.links];
    // Messages ready to send, per link: (ready time, op) as a min-heap.
    let mut ready: Vec<BinaryHeap<Reverse<(Key, usize)>>> =
        (0..ops.links).map(|_| BinaryHeap::new()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); ops_n];
    for (i, o) in ops.ops.iter().enumerate() {
        for &d in &o.deps {
            dependents[d].push(i);
        }
    }
    for _ in 0..ops_n {
        let mut best: Option<(f64, usize)> = None;
        let consider = |start: f64, op: usize, best: &mut Option<(f64, usize)>| {
            if best.is_none_or(|(s, _)| start < s) {
                *best = Some((start, op));
            }
        };
        for (p, q) in queues.iter().enumerate() {
            if let Some(&h) = q.front() {
                if let Some(dep_end) = deps_end(&ops.ops[h].deps, &end) {
                    consider(free_group[p].max(dep_end), h, &mut best);
                }
            }
        }
        for (l, heap) in ready.iter().enumerate() {
            if let Some(Reverse((Key(r), op))) = heap.peek() {
                consider(free_link[l].max(*r), *op, &mut best);
            }
        }
        let Some((start, op)) = best else {
            return Err(InputError::field(
                "plan.schedule",
                "the synchronous schedule deadlocks (no operation can start)",
            ));
        };
        let finish = start + ops.ops[op].duration;
        match ops.ops[op].on {
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
        for &d in &dependents[op] {
            if let Res::Link(l) = ops.ops[d].on {
                if let Some(r) = deps_end(&ops.ops[d].deps, &end) {
                    ready[l].push(Reverse((Key(r), d)));
                }
            }
        }
    }
    Ok((start_of, free_group))
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
