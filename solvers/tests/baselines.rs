//! The baselines against brute force, against each other and against the neutral evaluator, on
//! random small chains (2-10 layers, 1-4 GPUs, random times, sizes and training settings):
//!
//! - `ilp-balanced-time` (HiGHS) and `balanced-time` (DP) claim the same optimum, both `Optimal`;
//! - `balanced-time` and `balanced-params` equal the brute-force minimum over every contiguous
//!   partition (every cut set) of their own stage costs;
//! - `balanced-memory` equals the brute-force minimum of its memory model and, under the
//!   synchronous schedules (1f1b, gpipe), where that model is the evaluator's (docs/evaluator.md), its
//!   claimed peaks equal the evaluator's and its optimum equals the least evaluated max memory
//!   over all partitions;
//! - every baseline's plan passes the evaluator and a solve is deterministic.
//!
//! Plus unit tests of edge cases: one GPU, as many stages as layers, `--stages`, unknown `--set`.

use pipeplan_formulations::cost::weight_versions;
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::instance::{Cluster, Instance, Layer, ScheduleKind, Training};
use pipeplan_formulations::testing::proptest_config;
use pipeplan_formulations::{Plan, Schedule};
use pipeplan_solvers::harness::run;
use pipeplan_solvers::{registry, Solution, SolveError, SolveOptions, Status};
use proptest::prelude::*;

// ------------------------------------------------------------------------------------------------
// Instances

/// (forward ms, backward ms, weight bytes, output bytes, saved override, cut override).
type LayerSpec = (f64, f64, f64, f64, Option<f64>, Option<f64>);

/// Training knobs: (schedule, micro-batches, model batch, micro-batch, weight versions,
/// optimizer state factor).
type TrainSpec = (ScheduleKind, Option<u32>, u32, Option<u32>, u32, f64);

fn build(layers: &[LayerSpec], input: f64, gpus: u32, two_nodes: bool, t: TrainSpec) -> Instance {
    let (schedule, micro_batches, batch, micro_batch, weight_versions, optimizer_state_factor) = t;
    let layers = layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o, saved, cut))| Layer {
        saved,
        cut,
        ..Layer::new(format!("l{i}"), f, b, w, o)
    });
    let cluster = Cluster::single_node(gpus, 64e6, 10e9);
    let mut inst = Instance::new("random", batch, input, layers.collect(), cluster);
    inst.source = "solvers/tests/baselines.rs".into();
    inst.cluster.gpus_per_node = two_nodes.then_some(1);
    inst.cluster.bandwidth.inter_node = two_nodes.then_some(1e9);
    inst.training = Training {
        micro_batch,
        micro_batches,
        schedule,
        weight_versions,
        optimizer_state_factor,
        precision: None,
    };
    inst.validate().expect("generated test instance is valid");
    inst
}

fn layer() -> impl Strategy<Value = LayerSpec> {
    (
        0.01f64..10.0,
        0.01f64..20.0,
        prop_oneof![Just(0.0), 1.0f64..1e7],
        1.0f64..1e6,
        prop::option::of(0.0f64..1e6),
        prop::option::of(0.0f64..1e6),
    )
}

fn schedule() -> impl Strategy<Value = ScheduleKind> {
    prop_oneof![
        Just(ScheduleKind::Async),
        Just(ScheduleKind::OneFOneB),
        Just(ScheduleKind::Gpipe)
    ]
}

/// A random valid instance with `sched` as its schedule family, and a `--stages` choice
/// (`None`: the default, one stage per GPU, at most one per layer).
fn instance_with(
    sched: BoxedStrategy<ScheduleKind>,
) -> impl Strategy<Value = (Instance, Option<usize>)> {
    (
        prop::collection::vec(layer(), 2..=10),
        1.0f64..1e6,
        1u32..=4,
        any::<bool>(),
        (
            sched,
            prop::option::of(1u32..=8),
            1u32..=4,
            prop::option::of(1u32..=8),
            1u32..=2,
            prop_oneof![Just(0.0), Just(1.0), Just(2.0), 0.0f64..6.0],
        ),
        0usize..=4,
    )
        .prop_map(|(layers, input, gpus, two_nodes, t, stages)| {
            let inst = build(&layers, input, gpus, two_nodes, t);
            let max = inst.num_layers().min(gpus as usize);
            let stages = (stages > 0).then_some(stages.min(max));
            (inst, stages)
        })
}

fn any_instance() -> impl Strategy<Value = (Instance, Option<usize>)> {
    instance_with(schedule().boxed())
}

fn sync_instance() -> impl Strategy<Value = (Instance, Option<usize>)> {
    instance_with(prop_oneof![Just(ScheduleKind::OneFOneB), Just(ScheduleKind::Gpipe)].boxed())
}

fn opts(stages: Option<usize>) -> SolveOptions {
    SolveOptions {
        stages,
        ..SolveOptions::default()
    }
}

/// Stage count the baselines use.
fn stage_count(inst: &Instance, stages: Option<usize>) -> usize {
    stages.unwrap_or(inst.num_layers().min(inst.cluster.gpus as usize))
}

fn solve(name: &str, inst: &Instance, o: &SolveOptions) -> Solution {
    let algo = registry::by_name(name).unwrap_or_else(|| panic!("{name} is registered"));
    run(algo.as_ref(), inst, o).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn objective(sol: &Solution) -> f64 {
    sol.claimed
        .objective
        .as_ref()
        .unwrap_or_else(|| panic!("{} claims an objective", sol.algorithm))
        .value
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

// ------------------------------------------------------------------------------------------------
// Brute force

/// Every contiguous partition of `l` layers into `p` non-empty stages, as the last layer of each
/// stage: one per set of p - 1 cuts among the l - 1 gaps.
fn partitions(l: usize, p: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for mask in 0u32..(1 << (l - 1)) {
        if mask.count_ones() as usize != p - 1 {
            continue;
        }
        let mut ends: Vec<usize> = (0..l - 1).filter(|&i| mask & (1 << i) != 0).collect();
        ends.push(l - 1);
        out.push(ends);
    }
    out
}

/// Stage ranges `(s, k, l)` (stage s holds layers `k..l`) of a partition given by its ends.
fn ranges(ends: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut first = 0;
    ends.iter()
        .enumerate()
        .map(|(s, &e)| {
            let r = (s, first, e + 1);
            first = e + 1;
            r
        })
        .collect()
}

/// A stage cost `(s, k, l)` -> value of stage s holding layers `k..l`.
type StageCost = Box<dyn Fn(usize, usize, usize) -> f64>;

/// Max stage cost of the partition given by its ends.
fn max_stage(ends: &[usize], cost: impl Fn(usize, usize, usize) -> f64) -> f64 {
    ranges(ends)
        .into_iter()
        .map(|(s, k, l)| cost(s, k, l))
        .fold(0.0, f64::max)
}

/// Minimum over all partitions into `p` stages of the max stage cost.
fn brute_min_max(l: usize, p: usize, cost: impl Fn(usize, usize, usize) -> f64) -> f64 {
    partitions(l, p)
        .iter()
        .map(|ends| max_stage(ends, &cost))
        .fold(f64::INFINITY, f64::min)
}

/// balanced-time's stage cost (baselines.rs `Prefix::compute`): sum of the chain's forward +
/// backward times (scaled to the trained micro-batch), summed here layer by layer.
fn compute_cost(inst: &Instance) -> impl Fn(usize, usize, usize) -> f64 {
    let c = inst.chain();
    move |_, k, l| (k..l).map(|i| c.forward[i] + c.backward[i]).sum()
}

/// balanced-params' stage cost: parameter bytes of the stage.
fn params_cost(inst: &Instance) -> impl Fn(usize, usize, usize) -> f64 {
    let c = inst.chain();
    move |_, k, l| c.weights(k, l)
}

/// balanced-memory's stage cost (baselines.rs `stage_memory`), written out independently: model
/// states + in-flight x saved + 2 x cut bytes on each side that has a neighbouring stage, with
/// in-flight 1f1b min(P - s, m), gpipe m, async P - s (s 0-based).
fn memory_cost(inst: &Instance, p: usize) -> impl Fn(usize, usize, usize) -> f64 {
    let c = inst.chain();
    let kind = inst.training.schedule;
    let m = inst.micro_batches() as usize;
    let copies = weight_versions(inst, kind) + 1.0 + inst.training.optimizer_state_factor;
    let n = c.len();
    move |s, k, l| {
        let in_flight = match kind {
            ScheduleKind::OneFOneB => (p - s).min(m),
            ScheduleKind::Gpipe => m,
            ScheduleKind::Async => p - s,
        } as f64;
        let mut mem = c.weights(k, l) * copies + in_flight * c.saved(k, l);
        if k > 0 {
            mem += 2.0 * c.cut[k - 1];
        }
        if l < n {
            mem += 2.0 * c.cut[l - 1];
        }
        mem
    }
}

/// The plan's stages as their last layers, checking they are contiguous, on GPUs 0, 1, ...
fn plan_ends(plan: &Plan, layers: usize) -> Vec<usize> {
    let mut first = 0;
    let mut ends = Vec::new();
    for (s, st) in plan.stages.iter().enumerate() {
        assert_eq!(st.first, first, "stage {s} starts where the previous ended");
        assert!(st.last >= st.first, "stage {s} is empty");
        assert_eq!(st.gpus, vec![s as u32], "stage {s} runs on GPU {s}");
        first = st.last + 1;
        ends.push(st.last);
    }
    assert_eq!(first, layers, "the stages cover the chain");
    ends
}

/// The JSON of a solution without its wall time (the one field that may differ between runs).
fn json_without_time(mut sol: Solution) -> String {
    sol.stats.wall_ms = 0.0;
    serde_json::to_string(&sol).expect("solutions serialize")
}

// ------------------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(proptest_config(24))]

    /// (a) The MILP and the DP of the same min-max problem agree, and both prove optimality.
    #[test]
    fn ilp_balanced_time_matches_dp((inst, stages) in any_instance()) {
        let o = opts(stages);
        let dp = solve("balanced-time", &inst, &o);
        let ilp = solve("ilp-balanced-time", &inst, &o);
        prop_assert_eq!(dp.stats.status, Status::Optimal);
        prop_assert_eq!(ilp.stats.status, Status::Optimal);
        let (a, b) = (objective(&dp), objective(&ilp));
        prop_assert!(close(a, b, 1e-6), "balanced-time {} vs ilp-balanced-time {}", a, b);
        // The ILP's claim is the value of the plan it returns.
        let ends = plan_ends(&ilp.plan, inst.num_layers());
        let value = max_stage(&ends, compute_cost(&inst));
        prop_assert!(close(value, b, 1e-9), "ILP plan value {} vs claim {}", value, b);
    }

    /// (b) balanced-time (and balanced-params) reach the brute-force optimum of their own stage
    /// cost over every cut set, and their plans achieve the claimed value.
    #[test]
    fn balanced_dps_match_brute_force((inst, stages) in any_instance()) {
        let o = opts(stages);
        let (nl, p) = (inst.num_layers(), stage_count(&inst, stages));
        for (name, cost) in [
            ("balanced-time", Box::new(compute_cost(&inst)) as StageCost),
            ("balanced-params", Box::new(params_cost(&inst))),
        ] {
            let sol = solve(name, &inst, &o);
            prop_assert_eq!(sol.stats.status, Status::Optimal);
            let claimed = objective(&sol);
            let brute = brute_min_max(nl, p, &cost);
            prop_assert!(
                close(claimed, brute, 1e-9),
                "{}: claimed {} vs brute force {}", name, claimed, brute
            );
            let ends = plan_ends(&sol.plan, nl);
            prop_assert_eq!(ends.len(), p);
            let achieved = max_stage(&ends, &cost);
            prop_assert!(
                close(achieved, claimed, 1e-9),
                "{}: plan value {} vs claim {}", name, achieved, claimed
            );
        }
        // The evaluator's stage times are the same per-stage compute (one GPU per stage, no TP).
        let bt = solve("balanced-time", &inst, &o);
        let ev = bt.evaluated.as_ref().unwrap();
        let max_stage = ev.stage_time.iter().copied().fold(0.0, f64::max);
        prop_assert!(close(max_stage, objective(&bt), 1e-9));
    }

    /// (c) balanced-memory is the brute-force optimum of its memory model on every schedule.
    #[test]
    fn balanced_memory_matches_brute_force((inst, stages) in any_instance()) {
        let sol = solve("balanced-memory", &inst, &opts(stages));
        let (nl, p) = (inst.num_layers(), stage_count(&inst, stages));
        prop_assert_eq!(sol.stats.status, Status::Optimal);
        let claimed = sol.claimed.max_memory.expect("balanced-memory claims max memory");
        prop_assert!(close(claimed, objective(&sol), 0.0));
        let brute = brute_min_max(nl, p, memory_cost(&inst, p));
        prop_assert!(close(claimed, brute, 1e-9), "claimed {} vs brute force {}", claimed, brute);
    }

    /// (c) Under 1f1b and gpipe the memory model is the evaluator's: the claimed per-GPU peaks are
    /// the evaluated ones, and the optimum is the least evaluated max memory of all partitions.
    #[test]
    fn balanced_memory_is_the_evaluators_memory_when_synchronous(
        (inst, stages) in sync_instance()
    ) {
        let sol = solve("balanced-memory", &inst, &opts(stages));
        let (nl, p) = (inst.num_layers(), stage_count(&inst, stages));
        let ev = sol.evaluated.as_ref().unwrap();
        let claimed = sol.claimed.max_memory.unwrap();
        prop_assert!(
            close(claimed, ev.max_memory, 1e-9),
            "claimed {} vs evaluated {}", claimed, ev.max_memory
        );
        let peaks = sol.claimed.peak_memory.as_ref().unwrap();
        prop_assert_eq!(peaks.len(), ev.peak_memory.len());
        for (g, (c, e)) in peaks.iter().zip(&ev.peak_memory).enumerate() {
            prop_assert!(close(*c, *e, 1e-9), "GPU {}: claimed {} vs evaluated {}", g, c, e);
        }
        prop_assert_eq!(sol.claimed.fits, Some(ev.fits));
        let schedule = Schedule::default_for(&inst);
        let best = partitions(nl, p)
            .iter()
            .map(|ends| {
                let plan = Plan::contiguous(ends, schedule.clone());
                evaluate(&inst, &plan).unwrap().max_memory
            })
            .fold(f64::INFINITY, f64::min);
        prop_assert!(close(claimed, best, 1e-9), "claimed {} vs best evaluated {}", claimed, best);
    }

    /// (d) Every baseline returns a contiguous plan with the requested stage count that the
    /// evaluator accepts (its schedule is valid), and the same solve twice gives the same JSON.
    #[test]
    fn every_baseline_is_valid_and_deterministic(
        (inst, stages) in any_instance(),
        seed in any::<u64>()
    ) {
        let o = SolveOptions { seed, ..opts(stages) };
        let p = stage_count(&inst, stages);
        for algo in baselines() {
            let name = algo.name();
            let sol = run(algo.as_ref(), &inst, &o).unwrap_or_else(|e| panic!("{name}: {e}"));
            let ev = sol.evaluated.as_ref().expect("the harness evaluates");
            prop_assert_ne!(ev.valid_schedule, Some(false), "{}: {:?}", name, ev.notes);
            prop_assert_eq!(ev.schedule, inst.training.schedule);
            prop_assert_eq!(plan_ends(&sol.plan, inst.num_layers()).len(), p, "{}", name);
            prop_assert_eq!(&sol.algorithm, name);
            prop_assert_eq!(
                sol.stats.status,
                if algo.exact() { Status::Optimal } else { Status::Heuristic },
                "{}", name
            );
            let again = run(algo.as_ref(), &inst, &o).unwrap();
            prop_assert_eq!(json_without_time(sol), json_without_time(again), "{}", name);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Edge cases

/// A chain with these forward times (backward = 2 x forward), 1 MB weights and activations.
fn chain(times: &[f64], gpus: u32) -> Instance {
    let layers: Vec<LayerSpec> = times
        .iter()
        .map(|&t| (t, 2.0 * t, 1e6, 1e6, None, None))
        .collect();
    let training = (ScheduleKind::Async, None, 1, None, 2, 0.0);
    build(&layers, 1e6, gpus, false, training)
}

#[test]
fn one_gpu_gives_one_stage_of_everything() {
    let inst = chain(&[1.0, 2.0, 3.0, 4.0], 1);
    for algo in baselines() {
        let sol = run(algo.as_ref(), &inst, &SolveOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", algo.name()));
        assert_eq!(plan_ends(&sol.plan, 4), vec![3], "{}", algo.name());
        let obj = objective(&sol);
        match algo.name() {
            "balanced-params" => assert_eq!(obj, 4e6),
            // Async, one stage: states 3 W + 1 in flight x saved (the inputs), no buffers.
            "balanced-memory" => assert_eq!(obj, 3.0 * 4e6 + 4e6),
            // Every layer: forward + backward = 3 t.
            _ => assert!(close(obj, 30.0, 1e-9), "{}: {obj}", algo.name()),
        }
        assert_eq!(sol.evaluated.unwrap().valid_schedule, Some(true));
    }
}

#[test]
fn as_many_stages_as_layers_gives_one_layer_per_stage() {
    // 4 layers on 6 GPUs: the default stage count is capped at 4, and --stages 4 asks for it.
    let inst = chain(&[4.0, 1.0, 3.0, 2.0], 6);
    for stages in [None, Some(4)] {
        for algo in baselines() {
            let o = opts(stages);
            let sol =
                run(algo.as_ref(), &inst, &o).unwrap_or_else(|e| panic!("{}: {e}", algo.name()));
            assert_eq!(plan_ends(&sol.plan, 4), vec![0, 1, 2, 3], "{}", algo.name());
            if matches!(
                algo.name(),
                "uniform" | "balanced-time" | "ilp-balanced-time"
            ) {
                assert!(close(objective(&sol), 12.0, 1e-9), "{}", algo.name());
            }
        }
    }
}

#[test]
fn stages_option_is_respected() {
    let inst = chain(&[1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 4);
    for p in 1..=4 {
        for algo in baselines() {
            let sol = run(algo.as_ref(), &inst, &opts(Some(p)))
                .unwrap_or_else(|e| panic!("{}: {e}", algo.name()));
            assert_eq!(sol.plan.stages.len(), p, "{} --stages {p}", algo.name());
            assert_eq!(
                sol.evaluated.unwrap().gpus_used,
                p as u32,
                "{} --stages {p}",
                algo.name()
            );
        }
    }
    // balanced-time on 6 equal layers (3 ms each) in 2 stages: 9 ms; uniform agrees here.
    let bt = solve("balanced-time", &inst, &opts(Some(2)));
    assert!(close(objective(&bt), 9.0, 1e-12));
}

#[test]
fn impossible_stage_counts_are_rejected_with_the_option_named() {
    let inst = chain(&[1.0, 1.0, 1.0], 4);
    for (p, says) in [(0, "at least 1"), (5, "the cluster has 4"), (4, "3 layers")] {
        for algo in baselines() {
            let err = run(algo.as_ref(), &inst, &opts(Some(p))).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, SolveError::Input(_))
                    && msg.contains("--stages")
                    && msg.contains(says),
                "{} --stages {p}: {msg}",
                algo.name()
            );
        }
    }
}

#[test]
fn unknown_setting_is_rejected_with_its_name() {
    let inst = chain(&[1.0, 2.0, 3.0], 2);
    for algo in baselines() {
        let mut o = SolveOptions::default();
        o.params.insert("no-such-key".into(), "1".into());
        let err = run(algo.as_ref(), &inst, &o).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, SolveError::Input(_)) && msg.contains("no-such-key"),
            "{}: {msg}",
            algo.name()
        );
        assert!(msg.contains(algo.name()), "{}: {msg}", algo.name());
    }
}

/// The registered baselines (other families have other contracts: async plans, infeasibility,
/// fewer stages).
fn baselines() -> Vec<Box<dyn pipeplan_solvers::algorithm::Algorithm>> {
    registry::all()
        .into_iter()
        .filter(|a| a.family() == pipeplan_solvers::algorithm::Family::Baseline)
        .collect()
}
