//! dnn-partitioning JSON (msr-fiddle/dnn-partitioning, "Efficient Algorithms for Device
//! Placement of DNN Graph Operators", NeurIPS 2020): layer graphs, and operator graphs too.
//!
//! # Format
//!
//! As described in the repository's README ("Input format") and read by `from_json` in
//! `throughput-dp/dp.cpp`:
//!
//! ```json
//! {"maxSizePerFPGA": 17185374208.0, "maxFPGAs": 6, "maxCPUs": 1,
//!  "nodes": [{"name": "node77", "id": 77, "supportedOnFpga": 1, "cpuLatency": 12.36,
//!             "fpgaLatency": 1.236, "isBackwardNode": 0, "colorClass": 77, "size": 205524992.0},
//!            {"name": "node77grad", "id": 178, "supportedOnFpga": 1, "cpuLatency": 14.42,
//!             "fpgaLatency": 1.442, "isBackwardNode": 1, "colorClass": 77, "size": 205524992.0}],
//!  "edges": [{"sourceId": 76, "destId": 77, "cost": 0.0478515625, "size": 102760448.0}]}
//! ```
//!
//! - `maxSizePerFPGA`: bytes of accelerator memory; `maxFPGAs`: accelerators ("FPGA" stands for
//!   any accelerator; the layer graphs hold GPU profiles); `maxCPUs`: CPU cores (unused here).
//! - Nodes: `supportedOnFpga` and `isBackwardNode` are booleans or 0/1; `fpgaLatency` is the
//!   accelerator time, `cpuLatency` the CPU time (unused); `size` is the bytes the node takes on
//!   an accelerator (optional in `dp.cpp`, default 0); nodes sharing a `colorClass` (optional)
//!   must be colocated. Training graphs pair each forward node with backward ("grad") nodes of
//!   the same colour class.
//! - Edges: `cost` is the time to move the source's output to CPU memory (unused); `size`, the
//!   bytes of that output, is optional debug information that the published inputs carry.
//!
//! # Units
//!
//! Latencies are **milliseconds**: the layer graphs copy PipeDream's per-layer profile (ResNet-50
//! `node77` has `fpgaLatency` 1.236, PipeDream's forward time for it, and `cpuLatency` ten times
//! that). Sizes are **bytes** (README). The batch size is not recorded.
//!
//! # Mapping to a chain
//!
//! As `dp.cpp` does, the forward nodes of one colour class are fused (a node without a class is
//! its own class), backward nodes whose class has no forward node get an artificial forward node
//! wired like the mirror image of their backward edges, and strongly connected components of the
//! fused forward graph are fused too. Each fused group is one layer: `forward` = sum of its
//! forward nodes' `fpgaLatency`, `backward` = sum of its classes' backward nodes' `fpgaLatency`
//! (0 for inference graphs). A forward node's output tensor has the largest `size` among its
//! out-edges to forward nodes (the node's own `size` when those edges carry none, 0 for a sink);
//! `output` = the bytes of the group's tensors read outside the group, `cut` = bytes of every
//! tensor live across the cut. `weights`: the layer graphs' `size` is activation + parameters,
//! so a node contributes `size` − its output tensor; a zero-time node without inputs (operator
//! graphs list each weight as one) contributes its whole `size`. Groups are ordered
//! topologically, ties going to the lowest id among their nodes that have inputs.

use super::dag::{self, Tensor};
use super::{non_negative, ImportOptions, Profile, Source};
use crate::error::InputError;
use crate::instance::{Instance, Layer};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Imports a dnn-partitioning JSON (same as [`super::import`] with [`Source::DnnPartitioning`]).
pub fn import(text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    super::import(Source::DnnPartitioning, text, opts)
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "maxSizePerFPGA")]
    max_size_per_fpga: f64,
    #[serde(rename = "maxFPGAs")]
    max_fpgas: i64,
    #[serde(rename = "maxCPUs")]
    max_cpus: i64,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    id: i64,
    #[serde(deserialize_with = "flag")]
    supported_on_fpga: bool,
    cpu_latency: f64,
    fpga_latency: f64,
    #[serde(deserialize_with = "flag")]
    is_backward_node: bool,
    #[serde(default)]
    color_class: Option<i64>,
    #[serde(default)]
    size: Option<f64>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Edge {
    source_id: i64,
    dest_id: i64,
    cost: f64,
    #[serde(default)]
    size: Option<f64>,
}

/// A boolean written as `true`/`false` or `1`/`0`, as the README allows.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct Flag;
    impl Visitor<'_> for Flag {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a boolean or 0/1")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
            match v {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(E::custom(format!("expected a boolean or 0/1, found {v}"))),
            }
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
            match v {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(E::custom(format!("expected a boolean or 0/1, found {v}"))),
            }
        }
    }
    d.deserialize_any(Flag)
}

/// The colour class a node belongs to: its `colorClass`, or itself alone.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Color(i64),
    Alone(usize),
}

pub(crate) fn read(text: &str) -> Result<Profile, InputError> {
    let f: File = crate::error::parse_json(text, "dnn-partitioning input object")?;
    if f.max_fpgas < 1 || f.max_fpgas > u32::MAX as i64 {
        return Err(InputError::field(
            "maxFPGAs",
            format!(
                "must be a number of accelerators >= 1, found {}",
                f.max_fpgas
            ),
        ));
    }
    if !(f.max_size_per_fpga.is_finite() && f.max_size_per_fpga > 0.0) {
        return Err(InputError::field(
            "maxSizePerFPGA",
            format!(
                "must be a positive number of bytes, found {}",
                f.max_size_per_fpga
            ),
        ));
    }
    if f.max_cpus < 0 {
        return Err(InputError::field(
            "maxCPUs",
            format!("must be a number of CPU cores >= 0, found {}", f.max_cpus),
        ));
    }
    if f.nodes.is_empty() {
        return Err(InputError::field(
            "nodes",
            "empty graph: at least one node is needed",
        ));
    }
    let mut index: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, n) in f.nodes.iter().enumerate() {
        if let Some(first) = index.insert(n.id, i) {
            return Err(InputError::field(
                format!("nodes[{i}].id"),
                format!("duplicate node id {} (also nodes[{first}])", n.id),
            ));
        }
        let field = |name: &str| format!("nodes[{i}].{name}");
        non_negative(|| field("cpuLatency"), "time", n.cpu_latency)?;
        non_negative(|| field("fpgaLatency"), "time", n.fpga_latency)?;
        if let Some(s) = n.size {
            non_negative(|| field("size"), "size", s)?;
        }
    }
    let n = f.nodes.len();
    let mut all_edges = Vec::with_capacity(f.edges.len());
    let mut edge_index = BTreeMap::new();
    for (k, e) in f.edges.iter().enumerate() {
        let find = |id: i64, name: &str| {
            index.get(&id).copied().ok_or_else(|| {
                InputError::field(
                    format!("edges[{k}].{name}"),
                    format!("unknown node id {id}"),
                )
            })
        };
        let (a, b) = (find(e.source_id, "sourceId")?, find(e.dest_id, "destId")?);
        non_negative(|| format!("edges[{k}].cost"), "time", e.cost)?;
        if let Some(s) = e.size {
            non_negative(|| format!("edges[{k}].size"), "size", s)?;
        }
        if f.nodes[a].is_backward_node && !f.nodes[b].is_backward_node {
            return Err(InputError::field(
                format!("edges[{k}]"),
                format!(
                    "edge from backward node {} to forward node {}; dp.cpp rejects such inputs",
                    e.source_id, e.dest_id
                ),
            ));
        }
        all_edges.push((a, b));
        edge_index.entry((a, b)).or_insert(k);
    }
    // dp.cpp requires the whole graph, backward nodes included, to be acyclic.
    if let Err(cycle) = dag::topological_order(n, &all_edges, &(0..n).collect::<Vec<_>>()) {
        let k = cycle.len();
        let ids: Vec<String> = cycle.iter().map(|&v| f.nodes[v].id.to_string()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        return Err(InputError::field(
            format!("edges[{}]", edge_index[&(cycle[k - 2], cycle[k - 1])]),
            format!(
                "the graph has a cycle through node ids {}",
                super::cycle_text(&ids)
            ),
        ));
    }
    let forward = |v: usize| !f.nodes[v].is_backward_node;
    if !(0..n).any(forward) {
        return Err(InputError::field(
            "nodes",
            "no forward node (isBackwardNode is set on every node)",
        ));
    }

    // Groups: one per colour class with a forward node, then one per class of orphaned
    // backward nodes (dp.cpp gives those an artificial forward node).
    let class = |v: usize| match f.nodes[v].color_class {
        Some(c) => Class::Color(c),
        None => Class::Alone(v),
    };
    let mut group_of_class: BTreeMap<Class, usize> = BTreeMap::new();
    let mut group = vec![usize::MAX; n];
    for v in (0..n).filter(|&v| forward(v)) {
        let next = group_of_class.len();
        group[v] = *group_of_class.entry(class(v)).or_insert(next);
    }
    let real_groups = group_of_class.len();
    let mut orphans = 0;
    for v in (0..n).filter(|&v| !forward(v)) {
        let next = group_of_class.len();
        group[v] = *group_of_class.entry(class(v)).or_insert_with(|| {
            orphans += 1;
            next
        });
    }
    let groups = group_of_class.len();
    let mut group_edges = BTreeSet::new();
    for &(a, b) in &all_edges {
        if forward(a) && forward(b) {
            group_edges.insert((group[a], group[b]));
        } else if !forward(a) && !forward(b) && (group[a] >= real_groups || group[b] >= real_groups)
        {
            // dp.cpp's createArtificialForwardNodes: mirror the backward edge.
            group_edges.insert((group[b], group[a]));
        }
    }
    group_edges.retain(|&(a, b)| a != b);
    let group_edges: Vec<(usize, usize)> = group_edges.into_iter().collect();
    let (comp_of_group, layers_n) = dag::condense(groups, &group_edges);
    let comp = |v: usize| comp_of_group[group[v]];
    let mut comp_edges: Vec<(usize, usize)> = group_edges
        .iter()
        .map(|&(a, b)| (comp_of_group[a], comp_of_group[b]))
        .filter(|(a, b)| a != b)
        .collect();
    comp_edges.sort_unstable();
    comp_edges.dedup();

    // Output tensor of every forward node.
    let mut has_forward_input = vec![false; n];
    let mut out_size: Vec<Option<f64>> = vec![None; n];
    let mut has_forward_output = vec![false; n];
    let mut consumers = vec![Vec::new(); n];
    for (&(a, b), e) in all_edges.iter().zip(&f.edges) {
        if forward(a) && forward(b) {
            has_forward_input[b] = true;
            has_forward_output[a] = true;
            consumers[a].push(comp(b));
            if let Some(s) = e.size {
                out_size[a] = Some(out_size[a].map_or(s, |m: f64| m.max(s)));
            }
        }
    }
    let size = |v: usize| f.nodes[v].size.unwrap_or(0.0);
    let tensor_bytes: Vec<f64> = (0..n)
        .map(|v| match (has_forward_output[v], out_size[v]) {
            (false, _) => 0.0,
            (true, Some(s)) => s,
            (true, None) => size(v),
        })
        .collect();

    let mut fwd = vec![0.0; layers_n];
    let mut bwd = vec![0.0; layers_n];
    let mut weights = vec![0.0; layers_n];
    let mut output = vec![0.0; layers_n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); layers_n];
    let mut backward_members: Vec<Vec<usize>> = vec![Vec::new(); layers_n];
    let mut parameter_nodes = 0;
    for v in 0..n {
        let c = comp(v);
        if forward(v) {
            fwd[c] += f.nodes[v].fpga_latency;
            members[c].push(v);
            if !has_forward_input[v] && f.nodes[v].fpga_latency == 0.0 && size(v) > 0.0 {
                parameter_nodes += 1;
                weights[c] += size(v);
            } else {
                weights[c] += (size(v) - tensor_bytes[v]).max(0.0);
            }
            if consumers[v].iter().any(|&d| d != c) {
                output[c] += tensor_bytes[v];
            }
        } else {
            bwd[c] += f.nodes[v].fpga_latency;
            backward_members[c].push(v);
        }
    }
    let keys: Vec<i64> = (0..layers_n)
        .map(|c| {
            let with_input = members[c].iter().filter(|&&v| has_forward_input[v]);
            with_input
                .map(|&v| f.nodes[v].id)
                .min()
                .or_else(|| members[c].iter().map(|&v| f.nodes[v].id).min())
                .or_else(|| backward_members[c].iter().map(|&v| f.nodes[v].id).min())
                .expect("every group has a node")
        })
        .collect();
    let order = dag::topological_order(layers_n, &comp_edges, &dag::ranks(&keys))
        .expect("condensed graphs are acyclic");
    let tensors: Vec<Tensor> = (0..n)
        .filter(|&v| forward(v))
        .map(|v| Tensor {
            producer: Some(comp(v)),
            bytes: tensor_bytes[v],
            consumers: consumers[v].clone(),
        })
        .collect();
    let cut = dag::cut_bytes(&order, layers_n, &tensors);

    let node_name = |v: usize| {
        f.nodes[v]
            .name
            .clone()
            .unwrap_or_else(|| format!("node {}", f.nodes[v].id))
    };
    let layers: Vec<Layer> = order
        .iter()
        .zip(&cut)
        .map(|(&c, &cut)| {
            let name = match members[c].iter().max_by(|&&a, &&b| {
                // The slowest forward node names the group; ties to the lower id.
                let (na, nb) = (&f.nodes[a], &f.nodes[b]);
                na.fpga_latency
                    .total_cmp(&nb.fpga_latency)
                    .then(nb.id.cmp(&na.id))
            }) {
                Some(&v) if members[c].len() > 1 => {
                    format!("{} +{}", node_name(v), members[c].len() - 1)
                }
                Some(&v) => node_name(v),
                None => format!("{} (backward only)", node_name(backward_members[c][0])),
            };
            Layer {
                name,
                kind: None,
                forward: fwd[c],
                backward: bwd[c],
                weights: weights[c],
                output: output[c],
                saved: None,
                cut: Some(cut),
                tensor_parallel: Vec::new(),
            }
        })
        .collect();

    let forward_nodes = (0..n).filter(|&v| forward(v)).count();
    let unsupported = f.nodes.iter().filter(|n| !n.supported_on_fpga).count();
    let mut p = Profile::new(
        "dnn-partitioning",
        (
            1.0,
            "fpgaLatency read as milliseconds (the layer graphs copy PipeDream's per-layer ms); \
             cpuLatency and edge cost are not used."
                .to_string(),
        ),
    );
    p.extensions.insert(
        crate::dawnpiper::graph::KEY.to_string(),
        graph_extension(&layers, &order, &comp_edges, |c| {
            backward_members[c]
                .iter()
                .map(|&v| (node_name(v), f.nodes[v].id))
                .collect()
        }),
    );
    p.layers = layers;
    p.gpus = Some(f.max_fpgas as u32);
    p.memory = Some(f.max_size_per_fpga);
    p.notes.push(format!(
        "dnn-partitioning JSON (msr-fiddle/dnn-partitioning, README \"Input format\" and \
         throughput-dp/dp.cpp): {forward_nodes} forward and {} backward node(s), {} edges. As \
         dp.cpp does, forward nodes of one colorClass are fused ({real_groups} class(es)), \
         {orphans} class(es) of backward nodes without a forward node get an artificial one, \
         and strongly connected components are fused, giving {layers_n} layers in a \
         topological order (ties: lowest node id). forward / backward = summed fpgaLatency of \
         the forward / backward nodes. A node's output tensor = the largest edge size (bytes) \
         on its out-edges to forward nodes (its own size when they carry none, 0 for a sink); \
         output = bytes of the layer's tensors read by other layers; cut = bytes of every \
         tensor live across a cut after the layer, each counted once; weights = size minus \
         the output tensor ({parameter_nodes} zero-time input-less node(s) count their whole \
         size as weights); model.input = 0. {unsupported} node(s) marked not supported on an \
         accelerator keep their fpgaLatency. dnn-partitioning's maxFPGAs = {}, maxSizePerFPGA \
         = {} bytes, maxCPUs = {}.",
        n - forward_nodes,
        f.edges.len(),
        f.max_fpgas,
        f.max_size_per_fpga,
        f.max_cpus,
    ));
    Ok(p)
}

/// DawnPiper's `graph` extension (`docs/dawnpiper.md`): one node per layer, named like the layer
/// (`#k` appended to repeated names), reading the layers its layer's operators read (the
/// condensed operator edges, in layer order), with the backward ("grad") operators of its
/// colour classes (`(id N)` appended to a name that is not unique). Swappable and
/// recompute-at-forward-cost are left to the defaults.
fn graph_extension(
    layers: &[Layer],
    order: &[usize],
    comp_edges: &[(usize, usize)],
    grads: impl Fn(usize) -> Vec<(String, i64)>,
) -> serde_json::Value {
    let mut seen = BTreeMap::new();
    let names: Vec<String> = layers
        .iter()
        .enumerate()
        .map(|(i, l)| match seen.insert(l.name.clone(), i) {
            None => l.name.clone(),
            Some(_) => format!("{} #{i}", l.name),
        })
        .collect();
    let mut position = vec![0; order.len()];
    for (i, &c) in order.iter().enumerate() {
        position[c] = i;
    }
    let mut inputs: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); order.len()];
    let mut grad_names = BTreeSet::new();
    for &(a, b) in comp_edges {
        inputs[position[b]].insert(position[a]);
    }
    let nodes: Vec<serde_json::Value> = order
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut node = serde_json::json!({
                "name": names[i],
                "inputs": inputs[i].iter().map(|&j| names[j].clone()).collect::<Vec<_>>(),
            });
            let grad: Vec<String> = grads(c)
                .into_iter()
                .map(|(name, id)| {
                    if seen.contains_key(&name) || !grad_names.insert(name.clone()) {
                        format!("{name} (id {id})")
                    } else {
                        name
                    }
                })
                .collect();
            if !grad.is_empty() {
                node["grad"] = serde_json::json!(grad);
            }
            node
        })
        .collect();
    serde_json::json!({ "nodes": nodes })
}

#[cfg(test)]
mod tests {
    use crate::import::{import, ImportOptions, Source};
    use crate::instance::{Bandwidth, Cluster};
    use serde_json::{json, Value};

    fn opts() -> ImportOptions {
        ImportOptions::new(Cluster {
            gpus: 2,
            gpus_per_node: None,
            gpu: None,
            memory: 8e9,
            bandwidth: Bandwidth {
                intra_node: 10e9,
                inter_node: None,
            },
            pcie: None,
        })
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
}
