//! `pipedream` against PipeDream's own outputs (peers folder) and against brute force.
//!
//! Peers layout (`$PIPEPLAN_PEERS/pipedream`, searched recursively; each test prints a skip
//! notice when its files are absent), as in msr-fiddle/pipedream:
//! - `.../vgg16/graph.txt`: the profiler's VGG-16 profile
//!   (`profiler/image_classification/profiles/vgg16/graph.txt`). PipeDream's runtime ships the
//!   optimizer's 4-GPU answer for it (`runtime/image_classification/models/vgg16/gpus=4`:
//!   `stage_to_rank_map {"0": [0, 1, 2], "1": [3]}`, stage 0 = `layer2..layer18`), i.e. layers
//!   0..=16 on 3 replicas and 17..=39 on 1. It is reproduced with PipeDream's default bandwidth
//!   (`-b 1e9` bytes/s) and memory (`-s 16e9` bytes) and replication on.
//! - `.../test_graphs/*.txt` whose node lines carry `stage_id=N` (`graph/test_graphs/`): partitioned
//!   graphs used by PipeDream's graph tests. Their stage ids are *not* asserted as optimizer
//!   outputs: `vgg16_partitioned.txt` (stages 0-28 | 29-37 | 38-39, loads 473 / 6.8 / 183.5 ms) is
//!   not what the published optimizer returns on its own profile for any setting we tried (3 to
//!   16 machines, 0.1 to 100 GB/s, straight or replicated, memory check on or off, fewer machines
//!   or not). `resnet50_partitioned.txt` (stages 0-133 | 134-143 | 144-156 | 157-175, loads
//!   351 / 27 / 28 / 27 ms) is not either: swept over 3 to 16 machines, replication on and off,
//!   0.1 to 100 GB/s and the memory check on and off, the closest answer (16 machines,
//!   replicated, 10 GB/s) is 0-100 x11 | 101-118 | 119-133 | 134-143 | 144-156 | 157-175, whose
//!   first three stages merged give the recorded ones (27.69 ms against the recorded 27.95 ms
//!   under PipeDream's model), and the memory check at 16 GB rejects the recorded partition.
//!   These files are inputs of graph.py's own tests (`test_partitioning` only asserts that the
//!   graph splits into 3 sub-graphs), not optimizer results. The test checks what holds: the
//!   recorded stages are contiguous in our linearization, and the straight DP on as many stages
//!   is at least as good under PipeDream's model; whether it reproduces them is printed.
//!
//! Synthetic: the DP (straight and replicated, memory check on and off) equals the brute-force
//! minimum of PipeDream's objective over every configuration on tiny profiles, and the algorithm's
//! plans are judged at their valid 1F1B* period.

use pipeplan_formulations::import::{import, import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{Cluster, Instance};
use pipeplan_formulations::peers;
use pipeplan_formulations::testing::proptest_config;
use pipeplan_solvers::harness::run;
use pipeplan_solvers::madpipe::pipedream::{
    pd_level_objective, pd_objective, pd_plan, pipedream_partition, PdConfig, PdLevel, PdProfile,
    PdStates,
};
use pipeplan_solvers::madpipe::valid_period::valid_period_of_plan;
use pipeplan_solvers::{registry, ObjectiveKind, SolveError, SolveOptions, Status};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// PipeDream's optimizer defaults: `-b 1000000000` bytes/s, `-s 16000000000` bytes.
fn pipedream_cluster(gpus: u32) -> ImportOptions {
    ImportOptions::new(Cluster::single_node(gpus, 16e9, 1e9))
}

fn config(inst: &Instance, machines: usize, replicate: bool) -> PdConfig {
    PdConfig {
        replicate,
        memory_check: true,
        memory: inst.cluster.memory,
        ..PdConfig::single(machines, inst.cluster.bandwidth.intra_node)
    }
}

#[test]
fn vgg16_on_4_gpus() {
    let what = "pipedream_peers::vgg16_on_4_gpus";
    let Some(dir) = peers::subdir("pipedream", what) else {
        return;
    };
    let found = files(&dir, &|p| p.ends_with("vgg16/graph.txt"));
    let Some(path) = found.first() else {
        peers::skip_notice(what, &format!("no vgg16/graph.txt under {}", dir.display()));
        return;
    };
    let inst = import_file(Source::PipeDream, path, &pipedream_cluster(4))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inst.num_layers(), 40, "VGG-16 without its Input node");
    assert_eq!(inst.model.layers[0].name, "node2");
    assert_eq!(inst.model.layers[16].name, "node18");
    let part = pipedream_partition(
        &PdStates::chain(&PdProfile::of(&inst)),
        &config(&inst, 4, true),
    )
    .unwrap();
    let got: Vec<(usize, usize, usize)> = part
        .stages
        .iter()
        .map(|s| (s.first, s.last, s.replicas))
        .collect();
    assert_eq!(got, vec![(0, 16, 3), (17, 39, 1)], "{part:?}");
    // The same through the algorithm; its plan is then judged at its valid period, if any.
    let algo = registry::by_name("pipedream").unwrap();
    let mut params = BTreeMap::new();
    params.insert("replicate".to_string(), "true".to_string());
    let opts = SolveOptions {
        params,
        ..SolveOptions::default()
    };
    let sol = run(algo.as_ref(), &inst, &opts).unwrap_or_else(|e| panic!("{e}"));
    let dp: Vec<(usize, usize, u32)> = sol
        .plan
        .stages
        .iter()
        .map(|s| (s.first, s.last, s.dp))
        .collect();
    assert_eq!(dp, vec![(0, 16, 3), (17, 39, 1)]);
    assert_eq!(sol.plan.stages[0].gpus, vec![0, 1, 2]);
    assert!(sol.evaluated.unwrap().fits);
}

/// `node -> stage_id` of a partitioned graph.
fn stage_ids(text: &str) -> BTreeMap<String, usize> {
    text.lines()
        .filter(|l| !l.starts_with('\t'))
        .filter_map(|l| {
            let parts: Vec<&str> = l.split(" -- ").map(str::trim).collect();
            let sid = parts.last()?.strip_prefix("stage_id=")?.parse().ok()?;
            Some((parts[0].to_string(), sid))
        })
        .collect()
}

#[test]
fn test_graphs_partitions() {
    let what = "pipedream_peers::test_graphs_partitions";
    let Some(dir) = peers::subdir("pipedream", what) else {
        return;
    };
    let found = files(&dir, &|p| {
        p.parent().is_some_and(|d| d.ends_with("test_graphs"))
            && p.extension().is_some_and(|e| e == "txt")
            && std::fs::read_to_string(p).is_ok_and(|t| t.contains("stage_id="))
    });
    if found.is_empty() {
        peers::skip_notice(
            what,
            &format!(
                "no test_graphs/*.txt with stage ids under {}",
                dir.display()
            ),
        );
        return;
    }
    for path in &found {
        let at = path.display();
        let text = std::fs::read_to_string(path).unwrap();
        let ids = stage_ids(&text);
        let stages = ids.values().max().unwrap() + 1;
        let inst = import_file(Source::PipeDream, path, &pipedream_cluster(stages as u32))
            .unwrap_or_else(|e| panic!("{e}"));
        // Recorded stage of every layer, in our order (Input nodes are not layers).
        let rec: Vec<usize> = inst.model.layers.iter().map(|l| ids[&l.name]).collect();
        if rec.windows(2).any(|w| w[1] < w[0]) {
            eprintln!("{at}: recorded stages are not contiguous in our linearization: {rec:?}");
            continue;
        }
        let mut recorded = Vec::new();
        for s in 0..stages {
            let first = rec
                .iter()
                .position(|&x| x == s)
                .expect("every stage has layers");
            let last = rec.iter().rposition(|&x| x == s).unwrap();
            recorded.push((first, last, 1));
        }
        let profile = PdStates::chain(&PdProfile::of(&inst));
        let mut cfg = config(&inst, stages, false);
        cfg.memory_check = false;
        let ours = pipedream_partition(&profile, &cfg).unwrap();
        let theirs = pd_objective(&profile, &cfg, &recorded).unwrap();
        assert!(
            ours.time <= theirs * (1.0 + 1e-12),
            "{at}: DP {} worse than the recorded partition {}",
            ours.time,
            theirs
        );
        let got: Vec<_> = ours.stages.iter().map(|s| (s.first, s.last, 1)).collect();
        eprintln!(
            "{at}: recorded {recorded:?} ({theirs:.3} ms under PipeDream's model), straight DP \
             {got:?} ({:.3} ms): {}",
            ours.time,
            if got == recorded {
                "reproduced"
            } else {
                "differs"
            }
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Synthetic: the DP against brute force

/// Every configuration of `n` layers on exactly `machines` machines: (first, last, replicas).
fn configurations(n: usize, machines: usize, replicate: bool) -> Vec<Vec<(usize, usize, usize)>> {
    configurations_of(0, n, machines, replicate)
}

/// Every configuration of layers `first..n` on exactly `machines` machines.
fn configurations_of(
    first: usize,
    n: usize,
    machines: usize,
    replicate: bool,
) -> Vec<Vec<(usize, usize, usize)>> {
    fn rec(
        first: usize,
        n: usize,
        left: usize,
        replicate: bool,
        cur: &mut Vec<(usize, usize, usize)>,
        out: &mut Vec<Vec<(usize, usize, usize)>>,
    ) {
        if first == n {
            if left == 0 {
                out.push(cur.clone());
            }
            return;
        }
        for last in first..n {
            let top = if replicate { left } else { left.min(1) };
            for r in 1..=top {
                cur.push((first, last, r));
                rec(last + 1, n, left - r, replicate, cur, out);
                cur.pop();
            }
        }
    }
    let mut out = Vec::new();
    rec(first, n, machines, replicate, &mut Vec::new(), &mut out);
    out
}

/// The configurations of layers `first..n` the optimizer's DP searches on `machines` machines:
/// on exactly that many, or with `use_fewer_machines` on at most that many when the range has
/// two layers or more (a one-layer range stays one stage on every machine, as in the optimizer,
/// whose rule starts at `j = i + 1`).
fn searched(
    first: usize,
    n: usize,
    machines: usize,
    replicate: bool,
    fewer: bool,
) -> Vec<Vec<(usize, usize, usize)>> {
    if fewer && n - first >= 2 {
        (1..=machines)
            .flat_map(|m| configurations_of(first, n, m, replicate))
            .collect()
    } else {
        configurations_of(first, n, machines, replicate)
    }
}

/// A single level of `machines` GPUs with every setting drawn.
fn single_level(machines: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = PdConfig> {
    (
        machines,
        any::<bool>(),
        any::<bool>(),
        1e9f64..4e10,
        1e9f64..1e12,
        proptest::option::of(0.5f64..4.0),
    )
        .prop_map(
            |(machines, replicate, memory_check, memory, bandwidth, ratio)| PdConfig {
                replicate,
                memory_check,
                memory,
                activation_compression_ratio: ratio,
                ..PdConfig::single(machines, bandwidth)
            },
        )
}

fn profiles() -> impl Strategy<Value = PdProfile> {
    (1usize..=6).prop_flat_map(|n| {
        (
            proptest::collection::vec(0.0f64..10.0, n),
            proptest::collection::vec(0.0f64..4e9, n),
            proptest::collection::vec(0.0f64..4e9, n),
            proptest::collection::vec(0.0f64..4e9, n),
        )
            .prop_map(|(compute, activation, parameters, output)| PdProfile {
                compute,
                activation,
                parameters,
                output,
                edges: None,
            })
    })
}

proptest! {
    #![proptest_config(proptest_config(400))]

    /// With `use_fewer_machines` (the memory check off: the optimizer checks a stage with the
    /// machines of the cell it fills, not those its configuration uses), on at most the machines.
    #[test]
    fn dp_equals_brute_force(
        p in profiles(),
        cfg in single_level(1..=5),
        fewer in any::<bool>(),
    ) {
        let cfg = PdConfig {
            use_fewer_machines: fewer,
            memory_check: cfg.memory_check && !fewer,
            ..cfg
        };
        let (machines, replicate) = (cfg.levels[0].machines, cfg.replicate);
        let p = PdStates::chain(&p);
        let brute = searched(0, p.len(), machines, replicate, fewer)
            .into_iter()
            .filter_map(|c| pd_objective(&p, &cfg, &c).map(|v| (v, c)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        match (pipedream_partition(&p, &cfg), brute) {
            (None, None) => {}
            (Some(part), Some((best, _))) => {
                prop_assert_eq!(part.time, best);
                let c: Vec<_> = part.stages.iter().map(|s| (s.first, s.last, s.replicas)).collect();
                let used = c.iter().map(|x| x.2).sum::<usize>();
                if fewer {
                    prop_assert!(used <= machines);
                } else {
                    prop_assert_eq!(used, machines);
                }
                prop_assert_eq!(pd_objective(&p, &cfg, &c), Some(part.time));
                if !replicate {
                    prop_assert_eq!(c.len(), used);
                }
            }
            (dp, brute) => prop_assert!(false, "DP {:?} vs brute force {:?}", dp, brute),
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(200))]

    /// Two levels (`-n a b -b x y`): every range's time at the upper level is the least
    /// lower-level time of that range on all its machines (at most, with `use_fewer_machines`
    /// and the memory check off), found here by enumeration.
    #[test]
    fn two_level_dp_equals_brute_force(
        p in profiles(),
        inner in 1usize..=3,
        outer in 1usize..=3,
        replicate in any::<bool>(),
        memory_check in any::<bool>(),
        memory in 1e9f64..4e10,
        intra in 1e9f64..1e12,
        inter in 1e8f64..1e10,
        activation_compression_ratio in proptest::option::of(0.5f64..4.0),
        fewer in any::<bool>(),
    ) {
        let memory_check = memory_check && !fewer;
        let cfg = PdConfig {
            levels: vec![
                PdLevel { machines: inner, bandwidth: intra },
                PdLevel { machines: outer, bandwidth: inter },
            ],
            replicate,
            memory_check,
            memory,
            activation_compression_ratio,
            use_fewer_machines: fewer,
        };
        let n = p.len();
        let compute = |i: usize, j: usize| Some(p.compute[i..=j].iter().sum::<f64>());
        let p = PdStates::chain(&p);
        // Least level-1 time of layers i..=j on `inner` machines.
        let inner_best = |i: usize, j: usize| -> Option<f64> {
            searched(i, j + 1, inner, replicate, fewer)
                .iter()
                .filter_map(|c| pd_level_objective(&p, &cfg, 0, &compute, c))
                .min_by(f64::total_cmp)
        };
        let brute = searched(0, n, outer, replicate, fewer)
            .iter()
            .filter_map(|c| pd_level_objective(&p, &cfg, 1, &inner_best, c))
            .min_by(f64::total_cmp);
        match (pipedream_partition(&p, &cfg), brute) {
            (None, None) => {}
            (Some(part), Some(best)) => {
                let scale = best.abs().max(1e-12);
                prop_assert!((part.time - best).abs() <= 1e-9 * scale, "{} vs {}", part.time, best);
                let mut gpus: Vec<u32> = part.stages.iter().flat_map(|s| s.gpus.clone()).collect();
                let used = gpus.len();
                if fewer {
                    prop_assert!(used <= inner * outer);
                } else {
                    prop_assert_eq!(used, inner * outer);
                }
                gpus.sort();
                gpus.dedup();
                prop_assert_eq!(gpus.len(), used, "a GPU once at most");
                prop_assert!(gpus.iter().all(|&g| (g as usize) < inner * outer));
                for s in &part.stages {
                    prop_assert_eq!(s.replicas, s.gpus.len());
                }
            }
            (dp, brute) => prop_assert!(false, "DP {:?} vs brute force {:?}", dp, brute),
        }
    }
}

/// A random branching graph in PipeDream's `graph.txt`: `node1` is the input, read by the first
/// layer only (the one source once the input is removed); every later layer reads at least one
/// earlier layer, and maybe others.
fn graphs() -> impl Strategy<Value = String> {
    (2usize..=6).prop_flat_map(|n| {
        (
            proptest::collection::vec((0.0f64..10.0, 0.0f64..10.0, 0.0f64..4e9, 0.0f64..4e9), n),
            proptest::collection::vec(proptest::collection::vec(any::<bool>(), n), n),
            proptest::collection::vec(0usize..6, n),
        )
            .prop_map(|(layers, extra, must)| {
                let mut text = String::from(
                    "node1 -- Input -- forward_compute_time=0.000, backward_compute_time=0.000, \
                     activation_size=1000.000, parameter_size=0.000\n",
                );
                for (j, (f, b, a, w)) in layers.iter().enumerate() {
                    text.push_str(&format!(
                        "node{} -- Conv2d -- forward_compute_time={f}, backward_compute_time={b}, \
                         activation_size={a}, parameter_size={w}\n",
                        j + 2
                    ));
                }
                text.push_str("\tnode1 -- node2\n");
                for j in 1..layers.len() {
                    for (i, &extra) in extra[j].iter().enumerate().take(j) {
                        if i == must[j] % j || extra {
                            text.push_str(&format!("\tnode{} -- node{}\n", i + 2, j + 2));
                        }
                    }
                }
                text
            })
    })
}

proptest! {
    #![proptest_config(proptest_config(300))]

    /// On a branching graph the DP cuts at the optimizer's antichain states: it finds the least
    /// objective over every sequence of nested states, and its plan, in the layer order it
    /// names, is a valid partition of the imported instance.
    #[test]
    fn antichain_dp_equals_brute_force(
        text in graphs(),
        cfg in single_level(1..=4),
    ) {
        let (machines, replicate) = (cfg.levels[0].machines, cfg.replicate);
        let mut opts = pipedream_cluster(machines as u32);
        opts.batch = Some(1);
        let inst = import(Source::PipeDream, &text, &opts).unwrap();
        let states = PdStates::of(&PdProfile::of(&inst));
        prop_assert!(states.graph());
        prop_assert!(states.len() >= inst.num_layers());
        // Every configuration of the states (a stage runs after state `start - 1`); the
        // objective refuses ranges that are not sets of layers.
        let brute = configurations(states.len(), machines, replicate)
            .into_iter()
            .filter_map(|c| pd_objective(&states, &cfg, &c).map(|v| (v, c)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        match (pipedream_partition(&states, &cfg), brute) {
            (None, None) => {}
            (Some(part), Some((best, _))) => {
                prop_assert_eq!(part.time, best);
                let c: Vec<_> = part.stages.iter().map(|s| (s.first, s.last, s.replicas)).collect();
                prop_assert_eq!(pd_objective(&states, &cfg, &c), Some(part.time));
                let plan = pd_plan(&part);
                plan.check(&inst).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let mut layers: Vec<usize> = part.stages.iter().flat_map(|s| s.layers.clone()).collect();
                layers.sort_unstable();
                prop_assert_eq!(layers, (0..inst.num_layers()).collect::<Vec<_>>());
            }
            (dp, brute) => prop_assert!(false, "DP {:?} vs brute force {:?}", dp, brute),
        }
    }
}

fn synthetic() -> Instance {
    Instance::from_json(
        r#"{"format": "pipeplan/instance@1", "name": "synthetic",
          "model": {"batch": 8, "input": "64 MiB", "layers": [
            {"name": "a", "forward": 6, "backward": 12, "weights": "1 MiB", "output": "64 MiB"},
            {"name": "b", "forward": 3, "backward": 6, "weights": "4 MiB", "output": "32 MiB"},
            {"name": "c", "forward": 3, "backward": 6, "weights": "16 MiB", "output": "16 MiB"},
            {"name": "d", "forward": 2, "backward": 4, "weights": "64 MiB", "output": "4 MiB"},
            {"name": "e", "forward": 1, "backward": 2, "weights": "256 MiB", "output": "1 MiB"}]},
          "cluster": {"gpus": 4, "memory": "4 GiB", "bandwidth": {"intra_node": "12 GB/s"}}}"#,
    )
    .unwrap()
}

#[test]
fn plans_are_judged_at_their_valid_period() {
    let inst = synthetic();
    let algo = registry::by_name("pipedream").unwrap();
    for replicate in ["false", "true"] {
        let mut params = BTreeMap::new();
        params.insert("replicate".to_string(), replicate.to_string());
        let opts = SolveOptions {
            params,
            ..SolveOptions::default()
        };
        let sol = run(algo.as_ref(), &inst, &opts).unwrap();
        assert_eq!(sol.stats.status, Status::Heuristic);
        let obj = sol.claimed.objective.as_ref().unwrap();
        assert_eq!(obj.kind, ObjectiveKind::PipedreamStageTime);
        assert_eq!(sol.claimed.period_ms, Some(obj.value));
        let ev = sol.evaluated.as_ref().unwrap();
        assert!(ev.fits && ev.valid_schedule == Some(true), "{:?}", ev.notes);
        let vp = valid_period_of_plan(&inst, &sol.plan).unwrap();
        assert_eq!(ev.period_ms, Some(vp.period));
        // PipeDream's model is optimistic: its predicted time is at most the valid period.
        assert!(
            obj.value <= vp.period * (1.0 + 1e-12),
            "{} vs {}",
            obj.value,
            vp.period
        );
        assert!(sol
            .notes
            .iter()
            .any(|n| n.contains("valid period under 1F1B*")));
        if replicate == "false" {
            assert_eq!(sol.plan.stages.len(), 4);
        }
    }
}

#[test]
fn memory_failures_are_precise() {
    let mut inst = synthetic();
    inst.cluster.memory = 512.0 * 1024.0 * 1024.0;
    let algo = registry::by_name("pipedream").unwrap();
    // PipeDream's own memory check passes (its stashed-data estimates are small); under
    // pipeplan's memory model no 1F1B* period fits. The plan is PipeDream's, with its claims,
    // and the evaluator says it does not fit, naming the GPU.
    let sol = run(algo.as_ref(), &inst, &SolveOptions::default()).unwrap();
    assert_eq!(sol.claimed.fits, Some(true));
    assert_eq!(sol.claimed.period_ms, Some(18.0));
    let ev = sol.evaluated.as_ref().unwrap();
    assert!(!ev.fits && ev.valid_schedule == Some(true), "{ev:?}");
    let note = sol
        .notes
        .iter()
        .find(|n| n.contains("no 1F1B* period of PipeDream's partition fits"))
        .unwrap_or_else(|| panic!("{:?}", sol.notes));
    assert!(
        note.contains("GPU 3 needs") && note.contains("GPUs have 512.00 MiB"),
        "{note}"
    );
    // Where PipeDream's own check rejects every partition, there is no plan.
    inst.cluster.memory = 64.0 * 1024.0 * 1024.0;
    match algo.solve(&inst, &SolveOptions::default()) {
        Err(SolveError::Infeasible(msg)) => {
            assert!(msg.contains("PipeDream's memory check"), "{msg}");
            assert!(msg.contains("64.00 MiB"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    let mut params = BTreeMap::new();
    params.insert("replicate".to_string(), "sometimes".to_string());
    let opts = SolveOptions {
        params,
        ..SolveOptions::default()
    };
    let e = algo.solve(&inst, &opts).unwrap_err().to_string();
    assert!(e.contains("--set replicate: expected true or false"), "{e}");
}
