//! The schedule ILP (`madpipe::schedule_ilp`) against 1F1B*, the simulator and the evaluator:
//!
//! - Proposition 1 of the MadPipe paper: on random contiguous allocations (2-4 stages, with and
//!   without communications) and several periods, the ILP's least memory of every GPU equals
//!   1F1B*'s (the evaluator's peak memory at `Schedule::one_f_one_b_star(Some(T))`);
//! - every returned pattern passes the evaluator (`valid_schedule == Some(true)`, `fits`) with
//!   the peak memory the ILP claims;
//! - the least period of a contiguous allocation equals 1F1B*'s valid period (the least
//!   breakpoint at which 1F1B* fits), found by scanning breakpoints with the evaluator;
//! - non-contiguous allocations (stages sharing a GPU, two cuts on one link) get valid patterns,
//!   and their least period is consistent (`fit_memory` proves the bracket's lower end
//!   infeasible);
//! - bad input gets precise errors; a tiny time limit is honoured; solves are deterministic.
//!
//! `proposition_1_stress` (ignored, ~1 min in release) runs Proposition 1 on thousands of
//! (allocation, period) pairs; `proposition_1.proptest-regressions` (beside the proptests) keeps
//! the cases on which HiGHS returned wrong optima under other settings. The exhaustive search
//! that checks non-contiguous optima is a unit test of the module
//! (`least_memory_matches_exhaustive_search`).

mod determinism;
mod errors;
mod proposition_1;
mod shared_gpus;

use pipeplan_formulations::evaluate::{evaluate, Evaluation};
use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_formulations::plan::{OpKind, Schedule, Stage};
use pipeplan_formulations::simulate::plan_operations;
use pipeplan_formulations::Plan;
use pipeplan_solvers::madpipe::schedule_ilp::{
    fit_memory, least_memory, least_period, IlpGoal, IlpOptions, IlpSchedule, MemoryObjective,
};
use pipeplan_solvers::{SolveError, Status};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const MIB: f64 = 1024.0 * 1024.0;

/// (forward ms, backward ms, weight MiB, output MiB).
type L = (f64, f64, f64, f64);

fn instance(layers: &[L], gpus: u32, memory: f64, bandwidth: f64) -> Instance {
    let layers = layers.iter().enumerate();
    let layers =
        layers.map(|(i, &(f, b, w, o))| Layer::new(format!("l{i}"), f, b, w * MIB, o * MIB));
    let cluster = Cluster::single_node(gpus, memory, bandwidth);
    let mut inst = Instance::new("test", 1, 2.0 * MIB, layers.collect(), cluster);
    inst.source = "solvers/tests/schedule_ilp".into();
    inst.validate().expect("valid test instance");
    inst
}

fn opts() -> IlpOptions {
    IlpOptions {
        time_limit: Some(Duration::from_secs(120)),
        ..IlpOptions::default()
    }
}

fn contiguous(ends: &[usize]) -> Vec<Stage> {
    Plan::contiguous(ends, Schedule::one_f_one_b_star(None)).stages
}

/// The asynchronous plan of `stages` at `period` (`None`: the least the loads allow), with no
/// pattern of its own.
fn async_plan(stages: &[Stage], period: Option<f64>) -> Plan {
    Plan {
        order: None,
        stages: stages.to_vec(),
        schedule: Schedule::one_f_one_b_star(period),
    }
}

/// Loads of the pipeline's resources in chain order (stage, link, stage, ...), from the
/// simulator's operations.
fn resource_loads(inst: &Instance, stages: &[Stage]) -> Vec<f64> {
    let ops = plan_operations(inst, &async_plan(stages, None));
    let mut v = Vec::new();
    for s in 0..stages.len() {
        let f = |op| {
            ops.get(&pipeplan_formulations::simulate::OpId { op, stage: s })
                .map(|x| x.0)
        };
        v.push(f(OpKind::F).unwrap() + f(OpKind::B).unwrap());
        if let (Some(a), Some(b)) = (f(OpKind::SendF), f(OpKind::SendB)) {
            v.push(a + b);
        }
    }
    v
}

/// The evaluator's verdict on 1F1B* at period `t`.
fn star(inst: &Instance, stages: &[Stage], t: f64) -> Evaluation {
    let plan = async_plan(stages, Some(t));
    evaluate(inst, &plan).expect("1F1B* evaluates")
}

/// Checks an ILP schedule with the evaluator: valid pattern, memory equal to the claim.
fn check_with_evaluator(inst: &Instance, s: &IlpSchedule) -> Evaluation {
    let ev = evaluate(inst, &s.plan).expect("the ILP's plan evaluates");
    assert_eq!(ev.valid_schedule, Some(true), "{:?}", ev.notes);
    assert_eq!(ev.period_ms, Some(s.period));
    for (g, (a, b)) in ev.peak_memory.iter().zip(&s.memory).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * a.max(1.0),
            "GPU {g}: evaluator {a}, ILP {b}"
        );
    }
    assert_eq!(ev.in_flight, s.in_flight);
    ev
}

/// 1F1B*'s breakpoints: the largest load and every larger sum of consecutive resource loads, in
/// increasing order (1F1B*'s groups, hence its memory, only change there).
fn breakpoints(inst: &Instance, stages: &[Stage]) -> Vec<f64> {
    let loads = resource_loads(inst, stages);
    let max = loads.iter().copied().fold(0.0, f64::max);
    let mut periods = vec![max];
    for i in 0..loads.len() {
        let mut sum = 0.0;
        for l in &loads[i..] {
            sum += l;
            if sum > max {
                periods.push(sum);
            }
        }
    }
    periods.sort_by(f64::total_cmp);
    periods.dedup();
    periods
}

/// The breakpoints and the midpoints between consecutive ones.
fn breakpoints_and_midpoints(inst: &Instance, stages: &[Stage]) -> Vec<f64> {
    let mut periods = breakpoints(inst, stages);
    let mids: Vec<f64> = periods.windows(2).map(|w| 0.5 * (w[0] + w[1])).collect();
    periods.extend(mids);
    periods
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

// ------------------------------------------------------------------------------------------------
// Proposition 1

fn layer() -> impl Strategy<Value = L> {
    (0.2f64..4.0, 0.2f64..8.0, 0.0f64..50.0, 0.5f64..40.0)
}

/// A chain of 2-6 layers cut into 2-4 stages (cut positions), and a link bandwidth (slow links
/// make communications matter).
fn contiguous_case() -> impl Strategy<Value = (Vec<L>, Vec<usize>, f64)> {
    (
        prop::collection::vec(layer(), 2..=6),
        prop::collection::vec(any::<bool>(), 5),
        prop_oneof![Just(1e12), Just(20e9), Just(4e9)],
    )
        .prop_map(|(layers, cuts, bw)| {
            let n = layers.len();
            let mut ends: Vec<usize> = (0..n - 1).filter(|&i| cuts[i]).collect();
            ends.truncate(3);
            if ends.is_empty() {
                ends.push(0);
            }
            ends.push(n - 1);
            (layers, ends, bw)
        })
}

fn shared_case() -> (Instance, Vec<Stage>) {
    let layers = [
        (1.0, 2.0, 10.0, 8.0),
        (2.0, 3.0, 20.0, 4.0),
        (0.5, 1.0, 5.0, 6.0),
        (1.5, 2.5, 8.0, 2.0),
        (1.0, 2.0, 4.0, 3.0),
        (2.0, 3.5, 6.0, 1.0),
    ];
    let inst = instance(&layers, 3, 1e15, 8e9);
    // GPU 0 holds stages 0 and 2 (MadPipe's special processor): the cuts 0|1 and 1|2 both use
    // the link 0-1.
    let stages = vec![
        Stage::single(0, 0, 0),
        Stage::single(1, 2, 1),
        Stage::single(3, 3, 0),
        Stage::single(4, 5, 2),
    ];
    (inst, stages)
}
