//! The dnn-partitioning reader on small hand-made graphs.

use crate::import::{import, ImportOptions, Source};
use crate::instance::Cluster;
use serde_json::{json, Value};

fn opts() -> ImportOptions {
    ImportOptions::new(Cluster::single_node(2, 8e9, 10e9))
}

fn node(id: i64, lat: f64, back: bool, class: i64, size: f64) -> Value {
    json!({"name": format!("n{id}"), "id": id, "supportedOnFpga": 1, "cpuLatency": lat * 10.0,
           "fpgaLatency": lat, "isBackwardNode": back, "colorClass": class, "size": size})
}

fn file() -> Value {
    json!({"maxSizePerFPGA": 1e9, "maxFPGAs": 2, "maxCPUs": 1,
        "nodes": [node(1, 1.0, false, 1, 110.0), node(2, 2.0, false, 2, 70.0),
                  node(11, 3.0, true, 1, 110.0), node(12, 4.0, true, 2, 70.0)],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 0.1, "size": 100.0},
                  {"sourceId": 12, "destId": 11, "cost": 0.1, "size": 100.0}]})
}

fn err(v: &Value) -> String {
    import(Source::DnnPartitioning, &v.to_string(), &opts())
        .unwrap_err()
        .to_string()
}

#[test]
fn errors_name_the_field() {
    let mut v = file();
    v["nodes"][0]["isBackwardNode"] = json!(2);
    assert!(
        err(&v).starts_with("nodes[0].isBackwardNode: expected a boolean or 0/1, found 2"),
        "{}",
        err(&v)
    );
    let mut v = file();
    v["nodes"][1]["fpgaLatency"] = json!(-1.5);
    assert_eq!(err(&v), "nodes[1].fpgaLatency: negative time -1.5");
    let mut v = file();
    v["edges"][0]["sourceId"] = json!(5);
    assert_eq!(err(&v), "edges[0].sourceId: unknown node id 5");
    let mut v = file();
    v["edges"][1] = json!({"sourceId": 12, "destId": 1, "cost": 0.0});
    assert!(err(&v).starts_with("edges[1]: edge from backward node 12 to forward node 1"));
    let mut v = file();
    v["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"sourceId": 2, "destId": 1, "cost": 0.0}));
    assert_eq!(
        err(&v),
        "edges[2]: the graph has a cycle through node ids 1 -> 2 -> 1"
    );
    let mut v = file();
    v["nodes"] = json!([]);
    assert_eq!(err(&v), "nodes: empty graph: at least one node is needed");
    let mut v = file();
    v["nodes"][0].as_object_mut().unwrap().remove("cpuLatency");
    assert!(
        err(&v).contains("missing field `cpuLatency`"),
        "{}",
        err(&v)
    );
    let mut v = file();
    v["maxFPGAs"] = json!(0);
    assert!(err(&v).starts_with("maxFPGAs: must be a number of accelerators >= 1"));
}

#[test]
fn emits_the_dawnpiper_graph_extension() {
    let mut v = file();
    // A second consumer of n1 and a weight node: edges follow the operators.
    v["nodes"]
        .as_array_mut()
        .unwrap()
        .push(node(3, 0.5, false, 3, 10.0));
    v["edges"].as_array_mut().unwrap().extend([
        json!({"sourceId": 1, "destId": 3, "cost": 0.0, "size": 100.0}),
        json!({"sourceId": 2, "destId": 3, "cost": 0.0, "size": 50.0}),
    ]);
    let inst = import(Source::DnnPartitioning, &v.to_string(), &opts()).unwrap();
    assert_eq!(
        inst.extensions["graph"],
        json!({"nodes": [
            {"name": "n1", "inputs": [], "grad": ["n11"]},
            {"name": "n2", "inputs": ["n1"], "grad": ["n12"]},
            {"name": "n3", "inputs": ["n1", "n2"]}]})
    );
    let g = crate::dawnpiper::graph::Graph::of(&inst).unwrap();
    assert_eq!(g.nodes[2].inputs, vec![0, 1]);
    assert!(!g.derived);
}

#[test]
fn training_pairs_and_sizes() {
    let inst = import(Source::DnnPartitioning, &file().to_string(), &opts()).unwrap();
    let l = &inst.model.layers;
    assert_eq!(l.len(), 2);
    assert_eq!(
        (l[0].name.as_str(), l[0].forward, l[0].backward),
        ("n1", 1.0, 3.0)
    );
    assert_eq!(
        (l[1].name.as_str(), l[1].forward, l[1].backward),
        ("n2", 2.0, 4.0)
    );
    // n1: size 110 = 100 output + 10 weights; n2 is a sink: its whole size is weights.
    assert_eq!(
        (l[0].output, l[0].weights, l[0].cut),
        (100.0, 10.0, Some(100.0))
    );
    assert_eq!(
        (l[1].output, l[1].weights, l[1].cut),
        (0.0, 70.0, Some(0.0))
    );
}
