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
    let (n, nodes) = (g.len(), &g.file.nodes);
    // Output tensor of every forward node.
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
    let tensor_bytes: Vec<f64> = (0..n)
        .map(|v| match (has_forward_output[v], out_size[v]) {
            (false, _) => 0.0,
            (true, Some(s)) => s,
            (true, None) => g.size(v),
        })
        .collect();

    let mut fwd = vec![0.0; fused.layers];
    let mut bwd = vec![0.0; fused.layers];
    let mut weights = vec![0.0; fused.layers];
    let mut output = vec![0.0; fused.layers];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); fused.layers];
    let mut backward_members: Vec<Vec<usize>> = vec![Vec::new(); fused.layers];
    let mut parameter_nodes = 0;
    for v in 0..n {
        let c = fused.layer_of[v];
        if g.forward(v) {
            fwd[c] += nodes[v].fpga_latency;
            members[c].push(v);
            if !has_forward_input[v] && nodes[v].fpga_latency == 0.0 && g.size(v) > 0.0 {
                parameter_nodes += 1;
                weights[c] += g.size(v);
            } else {
                weights[c] += (g.size(v) - tensor_bytes[v]).max(0.0);
            }
            if consumers[v].iter().any(|&d| d != c) {
                output[c] += tensor_bytes[v];
            }
        } else {
            bwd[c] += nodes[v].fpga_latency;
            backward_members[c].push(v);
        }
    }
    let keys: Vec<i64> = (0..fused.layers)
        .map(|c| {
            let with_input = members[c].iter().filter(|&&v| has_forward_input[v]);
            with_input
                .map(|&v| nodes[v].id)
                .min()
                .or_else(|| members[c].iter().map(|&v| nodes[v].id).min())
                .or_else(|| backward_members[c].iter().map(|&v| nodes[v].id).min())
                .expect("every group has a node")
        })
        .collect();
    let order = dag::topological_order(fused.layers, &fused.edges, &dag::ranks(&keys))
        .expect("condensed graphs are acyclic");
    let tensors: Vec<Tensor> = (0..n)
        .filter(|&v| g.forward(v))
        .map(|v| Tensor {
            producer: Some(fused.layer_of[v]),
            bytes: tensor_bytes[v],
            consumers: consumers[v].clone(),
        })
        .collect();
    let cut = dag::cut_bytes(&order, fused.layers, &tensors);

    let layers: Vec<Layer> = order
        .iter()
        .zip(&cut)
        .map(|(&c, &cut)| {
            let name = match members[c].iter().max_by(|&&a, &&b| {
                // The slowest forward node names the group; ties to the lower id.
                let (na, nb) = (&nodes[a], &nodes[b]);
                na.fpga_latency
                    .total_cmp(&nb.fpga_latency)
                    .then(nb.id.cmp(&na.id))
            }) {
                Some(&v) if members[c].len() > 1 => {
                    format!("{} +{}", g.name(v), members[c].len() - 1)
                }
                Some(&v) => g.name(v),
                None => format!("{} (backward only)", g.name(backward_members[c][0])),
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
    Chain {
        layers,
        order,
        backward: backward_members,
        parameter_nodes,
    }
}
