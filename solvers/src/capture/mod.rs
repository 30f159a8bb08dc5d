//! The CAPTURE / mCAP / CAPSlog family (`docs/capture.md`): plans that minimize the
//! predicted peak memory per GPU.
//!
//! | name | space | method | status |
//! |---|---|---|---|
//! | `capture` | hybrid (pp / dp / tp stages on nodes) | Algorithm 4: enumeration with pruning | optimal, or feasible when capped |
//! | `mcap-bf` | pipeline only | enumeration with pruning | optimal, or feasible when capped |
//! | `mcap-bo` | pipeline only | Bayesian optimization (egobox-gp GP + expected improvement after egobox-ego's initial design; `engine=egor`: egobox-ego's `Egor` throughout) | heuristic |
//! | `capslog-bs` | pipeline only | binary search + greedy fill | heuristic |
//! | `capslog-bs-tb` | pipeline only | the same + recursive tie-break | heuristic |
//! | `capture-exact` | hybrid (or `--set space=pipeline`) | exact DP | optimal |
//!
//! Every algorithm claims the objective [`space::OBJECTIVE`] (bytes) and the per-GPU predicted
//! memory; the harness adds the evaluator's figures. Settings (`--set`): `merge=L_m` (layer
//! merger) and `correct_1f1b=true|false` (default false, as in the paper) for all;
//! `max_nodes=N` (default 100000) for the enumerations; `space=hybrid|pipeline` for
//! capture-exact; `initial=30`, `iterations=70`, `candidates=1000` (20 with `engine=egor`),
//! `engine=gp|egor` (default gp) and `refit=1` (engine gp only) for mcap-bo (seed: `--seed`).
//! The statistics come from the `memory_profile` extension or, when it is absent, from the chain
//! (the solution's notes say so).
//!
//! The six algorithms are one type, [`CaptureAlgorithm`], whose [`Kind`] selects a row of one
//! table (name, description, exactness, own settings); `solve` dispatches on the kind.

pub mod bo;
pub mod bo_gp;
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
    Kind::ALL
        .iter()
        .map(|&k| Box::new(CaptureAlgorithm(k)) as Box<dyn Algorithm>)
        .collect()
}

/// Default node cap of the enumerations: keeps them around a second in a debug build on the
/// shipped instances (they then report `feasible`, not `optimal`).
pub const DEFAULT_MAX_NODES: u64 = 100_000;

/// Default random initial points of mcap-bo (the public mCAP code's `n_initial_points`).
pub const BO_INITIAL: u64 = 30;
/// Default guided points of mcap-bo (100 evaluations in all, as in the public mCAP code).
pub const BO_ITERATIONS: u64 = 70;
/// Default starts of mcap-bo's expected-improvement maximization per guided point with
/// `engine=egor` (egobox's own default, `EGO_DEFAULT_N_START`); the default engine scores
/// [`bo_gp::DEFAULT_CANDIDATES`] random points instead.
pub const BO_CANDIDATES: u64 = 20;

/// Which of the family's algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `capture`: CAPTURE's recommender (Algorithm 4), enumeration with pruning, hybrid space.
    Capture,
    /// `mcap-bf`: mCAP's brute force over pipeline-only partitions.
    McapBf,
    /// `mcap-bo`: mCAP's Bayesian optimization over pipeline-only partitions.
    McapBo,
    /// `capslog-bs`: binary search on a memory threshold with a greedy fill.
    CapslogBs,
    /// `capslog-bs-tb`: `capslog-bs` with the recursive tie-break.
    CapslogBsTb,
    /// `capture-exact`: the exact DP (ours), the same plan as enumeration.
    CaptureExact,
}

/// What `pipeplan algorithms` and the settings check need to know of one algorithm.
struct Descriptor {
    name: &'static str,
    description: &'static str,
    exact: bool,
    /// Settings of its own, besides [`COMMON_PARAMS`].
    params: &'static [&'static str],
}

impl Kind {
    /// Every kind, in the order `pipeplan algorithms` lists them.
    pub const ALL: [Kind; 6] = [
        Kind::Capture,
        Kind::McapBf,
        Kind::McapBo,
        Kind::CapslogBs,
        Kind::CapslogBsTb,
        Kind::CaptureExact,
    ];

    /// The kind's row of the family's table.
    fn descriptor(self) -> Descriptor {
        let (name, description, exact, params): (_, _, _, &'static [&'static str]) = match self {
            Kind::Capture => (
                "capture",
                "CAPTURE (Alg. 4): enumerate pp/dp/tp stage configs on nodes, prune by best peak, \
                 tie-break",
                true,
                &["max_nodes"],
            ),
            Kind::McapBf => (
                "mcap-bf",
                "mCAP-BF: every pipeline-only partition, lowest predicted peak, tie-break",
                true,
                &["max_nodes"],
            ),
            Kind::McapBo => (
                "mcap-bo",
                "mCAP-BO: Bayesian optimization over per-GPU layer percentages (30 random + 70 EI \
                 points)",
                false,
                &["initial", "iterations", "candidates", "engine", "refit"],
            ),
            Kind::CapslogBs => (
                "capslog-bs",
                "CAPSlog: binary search on a memory threshold, greedy fill (pipeline only)",
                false,
                &[],
            ),
            Kind::CapslogBsTb => (
                "capslog-bs-tb",
                "CAPSlog: binary search + greedy fill, recursive tie-break around the peak stage",
                false,
                &[],
            ),
            Kind::CaptureExact => (
                "capture-exact",
                "exact DP over the CAPTURE (or --set space=pipeline) plan space, same plan as \
                 enumeration",
                true,
                &["space"],
            ),
        };
        Descriptor {
            name,
            description,
            exact,
            params,
        }
    }
}

/// One of the family's algorithms; every name, description, setting and method is selected by
/// its [`Kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureAlgorithm(pub Kind);

/// `capture`.
pub const CAPTURE: CaptureAlgorithm = CaptureAlgorithm(Kind::Capture);
/// `mcap-bf`.
pub const MCAP_BF: CaptureAlgorithm = CaptureAlgorithm(Kind::McapBf);
/// `mcap-bo`.
pub const MCAP_BO: CaptureAlgorithm = CaptureAlgorithm(Kind::McapBo);
/// `capslog-bs`.
pub const CAPSLOG_BS: CaptureAlgorithm = CaptureAlgorithm(Kind::CapslogBs);
/// `capslog-bs-tb`.
pub const CAPSLOG_BS_TB: CaptureAlgorithm = CaptureAlgorithm(Kind::CapslogBsTb);
/// `capture-exact`.
pub const CAPTURE_EXACT: CaptureAlgorithm = CaptureAlgorithm(Kind::CaptureExact);

impl CaptureAlgorithm {
    /// Every setting the algorithm accepts: [`COMMON_PARAMS`] then its own.
    pub fn params(&self) -> Vec<&'static str> {
        COMMON_PARAMS
            .iter()
            .chain(self.0.descriptor().params)
            .copied()
            .collect()
    }
}

impl Algorithm for CaptureAlgorithm {
    fn name(&self) -> &'static str {
        self.0.descriptor().name
    }
    fn family(&self) -> Family {
        Family::Capture
    }
    fn description(&self) -> &'static str {
        self.0.descriptor().description
    }
    fn exact(&self) -> bool {
        self.0.descriptor().exact
    }
    fn supports(&self, _inst: &Instance) -> Result<(), Unsupported> {
        // Every instance: the statistics are derived from the chain when the extension is absent.
        Ok(())
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(self.name(), &self.params())?;
        match self.0 {
            Kind::Capture => run_enumeration(self, inst, opts, PlanSpace::hybrid(inst, opts)?),
            Kind::McapBf => run_enumeration(self, inst, opts, PlanSpace::pipeline(inst, opts)?),
            Kind::McapBo => run_bo(self, inst, opts),
            Kind::CapslogBs => run_heuristic(self, inst, opts, capslog::bs),
            Kind::CapslogBsTb => run_heuristic(self, inst, opts, capslog::bs_tb),
            Kind::CaptureExact => run_exact(self, inst, opts),
        }
    }
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

/// `capture` and `mcap-bf`: Algorithm 4's enumeration over a space.
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

/// mcap-bo's optimizer (`--set engine=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BoEngine {
    /// egobox-ego's `Egor` ([`bo`]) throughout: about three times slower (a fresh 1000-point
    /// maximin Latin hypercube per guided point, see `docs/capture.md`).
    Egor,
    /// The loop of [`bo_gp`] on egobox-gp after Egor's initial design, the default: it meets
    /// the < 2 s target for 100 evaluations (docs/design.md) on 32 layers x 16 GPUs.
    Gp,
}

/// `mcap-bo`: Bayesian optimization over pipeline-only partitions.
fn run_bo(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
) -> Result<Solution, SolveError> {
    let space = PlanSpace::pipeline(inst, opts)?;
    let engine = match opts.params.get("engine").map(String::as_str) {
        None | Some("gp") => BoEngine::Gp,
        Some("egor") => BoEngine::Egor,
        Some(v) => {
            return Err(InputError::field(
                "--set engine",
                format!("unknown mcap-bo engine '{v}' (expected gp or egor)"),
            )
            .into())
        }
    };
    let default_candidates = match engine {
        BoEngine::Egor => BO_CANDIDATES,
        BoEngine::Gp => bo_gp::DEFAULT_CANDIDATES as u64,
    };
    if engine == BoEngine::Egor && opts.params.contains_key("refit") {
        return Err(InputError::field(
            "--set refit",
            "applies to engine=gp only (egobox's Egor refits at every point)",
        )
        .into());
    }
    let settings = bo::BoSettings {
        initial: param_u64(opts, "initial", BO_INITIAL)? as usize,
        iterations: match opts.params.get("iterations") {
            Some(v) if v == "0" => 0,
            _ => param_u64(opts, "iterations", BO_ITERATIONS)? as usize,
        },
        candidates: param_u64(opts, "candidates", default_candidates)? as usize,
        seed: opts.seed,
        deadline: opts.time_limit.map(|t| Instant::now() + t),
    };
    let r = match engine {
        BoEngine::Egor => bo::optimize(&space, settings),
        BoEngine::Gp => {
            let refit = param_u64(opts, "refit", bo_gp::DEFAULT_REFIT as u64)? as usize;
            bo_gp::optimize(&space, settings, refit)
        }
    };
    let mut stats = Stats::new(Status::Heuristic);
    stats
        .counters
        .insert("evaluations".into(), r.evaluations as f64);
    stats
        .counters
        .insert("distinct plans".into(), r.distinct_plans as f64);
    let mut sol = space.solution(algo, inst, &r.best.choices, stats);
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
    } else if r.termination == "no new candidate" {
        sol.notes.push(format!(
            "no unevaluated candidate left after {} evaluations",
            r.evaluations
        ));
    }
    if engine == BoEngine::Gp {
        sol.notes.push(format!(
            "engine gp: egobox-gp + expected improvement over {} random points per guided point",
            settings.candidates.max(1)
        ));
    }
    Ok(sol)
}

/// `capslog-bs` and `capslog-bs-tb`: a greedy search over pipeline-only partitions.
fn run_heuristic(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
    f: fn(&PlanSpace) -> (Option<Vec<Choice>>, u64),
) -> Result<Solution, SolveError> {
    let space = PlanSpace::pipeline(inst, opts)?;
    let (plan, tries) = f(&space);
    let plan = plan.ok_or_else(|| no_plan(&space))?;
    let mut stats = Stats::new(Status::Heuristic);
    stats.counters.insert("greedy fills".into(), tries as f64);
    Ok(space.solution(algo, inst, &plan, stats))
}

/// `capture-exact`: the exact DP over the hybrid (default) or pipeline-only space.
fn run_exact(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
) -> Result<Solution, SolveError> {
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
    Ok(space.solution(algo, inst, &plan, stats))
}
