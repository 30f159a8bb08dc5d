//! What to generate: the options, and the optimizer, device and precision rules they name.

use super::models::model_info;
use crate::instance::{Cluster, Precision, ScheduleKind};

/// Optimizer, which fixes `training.optimizer_state_factor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// Plain SGD: no optimizer state.
    Sgd,
    /// SGD with momentum: one weight-sized buffer.
    Momentum,
    /// Adam: two weight-sized moments.
    Adam,
}

impl Optimizer {
    /// Name for the `source` field.
    pub(super) fn name(self) -> &'static str {
        match self {
            Optimizer::Sgd => "SGD without momentum",
            Optimizer::Momentum => "SGD with momentum",
            Optimizer::Adam => "Adam",
        }
    }

    fn states(self) -> f64 {
        match self {
            Optimizer::Sgd => 0.0,
            Optimizer::Momentum => 1.0,
            Optimizer::Adam => 2.0,
        }
    }

    /// Extra weight-sized copies (in units of the stored weights) under a precision: the
    /// optimizer's states, plus, under mixed precision, an fp32 master copy, all at 4 bytes per
    /// parameter against 2-byte stored weights. Adam, mixed: factor 2 x (1 + 2) = 6, so weights +
    /// gradients + states = 8 copies x 2 bytes = 16 bytes per parameter, as in ZeRO.
    pub fn state_factor(self, precision: Precision) -> f64 {
        match precision {
            Precision::Mixed => 2.0 * (1.0 + self.states()),
            _ => self.states(),
        }
    }
}

/// The GPU whose peak rates convert FLOPs to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// NVIDIA V100: 15.7 TFLOP/s fp32, 125 TFLOP/s fp16 tensor cores (SXM2 data sheet).
    V100,
    /// NVIDIA A100: 19.5 TFLOP/s fp32 (no TF32), 312 TFLOP/s fp16/bf16 tensor cores.
    A100,
}

impl Device {
    /// Name for the `source` field.
    pub fn name(self) -> &'static str {
        match self {
            Device::V100 => "V100",
            Device::A100 => "A100",
        }
    }

    /// Peak dense rate (TFLOP/s) for a precision (fp16, bf16 and mixed use tensor cores).
    pub fn peak_tflops(self, precision: Precision) -> f64 {
        match (self, precision) {
            (Device::V100, Precision::Fp32) => 15.7,
            (Device::V100, _) => 125.0,
            (Device::A100, Precision::Fp32) => 19.5,
            (Device::A100, _) => 312.0,
        }
    }
}

/// Default fraction of the peak rate achieved: 0.5 in fp32, 0.3 on tensor cores.
pub fn default_efficiency(precision: Precision) -> f64 {
    match precision {
        Precision::Fp32 => 0.5,
        _ => 0.3,
    }
}

pub(super) fn bytes_per_element(p: Precision) -> f64 {
    match p {
        Precision::Fp32 => 4.0,
        Precision::Fp16 | Precision::Bf16 | Precision::Mixed => 2.0,
    }
}

pub(super) fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Fp32 => "fp32",
        Precision::Fp16 => "fp16",
        Precision::Bf16 => "bf16",
        Precision::Mixed => "mixed",
    }
}

/// What to generate. Fields left `None` take the model's default (see each field).
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Model name, one of [`models`](super::models()).
    pub model: String,
    /// Samples per micro-batch (`model.batch`); [`GenerateOptions::new`] sets the model's
    /// default (8 for the CNNs, the MadPipe setting).
    pub batch: u32,
    /// Square image side (px) for vision models; default: the model's (1000 for the MadPipe
    /// CNNs, 224 for ViT, Swin and Alpa's Wide-ResNets). Rejected for language models.
    pub image_size: Option<u32>,
    /// Sequence length (tokens) for language models (the encoder's for T5-512/4, whose decoder
    /// always has 4 tokens); default: the model's (BERT 512, GPT-3 2048, T5 512).
    pub seq_len: Option<u32>,
    /// Decoder blocks of a decoder-only language model (GPT-3, Llama 3, Mixtral), between 1 and
    /// [`MAX_BLOCKS`](super::MAX_BLOCKS); default: the model's. The chain has blocks + 2 layers
    /// (embeddings, head), every block shaped as the model's: how `benches/scaling.rs` builds
    /// chains of 512 and 1,250 layers (`docs/limits.md`).
    pub blocks: Option<u32>,
    /// The cluster, copied into the instance.
    pub cluster: Cluster,
    /// Instance name; default `{model}-{image}px|s{seq}-b{batch}-{gpus}gpu-{memory}gib`.
    pub name: Option<String>,
    /// Precision; default fp32 for CNNs, mixed (fp16 weights and activations, fp32 master
    /// weights and optimizer states) for transformers.
    pub precision: Option<Precision>,
    /// Optimizer; default SGD without momentum for CNNs (MadPipe's 3W model-state memory with
    /// two weight versions), Adam for transformers.
    pub optimizer: Option<Optimizer>,
    /// Device whose peak rate turns FLOPs into time (default V100).
    pub device: Device,
    /// Peak rate (TFLOP/s) overriding the device's for the precision.
    pub device_tflops: Option<f64>,
    /// Fraction of the peak rate achieved, in (0, 1]; default [`default_efficiency`].
    pub efficiency: Option<f64>,
    /// Schedule family; default async for CNNs (the MadPipe setting), 1f1b for transformers.
    pub schedule: Option<ScheduleKind>,
    /// Micro-batches per batch for synchronous schedules; default 4 x GPUs for 1f1b / gpipe,
    /// none for async.
    pub micro_batches: Option<u32>,
    /// Free text appended to `source` (e.g. where the cluster's bandwidths come from).
    pub note: Option<String>,
}

impl GenerateOptions {
    /// Options for `model` on `cluster` with every default (an unknown model gets batch 1 and is
    /// rejected by [`generate`](super::generate())).
    pub fn new(model: &str, cluster: Cluster) -> GenerateOptions {
        GenerateOptions {
            model: model.to_string(),
            batch: model_info(model).map_or(1, |m| m.default_batch),
            image_size: None,
            seq_len: None,
            blocks: None,
            cluster,
            name: None,
            precision: None,
            optimizer: None,
            device: Device::V100,
            device_tflops: None,
            efficiency: None,
            schedule: None,
            micro_batches: None,
            note: None,
        }
    }
}
