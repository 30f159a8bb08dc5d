//! The machines of an instance: GPUs per node and memory (`basic_cluster_config.json`), and the
//! saturation bandwidths of Sailor's fitted curves within and between nodes.

use super::{prefix, uint_field, Selection};
use crate::error::InputError;
use crate::instance::{Bandwidth, Cluster};
use serde_json::Value;

/// The machines an instance runs on.
pub(super) struct Machines {
    pub(super) gpus_per_node: u32,
    /// Memory per GPU (bytes).
    pub(super) memory: f64,
    /// Bandwidth within a node (bytes/s; the inter-node one when no curve fits the node size).
    pub(super) intra: f64,
    /// Bandwidth between nodes (bytes/s).
    pub(super) inter: f64,
    /// Where the node size comes from, and what stands for a missing intra-node curve: for the
    /// instance's notes.
    pub(super) node_size_from: String,
    pub(super) intra_from: String,
}

impl Machines {
    /// The cluster of `sel.nodes` of these machines, of GPU type `sel.gpu_type`.
    pub(super) fn cluster(&self, sel: &Selection) -> Cluster {
        Cluster {
            gpus: sel.nodes * self.gpus_per_node,
            gpus_per_node: Some(self.gpus_per_node),
            gpu: Some(sel.gpu_type.clone()),
            memory: self.memory,
            bandwidth: Bandwidth {
                intra_node: self.intra,
                inter_node: Some(self.inter),
            },
            pcie: None,
        }
    }
}

/// The machines of `sel` from the cluster config and the bandwidth curves.
pub(super) fn machines(
    cluster_cfg: &Value,
    intra_bw: &Value,
    inter_bw: &Value,
    sel: &Selection,
) -> Result<Machines, InputError> {
    let gpu = &sel.gpu_type;
    let per_gpu = cluster_cfg.get(gpu).ok_or_else(|| {
        InputError::field(
            format!("basic_cluster_config.json.{gpu}"),
            "missing: gpus_per_node and mem_per_gpu of this GPU type",
        )
    })?;
    let configured = uint_field(per_gpu, "gpus_per_node")
        .map_err(|e| prefix(e, &format!("basic_cluster_config.json.{gpu}")))?;
    let gpus_per_node = sel.gpus_per_node.unwrap_or(configured);
    if gpus_per_node == 0 {
        return Err(InputError::field(
            "import.gpus_per_node",
            "must be at least 1",
        ));
    }
    if sel.nodes.checked_mul(gpus_per_node).is_none() {
        // Name the larger factor, where it was given.
        let field = if sel.nodes >= gpus_per_node {
            "import.nodes".to_string()
        } else if sel.gpus_per_node.is_some() {
            "import.gpus_per_node".to_string()
        } else {
            format!("basic_cluster_config.json.{gpu}.gpus_per_node")
        };
        return Err(InputError::field(
            field,
            format!(
                "{} nodes of {gpus_per_node} GPUs are more GPUs than can be counted",
                sel.nodes
            ),
        ));
    }
    let memory = per_gpu
        .get("mem_per_gpu")
        .and_then(Value::as_f64)
        .filter(|m| *m > 0.0)
        .ok_or_else(|| {
            InputError::field(
                format!("basic_cluster_config.json.{gpu}.mem_per_gpu"),
                "missing or not a positive number of bytes",
            )
        })?;
    let zone = cluster_cfg
        .get("zone")
        .and_then(Value::as_str)
        .unwrap_or("us-central1-a");
    let inter = inter_bw
        .get(zone)
        .and_then(|z| z.get(gpu))
        .and_then(|g| g.get("1"))
        .and_then(|g| g.get(zone))
        .and_then(|z| z.get(gpu))
        .and_then(|g| g.get("1"))
        .and_then(saturation)
        .ok_or_else(|| {
            InputError::field(
                format!("multizone_bandwidths_het.json.{zone}.{gpu}.1.{zone}.{gpu}.1"),
                "missing: [[coefficients], saturation bytes/s] between two GPUs of two nodes",
            )
        })?;
    let intra_curve = intra_bw
        .get(gpu)
        .and_then(|g| g.get(gpus_per_node.to_string()))
        .and_then(saturation);
    let intra = intra_curve.unwrap_or(inter);
    let node_size_from = if gpus_per_node == configured {
        "basic_cluster_config.json".to_string()
    } else {
        format!("not basic_cluster_config.json's {configured}")
    };
    let intra_from = match intra_curve {
        None if gpus_per_node > 1 => format!(
            "; intra_node_bandwidths.json has no curve for {gpus_per_node} {gpu}, so the \
             inter-node bandwidth stands for it"
        ),
        _ => String::new(),
    };
    Ok(Machines {
        gpus_per_node,
        memory,
        intra,
        inter,
        node_size_from,
        intra_from,
    })
}

/// The saturation bandwidth (bytes/s) of a fitted curve `[[coefficients], saturation]`.
fn saturation(v: &Value) -> Option<f64> {
    v.get(1).and_then(Value::as_f64).filter(|b| *b > 0.0)
}
