//! The `memory_profile` extension: validation, raw-run ingestion, derivation from the chain,
//! predictor formulas, layer merger and profiling plans.

use pipeplan_formulations::capture::profiling::{self, capslog_runs, covers, mcap_runs, Method};
use pipeplan_formulations::capture::runs::{ingest, RawRun};
use pipeplan_formulations::capture::{MemoryProfile, Parallelism, Predictor, StageConfig};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::plan::{Plan, Schedule};
use pipeplan_formulations::testing::proptest_config;
use pipeplan_formulations::Instance;
use proptest::prelude::*;
use serde_json::json;

fn chain_instance(schedule: &str, layers: usize, gpus: u32) -> Instance {
    let ls: Vec<_> = (0..layers)
        .map(|i| {
            json!({"name": format!("l{i}"), "forward": 1.0 + i as f64, "backward": 2.0,
                   "weights": 1e6 * (1 + i % 3) as f64, "output": 3e5 * (1 + (i * 7) % 5) as f64})
        })
        .collect();
    let text = json!({
        "format": "pipeplan/instance@1", "name": "t",
        "model": {"batch": 8, "input": 5e5, "layers": ls},
        "cluster": {"gpus": gpus, "memory": "16 GiB", "bandwidth": {"intra_node": "10 GB/s"}},
        "training": {"schedule": schedule, "micro_batches": 6, "optimizer_state_factor": 2}
    });
    Instance::from_json(&text.to_string()).unwrap()
}

fn table(par: &str, degree: u32, batch: f64, m_i: &[f64], m_a: &[f64]) -> serde_json::Value {
    json!({"parallelism": par, "degree": degree, "batch": batch, "m_i": m_i, "m_a": m_a})
}

fn err(v: serde_json::Value, layers: usize) -> String {
    MemoryProfile::parse(&v, layers).unwrap_err().to_string()
}

#[test]
fn bad_statistics_are_named_precisely() {
    let ok = [1.0, 2.0, 3.0];
    // Missing layers.
    let e = err(
        json!({"statistics": [table("pp", 1, 1.0, &ok, &ok), table("pp", 1, 2.0, &[1.0, 2.0], &ok)]}),
        3,
    );
    assert!(
        e.contains("statistics[1].m_i") && e.contains("layers 2..2 lack data"),
        "{e}"
    );
    // Batch sizes not distinct.
    let e = err(
        json!({"statistics": [table("pp", 1, 2.0, &ok, &ok), table("pp", 1, 2.0, &ok, &ok)]}),
        3,
    );
    assert!(e.contains("must be distinct"), "{e}");
    // Only one batch size.
    let e = err(json!({"statistics": [table("pp", 1, 2.0, &ok, &ok)]}), 3);
    assert!(e.contains("exactly two profiling batch sizes"), "{e}");
    // A degree that is not a power of two.
    let e = err(
        json!({"statistics": [table("pp", 1, 1.0, &ok, &ok), table("pp", 1, 2.0, &ok, &ok),
                              table("dp", 3, 1.0, &ok, &ok)]}),
        3,
    );
    assert!(
        e.contains("statistics[2].degree") && e.contains("power of two"),
        "{e}"
    );
    // pp with degree 2.
    let e = err(json!({"statistics": [table("pp", 2, 1.0, &ok, &ok)]}), 3);
    assert!(e.contains("degree 1"), "{e}");
    // No pipeline statistics.
    let e = err(
        json!({"statistics": [table("dp", 2, 1.0, &ok, &ok), table("dp", 2, 2.0, &ok, &ok)]}),
        3,
    );
    assert!(e.contains("pipeline-only"), "{e}");
    // Negative M_i, non-finite, unknown field.
    let e = err(
        json!({"statistics": [table("pp", 1, 1.0, &[1.0, -2.0, 3.0], &ok), table("pp", 1, 2.0, &ok, &ok)]}),
        3,
    );
    assert!(e.contains("statistics[0].m_i[1]"), "{e}");
    let e = err(json!({"statistics": [], "bogus": 1}), 3);
    assert!(
        e.contains("extensions.memory_profile") && e.contains("bogus"),
        "{e}"
    );
    let e = err(json!({}), 3);
    assert!(e.contains("neither"), "{e}");
    // Negative M_a is accepted.
    MemoryProfile::parse(
        &json!({"statistics": [table("pp", 1, 1.0, &ok, &[0.0, -5.0, 1.0]), table("pp", 1, 2.0, &ok, &ok)]}),
        3,
    )
    .unwrap();
}

#[test]
fn raw_runs_report_the_layers_that_lack_data() {
    let run = |stages: Vec<[usize; 2]>, peak: Vec<f64>| RawRun {
        parallelism: Parallelism::Pp,
        degree: 1,
        batch: 2.0,
        stages,
        peak,
    };
    // Layer 2 never alone; M_a(2) needs stages [a, 1] and [a, 2].
    let runs = vec![
        run(vec![[0, 0], [1, 1]], vec![1.0, 2.0]),
        run(vec![[0, 1], [2, 3]], vec![3.0, 4.0]),
    ];
    let e = ingest(&runs, 4, "runs").unwrap_err().to_string();
    assert!(e.contains("no M_i") && e.contains("layers 2, 3"), "{e}");
    assert!(e.contains("no M_a") && e.contains("layers 2, 3"), "{e}");
    // Malformed runs.
    let e = ingest(&[run(vec![[0, 1]], vec![])], 4, "runs")
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs[0].peak"), "{e}");
    let e = ingest(&[run(vec![[0, 5]], vec![1.0])], 4, "runs")
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs[0].stages[0]"), "{e}");
    let e = ingest(&[run(vec![[2, 3], [0, 1]], vec![1.0, 1.0])], 4, "runs")
        .unwrap_err()
        .to_string();
    assert!(e.contains("chain order"), "{e}");
}

/// Peak of a stage under known statistics.
fn pm(m_i: &[f64], m_a: &[f64], a: usize, b: usize) -> f64 {
    m_i[a] + m_a[a + 1..=b].iter().sum::<f64>()
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// mCAP's and CAPSlog's runs give every statistic back exactly (up to rounding), including
    /// negative M_a, and mCAP needs about L + 1 runs.
    #[test]
    fn profiling_runs_recover_the_statistics(
        layers in 2usize..30, meshes in 2usize..9, seed in 0u64..1000,
    ) {
        prop_assume!(layers > meshes && meshes >= 3);
        let m_i: Vec<f64> = (0..layers).map(|l| 100.0 + ((l as u64 * 37 + seed) % 50) as f64).collect();
        let m_a: Vec<f64> = (0..layers).map(|l| ((l as u64 * 11 + seed) % 40) as f64 - 15.0).collect();
        for (name, runs) in [("mcap", mcap_runs(layers, meshes).unwrap()), ("capslog", capslog_runs(layers, meshes))] {
            prop_assert!(covers(&runs, layers), "{name} {layers} {meshes}");
            if name == "mcap" {
                // About L + 1 (Description 1) when meshes leave room for two single-layer
                // stages after the growing one; three meshes need an extra run per layer.
                let bound = if meshes >= 4 { layers + meshes } else { 2 * layers };
                prop_assert!(runs.len() <= bound, "{} runs for L = {layers}, S = {meshes}", runs.len());
                for r in &runs {
                    prop_assert_eq!(r.len(), meshes);
                    prop_assert_eq!(r.last().unwrap()[1], layers - 1);
                }
            }
            for r in &runs {
                prop_assert!(r.len() <= meshes);
                if name == "capslog" {
                    prop_assert!(r.iter().all(|[a, b]| b - a <= 1));
                }
            }
            let raw: Vec<RawRun> = runs.iter().map(|st| RawRun {
                parallelism: Parallelism::Pp, degree: 1, batch: 4.0,
                peak: st.iter().map(|&[a, b]| pm(&m_i, &m_a, a, b)).collect(),
                stages: st.clone(),
            }).collect();
            let t = ingest(&raw, layers, "runs").unwrap();
            prop_assert_eq!(t.len(), 1);
            for l in 0..layers {
                prop_assert!((t[0].m_i[l] - m_i[l]).abs() < 1e-6);
                if l > 0 {
                    prop_assert!((t[0].m_a[l] - m_a[l]).abs() < 1e-6, "{name} layer {l}");
                }
            }
        }
    }
}

#[test]
fn profile_plans_per_method() {
    assert_eq!(profiling::default_batches(8.0), [2.0, 4.0]);
    let mcap = profiling::plan(Method::Mcap, 32, 16, 4, [2.0, 4.0]).unwrap();
    assert!(mcap.iter().all(|r| r.parallelism == Parallelism::Pp));
    // The same runs at each of the two batch sizes.
    let at = |b: f64| -> Vec<_> {
        mcap.iter()
            .filter(|r| r.batch == b)
            .map(|r| &r.stages)
            .collect()
    };
    assert_eq!(at(2.0), at(4.0));
    assert_eq!(2 * at(2.0).len(), mcap.len());
    // Two distinct positive sizes or an error naming them.
    for bad in [[2.0, 2.0], [0.0, 4.0], [2.0, f64::NAN]] {
        let e = profiling::plan(Method::Mcap, 32, 16, 4, bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("profiling batches: need two distinct positive"),
            "{e}"
        );
    }
    assert!(mcap.len() <= 2 * (32 + 16));
    let capture = profiling::plan(Method::Capture, 32, 16, 4, [2.0, 4.0]).unwrap();
    for (p, d) in [
        (Parallelism::Dp, 2),
        (Parallelism::Tp, 2),
        (Parallelism::Dp, 4),
        (Parallelism::Tp, 4),
    ] {
        let sub: Vec<_> = capture
            .iter()
            .filter(|r| r.parallelism == p && r.degree == d)
            .collect();
        assert!(!sub.is_empty(), "{p} {d}");
        assert!(sub.iter().all(|r| r.stages.len() == 16 / d as usize));
    }
    let capslog = profiling::plan(Method::Capslog, 32, 16, 4, [2.0, 4.0]).unwrap();
    assert!(capslog.len() < mcap.len());
    // A mesh that does not divide, and a chain too short.
    let e = profiling::plan(Method::Capture, 32, 12, 6, [2.0, 4.0])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("gpus_per_node") && e.contains("sub-meshes of 4"),
        "{e}"
    );
    let e = profiling::plan(Method::Mcap, 3, 8, 8, [2.0, 4.0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 layers cannot fill 8 meshes"), "{e}");
    // Two meshes cannot isolate middle layers in full runs: mCAP says so, the plan falls back
    // to trimmed runs, which cover every layer.
    assert!(mcap_runs(10, 2)
        .unwrap_err()
        .contains("cannot isolate layers 1, 2"));
    let two = profiling::plan(Method::Mcap, 10, 2, 2, [2.0, 4.0]).unwrap();
    let stages: Vec<Vec<[usize; 2]>> = two.iter().map(|r| r.stages.clone()).collect();
    assert!(covers(&stages, 10));
}

#[test]
fn derived_statistics_predict_the_evaluator_for_gpipe_stages() {
    // GPipe keeps m micro-batches on every stage, as the derivation assumes: exact agreement.
    let inst = chain_instance("gpipe", 7, 3);
    let prof = MemoryProfile::derive(&inst, 4);
    assert!(prof.derived && prof.notes[0].contains("derived from the chain"));
    let pred = Predictor::new(&prof, inst.micro_batch() as f64);
    for ends in [[1usize, 4, 6], [0, 1, 6], [4, 5, 6]] {
        let plan = Plan::contiguous(&ends, Schedule::default_for(&inst));
        let ev = evaluate(&inst, &plan).unwrap();
        let mut first = 0;
        for (s, &e) in ends.iter().enumerate() {
            let p = pred.memory(first, e, StageConfig::PIPELINE).unwrap();
            assert!(
                (p - ev.peak_memory[s]).abs() <= 1e-6 * p,
                "{ends:?} stage {s}: {p} vs {}",
                ev.peak_memory[s]
            );
            first = e + 1;
        }
    }
    // dp and tp stages too.
    for (par, dp, tp) in [(Parallelism::Dp, 2, 1), (Parallelism::Tp, 1, 2)] {
        let mut plan = Plan::contiguous(&[2, 6], Schedule::default_for(&inst));
        plan.stages[1].gpus = vec![1, 2];
        plan.stages[1].dp = dp;
        plan.stages[1].tp = tp;
        let ev = evaluate(&inst, &plan).unwrap();
        let cfg = StageConfig {
            parallelism: par,
            degree: 2,
        };
        let p = pred.memory(3, 6, cfg).unwrap();
        assert!(
            (p - ev.peak_memory[1]).abs() <= 1e-6 * p,
            "{par}: {p} vs {}",
            ev.peak_memory[1]
        );
    }
}

#[test]
fn predictor_scales_batch_linearly_and_degrees_logarithmically() {
    let v = json!({"statistics": [
        table("pp", 1, 2.0, &[10.0, 20.0], &[0.0, 5.0]),
        table("pp", 1, 4.0, &[14.0, 30.0], &[0.0, 9.0]),
        table("dp", 2, 2.0, &[8.0, 8.0], &[0.0, 4.0]),
        table("dp", 2, 4.0, &[10.0, 10.0], &[0.0, 6.0]),
        table("dp", 4, 2.0, &[6.0, 6.0], &[0.0, 2.0]),
        table("dp", 4, 4.0, &[7.0, 7.0], &[0.0, 3.0]),
    ]});
    let prof = MemoryProfile::parse(&v, 2).unwrap();
    let pred = Predictor::new(&prof, 8.0);
    // pp, layers 0..=1: 15 at batch 2, 23 at batch 4 -> 39 at batch 8.
    assert_eq!(pred.memory(0, 1, StageConfig::PIPELINE), Some(39.0));
    let dp = |d| StageConfig {
        parallelism: Parallelism::Dp,
        degree: d,
    };
    // dp2: 12 at 2, 16 at 4 -> 24 at 8; dp4: 8, 10 -> 14.
    assert_eq!(pred.memory(0, 1, dp(2)), Some(24.0));
    assert_eq!(pred.memory(0, 1, dp(4)), Some(14.0));
    // dp8 = a + b ln 8 through (2, 24), (4, 14): 24 - 10 * log2(8 / 2) = 4.
    assert!((pred.memory(0, 1, dp(8)).unwrap() - 4.0).abs() < 1e-9);
    // No tp statistics: tp is not predictable.
    let tp = StageConfig {
        parallelism: Parallelism::Tp,
        degree: 2,
    };
    assert_eq!(pred.memory(0, 1, tp), None);
    assert_eq!(
        pred.configs(8),
        vec![StageConfig::PIPELINE, dp(2), dp(4), dp(8)]
    );
    // 1F1B correction: the batch part (39 - fixed) scaled by min(m, P - s) / g.
    let (fixed, prop) = pred.parts(0, 1, StageConfig::PIPELINE).unwrap();
    assert_eq!(fixed + prop, 39.0);
}

#[test]
fn layer_merger_merges_the_lowest_pair() {
    let m_i = [10.0, 1.0, 1.0, 50.0];
    let m_a = [0.0, 3.0, 2.0, -1.0];
    let v =
        json!({"statistics": [table("pp", 1, 1.0, &m_i, &m_a), table("pp", 1, 2.0, &m_i, &m_a)]});
    let prof = MemoryProfile::parse(&v, 4).unwrap();
    let p = Predictor::merged(&prof, 2.0, 3).unwrap();
    // Merged M_i: (0,1) 13, (1,2) 3, (2,3) 0 -> merge 2 and 3.
    assert_eq!(p.layers(), 3);
    assert_eq!(p.group(2), (2, 3));
    assert_eq!(p.memory(2, 2, StageConfig::PIPELINE), Some(0.0));
    assert_eq!(p.memory(1, 2, StageConfig::PIPELINE), Some(1.0 + 2.0 - 1.0));
    let p = Predictor::merged(&prof, 2.0, 1).unwrap();
    assert_eq!(p.group(0), (0, 3));
    assert_eq!(
        p.memory(0, 0, StageConfig::PIPELINE),
        Some(10.0 + 3.0 + 2.0 - 1.0)
    );
    assert!(Predictor::merged(&prof, 2.0, 0).is_err());
}
