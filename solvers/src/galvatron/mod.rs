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
pub mod plan;
pub mod search;
pub mod stage_call;

use crate::algorithm::{
    solution, Algorithm, Claimed, Family, Objective, Solution, SolveError, SolveOptions, Stats,
    Status, Unsupported,
};
use pipeplan_formulations::galvatron::derive::layer_types;
use pipeplan_formulations::{InputError, Instance};
use search::{Division, Engine};
use std::time::Instant;

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![
        Box::new(Galvatron { kind: Kind::Base }),
        Box::new(Galvatron { kind: Kind::Bmw }),
        Box::new(Galvatron { kind: Kind::Time }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Base,
    Bmw,
    Time,
}

/// A Galvatron planner.
struct Galvatron {
    kind: Kind,
}

fn parse<T: std::str::FromStr>(opts: &SolveOptions, key: &str) -> Result<Option<T>, SolveError> {
    match opts.params.get(key) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            SolveError::Input(InputError::field(
                format!("--set {key}"),
                format!("cannot parse {v:?}"),
            ))
        }),
    }
}

impl Algorithm for Galvatron {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Base => "galvatron-base",
            Kind::Bmw => "galvatron-bmw",
            Kind::Time => "galvatron-time",
        }
    }
    fn family(&self) -> Family {
        Family::Galvatron
    }
    fn description(&self) -> &'static str {
        match self.kind {
            Kind::Base => "Galvatron engine search: per-layer pp/tp/dp/sdp/ckpt by memory-budget DP, engine's stage division",
            Kind::Bmw => "Galvatron-BMW: engine search with the bi-objective (memory/time) partition adjustment",
            Kind::Time => "Galvatron engine search with a pure time-balanced stage division",
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
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        let known: &[&str] = if self.kind == Kind::Bmw {
            &[
                "settle_bsz",
                "settle_chunk",
                "memory_unit_mb",
                "max_partitions",
            ]
        } else {
            &["settle_bsz", "settle_chunk", "memory_unit_mb"]
        };
        opts.check_params(self.name(), known)?;
        let (mut lt, derived) = layer_types(inst)?;
        if let Some(b) = parse::<i64>(opts, "settle_bsz")? {
            lt.settings.settle_bsz = b;
        }
        if let Some(c) = parse::<i64>(opts, "settle_chunk")? {
            lt.settings.settle_chunk = c;
        }
        if let Some(u) = parse::<f64>(opts, "memory_unit_mb")? {
            lt.settings.memory_unit_mb = u;
        }
        lt.settings.check("--set").map_err(SolveError::Input)?;
        let max_partitions = parse::<usize>(opts, "max_partitions")?.unwrap_or(32).max(1);
        let division = match self.kind {
            Kind::Base => Division::Engine,
            Kind::Bmw => Division::Bmw { max_partitions },
            Kind::Time => Division::Time,
        };
        let engine = Engine::new(&lt);
        if engine.strategies.is_empty() {
            return Err(SolveError::Infeasible(
                "the settings leave no strategy".into(),
            ));
        }
        let deadline = opts.time_limit.map(|d| Instant::now() + d);
        let (found, counters) = engine
            .search(division, deadline)
            .map_err(|m| SolveError::Input(InputError::field("extensions.layer_types", m)))?;
        let Some(found) = found else {
            if counters.cut_short && counters.tasks == 0 {
                return Err(SolveError::TimeLimit(
                    opts.time_limit.map_or(0.0, |d| d.as_secs_f64()),
                ));
            }
            return Err(SolveError::Infeasible(plan::why_infeasible(&engine)));
        };
        let plan = plan::to_plan(inst, &lt, &found);
        let per_gpu = plan::peak_per_gpu(inst, &found);
        let claimed = Claimed {
            objective: Some(Objective {
                name: "iteration time (engine cost model)".into(),
                value: found.best.cost * 1000.0,
                unit: "ms".into(),
            }),
            period_ms: None,
            iteration_ms: Some(found.best.cost * 1000.0),
            throughput: Some(found.throughput),
            max_memory: per_gpu.iter().copied().reduce(f64::max),
            peak_memory: Some(per_gpu),
            fits: Some(true),
        };
        let mut stats = Stats::new(if counters.cut_short {
            Status::Feasible
        } else {
            Status::Heuristic
        });
        stats
            .counters
            .insert("dp_calls".into(), counters.dp_calls as f64);
        stats.counters.insert("tasks".into(), counters.tasks as f64);
        stats
            .counters
            .insert("partitions".into(), counters.partitions as f64);
        let mut sol = solution(self, inst, plan, claimed, stats);
        let b = &found.best;
        sol.notes.push(format!(
            "batch {} in {} micro-batches, pp {}, division {:?}, vocab tp {}, min_tp {}, embed_sdp {}",
            found.task.bsz, b.chunks, b.pp, b.partition, b.vtp, found.task.min_tp, found.task.embed_sdp as u8
        ));
        sol.notes.push(format!(
            "strategies: {}",
            plan::strategy_string(&b.strategies)
        ));
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
