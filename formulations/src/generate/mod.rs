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
mod models;
pub mod net;
mod options;
mod shipped;
mod transformer;

pub use models::{models, Family, ModelInfo, MAX_BLOCKS};
pub use net::{InputKind, LayerSpec, Network};
pub use options::{default_efficiency, Device, GenerateOptions, Optimizer};
pub use shipped::shipped;

use crate::error::InputError;
use crate::instance::{Instance, Layer, Model, Precision, ScheduleKind, Training, FORMAT};
use cnn::ResNetCfg;
use models::{known_models, model_info, DECODERS};
use options::{bytes_per_element, precision_name};

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
    check_shape_options(info, opts)?;
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

/// The options that do not apply to the model: an image size for a sequence model, a sequence
/// length for an image model, a block count for a fixed layout.
fn check_shape_options(info: &ModelInfo, opts: &GenerateOptions) -> Result<(), InputError> {
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
    Ok(())
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
    let r = Resolved::new(opts, info)?;
    let e = bytes_per_element(r.precision);
    let b = opts.batch as f64;
    let layers = chain_layers(&net, b, e, r.peak * r.eff * 1e12 / 1e3);
    let input = match net.input_kind {
        InputKind::Image => net.input * b * e,
        InputKind::Tokens => net.input * b * 8.0,
    };
    let (name, title) = names(opts, info, &net);
    let state_factor = r.optimizer.state_factor(r.precision);
    let mut source = source_note(opts, info, &net, &r, &title);
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
            micro_batches: r.micro_batches,
            schedule: r.schedule,
            weight_versions: 2,
            optimizer_state_factor: state_factor,
            precision: Some(r.precision),
        },
        extensions: Default::default(),
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}

/// The options a family defaults (precision, optimizer, schedule, micro-batches) and the
/// device's rate, resolved and checked.
struct Resolved {
    precision: Precision,
    optimizer: Optimizer,
    schedule: ScheduleKind,
    /// Peak rate (TFLOP/s).
    peak: f64,
    /// Fraction of the peak reached.
    eff: f64,
    micro_batches: Option<u32>,
}

impl Resolved {
    fn new(opts: &GenerateOptions, info: &ModelInfo) -> Result<Resolved, InputError> {
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
        Ok(Resolved {
            precision,
            optimizer,
            schedule,
            peak,
            eff,
            micro_batches,
        })
    }
}

/// One chain layer per network layer at `b` samples and `e` bytes per element; forward = 2 x
/// MACs / the rate, backward = 2 x forward.
fn chain_layers(net: &Network, b: f64, e: f64, flops_per_ms: f64) -> Vec<Layer> {
    net.layers
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
        .collect()
}

/// The instance's name (unless given) and the model's title; a block count other than the
/// model's is part of both.
fn names(opts: &GenerateOptions, info: &ModelInfo, net: &Network) -> (String, String) {
    let size = match (info.default_seq_len, info.default_image_size) {
        (Some(s), _) => format!("s{}", opts.seq_len.unwrap_or(s)),
        (None, Some(i)) => format!("{}px", opts.image_size.unwrap_or(i)),
        (None, None) => String::new(),
    };
    let gib = opts.cluster.memory / 1024f64.powi(3);
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
    (name, title)
}

/// The instance's `source`: how every number was derived.
fn source_note(
    opts: &GenerateOptions,
    info: &ModelInfo,
    net: &Network,
    r: &Resolved,
    title: &str,
) -> String {
    let (precision, optimizer, peak, eff) = (r.precision, r.optimizer, r.peak, r.eff);
    let e = bytes_per_element(precision);
    let schedule = r.schedule;
    let tied: f64 = net.layers.iter().map(|l| l.tied_params).sum();
    let state_factor = optimizer.state_factor(precision);
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
        if tied > 0.0 {
            " (tied copies included)"
        } else {
            ""
        },
        net.accounting_note,
        optimizer.name(),
        fmt_num(state_factor),
        if precision == Precision::Mixed {
            " (fp32 master weights and optimizer states = 2 stored-weight copies each)"
        } else {
            ""
        },
        schedule,
    )
}
