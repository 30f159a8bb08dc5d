//! Instance format v1: a model (a chain of profiled layers), a cluster and training settings.
//!
//! The on-disk form is JSON (see `docs/instance-format.md` and `docs/instance.schema.json`).
//! Quantities are stored in canonical units (ms, bytes, bytes/s) and may be written with units
//! (see [`crate::units`]). [`Instance::from_json`] parses *and* validates; an instance that exists
//! as a value is meant to be valid (constructors in importers and generators call
//! [`Instance::validate`] too).

mod chain;

pub use chain::{Chain, MeasuredDegree};

use crate::error::InputError;
use crate::units;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version tag every instance file carries.
pub const FORMAT: &str = "pipeplan/instance@1";

/// Schema stand-in for quantities: a number in the canonical unit, or a string with a unit.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Quantity {
    /// In the canonical unit (ms, bytes or bytes/s depending on the field).
    Number(f64),
    /// With a unit, e.g. "16 GiB", "12 GB/s", "3.5 ms".
    Text(String),
}

/// A whole problem instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Must be `"pipeplan/instance@1"`.
    pub format: String,
    /// Short identifier, used in tables.
    #[serde(default)]
    pub name: String,
    /// Where the numbers come from and every assumption made (device rate, precision...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The network, as a chain of layers.
    pub model: Model,
    /// The machines.
    pub cluster: Cluster,
    /// How training runs.
    #[serde(default)]
    pub training: Training,
    /// Optional data some families need (`memory_profile`, `layer_types`, `graph`). When absent,
    /// the family derives it from the chain by a documented rule and says so in its solution.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
    /// The evaluator's free constants fitted to measured runs (`docs/calibration.md`); absent:
    /// the reference model unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::calibration::Calibration>,
}

impl Instance {
    /// The top-level fields of an instance file, as [`Instance`] serializes them.
    pub const FIELDS: [&'static str; 8] = [
        "format",
        "name",
        "source",
        "model",
        "cluster",
        "training",
        "extensions",
        "calibration",
    ];
}

/// The network as a chain of layers; times are per micro-batch of `batch` samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Model name.
    #[serde(default)]
    pub name: String,
    /// Micro-batch size (samples) at which layer times and activation sizes were profiled.
    pub batch: u32,
    /// Bytes of the model input for one micro-batch (a_0).
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub input: f64,
    /// The layers, in execution order.
    pub layers: Vec<Layer>,
}

/// One profiled layer of the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Layer name.
    pub name: String,
    /// Free-form kind ("conv", "attention", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Forward time for one micro-batch (ms).
    #[serde(with = "units::time")]
    #[schemars(with = "Quantity")]
    pub forward: f64,
    /// Backward time for one micro-batch (ms).
    #[serde(with = "units::time")]
    #[schemars(with = "Quantity")]
    pub backward: f64,
    /// Parameter bytes.
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub weights: f64,
    /// Bytes of the activation this layer sends on (the gradient sent back has the same size).
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub output: f64,
    /// Bytes kept for the backward pass; default: this layer's input (previous `output`).
    #[serde(
        default,
        with = "units::size::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Quantity>")]
    pub saved: Option<f64>,
    /// Bytes crossing a cut placed after this layer (DAGs linearized into chains); default: `output`.
    #[serde(
        default,
        with = "units::size::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Quantity>")]
    pub cut: Option<f64>,
    /// Measurements of this layer split over tensor-parallel groups: where a plan runs the
    /// layer at one of these degrees, the evaluator takes these numbers instead of dividing by
    /// the degree (and adds no all-reduce: the measured times include it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_parallel: Vec<TensorParallel>,
}

/// One layer measured on a tensor-parallel group of `degree` GPUs; times per micro-batch of
/// `model.batch` samples, sizes per GPU of the group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TensorParallel {
    /// GPUs in the tensor-parallel group (at least 2).
    pub degree: u32,
    /// Forward time (ms), the group's all-reduces included.
    #[serde(with = "units::time")]
    #[schemars(with = "Quantity")]
    pub forward: f64,
    /// Backward time (ms), the group's all-reduces included.
    #[serde(with = "units::time")]
    #[schemars(with = "Quantity")]
    pub backward: f64,
    /// Parameter bytes on each GPU of the group.
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub weights: f64,
    /// Bytes each GPU keeps for the backward pass.
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub saved: f64,
}

/// The GPUs and their links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Number of GPUs.
    pub gpus: u32,
    /// GPUs per node (default: all GPUs in one node). Must divide `gpus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<u32>,
    /// The GPU model the profile was measured on, as the profiler names it (e.g. `GH-96`).
    /// Informational; a plan file that names its GPUs is compared with it, and a calibration
    /// fitted to runs on other models is warned of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Memory of each GPU (bytes).
    #[serde(with = "units::size")]
    #[schemars(with = "Quantity")]
    pub memory: f64,
    /// Link bandwidths.
    pub bandwidth: Bandwidth,
    /// Host<->device bandwidth, for swapping (bytes/s).
    #[serde(
        default,
        with = "units::bandwidth::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Quantity>")]
    pub pcie: Option<f64>,
}

/// Point-to-point bandwidths (bytes/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bandwidth {
    /// Between two GPUs of one node.
    #[serde(with = "units::bandwidth")]
    #[schemars(with = "Quantity")]
    pub intra_node: f64,
    /// Between GPUs of different nodes (default: `intra_node`).
    #[serde(
        default,
        with = "units::bandwidth::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Quantity>")]
    pub inter_node: Option<f64>,
}

/// The pipeline schedule family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleKind {
    /// Asynchronous periodic pipeline (PipeDream, MadPipe): 1F1B* or an explicit pattern.
    Async,
    /// Synchronous one-forward-one-backward with a flush every batch (DAPPLE, Megatron).
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Synchronous: all forwards then all backwards, flush every batch.
    Gpipe,
}

impl std::fmt::Display for ScheduleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScheduleKind::Async => "async",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Gpipe => "gpipe",
        })
    }
}

/// Numeric precision of weights and activations (informational; sizes are already in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats.
    Fp32,
    /// 16-bit floats.
    Fp16,
    /// bfloat16.
    Bf16,
    /// Mixed precision (fp16/bf16 compute, fp32 master weights).
    Mixed,
}

/// Training settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Samples per micro-batch (default: `model.batch`). Times and activation sizes scale
    /// linearly from `model.batch` to this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_batch: Option<u32>,
    /// Micro-batches per batch (m) for synchronous schedules; default: the number of GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_batches: Option<u32>,
    /// Default schedule family for plans that do not choose one.
    #[serde(default = "default_schedule")]
    pub schedule: ScheduleKind,
    /// Weight versions kept by asynchronous schedules (PipeDream-2BW / MadPipe: 2).
    /// Synchronous schedules always keep 1.
    #[serde(default = "default_weight_versions")]
    pub weight_versions: u32,
    /// Extra weight-sized optimizer copies: SGD 0, momentum 1, Adam 2.
    #[serde(default)]
    pub optimizer_state_factor: f64,
    /// Precision (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
}

fn default_schedule() -> ScheduleKind {
    ScheduleKind::Async
}
fn default_weight_versions() -> u32 {
    2
}

impl Default for Training {
    fn default() -> Self {
        Training {
            micro_batch: None,
            micro_batches: None,
            schedule: default_schedule(),
            weight_versions: default_weight_versions(),
            optimizer_state_factor: 0.0,
            precision: None,
        }
    }
}

impl Layer {
    /// A layer with these times (ms) and sizes (bytes); no kind, `saved` and `cut` at their
    /// defaults.
    pub fn new(
        name: impl Into<String>,
        forward: f64,
        backward: f64,
        weights: f64,
        output: f64,
    ) -> Layer {
        Layer {
            name: name.into(),
            kind: None,
            forward,
            backward,
            weights,
            output,
            saved: None,
            cut: None,
            tensor_parallel: Vec::new(),
        }
    }
}

impl Cluster {
    /// One node of `gpus` GPUs with `memory` bytes each, linked at `bandwidth` bytes/s; no
    /// inter-node bandwidth, no host link.
    pub fn single_node(gpus: u32, memory: f64, bandwidth: f64) -> Cluster {
        Cluster {
            gpus,
            gpus_per_node: None,
            gpu: None,
            memory,
            bandwidth: Bandwidth {
                intra_node: bandwidth,
                inter_node: None,
            },
            pcie: None,
        }
    }
}

impl Instance {
    /// An instance of the current [`FORMAT`] named `name` (the model too), profiled at `batch`
    /// samples per micro-batch with `input` bytes of model input; empty `source`, default
    /// training, no extensions. Not validated: call [`Instance::validate`].
    pub fn new(
        name: impl Into<String>,
        batch: u32,
        input: f64,
        layers: Vec<Layer>,
        cluster: Cluster,
    ) -> Instance {
        let name = name.into();
        Instance {
            format: FORMAT.to_string(),
            name: name.clone(),
            source: String::new(),
            model: Model {
                name,
                batch,
                input,
                layers,
            },
            cluster,
            training: Training::default(),
            extensions: BTreeMap::new(),
            calibration: None,
        }
    }

    /// Parses an instance from JSON text and validates it. Errors name the offending field.
    pub fn from_json(text: &str) -> Result<Instance, InputError> {
        // Read the version tag first: a file of another major version should be rejected for its
        // version, not for whichever of its fields v1 does not know.
        let doc: serde_json::Value = crate::error::parse_json(text, "instance")?;
        crate::validate::check_format_tag(&doc)?;
        let inst: Instance = crate::error::parse_json(text, "instance")?;
        inst.validate()?;
        Ok(inst)
    }

    /// Reads and validates an instance file.
    pub fn from_path(path: &std::path::Path) -> Result<Instance, InputError> {
        let text = crate::error::read_text(path)?;
        Instance::from_json(&text).map_err(|e| e.in_file(path))
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("instances serialize")
    }

    /// Checks every field; see [`crate::validate`].
    pub fn validate(&self) -> Result<(), InputError> {
        crate::validate::validate(self)
    }

    /// Number of layers L.
    pub fn num_layers(&self) -> usize {
        self.model.layers.len()
    }

    /// Samples per micro-batch actually trained.
    pub fn micro_batch(&self) -> u32 {
        self.training.micro_batch.unwrap_or(self.model.batch)
    }

    /// The same instance training micro-batches of `b` samples.
    pub fn with_micro_batch(&self, b: u32) -> Instance {
        let mut i = self.clone();
        i.training.micro_batch = Some(b);
        i
    }

    /// Micro-batches per batch (m) for synchronous schedules.
    pub fn micro_batches(&self) -> u32 {
        self.training
            .micro_batches
            .unwrap_or(self.cluster.gpus)
            .max(1)
    }

    /// Factor from profiled per-micro-batch quantities to the trained micro-batch size.
    pub fn batch_scale(&self) -> f64 {
        self.micro_batch() as f64 / self.model.batch as f64
    }

    /// GPUs per node (all GPUs when not given).
    pub fn gpus_per_node(&self) -> u32 {
        self.cluster.gpus_per_node.unwrap_or(self.cluster.gpus)
    }

    /// Bandwidth inside a node that `traffic` reaches: the nominal one scaled by the
    /// calibration's efficiency for that traffic.
    pub fn intra_node_bandwidth(&self, traffic: Traffic) -> f64 {
        self.cluster.bandwidth.intra_node * self.calibration().efficiency(traffic)
    }

    /// Bandwidth between nodes (default: inside a node) that `traffic` reaches.
    pub fn inter_node_bandwidth(&self, traffic: Traffic) -> f64 {
        let nominal = self
            .cluster
            .bandwidth
            .inter_node
            .unwrap_or(self.cluster.bandwidth.intra_node);
        nominal * self.calibration().efficiency(traffic)
    }

    /// Node index of a GPU.
    pub fn node_of(&self, gpu: u32) -> u32 {
        gpu / self.gpus_per_node()
    }

    /// Bandwidth `traffic` reaches over the slowest link inside a set of GPUs (intra-node if
    /// they share a node).
    pub fn group_bandwidth(&self, gpus: &[u32], traffic: Traffic) -> f64 {
        let first = gpus.first().map(|&g| self.node_of(g));
        if gpus.iter().all(|&g| Some(self.node_of(g)) == first) {
            self.intra_node_bandwidth(traffic)
        } else {
            self.inter_node_bandwidth(traffic)
        }
    }

    /// Bandwidth of a point-to-point transfer between two GPUs.
    pub fn link_bandwidth(&self, a: u32, b: u32) -> f64 {
        self.group_bandwidth(&[a, b], Traffic::P2p)
    }

    /// The chain in canonical per-micro-batch form at the trained micro-batch size.
    pub fn chain(&self) -> Chain {
        Chain::new(self)
    }
}

/// What kind of traffic a transfer is, for the share of a link's bandwidth it reaches
/// (`docs/calibration.md`: the calibration's `p2p_efficiency` and `collective_efficiency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// A stage-to-stage send of activations or gradients.
    P2p,
    /// A collective among a group: all-reduce, all-gather, all-to-all.
    Collective,
}

/// JSON Schema of the instance format, generated from the types.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Instance)).expect("schema serializes")
}
