//! Shared by both algorithms: memoized MemOpt per stage, and turning cut positions into a plan
//! and a solution.

use super::options::{Comm, DpOptions};
use crate::algorithm::{solution, Algorithm, Claimed, Objective, ObjectiveKind, Solution, Stats};
use pipeplan_formulations::dawnpiper::balance::Model;
use pipeplan_formulations::dawnpiper::memopt::{memopt, memopt_g, StagePlan};
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::units::fmt_ms;
use pipeplan_formulations::Instance;
use std::collections::HashMap;

/// MemOpt results per (first node, last node, micro-batches in flight), computed once each.
/// The stage index matters only through the in-flight count: the boundary buffers depend on
/// whether the stage starts at node 0 / ends at the last node, i.e. on the node range.
pub struct StageCache<'m, 'a> {
    /// The stage model.
    pub model: &'m Model<'a>,
    opts: DpOptions,
    memo: HashMap<(usize, usize, u32), StagePlan>,
}

impl<'m, 'a> StageCache<'m, 'a> {
    /// An empty cache.
    pub fn new(model: &'m Model<'a>, opts: DpOptions) -> Self {
        StageCache {
            model,
            opts,
            memo: HashMap::new(),
        }
    }

    /// MemOpt of stage `s` = nodes `a..=b`.
    pub fn get(&mut self, a: usize, b: usize, s: usize) -> &StagePlan {
        let (model, allowed) = (self.model, self.opts.allowed);
        self.memo
            .entry((a, b, model.in_flight(s)))
            .or_insert_with(|| memopt(model, a, b, s, allowed))
    }

    /// How the search treats communication.
    pub fn comm(&self) -> Comm {
        self.opts.comm
    }

    /// The actions MemOpt may use.
    pub fn allowed(&self) -> pipeplan_formulations::dawnpiper::memopt::Allowed {
        self.opts.allowed
    }

    /// Distinct MemOpt calls so far.
    pub fn calls(&self) -> usize {
        self.memo.len()
    }
}

/// The node range of every stage: stage `s` is nodes `starts[s]..=ends[s]`.
struct Ranges {
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Ranges {
    /// The ranges cut after the nodes `cuts`, over a chain of `n` nodes.
    fn new(n: usize, cuts: &[usize]) -> Self {
        let mut ends: Vec<usize> = cuts.to_vec();
        ends.push(n - 1);
        let starts = std::iter::once(0)
            .chain(ends.iter().map(|&e| e + 1))
            .take(ends.len())
            .collect();
        Ranges { starts, ends }
    }

    /// The plan of these stages with MemOpt's actions `plans`.
    fn plan(&self, plans: &[StagePlan], kind: ScheduleKind) -> Plan {
        Plan {
            order: None,
            stages: plans
                .iter()
                .enumerate()
                .map(|(s, sp)| Stage {
                    swap: sp.swap.clone(),
                    recompute: sp.recompute.clone(),
                    ..Stage::single(self.starts[s], self.ends[s], s as u32)
                })
                .collect(),
            schedule: Schedule::of_kind(kind),
        }
    }

    /// Async: 1F1B* counts links as resources, so a stage may keep more than P - s
    /// micro-batches; re-runs MemOpt at the evaluator's count until the counts stop growing (a
    /// few rounds). Returns how many stages were re-optimized.
    fn repair_in_flight(
        &self,
        inst: &Instance,
        cache: &StageCache,
        plans: &mut [StagePlan],
    ) -> usize {
        let mut repairs = 0;
        let mut g: Vec<u32> = (0..plans.len()).map(|s| cache.model.in_flight(s)).collect();
        for _ in 0..4 {
            let plan = self.plan(plans, ScheduleKind::Async);
            let Ok(ev) = pipeplan_formulations::evaluate(inst, &plan) else {
                break;
            };
            let mut changed = false;
            for s in 0..plans.len() {
                if ev.in_flight[s] > g[s] {
                    g[s] = ev.in_flight[s];
                    let (m, a) = (cache.model, cache.allowed());
                    plans[s] = memopt_g(m, self.starts[s], self.ends[s], s, g[s], a);
                    changed = true;
                    repairs += 1;
                }
            }
            if !changed {
                break;
            }
        }
        repairs
    }
}

/// The slowest link (its stage and time per micro-batch: activation forward and gradient
/// back), the first of equals; `None` without cuts.
fn slowest_link(cache: &StageCache, cuts: &[usize]) -> Option<(usize, f64)> {
    cuts.iter()
        .enumerate()
        .map(|(s, &p)| (s, cache.model.comm.link_ms(p, s)))
        .fold(None, |acc, (s, t)| match acc {
            Some((_, u)) if u >= t => acc,
            _ => Some((s, t)),
        })
}

/// The algorithm's claims: the slowest stage `stage_worst` (or link, when links count) and
/// MemOpt's peaks.
fn claimed(
    inst: &Instance,
    plans: &[StagePlan],
    stage_worst: f64,
    comm: Comm,
    link: Option<f64>,
) -> Claimed {
    let mut peaks = vec![0.0; inst.cluster.gpus as usize];
    for (s, sp) in plans.iter().enumerate() {
        peaks[s] = sp.peak;
    }
    let (kind, worst) = if comm == Comm::Include {
        let worst = stage_worst.max(link.unwrap_or(0.0));
        (ObjectiveKind::MemoptStageOrLinkTime, worst)
    } else {
        (ObjectiveKind::MemoptStageTime, stage_worst)
    };
    Claimed {
        objective: Some(Objective::new(kind, worst)),
        max_memory: Some(peaks.iter().copied().fold(0.0, f64::max)),
        peak_memory: Some(peaks),
        fits: Some(plans.iter().all(|sp| sp.fits)),
        ..Claimed::default()
    }
}

/// The solution for cut positions `cuts` (last node of every stage but the last), with the
/// MemOpt actions of every stage and the algorithm's own claims.
pub fn build(
    algo: &dyn Algorithm,
    inst: &Instance,
    cache: &mut StageCache,
    cuts: &[usize],
    kind: ScheduleKind,
    mut stats: Stats,
) -> Solution {
    let ranges = Ranges::new(cache.model.len(), cuts);
    let mut plans: Vec<StagePlan> = (0..ranges.ends.len())
        .map(|s| cache.get(ranges.starts[s], ranges.ends[s], s).clone())
        .collect();
    let repairs = if kind == ScheduleKind::Async {
        ranges.repair_in_flight(inst, cache, &mut plans)
    } else {
        0
    };
    let slowest = slowest_link(cache, cuts);
    let stage_worst = plans.iter().map(|sp| sp.time).fold(0.0, f64::max);
    let comm = cache.comm();
    let claimed = claimed(inst, &plans, stage_worst, comm, slowest.map(|x| x.1));
    let plan = ranges.plan(&plans, kind);
    let swaps: usize = plan.stages.iter().map(|s| s.swap.len()).sum();
    let recs: usize = plan.stages.iter().map(|s| s.recompute.len()).sum();
    for (name, value) in [
        ("async in-flight repairs", repairs),
        ("memopt calls", cache.calls()),
        ("swapped tensors", swaps),
        ("recomputed tensors", recs),
    ] {
        stats.counters.insert(name.into(), value as f64);
    }
    let mut sol = solution(algo, inst, plan, claimed, stats);
    if cache.model.inst.extensions.contains_key("graph") {
        sol.notes.push("nodes from the graph extension".into());
    } else {
        sol.notes
            .push("no graph extension: one node per layer, derived from the chain".into());
    }
    if let Some(note) = link_note(comm, slowest, stage_worst) {
        sol.notes.push(note);
    }
    let overhead: f64 = plans.iter().map(|sp| sp.overhead).sum();
    sol.notes.push(format!(
        "{kind} schedule; {swaps} swapped and {recs} recomputed tensors, {} of MemOpt overhead in \
         total; claimed memory assumes {} micro-batches in flight per stage ({repairs} stages re-optimized \
         at the evaluator's 1F1B* count)",
        fmt_ms(overhead),
        match kind {
            ScheduleKind::Async => "P - s (PipeDream)",
            ScheduleKind::OneFOneB => "min(P - s, m)",
            ScheduleKind::Gpipe => "m",
        }
    ));
    sol
}

/// What the plan's objective says of the slowest link: counted (`comm=include`), or ignored
/// although slower than the slowest stage.
fn link_note(comm: Comm, slowest: Option<(usize, f64)>, stage_worst: f64) -> Option<String> {
    match (comm, slowest) {
        (Comm::Include, Some((s, t))) => Some(format!(
            "comm=include: links count in the objective; the slowest, after stage {s}, takes {} \
             per micro-batch (slowest stage {})",
            fmt_ms(t),
            fmt_ms(stage_worst)
        )),
        (_, Some((s, t))) if t > stage_worst => Some(format!(
            "the objective ignores communication (comm={}): the link after stage {s} takes {} \
             per micro-batch (activation + gradient), more than the slowest stage's {}; the \
             evaluated period counts it (--set comm=include plans for links)",
            comm.as_str(),
            fmt_ms(t),
            fmt_ms(stage_worst)
        )),
        _ => None,
    }
}
