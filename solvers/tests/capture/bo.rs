//! mCAP-BO (both engines): seeded, counts its evaluations, independent of the thread count, stops
//! at the time limit.

use super::*;

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
