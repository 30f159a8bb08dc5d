//! Piper planner input JSON (msr-fiddle/piper, "Piper: Multidimensional Planner for DNN
//! Parallelization", NeurIPS 2021).
//!
//! # Format
//!
//! As described in the repository's README ("Input format") and read by `from_json` in
//! `algo.cpp` (every field below is required by that code):
//!
//! ```json
//! {"maxDevices": 10, "maxMemoryPerDevice": 80000000000.0, "bandwidth": 25000000000.0,
//!  "mbsInBatch": 1920,
//!  "nodes": [{"id": 0, "name": "Embedding", "TMPCs": {"1": [
//!     {"id": "vanilla", "timePerSample": 0.0011, "parameterSize": 200824320.0,
//!      "memoryUsageA": 1982464.0, "memoryUsageB": 401648640.0,
//!      "syncTimeFw": {"2": 0.0}, "syncTimeBw": {"3": 0.0}}]}}],
//!  "edges": [{"sourceId": 0, "destId": 1, "communicationCost": 4194304.0}]}
//! ```
//!
//! - `maxMemoryPerDevice`: bytes; `maxDevices`: accelerators; `bandwidth`: bytes/s;
//!   `mbsInBatch`: micro-batches per batch (the README calls it `maxBatchSize`; both are read).
//! - `TMPCs`: per tensor-parallel degree, the node's alternative implementations. The time
//!   `timePerSample` is forward + backward per micro-batch ("sample" in Piper's terms);
//!   `parameterSize` bytes of weights; memory is `memoryUsageA` × (in-flight micro-batches) +
//!   `memoryUsageB` bytes.
//! - `communicationCost`: bytes sent over the edge per micro-batch.
//!
//! # Units
//!
//! `algo.cpp` adds `timePerSample` to bytes / `bandwidth` (bytes/s), so times are **seconds**
//! (the BERT input, `inputs/bert32a100.json`, is in seconds). The ResNet-50 and GNMT inputs,
//! however, were converted from PipeDream profiles and carry PipeDream's **milliseconds** (their
//! `timePerSample` is PipeDream's forward + backward time, their node names `nodeN` PipeDream's).
//! So without [`ImportOptions::time_unit_ms`](super::ImportOptions::time_unit_ms), a file whose
//! every node is named `node<number>` is read in ms, any other in seconds; `source` says which.
//!
//! # Mapping to a chain
//!
//! Only tensor-parallel degree 1 is used: the TMPC with id `vanilla` (else the fastest one). Its
//! time is split with the `activation recomp` TMPC when there is one, since recomputation adds
//! one forward pass: forward = recomp − vanilla, backward = the rest; otherwise forward = 1/3 and
//! backward = 2/3 of the time. `weights` = `parameterSize`, `saved` = `memoryUsageA` (bytes
//! stashed per in-flight micro-batch), `output` = the largest `communicationCost` of the node's
//! out-edges. Nodes are ordered topologically (ties: natural order of PipeDream-style names,
//! else file order); `cut` = bytes of every tensor live across the cut.

use super::dag::{self, Tensor};
use super::node_ids::NodeIds;
use super::{non_negative, ImportOptions, Profile, Source};
use crate::error::InputError;
use crate::instance::{Instance, Layer};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Imports a Piper JSON (same as [`super::import`] with [`Source::Piper`]).
pub fn import(text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    super::import(Source::Piper, text, opts)
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "maxMemoryPerDevice")]
    max_memory_per_device: f64,
    #[serde(rename = "maxDevices")]
    max_devices: i64,
    bandwidth: f64,
    #[serde(rename = "mbsInBatch", alias = "maxBatchSize")]
    mbs_in_batch: i64,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

#[derive(Deserialize)]
struct Node {
    id: i64,
    #[serde(rename = "TMPCs")]
    tmpcs: BTreeMap<String, Vec<Tmpc>>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tmpc {
    id: String,
    time_per_sample: f64,
    parameter_size: f64,
    memory_usage_a: f64,
    memory_usage_b: f64,
    // Required by algo.cpp; tensor-parallel synchronisation costs, unused for a chain.
    #[allow(dead_code)]
    sync_time_fw: BTreeMap<String, f64>,
    #[allow(dead_code)]
    sync_time_bw: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Edge {
    source_id: i64,
    dest_id: i64,
    communication_cost: f64,
}

pub(crate) fn read(text: &str) -> Result<Profile, InputError> {
    let f: File = crate::error::parse_json(text, "Piper input object")?;
    let mut ids = check(&f)?;
    let n = f.nodes.len();
    let flow = Flow::of(&f, &mut ids)?;
    // Files converted from PipeDream profiles keep PipeDream's node names and milliseconds.
    let pipedream_names = f.nodes.iter().all(|n| {
        n.name
            .as_deref()
            .and_then(|s| s.strip_prefix("node"))
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
    });
    let rank = if pipedream_names {
        let keys: Vec<_> = f
            .nodes
            .iter()
            .map(|n| dag::natural_key(n.name.as_deref().unwrap_or("")))
            .collect();
        dag::ranks(&keys)
    } else {
        (0..n).collect()
    };
    let order = dag::topological_order(n, &flow.edges, &rank).map_err(|cycle| ids.cycle(&cycle))?;
    let tensors: Vec<Tensor> = (0..n)
        .map(|v| Tensor {
            producer: Some(v),
            bytes: flow.out_bytes[v],
            consumers: flow.consumers[v].clone(),
        })
        .collect();
    let cut = dag::cut_bytes(&order, n, &tensors);
    let (mut split, mut thirds) = (0, 0);
    let mut layers = Vec::with_capacity(n);
    for (&v, &c) in order.iter().zip(&cut) {
        let node = &f.nodes[v];
        let (chosen, forward, from_recomp) = unsplit(node, v)?;
        if from_recomp {
            split += 1;
        } else {
            thirds += 1;
        }
        let total = chosen.time_per_sample;
        layers.push(Layer {
            name: node
                .name
                .clone()
                .unwrap_or_else(|| format!("node {}", node.id)),
            kind: None,
            forward,
            backward: total - forward,
            weights: chosen.parameter_size,
            output: flow.out_bytes[v],
            saved: Some(chosen.memory_usage_a),
            cut: Some(c),
            tensor_parallel: Vec::new(),
        });
    }
    let mut p = Profile::new("piper", time_unit(pipedream_names));
    p.layers = layers;
    p.gpus = Some(f.max_devices as u32);
    p.memory = Some(f.max_memory_per_device);
    p.bandwidth = Some(f.bandwidth);
    p.micro_batches = Some(f.mbs_in_batch as u32);
    p.notes.push(format!(
        "Piper input JSON (msr-fiddle/piper, README \"Input format\" and algo.cpp): per node the \
         tensor-parallel-degree-1 TMPC \"vanilla\" (else the fastest). timePerSample is forward + \
         backward per micro-batch, split as forward = the \"activation recomp\" TMPC's time minus \
         it (recomputation adds one forward) for {split} node(s), and 1/3 forward, 2/3 backward \
         for {thirds} node(s) without such a TMPC. weights = parameterSize (bytes), saved = \
         memoryUsageA (bytes stashed per in-flight micro-batch); memoryUsageB, syncTimeFw/Bw and \
         TMPCs of higher tensor-parallel degrees are not used. The DAG of {n} nodes and {} edges \
         is linearized by a topological order (ties: {}); output = the largest \
         communicationCost (bytes) on the node's out-edges, cut = bytes of every tensor live \
         across a cut after the layer, each counted once; model.input = 0 (Piper records no \
         input tensor). Piper's maxDevices = {}, maxMemoryPerDevice = {} bytes, bandwidth = {} \
         bytes/s, mbsInBatch = {}.",
        f.edges.len(),
        if pipedream_names {
            "natural order of the node names"
        } else {
            "order of the nodes in the file"
        },
        f.max_devices,
        f.max_memory_per_device,
        f.bandwidth,
        f.mbs_in_batch,
    ));
    Ok(p)
}

/// The data flow of a Piper file: its edges by node index, and per node the bytes it sends
/// (its largest out-edge's) and the nodes that read them.
struct Flow {
    edges: Vec<(usize, usize)>,
    out_bytes: Vec<f64>,
    consumers: Vec<Vec<usize>>,
}

impl Flow {
    fn of(f: &File, ids: &mut NodeIds) -> Result<Flow, InputError> {
        let n = f.nodes.len();
        let mut edges = Vec::with_capacity(f.edges.len());
        let mut out_bytes = vec![0.0f64; n];
        let mut consumers = vec![Vec::new(); n];
        for (k, e) in f.edges.iter().enumerate() {
            let (a, b) = ids.edge(k, e.source_id, e.dest_id)?;
            non_negative(
                || format!("edges[{k}].communicationCost"),
                "size",
                e.communication_cost,
            )?;
            out_bytes[a] = out_bytes[a].max(e.communication_cost);
            consumers[a].push(b);
            edges.push((a, b));
        }
        Ok(Flow {
            edges,
            out_bytes,
            consumers,
        })
    }
}

/// The unit of `timePerSample` (ms per unit) and why: milliseconds in files converted from
/// PipeDream profiles (every node named `node<number>`), else seconds.
fn time_unit(pipedream_names: bool) -> (f64, String) {
    if pipedream_names {
        (
            1.0,
            "timePerSample read as milliseconds: every node is named node<number>, so the file \
             was converted from a PipeDream profile, whose times are ms (as in Piper's \
             inputs/resnet.json and inputs/gnmt.json), although algo.cpp adds them to seconds."
                .to_string(),
        )
    } else {
        (
            1000.0,
            "timePerSample read as seconds per micro-batch: algo.cpp adds it to bytes / \
             bandwidth (bytes/s)."
                .to_string(),
        )
    }
}

/// Checks the file's counts and every node's TMPCs; returns its node ids.
fn check(f: &File) -> Result<NodeIds, InputError> {
    if f.max_devices < 1 || f.max_devices > u32::MAX as i64 {
        return Err(InputError::field(
            "maxDevices",
            format!("must be a number of devices >= 1, found {}", f.max_devices),
        ));
    }
    positive("maxMemoryPerDevice", f.max_memory_per_device)?;
    positive("bandwidth", f.bandwidth)?;
    if f.mbs_in_batch < 1 || f.mbs_in_batch > u32::MAX as i64 {
        return Err(InputError::field(
            "mbsInBatch",
            format!(
                "must be a number of micro-batches >= 1, found {}",
                f.mbs_in_batch
            ),
        ));
    }
    let mut ids = NodeIds::new(f.nodes.len())?;
    for (i, n) in f.nodes.iter().enumerate() {
        ids.push(n.id)?;
        for (degree, list) in &n.tmpcs {
            for (j, t) in list.iter().enumerate() {
                let field = |name: &str| format!("nodes[{i}].TMPCs.{degree}[{j}].{name}");
                non_negative(|| field("timePerSample"), "time", t.time_per_sample)?;
                non_negative(|| field("parameterSize"), "size", t.parameter_size)?;
                non_negative(|| field("memoryUsageA"), "size", t.memory_usage_a)?;
                non_negative(|| field("memoryUsageB"), "size", t.memory_usage_b)?;
            }
        }
    }
    Ok(ids)
}

/// Node `v`'s costs at tensor-parallel degree 1: its TMPC "vanilla" (else the fastest), the
/// forward part of its time, and whether that part comes from its "activation recomp" TMPC
/// (recomputation adds one forward) rather than the default third.
fn unsplit(node: &Node, v: usize) -> Result<(&Tmpc, f64, bool), InputError> {
    let Some(list) = node.tmpcs.get("1").filter(|l| !l.is_empty()) else {
        return Err(InputError::field(
            format!("nodes[{v}].TMPCs"),
            "no TMPC for tensor-parallel degree \"1\"; a pipeline chain needs the \
             unsplit costs of every node",
        ));
    };
    let chosen = list.iter().find(|t| t.id == "vanilla").unwrap_or_else(|| {
        list.iter()
            .min_by(|a, b| a.time_per_sample.total_cmp(&b.time_per_sample))
            .expect("non-empty")
    });
    let total = chosen.time_per_sample;
    let recomp = list
        .iter()
        .find(|t| t.id == "activation recomp")
        .filter(|r| r.time_per_sample >= total);
    Ok(match recomp {
        Some(r) => (chosen, (r.time_per_sample - total).min(total), true),
        None => (chosen, total / 3.0, false),
    })
}

fn positive(field: &str, v: f64) -> Result<(), InputError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(InputError::field(
            field,
            format!("must be positive, found {v}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::import::{import, ImportOptions, Source};
    use crate::instance::Cluster;
    use serde_json::{json, Value};

    fn opts() -> ImportOptions {
        ImportOptions::new(Cluster::single_node(2, 8e9, 10e9))
    }

    fn tmpc(id: &str, t: f64) -> Value {
        json!({"id": id, "timePerSample": t, "parameterSize": 100.0, "memoryUsageA": 50.0,
               "memoryUsageB": 200.0, "syncTimeFw": {}, "syncTimeBw": {}})
    }

    fn file() -> Value {
        json!({"maxDevices": 4, "maxMemoryPerDevice": 1e9, "bandwidth": 1e10, "mbsInBatch": 8,
            "nodes": [
                {"id": 7, "name": "a", "TMPCs": {"1": [tmpc("vanilla", 0.003), tmpc("activation recomp", 0.004)]}},
                {"id": 3, "name": "b", "TMPCs": {"1": [tmpc("vanilla", 0.006)]}}],
            "edges": [{"sourceId": 7, "destId": 3, "communicationCost": 64.0}]})
    }

    fn err(v: &Value) -> String {
        import(Source::Piper, &v.to_string(), &opts())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_the_field() {
        let mut v = file();
        v["nodes"][1]["TMPCs"]["1"][0]
            .as_object_mut()
            .unwrap()
            .remove("timePerSample");
        assert!(
            err(&v).starts_with("nodes[1].TMPCs.1[0]: missing field `timePerSample`"),
            "{}",
            err(&v)
        );
        let mut v = file();
        v["edges"][0]["destId"] = json!(99);
        assert_eq!(err(&v), "edges[0].destId: unknown node id 99");
        let mut v = file();
        v["nodes"][0]["TMPCs"]["1"][1]["parameterSize"] = json!(-4.0);
        assert_eq!(
            err(&v),
            "nodes[0].TMPCs.1[1].parameterSize: negative size -4"
        );
        let mut v = file();
        v["edges"]
            .as_array_mut()
            .unwrap()
            .push(json!({"sourceId": 3, "destId": 7, "communicationCost": 1.0}));
        assert_eq!(
            err(&v),
            "edges[1]: the graph has a cycle through node ids 7 -> 3 -> 7"
        );
        let mut v = file();
        v["nodes"] = json!([]);
        assert_eq!(err(&v), "nodes: empty graph: at least one node is needed");
        let mut v = file();
        v["nodes"][1]["TMPCs"] = json!({"2": [tmpc("vanilla", 1.0)]});
        assert!(err(&v).starts_with("nodes[1].TMPCs: no TMPC for tensor-parallel degree \"1\""));
        let mut v = file();
        v["nodes"][1]["id"] = json!(7);
        assert_eq!(err(&v), "nodes[1].id: duplicate node id 7 (also nodes[0])");
        let mut v = file();
        v["maxDevices"] = json!(0);
        assert!(err(&v).starts_with("maxDevices: must be a number of devices >= 1"));
        let mut v = file();
        v.as_object_mut().unwrap().remove("mbsInBatch");
        assert!(
            err(&v).contains("missing field `mbsInBatch`"),
            "{}",
            err(&v)
        );
        assert!(import(Source::Piper, "", &opts())
            .unwrap_err()
            .to_string()
            .contains("empty file"));
    }
}
