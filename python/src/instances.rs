//! Making instances: from an analytic model (as `pipeplan generate`) or another tool's profile
//! (as `pipeplan import`).

use crate::errors::input_error;
use crate::instance::PyInstance;
use crate::json;
use pipeplan_formulations::generate::{self, Device, GenerateOptions, Optimizer};
use pipeplan_formulations::import::request::unemulated_arguments;
use pipeplan_formulations::import::{ClusterSpec, ImportRequest, Source};
use pipeplan_formulations::instance::{Precision, ScheduleKind};
use pipeplan_formulations::InputError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// The generator's models: name, description, default micro-batch, image size, sequence length.
#[pyfunction]
pub(crate) fn models() -> String {
    let entries: Vec<serde_json::Value> = generate::models()
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name,
                "description": m.description,
                "batch": m.default_batch,
                "image_size": m.default_image_size,
                "seq_len": m.default_seq_len,
            })
        })
        .collect();
    json(&entries)
}

/// A value of the instance format's enums (`"async"`, `"fp32"`) by its JSON name.
pub(crate) fn format_value<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    field: &str,
    value: Option<String>,
) -> PyResult<Option<T>> {
    value
        .map(|v| {
            serde_json::from_value(serde_json::Value::String(v.clone())).map_err(|_| {
                input_error(
                    py,
                    &InputError::field(field, format!("unknown value {v:?}")),
                )
            })
        })
        .transpose()
}

/// The cluster keywords as the CLI's flags (a dict with every key).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct Cluster {
    gpus: Option<u32>,
    memory: Option<String>,
    bandwidth: Option<String>,
    gpus_per_node: Option<u32>,
    inter_node_bandwidth: Option<String>,
    pcie: Option<String>,
}

impl From<Cluster> for ClusterSpec {
    fn from(c: Cluster) -> ClusterSpec {
        ClusterSpec {
            gpus: c.gpus,
            memory: c.memory,
            bandwidth: c.bandwidth,
            gpus_per_node: c.gpus_per_node,
            inter_node_bandwidth: c.inter_node_bandwidth,
            pcie: c.pcie,
        }
    }
}

/// Generates an instance from an analytic model (as `pipeplan generate`). Keywords are the
/// CLI's flags; `cluster` is a dict of the cluster flags (quantities as text).
#[pyfunction]
#[pyo3(signature = (model, cluster, batch, image_size, seq_len, blocks, precision, optimizer,
                    device, tflops, efficiency, schedule, micro_batches, name, note))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn generate_instance(
    py: Python<'_>,
    model: &str,
    cluster: Cluster,
    batch: Option<u32>,
    image_size: Option<u32>,
    seq_len: Option<u32>,
    blocks: Option<u32>,
    precision: Option<String>,
    optimizer: Option<String>,
    device: &str,
    tflops: Option<f64>,
    efficiency: Option<f64>,
    schedule: Option<String>,
    micro_batches: Option<u32>,
    name: Option<String>,
    note: Option<String>,
) -> PyResult<PyInstance> {
    let bad = |field: &str, v: &str, expected: &str| {
        input_error(
            py,
            &InputError::field(field, format!("unknown value {v:?}; expected {expected}")),
        )
    };
    let spec = ClusterSpec::from(cluster);
    let mut o = GenerateOptions::new(model, spec.cluster().map_err(|e| input_error(py, &e))?);
    if let Some(b) = batch {
        o.batch = b;
    }
    o.image_size = image_size;
    o.seq_len = seq_len;
    o.blocks = blocks;
    o.precision = format_value::<Precision>(py, "--precision", precision)?;
    o.optimizer = match optimizer.as_deref() {
        None => None,
        Some("sgd") => Some(Optimizer::Sgd),
        Some("momentum") => Some(Optimizer::Momentum),
        Some("adam") => Some(Optimizer::Adam),
        Some(v) => return Err(bad("--optimizer", v, "sgd, momentum or adam")),
    };
    o.device = match device {
        "v100" => Device::V100,
        "a100" => Device::A100,
        v => return Err(bad("--device", v, "v100 or a100")),
    };
    o.device_tflops = tflops;
    o.efficiency = efficiency;
    o.schedule = format_value::<ScheduleKind>(py, "--schedule", schedule)?;
    o.micro_batches = micro_batches;
    o.name = name;
    o.note = note;
    generate::generate(&o)
        .map(|inner| PyInstance { inner })
        .map_err(|e| input_error(py, &e))
}

/// Imports a profile of another tool (as `pipeplan import`); returns the instance and the warning
/// the CLI prints about engine arguments the import does not emulate, if any.
#[pyfunction]
#[pyo3(signature = (source, path, cluster, cluster_from_profile, name, batch, time_unit_ms,
                    data_root, gpu_type, nodes, schedule, micro_batches, optimizer_state_factor))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn import_profile(
    py: Python<'_>,
    source: &str,
    path: PathBuf,
    cluster: Cluster,
    cluster_from_profile: bool,
    name: Option<String>,
    batch: Option<u32>,
    time_unit_ms: Option<f64>,
    data_root: Option<PathBuf>,
    gpu_type: Option<String>,
    nodes: Option<u32>,
    schedule: Option<String>,
    micro_batches: Option<u32>,
    optimizer_state_factor: Option<f64>,
) -> PyResult<(PyInstance, Option<String>)> {
    let source: Source = source.parse().map_err(|e| input_error(py, &e))?;
    let mut req = ImportRequest::new(source, path);
    req.cluster = cluster.into();
    req.cluster_from_profile = cluster_from_profile;
    req.name = name;
    req.batch = batch;
    req.time_unit_ms = time_unit_ms;
    req.data_root = data_root;
    req.gpu_type = gpu_type;
    req.nodes = nodes;
    req.schedule = format_value::<ScheduleKind>(py, "--schedule", schedule)?;
    req.micro_batches = micro_batches;
    req.optimizer_state_factor = optimizer_state_factor;
    let inst = req.import().map_err(|e| input_error(py, &e))?;
    let warning = unemulated_arguments(&inst).map(|note| format!("{}: {note}", req.file.display()));
    Ok((PyInstance { inner: inst }, warning))
}
