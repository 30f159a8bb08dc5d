//! DawnPiper's `graph` extension of an imported operator graph.

use crate::instance::Layer;
use std::collections::{BTreeMap, BTreeSet};

/// DawnPiper's `graph` extension (`docs/dawnpiper.md`): one node per layer, named like the layer
/// (`#k` appended to repeated names), reading the layers its layer's operators read (the
/// condensed operator edges, in layer order), with the backward ("grad") operators of its
/// colour classes (`(id N)` appended to a name that is not unique). Swappable and
/// recompute-at-forward-cost are left to the defaults.
pub(super) fn graph_extension(
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
