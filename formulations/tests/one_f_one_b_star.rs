//! 1F1B* on instances that use every feature of the format, at arbitrary float
//! times and sizes, and at the tightest periods: the breakpoints, where a group's load equals the
//! period exactly.
//!
//! For a random contiguous partition (stage s on GPU s, possibly on two nodes) and a random
//! period at least the largest load:
//!
//! - the pipeline has 2P - 1 resources (every stage, every link between two stages);
//! - the explicit 1F1B* pattern passes the simulator;
//! - the simulator keeps, for every stage, as many micro-batches in flight as its 1F1B* group;
//! - the evaluator's memory of every GPU equals MadPipe's `M(k, l, g)` (`MadChain::m`) with `g`
//!   the 1F1B* group of its stage (weight versions, optimizer states, `saved` and `cut`
//!   overrides and batch scaling included).
//!
//! Stages that take 0 ms are the exception: see `zero_time_stage_keeps_its_group` (ignored, it
//! documents a disagreement between the simulator and M(k, l, g)).

use pipeplan_formulations::cost::{cut_costs, stage_costs};
use pipeplan_formulations::evaluate::{evaluate, one_f_one_b_star_pattern, pipeline_resources};
use pipeplan_formulations::instance::{Cluster, Instance, Layer, ScheduleKind, Training};
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::one_f_one_b_star::{groups, Resource};
use pipeplan_formulations::plan::{Plan, Schedule};
use pipeplan_formulations::simulate::simulate;
use pipeplan_formulations::testing::proptest_config;
use proptest::prelude::*;

/// (forward, backward, weights, output, saved override, cut override).
type Spec = (f64, f64, f64, f64, Option<f64>, Option<f64>);

#[derive(Debug, Clone)]
struct Case {
    layers: Vec<Spec>,
    input: f64,
    /// Last layer of every stage.
    ends: Vec<usize>,
    /// Unused GPUs beyond the stages.
    spare: u32,
    /// One GPU per node (every link inter-node) or one node.
    nodes: bool,
    /// (model batch, micro-batch, weight versions, optimizer factor).
    training: (u32, Option<u32>, u32, f64),
    /// How the period is chosen: a breakpoint (index), or the largest load times a factor.
    period: Period,
}

#[derive(Debug, Clone)]
enum Period {
    Breakpoint(usize),
    Factor(f64),
}

fn build(c: &Case) -> Instance {
    let (batch, micro_batch, weight_versions, optimizer_state_factor) = c.training;
    let gpus = c.ends.len() as u32 + c.spare;
    let layers = c.layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o, saved, cut))| Layer {
        saved,
        cut,
        ..Layer::new(format!("l{i}"), f, b, w, o)
    });
    let cluster = Cluster::single_node(gpus, 1e12, 7e9);
    let mut inst = Instance::new("star", batch, c.input, layers.collect(), cluster);
    inst.source = "formulations/tests/one_f_one_b_star.rs".into();
    inst.cluster.gpus_per_node = c.nodes.then_some(1);
    inst.cluster.bandwidth.inter_node = c.nodes.then_some(1.3e9);
    inst.training = Training {
        micro_batch,
        weight_versions,
        optimizer_state_factor,
        ..Training::default()
    };
    inst.validate().expect("valid instance");
    inst
}

fn size() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 8 => 1.0f64..1e8]
}

/// Positive times (see the module docs for 0 ms stages).
fn cases() -> impl Strategy<Value = Case> {
    (1usize..=9)
        .prop_flat_map(|n| {
            let layer = (
                0.001f64..20.0,
                0.001f64..20.0,
                size(),
                size(),
                proptest::option::weighted(0.25, size()),
                proptest::option::weighted(0.25, size()),
            );
            (
                proptest::collection::vec(layer, n),
                size(),
                proptest::sample::subsequence((0..n - 1).collect::<Vec<_>>(), 0..n.min(7)),
                0u32..=2,
                any::<bool>(),
                (
                    1u32..=4,
                    proptest::option::of(1u32..=8),
                    1u32..=3,
                    0.0f64..3.0,
                ),
                prop_oneof![
                    (0usize..1000).prop_map(Period::Breakpoint),
                    (1.0f64..3.0).prop_map(Period::Factor),
                    Just(Period::Factor(1.0)),
                ],
            )
        })
        .prop_map(|(layers, input, cuts, spare, nodes, training, period)| {
            let mut ends = cuts;
            ends.push(layers.len() - 1);
            Case {
                layers,
                input,
                ends,
                spare,
                nodes,
                training,
                period,
            }
        })
}

/// The evaluator's resources of a contiguous plan and the resource of every stage.
fn resources(inst: &Instance, plan: &Plan) -> (Vec<Resource>, Vec<usize>) {
    let chain = inst.chain();
    pipeline_resources(
        &stage_costs(inst, &chain, plan),
        &cut_costs(inst, &chain, plan),
        ScheduleKind::Async,
    )
}

/// Sums of consecutive loads that are at least the largest one, accumulated from the end as
/// 1F1B* accumulates its groups.
fn breakpoints(loads: &[f64]) -> Vec<f64> {
    let max = loads.iter().copied().fold(0.0, f64::max);
    let mut v = Vec::new();
    for j in 0..loads.len() {
        let mut s = 0.0;
        for i in (0..=j).rev() {
            s += loads[i];
            if s >= max {
                v.push(s);
            }
        }
    }
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Checks every claim of the module docs on one plan at period `t`.
fn check(inst: &Instance, ends: &[usize], t: f64) -> Result<(), TestCaseError> {
    let plan = Plan::contiguous(ends, Schedule::one_f_one_b_star(Some(t)));
    let (res, of_stage) = resources(inst, &plan);
    let p = ends.len();
    prop_assert_eq!(res.len(), 2 * p - 1, "2P - 1 resources");
    let loads: Vec<f64> = res.iter().map(Resource::load).collect();
    let g = groups(&loads, t).expect("t is at least every load");
    let pattern = one_f_one_b_star_pattern(inst, &plan, Some(t)).unwrap();
    let sim = simulate(inst, &plan, &pattern);
    prop_assert!(sim.is_ok(), "1F1B* at {} ms rejected: {:?}", t, sim.err());
    let sim = sim.unwrap();
    let ev = evaluate(inst, &plan).unwrap();
    prop_assert_eq!(ev.valid_schedule, Some(true));
    let mc = MadChain::new(inst);
    let mut first = 0;
    for (s, &last) in ends.iter().enumerate() {
        let gs = g[of_stage[s]];
        prop_assert_eq!(sim.in_flight[s], gs, "stage {} in flight", s);
        prop_assert_eq!(ev.in_flight[s], gs);
        let m = mc.m(first, last + 1, gs as f64);
        prop_assert!(
            close(ev.peak_memory[s], m),
            "GPU {}: evaluator {} vs M({}, {}, {}) = {}",
            s,
            ev.peak_memory[s],
            first,
            last + 1,
            gs,
            m
        );
        prop_assert!(close(
            sim.peak_activations[s],
            gs as f64 * mc.activations(first, last + 1)
        ));
        first = last + 1;
    }
    for gpu in p..inst.cluster.gpus as usize {
        prop_assert_eq!(ev.peak_memory[gpu], 0.0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(600))]

    #[test]
    fn star_passes_the_simulator_and_keeps_m_k_l_g(case in cases()) {
        let inst = build(&case);
        let plan = Plan::contiguous(&case.ends, Schedule::default_for(&inst));
        let loads: Vec<f64> = resources(&inst, &plan).0.iter().map(Resource::load).collect();
        let max = loads.iter().copied().fold(0.0, f64::max);
        let t = match case.period {
            Period::Breakpoint(i) => {
                let b = breakpoints(&loads);
                b[i % b.len()]
            }
            Period::Factor(f) => max * f,
        };
        check(&inst, &case.ends, t)?;
    }

    /// Every breakpoint of one partition, in turn: the tightest periods, where groups change.
    #[test]
    fn star_at_every_breakpoint(case in cases()) {
        let inst = build(&case);
        let plan = Plan::contiguous(&case.ends, Schedule::default_for(&inst));
        let loads: Vec<f64> = resources(&inst, &plan).0.iter().map(Resource::load).collect();
        for t in breakpoints(&loads) {
            check(&inst, &case.ends, t)?;
        }
    }
}

/// The last layer takes 0 ms and is a stage of its own. At T = 4 ms the resources (stage 0, link,
/// stage 1) have loads (4, ~0, 0): 1F1B* puts the link and stage 1 in group 1 and stage 0 in
/// group 2, so M(k, l, g) counts 1 micro-batch for stage 1.
///
/// The simulator measures 0 for stage 1: its F and B take 0 ms and nothing follows it in its
/// group, so a micro-batch's lifetime (start of F to end of B) is (g - 1) T + 0 ms and it counts
/// ceil(lifetime / T) = g - 1. More generally a stage whose 1F1B* span (its load plus the loads
/// after it in its group) is 0 ms is counted one micro-batch short, and the evaluator's memory is
/// below M(k, l, g). Ignored: it documents this disagreement.
#[test]
#[ignore = "simulator counts g - 1 in flight for a stage whose 1F1B* span takes 0 ms"]
fn zero_time_stage_keeps_its_group() {
    let case = Case {
        layers: vec![
            (1.0, 3.0, 1e6, 1e3, None, None),
            (0.0, 0.0, 1e6, 1e3, None, None),
        ],
        input: 1e3,
        ends: vec![0, 1],
        spare: 0,
        nodes: false,
        training: (1, None, 2, 0.0),
        period: Period::Factor(1.0),
    };
    let inst = build(&case);
    let r: Result<(), TestCaseError> = check(&inst, &case.ends, 4.0);
    r.unwrap();
}
