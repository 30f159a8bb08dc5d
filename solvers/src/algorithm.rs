//! The [`Algorithm`] trait every named planner implements, and what a solve returns.

use pipeplan_formulations::evaluate::Evaluation;
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
        let max = inst.num_layers().min(inst.cluster.gpus as usize);
        match self.stages {
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

    /// Rejects `params` keys not in `known`.
    pub fn check_params(&self, algo: &str, known: &[&str]) -> Result<(), SolveError> {
        for k in self.params.keys() {
            if !known.contains(&k.as_str()) {
                return Err(SolveError::Input(InputError::field(
                    format!("--set {k}"),
                    if known.is_empty() {
                        format!("{algo} takes no settings")
                    } else {
                        format!("unknown setting for {algo}; known: {}", known.join(", "))
                    },
                )));
            }
        }
        Ok(())
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
    /// The underlying solver failed.
    #[error("solver failure: {0}")]
    Solver(String),
}

/// How much an algorithm's result is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The claimed objective is proven optimal for the algorithm's problem.
    Optimal,
    /// A feasible plan, stopped early (time or gap limit): see `bound` and `gap`.
    Feasible,
    /// A heuristic: no optimality claim.
    Heuristic,
}

/// An objective value as the algorithm states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Objective {
    /// What is minimized, e.g. "max stage compute".
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Unit of `value` ("ms", "bytes"...).
    pub unit: String,
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
            bound: None,
            gap: None,
            counters: BTreeMap::new(),
        }
    }
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
    /// Says why the algorithm cannot run on `inst`, if it cannot (default: every instance).
    fn supports(&self, _inst: &Instance) -> Result<(), Unsupported> {
        Ok(())
    }
    /// Solves. The returned solution has `evaluated: None`; the harness times and evaluates it.
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError>;
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
    }
}
