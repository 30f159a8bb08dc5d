//! The fused layers as a chain: each layer's times, weights, output and cut, in a topological
//! order whose ties go to the lowest id among a layer's nodes that have inputs.

use super::super::dag::{self, Tensor};
use super::format::Graph;
use super::fusion::Fusion;
use crate::instance::Layer;

/// The chain of fused layers.
pub(super) struct Chain {
    /// The layers, in chain order.
    pub(super) layers: Vec<Layer>,
    /// The fused layer at each chain position.
    pub(super) order: Vec<usize>,
    /// The backward nodes of each fused layer.
    pub(super) backward: Vec<Vec<usize>>,
    /// Zero-time nodes without inputs, counted whole as weights (operator graphs' parameters).
    pub(super) parameter_nodes: usize,
}

/// The chain of `fused`'s layers (the mapping of the module docs).
pub(super) fn chain(g: &Graph, fused: &Fusion) -> Chain {
    let t = Outputs::of(g, fused);
    let s = Sums::of(g, fused, &t);
    let order = order(g, fused, &t, &s);
    let tensors: Vec<Tensor> = (0..g.len())
        .filter(|&v| g.forward(v))
        .map(|v| Tensor {
            producer: Some(fused.layer_of[v]),
            bytes: t.bytes[v],
            consumers: t.consumers[v].clone(),
        })
        .collect();
    let cut = dag::cut_bytes(&order, fused.layers, &tensors);
    let layers: Vec<Layer> = order
        .iter()
        .zip(&cut)
        .map(|(&c, &cut)| Layer {
            name: name(g, &s.members[c], &s.backward_members[c]),
            kind: None,
            forward: s.fwd[c],
            backward: s.bwd[c],
            weights: s.weights[c],
            output: s.output[c],
            saved: None,
            cut: Some(cut),
            tensor_parallel: Vec::new(),
        })
        .collect();
    Chain {
        layers,
        order,
        backward: s.backward_members,
        parameter_nodes: s.parameter_nodes,
    }
}

/// The output tensor of every node, read between forward nodes.
struct Outputs {
    /// Whether the node reads another forward node's output.
    has_forward_input: Vec<bool>,
    /// Bytes of the node's output: its largest forward edge's size, else the node's size, 0
    /// when no forward node reads it.
    bytes: Vec<f64>,
    /// The fused layers that read it.
    consumers: Vec<Vec<usize>>,
}

impl Outputs {
    fn of(g: &Graph, fused: &Fusion) -> Outputs {
        let n = g.len();
        let mut has_forward_input = vec![false; n];
        let mut out_size: Vec<Option<f64>> = vec![None; n];
        let mut has_forward_output = vec![false; n];
        let mut consumers = vec![Vec::new(); n];
        for (&(a, b), e) in g.edges.iter().zip(&g.file.edges) {
            if g.forward(a) && g.forward(b) {
                has_forward_input[b] = true;
                has_forward_output[a] = true;
                consumers[a].push(fused.layer_of[b]);
                if let Some(s) = e.size {
                    out_size[a] = Some(out_size[a].map_or(s, |m: f64| m.max(s)));
                }
            }
        }
        let bytes = (0..n)
            .map(|v| match (has_forward_output[v], out_size[v]) {
                (false, _) => 0.0,
                (true, Some(s)) => s,
                (true, None) => g.size(v),
            })
            .collect();
        Outputs {
            has_forward_input,
            bytes,
            consumers,
        }
    }
}

/// Per fused layer: its nodes, and their times, weights and outputs summed.
struct Sums {
    fwd: Vec<f64>,
    bwd: Vec<f64>,
    weights: Vec<f64>,
    /// Bytes of the outputs other layers read.
    output: Vec<f64>,
    /// Forward nodes.
    members: Vec<Vec<usize>>,
    /// Backward nodes.
    backward_members: Vec<Vec<usize>>,
    /// Zero-time nodes without inputs, counted whole as weights.
    parameter_nodes: usize,
}

impl Sums {
    fn of(g: &Graph, fused: &Fusion, t: &Outputs) -> Sums {
        let nodes = &g.file.nodes;
        let k = fused.layers;
        let mut s = Sums {
            fwd: vec![0.0; k],
            bwd: vec![0.0; k],
            weights: vec![0.0; k],
            output: vec![0.0; k],
            members: vec![Vec::new(); k],
            backward_members: vec![Vec::new(); k],
            parameter_nodes: 0,
        };
        for (v, node) in nodes.iter().enumerate() {
            let c = fused.layer_of[v];
            if g.forward(v) {
                s.fwd[c] += node.fpga_latency;
                s.members[c].push(v);
                if !t.has_forward_input[v] && node.fpga_latency == 0.0 && g.size(v) > 0.0 {
                    s.parameter_nodes += 1;
                    s.weights[c] += g.size(v);
                } else {
                    s.weights[c] += (g.size(v) - t.bytes[v]).max(0.0);
                }
                if t.consumers[v].iter().any(|&d| d != c) {
                    s.output[c] += t.bytes[v];
                }
            } else {
                s.bwd[c] += node.fpga_latency;
                s.backward_members[c].push(v);
            }
        }
        s
    }
}

/// The fused layers in a topological order whose ties go to the lowest id among a layer's
/// nodes that have inputs (else among its forward nodes, else its backward nodes).
fn order(g: &Graph, fused: &Fusion, t: &Outputs, s: &Sums) -> Vec<usize> {
    let nodes = &g.file.nodes;
    let keys: Vec<i64> = (0..fused.layers)
        .map(|c| {
            let with_input = s.members[c].iter().filter(|&&v| t.has_forward_input[v]);
            with_input
                .map(|&v| nodes[v].id)
                .min()
                .or_else(|| s.members[c].iter().map(|&v| nodes[v].id).min())
                .or_else(|| s.backward_members[c].iter().map(|&v| nodes[v].id).min())
                .expect("every group has a node")
        })
        .collect();
    dag::topological_order(fused.layers, &fused.edges, &dag::ranks(&keys))
        .expect("condensed graphs are acyclic")
}

/// A fused layer's name: its slowest forward node's (ties to the lower id), with the count of
/// the others; a layer of backward nodes only is named after its first.
fn name(g: &Graph, members: &[usize], backward_members: &[usize]) -> String {
    let nodes = &g.file.nodes;
    let slowest = members.iter().max_by(|&&a, &&b| {
        let (na, nb) = (&nodes[a], &nodes[b]);
        na.fpga_latency
            .total_cmp(&nb.fpga_latency)
            .then(nb.id.cmp(&na.id))
    });
    match slowest {
        Some(&v) if members.len() > 1 => format!("{} +{}", g.name(v), members.len() - 1),
        Some(&v) => g.name(v),
        None => format!("{} (backward only)", g.name(backward_members[0])),
    }
}
