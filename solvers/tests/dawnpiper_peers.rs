//! DawnPiper on imported operator graphs: every plan on the peers' real graphs
//! (dnn-partitioning's `OperatorGraphs`, skipped visibly without `PIPEPLAN_PEERS`) passes the
//! neutral evaluator, and broken graph input gets precise errors.

use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveError};
use pipeplan_solvers::dawnpiper::bipar::Dawnpiper;
use pipeplan_solvers::dawnpiper::exhaustive::Exhaustive;
use serde_json::json;

mod dawnpiper_common;
use dawnpiper_common::{objective, with};

fn operator_graph_options(memory_gib: f64) -> pipeplan_formulations::import::ImportOptions {
    use pipeplan_formulations::instance::Cluster;
    pipeplan_formulations::import::ImportOptions::new(Cluster {
        pcie: Some(12e9),
        ..Cluster::single_node(8, memory_gib * 1073741824.0, 12e9)
    })
}

/// The peer operator graphs (`OperatorGraphs/*.json` under `PIPEPLAN_PEERS`/dnn-partitioning).
fn peer_operator_graphs(what: &str) -> Vec<std::path::PathBuf> {
    let Some(dir) = pipeplan_formulations::peers::subdir("dnn-partitioning", what) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for sub in [
        "throughput-inputs/OperatorGraphs",
        "latency-inputs/OperatorGraphs",
    ] {
        let mut v: Vec<_> = std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        v.sort();
        files.extend(v);
    }
    if files.is_empty() {
        pipeplan_formulations::peers::skip_notice(what, "no OperatorGraphs/*.json");
    }
    files
}

/// Every plan dawnpiper emits on the peer operator graphs passes the neutral evaluator: a valid
/// schedule, fits as claimed, the claimed per-GPU peak memory is the evaluated one, and with
/// `comm=include` (async) the claimed objective is the evaluated period. Graphs of at most 200
/// nodes are also solved by the exhaustive reference (max_nodes raised), which BiPar never
/// beats on the same objective. 8 GPUs, 12 GB/s links and PCIe, 16 and 4 GiB; 2, 4, 8 stages;
/// every `comm` mode; async and 1F1B.
#[test]
fn peer_operator_graph_plans_pass_the_evaluator() {
    let what = "dawnpiper::peer_operator_graph_plans_pass_the_evaluator";
    use pipeplan_formulations::import::{import_file, Source};
    let mut plans = 0;
    for path in peer_operator_graphs(what) {
        let at = path.display();
        for mem in [16.0, 4.0] {
            let inst = import_file(Source::DnnPartitioning, &path, &operator_graph_options(mem))
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            for p in [2usize, 4, 8] {
                for sched in ["async", "1f1b"] {
                    for comm in ["ignore", "avoid", "include"] {
                        let o = with(&[("comm", comm), ("schedule", sched)], Some(p));
                        let sol = match Dawnpiper.solve(&inst, &o) {
                            Ok(s) => s,
                            Err(SolveError::Infeasible(_)) => continue,
                            Err(e) => panic!("{at} {mem} GiB {p} {sched} {comm}: {e}"),
                        };
                        let ctx = format!("{at} {mem} GiB, {p} stages, {sched}, comm={comm}");
                        let ev = pipeplan_formulations::evaluate(&inst, &sol.plan)
                            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert_ne!(ev.valid_schedule, Some(false), "{ctx}");
                        assert_eq!(Some(ev.fits), sol.claimed.fits, "{ctx}");
                        assert!(ev.fits, "{ctx}");
                        // Synchronous: the claimed peaks are the evaluated ones. Async: the
                        // claims assume P - s micro-batches in flight (raised to the evaluator's
                        // 1F1B* count where that is more), so they are never below.
                        let claimed = sol.claimed.peak_memory.as_ref().unwrap();
                        for (g, (c, e)) in claimed.iter().zip(&ev.peak_memory).enumerate() {
                            let tol = 1e-9 * e.max(1.0);
                            let ok = if sched == "async" {
                                *c >= e - tol
                            } else {
                                (c - e).abs() <= tol
                            };
                            assert!(ok, "{ctx}: GPU {g} claimed {c} evaluated {e}");
                        }
                        if comm == "include" && sched == "async" {
                            let (c, e) = (objective(&sol), ev.period_ms.unwrap());
                            assert!((c - e).abs() <= 1e-9 * e, "{ctx}: claimed {c} vs {e}");
                        }
                        plans += 1;
                    }
                }
            }
            if inst.num_layers() <= 200 {
                for comm in ["ignore", "include"] {
                    let o = with(&[("comm", comm), ("max_nodes", "200")], Some(8));
                    let (Ok(b), Ok(e)) = (
                        Dawnpiper.solve(&inst, &with(&[("comm", comm)], Some(8))),
                        Exhaustive.solve(&inst, &o),
                    ) else {
                        continue;
                    };
                    let period = |s: &pipeplan_solvers::algorithm::Solution| {
                        pipeplan_formulations::evaluate(&inst, &s.plan)
                            .unwrap()
                            .period_ms
                            .unwrap()
                    };
                    eprintln!(
                        "{at} {mem} GiB 8 stages comm={comm}: dawnpiper claimed {:.3} ms \
                         evaluated {:.3} ms; exhaustive claimed {:.3} ms evaluated {:.3} ms",
                        objective(&b),
                        period(&b),
                        objective(&e),
                        period(&e)
                    );
                    assert!(objective(&b) >= objective(&e) * (1.0 - 1e-9), "{at} {comm}");
                }
            }
        }
    }
    if plans > 0 {
        eprintln!("{what}: {plans} plans checked");
    }
}

/// Bad graph input through the solvers, on imported operator graphs (the committed fixture,
/// and the peer graphs when present): unknown node references, cycles, backward nodes paired
/// twice or naming a forward node, and more stages than nodes get one precise message each.
#[test]
fn bad_graph_input_gets_precise_errors_through_the_solvers() {
    use pipeplan_formulations::import::{import_file, Source};
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../formulations/tests/fixtures/dawnpiper/tiny_operator_graph.json");
    let mut files = vec![fixture];
    files.extend(peer_operator_graphs(
        "dawnpiper::bad_graph_input_gets_precise_errors_through_the_solvers",
    ));
    for path in files {
        let at = path.display();
        let inst = import_file(
            Source::DnnPartitioning,
            &path,
            &operator_graph_options(16.0),
        )
        .unwrap_or_else(|e| panic!("{at}: {e}"));
        let n = inst.num_layers();
        let names: Vec<String> = inst.extensions["graph"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap().to_string())
            .collect();
        let broken = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut i = inst.clone();
            f(i.extensions.get_mut("graph").unwrap());
            i
        };
        let mut cases: Vec<(Instance, String)> = vec![
            (
                broken(&|g| g["nodes"][2]["inputs"] = json!(["no such node"])),
                "extensions.graph.nodes[2].inputs[0]: unknown node \"no such node\"".into(),
            ),
            (
                broken(&|g| {
                    g["nodes"][1]["inputs"] = json!([names[2].clone()]);
                    g["nodes"][2]["inputs"] = json!([names[1].clone()]);
                }),
                "extensions.graph.nodes: the graph has a cycle: ".into(),
            ),
        ];
        // The first node with a backward node, and that backward node (inference graphs have
        // none: the pairing cases need one).
        let k = (0..n).find(|&i| inst.extensions["graph"]["nodes"][i]["grad"][0].is_string());
        if let Some(k) = k {
            assert!(k + 1 < n, "{at}");
            let grad = inst.extensions["graph"]["nodes"][k]["grad"][0].clone();
            cases.push((
                broken(&|g| g["nodes"][k + 1]["grad"] = json!([grad.clone()])),
                format!(
                    "extensions.graph.nodes[{}].grad[0]: backward node {grad} is already paired \
                     with node {k}",
                    k + 1
                ),
            ));
            cases.push((
                broken(&|g| g["nodes"][k]["grad"] = json!([names[k + 1].clone()])),
                format!(
                    "extensions.graph.nodes[{k}].grad[0]: \"{}\" names a forward node",
                    names[k + 1]
                ),
            ));
        } else {
            assert!(
                !path.ends_with("tiny_operator_graph.json"),
                "the fixture pairs backward nodes"
            );
        }
        for (bad, want) in &cases {
            for algo in [&Dawnpiper as &dyn Algorithm, &Exhaustive] {
                let o = with(&[("max_nodes", "100000")], Some(2));
                let o = if algo.name() == "dawnpiper" {
                    with(&[], Some(2))
                } else {
                    o
                };
                match algo.solve(bad, &o) {
                    Err(SolveError::Input(e)) => {
                        let e = e.to_string();
                        assert!(e.starts_with(want.as_str()), "{at} {}: {e}", algo.name());
                    }
                    other => panic!("{at} {}: {:?}", algo.name(), other.map(|s| s.plan)),
                }
            }
        }
        // Enough GPUs, too few nodes.
        let mut wide = inst.clone();
        wide.cluster.gpus = n as u32 + 1;
        let e = Dawnpiper
            .solve(&wide, &with(&[], Some(n + 1)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} stages but the chain has {n} layers", n + 1)),
            "{at}: {e}"
        );
    }
}
