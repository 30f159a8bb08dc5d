//! Independent checks of the periodic-schedule simulator and of the 1F1B* construction.
//!
//! - A brute-force reference unrolls a pattern over many periods and checks every dependency of
//!   every micro-batch, every pair of operations on every resource, and counts the activations each
//!   GPU holds over a steady-state window; it is compared with `simulate::simulate` on random
//!   chains, partitions, periods and perturbed 1F1B* patterns (valid and invalid).
//! - 1F1B* properties: always valid for any period >= the largest load, in-flight = group index,
//!   the evaluator's memory = MadPipe's M(k, l, g), groups are monotone in the period.
//! - Proposition 1 on tiny cases, by exhaustive enumeration of integer patterns.
//! - Every `ScheduleViolation` variant on hand-made patterns.
//!
//! Times are multiples of 1/4 ms and transfers multiples of 1000/1024 ms (bandwidth 1024 B/s), so
//! all sums are exact in binary floating point and the comparison never depends on tolerances.

mod brute;
mod proposition_1;
mod random;
mod violations;

use pipeplan_formulations::evaluate::{evaluate, one_f_one_b_star_pattern};
use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_formulations::one_f_one_b_star::{groups, one_f_one_b_star, Resource};
use pipeplan_formulations::plan::{OpKind, Pattern, PatternOp, Plan, Schedule, Stage};
use pipeplan_formulations::simulate::{
    plan_operations, simulate, timed_ops, unroll, OpId, ResourceId, ScheduleViolation,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

// ------------------------------------------------------------------------------------------------
// Instances and plans

/// Bandwidth of every link: a power of two, so that transfers are exact.
const BW: f64 = 1024.0;

/// (forward ms, backward ms, weight bytes, output bytes) of one layer.
type L4 = (f64, f64, f64, f64);

fn instance(layers: &[L4], input: f64, gpus: u32, bw: f64) -> Instance {
    let layers = layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o))| Layer::new(format!("l{i}"), f, b, w, o));
    let cluster = Cluster::single_node(gpus, 1e18, bw);
    let inst = Instance::new("t", 1, input, layers.collect(), cluster);
    inst.validate().expect("test instance is valid");
    inst
}

fn async_plan(ends: &[usize], period: Option<f64>, pattern: Option<Pattern>) -> Plan {
    Plan::contiguous(ends, Schedule::Async { period, pattern })
}

fn op(op: OpKind, stage: usize) -> OpId {
    OpId { op, stage }
}

/// The pipeline resources of a contiguous one-GPU-per-stage plan, computed from the layers (not
/// through the crate's cost model): stage s, then the link after it. Also the resource of each
/// stage.
fn resources(layers: &[L4], ends: &[usize], bw: f64) -> (Vec<Resource>, Vec<usize>) {
    let mut res = Vec::new();
    let mut of_stage = Vec::new();
    let mut first = 0;
    for (s, &last) in ends.iter().enumerate() {
        of_stage.push(res.len());
        let f: f64 = layers[first..=last].iter().map(|l| l.0).sum();
        let b: f64 = layers[first..=last].iter().map(|l| l.1).sum();
        res.push(Resource {
            forward: f,
            backward: b,
        });
        if s + 1 < ends.len() {
            let x = layers[last].3 / bw * 1e3;
            res.push(Resource {
                forward: x,
                backward: x,
            });
        }
        first = last + 1;
    }
    (res, of_stage)
}

/// 1F1B* groups, re-derived from the paper: from the last resource backwards, a resource joins
/// the current group while the group's load stays <= T.
fn my_groups(loads: &[f64], t: f64) -> Vec<u32> {
    let mut g = vec![0; loads.len()];
    let (mut cur, mut sum) = (1, 0.0);
    for r in (0..loads.len()).rev() {
        assert!(loads[r] <= t, "load above the period");
        if sum + loads[r] > t {
            cur += 1;
            sum = 0.0;
        }
        sum += loads[r];
        g[r] = cur;
    }
    g
}
