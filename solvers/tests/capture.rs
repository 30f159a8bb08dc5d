//! The CAPTURE family: capture-exact against enumeration (and a naive enumerator written here)
//! on many small random instances with negative M_a and many ties; CAPSlog's greedy missing the
//! optimum; determinism; settings.

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

/// The naive reference: every placement, ranked by sorted-descending memory then stage sequence.
/// A stage as (last layer, dp, tp).
type Shape = (usize, u32, u32);
/// The naive search's best: sorted memory, stages, memory in placement order.
type Best = Option<(Vec<f64>, Vec<(usize, usize)>, Vec<f64>)>;
/// What the naive search needs: predictor, configs, GPUs, per node, layers, correction.
type Ctx<'a> = (
    &'a Predictor,
    &'a [StageConfig],
    usize,
    usize,
    usize,
    Option<u32>,
);

fn naive(
    pred: &Predictor,
    configs: &[StageConfig],
    gpus: usize,
    per_node: usize,
    correction: Option<u32>,
) -> Option<(Vec<f64>, Vec<Shape>)> {
    let l = pred.layers();
    let mut best: Best = None;
    let mut stack: Vec<(usize, usize)> = Vec::new();
    fn rec(i: usize, g: usize, ctx: Ctx, stack: &mut Vec<(usize, usize)>, best: &mut Best) {
        let (pred, configs, gpus, per_node, l, correction) = ctx;
        if i == l || g == gpus {
            if i == l && g == gpus {
                let mut first = 0;
                let mut v = Vec::new();
                let p = stack.len();
                for (s, &(last, c)) in stack.iter().enumerate() {
                    let m = match correction {
                        None => pred.memory(first, last, configs[c]).unwrap(),
                        Some(mb) => pred.memory_1f1b(first, last, configs[c], s, p, mb).unwrap(),
                    };
                    v.extend(std::iter::repeat_n(m, configs[c].degree as usize));
                    first = last + 1;
                }
                let mut sorted = v.clone();
                sorted.sort_by(|a, b| b.total_cmp(a));
                let better = match best {
                    None => true,
                    Some((bs, bc, _)) => {
                        let o = sorted
                            .iter()
                            .zip(bs.iter())
                            .map(|(a, b)| a.total_cmp(b))
                            .find(|o| o.is_ne())
                            .unwrap_or(std::cmp::Ordering::Equal);
                        o.is_lt() || (o.is_eq() && stack.as_slice() < bc.as_slice())
                    }
                };
                if better {
                    *best = Some((sorted, stack.clone(), v));
                }
            }
            return;
        }
        for j in i..l {
            for (c, cfg) in configs.iter().enumerate() {
                let d = cfg.degree as usize;
                if g % per_node + d > per_node || g + d > gpus {
                    continue;
                }
                stack.push((j, c));
                rec(j + 1, g + d, ctx, stack, best);
                stack.pop();
            }
        }
    }
    rec(
        0,
        0,
        (pred, configs, gpus, per_node, l, correction),
        &mut stack,
        &mut best,
    );
    best.map(|(_, choices, v)| {
        let shape = choices
            .iter()
            .map(|&(last, c)| {
                let d = configs[c].degree;
                match configs[c].parallelism {
                    Parallelism::Pp => (last, 1, 1),
                    Parallelism::Dp => (last, d, 1),
                    Parallelism::Tp => (last, 1, d),
                }
            })
            .collect();
        (v, shape)
    })
}

fn small_values(n: usize, lo: i32, hi: i32) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((lo..=hi).prop_map(f64::from), n)
}

fn random_case() -> impl Strategy<Value = (u32, u32, usize, Vec<Vec<f64>>)> {
    (
        prop_oneof![Just(1u32), Just(2), Just(4)],
        1u32..=2,
        1usize..=6,
    )
        .prop_flat_map(|(per_node, nodes, layers)| {
            // Five tables (pp, dp2, tp2, dp4, tp4) x (m_i, m_a): small integers, many ties.
            let vals = prop::collection::vec(
                prop_oneof![small_values(layers, 1, 6), small_values(layers, -3, 3)],
                10,
            );
            (Just(per_node * nodes), Just(per_node), Just(layers), vals)
        })
        .prop_map(|(g, k, l, mut vals)| {
            for t in (0..10).step_by(2) {
                // M_i must be non-negative.
                vals[t].iter_mut().for_each(|x| *x = x.abs());
            }
            (g, k, l, vals)
        })
}

fn case_instance(g: u32, k: u32, l: usize, vals: &[Vec<f64>]) -> Instance {
    let names = [("pp", 1), ("dp", 2), ("tp", 2), ("dp", 4), ("tp", 4)];
    let tables: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(t, &(p, d))| (p, d, vals[2 * t].clone(), vals[2 * t + 1].clone()))
        .collect();
    instance(g, k, &tables, l)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Hybrid space: capture-exact = capture (enumeration with pruning) = naive enumeration,
    /// plan and per-GPU memory, ties broken identically.
    #[test]
    fn capture_exact_equals_enumeration_hybrid((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let prof = MemoryProfile::of_instance(&inst, k).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let configs = pred.configs(k);
        let reference = naive(&pred, &configs, g as usize, k as usize, None);
        let exact = harness::run(&CAPTURE_EXACT, &inst, &SolveOptions::default());
        let enumerated = harness::run(&CAPTURE, &inst, &SolveOptions::default());
        match reference {
            None => {
                prop_assert!(exact.is_err() && enumerated.is_err());
            }
            Some((v, shape_ref)) => {
                let (exact, enumerated) = (exact.unwrap(), enumerated.unwrap());
                prop_assert_eq!(exact.stats.status, Status::Optimal);
                prop_assert_eq!(enumerated.stats.status, Status::Optimal);
                prop_assert_eq!(&shape(&exact), &shape_ref);
                prop_assert_eq!(&shape(&enumerated), &shape_ref);
                let claimed = exact.claimed.peak_memory.clone().unwrap();
                prop_assert_eq!(&claimed[..v.len()], &v[..]);
                prop_assert_eq!(&enumerated.claimed.peak_memory, &exact.claimed.peak_memory);
            }
        }
    }

    /// Pipeline space: capture-exact (space=pipeline) = mcap-bf = naive, and capslog never beats
    /// them.
    #[test]
    fn capture_exact_equals_enumeration_pipeline((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let prof = MemoryProfile::of_instance(&inst, 1).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let p = (g as usize).min(l);
        let (v, shape_ref) = naive(&pred, &[StageConfig::PIPELINE], p, p, None).unwrap();
        let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
        let bf = solve(&MCAP_BF, &inst, &[]);
        prop_assert_eq!(&shape(&exact), &shape_ref);
        prop_assert_eq!(&shape(&bf), &shape_ref);
        prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..p], &v[..]);
        let best = exact.claimed.max_memory.unwrap();
        for algo in [&CAPSLOG_BS as &dyn Algorithm, &CAPSLOG_BS_TB] {
            let s = solve(algo, &inst, &[]);
            prop_assert!(s.claimed.max_memory.unwrap() >= best);
            prop_assert_eq!(s.stats.status, Status::Heuristic);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// With the 1F1B correction (memory depends on the stage's position among P stages), in
    /// both spaces: capture-exact = enumeration = naive.
    #[test]
    fn capture_exact_equals_enumeration_with_1f1b_correction((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let corr = [("correct_1f1b", "true")];
        let prof = MemoryProfile::of_instance(&inst, k).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let configs = pred.configs(k);
        let reference = naive(&pred, &configs, g as usize, k as usize, Some(3));
        let mut opts = SolveOptions::default();
        opts.params.insert("correct_1f1b".into(), "true".into());
        let exact = harness::run(&CAPTURE_EXACT, &inst, &opts);
        let enumerated = harness::run(&CAPTURE, &inst, &opts);
        match reference {
            None => prop_assert!(exact.is_err() && enumerated.is_err()),
            Some((v, shape_ref)) => {
                let (exact, enumerated) = (exact.unwrap(), enumerated.unwrap());
                prop_assert_eq!(&shape(&exact), &shape_ref);
                prop_assert_eq!(&shape(&enumerated), &shape_ref);
                prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..v.len()], &v[..]);
            }
        }
        let p = (g as usize).min(l);
        let (v, shape_ref) = naive(&pred, &[StageConfig::PIPELINE], p, p, Some(3)).unwrap();
        let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline"), corr[0]]);
        let bf = solve(&MCAP_BF, &inst, &corr);
        prop_assert_eq!(&shape(&exact), &shape_ref);
        prop_assert_eq!(&shape(&bf), &shape_ref);
        prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..p], &v[..]);
        for algo in [&CAPSLOG_BS as &dyn Algorithm, &CAPSLOG_BS_TB, &MCAP_BO] {
            // mcap-bo (default engine gp) on a small budget: GP fits are slow in a debug build.
            let bo = [("initial", "4"), ("iterations", "1"), ("candidates", "2")];
            let params: Vec<_> = std::iter::once(corr[0])
                .chain(bo.into_iter().filter(|_| algo.name() == "mcap-bo"))
                .collect();
            let s = solve(algo, &inst, &params);
            prop_assert!(s.claimed.max_memory.unwrap() >= v.iter().copied().fold(f64::MIN, f64::max));
        }
    }
}

/// mcap-bo's `engine=egor` for a debug build: egobox's GP fits are slow there, so the tests use a
/// small budget (the default is the paper's 30 + 70 points, measured in `benches/capture.rs`).
const BO_SMALL: [(&str, &str); 4] = [
    ("engine", "egor"),
    ("initial", "8"),
    ("iterations", "4"),
    ("candidates", "4"),
];

#[test]
fn mcap_bo_is_seeded_and_counts_its_evaluations() {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib.json");
    let a = solve(&MCAP_BO, &inst, &BO_SMALL);
    let b = solve(&MCAP_BO, &inst, &BO_SMALL);
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.claimed.peak_memory, b.claimed.peak_memory);
    // 8 initial + 4 guided points, each evaluated once (egobox skips only repeated points).
    assert_eq!(a.stats.counters.get("evaluations"), Some(&12.0));
    let distinct = a.stats.counters["distinct plans"];
    assert!(
        (1.0..=12.0).contains(&distinct),
        "{distinct} distinct plans"
    );
    let few = solve(
        &MCAP_BO,
        &inst,
        &[("engine", "egor"), ("initial", "5"), ("iterations", "0")],
    );
    assert_eq!(few.stats.counters.get("evaluations"), Some(&5.0));
    // Never better than the exact pipeline optimum.
    let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
    assert!(a.claimed.max_memory.unwrap() >= exact.claimed.max_memory.unwrap());
}

/// mcap-bo with `params` on resnet50 8 GPUs, on 1 and on 2 threads.
fn mcap_bo_on_one_and_two_threads(params: &[(&str, &str)]) -> (Solution, Solution) {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib.json");
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let one = pool(1).install(|| solve(&MCAP_BO, &inst, params));
    let two = pool(2).install(|| solve(&MCAP_BO, &inst, params));
    (one, two)
}

#[test]
fn mcap_bo_does_not_depend_on_the_thread_count() {
    let (one, two) = mcap_bo_on_one_and_two_threads(&BO_SMALL);
    assert_eq!(one.plan, two.plan);
    assert_eq!(
        one.stats.counters.get("evaluations"),
        two.stats.counters.get("evaluations")
    );
}

#[test]
fn mcap_bo_stops_at_the_time_limit_after_its_initial_points() {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib.json");
    let mut opts = SolveOptions {
        time_limit: Some(std::time::Duration::ZERO),
        ..SolveOptions::default()
    };
    for (k, v) in [
        ("engine", "egor"),
        ("initial", "6"),
        ("iterations", "50"),
        ("candidates", "2"),
    ] {
        opts.params.insert(k.into(), v.into());
    }
    let s = harness::run(&MCAP_BO, &inst, &opts).unwrap();
    // egobox checks its timeout between guided points, after the first one.
    let evals = s.stats.counters["evaluations"];
    assert!((6.0..=7.0).contains(&evals), "{evals} evaluations");
    assert!(
        s.notes.iter().any(|n| n.contains("time limit reached")),
        "{:?}",
        s.notes
    );
}

/// mcap-bo with `engine=gp` on a small budget (a debug build fits a GP per guided point).
const GP_SMALL: [(&str, &str); 4] = [
    ("engine", "gp"),
    ("initial", "8"),
    ("iterations", "6"),
    ("candidates", "200"),
];

#[test]
fn mcap_bo_gp_is_seeded_counts_its_evaluations_and_claims_the_predictor_value() {
    // 20 layers with uneven statistics (negative M_a included) on 5 GPUs.
    let m_i: Vec<f64> = (0..20).map(|i| 10.0 + ((i * 7) % 13) as f64).collect();
    let m_a: Vec<f64> = (0..20).map(|i| ((i * 5) % 11) as f64 - 4.0).collect();
    let inst = instance(5, 5, &[("pp", 1, m_i, m_a)], 20);
    let a = solve(&MCAP_BO, &inst, &GP_SMALL);
    let b = solve(&MCAP_BO, &inst, &GP_SMALL);
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.claimed.peak_memory, b.claimed.peak_memory);
    // 8 initial + 6 guided points: each guided point is a candidate not evaluated before.
    assert_eq!(a.stats.counters.get("evaluations"), Some(&14.0));
    assert!((1.0..=14.0).contains(&a.stats.counters["distinct plans"]));
    assert!(
        a.notes.iter().any(|n| n.contains("engine gp")),
        "{:?}",
        a.notes
    );
    // The claim is the predictor's memory of each stage of the returned plan.
    let prof = MemoryProfile::of_instance(&inst, 1).unwrap();
    let pred = Predictor::new(&prof, 4.0);
    let mut first = 0;
    let want: Vec<f64> = a
        .plan
        .stages
        .iter()
        .map(|st| {
            let m = pred.memory(first, st.last, StageConfig::PIPELINE).unwrap();
            first = st.last + 1;
            m
        })
        .collect();
    assert_eq!(a.plan.stages.len(), 5);
    assert_eq!(first, 20);
    assert_eq!(a.claimed.peak_memory.as_deref(), Some(&want[..]));
    let max = want.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!(a.claimed.max_memory, Some(max));
    // Never better than the exact pipeline optimum; another seed is a different run.
    let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
    assert!(max >= exact.claimed.max_memory.unwrap());
    let few = solve(
        &MCAP_BO,
        &inst,
        &[("engine", "gp"), ("initial", "5"), ("iterations", "0")],
    );
    assert_eq!(few.stats.counters.get("evaluations"), Some(&5.0));
    // gp is the default engine.
    let default: Vec<_> = GP_SMALL
        .into_iter()
        .filter(|&(k, _)| k != "engine")
        .collect();
    let d = solve(&MCAP_BO, &inst, &default);
    assert_eq!(d.plan, a.plan);
    assert_eq!(d.notes, a.notes);
    // Hyperparameters re-estimated every third point only: same budget, still seeded.
    let params: Vec<_> = GP_SMALL.into_iter().chain([("refit", "3")]).collect();
    let c = solve(&MCAP_BO, &inst, &params);
    assert_eq!(c.stats.counters.get("evaluations"), Some(&14.0));
    assert_eq!(c.plan, solve(&MCAP_BO, &inst, &params).plan);
}

#[test]
fn mcap_bo_gp_does_not_depend_on_the_thread_count() {
    let (one, two) = mcap_bo_on_one_and_two_threads(&GP_SMALL);
    assert_eq!(one.plan, two.plan);
    assert_eq!(one.claimed.peak_memory, two.claimed.peak_memory);
    assert_eq!(one.stats.counters, two.stats.counters);
}

#[test]
fn mcap_bo_gp_evaluates_no_guided_point_after_the_time_limit() {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib.json");
    let mut opts = SolveOptions {
        time_limit: Some(std::time::Duration::ZERO),
        ..SolveOptions::default()
    };
    for (k, v) in [("engine", "gp"), ("initial", "6"), ("iterations", "50")] {
        opts.params.insert(k.into(), v.into());
    }
    let s = harness::run(&MCAP_BO, &inst, &opts).unwrap();
    assert_eq!(s.stats.counters["evaluations"], 6.0);
    assert_eq!(s.stats.status, Status::Heuristic);
    assert!(
        s.notes.iter().any(|n| n.contains("time limit reached")),
        "{:?}",
        s.notes
    );
}

#[test]
fn mcap_bo_gp_stops_when_every_point_is_evaluated() {
    // Two GPUs: 100 points in all. The budget asks for more; the run evaluates each point once.
    let m_i: Vec<f64> = (0..10).map(|i| 1.0 + i as f64).collect();
    let inst = instance(2, 2, &[("pp", 1, m_i, vec![0.0; 10])], 10);
    let s = solve(
        &MCAP_BO,
        &inst,
        &[("engine", "gp"), ("initial", "5"), ("iterations", "150")],
    );
    assert_eq!(s.stats.counters["evaluations"], 100.0);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("no unevaluated candidate")),
        "{:?}",
        s.notes
    );
    // Every partition of 10 layers on 2 GPUs was seen: the result is the optimum.
    let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
    assert_eq!(s.plan, exact.plan);
}

#[test]
fn mcap_bo_rejects_a_bad_engine_and_a_misplaced_refit() {
    let inst = shipped("resnet50-1000px-b8-4gpu-8gib.json");
    let err = |params: &[(&str, &str)]| {
        let mut opts = SolveOptions::default();
        for (k, v) in params {
            opts.params.insert(k.to_string(), v.to_string());
        }
        MCAP_BO.solve(&inst, &opts).unwrap_err().to_string()
    };
    let e = err(&[("engine", "skopt")]);
    assert!(e.contains("--set engine") && e.contains("skopt"), "{e}");
    let e = err(&[("engine", "egor"), ("refit", "2")]);
    assert!(e.contains("--set refit") && e.contains("engine=gp"), "{e}");
    let e = err(&[("engine", "gp"), ("refit", "0")]);
    assert!(e.contains("--set refit"), "{e}");
}

#[test]
fn capslog_bs_misses_the_optimum_with_negative_m_a() {
    // Two GPUs, four layers. [0..2 | 3] has peak 15 (20 + 30 - 35 = 15, then 10), the optimum.
    // The greedy fill stops GPU 0 at layer 0 for any threshold below 50 (adding layer 1 gives 50)
    // and never sees that layer 2 brings the stage back down: binary search settles on 20
    // ([0 | 1..3]).
    let inst = instance(
        2,
        2,
        &[(
            "pp",
            1,
            vec![20.0, 40.0, 20.0, 10.0],
            vec![0.0, 30.0, -35.0, 5.0],
        )],
        4,
    );
    let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
    let bs = solve(&CAPSLOG_BS, &inst, &[]);
    let bf = solve(&MCAP_BF, &inst, &[]);
    assert_eq!(exact.claimed.max_memory, Some(15.0));
    assert_eq!(shape(&exact), vec![(2, 1, 1), (3, 1, 1)]);
    assert_eq!(bf.claimed.max_memory, Some(15.0));
    assert_eq!(bs.claimed.max_memory, Some(20.0));
    assert_eq!(shape(&bs), vec![(0, 1, 1), (3, 1, 1)]);
}

#[test]
fn ties_are_broken_by_the_next_highest_gpu() {
    // Three layers on two GPUs; both splits have peak 10, [0 | 1..2] leaves 4 on the other GPU,
    // [0..1 | 2] leaves 9: the tie-break picks the first, which is not the first found.
    let inst = instance(
        2,
        2,
        &[("pp", 1, vec![10.0, 10.0, 10.0], vec![0.0, -1.0, -6.0])],
        3,
    );
    for algo in [&CAPTURE_EXACT as &dyn Algorithm, &MCAP_BF, &CAPTURE] {
        let s = solve(
            algo,
            &inst,
            &[("space", "pipeline")]
                .into_iter()
                .filter(|_| algo.name() == "capture-exact")
                .collect::<Vec<_>>(),
        );
        assert_eq!(shape(&s), vec![(0, 1, 1), (2, 1, 1)], "{}", algo.name());
        assert_eq!(
            s.claimed.peak_memory.as_deref(),
            Some(&[10.0, 4.0][..]),
            "{}",
            algo.name()
        );
    }
}

#[test]
fn capped_enumeration_says_so_and_is_deterministic_across_thread_counts() {
    let inst = shipped("gpt3-2.6b-s2048-b1-16gpu-32gib.json");
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| solve(&CAPTURE, &inst, &[("max_nodes", "20000")]))
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.stats.status, Status::Feasible);
    assert!(
        a.notes.iter().any(|n| n.contains("node cap")),
        "{:?}",
        a.notes
    );
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.stats.counters, b.stats.counters);
    // The exact DP is never worse than the capped enumeration.
    let exact = solve(&CAPTURE_EXACT, &inst, &[]);
    assert!(exact.claimed.max_memory.unwrap() <= a.claimed.max_memory.unwrap());
    assert!(exact
        .notes
        .iter()
        .any(|n| n.contains("derived from the chain")));
}

#[test]
fn the_family_table_keeps_every_name_and_setting() {
    let common = ["merge", "correct_1f1b"];
    let want: [(&str, bool, &[&str]); 6] = [
        ("capture", true, &["max_nodes"]),
        ("mcap-bf", true, &["max_nodes"]),
        (
            "mcap-bo",
            false,
            &["initial", "iterations", "candidates", "engine", "refit"],
        ),
        ("capslog-bs", false, &[]),
        ("capslog-bs-tb", false, &[]),
        ("capture-exact", true, &["space"]),
    ];
    let algos = pipeplan_solvers::capture::algorithms();
    assert_eq!(algos.len(), want.len());
    for (kind, (algo, (name, exact, own))) in Kind::ALL.iter().zip(algos.iter().zip(want)) {
        assert_eq!(algo.name(), name);
        assert_eq!(algo.exact(), exact, "{name}");
        assert_eq!(algo.family(), pipeplan_solvers::Family::Capture);
        assert!(!algo.description().is_empty());
        let params: Vec<&str> = common.iter().chain(own).copied().collect();
        let declared: Vec<&str> = CaptureAlgorithm(*kind)
            .params()
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(declared, params, "{name}");
        assert_eq!(CaptureAlgorithm(*kind).name(), name);
    }
}

#[test]
fn settings_are_checked() {
    let inst = shipped("resnet50-1000px-b8-4gpu-8gib.json");
    let mut opts = SolveOptions::default();
    opts.params.insert("bogus".into(), "1".into());
    for algo in pipeplan_solvers::capture::algorithms() {
        let e = algo.solve(&inst, &opts).unwrap_err().to_string();
        assert!(e.contains("--set bogus"), "{}: {e}", algo.name());
    }
    let mut opts = SolveOptions::default();
    opts.params.insert("space".into(), "mesh".into());
    assert!(CAPTURE_EXACT
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string()
        .contains("--set space"));
    let mut opts = SolveOptions::default();
    opts.params.insert("merge".into(), "x".into());
    assert!(CAPTURE_EXACT
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string()
        .contains("--set merge"));
}

#[test]
fn layer_merger_plans_cover_the_original_chain() {
    let inst = shipped("gpt3-2.6b-s2048-b1-16gpu-32gib.json");
    let merged = solve(&CAPTURE_EXACT, &inst, &[("merge", "16")]);
    let full = solve(&CAPTURE_EXACT, &inst, &[]);
    assert_eq!(
        merged.plan.stages.last().unwrap().last + 1,
        inst.num_layers()
    );
    assert!(merged.notes.iter().any(|n| n.contains("merged to 16")));
    // Merging restricts the cut positions: never better than the full chain.
    assert!(merged.claimed.max_memory.unwrap() >= full.claimed.max_memory.unwrap());
}

#[test]
fn bad_statistics_fail_with_the_field() {
    let mut inst = instance(2, 2, &[("pp", 1, vec![1.0, 2.0], vec![0.0, 1.0])], 2);
    inst.extensions.insert(
        "memory_profile".into(),
        json!({"statistics": [{"parallelism": "pp", "degree": 1, "batch": 1, "m_i": [1], "m_a": [0, 1]}]}),
    );
    let e = harness::run(&CAPTURE_EXACT, &inst, &SolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("extensions.memory_profile.statistics[0].m_i"),
        "{e}"
    );
}
