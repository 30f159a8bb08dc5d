//! Galvatron family: the named algorithms.
//!
//! - `galvatron-base`: the reference engine's search (Hetu-Galvatron `search_engine`): batch size,
//!   micro-batch count, smallest tp, embedding ZeRO-3, pipeline degree; the engine's stage
//!   division; one memory-budget DP ([`dp`]) per stage; vocabulary tp by the pipeline cost.
//! - `galvatron-bmw`: the same search with Galvatron-BMW's bi-objective partition adjustment
//!   ([`bmw`]) instead of the fixed division.
//! - `galvatron-time`: the same search with a pure time-balanced division.
//!
//! Settings (`--set key=value`): `settle_bsz`, `settle_chunk`, `memory_unit_mb` override the
//! instance's `layer_types.settings`; `max_partitions` (galvatron-bmw, default 32) caps the
//! partitions explored per pipeline degree.

pub mod bmw;
mod division;
pub mod dp;
pub mod engine;
mod infeasible;
pub mod plan;
pub mod search;
pub mod stage_call;

use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status, Unsupported,
};
use crate::settings::{Kind, Param};
use pipeplan_formulations::galvatron::derive::{layer_types, Searched};
use pipeplan_formulations::{InputError, Instance};
use search::{Division, Engine};

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![
        Box::new(Galvatron {
            kind: Planner::Base,
        }),
        Box::new(Galvatron { kind: Planner::Bmw }),
        Box::new(Galvatron {
            kind: Planner::Time,
        }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planner {
    Base,
    Bmw,
    Time,
}

/// A Galvatron planner.
struct Galvatron {
    kind: Planner,
}

/// Settings of every Galvatron planner (they override the instance's `layer_types.settings`).
const PARAMS: [Param; 3] = [
    Param::derived(
        "settle_bsz",
        Kind::Integer,
        "global batch size to settle on (default: the instance's settings)",
    ),
    Param::derived(
        "settle_chunk",
        Kind::Integer,
        "micro-batch count to settle on (default: the instance's settings)",
    ),
    Param::derived(
        "memory_unit_mb",
        Kind::Real {
            above: f64::NEG_INFINITY,
            below: f64::INFINITY,
            none: false,
        },
        "memory unit of the DP's budget, MB (default: the instance's settings)",
    ),
];

/// galvatron-bmw's own setting.
const MAX_PARTITIONS: Param = Param::new(
    "max_partitions",
    Kind::Count { min: 0 },
    "32",
    "partitions explored per pipeline degree (0 counts as 1)",
);

impl Algorithm for Galvatron {
    fn name(&self) -> &'static str {
        match self.kind {
            Planner::Base => "galvatron-base",
            Planner::Bmw => "galvatron-bmw",
            Planner::Time => "galvatron-time",
        }
    }
    fn family(&self) -> Family {
        Family::Galvatron
    }
    fn description(&self) -> &'static str {
        match self.kind {
            Planner::Base => "Galvatron engine search: per-layer pp/tp/dp/sdp/ckpt by memory-budget DP, engine's stage division",
            Planner::Bmw => "Galvatron-BMW: engine search with the bi-objective (memory/time) partition adjustment",
            Planner::Time => "Galvatron engine search with a pure time-balanced stage division",
        }
    }
    fn exact(&self) -> bool {
        false
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        if inst
            .extensions
            .contains_key(pipeplan_formulations::galvatron::EXTENSION)
        {
            return Ok(());
        }
        let g = inst.cluster.gpus;
        let per = inst.gpus_per_node();
        if !g.is_power_of_two() || !per.is_power_of_two() {
            return Err(Unsupported(format!(
                "galvatron's strategy tree needs power-of-two GPU counts; the cluster has {g} GPUs, {per} per node"
            )));
        }
        Ok(())
    }
    fn params(&self) -> Vec<Param> {
        let mut p = PARAMS.to_vec();
        if self.kind == Planner::Bmw {
            p.push(MAX_PARTITIONS);
        }
        p
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let Searched {
            layer_types: mut lt,
            derived,
            replaced_budget,
        } = layer_types(inst)?;
        let budget_note = replaced_budget.map(|theirs| {
            format!(
                "memory budget {} GB per GPU, the instance's usable memory, in place of the \
                 layer_types settings' memory_constraint {theirs} GB",
                lt.settings.memory_constraint
            )
        });
        let s = &ctx.settings;
        if let Some(b) = s.integer("settle_bsz") {
            lt.settings.settle_bsz = b;
        }
        if let Some(c) = s.integer("settle_chunk") {
            lt.settings.settle_chunk = c;
        }
        if let Some(Some(u)) = s.real("memory_unit_mb") {
            lt.settings.memory_unit_mb = u;
        }
        lt.settings.check("--set").map_err(SolveError::Input)?;
        let max_partitions = s.count("max_partitions").unwrap_or(32).max(1) as usize;
        let division = match self.kind {
            Planner::Base => Division::Engine,
            Planner::Bmw => Division::Bmw { max_partitions },
            Planner::Time => Division::Time,
        };
        let engine = Engine::new(&lt);
        if engine.strategies.is_empty() {
            return Err(SolveError::Infeasible(
                "the settings leave no strategy".into(),
            ));
        }
        let (found, counters) = engine
            .search(division, &ctx.deadline)
            .map_err(|m| SolveError::Input(InputError::field("extensions.layer_types", m)))?;
        let Some(found) = found else {
            // A search cut short proves nothing: the tasks it skipped may hold a plan.
            if counters.cut_short {
                return Err(ctx.deadline.error());
            }
            return Err(SolveError::Infeasible(infeasible::why_infeasible(&engine)));
        };
        let plan = plan::to_plan(inst, &lt, &found);
        let per_gpu = plan::peak_per_gpu(inst, &found);
        let claimed = Claimed {
            objective: Some(Objective::new(
                ObjectiveKind::EngineIterationTime,
                found.best.cost * 1000.0,
            )),
            period_ms: None,
            iteration_ms: Some(found.best.cost * 1000.0),
            throughput: Some(found.throughput),
            max_memory: per_gpu.iter().copied().reduce(f64::max),
            peak_memory: Some(per_gpu),
            fits: Some(true),
        };
        let mut stats = Stats::stopped(
            Status::Heuristic,
            counters.cut_short.then(|| ctx.deadline.stop()),
        );
        stats
            .counters
            .insert("dp_calls".into(), counters.dp_calls as f64);
        stats.counters.insert("tasks".into(), counters.tasks as f64);
        stats
            .counters
            .insert("partitions".into(), counters.partitions as f64);
        let mut sol = solution(self, inst, plan, claimed, stats);
        sol.galvatron = Some(plan::extras(&lt, &found));
        let b = &found.best;
        // The vocabulary layers' Ulysses flag is said only when the search offered it.
        let vsp = if lt.settings.ulysses() {
            format!(", vocab sp {}", found.task.vsp as u8)
        } else {
            String::new()
        };
        sol.notes.push(format!(
            "batch {} in {} micro-batches, pp {}, division {:?}, vocab tp {}{vsp}, min_tp {}, embed_sdp {}",
            found.task.bsz, b.chunks, b.pp, b.partition, b.vtp, found.task.min_tp, found.task.embed_sdp as u8
        ));
        sol.notes.push(format!(
            "strategies: {}",
            plan::strategy_string(&b.strategies)
        ));
        sol.notes.extend(budget_note);
        if derived {
            sol.notes.push(
                "layer_types derived from the chain (docs/galvatron.md, derivation rule)".into(),
            );
        }
        if counters.cut_short {
            sol.notes
                .push("time limit reached: best plan of the tasks searched so far".into());
        }
        Ok(sol)
    }
}
