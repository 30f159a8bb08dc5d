//! Galvatron solvers: the memory-budget DP against brute force, the searches on the hand-written
//! fixture and on shipped instances (plans the evaluator accepts, determinism, BMW never worse
//! than the engine's division), the budget (the instance's usable memory), and infeasible
//! budgets.

use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::galvatron::import::import_file;
use pipeplan_formulations::testing::proptest_config;
use pipeplan_formulations::{Instance, Stage};
use pipeplan_solvers::galvatron::dp::{brute_force, StageDp};
use pipeplan_solvers::{harness, registry, SolveError, SolveOptions};
use proptest::prelude::*;
use std::path::Path;

fn tiny() -> Instance {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../formulations/tests/fixtures/galvatron");
    import_file(&dir.join("config.json"), &dir).expect("fixture imports")
}

fn algo(name: &str) -> Box<dyn pipeplan_solvers::Algorithm> {
    registry::by_name(name).expect("registered")
}

fn dp_case() -> impl Strategy<Value = (StageDp, usize)> {
    (1usize..=4, 1usize..=4).prop_flat_map(|(l, s)| {
        (
            proptest::collection::vec(proptest::collection::vec(0usize..6, s), l),
            proptest::collection::vec(proptest::collection::vec(0.0f64..10.0, s), l),
            proptest::collection::vec(
                proptest::collection::vec(
                    proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..3.0], s),
                    s,
                ),
                l,
            ),
            0usize..25,
        )
            .prop_map(|(mem, intra, mut inter, budget)| {
                for layer in inter.iter_mut() {
                    for (a, row) in layer.iter_mut().enumerate() {
                        row[a] = 0.0;
                    }
                }
                (StageDp { mem, intra, inter }, budget)
            })
    })
}

/// Cases rich in ties: costs on a coarse grid, zero-memory strategies, zero transitions.
fn tie_case() -> impl Strategy<Value = (StageDp, usize)> {
    (1usize..=6, 1usize..=5).prop_flat_map(|(l, s)| {
        let cost = (0u8..6).prop_map(|k| k as f64 * 0.25);
        (
            proptest::collection::vec(proptest::collection::vec(0usize..5, s), l),
            proptest::collection::vec(proptest::collection::vec(cost.clone(), s), l),
            proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(cost, s), s),
                l,
            ),
            0usize..30,
        )
            .prop_map(|(mem, intra, inter, budget)| (StageDp { mem, intra, inter }, budget))
    })
}

proptest! {
    #![proptest_config(proptest_config(500))]
    /// The step table answers exactly as the engine's dense table: the same cost, strategies
    /// and unused memory at every budget, ties included.
    #[test]
    fn steps_equal_the_dense_table((dp, budget) in prop_oneof![dp_case(), tie_case()]) {
        let steps = dp.solve(budget);
        let dense = dp.solve_dense(budget);
        for b in 0..=budget + 2 {
            prop_assert_eq!(steps.best(b), dense.best(b), "budget {}", b);
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(300))]
    #[test]
    fn dp_matches_brute_force((dp, budget) in dp_case()) {
        let table = dp.solve(budget);
        let got = table.best(budget);
        let want = brute_force(&dp, budget);
        match (got, want) {
            (None, None) => {}
            (Some(a), Some((cost, _))) => {
                prop_assert!((a.cost - cost).abs() <= 1e-9 * cost.max(1.0), "{} vs {}", a.cost, cost);
                // The reconstructed assignment really has that cost and memory.
                let mem: usize = a.strategies.iter().enumerate().map(|(l, &s)| dp.mem[l][s]).sum();
                prop_assert!(mem <= budget);
                prop_assert_eq!(a.remaining, budget - mem);
                let mut c = 0.0;
                for (l, &s) in a.strategies.iter().enumerate() {
                    let inter = if l == 0 {
                        (0..dp.mem[0].len()).map(|p| dp.inter[0][p][s]).fold(f64::INFINITY, f64::min)
                    } else {
                        dp.inter[l][a.strategies[l - 1]][s]
                    };
                    c += inter + dp.intra[l][s];
                }
                prop_assert!((c - a.cost).abs() <= 1e-9 * c.max(1.0));
            }
            (g, w) => prop_assert!(false, "dp {:?} vs brute force {:?}", g, w),
        }
        // One table answers every smaller budget too.
        for b in 0..budget {
            prop_assert_eq!(table.best(b).map(|a| a.cost).is_some(), brute_force(&dp, b).is_some());
        }
    }
}

#[test]
fn searches_give_plans_the_evaluator_accepts() {
    let inst = tiny();
    let opts = SolveOptions::default();
    let mut tput = Vec::new();
    for name in ["galvatron-base", "galvatron-bmw", "galvatron-time"] {
        let sol = harness::run(algo(name).as_ref(), &inst, &opts).unwrap();
        let ev = sol.evaluated.as_ref().unwrap();
        assert!(sol.claimed.throughput.unwrap() > 0.0);
        assert!(ev.throughput > 0.0);
        assert_eq!(sol.claimed.fits, Some(true));
        // Every stage has dp * tp GPUs and neighbouring stages on one GPU set differ in strategy.
        for w in sol.plan.stages.windows(2) {
            let same = |a: &Stage, b: &Stage| {
                (a.dp, a.tp, a.sdp, a.checkpoint.is_empty())
                    == (b.dp, b.tp, b.sdp, b.checkpoint.is_empty())
            };
            assert!(
                w[0].gpus != w[1].gpus || !same(&w[0], &w[1]),
                "{name}: unmerged runs"
            );
        }
        for s in &sol.plan.stages {
            assert_eq!(s.gpus.len() as u32, s.dp * s.tp);
        }
        tput.push(sol.claimed.throughput.unwrap());
    }
    assert!(tput[1] >= tput[0], "bmw {} < base {}", tput[1], tput[0]);
}

#[test]
fn searches_are_deterministic_across_thread_counts() {
    let inst = Instance::from_path(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../instances/bert-large-s512-b8-8gpu-8gib.json"),
    )
    .unwrap();
    for name in ["galvatron-base", "galvatron-bmw"] {
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| algo(name).solve(&inst, &SolveOptions::default()).unwrap())
        };
        let (a, b) = (run(1), run(2));
        assert_eq!(a.plan, b.plan, "{name}");
        assert_eq!(a.claimed, b.claimed, "{name}");
    }
}

#[test]
fn bmw_is_never_worse_than_base_on_shipped_instances() {
    for f in [
        "t5-512-4-s512-b8-8gpu-8gib.json",
        "bert-large-s512-b8-8gpu-8gib.json",
        "vit-huge-224px-b32-8gpu-8gib.json",
    ] {
        let inst = Instance::from_path(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../instances")
                .join(f),
        )
        .unwrap();
        let opts = SolveOptions::default();
        let base = algo("galvatron-base").solve(&inst, &opts);
        let bmw = algo("galvatron-bmw").solve(&inst, &opts);
        match (base, bmw) {
            (Ok(b), Ok(m)) => assert!(m.claimed.throughput >= b.claimed.throughput, "{f}"),
            (Err(_), _) => {}
            (Ok(_), Err(e)) => panic!("{f}: bmw failed where base succeeded: {e}"),
        }
    }
}

#[test]
fn budget_no_strategy_fits_is_explained() {
    let mut inst = tiny();
    inst.cluster.memory = 0.5 * 1024.0 * 1024.0 * 1024.0;
    let e = algo("galvatron-base")
        .solve(&inst, &SolveOptions::default())
        .unwrap_err();
    let SolveError::Infeasible(m) = &e else {
        panic!("{e}")
    };
    assert!(
        m.contains("512 MB budget") && m.contains("MB of layers"),
        "{m}"
    );
    // The least busiest-stage memory of any searched strategy exceeds the budget it names.
    let least: f64 = m
        .split("divided evenly, is ")
        .nth(1)
        .and_then(|r| r.split(" MB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{m}"));
    assert!(least > 512.0 && !m.contains("within the budget"), "{m}");
}

#[test]
fn the_budget_is_the_instances_usable_memory() {
    let inst = tiny();
    let gb = inst.extensions["layer_types"]["settings"]["memory_constraint"]
        .as_f64()
        .unwrap();
    assert_eq!(inst.cluster.memory, gb * 1024.0 * 1024.0 * 1024.0);
    let base = harness::run(
        algo("galvatron-base").as_ref(),
        &inst,
        &SolveOptions::default(),
    )
    .unwrap();
    assert!(!base.notes.iter().any(|n| n.contains("memory budget")));
    // Less memory, or the same memory with a reserve: the search plans for what is left and
    // says so; the settings' value is not used.
    // 90% of what the full-memory plan claims, in whole MB.
    let gib = 1024.0 * 1024.0 * 1024.0;
    let budget = (base.claimed.max_memory.unwrap() * 0.9 / 1048576.0).floor() * 1048576.0;
    let mut less = inst.clone();
    less.cluster.memory = budget;
    let mut reserved = inst.clone();
    reserved.calibration = Some(Calibration {
        reserved_memory: inst.cluster.memory - budget,
        ..Calibration::default()
    });
    for (what, inst) in [("less memory", less), ("a reserve", reserved)] {
        let sol = harness::run(
            algo("galvatron-base").as_ref(),
            &inst,
            &SolveOptions::default(),
        )
        .unwrap();
        let note = sol.notes.iter().find(|n| n.contains("memory budget"));
        let want = format!("memory budget {} GB per GPU", budget / gib);
        assert!(
            note.is_some_and(|n| n.starts_with(&want)),
            "{what}: {:?}",
            sol.notes
        );
        // The engine's own memory model keeps the plan within the smaller budget, which the
        // full-memory plan exceeds.
        let claimed = sol.claimed.max_memory.unwrap();
        assert!(claimed <= inst.usable_memory(), "{what}: claimed {claimed}");
        assert!(
            base.claimed.max_memory.unwrap() > inst.usable_memory(),
            "{what}"
        );
    }
}

#[test]
fn settings_are_checked() {
    let inst = tiny();
    let mut opts = SolveOptions::default();
    opts.params.insert("bogus".into(), "1".into());
    let e = algo("galvatron-base")
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--set bogus"), "{e}");
    let mut opts = SolveOptions::default();
    opts.params.insert("settle_bsz".into(), "x".into());
    let e = algo("galvatron-bmw")
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--set settle_bsz"), "{e}");
    // A fixed chunk count is honoured.
    let mut opts = SolveOptions::default();
    opts.params.insert("settle_chunk".into(), "4".into());
    let sol = algo("galvatron-base").solve(&inst, &opts).unwrap();
    assert!(
        sol.notes[0].contains("in 4 micro-batches") || sol.notes[0].contains("pp 1"),
        "{:?}",
        sol.notes
    );
}

/// GPT-3 6.7B on 512 GPUs at one sample per micro-batch: the engine's rule (chunks <= batch /
/// dp) leaves data parallelism 1, and pp 32 (the largest power of two up to its 34 layers) x tp
/// 8 cannot fill 512 GPUs. The error says so with numbers that add up; fewer micro-batches give
/// a plan.
#[test]
fn a_cluster_the_batch_cannot_fill_is_explained() {
    use pipeplan_formulations::generate::{generate, GenerateOptions};
    use pipeplan_formulations::instance::{Bandwidth, Cluster};
    let cluster = Cluster {
        gpus: 512,
        gpus_per_node: Some(8),
        gpu: None,
        memory: 80.0 * 1024f64.powi(3),
        bandwidth: Bandwidth {
            intra_node: 300e9,
            inter_node: Some(25e9),
        },
        pcie: None,
    };
    let inst = generate(&GenerateOptions::new("gpt3-6.7b", cluster)).unwrap();
    let algo = registry::by_name("galvatron-base").unwrap();
    let e = algo
        .solve(&inst, &SolveOptions::default())
        .unwrap_err()
        .to_string();
    let m = inst.training.micro_batches.unwrap();
    assert!(
        e.contains(&format!("the {m}-sample batch splits evenly"))
            && e.contains(&format!("({m} micro-batches)"))
            && e.contains("pp is at most 32 (max_pp_deg)")
            && e.contains("min_tp at most 8 (max_tp_deg and the GPUs)")
            && e.contains(&format!(
                "at least 2 groups, which the batch does not fill; give a batch that is a \
                 multiple of 2 and at least {}",
                2 * m
            )),
        "{e}"
    );
    let mut opts = SolveOptions::default();
    opts.params.insert("settle_chunk".into(), "16".into());
    let sol = harness::run(algo.as_ref(), &inst, &opts).unwrap();
    assert!(sol.evaluated.unwrap().fits);
}
