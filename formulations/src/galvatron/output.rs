//! The engine's output config: the JSON Galvatron's search writes for its training runtime
//! (`save_results` with `strategy2config`), read back by the runtime's `config2strategy`.
//! Per-layer lists are comma-separated strings; flags are 0 or 1.
//!
//! [`Extras`] are the decisions of a Galvatron plan that the neutral [`Plan`](crate::Plan) does
//! not hold (vocabulary tp, embedding ZeRO-3, the global batch, the default data-parallel type);
//! a solution of a Galvatron planner carries them so that its export is the engine's file.

use super::{LayerTypes, Settings};
use crate::error::InputError;
use crate::{Instance, Stage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The engine's output config, field for field in the engine's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Pipeline degree.
    pub pp_deg: u32,
    /// Tensor-parallel degree per layer.
    pub tp_sizes_enc: String,
    /// Per layer: 1 when tp groups are consecutive ranks, 0 when strided.
    pub tp_consecutive_flags: String,
    /// Per layer: 1 for sharded data parallelism (ZeRO-3), 0 for `default_dp_type`.
    pub dp_types_enc: String,
    /// Per layer: 1 for sequence parallelism (absent in older configs: all 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_sp: Option<String>,
    /// Per layer: 1 for activation checkpointing.
    pub checkpoint: String,
    /// Samples per iteration.
    pub global_bsz: u64,
    /// Micro-batches per iteration.
    pub chunks: u64,
    /// Layers per pipeline stage.
    pub pp_division: String,
    /// `pipedream_flush` (1F1B) or `gpipe`.
    pub pipeline_type: String,
    /// Data parallelism of layers whose `dp_types_enc` is 0: `ddp`, `zero2` or `zero3`.
    pub default_dp_type: String,
    /// Vocabulary (embedding and head) tp degree (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vtp: Option<u32>,
    /// Vocabulary sequence parallelism (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsp: Option<u32>,
    /// Embedding and head under ZeRO-3 (0 or 1, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_sdp: Option<u32>,
    /// Context-parallel degree per layer (newer engines); read only when every entry is 1.
    #[serde(default, skip_serializing)]
    pub cp_sizes_enc: Option<String>,
    /// Vocabulary context-parallel degree (newer engines); read only when 1.
    #[serde(default, skip_serializing)]
    pub vcp: Option<u32>,
}

/// A Galvatron plan's decisions beyond the neutral plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Extras {
    /// Vocabulary (embedding and head) tensor-parallel degree.
    pub vtp: u32,
    /// Embedding and head under sharded data parallelism (ZeRO-3).
    pub embed_sdp: bool,
    /// Embedding and head under Ulysses sequence parallelism (`vsp`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vsp: bool,
    /// Samples per iteration (micro-batches may be uneven: the plan's micro-batch is the
    /// largest, `global_bsz` divided by the micro-batch count rounded up).
    pub global_bsz: u64,
    /// Data parallelism of the layers not sharded: `ddp`, `zero2` or `zero3`.
    pub default_dp_type: String,
}

/// Whether Galvatron's runtime holds every replica's gradients whole until the last of `chunks`
/// micro-batches: under `async_grad_reduce` (its default) it reduces them once, after the last
/// backward, so with several chunks `zero2` runs as ZeRO-1 (the engine's `models/README.md`:
/// "causing Zero-2 to degrade to Zero-1") and `zero3` shards with whole gradients (FSDP's
/// `no_sync`): the engine's `zero2_ratio` and `zero3_ratio` keep the gradients whole there.
pub fn whole_gradients(async_grad_reduce: bool, chunks: u64) -> bool {
    async_grad_reduce && chunks > 1
}

/// Whether the instance's runtime reduces gradients asynchronously: `async_grad_reduce` of its
/// `layer_types` settings, else the engine's default (on).
pub fn async_grad_reduce(inst: &Instance) -> bool {
    match LayerTypes::from_instance(inst) {
        Ok(Some(lt)) => lt.settings.async_grad_reduce,
        _ => Settings::default().async_grad_reduce,
    }
}

/// The ZeRO stage Galvatron's runtime runs `zero2` at: 1 with [`whole_gradients`], else 2.
fn zero2_stage(whole_gradients: bool) -> u8 {
    if whole_gradients {
        1
    } else {
        2
    }
}

/// A run of layers as Galvatron's runtime runs it: `stage` with the ZeRO stage
/// ([`Stage::zero_stage`]) 3 when the layers' `dp_types_enc` flag is set, else, when it has
/// several sharers ([`Stage::sharers`]), its `default_dp_type`'s (`zero3` 3, `ddp` 0, `zero2` 2,
/// or 1 with [`whole_gradients`]), else 0, as nothing is divided. The engine's search takes
/// `zero3` as `ddp`; its runtime shards. With [`whole_gradients`] a sharded stage on several
/// sharers holds its gradients whole (`Stage::whole_gradients`: the runtime's FSDP `no_sync`,
/// the engine's `zero3_ratio` keeping the gradients whole).
pub fn as_run(
    mut stage: Stage,
    default_dp_type: &str,
    flagged: bool,
    whole_gradients: bool,
) -> Stage {
    let zero = match default_dp_type {
        _ if flagged => 3,
        _ if stage.sharers() < 2 => 0,
        "zero3" => 3,
        "zero2" => zero2_stage(whole_gradients),
        _ => 0,
    };
    stage.set_zero_stage(zero);
    stage.set_whole_gradients(whole_gradients);
    stage
}

/// The `default_dp_type` that runs ZeRO stage `z`: `ddp` (0), `zero3` (3), and `zero2` for
/// ZeRO-1 with [`whole_gradients`], for ZeRO-2 without; `None` for the other of the two, which
/// the output config cannot ask for (`async_grad_reduce` is a launch flag of the runtime).
pub fn default_dp_type(z: u8, whole_gradients: bool) -> Option<&'static str> {
    match z {
        0 => Some("ddp"),
        3 => Some("zero3"),
        z if z == zero2_stage(whole_gradients) => Some("zero2"),
        _ => None,
    }
}

/// `a,b,c` of numbers.
pub fn join<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// The numbers of a comma-separated field; errors name the field.
pub fn split(text: &str, field: &str) -> Result<Vec<u64>, InputError> {
    text.split(',')
        .enumerate()
        .map(|(i, x)| {
            x.trim().parse::<u64>().map_err(|_| {
                InputError::field(
                    field,
                    format!(
                        "entry {i} is `{}`: expected a comma-separated list of whole numbers",
                        x.trim()
                    ),
                )
            })
        })
        .collect()
}
