//! Generators: analytic layer chains of well-known networks, from FLOPs and shapes.
//!
//! [`generate`] builds a network layer by layer (one chain layer per convolution block,
//! bottleneck, Inception module, dense layer or transformer block), counts per layer and per
//! sample its multiply-accumulates (MACs), parameters, output elements and the elements its
//! backward pass keeps, then turns them into an [`Instance`]:
//!
//! - `forward` = 2 x MACs x micro-batch / (device peak rate x efficiency), `backward` = 2 x
//!   `forward`; only convolutions, linear layers and attention products are timed;
//! - `weights` = parameters x bytes per element of the precision;
//! - `output`, `saved` and `cut` = elements x micro-batch x bytes per element (dropout masks at one
//!   byte, token ids at eight);
//! - `training`: the optimizer's `optimizer_state_factor`, the precision, the schedule.
//!
//! Every assumption (device, rate, efficiency, precision, input size, granularity, accounting
//! rules, cluster) is written into the instance's `source` field. The instances shipped in the
//! repository's `instances/` directory are exactly [`shipped`].
//!
//! ```
//! use pipeplan_formulations::generate::{generate, GenerateOptions};
//! use pipeplan_formulations::instance::Cluster;
//! let cluster = Cluster::single_node(4, 8.0 * 1024f64.powi(3), 12e9);
//! let inst = generate(&GenerateOptions::new("resnet50", cluster)).unwrap();
//! assert_eq!(inst.name, "resnet50-1000px-b8-4gpu-8gib");
//! assert_eq!(inst.num_layers(), 18);
//! ```

mod cnn;
mod llm;
pub mod net;
mod shipped;
mod transformer;

pub use net::{InputKind, LayerSpec, Network};
pub use shipped::shipped;

use crate::error::InputError;
use crate::instance::{Cluster, Instance, Layer, Model, Precision, ScheduleKind, Training, FORMAT};
use cnn::ResNetCfg;

/// Broad family of a model, which fixes its default precision, optimizer and schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Convolutional network: fp32, SGD, async (the MadPipe setting).
    Cnn,
    /// Transformer: mixed precision, Adam, 1f1b.
    Transformer,
}

/// A model the generator knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    /// Name accepted by [`GenerateOptions::model`].
    pub name: &'static str,
    /// One line: architecture, parameters, granularity.
    pub description: &'static str,
    /// Family (default precision, optimizer and schedule).
    pub family: Family,
    /// Default micro-batch (samples).
    pub default_batch: u32,
    /// Default square image side (px) for vision models.
    pub default_image_size: Option<u32>,
    /// Default sequence length (tokens) for language models.
    pub default_seq_len: Option<u32>,
}

const fn cnn(name: &'static str, description: &'static str, batch: u32, img: u32) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Cnn,
        default_batch: batch,
        default_image_size: Some(img),
        default_seq_len: None,
    }
}

const fn vision_tf(
    name: &'static str,
    description: &'static str,
    batch: u32,
    img: u32,
) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Transformer,
        default_batch: batch,
        default_image_size: Some(img),
        default_seq_len: None,
    }
}

const fn lm(name: &'static str, description: &'static str, batch: u32, seq: u32) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Transformer,
        default_batch: batch,
        default_image_size: None,
        default_seq_len: Some(seq),
    }
}

static MODELS: [ModelInfo; 18] = [
    cnn("resnet50", "ResNet-50 (torchvision), 25.6M params; stem + 16 bottlenecks + head = 18 layers", 8, 1000),
    cnn("resnet101", "ResNet-101 (torchvision), 44.5M params; stem + 33 bottlenecks + head = 35 layers", 8, 1000),
    cnn("inception-v3", "Inception-v3 (torchvision, no aux classifier), 23.8M params; 5 stem convs + 11 modules + head = 17 layers", 8, 1000),
    cnn("densenet121", "DenseNet-121 (torchvision), 8.0M params; stem + 58 dense layers + 3 transitions + head = 63 layers", 8, 1000),
    cnn("wide-resnet", "Wide-ResNet WRN-101-2 (torchvision wide_resnet101_2), 126.9M params; stem + 33 bottlenecks + head = 35 layers", 8, 1000),
    cnn("wresnet-1b", "Wide-ResNet \"1B\" of Alpa's benchmark used by CAPTURE (50 layers, base 320 channels, 3x3 width x2), ~1.0B params; 18 layers", 32, 224),
    cnn("wresnet-2b", "Wide-ResNet \"2B\" of Alpa's benchmark used by CAPTURE (50 layers, base 448 channels, 3x3 width x2), ~2.0B params; 18 layers", 32, 224),
    lm("bert-large", "BERT-Large with pre-training heads, 336M params; embeddings + 24 encoder layers + heads = 26 layers", 8, 512),
    lm("gpt3-2.6b", "GPT-3 2.6B (the paper's \"2.7B\": 32 layers, h 2560), 2.65B params; embeddings + 32 blocks + head = 34 layers", 1, 2048),
    lm("gpt3-6.7b", "GPT-3 6.7B (32 layers, h 4096), 6.66B params; embeddings + 32 blocks + head = 34 layers", 1, 2048),
    lm("gpt3-175b", "GPT-3 175B (96 layers, h 12288, 96 heads), 174.6B params; embeddings + 96 blocks + head = 98 layers", 1, 2048),
    lm("llama3-8b", "Llama 3 8B (32 layers, h 4096, GQA 32/8 heads, SwiGLU 14336, untied head), 8.03B params; 34 layers", 1, 8192),
    lm("llama3-70b", "Llama 3 70B (80 layers, h 8192, GQA 64/8 heads, SwiGLU 28672, untied head), 70.6B params; 82 layers", 1, 8192),
    lm("llama3-405b", "Llama 3 405B (126 layers, h 16384, GQA 128/8 heads, SwiGLU 53248, untied head), 405.9B params; 128 layers", 1, 8192),
    lm("mixtral-8x7b", "Mixtral 8x7B (32 layers, h 4096, GQA 32/8 heads, 8 SwiGLU experts of 14336, top-2), 46.7B params (12.9B active); 34 layers", 1, 4096),
    lm("t5-512-4", "T5-512/4 of Galvatron-BMW: T5-Large (24+24 layers, h 1024), 738M params, encoder sequence 512, decoder sequence 4; 51 layers", 8, 512),
    vision_tf("vit-huge", "ViT-Huge/14 (32 layers, h 1280), 632M params, 224 px = 257 tokens; patch embedding + 32 layers + head = 34 layers", 32, 224),
    vision_tf("swin-huge", "Swin-Huge of Galvatron-BMW (2/2/26/2 blocks, widths 320..2560), 701M params; 37 layers", 32, 224),
];

/// Every model [`generate`] knows, with a one-line description.
pub fn models() -> &'static [ModelInfo] {
    &MODELS
}

/// Most decoder blocks [`GenerateOptions::blocks`] takes (chains of this length take a few MB).
pub const MAX_BLOCKS: u32 = 100_000;

/// The models whose block count [`GenerateOptions::blocks`] sets.
const DECODERS: [&str; 7] = [
    "gpt3-2.6b",
    "gpt3-6.7b",
    "gpt3-175b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "mixtral-8x7b",
];

fn model_info(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.name == name)
}

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
    fn name(self) -> &'static str {
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

fn bytes_per_element(p: Precision) -> f64 {
    match p {
        Precision::Fp32 => 4.0,
        Precision::Fp16 | Precision::Bf16 | Precision::Mixed => 2.0,
    }
}

fn precision_name(p: Precision) -> &'static str {
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
    /// Model name, one of [`models`].
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
    /// [`MAX_BLOCKS`]; default: the model's. The chain has blocks + 2 layers (embeddings, head),
    /// every block shaped as the model's: how `benches/scaling.rs` builds chains of 512 and
    /// 1,250 layers (`docs/limits.md`).
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
    /// rejected by [`generate`]).
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

fn known_models() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

fn fmt_num(x: f64) -> String {
    // Short and deterministic: integers without a fraction, others with up to 4 digits.
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Rounds a time to the nanosecond, so files stay readable.
fn round_ms(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Builds the analytic chain of a model (per sample, precision-free), with the image size or
/// sequence length of `opts` (or the model's default). Errors name the option at fault.
pub fn network(opts: &GenerateOptions) -> Result<Network, InputError> {
    let info = model_info(&opts.model).ok_or_else(|| {
        InputError::field(
            "model",
            format!(
                "unknown model {:?}; known models: {}",
                opts.model,
                known_models()
            ),
        )
    })?;
    if info.default_image_size.is_none() && opts.image_size.is_some() {
        return Err(InputError::field(
            "image_size",
            format!("{} takes no image; set seq_len instead", info.name),
        ));
    }
    if info.default_seq_len.is_none() && opts.seq_len.is_some() {
        return Err(InputError::field(
            "seq_len",
            format!("{} takes no sequence; set image_size instead", info.name),
        ));
    }
    let img = opts.image_size.or(info.default_image_size).unwrap_or(0) as u64;
    let seq = opts.seq_len.or(info.default_seq_len).unwrap_or(0) as u64;
    let blocks = |default: u64| -> Result<u64, InputError> {
        match opts.blocks {
            None => Ok(default),
            Some(b) if b == 0 || b > MAX_BLOCKS => Err(InputError::field(
                "blocks",
                format!("{b} decoder blocks; between 1 and {MAX_BLOCKS} are generated"),
            )),
            Some(b) => Ok(u64::from(b)),
        }
    };
    if opts.blocks.is_some() && !DECODERS.contains(&info.name) {
        return Err(InputError::field(
            "blocks",
            format!(
                "{} has a fixed layout; a block count is taken by the decoder-only language \
                 models ({})",
                info.name,
                DECODERS.join(", ")
            ),
        ));
    }
    let decoder = |m: &llm::Decoder| -> Result<Result<Network, String>, InputError> {
        let m = llm::Decoder {
            blocks: blocks(m.blocks)?,
            ..*m
        };
        Ok(llm::decoder(&m, seq))
    };
    let resnet = |title: &str, blocks, stem, w1, w2| {
        cnn::resnet(
            title,
            ResNetCfg {
                blocks,
                stem,
                w1,
                w2,
            },
            img,
        )
    };
    let built = match info.name {
        "resnet50" => resnet("ResNet-50 (torchvision)", [3, 4, 6, 3], 64, 1, 1),
        "resnet101" => resnet("ResNet-101 (torchvision)", [3, 4, 23, 3], 64, 1, 1),
        "wide-resnet" => resnet(
            "Wide-ResNet WRN-101-2 (torchvision wide_resnet101_2)",
            [3, 4, 23, 3],
            64,
            2,
            2,
        ),
        "wresnet-1b" => resnet(
            "Wide-ResNet 1B (Alpa benchmark / CAPTURE: ResNet-50 layout, 320 base channels, \
             3x3 convolutions widened x2)",
            [3, 4, 6, 3],
            320,
            1,
            2,
        ),
        "wresnet-2b" => resnet(
            "Wide-ResNet 2B (Alpa benchmark / CAPTURE: ResNet-50 layout, 448 base channels, \
             3x3 convolutions widened x2)",
            [3, 4, 6, 3],
            448,
            1,
            2,
        ),
        "inception-v3" => cnn::inception_v3(img),
        "densenet121" => cnn::densenet121(img),
        "vit-huge" => transformer::vit_huge(img),
        "swin-huge" => transformer::swin_huge(img),
        "bert-large" => transformer::bert_large(seq),
        "gpt3-2.6b" => transformer::gpt3(blocks(32)?, 2560, 32, seq),
        "gpt3-6.7b" => transformer::gpt3(blocks(32)?, 4096, 32, seq),
        "gpt3-175b" => transformer::gpt3(blocks(96)?, 12288, 96, seq),
        "llama3-8b" => decoder(&llm::LLAMA3_8B)?,
        "llama3-70b" => decoder(&llm::LLAMA3_70B)?,
        "llama3-405b" => decoder(&llm::LLAMA3_405B)?,
        "mixtral-8x7b" => decoder(&llm::MIXTRAL_8X7B)?,
        "t5-512-4" => transformer::t5_512_4(seq),
        other => Err(format!("no builder for {other} (a bug in pipeplan)")),
    };
    built.map_err(|msg| {
        if info.default_seq_len.is_some() {
            InputError::field("seq_len", format!("{} for {}", msg, info.name))
        } else {
            InputError::field(
                "image_size",
                format!("{img} px is too small for {}: {msg}", info.name),
            )
        }
    })
}

/// Generates the instance described by `opts`: the model's analytic chain, the cluster, and the
/// training settings, with every assumption stated in `source`. The result is validated.
///
/// Errors: an unknown model (field `model`, listing the known names), a zero batch (`batch`),
/// an input too small or too long for the model (`image_size`, `seq_len`), a non-positive rate
/// (`device_tflops`), an efficiency outside (0, 1] (`efficiency`), a zero `micro_batches`, or a
/// cluster the instance format rejects (`cluster.*`).
pub fn generate(opts: &GenerateOptions) -> Result<Instance, InputError> {
    let net = network(opts)?;
    let Some(info) = model_info(&opts.model) else {
        return Err(InputError::field("model", "unknown model"));
    };
    if opts.batch == 0 {
        return Err(InputError::field("batch", "must be at least 1 sample"));
    }
    let cnn_family = info.family == Family::Cnn;
    let precision = opts.precision.unwrap_or(if cnn_family {
        Precision::Fp32
    } else {
        Precision::Mixed
    });
    let optimizer = opts.optimizer.unwrap_or(if cnn_family {
        Optimizer::Sgd
    } else {
        Optimizer::Adam
    });
    let schedule = opts.schedule.unwrap_or(if cnn_family {
        ScheduleKind::Async
    } else {
        ScheduleKind::OneFOneB
    });
    let peak = opts
        .device_tflops
        .unwrap_or(opts.device.peak_tflops(precision));
    if !peak.is_finite() || peak <= 0.0 {
        return Err(InputError::field(
            "device_tflops",
            format!("must be a positive rate in TFLOP/s, found {peak}"),
        ));
    }
    let eff = opts.efficiency.unwrap_or(default_efficiency(precision));
    if !(eff > 0.0 && eff <= 1.0) {
        return Err(InputError::field(
            "efficiency",
            format!("must be in (0, 1], found {eff}"),
        ));
    }
    if opts.micro_batches == Some(0) {
        return Err(InputError::field("micro_batches", "must be at least 1"));
    }
    let micro_batches = match (opts.micro_batches, schedule) {
        (Some(m), _) => Some(m),
        (None, ScheduleKind::Async) => None,
        (None, _) => Some(4 * opts.cluster.gpus.max(1)),
    };
    let e = bytes_per_element(precision);
    let b = opts.batch as f64;
    let flops_per_ms = peak * eff * 1e12 / 1e3;
    let layers: Vec<Layer> = net
        .layers
        .iter()
        .map(|l| {
            let forward = round_ms(2.0 * l.macs * b / flops_per_ms);
            Layer {
                name: l.name.clone(),
                kind: Some(l.kind.to_string()),
                forward,
                backward: round_ms(2.0 * forward),
                weights: (l.params + l.tied_params) * e,
                output: l.output * b * e,
                saved: Some((l.saved * e + l.saved_fixed_bytes) * b),
                cut: l.cut.map(|c| c * b * e),
                tensor_parallel: Vec::new(),
            }
        })
        .collect();
    let input = match net.input_kind {
        InputKind::Image => net.input * b * e,
        InputKind::Tokens => net.input * b * 8.0,
    };
    let size = match (info.default_seq_len, info.default_image_size) {
        (Some(s), _) => format!("s{}", opts.seq_len.unwrap_or(s)),
        (None, Some(i)) => format!("{}px", opts.image_size.unwrap_or(i)),
        (None, None) => String::new(),
    };
    let gib = opts.cluster.memory / 1024f64.powi(3);
    // A block count other than the model's is part of the model's name and title.
    let (model, title) = match opts.blocks {
        Some(b) => (
            format!("{}-{b}blocks", info.name),
            format!("{} with {b} decoder blocks", net.title),
        ),
        None => (info.name.to_string(), net.title.clone()),
    };
    let name = opts.name.clone().unwrap_or_else(|| {
        format!(
            "{model}-{size}-b{}-{}gpu-{}gib",
            opts.batch,
            opts.cluster.gpus,
            fmt_num((gib * 100.0).round() / 100.0)
        )
    });
    let tied: f64 = net.layers.iter().map(|l| l.tied_params).sum();
    let state_factor = optimizer.state_factor(precision);
    let mut source =
        format!(
        "Generated by pipeplan (formulations::generate, model \"{}\"): {}, {} parameters{}; {}. \
         Time: forward = 2 x MACs of convolutions, linear layers and attention products \
         ({} GMACs per sample) x micro-batch / ({} {} peak {} TFLOP/s x efficiency {} = {} \
         TFLOP/s); normalisation, activations, softmax, pooling and lookups are not timed; \
         backward = 2 x forward. Sizes: {} at {} bytes per weight and per activation element; \
         weights = parameters x {} bytes{}; {}. Training: {}, optimizer_state_factor {}{}; \
         schedule {}.",
        info.name,
        title,
        fmt_num(net.params()),
        if tied > 0.0 {
            format!(" (+{} in tied copies)", fmt_num(tied))
        } else {
            String::new()
        },
        net.shape_note,
        fmt_num((net.macs() / 1e6).round() / 1e3),
        opts.device.name(),
        precision_name(precision),
        fmt_num(peak),
        fmt_num(eff),
        fmt_num(peak * eff),
        precision_name(precision),
        fmt_num(e),
        fmt_num(e),
        if tied > 0.0 { " (tied copies included)" } else { "" },
        net.accounting_note,
        optimizer.name(),
        fmt_num(state_factor),
        if precision == Precision::Mixed {
            " (fp32 master weights and optimizer states = 2 stored-weight copies each)"
        } else {
            ""
        },
        schedule,
    );
    if let Some(note) = &opts.note {
        source.push(' ');
        source.push_str(note);
    }
    let inst = Instance {
        format: FORMAT.to_string(),
        name,
        source,
        model: Model {
            name: title,
            batch: opts.batch,
            input,
            layers,
        },
        cluster: opts.cluster.clone(),
        training: Training {
            micro_batch: None,
            micro_batches,
            schedule,
            weight_versions: 2,
            optimizer_state_factor: state_factor,
            precision: Some(precision),
        },
        extensions: Default::default(),
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}
