//! The input file: its fields (serde), and the checks dp.cpp makes or relies on, each naming the
//! field it is about.

use super::super::dag;
use super::super::node_ids::NodeIds;
use super::super::non_negative;
use crate::error::InputError;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// The input file, as dp.cpp's `from_json` reads it.
#[derive(Deserialize)]
pub(super) struct File {
    #[serde(rename = "maxSizePerFPGA")]
    pub(super) max_size_per_fpga: f64,
    #[serde(rename = "maxFPGAs")]
    pub(super) max_fpgas: i64,
    #[serde(rename = "maxCPUs")]
    pub(super) max_cpus: i64,
    pub(super) nodes: Vec<Node>,
    pub(super) edges: Vec<Edge>,
}

/// An operator or layer: forward, or backward ("grad").
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Node {
    pub(super) id: i64,
    #[serde(deserialize_with = "flag")]
    pub(super) supported_on_fpga: bool,
    pub(super) cpu_latency: f64,
    pub(super) fpga_latency: f64,
    #[serde(deserialize_with = "flag")]
    pub(super) is_backward_node: bool,
    #[serde(default)]
    pub(super) color_class: Option<i64>,
    #[serde(default)]
    pub(super) size: Option<f64>,
    #[serde(default)]
    pub(super) name: Option<String>,
}

/// A tensor from one node to another.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Edge {
    pub(super) source_id: i64,
    pub(super) dest_id: i64,
    pub(super) cost: f64,
    #[serde(default)]
    pub(super) size: Option<f64>,
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

/// A file whose every node, edge and count passed the checks, with its edges as node indices.
pub(super) struct Graph {
    pub(super) file: File,
    /// `(source, destination)` node indices, in the file's edge order.
    pub(super) edges: Vec<(usize, usize)>,
}

impl Graph {
    /// Nodes in the file.
    pub(super) fn len(&self) -> usize {
        self.file.nodes.len()
    }

    /// Whether node `v` is a forward node.
    pub(super) fn forward(&self, v: usize) -> bool {
        !self.file.nodes[v].is_backward_node
    }

    /// The bytes node `v` takes on an accelerator (`size`, default 0 as in dp.cpp).
    pub(super) fn size(&self, v: usize) -> f64 {
        self.file.nodes[v].size.unwrap_or(0.0)
    }

    /// Node `v`'s name, else `node ID`.
    pub(super) fn name(&self, v: usize) -> String {
        let n = &self.file.nodes[v];
        n.name.clone().unwrap_or_else(|| format!("node {}", n.id))
    }
}

/// Parses `text` and checks it: positive counts and memory, unique node ids, non-negative times
/// and sizes, edges between known nodes and never from a backward to a forward node, an acyclic
/// graph (dp.cpp requires it, backward nodes included), at least one forward node.
pub(super) fn check(text: &str) -> Result<Graph, InputError> {
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
    let mut ids = NodeIds::new(f.nodes.len())?;
    for (i, n) in f.nodes.iter().enumerate() {
        ids.push(n.id)?;
        let field = |name: &str| format!("nodes[{i}].{name}");
        non_negative(|| field("cpuLatency"), "time", n.cpu_latency)?;
        non_negative(|| field("fpgaLatency"), "time", n.fpga_latency)?;
        if let Some(s) = n.size {
            non_negative(|| field("size"), "size", s)?;
        }
    }
    let n = f.nodes.len();
    let mut all_edges = Vec::with_capacity(f.edges.len());
    for (k, e) in f.edges.iter().enumerate() {
        let (a, b) = ids.edge(k, e.source_id, e.dest_id)?;
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
    }
    // dp.cpp requires the whole graph, backward nodes included, to be acyclic.
    if let Err(cycle) = dag::topological_order(n, &all_edges, &(0..n).collect::<Vec<_>>()) {
        return Err(ids.cycle(&cycle));
    }
    if f.nodes.iter().all(|v| v.is_backward_node) {
        return Err(InputError::field(
            "nodes",
            "no forward node (isBackwardNode is set on every node)",
        ));
    }
    Ok(Graph {
        file: f,
        edges: all_edges,
    })
}
