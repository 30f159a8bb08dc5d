//! The CAPTURE / mCAP / CAPSlog family (DESIGN.md §6, `docs/capture.md`): plans that minimize the
//! predicted peak memory per GPU.
//!
//! | name | space | method | status |
//! |---|---|---|---|
//! | `capture` | hybrid (pp / dp / tp stages on nodes) | Algorithm 4: enumeration with pruning | optimal, or feasible when capped |
//! | `mcap-bf` | pipeline only | enumeration with pruning | optimal, or feasible when capped |
//! | `mcap-bo` | pipeline only | Bayesian optimization (egobox-ego: GP + expected improvement) | heuristic |
//! | `capslog-bs` | pipeline only | binary search + greedy fill | heuristic |
//! | `capslog-bs-tb` | pipeline only | the same + recursive tie-break | heuristic |
//! | `capture-exact` | hybrid (or `--set space=pipeline`) | exact DP | optimal |
//!
//! Every algorithm claims the objective [`space::OBJECTIVE`] (bytes) and the per-GPU predicted
//! memory; the harness adds the evaluator's figures. Settings (`--set`): `merge=L_m` (layer
//! merger) and `correct_1f1b=true|false` (default false, as in the paper) for all; `max_nodes=N` (default 100000) for the enumerations; `space=hybrid|pipeline`
//! for capture-exact; `initial=30`, `iterations=70`, `candidates=64` for mcap-bo (seed:
//! `--seed`). The statistics come from the `memory_profile` extension or, when it is
//! absent, from the chain (the solution's notes say so).

pub mod bo;
pub mod capslog;
pub mod enumerate;
pub mod exact;
pub mod space;

use crate::algorithm::{
    Algorithm, Family, Solution, SolveError, SolveOptions, Stats, Status, Unsupported,
};
use pipeplan_formulations::{InputError, Instance};
use space::{Choice, PlanSpace, COMMON_PARAMS};
use std::time::Instant;

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![
        Box::new(Capture),
        Box::new(McapBf),
        Box::new(McapBo),
        Box::new(CapslogBs),
        Box::new(CapslogBsTb),
        Box::new(CaptureExact),
    ]
}

/// Default node cap of the enumerations: keeps them around a second in a debug build on the
/// shipped instances (they then report `feasible`, not `optimal`).
pub const DEFAULT_MAX_NODES: u64 = 100_000;

fn supports(_inst: &Instance) -> Result<(), Unsupported> {
    // Every instance: the statistics are derived from the chain when the extension is absent.
    Ok(())
}

/// The common settings plus an algorithm's own.
fn params(own: &[&'static str]) -> Vec<&'static str> {
    COMMON_PARAMS.iter().chain(own).copied().collect()
}

fn param_u64(opts: &SolveOptions, key: &str, default: u64) -> Result<u64, SolveError> {
    match opts.params.get(key) {
        None => Ok(default),
        Some(v) => v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
            InputError::field(
                format!("--set {key}"),
                format!("expected a positive integer, found {v:?}"),
            )
            .into()
        }),
    }
}

fn no_plan(space: &PlanSpace) -> SolveError {
    SolveError::Infeasible(format!(
        "no plan places the {} layers on {} GPUs ({} per node) with the configs {}",
        space.layers,
        space.gpus,
        space.per_node,
        space
            .configs
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn run_enumeration(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
    space: PlanSpace,
) -> Result<Solution, SolveError> {
    let max_nodes = param_u64(opts, "max_nodes", DEFAULT_MAX_NODES)?;
    let limits = enumerate::Limits {
        max_nodes,
        deadline: opts.time_limit.map(|t| Instant::now() + t),
    };
    let e = enumerate::enumerate(&space, limits);
    let Some(best) = e.best else {
        if e.stopped {
            return Err(match e.timed_out {
                true => SolveError::TimeLimit(opts.time_limit.map_or(0.0, |t| t.as_secs_f64())),
                false => SolveError::Infeasible(format!(
                    "the node cap of {max_nodes} (--set max_nodes) was reached before any plan"
                )),
            });
        }
        return Err(no_plan(&space));
    };
    let mut stats = Stats::new(if e.stopped {
        Status::Feasible
    } else {
        Status::Optimal
    });
    if !e.stopped {
        stats.bound = Some(best.peak());
        stats.gap = Some(0.0);
    }
    stats.counters.insert("nodes".into(), e.nodes as f64);
    stats
        .counters
        .insert("plans visited".into(), e.plans as f64);
    let mut sol = space.solution(algo, inst, &best.choices, stats);
    if e.stopped {
        sol.notes.push(format!(
            "enumeration stopped by {} after {} nodes and {} plans: best plan found, not proven \
             optimal (capture-exact gives the optimum)",
            if e.timed_out {
                "the time limit"
            } else {
                "the node cap (--set max_nodes)"
            },
            e.nodes,
            e.plans
        ));
    }
    Ok(sol)
}

/// `capture`: CAPTURE's recommender (Algorithm 4), enumeration with pruning over the hybrid space.
pub struct Capture;

impl Algorithm for Capture {
    fn name(&self) -> &'static str {
        "capture"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "CAPTURE (Alg. 4): enumerate pp/dp/tp stage configs on nodes, prune by best peak, tie-break"
    }
    fn exact(&self) -> bool {
        true
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(self.name(), &params(&["max_nodes"]))?;
        run_enumeration(self, inst, opts, PlanSpace::hybrid(inst, opts)?)
    }
}

/// `mcap-bf`: mCAP's brute force over pipeline-only partitions.
pub struct McapBf;

impl Algorithm for McapBf {
    fn name(&self) -> &'static str {
        "mcap-bf"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "mCAP-BF: every pipeline-only partition, lowest predicted peak, tie-break"
    }
    fn exact(&self) -> bool {
        true
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(self.name(), &params(&["max_nodes"]))?;
        run_enumeration(self, inst, opts, PlanSpace::pipeline(inst, opts)?)
    }
}

/// `mcap-bo`: mCAP's Bayesian optimization over pipeline-only partitions.
pub struct McapBo;

impl Algorithm for McapBo {
    fn name(&self) -> &'static str {
        "mcap-bo"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "mCAP-BO: Bayesian optimization over per-GPU layer percentages (30 random + 70 EI points)"
    }
    fn exact(&self) -> bool {
        false
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(
            self.name(),
            &params(&["initial", "iterations", "candidates"]),
        )?;
        let space = PlanSpace::pipeline(inst, opts)?;
        let settings = bo::BoSettings {
            initial: param_u64(opts, "initial", 30)? as usize,
            iterations: match opts.params.get("iterations") {
                Some(v) if v == "0" => 0,
                _ => param_u64(opts, "iterations", 70)? as usize,
            },
            candidates: param_u64(opts, "candidates", 64)? as usize,
            seed: opts.seed,
            deadline: opts.time_limit.map(|t| Instant::now() + t),
        };
        let r = bo::optimize(&space, settings);
        let mut stats = Stats::new(Status::Heuristic);
        stats
            .counters
            .insert("evaluations".into(), r.evaluations as f64);
        let mut sol = space.solution(self, inst, &r.best.choices, stats);
        if r.timed_out {
            sol.notes.push(format!(
                "time limit reached after {} of {} evaluations",
                r.evaluations,
                settings.initial + settings.iterations
            ));
        }
        if let Some(e) = &r.error {
            sol.notes.push(format!(
                "egobox stopped with an error ({e}); best of the {} points evaluated before it",
                r.evaluations
            ));
        } else if r.termination == "SolverConverged" {
            sol.notes.push(format!(
                "egobox proposed no new point after {} evaluations",
                r.evaluations
            ));
        }
        Ok(sol)
    }
}

fn heuristic(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
    f: fn(&PlanSpace) -> (Option<Vec<Choice>>, u64),
) -> Result<Solution, SolveError> {
    opts.check_params(algo.name(), &COMMON_PARAMS)?;
    let space = PlanSpace::pipeline(inst, opts)?;
    let (plan, tries) = f(&space);
    let plan = plan.ok_or_else(|| no_plan(&space))?;
    let mut stats = Stats::new(Status::Heuristic);
    stats.counters.insert("greedy fills".into(), tries as f64);
    Ok(space.solution(algo, inst, &plan, stats))
}

/// `capslog-bs`: binary search on a memory threshold with a greedy fill.
pub struct CapslogBs;

impl Algorithm for CapslogBs {
    fn name(&self) -> &'static str {
        "capslog-bs"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "CAPSlog: binary search on a memory threshold, greedy fill (pipeline only)"
    }
    fn exact(&self) -> bool {
        false
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        heuristic(self, inst, opts, capslog::bs)
    }
}

/// `capslog-bs-tb`: [`CapslogBs`] with the recursive tie-break.
pub struct CapslogBsTb;

impl Algorithm for CapslogBsTb {
    fn name(&self) -> &'static str {
        "capslog-bs-tb"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "CAPSlog: binary search + greedy fill, recursive tie-break around the peak stage"
    }
    fn exact(&self) -> bool {
        false
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        heuristic(self, inst, opts, capslog::bs_tb)
    }
}

/// `capture-exact`: the exact DP (ours), same plan as enumeration.
pub struct CaptureExact;

impl Algorithm for CaptureExact {
    fn name(&self) -> &'static str {
        "capture-exact"
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        "exact DP over the CAPTURE (or --set space=pipeline) plan space, same plan as enumeration"
    }
    fn exact(&self) -> bool {
        true
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        supports(inst)
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(self.name(), &params(&["space"]))?;
        let space = match opts.params.get("space").map(String::as_str) {
            None | Some("hybrid") => PlanSpace::hybrid(inst, opts)?,
            Some("pipeline") => PlanSpace::pipeline(inst, opts)?,
            Some(v) => {
                return Err(InputError::field(
                    "--set space",
                    format!("expected hybrid or pipeline, found {v:?}"),
                )
                .into())
            }
        };
        let (plan, c) = exact::solve(&space);
        let plan = plan.ok_or_else(|| no_plan(&space))?;
        let mut stats = Stats::new(Status::Optimal);
        let key = space::Key::of(&space, &plan);
        stats.bound = Some(key.peak());
        stats.gap = Some(0.0);
        stats.counters.insert("dp states".into(), c.states as f64);
        stats
            .counters
            .insert("dp transitions".into(), c.transitions as f64);
        Ok(space.solution(self, inst, &plan, stats))
    }
}
