//! MadPipe-DP and its T^ search against an independent implementation of the paper's model
//! (§4.2) and against the neutral evaluator, on random small chains (1-7 layers, 1-4 GPUs,
//! random times, sizes, bandwidth and memory) and on shipped instances:
//!
//! - with exact values (no grid), the DP's period at a fixed T^ equals the brute-force minimum
//!   over every allocation of the recurrence's model (contiguous stages, each on a normal GPU or
//!   on the special one; at most P - 1 normal stages; once they are used up, the rest is one
//!   special stage), and its allocation achieves it;
//! - hence no contiguous partition (all normal, or one stage on the special GPU) beats it;
//! - with grids (the paper's and coarse ones), rounding never under-estimates: the DP's
//!   allocation fits in the exact model, and its claimed period, delays, groups, stage memories,
//!   special load and memory are at least the exact model's for that allocation;
//! - on a contiguous allocation the model's memory is the evaluator's under 1F1B* at T^;
//! - the search follows Algorithm 1 round by round and returns the least max(T, T^);
//! - one thread or four give the same result;
//! - bad input gets a precise error (GPU count, options, memory that never fits, deadline).

mod bad_input;
mod blocks;
mod brute_force;
mod determinism;
mod evaluator;
mod model;

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::testing::shipped;
use pipeplan_formulations::{Plan, Schedule};
use pipeplan_solvers::madpipe::dp::{
    madpipe_dp, madpipe_dp_at, DpAllocation, DpOptions, DpResult, RoundOutcome,
};
use pipeplan_solvers::{Deadline, SolveError};
use proptest::prelude::*;

/// (forward ms, backward ms, weight bytes, output bytes).
type LayerSpec = (f64, f64, f64, f64);

fn build(layers: &[LayerSpec], input: f64, gpus: u32, memory: f64, bandwidth: f64) -> Instance {
    let layers = layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o))| Layer::new(format!("l{i}"), f, b, w, o));
    let cluster = Cluster::single_node(gpus, memory, bandwidth);
    let mut inst = Instance::new("random", 1, input, layers.collect(), cluster);
    inst.source = "solvers/tests/madpipe_dp".into();
    inst.validate().expect("generated test instance is valid");
    inst
}

/// A random chain with a memory between "almost nothing fits" and "everything fits", and a T^
/// between a twentieth and twice the total compute.
fn case() -> impl Strategy<Value = (Instance, usize, f64)> {
    (
        prop::collection::vec((0.1f64..5.0, 0.1f64..10.0, 0.0f64..4e7, 1e5f64..3e7), 1..=7),
        1e5f64..3e7,
        1usize..=4,
        0.05f64..1.5,
        1e9f64..1e11,
        0.05f64..2.0,
    )
        .prop_map(|(layers, input, gpus, mem_frac, bw, t_frac)| {
            // Memory relative to what the whole chain needs on one GPU with 2 in flight.
            let states: f64 = layers.iter().map(|l| 3.0 * l.2).sum();
            let acts: f64 = input + layers.iter().map(|l| l.3).sum::<f64>();
            let memory = (mem_frac * (states + 2.0 * acts)).max(1e6);
            let inst = build(&layers, input, gpus as u32, memory, bw);
            let total: f64 = layers.iter().map(|l| l.0 + l.1).sum();
            (inst, gpus, t_frac * total)
        })
}
