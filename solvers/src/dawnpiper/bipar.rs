//! `dawnpiper`: BiPar (Algorithm 1 of the paper). Split the stages `lo..=hi` at the middle
//! stage, try the cut positions between the compute-balanced and the memory-balanced ones
//! (Theorem 4.1's interval), from the compute-balanced end towards the memory-balanced end, and
//! recurse on both sides; two stages are AdjacentPartition (the same loop with single stages
//! under it), one stage is MemOpt. A loop stops at the first position whose stages need no
//! memory optimization (further positions only unbalance compute, Theorem 4.1). The result is the
//! position with the least max stage time (compute + MemOpt overhead). Sub-problems are
//! memoized by (node range, stage range), MemOpt by (node range, stage).

use super::options::{Comm, DpOptions};
use super::stages::{build, StageCache};
use crate::algorithm::{Algorithm, Context, Family, Solution, SolveError, Stats, Status};
use crate::deadline::Deadline;
use crate::settings::Param;
use pipeplan_formulations::dawnpiper::balance::{comp_mem_positions, Model};
use pipeplan_formulations::Instance;
use std::collections::HashMap;

/// DawnPiper's binary partitioning with MemOpt.
pub struct Dawnpiper;

/// Best partition of a sub-problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Sub {
    /// Max stage time (ms).
    pub time: f64,
    /// Last node of every stage but the last.
    pub cuts: Vec<usize>,
    /// Whether any stage needed swap or recompute.
    pub optimized: bool,
}

/// The BiPar search over one model.
pub struct BiPar<'c, 'm, 'a> {
    cache: &'c mut StageCache<'m, 'a>,
    memo: HashMap<(usize, usize, usize, usize), Option<Sub>>,
    deadline: &'c Deadline,
    /// Set when the deadline cut a loop short.
    pub timed_out: bool,
    /// Cut positions tried.
    pub positions: usize,
    /// Cut positions skipped by the compute lower bound.
    pub pruned: usize,
    /// Cut positions skipped for their communication (`comm=avoid`).
    pub avoided: usize,
    /// Walks redone without the communication filter because it left no fitting position.
    pub comm_fallbacks: usize,
    /// Whether to stop a walk once the compute lower bound rules out every further position
    /// (on by default; off only for the reference in the tests, which checks identical results).
    pub prune: bool,
}

impl<'c, 'm, 'a> BiPar<'c, 'm, 'a> {
    /// A search using `cache` for MemOpt.
    pub fn new(cache: &'c mut StageCache<'m, 'a>, deadline: &'c Deadline) -> Self {
        BiPar {
            cache,
            memo: HashMap::new(),
            deadline,
            timed_out: false,
            positions: 0,
            pruned: 0,
            avoided: 0,
            comm_fallbacks: 0,
            prune: true,
        }
    }

    /// Best partition of nodes `a..=b` over stages `lo..=hi` (None: no position fits).
    pub fn solve(&mut self, a: usize, b: usize, lo: usize, hi: usize) -> Option<Sub> {
        if let Some(r) = self.memo.get(&(a, b, lo, hi)) {
            return r.clone();
        }
        let r = if lo == hi {
            let sp = self.cache.get(a, b, lo);
            sp.fits.then(|| Sub {
                time: sp.time,
                cuts: vec![],
                optimized: sp.optimized(),
            })
        } else {
            self.split(a, b, lo, hi)
        };
        self.memo.insert((a, b, lo, hi), r.clone());
        r
    }

    /// AdjacentPartition when `hi = lo + 1`, else the BiPar level at the middle stage.
    fn split(&mut self, a: usize, b: usize, lo: usize, hi: usize) -> Option<Sub> {
        let mid = (lo + hi) / 2;
        let model = self.cache.model;
        let (cb, mb) = comp_mem_positions(model, a, b, lo, hi, mid);
        // Both sides keep a node per stage.
        let min = a + (mid - lo);
        let max = b - (hi - mid);
        let (cb, mb) = (cb.clamp(min, max), mb.clamp(min, max));
        if self.cache.comm() == Comm::Avoid {
            // IdentifyAndSort with appendix B.2: disregard the bytes crossing every position of
            // the window, skip positions whose remaining bytes take longer over the link than
            // the average stage compute of either side (Theorem 4.1 assumes less).
            let (w0, w1) = (cb.min(mb), cb.max(mb));
            let inevitable = model.comm.inevitable(w0, w1);
            let admissible: Vec<bool> = (w0..=w1)
                .map(|p| {
                    let t = model.comm.time_ms(model.comm.avoidable(p, inevitable), mid);
                    let left = model.compute(a, p) / (mid - lo + 1) as f64;
                    let right = model.compute(p + 1, b) / (hi - mid) as f64;
                    t < left.min(right)
                })
                .collect();
            let (best, skipped) = self.walk(a, b, lo, hi, mid, cb, mb, Some((w0, &admissible)));
            if best.is_some() || skipped == 0 {
                return best;
            }
            // No admissible position fits: the assumption fails here, walk them all.
            self.comm_fallbacks += 1;
        }
        self.walk(a, b, lo, hi, mid, cb, mb, None).0
    }

    /// The walk of one level from `cb` towards `mb`; with `filter = (w0, admissible)`, positions
    /// `p` with `!admissible[p - w0]` are skipped. Returns the best partition and the number of
    /// positions skipped.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        a: usize,
        b: usize,
        lo: usize,
        hi: usize,
        mid: usize,
        cb: usize,
        mb: usize,
        filter: Option<(usize, &[bool])>,
    ) -> (Option<Sub>, usize) {
        let model = self.cache.model;
        let include = self.cache.comm() == Comm::Include;
        let step: isize = if mb >= cb { 1 } else { -1 };
        // Lower bound of the side that grows along the walk: every stage time is at least its
        // compute (MemOpt overhead >= 0, link times >= 0), so a side of k stages takes at least
        // compute / k. It only grows with each step, so once it reaches the best time no later
        // position can win (positions win only when strictly better): the walk stops there,
        // with the same result as the full walk. The 1e-12 margin covers rounding between the
        // side's sum and its stages' own prefix-sum differences.
        let growing = |p: usize| {
            if step > 0 {
                model.compute(a, p) / (mid - lo + 1) as f64
            } else {
                model.compute(p + 1, b) / (hi - mid) as f64
            }
        };
        let mut best: Option<Sub> = None;
        let mut skipped = 0;
        let mut rho = cb as isize;
        loop {
            let p = rho as usize;
            if self.prune
                && best
                    .as_ref()
                    .is_some_and(|x| growing(p) >= x.time * (1.0 + 1e-12))
            {
                self.pruned += (p as isize - mb as isize).unsigned_abs() + 1;
                break;
            }
            let mut stop = false;
            if filter.is_some_and(|(w0, ok)| !ok[p - w0]) {
                skipped += 1;
                self.avoided += 1;
            } else {
                self.positions += 1;
                let left = self.solve(a, p, lo, mid);
                let right = self.solve(p + 1, b, mid + 1, hi);
                if let (Some(l), Some(r)) = (left, right) {
                    let optimized = l.optimized || r.optimized;
                    let mut time = l.time.max(r.time);
                    if include {
                        time = time.max(model.comm.link_ms(p, mid));
                    }
                    if best.as_ref().is_none_or(|x| time < x.time) {
                        let mut cuts = l.cuts;
                        cuts.push(p);
                        cuts.extend(r.cuts);
                        best = Some(Sub {
                            time,
                            cuts,
                            optimized,
                        });
                    }
                    // Theorem 4.1: past the first position needing no memory optimization,
                    // compute only gets less balanced. With links in the objective a later
                    // position may still send fewer bytes, so that walk goes on.
                    stop = !optimized && !include;
                }
            }
            if stop || p == mb {
                break;
            }
            if self.deadline.passed() {
                self.timed_out = true;
                if best.is_some() {
                    break;
                }
            }
            rho += step;
        }
        (best, skipped)
    }
}

impl Algorithm for Dawnpiper {
    fn name(&self) -> &'static str {
        "dawnpiper"
    }

    fn family(&self) -> Family {
        Family::Dawnpiper
    }

    fn description(&self) -> &'static str {
        "DawnPiper: binary partitioning (BiPar, Algorithm 1) between compute- and memory-balanced \
         cuts, with Capuchin-style swap/recompute (MemOpt) per stage; --stages = pipeline depth; \
         --set schedule=async|1f1b|gpipe, memopt=on|off|swap|recompute, comm=ignore|avoid|include"
    }

    fn exact(&self) -> bool {
        false
    }

    fn params(&self) -> Vec<Param> {
        DpOptions::PARAMS.to_vec()
    }

    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let o = DpOptions::from(inst, &ctx.settings);
        let p = ctx.stage_count(inst)?;
        let model = Model::new(inst, o.kind, p)?;
        let mut cache = StageCache::new(&model, o);
        let mut search = BiPar::new(&mut cache, &ctx.deadline);
        let best = search.solve(0, model.len() - 1, 0, p - 1);
        let (timed_out, positions, pruned) = (search.timed_out, search.positions, search.pruned);
        let (avoided, fallbacks) = (search.avoided, search.comm_fallbacks);
        let Some(best) = best else {
            return Err(SolveError::Infeasible(format!(
                "no cut position between the compute- and memory-balanced ones fits {} stages in \
                 {} per GPU, even with {} (schedule {})",
                p,
                pipeplan_formulations::units::fmt_bytes(inst.usable_memory()),
                describe(o),
                o.kind
            )));
        };
        let mut stats = Stats::stopped(Status::Heuristic, timed_out.then(|| ctx.deadline.stop()));
        stats
            .counters
            .insert("positions tried".into(), positions as f64);
        stats
            .counters
            .insert("positions pruned".into(), pruned as f64);
        if o.comm == Comm::Avoid {
            stats
                .counters
                .insert("positions avoided (communication)".into(), avoided as f64);
            stats.counters.insert(
                "walks without the communication filter".into(),
                fallbacks as f64,
            );
        }
        let mut sol = build(self, inst, &mut cache, &best.cuts, o.kind, stats);
        if timed_out {
            sol.notes
                .push("the time limit cut the search short: best partition so far".into());
        }
        Ok(sol)
    }
}

/// What MemOpt may do, in words.
pub fn describe(o: DpOptions) -> &'static str {
    match (o.allowed.swap, o.allowed.recompute) {
        (true, true) => "swap and recompute",
        (true, false) => "swap only",
        (false, true) => "recompute only",
        (false, false) => "no memory optimization",
    }
}
