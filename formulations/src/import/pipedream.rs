//! PipeDream profiler `graph.txt` (msr-fiddle/pipedream).
//!
//! # Format
//!
//! Written by `str(Graph)` in `graph/graph.py` and read back by `Graph.from_str`. One node per
//! line, then one edge per line, edges indented by a tab:
//!
//! ```text
//! node2 -- Conv2d(3, 64, kernel_size=(3, 3)) -- forward_compute_time=22.307, backward_compute_time=24.613, activation_size=1644167168.000, parameter_size=7168.000
//! node7 -- LSTM(2048, 1024) -- forward_compute_time=3.190, backward_compute_time=5.348, activation_size=[6291456.0; 131072.0; 131072.0], parameter_size=50364416.000
//! <TAB>node1 -- node2
//! ```
//!
//! (`<TAB>` stands for a tab character.)
//!
//! A node line may end with ` -- stage_id=N` (partitioned graphs); it is ignored. A list
//! `activation_size` (a module with several outputs) is summed, as `Node.from_str` does.
//!
//! # Units (from the profiler's source)
//!
//! - `forward_compute_time`, `backward_compute_time`: **milliseconds** per profiled mini-batch.
//!   `profiler/image_classification/main.py` averages per-layer CUDA timings divided by 1000 and
//!   prints them under "Forward Time (ms)"; the optimizer divides them by 1000 to get seconds.
//! - `activation_size`, `parameter_size`: **bytes** for the whole mini-batch;
//!   `profiler/torchmodules/torchgraph/graph_creator.py` writes `4.0 * prod(output_shape)` and
//!   `4.0 * nb_params` (fp32).
//! - The mini-batch size is not recorded. For the image-classification profiler's single `Input`
//!   node, whose size is 4 × batch × 3 × H × W, it is inferred when H = W ∈ {224, 299, 331} divides
//!   exactly; otherwise see [`ImportOptions::batch`](super::ImportOptions::batch).
//!
//! # Linearization
//!
//! As PipeDream's optimizer (`optimizer/optimizer_graph_hierarchical.py`) does, source nodes
//! whose description starts with `Input` are removed (their bytes become `model.input`; their
//! time, the data-loading time, is dropped) and so are sink nodes whose description starts with
//! `__getitem__` (unused outputs). The other nodes become layers in a topological order whose
//! ties go to the lower node number (the profiler numbers nodes in execution order). A layer's
//! `output` is its `activation_size`; its `cut` is the bytes of every tensor live across a cut
//! after it, model inputs included.

use super::dag::{self, Tensor};
use super::{non_negative, ImportOptions, Profile, Source};
use crate::error::InputError;
use crate::instance::{Instance, Layer, Precision};
use crate::layer_order::{Dag, DagInput};
use std::collections::BTreeMap;

/// Imports a `graph.txt` (same as [`super::import`] with [`Source::PipeDream`]).
pub fn import(text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    super::import(Source::PipeDream, text, opts)
}

struct Node<'a> {
    id: &'a str,
    desc: String,
    forward: f64,
    backward: f64,
    activation: f64,
    parameters: f64,
    line: usize,
}

const NODE_SHAPE: &str =
    "`id -- description -- forward_compute_time=.., backward_compute_time=.., \
                          activation_size=.., parameter_size=..`";

fn at(line: usize) -> String {
    format!("graph.txt line {line}")
}

/// Reads a `graph.txt` as a profile: its lines parsed, its edges resolved, input nodes and unused
/// outputs removed, the rest linearized (see the module docs).
pub(crate) fn read(text: &str) -> Result<Profile, InputError> {
    let (nodes, raw_edges) = parse(text)?;
    let edge_line = node_edges(&nodes, &raw_edges)?;
    let kept = Kept::of(&nodes, &edge_line)?;
    let links = Links::of(&kept, &edge_line);
    let order = linear_order(&nodes, &kept, &links)?;
    let cut = dag::cut_bytes(&order, kept.kept.len(), &kept.tensors(&nodes, &links));
    let layers = order
        .iter()
        .zip(&cut)
        .map(|(&l, &c)| layer(&nodes[kept.kept[l]], c))
        .collect();
    let n = nodes.len();
    let inputs: Vec<usize> = (0..n).filter(|&v| kept.is_input[v]).collect();
    let dag = layer_dag(
        &order,
        &links.edges,
        inputs
            .iter()
            .map(|&v| (nodes[v].activation, &links.consumers[v])),
    );
    let input_bytes: f64 = inputs.iter().map(|&v| nodes[v].activation).sum();
    let input_time: f64 = inputs.iter().map(|&v| nodes[v].forward).sum();
    let unused = kept.is_unused.iter().filter(|&&u| u).count();

    let mut p = Profile::new(
        "pipedream",
        (
            1.0,
            "Times are PipeDream's milliseconds per profiled mini-batch \
             (profiler/image_classification/main.py)."
                .to_string(),
        ),
    );
    p.input = input_bytes;
    p.extensions.insert(
        crate::layer_order::KEY.to_string(),
        serde_json::to_value(dag).expect("the extension serializes"),
    );
    p.layers = layers;
    p.precision = Some(Precision::Fp32);
    p.batch = infer_batch(&nodes, &inputs);
    p.notes.push(format!(
        "PipeDream profiler graph.txt (msr-fiddle/pipedream, read as graph/graph.py reads it): \
         activation_size and parameter_size are bytes for the whole mini-batch, 4 bytes per \
         fp32 element (profiler/torchmodules/torchgraph/graph_creator.py); list activation \
         sizes are summed. The DAG of {n} nodes and {} edges is linearized by a topological \
         order, ties going to the lower node number. As PipeDream's optimizer does, {} input \
         node(s) are removed (their {input_bytes} bytes are model.input, their {input_time} ms \
         data-loading time is dropped) and {unused} unused __getitem__ sink(s) are removed. \
         Layer output = activation_size; cut = bytes of every tensor live across a cut after \
         the layer, each counted once; saved = default (the previous layer's output).",
        edge_line.len(),
        inputs.len(),
    ));
    Ok(p)
}

/// Which nodes become layers: all but the input nodes (no producer, `Input...`) and the unused
/// outputs (`__getitem__` sinks), as PipeDream's optimizer removes them.
struct Kept {
    is_input: Vec<bool>,
    is_unused: Vec<bool>,
    /// The nodes kept, in node order: layer `l` before linearization is node `kept[l]`.
    kept: Vec<usize>,
    /// The layer of each node (`usize::MAX` if removed).
    layer_of: Vec<usize>,
}

impl Kept {
    fn of(nodes: &[Node], edge_line: &BTreeMap<(usize, usize), usize>) -> Result<Kept, InputError> {
        let n = nodes.len();
        let mut indegree = vec![0usize; n];
        let mut outdegree = vec![0usize; n];
        for &(a, b) in edge_line.keys() {
            outdegree[a] += 1;
            indegree[b] += 1;
        }
        let is_input: Vec<bool> = (0..n)
            .map(|v| indegree[v] == 0 && nodes[v].desc.starts_with("Input"))
            .collect();
        let is_unused: Vec<bool> = (0..n)
            .map(|v| !is_input[v] && outdegree[v] == 0 && nodes[v].desc.starts_with("__getitem__"))
            .collect();
        let kept: Vec<usize> = (0..n).filter(|&v| !is_input[v] && !is_unused[v]).collect();
        if kept.is_empty() {
            return Err(InputError::field(
                "graph.txt",
                "no layers: every node is an input node or an unused output",
            ));
        }
        let mut layer_of = vec![usize::MAX; n];
        for (l, &v) in kept.iter().enumerate() {
            layer_of[v] = l;
        }
        Ok(Kept {
            is_input,
            is_unused,
            kept,
            layer_of,
        })
    }

    /// Every tensor but the unused outputs': its producing layer (none for an input), bytes
    /// and consuming layers.
    fn tensors(&self, nodes: &[Node], links: &Links) -> Vec<Tensor> {
        (0..nodes.len())
            .filter(|&v| !self.is_unused[v])
            .map(|v| Tensor {
                producer: (!self.is_input[v]).then(|| self.layer_of[v]),
                bytes: nodes[v].activation,
                consumers: links.consumers[v].clone(),
            })
            .collect()
    }
}

/// The edges between kept nodes, as layer pairs.
struct Links {
    /// Edges between two layers.
    edges: Vec<(usize, usize)>,
    /// The `graph.txt` line of each edge of `edges`.
    line_of_edge: BTreeMap<(usize, usize), usize>,
    /// The layers each node's output feeds (inputs included).
    consumers: Vec<Vec<usize>>,
}

impl Links {
    fn of(kept: &Kept, edge_line: &BTreeMap<(usize, usize), usize>) -> Links {
        let layer_of = &kept.layer_of;
        let mut edges = Vec::new();
        let mut line_of_edge = BTreeMap::new();
        let mut consumers = vec![Vec::new(); layer_of.len()];
        for (&(a, b), &line) in edge_line {
            if layer_of[b] == usize::MAX {
                continue;
            }
            consumers[a].push(layer_of[b]);
            if layer_of[a] != usize::MAX {
                edges.push((layer_of[a], layer_of[b]));
                line_of_edge.insert((layer_of[a], layer_of[b]), line);
            }
        }
        Links {
            edges,
            line_of_edge,
            consumers,
        }
    }
}

/// The layers in a topological order, ties going to the lower node number; a cycle is an
/// error naming an edge on it.
fn linear_order(nodes: &[Node], kept: &Kept, links: &Links) -> Result<Vec<usize>, InputError> {
    let keys: Vec<_> = kept
        .kept
        .iter()
        .map(|&v| dag::natural_key(nodes[v].id))
        .collect();
    dag::topological_order(kept.kept.len(), &links.edges, &dag::ranks(&keys)).map_err(|cycle| {
        let k = cycle.len();
        let line = links.line_of_edge[&(cycle[k - 2], cycle[k - 1])];
        let names: Vec<&str> = cycle.iter().map(|&l| nodes[kept.kept[l]].id).collect();
        InputError::field(
            at(line),
            format!("the graph has a cycle: {}", super::cycle_text(&names)),
        )
    })
}

/// The layer of a node, with `cut` bytes live after it.
fn layer(node: &Node, cut: f64) -> Layer {
    let kind = node.desc.split('(').next().unwrap_or("").trim();
    Layer {
        name: node.id.to_string(),
        kind: (!kind.is_empty()).then(|| kind.to_string()),
        forward: node.forward,
        backward: node.backward,
        weights: node.parameters,
        output: node.activation,
        saved: None,
        cut: Some(cut),
        tensor_parallel: Vec::new(),
    }
}

/// The node lines and the edge lines (`nodeA`, `nodeB`, line number) of a `graph.txt`.
type Lines<'a> = (Vec<Node<'a>>, Vec<(&'a str, &'a str, usize)>);

/// Splits `text` into node lines and edge lines; at least one node is needed.
fn parse(text: &str) -> Result<Lines<'_>, InputError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut raw_edges: Vec<(&str, &str, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = trimmed.split(" -- ").map(str::trim).collect();
        // graph.py tells edges by their leading tab; also accept an unindented `a -- b`.
        let is_edge =
            raw.starts_with(char::is_whitespace) || (tokens.len() == 2 && !trimmed.contains('='));
        if is_edge {
            if tokens.len() != 2 || tokens.iter().any(|t| t.is_empty()) {
                return Err(InputError::field(
                    at(line),
                    format!("expected an edge `<tab>nodeA -- nodeB`, found {trimmed:?}"),
                ));
            }
            raw_edges.push((tokens[0], tokens[1], line));
        } else {
            nodes.push(parse_node(&tokens, line)?);
        }
    }
    if nodes.is_empty() {
        return Err(InputError::field(
            "graph.txt",
            format!("no node lines; expected lines like {NODE_SHAPE}"),
        ));
    }
    Ok((nodes, raw_edges))
}

/// The edges between node indices, each once with the first line that states it; a node defined
/// twice or an edge to an unknown node is an error naming its line.
fn node_edges(
    nodes: &[Node],
    raw_edges: &[(&str, &str, usize)],
) -> Result<BTreeMap<(usize, usize), usize>, InputError> {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some(&first) = index.get(n.id) {
            return Err(InputError::field(
                at(n.line),
                format!(
                    "node {} is defined twice (first on line {})",
                    n.id, nodes[first].line
                ),
            ));
        }
        index.insert(n.id, i);
    }
    let mut edge_line: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for &(a, b, line) in raw_edges {
        let find = |id: &str| {
            index.get(id).copied().ok_or_else(|| {
                InputError::field(at(line), format!("edge refers to unknown node {id}"))
            })
        };
        let e = (find(a)?, find(b)?);
        edge_line.entry(e).or_insert(line);
    }
    Ok(edge_line)
}

/// The data flow between the layers, numbered in the chain's order (`order[p]` is the kept
/// node at position `p`): what lets a plan be judged in another topological order
/// ([`crate::layer_order`]).
fn layer_dag<'a>(
    order: &[usize],
    edges: &[(usize, usize)],
    inputs: impl Iterator<Item = (f64, &'a Vec<usize>)>,
) -> Dag {
    let mut position = vec![0; order.len()];
    for (p, &l) in order.iter().enumerate() {
        position[l] = p;
    }
    let mut edges: Vec<[usize; 2]> = edges
        .iter()
        .map(|&(a, b)| [position[a], position[b]])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let inputs = inputs
        .map(|(bytes, readers)| {
            // Sorted, so that the file's line order does not show.
            let mut readers: Vec<usize> = readers.iter().map(|&r| position[r]).collect();
            readers.sort_unstable();
            readers.dedup();
            DagInput { bytes, readers }
        })
        .collect();
    Dag { edges, inputs }
}

fn parse_node<'a>(tokens: &[&'a str], line: usize) -> Result<Node<'a>, InputError> {
    let bad_shape = || {
        InputError::field(
            at(line),
            format!(
                "expected a node line {NODE_SHAPE}, found {:?}",
                tokens.join(" -- ")
            ),
        )
    };
    // The metadata is the last `key=value` token that is not the optional stage id; anything
    // between it and the id is the description (which could itself contain " -- ").
    let meta = tokens
        .iter()
        .rposition(|t| t.contains("forward_compute_time="))
        .or_else(|| {
            tokens
                .iter()
                .rposition(|t| t.contains('=') && !t.starts_with("stage_id="))
        })
        .ok_or_else(bad_shape)?;
    if meta < 2 || tokens[0].is_empty() {
        return Err(bad_shape());
    }
    for t in &tokens[meta + 1..] {
        let ok = t
            .strip_prefix("stage_id=")
            .is_some_and(|s| s.trim().parse::<i64>().is_ok());
        if !ok {
            return Err(InputError::field(
                at(line),
                format!("cannot read {t:?} after the metadata; expected `stage_id=<integer>`"),
            ));
        }
    }
    let mut values: BTreeMap<&str, &str> = BTreeMap::new();
    for part in tokens[meta].split(',') {
        let part = part.trim();
        let (key, value) = part.split_once('=').ok_or_else(|| {
            InputError::field(
                at(line),
                format!("cannot read {part:?}; expected key=value"),
            )
        })?;
        values.insert(key.trim(), value.trim());
    }
    let get = |key: &str| -> Result<f64, InputError> {
        let text = values.get(key).ok_or_else(|| {
            InputError::field(at(line), format!("missing {key}; expected {NODE_SHAPE}"))
        })?;
        let cannot = || InputError::field(at(line), format!("cannot read {key}={text}"));
        let v = if key == "activation_size" && text.starts_with('[') {
            let inner = text
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .ok_or_else(cannot)?;
            let mut sum = 0.0;
            for x in inner.split(';').map(str::trim).filter(|x| !x.is_empty()) {
                let x: f64 = x.parse().map_err(|_| cannot())?;
                if !x.is_finite() {
                    return Err(cannot());
                }
                sum += non_negative(|| at(line), key, x)?;
            }
            sum
        } else {
            text.parse().map_err(|_| cannot())?
        };
        if !v.is_finite() {
            return Err(cannot());
        }
        non_negative(|| at(line), key, v)
    };
    Ok(Node {
        id: tokens[0],
        desc: tokens[1..meta].join(" -- "),
        forward: get("forward_compute_time")?,
        backward: get("backward_compute_time")?,
        activation: get("activation_size")?,
        parameters: get("parameter_size")?,
        line,
    })
}

/// The image-classification profiler records one `Input` node of 4 × batch × 3 × H × W bytes.
fn infer_batch(nodes: &[Node], inputs: &[usize]) -> Option<(u32, String)> {
    let [v] = inputs else { return None };
    let node = &nodes[*v];
    if node.desc != "Input" || node.activation <= 0.0 || node.activation.fract() != 0.0 {
        return None;
    }
    let bytes = node.activation as u64;
    [224u64, 299, 331].into_iter().find_map(|side| {
        let per_sample = 4 * 3 * side * side;
        let batch = bytes / per_sample;
        (bytes % per_sample == 0 && batch > 0 && batch <= u32::MAX as u64).then(|| {
            (
                batch as u32,
                format!(
                    "model.batch = {batch}, inferred from the {bytes}-byte Input node \
                     = {batch} x 3 x {side} x {side} fp32 images."
                ),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::import::{import, ImportOptions, Source};
    use crate::instance::Cluster;

    fn opts() -> ImportOptions {
        ImportOptions::new(Cluster::single_node(4, 16e9, 10e9))
    }

    fn err(text: &str) -> String {
        import(Source::PipeDream, text, &opts())
            .unwrap_err()
            .to_string()
    }

    const LINE: &str = "forward_compute_time=1.0, backward_compute_time=2.0, activation_size=8.0, parameter_size=4.0";

    #[test]
    fn malformed_numbers_name_the_line() {
        let text = format!(
            "node1 -- Input -- {LINE}\nnode2 -- ReLU -- forward_compute_time=1, \
             backward_compute_time=2, activation_size=abc, parameter_size=0\n\tnode1 -- node2"
        );
        assert_eq!(
            err(&text),
            "graph.txt line 2: cannot read activation_size=abc"
        );
        let text = format!("node2 -- ReLU -- {}", LINE.replace("=2.0", "=-2.0"));
        assert_eq!(
            err(&text),
            "graph.txt line 1: negative backward_compute_time -2"
        );
        let text = format!("node2 -- ReLU -- {}", LINE.replace("=1.0", "=nan"));
        assert_eq!(
            err(&text),
            "graph.txt line 1: cannot read forward_compute_time=nan"
        );
        let text = "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=[1; x]\n";
        assert_eq!(
            err(text),
            "graph.txt line 1: cannot read activation_size=[1; x]"
        );
        let text =
            "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=3\n";
        assert!(err(text).starts_with("graph.txt line 1: missing parameter_size"));
    }

    #[test]
    fn structural_errors() {
        assert!(err("").starts_with("graph.txt: no node lines"));
        assert!(err("\n\n").starts_with("graph.txt: no node lines"));
        let text = format!("node1 -- A -- {LINE}\n\tnode1 -- node9\n");
        assert_eq!(
            err(&text),
            "graph.txt line 2: edge refers to unknown node node9"
        );
        let text = format!("node1 -- A -- {LINE}\nnode1 -- B -- {LINE}\n");
        assert_eq!(
            err(&text),
            "graph.txt line 2: node node1 is defined twice (first on line 1)"
        );
        let text = format!(
            "node1 -- A -- {LINE}\nnode2 -- B -- {LINE}\nnode3 -- C -- {LINE}\n\
             \tnode1 -- node2\n\tnode2 -- node3\n\tnode3 -- node2\n"
        );
        assert_eq!(
            err(&text),
            "graph.txt line 6: the graph has a cycle: node2 -> node3 -> node2"
        );
        let text = format!("node1 -- A -- {LINE}\n\tnode1 -- node1\n");
        assert_eq!(
            err(&text),
            "graph.txt line 2: the graph has a cycle: node1 -> node1"
        );
        assert!(err("node1 -- A -- B\n").starts_with("graph.txt line 1: expected a node line"));
        // Two tokens without `=` read as an (unindented) edge.
        assert!(err("node1 -- A\n").starts_with("graph.txt: no node lines"));
        let text = format!("node1 -- A -- {LINE}\n\tnode1 -- \n");
        assert!(err(&text).starts_with("graph.txt line 2: expected an edge"));
        let text = format!("node1 -- Input -- {LINE}\n");
        assert!(err(&text).starts_with("graph.txt: no layers"));
        let text = format!("node1 -- A -- {LINE} -- stage=x\n");
        assert!(err(&text).starts_with("graph.txt line 1: cannot read \"stage=x\""));
    }

    #[test]
    fn stage_ids_and_lists_are_read() {
        let text = "node1 -- LSTM -- forward_compute_time=1, backward_compute_time=2, \
                    activation_size=[6.0; 1.5; 0.5], parameter_size=3 -- stage_id=0\n";
        let inst = import(Source::PipeDream, text, &opts()).unwrap();
        assert_eq!(inst.model.layers[0].output, 8.0);
        assert_eq!(inst.model.layers[0].kind.as_deref(), Some("LSTM"));
    }
}
