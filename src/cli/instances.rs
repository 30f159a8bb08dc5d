//! The arguments of the commands that build instances: `import` and `generate`, with the cluster
//! and the training set-up they take on the command line.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The cluster given on the command line.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Number of GPUs.
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Memory per GPU, e.g. 16GiB (a bare number is bytes).
    #[arg(long)]
    pub memory: Option<String>,
    /// Bandwidth between GPUs of a node, e.g. 12GB/s (a bare number is bytes/s).
    #[arg(long)]
    pub bandwidth: Option<String>,
    /// GPUs per node (default: all in one node).
    #[arg(long)]
    pub gpus_per_node: Option<u32>,
    /// Bandwidth between nodes (default: --bandwidth).
    #[arg(long)]
    pub inter_node_bandwidth: Option<String>,
    /// Host<->device bandwidth for swapping, e.g. 16GB/s.
    #[arg(long)]
    pub pcie: Option<String>,
}

/// Schedule family on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleArg {
    /// Asynchronous periodic pipeline (1F1B*).
    Async,
    /// Synchronous 1F1B with a flush per batch.
    #[value(name = "1f1b")]
    OneFOneB,
    /// GPipe: all forwards, then all backwards.
    Gpipe,
}

/// Profile formats on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourceArg {
    /// PipeDream profiler graph.txt.
    Pipedream,
    /// Piper JSON.
    Piper,
    /// dnn-partitioning layer- or operator-graph JSON (operator graphs also get DawnPiper's
    /// `graph` extension).
    DnnPartitioning,
    /// Galvatron profiles and hardware configs, located by a search-config file (it carries the
    /// cluster; `--data-root` locates its files).
    Galvatron,
    /// Sailor's profiles, located by a training-config file of a Sailor checkout (it carries
    /// the cluster; needs `--gpu-type`, takes `--nodes` and `--batch`, the profiled micro-batch).
    Sailor,
}

/// `pipeplan import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Profile format.
    #[arg(long, value_enum)]
    pub from: SourceArg,
    /// Profile file; for `galvatron`, a JSON file holding a `config` object (the engine's
    /// arguments, and profile and hardware paths relative to `--data-root`), e.g. a golden run.
    pub file: Option<PathBuf>,
    /// The profile file given as an option (the engine's word for a Galvatron search config).
    #[arg(long, conflicts_with = "file", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Write the instance here instead of standard output (`-`: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// How a profile becomes an instance: `import`'s options, also taken by `solve --from`.
#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    /// Galvatron: the folder the config's paths are relative to (default: the config's folder);
    /// Sailor: the checkout's `sailor/` folder (default: the one above the config).
    #[arg(long)]
    pub data_root: Option<PathBuf>,
    /// Sailor: the GPU type to import (as Sailor names it: GH-96, A100-40, ...).
    #[arg(long)]
    pub gpu_type: Option<String>,
    /// Sailor: nodes of that GPU type (default 1), each with `--gpus-per-node` GPUs (default: the
    /// checkout's node size for the type).
    #[arg(long)]
    pub nodes: Option<u32>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Take GPUs, memory and bandwidth from the profile when it has them (Piper,
    /// dnn-partitioning); cluster options then override single fields.
    #[arg(long)]
    pub cluster_from_profile: bool,
    /// Instance name (default: derived from the file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Samples per micro-batch the profile was taken at (default: what the profile implies);
    /// Sailor: the profiled micro-batch size to import (default 1).
    #[arg(long, alias = "micro-batch")]
    pub batch: Option<u32>,
    /// Length of the profile's time unit in ms (default: the format's own).
    #[arg(long)]
    pub time_unit_ms: Option<f64>,
    /// Default schedule family written into the instance.
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// Micro-batches per batch for synchronous schedules.
    #[arg(long)]
    pub micro_batches: Option<u32>,
    /// Extra weight-sized optimizer copies (SGD 0, momentum 1, Adam 2).
    #[arg(long)]
    pub optimizer_state_factor: Option<f64>,
}

impl ProfileArgs {
    /// The first option given on the command line, as it is spelt there (`None`: none).
    pub fn first_given(&self) -> Option<&'static str> {
        let c = &self.cluster;
        [
            ("--data-root", self.data_root.is_some()),
            ("--gpu-type", self.gpu_type.is_some()),
            ("--nodes", self.nodes.is_some()),
            ("--gpus", c.gpus.is_some()),
            ("--memory", c.memory.is_some()),
            ("--bandwidth", c.bandwidth.is_some()),
            ("--gpus-per-node", c.gpus_per_node.is_some()),
            ("--inter-node-bandwidth", c.inter_node_bandwidth.is_some()),
            ("--pcie", c.pcie.is_some()),
            ("--cluster-from-profile", self.cluster_from_profile),
            ("--name", self.name.is_some()),
            ("--batch", self.batch.is_some()),
            ("--time-unit-ms", self.time_unit_ms.is_some()),
            ("--schedule", self.schedule.is_some()),
            ("--micro-batches", self.micro_batches.is_some()),
            (
                "--optimizer-state-factor",
                self.optimizer_state_factor.is_some(),
            ),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

/// Precision on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// 32-bit floats.
    Fp32,
    /// 16-bit floats.
    Fp16,
    /// bfloat16.
    Bf16,
    /// fp16 compute with fp32 master weights and optimizer states.
    Mixed,
}

/// Optimizer on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizerArg {
    /// SGD without momentum.
    Sgd,
    /// SGD with momentum.
    Momentum,
    /// Adam.
    Adam,
}

/// Device on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// NVIDIA V100.
    V100,
    /// NVIDIA A100.
    A100,
}

/// `pipeplan generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Model name (see `--list`).
    #[arg(required_unless_present = "list")]
    pub model: Option<String>,
    /// List the models and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Samples per micro-batch (default: the model's).
    #[arg(long)]
    pub batch: Option<u32>,
    /// Square image side in px, vision models (default: the model's).
    #[arg(long)]
    pub image_size: Option<u32>,
    /// Sequence length in tokens, language models (default: the model's).
    #[arg(long)]
    pub seq_len: Option<u32>,
    /// Decoder blocks of a decoder-only language model: gpt3-*, llama3-*, mixtral-8x7b
    /// (default: the model's; the chain has blocks + 2 layers).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// Precision (default: fp32 for CNNs, mixed for transformers).
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Optimizer (default: SGD for CNNs, Adam for transformers).
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerArg>,
    /// Device whose peak rate turns FLOPs into time.
    #[arg(long, value_enum, default_value = "v100")]
    pub device: DeviceArg,
    /// Peak rate in TFLOP/s, overriding the device's.
    #[arg(long)]
    pub tflops: Option<f64>,
    /// Fraction of the peak rate achieved, in (0, 1].
    #[arg(long)]
    pub efficiency: Option<f64>,
    /// Default schedule family (default: async for CNNs, 1f1b for transformers).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// Micro-batches per batch for synchronous schedules.
    #[arg(long)]
    pub micro_batches: Option<u32>,
    /// Instance name.
    #[arg(long)]
    pub name: Option<String>,
    /// Free text appended to the instance's `source`.
    #[arg(long)]
    pub note: Option<String>,
    /// Write the instance here instead of standard output (`-`: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}
