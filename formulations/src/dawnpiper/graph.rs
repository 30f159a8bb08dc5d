//! The `graph` extension: DawnPiper's fine-grained node sequence (`docs/dawnpiper.md`).
//!
//! Node `i` is layer `i` of the chain: its forward and backward times, parameter bytes and saved
//! bytes are the layer's (so the evaluator and the planner read one model), and the extension adds
//! what the chain cannot say: the data-flow edges (`inputs`), the paired backward node (`grad`),
//! whether the saved tensor may be swapped to the host (`swappable`), the time to recompute it
//! (`recompute`, default: the layer's forward) and the bytes a node allocates and frees while it
//! runs (`workspace`). Times and bytes are per micro-batch of `model.batch` samples and scale to
//! the trained micro-batch like the chain. Without the extension, one node per layer is derived
//! from the chain (inputs: the previous node; swappable; recompute = forward; no workspace).

use crate::error::InputError;
use crate::instance::Instance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Key of the extension in `instance.extensions`.
pub const KEY: &str = "graph";

/// The extension as written in an instance file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphExt {
    /// One entry per layer, in execution order.
    pub nodes: Vec<NodeExt>,
}

/// One node of the extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeExt {
    /// Unique name.
    pub name: String,
    /// Names of the nodes whose outputs this node reads (default: the previous node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<String>>,
    /// Names of the backward ("grad") nodes paired with this forward node (informational).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grad: Vec<String>,
    /// Whether the saved tensor may be swapped to host memory (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swappable: Option<bool>,
    /// Time (ms) to recompute the saved tensor before the backward (default: the forward time).
    #[serde(
        default,
        with = "crate::units::time::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub recompute: Option<f64>,
    /// Bytes allocated and freed while the node runs (default 0).
    #[serde(
        default,
        with = "crate::units::size::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub workspace: Option<f64>,
}

/// A resolved node, at the trained micro-batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name.
    pub name: String,
    /// Indices of the nodes this node reads (all earlier).
    pub inputs: Vec<usize>,
    /// Whether the saved tensor may be swapped.
    pub swappable: bool,
    /// Recompute time (ms).
    pub recompute: f64,
    /// Transient bytes while the node runs.
    pub workspace: f64,
}

/// The fine-grained graph of an instance: given by the extension or derived from the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// Node `i` is layer `i`.
    pub nodes: Vec<Node>,
    /// True when derived from the chain (no `graph` extension).
    pub derived: bool,
}

impl Graph {
    /// The graph of `inst`: parsed and validated from `extensions.graph`, else derived.
    pub fn of(inst: &Instance) -> Result<Graph, InputError> {
        match inst.extensions.get(KEY) {
            Some(v) => parse(inst, v),
            None => Ok(derive(inst)),
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when there is no node (never for a valid instance).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// One node per layer: reads the previous node, swappable, recomputed at its forward cost.
fn derive(inst: &Instance) -> Graph {
    let k = inst.batch_scale();
    let nodes = inst
        .model
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| Node {
            name: l.name.clone(),
            inputs: if i == 0 { vec![] } else { vec![i - 1] },
            swappable: true,
            recompute: l.forward * k,
            workspace: 0.0,
        })
        .collect();
    Graph {
        nodes,
        derived: true,
    }
}

fn field(rest: impl std::fmt::Display) -> String {
    format!("extensions.{KEY}{rest}")
}

/// The extension of `inst` read from `value` and checked: one node per layer, unique names,
/// backward nodes paired once, known inputs listed earlier, no cycle, times and bytes valid.
fn parse(inst: &Instance, value: &serde_json::Value) -> Result<Graph, InputError> {
    let ext: GraphExt = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(".{path}")
        };
        InputError::field(field(at), e.inner().to_string())
    })?;
    let layers = &inst.model.layers;
    if ext.nodes.len() != layers.len() {
        return Err(InputError::field(
            field(".nodes"),
            format!(
                "{} nodes but the chain has {} layers (node i is layer i)",
                ext.nodes.len(),
                layers.len()
            ),
        ));
    }
    let index = name_index(&ext)?;
    check_grads(&ext, &index)?;
    // Edges by index; unknown names first, then cycles, then execution order.
    let inputs = resolve_inputs(&ext, &index)?;
    if let Some(cycle) = find_cycle(&inputs) {
        let names: Vec<&str> = cycle.iter().map(|&i| ext.nodes[i].name.as_str()).collect();
        return Err(InputError::field(
            field(".nodes"),
            format!("the graph has a cycle: {}", names.join(" -> ")),
        ));
    }
    for (i, list) in inputs.iter().enumerate() {
        if let Some((j, &x)) = list.iter().enumerate().find(|(_, &x)| x >= i) {
            return Err(InputError::field(
                field(format!(".nodes[{i}].inputs[{j}]")),
                format!(
                    "node \"{}\" (index {x}) runs later; nodes must be listed in execution order",
                    ext.nodes[x].name
                ),
            ));
        }
    }
    let k = inst.batch_scale();
    let mut nodes = Vec::with_capacity(ext.nodes.len());
    for (i, (n, inp)) in ext.nodes.iter().zip(inputs).enumerate() {
        for (name, v) in [("recompute", n.recompute), ("workspace", n.workspace)] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(InputError::field(
                        field(format!(".nodes[{i}].{name}")),
                        format!("must be finite and non-negative, found {v}"),
                    ));
                }
            }
        }
        nodes.push(Node {
            name: n.name.clone(),
            inputs: inp,
            swappable: n.swappable.unwrap_or(true),
            recompute: n.recompute.unwrap_or(layers[i].forward) * k,
            workspace: n.workspace.unwrap_or(0.0) * k,
        });
    }
    Ok(Graph {
        nodes,
        derived: false,
    })
}

/// The index of every node by name; names must be non-empty and unique.
fn name_index(ext: &GraphExt) -> Result<BTreeMap<&str, usize>, InputError> {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in ext.nodes.iter().enumerate() {
        if n.name.is_empty() {
            return Err(InputError::field(
                field(format!(".nodes[{i}].name")),
                "empty name",
            ));
        }
        if let Some(j) = index.insert(n.name.as_str(), i) {
            return Err(InputError::field(
                field(format!(".nodes[{i}].name")),
                format!("\"{}\" already names node {j}", n.name),
            ));
        }
    }
    Ok(index)
}

/// Backward nodes: none is a forward node's name, none is paired twice.
fn check_grads(ext: &GraphExt, index: &BTreeMap<&str, usize>) -> Result<(), InputError> {
    let mut grads: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in ext.nodes.iter().enumerate() {
        for (j, g) in n.grad.iter().enumerate() {
            let at = field(format!(".nodes[{i}].grad[{j}]"));
            if index.contains_key(g.as_str()) {
                return Err(InputError::field(
                    at,
                    format!("\"{g}\" names a forward node, not a backward one"),
                ));
            }
            if let Some(o) = grads.insert(g.as_str(), i) {
                return Err(InputError::field(
                    at,
                    format!("backward node \"{g}\" is already paired with node {o}"),
                ));
            }
        }
    }
    Ok(())
}

/// Each node's inputs by index (default: the previous node); an unknown name is an error.
fn resolve_inputs(
    ext: &GraphExt,
    index: &BTreeMap<&str, usize>,
) -> Result<Vec<Vec<usize>>, InputError> {
    let mut inputs: Vec<Vec<usize>> = Vec::with_capacity(ext.nodes.len());
    for (i, n) in ext.nodes.iter().enumerate() {
        let list = match &n.inputs {
            None if i == 0 => vec![],
            None => vec![i - 1],
            Some(names) => {
                let mut v = Vec::with_capacity(names.len());
                for (j, name) in names.iter().enumerate() {
                    match index.get(name.as_str()) {
                        Some(&x) => v.push(x),
                        None => {
                            return Err(InputError::field(
                                field(format!(".nodes[{i}].inputs[{j}]")),
                                format!("unknown node \"{name}\""),
                            ))
                        }
                    }
                }
                v
            }
        };
        inputs.push(list);
    }
    Ok(inputs)
}

/// A cycle of the graph whose edges are `inputs[i] -> i`, listed in edge order, if any.
fn find_cycle(inputs: &[Vec<usize>]) -> Option<Vec<usize>> {
    // Iterative DFS over the reversed edges (node -> its inputs): a back edge closes a cycle.
    let n = inputs.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut parent = vec![usize::MAX; n];
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if *next < inputs[v].len() {
                let u = inputs[v][*next];
                *next += 1;
                match state[u] {
                    0 => {
                        state[u] = 1;
                        parent[u] = v;
                        stack.push((u, 0));
                    }
                    1 => {
                        // v reads u and u (transitively) reads v: u -> ... -> v -> u.
                        let mut path = vec![v];
                        let mut w = v;
                        while w != u {
                            w = parent[w];
                            path.push(w);
                        }
                        // parent(x) reads x, so data flows v -> parent(v) -> ... -> u -> v.
                        path.push(v);
                        return Some(path);
                    }
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    None
}
