//! DawnPiper formulations: the `graph` extension's errors, the O(1) stage memory against the
//! evaluator's cost model, MemOpt's claims against the evaluator, swap/recompute accounting.

use pipeplan_formulations::dawnpiper::balance::{balanced_cuts, Balance, Model};
use pipeplan_formulations::dawnpiper::graph::Graph;
use pipeplan_formulations::dawnpiper::memopt::{memopt, Allowed};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::testing::proptest_config;
use pipeplan_formulations::Instance;
use serde_json::json;

/// A chain of `n` layers with varied times and sizes; `mem` GiB per GPU.
fn chain(n: usize, mem: f64, schedule: &str, graph: Option<serde_json::Value>) -> Instance {
    Instance::from_json(&chain_doc(n, mem, schedule, graph).to_string()).unwrap()
}

/// The instance file of [`chain`].
fn chain_doc(
    n: usize,
    mem: f64,
    schedule: &str,
    graph: Option<serde_json::Value>,
) -> serde_json::Value {
    let layers: Vec<_> = (0..n)
        .map(|i| {
            let f = 1.0 + (i * 7 % 5) as f64;
            json!({"name": format!("l{i}"), "forward": f, "backward": 2.0 * f,
                   "weights": 1e8 + 3e7 * (i % 3) as f64, "output": 2e8 - 1e7 * (i % 4) as f64})
        })
        .collect();
    let mut doc = json!({
        "format": "pipeplan/instance@1", "name": "t",
        "model": {"batch": 4, "input": 1e8, "layers": layers},
        "cluster": {"gpus": 4, "memory": mem * 1073741824.0,
                    "bandwidth": {"intra_node": 1e10}, "pcie": 1.2e10},
        "training": {"schedule": schedule, "micro_batches": 4}
    });
    if let Some(g) = graph {
        doc["extensions"] = json!({ "graph": g });
    }
    doc
}

/// The error of reading an instance with the graph extension `nodes`: the extension is
/// checked with the rest of the file.
fn graph_error(nodes: serde_json::Value) -> String {
    let doc = chain_doc(3, 8.0, "1f1b", Some(json!({ "nodes": nodes })));
    Instance::from_json(&doc.to_string())
        .unwrap_err()
        .to_string()
}

#[test]
fn graph_extension_errors_name_the_field() {
    let e = graph_error(json!([{"name": "a"}, {"name": "b", "inputs": ["zz"]}, {"name": "c"}]));
    assert!(
        e.starts_with("extensions.graph.nodes[1].inputs[0]: unknown node \"zz\""),
        "{e}"
    );
    let e = graph_error(json!([{"name": "a", "inputs": ["c"]}, {"name": "b"}, {"name": "c"}]));
    assert!(
        e.starts_with("extensions.graph.nodes: the graph has a cycle: "),
        "{e}"
    );
    let e = graph_error(json!([{"name": "a", "inputs": ["a"]}, {"name": "b"}, {"name": "c"}]));
    assert!(e.contains("cycle: a -> a"), "{e}");
    let e = graph_error(
        json!([{"name": "a", "inputs": ["b"]}, {"name": "b", "inputs": []}, {"name": "c"}]),
    );
    assert!(
        e.starts_with("extensions.graph.nodes[0].inputs[0]: node \"b\" (index 1) runs later"),
        "{e}"
    );
    let e = graph_error(json!([{"name": "a"}, {"name": "b"}]));
    assert!(
        e.starts_with("extensions.graph.nodes: 2 nodes but the chain has 3 layers"),
        "{e}"
    );
    let e = graph_error(
        json!([{"name": "a", "grad": ["g"]}, {"name": "b", "grad": ["g"]}, {"name": "c"}]),
    );
    assert!(
        e.starts_with("extensions.graph.nodes[1].grad[0]: backward node \"g\" is already paired"),
        "{e}"
    );
    let e = graph_error(json!([{"name": "a"}, {"name": "a"}, {"name": "c"}]));
    assert!(e.starts_with("extensions.graph.nodes[1].name"), "{e}");
    let e = graph_error(json!([{"name": "a", "recompute": -1}, {"name": "b"}, {"name": "c"}]));
    assert!(e.starts_with("extensions.graph.nodes[0].recompute"), "{e}");
    let e = graph_error(json!([{"name": "a", "bogus": 1}, {"name": "b"}, {"name": "c"}]));
    assert!(e.starts_with("extensions.graph.nodes[0]"), "{e}");
}

#[test]
fn derived_graph_has_one_node_per_layer() {
    let inst = chain(5, 8.0, "1f1b", None);
    let g = Graph::of(&inst).unwrap();
    assert!(g.derived);
    assert_eq!(g.len(), 5);
    assert_eq!(g.nodes[3].inputs, vec![2]);
    assert_eq!(g.nodes[3].recompute, inst.chain().forward[3]);
}

#[test]
fn plain_memory_is_the_evaluator_cost_model() {
    for kind in [
        ScheduleKind::Async,
        ScheduleKind::OneFOneB,
        ScheduleKind::Gpipe,
    ] {
        let ws = json!({"nodes": (0..9).map(|i| json!({"name": format!("n{i}"), "workspace": 1e6 * i as f64})).collect::<Vec<_>>()});
        let inst = chain(9, 8.0, "1f1b", Some(ws));
        let m = Model::new(&inst, kind, 3).unwrap();
        for a in 0..9 {
            for b in a..9 {
                for s in 0..3 {
                    let c = m.cost(a, b, s, &[], &[]);
                    let x = m.plain_memory(a, b, s);
                    assert!(
                        (m.peak(&c, s) - x).abs() <= 1e-6 * x,
                        "{kind} {a}..{b} s{s}"
                    );
                }
            }
        }
    }
}

#[test]
fn balanced_cuts_balance() {
    let inst = chain(12, 8.0, "1f1b", None);
    let m = Model::new(&inst, ScheduleKind::OneFOneB, 3).unwrap();
    let cuts = balanced_cuts(&m, 0, 11, 0, 3, Balance::Compute);
    assert_eq!(cuts.len(), 2);
    // Min-max: no single move of a cut lowers the largest stage compute.
    let worst = |c: &[usize]| {
        let e = [c[0], c[1], 11];
        let s = [0, c[0] + 1, c[1] + 1];
        (0..3).map(|j| m.compute(s[j], e[j])).fold(0.0, f64::max)
    };
    let best = (0..11)
        .flat_map(|x| (x + 1..11).map(move |y| [x, y]))
        .map(|c| worst(&c))
        .fold(f64::INFINITY, f64::min);
    assert!((worst(&cuts) - best).abs() <= 1e-6 * best);
    let mem = balanced_cuts(&m, 0, 11, 0, 3, Balance::Memory);
    // Stage 0 keeps 3 micro-batches, stage 2 one: the memory-balanced first stage is shorter.
    assert!(mem[0] <= cuts[0], "{mem:?} vs {cuts:?}");
}

/// MemOpt's stage (time, peak) is exactly what the evaluator charges for its actions (GPipe:
/// every stage keeps m micro-batches, so the peak formula is the evaluator's).
#[test]
fn memopt_claims_match_the_evaluator() {
    let mut checked = 0;
    for mem in [3.0, 4.0, 5.0, 6.0] {
        let inst = chain(8, mem, "gpipe", None);
        let m = Model::new(&inst, ScheduleKind::Gpipe, 2).unwrap();
        let plans = [
            memopt(&m, 0, 3, 0, Allowed::ALL),
            memopt(&m, 4, 7, 1, Allowed::ALL),
        ];
        let plan = Plan {
            order: None,
            stages: vec![
                Stage {
                    swap: plans[0].swap.clone(),
                    recompute: plans[0].recompute.clone(),
                    ..Stage::single(0, 3, 0)
                },
                Stage {
                    swap: plans[1].swap.clone(),
                    recompute: plans[1].recompute.clone(),
                    ..Stage::single(4, 7, 1)
                },
            ],
            schedule: Schedule::Gpipe {
                micro_batches: None,
                micro_batch: None,
            },
        };
        let ev = evaluate(&inst, &plan).unwrap();
        #[allow(clippy::needless_range_loop)]
        for s in 0..2 {
            assert!(
                (ev.stage_time[s] - plans[s].time).abs() <= 1e-9 * plans[s].time,
                "{mem}: {ev:?}"
            );
            assert!(
                (ev.peak_memory[s] - plans[s].peak).abs() <= 1e-6 * plans[s].peak,
                "{mem}"
            );
            assert_eq!(
                ev.peak_memory[s] <= inst.cluster.memory * (1.0 + 1e-9),
                plans[s].fits
            );
            checked += plans[s].optimized() as usize;
        }
    }
    assert!(checked > 0, "no case needed memory optimization");
}

#[test]
fn swap_and_recompute_lower_memory_and_cost_time() {
    let inst = chain(4, 64.0, "gpipe", None);
    let base = Plan {
        order: None,
        stages: vec![Stage::single(0, 3, 0)],
        schedule: Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    };
    let e0 = evaluate(&inst, &base).unwrap();
    let mut rec = base.clone();
    rec.stages[0].recompute = vec![1];
    let e1 = evaluate(&inst, &rec).unwrap();
    let saved = inst.chain().saved[1];
    // m = 4 micro-batches keep it no more; one re-materialization is transient.
    assert!((e0.max_memory - e1.max_memory - 3.0 * saved).abs() <= 1e-6 * saved);
    assert!((e1.stage_time[0] - e0.stage_time[0] - inst.chain().forward[1]).abs() < 1e-9);
    let mut sw = base.clone();
    sw.stages[0].swap = vec![0];
    let e2 = evaluate(&inst, &sw).unwrap();
    let s0 = inst.chain().saved[0];
    assert!((e0.max_memory - e2.max_memory - 3.0 * s0).abs() <= 1e-6 * s0);
    assert!(e2.stage_time[0] >= e0.stage_time[0]);
}

#[test]
fn bad_actions_are_rejected_with_the_field() {
    let inst = chain(4, 64.0, "gpipe", None);
    let mut p = Plan {
        order: None,
        stages: vec![Stage::single(0, 3, 0)],
        schedule: Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    };
    p.stages[0].swap = vec![1];
    p.stages[0].recompute = vec![1];
    assert_eq!(
        evaluate(&inst, &p).unwrap_err().field_path(),
        Some("plan.stages[0].swap")
    );
    p.stages[0].recompute = vec![7];
    assert_eq!(
        evaluate(&inst, &p).unwrap_err().field_path(),
        Some("plan.stages[0].recompute")
    );
    let mut no_pcie = inst.clone();
    no_pcie.cluster.pcie = None;
    p.stages[0].recompute = vec![];
    let e = evaluate(&no_pcie, &p).unwrap_err().to_string();
    assert!(e.contains("cluster.pcie"), "{e}");
    let g = json!({"nodes": [{"name": "a"}, {"name": "b", "swappable": false}, {"name": "c"}, {"name": "d"}]});
    let inst = chain(4, 64.0, "gpipe", Some(g));
    let e = evaluate(&inst, &p).unwrap_err().to_string();
    assert!(e.contains("not swappable"), "{e}");
}

/// Appendix B.2's split of a cut's bytes: the link time is the evaluator's (2 x its transfer),
/// and a residual tensor that crosses every position of a window is inevitable there.
#[test]
fn cut_communication_matches_the_evaluator_and_splits_inevitable_bytes() {
    // l0 is read by l1 and by l5 (a residual edge over the whole middle); l2's output is read
    // by l3 only. The chain's cut bytes say the same: l0's output crosses cuts 0..=4.
    let outputs = [5e9, 1e6, 1e10, 1e6, 1e6, 1e6];
    let layers: Vec<_> = (0..6)
        .map(|i| {
            let cut = outputs[i] + if (1..5).contains(&i) { outputs[0] } else { 0.0 };
            json!({"name": format!("l{i}"), "forward": 1.0, "backward": 2.0, "weights": 0.0,
                   "output": outputs[i], "cut": cut, "saved": 1e9})
        })
        .collect();
    let nodes = json!([{"name": "l0"}, {"name": "l1"}, {"name": "l2"}, {"name": "l3"},
                       {"name": "l4"}, {"name": "l5", "inputs": ["l0", "l4"]}]);
    let doc = json!({
        "format": "pipeplan/instance@1", "name": "residual",
        "model": {"batch": 4, "input": 1e6, "layers": layers},
        "cluster": {"gpus": 3, "memory": 512.0 * 1073741824.0,
                    "bandwidth": {"intra_node": 1e10}},
        "training": {"schedule": "async"},
        "extensions": {"graph": {"nodes": nodes}}
    });
    let inst = Instance::from_json(&doc.to_string()).unwrap();
    let m = Model::new(&inst, ScheduleKind::Async, 3).unwrap();
    let c = &m.comm;
    // Inevitable bytes of a window: outputs produced at or before its first position and read
    // after its last one.
    assert_eq!(c.inevitable(1, 2), 5e9, "l0 crosses cuts 1 and 2");
    assert_eq!(c.inevitable(1, 4), 5e9);
    assert_eq!(c.inevitable(2, 2), 1e10 + 5e9, "one position: all of it");
    assert_eq!(c.inevitable(2, 3), 5e9, "l2 dies at l3");
    assert_eq!(c.inevitable(0, 4), 5e9);
    assert_eq!(c.inevitable(4, 4), 5e9 + 1e6, "l0 and l4 are read by l5");
    assert_eq!(c.avoidable(1, c.inevitable(1, 2)), 1e6);
    assert_eq!(c.avoidable(2, c.inevitable(1, 2)), 1e10);
    // Link times are the evaluator's: 2 x (cut bytes / bandwidth) per micro-batch.
    let plan = Plan {
        order: None,
        stages: vec![
            Stage::single(0, 1, 0),
            Stage::single(2, 3, 1),
            Stage::single(4, 5, 2),
        ],
        schedule: Schedule::of_kind(ScheduleKind::Async),
    };
    let cuts = pipeplan_formulations::cost::cut_costs(&inst, &inst.chain(), &plan);
    for (s, p) in [(0usize, 1usize), (1, 3)] {
        let want = 2.0 * cuts[s].transfer;
        assert!((c.link_ms(p, s) - want).abs() <= 1e-9 * want, "cut {p}");
    }
    assert!((c.link_ms(1, 0) - 2.0 * (5e9 + 1e6) / 1e10 * 1e3).abs() < 1e-6);
    // Memory balance counts the cut's buffers, which a stage holds only when it is cut: here
    // every split needs more memory than the whole range, and the balanced 2-stage cut is the
    // min-max one (after l1: 14.002 GB on both GPUs), found with a grown search bound.
    let m2 = Model::new(&inst, ScheduleKind::Async, 2).unwrap();
    let split = |k: usize| m2.plain_memory(0, k, 0).max(m2.plain_memory(k + 1, 5, 1));
    assert!((0..5).all(|k| split(k) > m2.plain_memory(0, 5, 0)));
    let best = (0..5)
        .min_by(|&x, &y| split(x).total_cmp(&split(y)))
        .unwrap();
    assert_eq!(best, 1);
    assert_eq!(balanced_cuts(&m2, 0, 5, 0, 2, Balance::Memory), vec![1]);
    // The evaluator's async period counts the slowest link as a resource.
    let ev = evaluate(&inst, &plan).unwrap();
    let slowest = c.link_ms(1, 0).max(c.link_ms(3, 1));
    assert!((ev.period_ms.unwrap() - slowest).abs() <= 1e-9 * slowest);
}

proptest::proptest! {
    #![proptest_config(proptest_config(200))]

    /// `plain_memory_end` (block skips on a bound) returns the linear scan's end: the last
    /// node before the first stage over the threshold, on chains whose cuts go up and down (so
    /// the end buffer varies) and whose nodes have workspaces, with zero weights, cuts, saved
    /// sizes and workspaces included; ranges up to the last node (which has no end buffer).
    #[test]
    fn plain_memory_end_equals_the_linear_scan(
        sizes in proptest::collection::vec((0u8..4, 0u8..3, 0u8..3, 0u8..3), 2..40),
        stages in 1usize..5,
        kind in 0usize..3,
        picks in proptest::collection::vec((0usize..40, 0usize..40, 0usize..5, 0usize..40, proptest::bool::ANY), 16),
    ) {
        let n = sizes.len();
        let layers: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &(w, c, k, _))| {
                // Cuts of 0, 1e7 or 3e8 bytes and small saved sizes: the end buffer swings
                // more than a layer adds, so a longer stage can need less memory.
                let cut = [0.0, 1e7, 3e8][c as usize];
                json!({"name": format!("l{i}"), "forward": 1.0, "backward": 2.0,
                       "weights": 1e6 * w as f64, "output": 1e7,
                       "cut": cut, "saved": 1e6 * k as f64})
            })
            .collect();
        let nodes: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &(_, _, _, ws))| {
                let workspace = [0.0, 5e6, 2e8][ws as usize];
                json!({"name": format!("l{i}"), "workspace": workspace})
            })
            .collect();
        let schedule = ["async", "1f1b", "gpipe"][kind];
        let doc = json!({
            "format": "pipeplan/instance@1", "name": "t",
            "model": {"batch": 4, "input": 1e7, "layers": layers},
            "cluster": {"gpus": 4, "memory": 8.0 * 1073741824.0,
                        "bandwidth": {"intra_node": 1e10}, "pcie": 1.2e10},
            "training": {"schedule": schedule, "micro_batches": 4},
            "extensions": {"graph": {"nodes": nodes}}
        });
        let inst = Instance::from_json(&doc.to_string()).unwrap();
        let kind = [ScheduleKind::Async, ScheduleKind::OneFOneB, ScheduleKind::Gpipe][kind];
        let stages = stages.min(n);
        let m = Model::new(&inst, kind, stages).unwrap();
        for (start, len, s, at, below) in picks {
            let start = start % n;
            let last = (start + len).min(n - 1);
            let s = s % stages;
            // Thresholds at a stage's memory or just below it: the boundaries where a skip
            // that misjudged a block would show.
            let e = (start + at).min(last);
            let t = m.plain_memory(start, e, s) * if below { 1.0 - 1e-12 } else { 1.0 };
            let mut scan = start;
            while scan < last && m.plain_memory(start, scan + 1, s) <= t {
                scan += 1;
            }
            proptest::prop_assert_eq!(m.plain_memory_end(start, last, s, t), scan);
        }
    }
}
