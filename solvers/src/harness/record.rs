//! One solve as one flat record: the columns of `pipeplan solve --csv` and `compare --csv`, and of
//! the Python package's `compare` data frame. Every column says whether its figure is the
//! algorithm's `claimed` value or the neutral evaluator's `evaluated` one.

use super::{Outcome, Row};
use crate::algorithm::{counter, Solution};
use pipeplan_formulations::evaluate::Evaluation;
use pipeplan_formulations::{Instance, Plan};
use serde::{Deserialize, Serialize};

/// One solve as one flat record (CSV output of `solve` and `compare`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Instance name.
    pub instance: String,
    /// Algorithm name.
    pub algorithm: String,
    /// solved, unsupported or failed.
    pub result: String,
    /// Optimality status of the claim.
    pub status: Option<String>,
    /// Claimed objective: name.
    pub claimed_objective_name: Option<String>,
    /// Claimed objective: value.
    pub claimed_objective: Option<f64>,
    /// Claimed objective: unit.
    pub claimed_objective_unit: Option<String>,
    /// Claimed async period (ms).
    pub claimed_period_ms: Option<f64>,
    /// Claimed synchronous iteration time (ms).
    pub claimed_iteration_ms: Option<f64>,
    /// Claimed throughput (samples/s).
    pub claimed_throughput: Option<f64>,
    /// Claimed largest peak memory (bytes).
    pub claimed_max_memory: Option<f64>,
    /// Claimed fit.
    pub claimed_fits: Option<bool>,
    /// Schedule family evaluated.
    pub evaluated_schedule: Option<String>,
    /// Evaluated async period (ms).
    pub evaluated_period_ms: Option<f64>,
    /// Evaluated iteration time (ms).
    pub evaluated_iteration_ms: Option<f64>,
    /// Evaluated throughput (samples/s).
    pub evaluated_throughput: Option<f64>,
    /// Evaluated largest peak memory (bytes).
    pub evaluated_max_memory: Option<f64>,
    /// GPU of that peak.
    pub evaluated_max_memory_gpu: Option<u32>,
    /// GPU memory (bytes).
    pub memory_limit: Option<f64>,
    /// Evaluated fit (memory and schedule).
    pub evaluated_fits: Option<bool>,
    /// Simulator's verdict on the periodic pattern.
    pub evaluated_valid_schedule: Option<bool>,
    /// Evaluated idle fraction.
    pub evaluated_bubble: Option<f64>,
    /// Stages of the plan.
    pub stages: Option<usize>,
    /// GPUs used.
    pub gpus_used: Option<u32>,
    /// Solve wall time (ms).
    pub solve_ms: Option<f64>,
    /// Proven bound on the objective.
    pub bound: Option<f64>,
    /// Relative gap to the bound.
    pub gap: Option<f64>,
    /// Gap of the claimed objective against the exact reference.
    pub gap_vs_exact: Option<f64>,
    /// The exact reference.
    pub exact_reference: Option<String>,
    /// Gap of the evaluated async period against the proven contiguous optimum.
    pub period_gap_vs_exact: Option<f64>,
    /// Claimed peak memory of every GPU (bytes, space-separated, index = GPU id).
    pub claimed_memory_vector: Option<String>,
    /// Evaluated peak memory of every GPU (bytes, space-separated, index = GPU id).
    pub evaluated_memory_vector: Option<String>,
    /// Objective evaluations of a search that counts them (mcap-bo's Bayesian optimization).
    pub evaluations: Option<f64>,
    /// Plans a search compared (capture, mcap-bf enumerations).
    pub plans_visited: Option<f64>,
    /// Why there is no solution.
    pub reason: Option<String>,
}

/// A memory vector as one CSV cell: bytes per GPU, space-separated.
fn vector_cell(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Record {
    /// The record of a solution.
    pub fn of_solution(sol: &Solution) -> Record {
        let c = &sol.claimed;
        let mut r = Record {
            instance: sol.instance.clone(),
            algorithm: sol.algorithm.clone(),
            result: "solved".into(),
            status: Some(sol.stats.status.name().into()),
            claimed_objective_name: c.objective.as_ref().map(|o| o.name().to_string()),
            claimed_objective: c.objective.as_ref().map(|o| o.value),
            claimed_objective_unit: c.objective.as_ref().map(|o| o.unit().to_string()),
            claimed_period_ms: c.period_ms,
            claimed_iteration_ms: c.iteration_ms,
            claimed_throughput: c.throughput,
            claimed_max_memory: c.max_memory,
            claimed_fits: c.fits,
            stages: Some(sol.plan.stages.len()),
            solve_ms: Some(sol.stats.wall_ms),
            bound: sol.stats.bound,
            gap: sol.stats.gap,
            claimed_memory_vector: c.peak_memory.as_deref().map(vector_cell),
            evaluations: sol.stats.counters.get(counter::EVALUATIONS).copied(),
            plans_visited: sol.stats.counters.get(counter::PLANS_VISITED).copied(),
            ..Record::default()
        };
        if let Some(e) = &sol.evaluated {
            r.fill_evaluation(e);
        }
        r
    }

    /// The record of a comparison row.
    pub fn of_row(row: &Row) -> Record {
        let mut r = match &row.outcome {
            Outcome::Solved { solution } => Record::of_solution(solution),
            Outcome::Unsupported { reason } | Outcome::Failed { reason } => Record {
                instance: row.instance.clone(),
                algorithm: row.algorithm.clone(),
                result: match row.outcome {
                    Outcome::Unsupported { .. } => "unsupported".into(),
                    _ => "failed".into(),
                },
                reason: Some(reason.clone()),
                ..Record::default()
            },
        };
        r.gap_vs_exact = row.gap_vs_exact.filter(|g| g.is_finite());
        r.exact_reference = row.exact_reference.clone();
        r.period_gap_vs_exact = row.period_gap_vs_exact;
        r
    }

    /// The record of a plan judged by `evaluate`.
    pub fn of_evaluation(inst: &Instance, plan: &Plan, e: &Evaluation) -> Record {
        let mut r = Record {
            instance: inst.name.clone(),
            result: "evaluated".into(),
            stages: Some(plan.stages.len()),
            ..Record::default()
        };
        r.fill_evaluation(e);
        r
    }

    fn fill_evaluation(&mut self, e: &Evaluation) {
        self.evaluated_schedule = Some(e.schedule.to_string());
        self.evaluated_period_ms = e.period_ms;
        self.evaluated_iteration_ms = e.iteration_ms;
        self.evaluated_throughput = Some(e.throughput);
        self.evaluated_max_memory = Some(e.max_memory);
        self.evaluated_max_memory_gpu = Some(e.max_memory_gpu);
        self.memory_limit = Some(e.memory_limit);
        self.evaluated_fits = Some(e.fits);
        self.evaluated_valid_schedule = e.valid_schedule;
        self.evaluated_bubble = Some(e.bubble);
        self.gpus_used = Some(e.gpus_used);
        self.evaluated_memory_vector = Some(vector_cell(&e.peak_memory));
    }
}
