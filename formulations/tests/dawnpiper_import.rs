//! The dnn-partitioning importer emits DawnPiper's `graph` extension from operator graphs:
//! on the hand-written fixture (exact expected extension), and on the peer operator graphs when
//! `PIPEPLAN_PEERS` holds them (visible SKIPPED notice otherwise).

use pipeplan_formulations::dawnpiper::balance::Model;
use pipeplan_formulations::dawnpiper::graph::Graph;
use pipeplan_formulations::import::{import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{Cluster, ScheduleKind};
use pipeplan_formulations::peers;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn opts() -> ImportOptions {
    ImportOptions::new(Cluster {
        pcie: Some(12e9),
        ..Cluster::single_node(2, 8.0 * 1024f64.powi(3), 100e9)
    })
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dawnpiper")
        .join(name)
}

#[test]
fn operator_graph_fixture_gives_the_graph_extension() {
    let inst = import_file(
        Source::DnnPartitioning,
        &fixture("tiny_operator_graph.json"),
        &opts(),
    )
    .unwrap();
    assert_eq!(
        inst.extensions["graph"],
        json!({"nodes": [
            {"name": "Embed", "inputs": [], "grad": ["Embedgrad"]},
            {"name": "MatMul1 +1", "inputs": ["Embed"], "grad": ["MatMul1grad"]},
            {"name": "Relu1", "inputs": ["MatMul1 +1"], "grad": ["Relu1grad"]},
            {"name": "Add1", "inputs": ["Embed", "Relu1"], "grad": ["Add1grad"]},
            {"name": "Loss", "inputs": ["Add1"], "grad": ["Lossgrad"]}]})
    );
    let g = Graph::of(&inst).unwrap();
    assert!(!g.derived);
    assert_eq!(
        g.nodes[3].inputs,
        vec![0, 2],
        "the residual edge Embed -> Add1"
    );
    // The instance round-trips through JSON with the extension and DawnPiper's model accepts it.
    let back =
        pipeplan_formulations::Instance::from_json(&serde_json::to_string(&inst).unwrap()).unwrap();
    assert_eq!(back.extensions, inst.extensions);
    let m = Model::new(&back, ScheduleKind::OneFOneB, 2).unwrap();
    assert_eq!(m.len(), 5);
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

#[test]
fn peer_operator_graphs_give_valid_graph_extensions() {
    let what = "dawnpiper_import::peer_operator_graphs_give_valid_graph_extensions";
    let Some(dir) = peers::subdir("dnn-partitioning", what) else {
        return;
    };
    let mut files = Vec::new();
    json_files(&dir, &mut files);
    files.retain(|p| p.components().any(|c| c.as_os_str() == "OperatorGraphs"));
    if files.is_empty() {
        peers::skip_notice(what, "no OperatorGraphs/*.json under the peers folder");
        return;
    }
    for path in files {
        let at = path.display();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let inst = import_file(Source::DnnPartitioning, &path, &opts())
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let g = Graph::of(&inst).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert!(!g.derived, "{at}");
        assert_eq!(g.len(), inst.num_layers(), "{at}");
        // Every backward operator is paired with exactly one node.
        let backward = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["isBackwardNode"] == json!(true) || n["isBackwardNode"] == json!(1))
            .count();
        let paired: usize = inst.extensions["graph"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.get("grad").and_then(Value::as_array).map_or(0, Vec::len))
            .sum();
        assert_eq!(paired, backward, "{at}: grad pairing");
        eprintln!("{at}: {} graph nodes, {paired} grad operators", g.len());
    }
}
