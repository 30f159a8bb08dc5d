//! `dawnpiper-exhaustive`: the best partition over **every** cut position with the same MemOpt
//! per stage, to measure BiPar's gap. The objective is BiPar's: max over stages of MemOpt's
//! stage time, and with `comm=include` also over the links between stages (`comm=avoid` only
//! filters BiPar's walk, its objective is the default one). It decomposes over stages, so a DP
//! over (stage, last node) finds the optimum over all C(n-1, P-1) partitions with O(P n^2)
//! MemOpt calls (checked against plain enumeration in `solvers/tests/dawnpiper.rs`). Limited to
//! `max_nodes` nodes (default 64).

use super::bipar::describe;
use super::options::{Comm, DpOptions};
use super::stages::{build, StageCache};
use crate::algorithm::{
    Algorithm, Context, Family, Solution, SolveError, Stats, Status, Unsupported,
};
use crate::deadline::Deadline;
use crate::settings::{Param, Settings};
use pipeplan_formulations::dawnpiper::balance::Model;
use pipeplan_formulations::Instance;

/// Every cut position, same MemOpt.
pub struct Exhaustive;

/// Least max stage time over all partitions of nodes `0..n` into `p` stages and its cuts
/// (None when no partition fits). `None` for the time limit: `Err(())`.
#[allow(clippy::result_unit_err)]
#[allow(clippy::needless_range_loop)]
pub fn optimum(
    cache: &mut StageCache,
    p: usize,
    deadline: &Deadline,
) -> Result<Option<(f64, Vec<usize>)>, ()> {
    let n = cache.model.len();
    let model = cache.model;
    let include = cache.comm() == Comm::Include;
    let inf = f64::INFINITY;
    // best[s][e]: stages 0..=s cover nodes 0..=e; from[s][e]: first node of stage s.
    let mut best = vec![vec![inf; n]; p];
    let mut from = vec![vec![0usize; n]; p];
    for e in 0..n {
        let sp = cache.get(0, e, 0);
        if sp.fits {
            best[0][e] = sp.time;
        }
    }
    for s in 1..p {
        if deadline.passed() {
            return Err(());
        }
        for e in s..n {
            for a in s..=e {
                let prev = best[s - 1][a - 1];
                if prev == inf {
                    continue;
                }
                let sp = cache.get(a, e, s);
                if !sp.fits {
                    continue;
                }
                let mut v = prev.max(sp.time);
                if include {
                    // The link between stages s - 1 and s carries the cut after node a - 1.
                    v = v.max(model.comm.link_ms(a - 1, s - 1));
                }
                if v < best[s][e] {
                    best[s][e] = v;
                    from[s][e] = a;
                }
            }
        }
    }
    if best[p - 1][n - 1] == inf {
        return Ok(None);
    }
    let mut cuts = vec![0; p - 1];
    let mut e = n - 1;
    for s in (1..p).rev() {
        let a = from[s][e];
        cuts[s - 1] = a - 1;
        e = a - 1;
    }
    Ok(Some((best[p - 1][n - 1], cuts)))
}

impl Algorithm for Exhaustive {
    fn name(&self) -> &'static str {
        "dawnpiper-exhaustive"
    }

    fn family(&self) -> Family {
        Family::Dawnpiper
    }

    fn description(&self) -> &'static str {
        "DawnPiper reference: the best of every cut position with the same MemOpt (DP over \
         stages, exact for that objective); small graphs only (--set max_nodes, default 64); \
         --set schedule, memopt, comm as dawnpiper (comm=include adds links to the objective)"
    }

    fn exact(&self) -> bool {
        true
    }

    fn params(&self) -> Vec<Param> {
        let mut p = DpOptions::PARAMS.to_vec();
        p.push(DpOptions::MAX_NODES);
        p
    }

    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        self.supports_with(inst, &self.default_settings())
    }

    fn supports_with(&self, inst: &Instance, settings: &Settings) -> Result<(), Unsupported> {
        let o = DpOptions::from(inst, settings);
        if inst.num_layers() > o.max_nodes {
            return Err(Unsupported(format!(
                "the graph has {} nodes, above the exhaustive reference's limit of {} nodes \
                 (its work grows as P n^2; --set max_nodes={} lifts it; dawnpiper runs BiPar at \
                 any size)",
                inst.num_layers(),
                o.max_nodes,
                inst.num_layers()
            )));
        }
        Ok(())
    }

    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let o = DpOptions::from(inst, &ctx.settings);
        let p = ctx.stage_count(inst)?;
        let model = Model::new(inst, o.kind, p)?;
        let mut cache = StageCache::new(&model, o);
        let best = optimum(&mut cache, p, &ctx.deadline).map_err(|_| ctx.deadline.error())?;
        let Some((_, cuts)) = best else {
            return Err(SolveError::Infeasible(format!(
                "no partition into {p} stages fits {} per GPU, even with {} (schedule {})",
                pipeplan_formulations::units::fmt_bytes(inst.usable_memory()),
                describe(o),
                o.kind
            )));
        };
        let stats = Stats::new(Status::Optimal);
        Ok(build(self, inst, &mut cache, &cuts, o.kind, stats))
    }
}
