//! The swap and recompute model (DawnPiper's MemOpt actions): per-layer inputs, idle times
//! and the swap stall.

use crate::error::InputError;
use crate::instance::{Chain, Instance};
use crate::plan::{Plan, Stage};

/// Per-layer inputs of the swap/recompute model, at the trained micro-batch: from the `graph`
/// extension or derived from the chain ([`crate::dawnpiper::graph`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ActionModel {
    /// Time to recompute each layer's saved tensor (ms).
    pub recompute: Vec<f64>,
    /// Bytes each layer allocates and frees while it runs.
    pub workspace: Vec<f64>,
    /// Host link bandwidth (bytes/s), if the cluster has one.
    pub pcie: Option<f64>,
}

impl ActionModel {
    /// The model of `inst` (fails on an invalid `graph` extension, naming the field).
    pub fn of(inst: &Instance) -> Result<ActionModel, InputError> {
        let g = crate::dawnpiper::graph::Graph::of(inst)?;
        Ok(ActionModel {
            recompute: g.nodes.iter().map(|n| n.recompute).collect(),
            workspace: g.nodes.iter().map(|n| n.workspace).collect(),
            pcie: inst.cluster.pcie,
        })
    }

    /// The model of `inst`, or, when its `graph` extension is invalid (reported by
    /// [`Instance::validate`] when the instance is read), the chain's: recompute = forward, no
    /// workspace.
    pub fn or_chain(inst: &Instance, chain: &Chain) -> ActionModel {
        ActionModel::of(inst).unwrap_or_else(|_| ActionModel {
            recompute: chain.forward.clone(),
            workspace: vec![0.0; chain.len()],
            pcie: inst.cluster.pcie,
        })
    }

    /// Whether the model is needed at all for `plan`: some stage swaps or recomputes, or the
    /// instance has a `graph` extension (whose workspaces count as transient memory).
    pub fn needed(inst: &Instance, plan: &Plan) -> bool {
        inst.extensions.contains_key(crate::dawnpiper::graph::KEY)
            || plan.stages.iter().any(Stage::has_memory_actions)
    }
}

/// Lower bound of every layer's idle time between its forward and its backward, in any
/// schedule: the forward and backward times of every later layer, each divided by the width of
/// its stage (`width[l]`; 1 for single-GPU stages). A communication only adds to it.
pub fn idle_lower_bounds(chain: &Chain, width: &[f64]) -> Vec<f64> {
    let n = chain.len();
    let mut idle = vec![0.0; n];
    let mut acc = 0.0;
    for l in (0..n).rev() {
        idle[l] = acc;
        acc += (chain.forward[l] + chain.backward[l]) / width[l];
    }
    idle
}

/// Swap stall of a stage (ms per micro-batch): `max(sum_i max(0, 2 d_i - idle_i), D - C, 0)`
/// with `d_i = bytes_i / pcie`, `D = sum d_i` and `C` the stage's compute per micro-batch.
pub fn swap_stall(transfers: impl Iterator<Item = (f64, f64)>, compute: f64) -> f64 {
    let mut exposed = 0.0;
    let mut total = 0.0;
    for (d, idle) in transfers {
        exposed += (2.0 * d - idle).max(0.0);
        total += d;
    }
    exposed.max(total - compute).max(0.0)
}
