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
    let n = cache.model.len();
    let mut ends: Vec<usize> = cuts.to_vec();
    ends.push(n - 1);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(ends.iter().map(|&e| e + 1))
        .take(ends.len())
        .collect();
    let mut plans: Vec<StagePlan> = (0..ends.len())
        .map(|s| cache.get(starts[s], ends[s], s).clone())
        .collect();
    let to_plan = |plans: &[StagePlan]| Plan {
        order: None,
        stages: plans
            .iter()
            .enumerate()
            .map(|(s, sp)| Stage {
                swap: sp.swap.clone(),
                recompute: sp.recompute.clone(),
                ..Stage::single(starts[s], ends[s], s as u32)
            })
            .collect(),
        schedule: Schedule::of_kind(kind),
    };
    // Async: 1F1B* counts links as resources, so a stage may keep more than P - s micro-batches;
    // re-run MemOpt at the evaluator's count until the counts stop growing (a few rounds).
    let mut repairs = 0;
    if kind == ScheduleKind::Async {
        let mut g: Vec<u32> = (0..plans.len()).map(|s| cache.model.in_flight(s)).collect();
        for _ in 0..4 {
            let Ok(ev) = pipeplan_formulations::evaluate(inst, &to_plan(&plans)) else {
                break;
            };
            let mut changed = false;
            for s in 0..plans.len() {
                if ev.in_flight[s] > g[s] {
                    g[s] = ev.in_flight[s];
                    let (m, a) = (cache.model, cache.allowed());
                    plans[s] = memopt_g(m, starts[s], ends[s], s, g[s], a);
                    changed = true;
                    repairs += 1;
                }
            }
            if !changed {
                break;
            }
        }
    }
    let mut peaks = vec![0.0; inst.cluster.gpus as usize];
    let mut worst: f64 = 0.0;
    let mut fits = true;
    let mut overhead = 0.0;
    for (s, sp) in plans.iter().enumerate() {
        worst = worst.max(sp.time);
        fits &= sp.fits;
        overhead += sp.overhead;
        peaks[s] = sp.peak;
    }
    // Link time of every cut (activation forward + gradient back per micro-batch).
    let links: Vec<f64> = cuts
        .iter()
        .enumerate()
        .map(|(s, &p)| cache.model.comm.link_ms(p, s))
        .collect();
    let slowest = links.iter().copied().enumerate().fold(
        None,
        |acc: Option<(usize, f64)>, (s, t)| match acc {
            Some((_, u)) if u >= t => acc,
            _ => Some((s, t)),
        },
    );
    let stage_worst = worst;
    let comm = cache.comm();
    if comm == Comm::Include {
        worst = worst.max(slowest.map_or(0.0, |x| x.1));
    }
    let plan = to_plan(&plans);
    let stages = plan.stages.clone();
    stats
        .counters
        .insert("async in-flight repairs".into(), repairs as f64);
    let swaps: usize = stages.iter().map(|s| s.swap.len()).sum();
    let recs: usize = stages.iter().map(|s| s.recompute.len()).sum();
    stats
        .counters
        .insert("memopt calls".into(), cache.calls() as f64);
    stats
        .counters
        .insert("swapped tensors".into(), swaps as f64);
    stats
        .counters
        .insert("recomputed tensors".into(), recs as f64);
    let claimed = Claimed {
        objective: Some(Objective::new(
            if comm == Comm::Include {
                ObjectiveKind::MemoptStageOrLinkTime
            } else {
                ObjectiveKind::MemoptStageTime
            },
            worst,
        )),
        max_memory: Some(peaks.iter().copied().fold(0.0, f64::max)),
        peak_memory: Some(peaks),
        fits: Some(fits),
        ..Claimed::default()
    };
    let mut sol = solution(algo, inst, plan, claimed, stats);
    if cache.model.inst.extensions.contains_key("graph") {
        sol.notes.push("nodes from the graph extension".into());
    } else {
        sol.notes
            .push("no graph extension: one node per layer, derived from the chain".into());
    }
    match (comm, slowest) {
        (Comm::Include, Some((s, t))) => sol.notes.push(format!(
            "comm=include: links count in the objective; the slowest, after stage {s}, takes {} \
             per micro-batch (slowest stage {})",
            fmt_ms(t),
            fmt_ms(stage_worst)
        )),
        (_, Some((s, t))) if t > stage_worst => sol.notes.push(format!(
            "the objective ignores communication (comm={}): the link after stage {s} takes {} \
             per micro-batch (activation + gradient), more than the slowest stage's {}; the \
             evaluated period counts it (--set comm=include plans for links)",
            comm.as_str(),
            fmt_ms(t),
            fmt_ms(stage_worst)
        )),
        _ => {}
    }
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
