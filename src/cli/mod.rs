//! Command-line grammar (clap derive). Every command reads and writes the formats documented in
//! `docs/`; `--json` and `--csv` switch the output from the human table to a machine format.

pub use crate::args::TimeLimit;
use clap::{Args, Parser, Subcommand, ValueEnum};
use pipeplan_formulations::export::Format as ExportFormat;
use pipeplan_formulations::plan_from::PlanFormat;
use std::path::PathBuf;

mod instances;
pub use instances::*;

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
    pub calibration: CalibrationArgs,
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
    #[command(flatten)]
    pub from: PlanFromArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// A plan file in a runtime's format, for every command that reads a plan to judge it.
#[derive(Debug, Clone, Default, Args)]
pub struct PlanFromArgs {
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
    /// Plan file, or a solution file from `solve -o` / `solve --json`; with `--plan-from`, the
    /// runtime's file.
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
    pub from: PlanFromArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
}

/// `pipeplan explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Plan file, or a solution file from `solve -o`; with `--plan-from`, the runtime's file.
    pub plan: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    #[command(flatten)]
    pub from: PlanFromArgs,
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
    /// Plan file, or a solution file from `solve -o` (its claimed memory is drawn too); with
    /// `--plan-from`, the runtime's file.
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
    pub from: PlanFromArgs,
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
    /// The model of every run, as its training config names it (default: the nearest folder on
    /// the run's path that starts one model's name or that the name starts, e.g. `GPT-NEO` for
    /// `GPT-Neo-2.7`, `OPT-350M` for `OPT-350`).
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
    /// Also draw the judged runs: evaluated against measured iteration time and peak memory,
    /// with a band of 15% relative error (PNG for `.png`, else SVG)
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
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
    /// solution also carries its vocabulary tp, embedding sharding and global batch); with
    /// `--plan-from`, another runtime's file.
    pub solution: PathBuf,
    /// Instance file (`-` reads standard input).
    pub instance: PathBuf,
    /// Runtime format: galvatron, pipedream, megatron, torchtitan or deepspeed.
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<ExportFormat>())]
    pub to: ExportFormat,
    /// Write the file here instead of standard output (`-`: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub from: PlanFromArgs,
    /// The constants the nearest plan's cost is evaluated with, when the runtime cannot run the
    /// plan (the exported file does not depend on them).
    #[command(flatten)]
    pub calibration: CalibrationArgs,
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
    #[arg(
        short = 'a',
        long = "algo",
        visible_alias = "algos",
        value_delimiter = ','
    )]
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
