//! The [`Algorithm`] trait every named planner implements, and what a solve returns.

use crate::deadline::Deadline;
pub use crate::objective::{Objective, ObjectiveKind};
use crate::settings::{Param, Settings};
use pipeplan_formulations::evaluate::Evaluation;
use pipeplan_formulations::units::{parse_quantity, Dimension};
use pipeplan_formulations::{InputError, Instance, Plan};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Which paper (or baseline) an algorithm comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Well-known partitioning baselines (Megatron, torchgpipe, DeepSpeed) and their exact twins.
    Baseline,
    /// MadPipe and PipeDream (asynchronous pipelines under memory limits).
    Madpipe,
    /// Galvatron-BMW (hybrid strategies under a memory budget).
    Galvatron,
    /// CAPTURE / mCAP / CAPSlog (minimum peak memory).
    Capture,
    /// DawnPiper (partitioning with swap / recompute).
    Dawnpiper,
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::Baseline => "baseline",
            Family::Madpipe => "madpipe",
            Family::Galvatron => "galvatron",
            Family::Capture => "capture",
            Family::Dawnpiper => "dawnpiper",
        })
    }
}

/// Options common to every solve.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveOptions {
    /// Wall-clock limit for solvers that can stop early (ILPs, searches). `None`: no limit.
    pub time_limit: Option<Duration>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of pipeline stages for algorithms that take it as given (default: one per GPU,
    /// at most one per layer).
    pub stages: Option<usize>,
    /// Algorithm-specific settings (`--set key=value`); each algorithm documents its keys and
    /// rejects unknown ones.
    pub params: BTreeMap<String, String>,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            time_limit: Some(Duration::from_secs(60)),
            seed: 0,
            stages: None,
            params: BTreeMap::new(),
        }
    }
}

impl SolveOptions {
    /// Number of stages for an instance: `stages`, else min(GPUs, layers).
    pub fn stage_count(&self, inst: &Instance) -> Result<usize, SolveError> {
        stage_count(self.stages, inst)
    }
}

fn stage_count(stages: Option<usize>, inst: &Instance) -> Result<usize, SolveError> {
    let max = inst.num_layers().min(inst.cluster.gpus as usize);
    match stages {
        None => Ok(max),
        Some(0) => Err(SolveError::Input(InputError::field(
            "--stages",
            "must be at least 1",
        ))),
        Some(p) if p > inst.cluster.gpus as usize => Err(SolveError::Input(InputError::field(
            "--stages",
            format!(
                "{p} stages need {p} GPUs; the cluster has {}",
                inst.cluster.gpus
            ),
        ))),
        Some(p) if p > inst.num_layers() => Err(SolveError::Input(InputError::field(
            "--stages",
            format!("{p} stages but the chain has {} layers", inst.num_layers()),
        ))),
        Some(p) => Ok(p),
    }
}

/// Parses a time limit as the command line (`--time-limit`) and the Python package take it:
/// seconds as a bare number, a time with a unit (`500ms`, `2min`), or `none` (no limit).
pub fn parse_time_limit(s: &str) -> Result<Option<Duration>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let secs = match t.parse::<f64>() {
        Ok(v) => v,
        Err(_) => parse_quantity(t, Dimension::Time)? / 1e3,
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "{s:?} is not a positive time limit (use `none` for no limit)"
        ));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

/// What the harness hands an algorithm for one solve: the deadline it built, the seed, the
/// stage count asked for, and the settings checked against the algorithm's declaration.
#[derive(Debug, Clone)]
pub struct Context {
    /// When to stop.
    pub deadline: Deadline,
    /// Seed of every random choice.
    pub seed: u64,
    /// Stages asked for (`--stages`); see [`Context::stage_count`].
    pub stages: Option<usize>,
    /// Typed settings.
    pub settings: Settings,
}

impl Context {
    /// Checks `opts.params` against `params` (the declaration of `algo`) and starts the deadline.
    pub fn new(algo: &str, params: &[Param], opts: &SolveOptions) -> Result<Context, SolveError> {
        let settings = Settings::parse(algo, params, &opts.params)?;
        Ok(Context {
            deadline: Deadline::after(opts.time_limit),
            seed: opts.seed,
            stages: opts.stages,
            settings,
        })
    }

    /// [`Context::new`] for `algo`'s declared settings.
    pub fn of<A: Algorithm + ?Sized>(algo: &A, opts: &SolveOptions) -> Result<Context, SolveError> {
        Context::new(algo.name(), &algo.params(), opts)
    }

    /// Number of stages for an instance: `stages`, else min(GPUs, layers).
    pub fn stage_count(&self, inst: &Instance) -> Result<usize, SolveError> {
        stage_count(self.stages, inst)
    }
}

/// Why an algorithm does not run on an instance.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

/// Why a solve produced no plan.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// The instance or the options are malformed.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The algorithm does not handle this instance.
    #[error("unsupported: {0}")]
    Unsupported(#[from] Unsupported),
    /// No feasible plan exists (or the algorithm found none); the message names the binding
    /// constraint.
    #[error("no feasible plan: {0}")]
    Infeasible(String),
    /// The time limit passed before any feasible plan was found.
    #[error("time limit of {0:.1} s reached before any feasible plan was found")]
    TimeLimit(f64),
    /// The solve was interrupted before any feasible plan was found.
    #[error("interrupted before any feasible plan was found")]
    Interrupted,
    /// The underlying solver failed.
    #[error("solver failure: {0}")]
    Solver(String),
}

impl SolveError {
    /// Whether the deadline ended the solve (time limit or interruption).
    pub fn is_stop(&self) -> bool {
        matches!(self, SolveError::TimeLimit(_) | SolveError::Interrupted)
    }
}

/// How much an algorithm's result is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// An exact method proved the claimed objective optimal for its problem.
    Optimal,
    /// An exact method stopped before its proof (see `stop`): the best plan so far, with
    /// `bound` and `gap` where the method has them.
    Feasible,
    /// A heuristic: no optimality claim, whether it ran to its end or was stopped (see `stop`).
    Heuristic,
}

impl Status {
    /// Every status.
    pub const ALL: [Status; 3] = [Status::Optimal, Status::Feasible, Status::Heuristic];

    /// The name reports print (the serialized name).
    pub fn name(self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::Feasible => "feasible",
            Status::Heuristic => "heuristic",
        }
    }
}

/// Why a run ended before its natural end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// The time limit passed.
    TimeLimit,
    /// The solve was interrupted.
    Interrupted,
    /// A cap on the nodes of a search (`--set max_nodes`).
    NodeCap,
    /// The evaluation budget of a search (initial + guided points) was spent.
    EvaluationBudget,
    /// The optimizer proposed no new point.
    Converged,
    /// No unevaluated candidate was left.
    Exhausted,
}

impl Stop {
    /// Every reason.
    pub const ALL: [Stop; 6] = [
        Stop::TimeLimit,
        Stop::Interrupted,
        Stop::NodeCap,
        Stop::EvaluationBudget,
        Stop::Converged,
        Stop::Exhausted,
    ];

    /// The serialized name (what a sweep store's `stop` column holds).
    pub fn name(self) -> &'static str {
        match self {
            Stop::TimeLimit => "time-limit",
            Stop::Interrupted => "interrupted",
            Stop::NodeCap => "node-cap",
            Stop::EvaluationBudget => "evaluation-budget",
            Stop::Converged => "converged",
            Stop::Exhausted => "exhausted",
        }
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::TimeLimit => "time limit",
            Stop::Interrupted => "interrupted",
            Stop::NodeCap => "node cap",
            Stop::EvaluationBudget => "evaluation budget",
            Stop::Converged => "converged",
            Stop::Exhausted => "no candidate left",
        })
    }
}

/// What the algorithm believes of its plan, under its own model. Never the evaluator's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claimed {
    /// The algorithm's objective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<Objective>,
    /// Claimed period of an asynchronous pipeline (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// Claimed iteration time of a synchronous pipeline (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// Claimed throughput (samples/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// Claimed peak memory per GPU (bytes, index = GPU id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory: Option<Vec<f64>>,
    /// Claimed largest peak memory (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<f64>,
    /// Whether the algorithm believes the plan fits in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<bool>,
}

/// Solve statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    /// Wall-clock time of the solve (ms).
    pub wall_ms: f64,
    /// Optimality status of the claimed objective.
    pub status: Status,
    /// Why the run ended early, if it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stop: Option<Stop>,
    /// Best proven bound on the objective (exact methods stopped early, or proven optimal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// Relative gap between the objective and the bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap: Option<f64>,
    /// Counters (DP states, ILP nodes, evaluations...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub counters: BTreeMap<String, f64>,
}

impl Stats {
    /// Stats with a status and nothing else (the harness fills `wall_ms`).
    pub fn new(status: Status) -> Stats {
        Stats {
            wall_ms: 0.0,
            status,
            stop: None,
            bound: None,
            gap: None,
            counters: BTreeMap::new(),
        }
    }

    /// Stats of `status` stopped for `stop`.
    pub fn stopped(status: Status, stop: Option<Stop>) -> Stats {
        Stats {
            stop,
            ..Stats::new(status)
        }
    }

    /// Sets counter `name` (one of the algorithm's own names, or a [`counter`] name).
    pub fn count(&mut self, name: &str, n: impl Into<f64>) {
        self.counters.insert(name.to_string(), n.into());
    }

    /// How many plans the search looked at: its objective evaluations ([`counter::EVALUATIONS`])
    /// or, for an enumeration, the plans it compared ([`counter::PLANS_VISITED`]).
    pub fn plans_examined(&self) -> Option<f64> {
        self.counters
            .get(counter::EVALUATIONS)
            .or_else(|| self.counters.get(counter::PLANS_VISITED))
            .copied()
    }
}

/// Counter names with a meaning across families (reports show them); every other counter name
/// is the algorithm's own.
pub mod counter {
    /// Objective evaluations of a search that counts them (mcap-bo's Bayesian optimization).
    pub const EVALUATIONS: &str = "evaluations";
    /// Plans an enumeration compared (capture, mcap-bf).
    pub const PLANS_VISITED: &str = "plans visited";
}

/// A plan with the algorithm's claims and statistics, and (once judged) the evaluator's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Solution {
    /// Algorithm name.
    pub algorithm: String,
    /// Its family.
    pub family: Family,
    /// Instance name.
    pub instance: String,
    /// The plan.
    pub plan: Plan,
    /// The algorithm's own figures.
    pub claimed: Claimed,
    /// The neutral evaluator's figures (filled by the harness, never by an algorithm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluated: Option<Evaluation>,
    /// Solve statistics.
    pub stats: Stats,
    /// What the algorithm derived or assumed (e.g. an extension derived from the chain).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
    /// A Galvatron planner's decisions beyond the plan (vocabulary tp, embedding ZeRO-3, global
    /// batch, default dp type), which `pipeplan export --to galvatron` writes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub galvatron: Option<pipeplan_formulations::galvatron::output::Extras>,
}

/// A named planner: a formulation solved by some method.
pub trait Algorithm: Sync + Send {
    /// Registry name, e.g. `balanced-time`.
    fn name(&self) -> &'static str;
    /// Family.
    fn family(&self) -> Family;
    /// One-line description for `pipeplan algorithms`.
    fn description(&self) -> &'static str;
    /// Whether the claimed objective is exact (proven optimal when status is `Optimal`).
    fn exact(&self) -> bool;
    /// The settings it takes (`--set`), checked by the harness before [`Algorithm::compute`].
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }
    /// Says why the algorithm cannot run on `inst` at its default settings, if it cannot
    /// (default: every instance).
    fn supports(&self, _inst: &Instance) -> Result<(), Unsupported> {
        Ok(())
    }
    /// Says why the algorithm cannot run on `inst` with `settings`, if it cannot: what the
    /// harness checks before [`Algorithm::compute`]. An algorithm with a size limit that a
    /// setting lifts (`docs/limits.md`) overrides this one and answers [`Algorithm::supports`]
    /// with its defaults; the default is [`Algorithm::supports`].
    fn supports_with(&self, inst: &Instance, _settings: &Settings) -> Result<(), Unsupported> {
        self.supports(inst)
    }
    /// Computes a plan within `ctx` (deadline, seed, stages, typed settings). The returned
    /// solution has `evaluated: None`: the harness times and evaluates it.
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError>;
    /// Checks `opts` against [`Algorithm::params`], starts the deadline, checks
    /// [`Algorithm::supports_with`] and computes: what the harness does before timing and
    /// evaluating (see [`crate::harness::run`]).
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        let ctx = Context::of(self, opts)?;
        self.supports_with(inst, &ctx.settings)?;
        self.compute(inst, &ctx)
    }
    /// Every declared setting at its default ([`Settings::defaults`] of
    /// [`Algorithm::params`]): what [`Algorithm::supports`] checks for an algorithm whose size
    /// limit a setting lifts.
    fn default_settings(&self) -> Settings {
        Settings::defaults(&self.params())
    }
}

/// Builds a solution skeleton for an algorithm.
pub fn solution(
    algo: &dyn Algorithm,
    inst: &Instance,
    plan: Plan,
    claimed: Claimed,
    stats: Stats,
) -> Solution {
    Solution {
        algorithm: algo.name().to_string(),
        family: algo.family(),
        instance: inst.name.clone(),
        plan,
        claimed,
        evaluated: None,
        stats,
        notes: Vec::new(),
        galvatron: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Status, Stop};

    fn serialized<T: serde::Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn names_are_the_serialized_names() {
        for s in Status::ALL {
            assert_eq!(s.name(), serialized(s));
        }
        for s in Stop::ALL {
            assert_eq!(s.name(), serialized(s));
        }
    }
}
