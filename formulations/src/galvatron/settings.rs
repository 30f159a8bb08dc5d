//! The engine's search arguments (a subset of Hetu-Galvatron's `search_engine` arguments) and the
//! switches that turn each of the engine's quirks on or off.

use super::MB;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Pipeline schedule the engine's memory model assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PipelineType {
    /// All forwards then all backwards: every stage keeps one micro-batch's activations per
    /// chunk (the engine's `gpipe`).
    Gpipe,
    /// 1F1B with a flush (the engine's `pipedream_flush`): stage s keeps min(P - s, chunks)
    /// micro-batches.
    PipedreamFlush,
}

/// Search arguments, named as the engine's command-line flags. Defaults are the engine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Number of nodes.
    pub num_nodes: u32,
    /// GPUs per node.
    pub num_gpus_per_node: u32,
    /// Memory budget per GPU in GB (the engine multiplies by 1024 to get MB).
    pub memory_constraint: f64,
    /// `fp32`, `fp16` or `bf16`; anything but `fp32` halves communication volumes.
    pub mixed_precision: String,
    /// Pipeline schedule of the memory model.
    pub pipeline_type: PipelineType,
    /// `ddp`, `zero2` or `zero3`: how Galvatron's runtime runs plain data parallelism. The
    /// engine's search models only ZeRO-2 (sharded optimizer states) apart; `zero3`, which its
    /// command line refuses but its search code takes, is searched as `ddp`, as there.
    pub default_dp_type: String,
    /// Fixed global batch size (0 or -1: search `min_bsz..max_bsz` by `bsz_scale`).
    pub settle_bsz: i64,
    /// Fixed number of micro-batches (-1: every divisor of the batch size).
    pub settle_chunk: i64,
    /// Smallest batch size searched.
    pub min_bsz: u32,
    /// Largest batch size searched.
    pub max_bsz: u32,
    /// Step of the batch-size search.
    pub bsz_scale: u32,
    /// Disable plain data parallelism.
    pub disable_dp: bool,
    /// Disable tensor parallelism.
    pub disable_tp: bool,
    /// Disable pipeline parallelism.
    pub disable_pp: bool,
    /// Disable sharded data parallelism (ZeRO-3); also fixes `embed_sdp` to 0.
    pub disable_sdp: bool,
    /// Disable activation checkpointing.
    pub disable_ckpt: bool,
    /// Disable non-consecutive tensor-parallel groups.
    pub disable_tp_consec: bool,
    /// Disable vocabulary tensor parallelism (the embedding/head always at tp 1).
    pub disable_vtp: bool,
    /// Largest tensor-parallel degree.
    pub max_tp_deg: u32,
    /// Largest pipeline degree.
    pub max_pp_deg: u32,
    /// `full`, `dp+tp`, `dp+pp`, `3d`, `dp`, `sdp`, `tp` or `pp`.
    pub search_space: String,
    /// Activations of checkpointed layers divided by tp (Megatron sequence parallelism).
    pub sequence_parallel: bool,
    /// Megatron's global memory buffer, reserved under sequence parallelism (the engine's
    /// default; `--no_global_memory_buffer` turns it off).
    pub global_memory_buffer: bool,
    /// The engine's `hidden_size` argument (0: not given), which sizes that buffer, the
    /// vocabulary layers' tp messages and every transition, whatever the layer type's own
    /// hidden size ([`Settings::hidden_size_or`]).
    pub hidden_size: f64,
    /// Multiplier on every layer time.
    pub costmodel_coe: f64,
    /// Gradients reduced asynchronously (changes the ZeRO ratios when chunks > 1).
    pub async_grad_reduce: bool,
    /// The engine's fine-grained search (its default): a memory-budget DP picks a strategy per
    /// layer. Off (`--fine_grained_mode 0`), every layer of the model takes one strategy, the
    /// fastest pipeline whose stages all fit (`docs/galvatron.md`, "Coarse search"). Written to
    /// a file only when off.
    #[serde(skip_serializing_if = "is_true")]
    pub fine_grained_mode: bool,
    /// `tp` (the engine's default): tensor parallelism only, Megatron's sequence parallelism
    /// riding on it; `tp+sp`: every tp > 1 strategy also in a Ulysses variant, the vocabulary
    /// layers too (`docs/galvatron.md`, "Ulysses"). Written to a file only when not `tp`.
    #[serde(skip_serializing_if = "is_tp")]
    pub sp_space: String,
    /// Memory of every DP state in MB (the engine: 1). Coarser units make derived instances fast;
    /// memory is always rounded up, so a coarser unit never under-estimates.
    pub memory_unit_mb: f64,
    /// The engine's quirks (each on by default: they are part of matching the engine).
    pub quirks: Quirks,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            num_nodes: 1,
            num_gpus_per_node: 8,
            memory_constraint: 24.0,
            mixed_precision: "bf16".into(),
            pipeline_type: PipelineType::PipedreamFlush,
            default_dp_type: "ddp".into(),
            settle_bsz: 0,
            settle_chunk: -1,
            min_bsz: 8,
            max_bsz: 8,
            bsz_scale: 8,
            disable_dp: false,
            disable_tp: false,
            disable_pp: false,
            disable_sdp: false,
            disable_ckpt: false,
            disable_tp_consec: false,
            disable_vtp: false,
            max_tp_deg: 8,
            max_pp_deg: 8,
            search_space: "full".into(),
            sequence_parallel: false,
            global_memory_buffer: true,
            hidden_size: 0.0,
            costmodel_coe: 1.0,
            async_grad_reduce: true,
            fine_grained_mode: true,
            sp_space: "tp".into(),
            memory_unit_mb: 1.0,
            quirks: Quirks::default(),
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_tp(s: &str) -> bool {
    s == "tp"
}

/// The most batch sizes a search visits. Each is a search of its own (seconds each for the
/// engine), and the tasks of a range of millions (a mistyped `max_bsz`) would exhaust memory
/// before the time limit stopped them.
pub const MAX_BATCH_SIZES: u64 = 10_000;

impl Settings {
    /// Total GPUs.
    pub fn gpu_num(&self) -> u32 {
        self.num_nodes.saturating_mul(self.num_gpus_per_node)
    }
    /// Whether communication volumes are halved (anything but fp32).
    pub fn mixed(&self) -> bool {
        self.mixed_precision != "fp32"
    }
    /// The engine's `hidden_size` argument, or `own` (what an instance without it sizes with).
    pub fn hidden_size_or(&self, own: f64) -> f64 {
        if self.hidden_size > 0.0 {
            self.hidden_size
        } else {
            own
        }
    }
    /// Bytes of an activation element: 2 in mixed precision, else 4.
    pub fn element_bytes(&self) -> f64 {
        if self.mixed() {
            2.0
        } else {
            4.0
        }
    }
    /// Bytes of a layer's stored weights in pipeplan's chain from the engine's `parameter_size`
    /// (MB). The engine counts 4 bytes per parameter at every precision (its model states are
    /// `4 x parameter_size`: fp32 weights, gradients and Adam's two moments, or under mixed
    /// precision the same 16 bytes as 2-byte weights and gradients and an fp32 master copy with
    /// the moments); the chain stores weights at the trained element size, 2 bytes under mixed
    /// precision, with the master copy among the optimizer states (`docs/galvatron.md`, "Import").
    pub fn weight_bytes(&self, parameter_mb: f64) -> f64 {
        weight_bytes(parameter_mb, self.element_bytes())
    }
    /// Whether the `disable_*` filters apply: `full`, `dp+tp` and `dp+pp`. The one-strategy
    /// presets (`3d`, `dp`, `sdp`, `tp`, `pp`) skip them, as the engine's
    /// `generate_strategies` returns before them.
    pub fn filtered_space(&self) -> bool {
        matches!(self.search_space.as_str(), "full" | "dp+tp" | "dp+pp")
    }
    /// Whether sharded data parallelism is off: `disable_sdp`, or a search space that turns it
    /// off (`dp+tp` and `dp+pp`, as the engine sets `disable_sdp` for them).
    pub fn sdp_off(&self) -> bool {
        self.disable_sdp || matches!(self.search_space.as_str(), "dp+tp" | "dp+pp")
    }
    /// Whether Ulysses strategies are searched (`sp_space tp+sp`).
    pub fn ulysses(&self) -> bool {
        self.sp_space == "tp+sp"
    }
    /// ZeRO-2 for plain data parallelism.
    pub fn zero2(&self) -> bool {
        self.default_dp_type == "zero2"
    }
    /// The batch sizes the outer search visits (the engine's `set_searching_bsz`).
    pub fn batch_sizes(&self) -> Vec<u32> {
        if self.settle_bsz > 0 {
            return vec![self.settle_bsz as u32];
        }
        let (min, max, scale) = self.batch_range();
        (min..max)
            .step_by(scale as usize)
            .filter_map(|b| u32::try_from(b).ok())
            .collect()
    }
    /// The engine's batch-size range `min..max` by `scale` (`max` excluded), in `u64` so that
    /// no bound near `u32::MAX` overflows.
    fn batch_range(&self) -> (u64, u64, u64) {
        let scale = u64::from(self.bsz_scale.max(1));
        let (min, max) = (u64::from(self.min_bsz), u64::from(self.max_bsz));
        let min = min.max(scale) / scale * scale;
        let max = if max % scale != 0 {
            max.div_ceil(scale) * scale
        } else {
            max + scale
        };
        (min, max, scale)
    }
    /// Checks the values the cost model divides by or indexes with.
    pub fn check(&self, field: &str) -> Result<(), crate::InputError> {
        let bad = |k: &str, m: &str| Err(crate::InputError::field(format!("{field}.{k}"), m));
        let pow2 = |v: u32| v >= 1 && v.is_power_of_two();
        if self.num_nodes.checked_mul(self.num_gpus_per_node).is_none() {
            return bad(
                "num_gpus_per_node",
                "nodes x GPUs per node is more GPUs than can be counted",
            );
        }
        if !pow2(self.gpu_num()) {
            return bad(
                "num_gpus_per_node",
                "nodes x GPUs per node must be a power of two",
            );
        }
        if !(self.memory_constraint.is_finite() && self.memory_constraint > 0.0) {
            return bad("memory_constraint", "must be a positive number of GB");
        }
        if !pow2(self.max_tp_deg) || !pow2(self.max_pp_deg) {
            return bad(
                "max_tp_deg",
                "max_tp_deg and max_pp_deg must be powers of two",
            );
        }
        if !["fp32", "fp16", "bf16"].contains(&self.mixed_precision.as_str()) {
            return bad("mixed_precision", "expected fp32, fp16 or bf16");
        }
        if !["ddp", "zero2", "zero3"].contains(&self.default_dp_type.as_str()) {
            return bad("default_dp_type", "expected ddp, zero2 or zero3");
        }
        if !["full", "dp+tp", "dp+pp", "3d", "dp", "sdp", "tp", "pp"]
            .contains(&self.search_space.as_str())
        {
            return bad(
                "search_space",
                "expected full, dp+tp, dp+pp, 3d, dp, sdp, tp or pp",
            );
        }
        match self.sp_space.as_str() {
            "tp" | "tp+sp" => {}
            // The engine asserts on it: "Only sp mode unsupport now."
            "sp" => {
                return bad(
                    "sp_space",
                    "sp alone is not supported (the engine refuses it); use tp or tp+sp",
                )
            }
            _ => return bad("sp_space", "expected tp or tp+sp"),
        }
        // The engine asserts `not (disable_sdp and disable_dp)` where its disable_* filters apply.
        if self.filtered_space() && self.disable_dp && self.sdp_off() {
            let why = if self.disable_sdp {
                "disable_sdp".to_string()
            } else {
                format!("search_space {} (which turns sdp off)", self.search_space)
            };
            return bad(
                "disable_dp",
                &format!(
                    "disable_dp with {why} leaves no data-parallel strategy: the engine asserts \
                     against the pair"
                ),
            );
        }
        if self.settle_bsz <= 0 && (self.bsz_scale == 0 || self.max_bsz == 0) {
            return bad("bsz_scale", "give settle_bsz, or bsz_scale and max_bsz > 0");
        }
        for (k, v) in [
            ("settle_bsz", self.settle_bsz),
            ("settle_chunk", self.settle_chunk),
        ] {
            if v > i64::from(u32::MAX) {
                return bad(k, &format!("at most {}", u32::MAX));
            }
        }
        let (min, max, scale) = self.batch_range();
        let searched = max.saturating_sub(min).div_ceil(scale);
        if self.settle_bsz <= 0 && searched > MAX_BATCH_SIZES {
            return bad(
                "max_bsz",
                &format!(
                    "the batch-size search would visit {searched} sizes (min_bsz to max_bsz by \
                     bsz_scale), more than {MAX_BATCH_SIZES}"
                ),
            );
        }
        if !(self.memory_unit_mb.is_finite() && self.memory_unit_mb >= 1.0) {
            return bad("memory_unit_mb", "must be at least 1");
        }
        if !(self.costmodel_coe.is_finite() && self.costmodel_coe > 0.0) {
            return bad("costmodel_coe", "must be positive");
        }
        Ok(())
    }
}

/// The engine's quirks: behaviours of the reference code that a clean model would not have.
/// Each is on by default (to reproduce the engine); turning one off gives the clean variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Quirks {
    /// Reserve 20% of the budget for the PyTorch cache when the budget exceeds 20 GB
    /// (`DpOnModel.mem_cache`).
    pub mem_cache: bool,
    /// The `+ 0.003` bias in the ZeRO-2/ZeRO-3 model-state ratios.
    pub zero_bias: bool,
    /// The FSDP all-gather time stays in the "compute only" layer time (the engine zeroes the DP
    /// message after deriving the all-gather volume from it).
    pub fsdp_allgather_in_compute: bool,
    /// The warm-up/cool-down lower bound `max(min(P-1,m-1) c0/3, sum c_1..)/3 + ...` of the
    /// pipeline cost.
    pub bubble_bound: bool,
    /// The tie-break biases (1e-10 .. 3e-9) that replace the transition cost between strategies
    /// differing only in fsdp / checkpointing, or from a tp strategy to its Ulysses twin.
    pub transition_biases: bool,
    /// The extra transition case "world 8, tp 4 -> tp 2 with a different consecutive flag".
    pub transition_case3: bool,
    /// With one layer type, pp stages are divided evenly (not memory-balanced).
    pub even_division_single_type: bool,
}

impl Default for Quirks {
    fn default() -> Self {
        Quirks {
            mem_cache: true,
            zero_bias: true,
            fsdp_allgather_in_compute: true,
            bubble_bound: true,
            transition_biases: true,
            transition_case3: true,
            even_division_single_type: true,
        }
    }
}

/// Bytes per parameter in the engine's `parameter_size`, whatever the precision.
const ENGINE_BYTES_PER_PARAMETER: f64 = 4.0;

/// Stored weight bytes from the engine's `parameter_size` (MB) at an element size of
/// `element_bytes` (see [`Settings::weight_bytes`]).
pub(crate) fn weight_bytes(parameter_mb: f64, element_bytes: f64) -> f64 {
    parameter_mb * MB * element_bytes / ENGINE_BYTES_PER_PARAMETER
}

/// The engine's `parameter_size` (MB) of `weight_bytes` stored at `element_bytes`: the inverse of
/// [`weight_bytes`].
pub(crate) fn parameter_mb(weight_bytes: f64, element_bytes: f64) -> f64 {
    weight_bytes / MB * ENGINE_BYTES_PER_PARAMETER / element_bytes
}
