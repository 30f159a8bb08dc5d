//! The CAPTURE family: capture-exact against enumeration (and a naive enumerator written here)
//! on many small random instances with negative M_a and many ties; CAPSlog's greedy missing the
//! optimum; determinism; settings.

mod bo;
mod exact;
mod heuristics;
mod settings;

use pipeplan_formulations::capture::{MemoryProfile, Parallelism, Predictor, StageConfig};
use pipeplan_formulations::testing::shipped;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, Solution, SolveOptions, Status};
use pipeplan_solvers::capture::{
    CaptureAlgorithm, Kind, CAPSLOG_BS, CAPSLOG_BS_TB, CAPTURE, CAPTURE_EXACT, MCAP_BF, MCAP_BO,
};
use pipeplan_solvers::harness;
use proptest::prelude::*;
use serde_json::json;

/// An instance with statistics tables given per (parallelism, degree): (m_i, m_a), the same at
/// both profiling batch sizes (so the target-batch prediction equals them).
fn instance(
    gpus: u32,
    per_node: u32,
    tables: &[(&str, u32, Vec<f64>, Vec<f64>)],
    layers: usize,
) -> Instance {
    let ls: Vec<_> = (0..layers)
        .map(|i| json!({"name": format!("l{i}"), "forward": 1.0, "backward": 2.0, "weights": 1e6, "output": 1e5}))
        .collect();
    let stats: Vec<_> = tables
        .iter()
        .flat_map(|(p, d, mi, ma)| {
            [1.0, 2.0]
                .map(|b| json!({"parallelism": p, "degree": d, "batch": b, "m_i": mi, "m_a": ma}))
        })
        .collect();
    let text = json!({
        "format": "pipeplan/instance@1", "name": "rand",
        "model": {"batch": 4, "input": 1e5, "layers": ls},
        "cluster": {"gpus": gpus, "gpus_per_node": per_node, "memory": "16 GiB",
                    "bandwidth": {"intra_node": "10 GB/s"}},
        "training": {"schedule": "gpipe", "micro_batches": 3},
        "extensions": {"memory_profile": {"statistics": stats, "in_flight": 2}}
    });
    Instance::from_json(&text.to_string()).unwrap()
}

fn solve(algo: &dyn Algorithm, inst: &Instance, params: &[(&str, &str)]) -> Solution {
    let mut opts = SolveOptions::default();
    for (k, v) in params {
        opts.params.insert(k.to_string(), v.to_string());
    }
    harness::run(algo, inst, &opts).unwrap_or_else(|e| panic!("{}: {e}", algo.name()))
}

/// A plan as (last layer, dp, tp) per stage.
fn shape(sol: &Solution) -> Vec<(usize, u32, u32)> {
    sol.plan
        .stages
        .iter()
        .map(|s| (s.last, s.dp, s.tp))
        .collect()
}
