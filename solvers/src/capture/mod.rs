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
//! Every algorithm claims the objective [`ObjectiveKind::PredictedPeakMemory`](crate::ObjectiveKind) (bytes) and the per-GPU predicted
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
pub mod size;
pub mod space;

use crate::algorithm::{
    counter, Algorithm, Context, Family, Solution, SolveError, Stats, Status, Stop, Unsupported,
};
use crate::deadline::Deadline;
use crate::settings::{Kind as ParamKind, Param, Settings};
use pipeplan_formulations::{InputError, Instance};
use space::{PlanSpace, COMMON_PARAMS};

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

/// `max_nodes` of the enumerations.
const MAX_NODES: Param = Param::new(
    "max_nodes",
    ParamKind::Count { min: 1 },
    "100000",
    "node cap of the enumeration (the plan is then not proven optimal)",
);

/// capture-exact's `space`.
const SPACE: Param = Param::new(
    "space",
    ParamKind::Choice {
        values: &["hybrid", "pipeline"],
    },
    "hybrid",
    "plan space: CAPTURE's hybrid pp/dp/tp space or pipeline-only",
);

/// mcap-bo's settings.
const BO_PARAMS: [Param; 5] = [
    Param::new(
        "initial",
        ParamKind::Count { min: 1 },
        "30",
        "random initial points",
    ),
    Param::new(
        "iterations",
        ParamKind::Count { min: 0 },
        "70",
        "guided (expected-improvement) points",
    ),
    Param::derived(
        "candidates",
        ParamKind::Count { min: 1 },
        "per guided point: egobox's multistarts (engine=egor, default 20) or random points \
         scored (engine=gp, default 1000)",
    ),
    Param::new(
        "engine",
        ParamKind::Choice {
            values: &["gp", "egor"],
        },
        "gp",
        "optimizer: egobox-gp with expected improvement over random points, or egobox's Egor",
    ),
    Param::derived(
        "refit",
        ParamKind::Count { min: 1 },
        "engine=gp: refit the hyperparameters every this many points (default 1)",
    ),
];

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
    params: &'static [Param],
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
        let (name, description, exact, params): (_, _, _, &'static [Param]) = match self {
            Kind::Capture => (
                "capture",
                "CAPTURE (Alg. 4): enumerate pp/dp/tp stage configs on nodes, prune by best peak, \
                 tie-break",
                true,
                &[MAX_NODES],
            ),
            Kind::McapBf => (
                "mcap-bf",
                "mCAP-BF: every pipeline-only partition, lowest predicted peak, tie-break",
                true,
                &[MAX_NODES],
            ),
            Kind::McapBo => (
                "mcap-bo",
                "mCAP-BO: Bayesian optimization over per-GPU layer percentages (30 random + 70 EI \
                 points)",
                false,
                &BO_PARAMS,
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
                &[SPACE],
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
    /// [`COMMON_PARAMS`] then the algorithm's own.
    fn params(&self) -> Vec<Param> {
        COMMON_PARAMS
            .iter()
            .chain(self.0.descriptor().params)
            .copied()
            .collect()
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        self.supports_with(inst, &self.default_settings())
    }
    /// Spaces too big to build or search are declined ([`size::check`]).
    fn supports_with(&self, inst: &Instance, settings: &Settings) -> Result<(), Unsupported> {
        size::check(self.0, inst, settings)
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        match self.0 {
            Kind::Capture => run_enumeration(self, inst, ctx, PlanSpace::hybrid(inst, ctx)?),
            Kind::McapBf => run_enumeration(self, inst, ctx, PlanSpace::pipeline(inst, ctx)?),
            Kind::McapBo => run_bo(self, inst, ctx),
            Kind::CapslogBs => run_heuristic(self, inst, ctx, capslog::bs),
            Kind::CapslogBsTb => run_heuristic(self, inst, ctx, capslog::bs_tb),
            Kind::CaptureExact => run_exact(self, inst, ctx),
        }
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
    ctx: &Context,
    space: PlanSpace,
) -> Result<Solution, SolveError> {
    let max_nodes = ctx.settings.count("max_nodes").unwrap_or(DEFAULT_MAX_NODES);
    let limits = enumerate::Limits {
        max_nodes,
        deadline: &ctx.deadline,
    };
    let e = enumerate::enumerate(&space, limits);
    let Some(best) = e.best else {
        if e.stopped {
            return Err(match e.timed_out {
                true => ctx.deadline.error(),
                false => SolveError::Infeasible(format!(
                    "the node cap of {max_nodes} (--set max_nodes) was reached before any plan"
                )),
            });
        }
        return Err(no_plan(&space));
    };
    let stop = match (e.stopped, e.timed_out) {
        (false, _) => None,
        (true, true) => Some(ctx.deadline.stop()),
        (true, false) => Some(Stop::NodeCap),
    };
    let mut stats = Stats::stopped(
        if e.stopped {
            Status::Feasible
        } else {
            Status::Optimal
        },
        stop,
    );
    if !e.stopped {
        stats.bound = Some(best.peak());
        stats.gap = Some(0.0);
    }
    stats.counters.insert("nodes".into(), e.nodes as f64);
    stats.count(counter::PLANS_VISITED, e.plans as f64);
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
fn run_bo(algo: &dyn Algorithm, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
    let space = PlanSpace::pipeline(inst, ctx)?;
    let engine = match ctx.settings.choice("engine") {
        Some("egor") => BoEngine::Egor,
        _ => BoEngine::Gp,
    };
    let default_candidates = match engine {
        BoEngine::Egor => BO_CANDIDATES,
        BoEngine::Gp => bo_gp::DEFAULT_CANDIDATES as u64,
    };
    if engine == BoEngine::Egor && ctx.settings.given("refit") {
        return Err(InputError::field(
            "--set refit",
            "applies to engine=gp only (egobox's Egor refits at every point)",
        )
        .into());
    }
    let count = |key: &str, default: u64| ctx.settings.count(key).unwrap_or(default) as usize;
    let settings = bo::BoSettings {
        initial: count("initial", BO_INITIAL),
        iterations: count("iterations", BO_ITERATIONS),
        candidates: count("candidates", default_candidates),
        seed: ctx.seed,
        deadline: ctx.deadline.clone(),
    };
    let budget = settings.initial + settings.iterations;
    let candidates = settings.candidates;
    let r = match engine {
        BoEngine::Egor => bo::optimize(&space, settings),
        BoEngine::Gp => {
            let refit = count("refit", bo_gp::DEFAULT_REFIT as u64);
            bo_gp::optimize(&space, settings, refit)
        }
    };
    let mut stats = Stats::stopped(Status::Heuristic, r.termination);
    stats.count(counter::EVALUATIONS, r.evaluations as f64);
    stats
        .counters
        .insert("distinct plans".into(), r.distinct_plans as f64);
    let mut sol = space.solution(algo, inst, &r.best.choices, stats);
    if r.timed_out {
        sol.notes.push(format!(
            "time limit reached after {} of {} evaluations",
            r.evaluations, budget
        ));
    }
    if let Some(e) = &r.error {
        sol.notes.push(format!(
            "egobox stopped with an error ({e}); best of the {} points evaluated before it",
            r.evaluations
        ));
    } else if r.termination == Some(Stop::Converged) {
        sol.notes.push(format!(
            "egobox proposed no new point after {} evaluations",
            r.evaluations
        ));
    } else if r.termination == Some(Stop::Exhausted) && space.gpus > 1 {
        sol.notes.push(format!(
            "no unevaluated candidate left after {} evaluations",
            r.evaluations
        ));
    }
    if engine == BoEngine::Gp {
        sol.notes.push(format!(
            "engine gp: egobox-gp + expected improvement over {} random points per guided point",
            candidates.max(1)
        ));
    }
    Ok(sol)
}

/// `capslog-bs` and `capslog-bs-tb`: a greedy search over pipeline-only partitions.
fn run_heuristic(
    algo: &dyn Algorithm,
    inst: &Instance,
    ctx: &Context,
    f: fn(&PlanSpace, &Deadline) -> capslog::Searched,
) -> Result<Solution, SolveError> {
    let space = PlanSpace::pipeline(inst, ctx)?;
    let (plan, tries) = f(&space, &ctx.deadline)?;
    let plan = plan.ok_or_else(|| no_plan(&space))?;
    let mut stats = Stats::new(Status::Heuristic);
    stats.counters.insert("greedy fills".into(), tries as f64);
    Ok(space.solution(algo, inst, &plan, stats))
}

/// `capture-exact`: the exact DP over the hybrid (default) or pipeline-only space.
fn run_exact(algo: &dyn Algorithm, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
    let space = match ctx.settings.choice("space") {
        Some("pipeline") => PlanSpace::pipeline(inst, ctx)?,
        _ => PlanSpace::hybrid(inst, ctx)?,
    };
    let (plan, c) = exact::solve(&space, &ctx.deadline)?;
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
