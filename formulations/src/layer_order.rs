//! Plans over another topological order of the layer graph (`docs/instance-format.md`, "dag").
//!
//! An instance imported from a graph is a chain of its nodes in one topological order, and the
//! cut after a layer sends every tensor live across it. A planner that cuts the graph at
//! down-sets which are prefixes of no single order (PipeDream's optimizer does, over its
//! antichain states) names the order in which its stages are ranges: `plan.order`, a
//! permutation of the layers that keeps every edge of the instance's `dag` extension forward.
//! Every consumer of plans judges such a plan on the instance relinearized in that order
//! ([`resolve`]): layers permuted, every cut recomputed from the extension's tensors, every
//! layer's `saved` bytes kept as they were in the instance's own order.

use crate::error::InputError;
use crate::import::dag::{cut_bytes, Tensor};
use crate::instance::Instance;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Key of the extension in `instance.extensions`.
pub const KEY: &str = "dag";

/// Relative tolerance between a layer's `cut` and the cut the extension's tensors give.
const CUT_TOL: f64 = 1e-9;

/// The `dag` extension: the data flow between the layers of a linearized graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dag {
    /// `[from, to]`: layer `to` reads the output of layer `from` (0-based chain indices,
    /// `from < to`: the chain is a topological order). Each layer sends one tensor, its
    /// `output`, to every layer it has an edge to.
    pub edges: Vec<[usize; 2]>,
    /// The model's input tensors and the layers that read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<DagInput>,
}

/// One model input tensor of a [`Dag`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DagInput {
    /// Size (bytes per micro-batch of `model.batch` samples).
    #[serde(with = "crate::units::size")]
    pub bytes: f64,
    /// Layers that read it.
    pub readers: Vec<usize>,
}

fn field(rest: &str) -> String {
    format!("extensions.{KEY}{rest}")
}

impl Dag {
    /// The extension of `inst`, checked: indices exist, edges go forward, and the cut after
    /// every layer is the one its `cut` states (relative 1e-9). `None` without the extension.
    pub fn of(inst: &Instance) -> Result<Option<Dag>, InputError> {
        let Some(value) = inst.extensions.get(KEY) else {
            return Ok(None);
        };
        let dag: Dag = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(".{path}")
            };
            InputError::field(field(&at), e.into_inner().to_string())
        })?;
        dag.check(inst)?;
        Ok(Some(dag))
    }

    fn check(&self, inst: &Instance) -> Result<(), InputError> {
        let n = inst.num_layers();
        for (e, &[a, b]) in self.edges.iter().enumerate() {
            if a >= n || b >= n {
                return Err(InputError::field(
                    field(&format!(".edges[{e}]")),
                    format!("layer {} does not exist (the chain has {n})", a.max(b)),
                ));
            }
            if a >= b {
                return Err(InputError::field(
                    field(&format!(".edges[{e}]")),
                    format!(
                        "[{a}, {b}] does not go forward: the chain must be a topological order \
                         of the graph"
                    ),
                ));
            }
        }
        for (t, input) in self.inputs.iter().enumerate() {
            if !(input.bytes.is_finite() && input.bytes >= 0.0) {
                return Err(InputError::field(
                    field(&format!(".inputs[{t}].bytes")),
                    format!(
                        "must be a finite size of at least 0 bytes, found {}",
                        input.bytes
                    ),
                ));
            }
            if let Some(&r) = input.readers.iter().find(|&&r| r >= n) {
                return Err(InputError::field(
                    field(&format!(".inputs[{t}].readers")),
                    format!("layer {r} does not exist (the chain has {n})"),
                ));
            }
        }
        let identity: Vec<usize> = (0..n).collect();
        let cut = cut_bytes(&identity, n, &self.tensors(inst));
        for (i, layer) in inst
            .model
            .layers
            .iter()
            .enumerate()
            .take(n.saturating_sub(1))
        {
            let stated = layer.cut.unwrap_or(layer.output);
            if (stated - cut[i]).abs() > CUT_TOL * stated.abs().max(cut[i].abs()) {
                return Err(InputError::field(
                    format!("model.layers[{i}].cut"),
                    format!(
                        "{stated} bytes, but the tensors of extensions.{KEY} live across a cut \
                         after this layer add up to {} bytes",
                        cut[i]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The graph's tensors: each layer's output, read by the layers it has edges to, and the
    /// model inputs.
    fn tensors(&self, inst: &Instance) -> Vec<Tensor> {
        let layers = &inst.model.layers;
        let mut readers = vec![Vec::new(); layers.len()];
        for &[a, b] in &self.edges {
            readers[a].push(b);
        }
        let produced = readers
            .into_iter()
            .enumerate()
            .map(|(l, consumers)| Tensor {
                producer: Some(l),
                bytes: layers[l].output,
                consumers,
            });
        let inputs = self.inputs.iter().map(|t| Tensor {
            producer: None,
            bytes: t.bytes,
            consumers: t.readers.clone(),
        });
        produced.chain(inputs).collect()
    }

    /// Whether `order` keeps every edge forward.
    fn respects(&self, position: &[usize]) -> Option<[usize; 2]> {
        self.edges
            .iter()
            .copied()
            .find(|&[a, b]| position[a] > position[b])
    }
}

/// `plan.order` for stages that are ranges of the layers in `order`: `None` when that is the
/// chain's own order.
pub fn plan_order(order: Vec<usize>) -> Option<Vec<usize>> {
    (!is_chain(&order)).then_some(order)
}

fn is_chain(order: &[usize]) -> bool {
    order.iter().enumerate().all(|(p, &l)| p == l)
}

/// Checks `order` (the field `plan.order`) against `inst`: a permutation of its layers that
/// keeps every edge of its `dag` extension forward. Without the extension only the chain's own
/// order is valid (the chain is all the instance says of the data flow).
pub fn check_order(inst: &Instance, order: &[usize]) -> Result<(), InputError> {
    checked(inst, order).map(|_| ())
}

/// [`check_order`], returning the graph a new order was checked against (`None` for the
/// chain's own order, which needs none).
fn checked(inst: &Instance, order: &[usize]) -> Result<Option<Dag>, InputError> {
    let n = inst.num_layers();
    const F: &str = "plan.order";
    if order.len() != n {
        return Err(InputError::field(
            F,
            format!("{} layers listed; the chain has {n}", order.len()),
        ));
    }
    let mut position = vec![usize::MAX; n];
    for (p, &l) in order.iter().enumerate() {
        if l >= n {
            return Err(InputError::field(
                F,
                format!("layer {l} does not exist (the chain has {n})"),
            ));
        }
        if position[l] != usize::MAX {
            return Err(InputError::field(F, format!("layer {l} is listed twice")));
        }
        position[l] = p;
    }
    if is_chain(order) {
        return Ok(None);
    }
    let Some(dag) = Dag::of(inst)? else {
        return Err(InputError::field(
            F,
            format!(
                "the instance has no extensions.{KEY} (the layer graph, written by `import \
                 --from pipedream`), so its chain order is the only valid one"
            ),
        ));
    };
    match dag.respects(&position) {
        Some([a, b]) => Err(InputError::field(
            F,
            format!(
                "layer {b} ({}) is placed before layer {a} ({}), whose output it reads",
                inst.model.layers[b].name, inst.model.layers[a].name
            ),
        )),
        None => Ok(Some(dag)),
    }
}

/// `inst` relinearized in `order` (checked by [`check_order`]): layer `p` of the result is
/// layer `order[p]`, each layer keeps the `saved` bytes it had (its input in the original
/// chain, made explicit where it was the default), every `cut` is recomputed from the `dag`
/// extension, which is renumbered. Other extensions number layers in the original order and
/// cannot follow: an instance that has any is refused unless `order` is the chain's own.
pub fn reordered(inst: &Instance, order: &[usize]) -> Result<Instance, InputError> {
    let Some(dag) = checked(inst, order)? else {
        return Ok(inst.clone());
    };
    if let Some(other) = inst.extensions.keys().find(|k| *k != KEY) {
        return Err(InputError::field(
            "plan.order",
            format!(
                "the instance's extensions.{other} numbers layers in the chain's order and \
                 cannot be reordered; such an instance takes plans in its own order only"
            ),
        ));
    }
    let n = inst.num_layers();
    let mut position = vec![0; n];
    for (p, &l) in order.iter().enumerate() {
        position[l] = p;
    }
    let cut = cut_bytes(order, n, &dag.tensors(inst));
    let layers = &inst.model.layers;
    let mut out = inst.clone();
    out.model.layers = order
        .iter()
        .zip(cut)
        .map(|(&l, c)| {
            let mut layer = layers[l].clone();
            let input = if l == 0 {
                inst.model.input
            } else {
                layers[l - 1].output
            };
            layer.saved.get_or_insert(input);
            layer.cut = Some(c);
            layer
        })
        .collect();
    let mut edges: Vec<[usize; 2]> = dag
        .edges
        .iter()
        .map(|&[a, b]| [position[a], position[b]])
        .collect();
    edges.sort_unstable();
    let renumbered = Dag {
        edges,
        inputs: dag
            .inputs
            .iter()
            .map(|t| {
                let mut readers: Vec<usize> = t.readers.iter().map(|&r| position[r]).collect();
                readers.sort_unstable();
                DagInput {
                    bytes: t.bytes,
                    readers,
                }
            })
            .collect(),
    };
    out.extensions.insert(
        KEY.to_string(),
        serde_json::to_value(renumbered).expect("the extension serializes"),
    );
    Ok(out)
}

/// The instance and plan every consumer judges: `plan` itself on `inst` when it has no
/// `order`, else the plan without it on `inst` relinearized in that order ([`reordered`]).
pub fn resolve<'a>(
    inst: &'a Instance,
    plan: &'a Plan,
) -> Result<(Cow<'a, Instance>, Cow<'a, Plan>), InputError> {
    match &plan.order {
        None => Ok((Cow::Borrowed(inst), Cow::Borrowed(plan))),
        Some(order) => {
            let inst = reordered(inst, order)?;
            let plan = Plan {
                order: None,
                ..plan.clone()
            };
            Ok((Cow::Owned(inst), Cow::Owned(plan)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Schedule, Stage};

    /// A diamond: a feeds b and c, both feed d; the chain is a, b, c, d.
    fn diamond(dag: Option<&str>) -> Result<Instance, InputError> {
        let ext = dag.map_or(String::new(), |d| {
            format!(r#", "extensions": {{"dag": {d}}}"#)
        });
        Instance::from_json(&format!(
            r#"{{"format": "pipeplan/instance@1", "name": "diamond",
              "model": {{"batch": 1, "input": 5, "layers": [
                {{"name": "a", "forward": 1, "backward": 2, "weights": 1, "output": 10, "cut": 10}},
                {{"name": "b", "forward": 1, "backward": 2, "weights": 1, "output": 20, "cut": 30}},
                {{"name": "c", "forward": 1, "backward": 2, "weights": 1, "output": 30, "cut": 50}},
                {{"name": "d", "forward": 1, "backward": 2, "weights": 1, "output": 40}}]}},
              "cluster": {{"gpus": 2, "memory": "1 GiB", "bandwidth": {{"intra_node": "1 GB/s"}}}}
              {ext}}}"#
        ))
    }

    const EDGES: &str =
        r#"{"edges": [[0, 1], [0, 2], [1, 3], [2, 3]], "inputs": [{"bytes": 5, "readers": [0]}]}"#;

    #[test]
    fn another_order_has_its_own_cuts_and_the_same_saved_bytes() {
        let inst = diamond(Some(EDGES)).unwrap();
        inst.validate().unwrap();
        let r = reordered(&inst, &[0, 2, 1, 3]).unwrap();
        let names: Vec<&str> = r.model.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["a", "c", "b", "d"]);
        // After a: a's output; after c: a's (b still reads it) and c's; after b: b's and c's.
        let cuts: Vec<f64> = r.model.layers.iter().map(|l| l.cut.unwrap()).collect();
        assert_eq!(cuts[..3], [10.0, 40.0, 50.0]);
        // Each layer keeps what it saved in the instance's own chain (its input there).
        let saved: Vec<f64> = r.model.layers.iter().map(|l| l.saved.unwrap()).collect();
        assert_eq!(saved, [5.0, 20.0, 10.0, 30.0]);
        // The graph follows, so the result is a valid instance whose own order is the identity.
        r.validate().unwrap();
        assert_eq!(reordered(&r, &[0, 1, 2, 3]).unwrap(), r);
    }

    #[test]
    fn a_plan_in_another_order_is_judged_on_the_reordered_instance() {
        let inst = diamond(Some(EDGES)).unwrap();
        let plain = Plan {
            order: None,
            stages: vec![Stage::single(0, 1, 0), Stage::single(2, 3, 1)],
            schedule: Schedule::default_for(&inst),
        };
        let ordered = Plan {
            order: Some(vec![0, 2, 1, 3]),
            ..plain.clone()
        };
        let r = reordered(&inst, &[0, 2, 1, 3]).unwrap();
        let ev = crate::evaluate(&inst, &ordered).unwrap();
        assert_eq!(ev, crate::evaluate(&r, &plain).unwrap());
        assert_ne!(
            ev,
            crate::evaluate(&inst, &plain).unwrap(),
            "the cut differs"
        );
    }

    #[test]
    fn orders_that_break_the_graph_are_refused_by_name() {
        let inst = diamond(Some(EDGES)).unwrap();
        let e = check_order(&inst, &[0, 3, 1, 2]).unwrap_err().to_string();
        assert_eq!(
            e,
            "plan.order: layer 3 (d) is placed before layer 1 (b), whose output it reads"
        );
        let e = check_order(&inst, &[0, 1, 1, 2]).unwrap_err().to_string();
        assert_eq!(e, "plan.order: layer 1 is listed twice");
        let e = check_order(&inst, &[0, 1, 2]).unwrap_err().to_string();
        assert_eq!(e, "plan.order: 3 layers listed; the chain has 4");
        // Without the graph only the chain's own order is known to be valid.
        let bare = diamond(None).unwrap();
        check_order(&bare, &[0, 1, 2, 3]).unwrap();
        let e = check_order(&bare, &[0, 2, 1, 3]).unwrap_err().to_string();
        assert!(e.contains("no extensions.dag"), "{e}");
        // Extensions numbered in the chain's order cannot follow a new one.
        let mut other = diamond(Some(EDGES)).unwrap();
        other
            .extensions
            .insert("memory_profile".into(), serde_json::json!({}));
        let e = reordered(&other, &[0, 2, 1, 3]).unwrap_err().to_string();
        assert!(e.contains("extensions.memory_profile"), "{e}");
    }

    #[test]
    fn a_graph_that_contradicts_the_chain_is_refused_by_name() {
        let refused = |dag: &str, start: &str| {
            let e = diamond(Some(dag)).unwrap_err().to_string();
            assert!(e.starts_with(start), "{e}");
        };
        refused(
            r#"{"edges": [[0, 1], [2, 1]]}"#,
            "extensions.dag.edges[1]: [2, 1] does not go forward",
        );
        refused(
            r#"{"edges": [[0, 9]]}"#,
            "extensions.dag.edges[0]: layer 9 does not exist",
        );
        // b's output is not read after c: the cut after b would be 10 bytes, not 30.
        refused(
            r#"{"edges": [[0, 1], [0, 2], [2, 3]], "inputs": [{"bytes": 5, "readers": [0]}]}"#,
            "model.layers[1].cut: 30 bytes, but",
        );
        refused(r#"{"edges": [], "extra": 1}"#, "extensions.dag");
    }
}
