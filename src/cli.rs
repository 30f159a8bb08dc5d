//! Command-line grammar (clap derive). Every command reads and writes the formats documented in
//! `docs/`; `--json` and `--csv` switch the output from the human table to a machine format.

pub use crate::args::TimeLimit;
use clap::{Args, Parser, Subcommand, ValueEnum};
use pipeplan_formulations::export::Format as ExportFormat;
use pipeplan_formulations::plan_from::PlanFormat;
use std::path::PathBuf;

/// Memory-aware partitioning of DNN training across GPUs: research planners, exact references
/// and one neutral evaluator over one instance format.
///
/// Exit codes: 0 success; 1 the solver found no feasible plan (or, for `compare`, no algorithm
/// produced a plan); 2 bad input (unreadable or invalid file, bad option, unsupported algorithm,
/// a plan the runtime of `export` cannot run).
#[derive(Debug, Parser)]
#[command(name = "pipeplan", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Solve one instance with one algorithm; print the plan, its claimed and evaluated metrics.
    Solve(SolveArgs),
    /// Run many algorithms on one or more instances and print them side by side.
    Compare(CompareArgs),
    /// Judge a plan file against an instance with the neutral evaluator.
    Evaluate(EvaluateArgs),
    /// Write a plan in a training runtime's format (galvatron, pipedream, megatron, torchtitan,
    /// deepspeed).
    Export(ExportArgs),
    /// Check instance files; print one line per file.
    Validate(ValidateArgs),
    /// Make an instance from a profile of another tool.
    Import(ImportArgs),
    /// Make an instance from an analytic model of a known network.
    Generate(GenerateArgs),
    /// List the algorithms with one-line descriptions (`--params`: their settings).
    Algorithms(AlgorithmsArgs),
    /// Print the JSON Schema of the instance format (or of plans / solutions).
    Schema(SchemaArgs),
    /// Print the profiling runs (partitionings) a CAPTURE / mCAP / CAPSlog user must measure.
    ProfilePlan(ProfilePlanArgs),
    /// The largest batch size whose plan fits, for every algorithm (DawnPiper's metric).
    MaxBatch(MaxBatchArgs),
    /// The evaluator against training runs measured on real GPUs (Sailor's plan files):
    /// predicted and measured iteration time and peak memory, per run and per data set.
    Accuracy(AccuracyArgs),
    /// Fit the evaluator's constants to measured runs; report leave-one-out errors.
    Calibrate(CalibrateArgs),
    /// Write the simulator's timeline of a plan as a Chrome trace (Perfetto, chrome://tracing).
    Trace(TraceArgs),
    /// Draw a plan: its schedule as a Gantt chart above each GPU's memory (SVG or PNG).
    Plot(PlotArgs),
    /// Why a plan's period or iteration and memory are what they are, stage by stage.
    Explain(ExplainArgs),
    /// Re-run a published experiment on pipeplan's instances (see `reproduce --help`).
    #[command(subcommand)]
    Reproduce(Reproduce),
    /// Versioned benchmark suites: generate, check, list (docs/suite.md).
    #[command(subcommand)]
    Suite(crate::commands::suite::SuiteCommand),
    /// Benchmark sweeps: many runs stored in SQLite (resumable), Slurm job arrays, merge,
    /// reports with performance profiles (docs/sweep.md).
    #[command(subcommand)]
    Sweep(crate::commands::sweep::args::Sweep),
}

/// Published experiments `pipeplan reproduce` re-runs.
#[derive(Debug, Subcommand)]
pub enum Reproduce {
    /// MadPipe paper, Fig. 7: period(pipedream) / period(madpipe) per memory size, geometric mean
    /// over P and beta, on ResNet-50/101, Inception-v3 and DenseNet-121 at 1000 px, batch 8.
    MadpipeFig7(ReproduceArgs),
}

/// The grid of `reproduce madpipe-fig7` (defaults: the paper's).
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Networks (generator names).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "resnet50,resnet101,inception-v3,densenet121"
    )]
    pub models: Vec<String>,
    /// GPU counts P.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5,6,7,8")]
    pub gpus: Vec<u32>,
    /// Memory sizes per GPU, GiB.
    #[arg(
        long = "memory",
        value_delimiter = ',',
        default_value = "3,4,5,6,7,8,9,10,11,12,13,14,15,16"
    )]
    pub memory_gib: Vec<f64>,
    /// Link bandwidths beta, GB/s.
    #[arg(long = "bandwidth", value_delimiter = ',', default_value = "12,24")]
    pub bandwidth_gbs: Vec<f64>,
    /// The algorithm in the numerator.
    #[arg(long, default_value = "pipedream")]
    pub baseline: String,
    /// The algorithm in the denominator.
    #[arg(long, default_value = "madpipe")]
    pub reference: String,
    /// Time limit per solve.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = crate::args::time_limit)]
    pub time_limit: TimeLimit,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Output format switches shared by the commands that print results.
#[derive(Debug, Clone, Copy, Args)]
pub struct OutputArgs {
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV instead of a table.
    #[arg(long)]
    pub csv: bool,
}

/// `pipeplan algorithms`.
#[derive(Debug, Clone, Args)]
pub struct AlgorithmsArgs {
    /// List every algorithm's settings (`--set KEY=VALUE`): type, default and what it does.
    #[arg(long)]
    pub params: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Options every solve takes.
#[derive(Debug, Clone, Args)]
pub struct SolveFlags {
    /// Time limit per solve for solvers that can stop early, in seconds (or with a unit: 500ms,
    /// 2min); `none` for no limit.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = crate::args::time_limit)]
    pub time_limit: TimeLimit,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Number of pipeline stages, for algorithms that take it as given (default: one per GPU).
    #[arg(long)]
    pub stages: Option<usize>,
    /// Algorithm-specific setting KEY=VALUE (repeatable); unknown keys are rejected.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::args::key_value)]
    pub set: Vec<(String, String)>,
}

/// `pipeplan solve`.
#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Instance file (JSON, format pipeplan/instance@1); `-` reads standard input. With
    /// `--from`, a profile file instead, imported first.
    pub instance: PathBuf,
    /// Algorithm name (see `pipeplan algorithms`).
    #[arg(long, short, visible_alias = "algos")]
    pub algo: String,
    /// Also write the solution as JSON to this file.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub flags: SolveFlags,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// Read INSTANCE as a profile of this format and import it in the same process, as
    /// `pipeplan import --from FORMAT INSTANCE [options below]` would (one start-up instead of
    /// two for `import | solve`).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: Option<SourceArg>,
    #[command(flatten, next_help_heading = "Import options (with --from)")]
    pub profile: ProfileArgs,
}

/// `pipeplan compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Instance files (`-` reads standard input).
    #[arg(required = true)]
    pub instances: Vec<PathBuf>,
    /// Comma-separated algorithm names (repeatable; default: every algorithm; those that do not
    /// support an instance are listed with the reason).
    #[arg(long, short, visible_alias = "algo", value_delimiter = ',')]
    pub algos: Vec<String>,
    /// Also write the full comparison (every solution) as JSON to this file.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Every column of the table, claimed and evaluated side by side (default: the columns that
    /// fit 120 characters).
    #[arg(long)]
    pub wide: bool,
    /// Also write a self-contained HTML report (sortable tables, charts, notes) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub flags: SolveFlags,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// `pipeplan evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// Plan file: a plan (`{"stages": ..., "schedule": ...}`) or a solution printed by
    /// `pipeplan solve --json` (its `plan` is used); with `--plan-from`, the runtime's file.
    pub plan: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Read the plan file in a runtime's format: `galvatron` (the engine's output config),
    /// `pipedream` (a runtime configuration, with `--modules`) or `sailor` (a Sailor plan file,
    /// e.g. a measured run's `plan_config_*.json`).
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<PlanFormat>())]
    pub plan_from: Option<PlanFormat>,
    /// With `--plan-from pipedream`: the partitioned graph (`stage_id=N` per node) whose stages
    /// are the runtime's modules.
    #[arg(long, value_name = "FILE", requires = "plan_from")]
    pub modules: Option<PathBuf>,
    /// With `--plan-from sailor`: mend a plan whose stages list one layer twice in place of the
    /// one missing, when exactly one such change makes it valid, and say so on standard error
    #[arg(long, requires = "plan_from")]
    pub repair_layers: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// The evaluator's constants, for every command that evaluates.
#[derive(Debug, Clone, Default, Args)]
pub struct CalibrationArgs {
    /// Calibration file (written by `pipeplan calibrate`): the evaluator judges, and the
    /// algorithms plan, with its constants (docs/calibration.md).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

/// `pipeplan trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Plan file, or a solution file from `solve -o` / `solve --json`.
    pub plan: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Write the trace here (default: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Asynchronous plans: periods shown after the warm-up.
    #[arg(long, default_value_t = 3)]
    pub periods: usize,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// `pipeplan explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Plan file, or a solution file from `solve -o`.
    pub plan: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Image formats of `plot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageFormat {
    /// Scalable vector graphics.
    Svg,
    /// Portable network graphics.
    Png,
}

/// `pipeplan plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Plan file, or a solution file from `solve -o` (its claimed memory is drawn too).
    pub plan: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Image file to write.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Image format (default: from the output's extension, else SVG).
    #[arg(long, value_enum)]
    pub format: Option<ImageFormat>,
    /// Asynchronous plans: periods shown after the warm-up.
    #[arg(long, default_value_t = 3)]
    pub periods: usize,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// Measured runs: where they are and how to read them.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// Folders holding measured runs (Sailor `plan_config_*.json`, searched recursively) or
    /// plan files.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The Sailor checkout (`sailor/` folder with `Planner/` and `providers/`; default: the
    /// one above each run).
    #[arg(long)]
    pub sailor_root: Option<PathBuf>,
    /// The model of every run, as its training config names it (default: the folder on the
    /// run's path that starts a model's name, e.g. `GPT-NEO` for `GPT-Neo-2.7`).
    #[arg(long)]
    pub model: Option<String>,
    /// Mend a plan whose stages list one layer twice in place of the one missing (a typo such
    /// as `18, 29, 20` for 19), when exactly one such change makes it valid, and list what was
    /// mended; default: such a plan is reported invalid and left out
    #[arg(long)]
    pub repair_layers: bool,
}

/// `pipeplan accuracy`.
#[derive(Debug, Args)]
pub struct AccuracyArgs {
    #[command(flatten)]
    pub runs: RunsArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `pipeplan calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub runs: RunsArgs,
    /// Write the calibration file here (default: standard output, the summary on standard
    /// error).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The runtime's share of a stage-to-stage transfer hidden behind compute, kept as given
    /// (the runs cannot tell it from a slower link): 0 for blocking sends, as Megatron-LM's and
    /// DeepSpeed's pipelines do; 1 for transfers fully overlapped
    #[arg(long, default_value_t = 0.0, value_name = "SHARE")]
    pub p2p_overlap: f64,
}

/// `pipeplan export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Plan file: a plan, or a solution (`solve --json` / `solve -o`; a Galvatron planner's
    /// solution also carries its vocabulary tp, embedding sharding and global batch).
    pub solution: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Runtime format: galvatron, pipedream, megatron, torchtitan or deepspeed.
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<ExportFormat>())]
    pub to: ExportFormat,
    /// Write the file here instead of standard output (`-`: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// `pipeplan validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Instance files (`-` reads standard input).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

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
    /// Sailor: nodes of that GPU type (default 1; GPUs per node come from the checkout).
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

/// Which schema `pipeplan schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// The instance format.
    Instance,
    /// A plan (input of `evaluate`).
    Plan,
    /// A solution (output of `solve --json`).
    Solution,
}

/// `pipeplan schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema.
    #[arg(value_enum, default_value = "instance")]
    pub kind: SchemaKind,
    /// Write it here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Which profiling scheme to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// mCAP: pipeline-only runs (Description 1 of the CAPTURE paper), about L + 1 per batch size.
    Mcap,
    /// CAPSlog: trimmed pipeline-only runs with at most two layers per GPU.
    Capslog,
    /// CAPTURE: mCAP's runs plus 2- and 4-way dp and tp sub-mesh runs.
    Capture,
}

/// Options of `profile-plan`.
#[derive(Debug, Args)]
pub struct ProfilePlanArgs {
    /// Instance file (its chain length, GPUs, GPUs per node and micro-batch are used).
    pub instance: PathBuf,
    /// Profiling scheme.
    #[arg(long, value_enum, default_value = "capture")]
    pub method: MethodArg,
    /// Target batch size (samples per micro-batch; default: the instance's micro-batch). Runs
    /// are planned at a quarter and a half of it (the paper's default).
    #[arg(long)]
    pub batch: Option<f64>,
    /// The two profiling batch sizes instead (samples per micro-batch, e.g. `1,2`, in either
    /// order): runnable sizes when a quarter and a half of the target are not whole samples.
    /// The predictor fits a line through them and reads it at the target.
    #[arg(
        long,
        value_name = "LOW,HIGH",
        value_delimiter = ',',
        num_args = 1,
        allow_hyphen_values = true,
        conflicts_with = "batch"
    )]
    pub profile_batches: Option<Vec<f64>>,
    /// Output format.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Options of `max-batch`.
#[derive(Debug, Args)]
pub struct MaxBatchArgs {
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Algorithms (repeat or comma-separate; default: all that support the instance).
    #[arg(long = "algo", visible_alias = "algos", value_delimiter = ',')]
    pub algos: Vec<String>,
    /// One row per value of a setting, KEY=V1,V2,... (repeatable), for the algorithms that take
    /// KEY. Default: the values each algorithm declares worth comparing (DawnPiper's memopt on
    /// and off; see `pipeplan algorithms --params`).
    #[arg(long, value_name = "KEY=V1,V2", value_parser = crate::args::key_value)]
    pub vary: Vec<(String, String)>,
    /// Time limit of every solve, in seconds (or with a unit: 500ms, 2min); `none` for no limit.
    #[arg(long, value_name = "SECONDS", default_value = "2", value_parser = crate::args::time_limit)]
    pub time_limit: TimeLimit,
    /// Largest micro-batch size probed.
    #[arg(long, default_value_t = 1024)]
    pub max_micro_batch: u32,
    /// Pipeline stages (default: each algorithm's own).
    #[arg(long)]
    pub stages: Option<usize>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Algorithm-specific setting KEY=VALUE (repeatable), for the algorithms that take KEY.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::args::key_value)]
    pub set: Vec<(String, String)>,
    /// Output format.
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}
