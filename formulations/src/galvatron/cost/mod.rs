//! The galvatron cost model, following the reference engine (`cost_model.py`:
//! `MemoryCostModel`, `TimeCostModel`, `OtherTimeCostModel`, `pipeline_costmodel`). Memory in MB,
//! per-layer times in seconds (the engine's `0.001` factor), as the engine computes them; every
//! expression keeps the engine's order of floating-point operations. Formulas: `docs/galvatron.md`.
//!
//! One file per model: `memory` ([`layer_memory`], Megatron's buffer), `time`
//! ([`layer_time`]), `other_time` ([`other_time()`], embedding and head), `pipeline`
//! ([`pipeline_cost`], the iteration), `transition` ([`transition()`], between neighbouring
//! layers' strategies).

mod memory;
mod other_time;
mod pipeline;
mod time;
mod transition;

pub use memory::{
    global_memory_buffer, layer_memory, sequence_buffer, LayerMemory, MemoryCall, CONTEXT_MB,
};
pub use other_time::{other_time, OtherTime};
pub use pipeline::{pipeline_cost, PipelineCall, PipelineCost};
pub use time::layer_time;
pub use transition::transition;

use super::profile::LayerType;
use super::strategy::Strategy;
use super::MB;

/// Sizes of `torch.arange(size).chunk(chunks)`.
pub fn chunk_like_torch(size: u64, chunks: u64) -> Vec<u64> {
    let chunks = chunks.max(1);
    let step = size.div_ceil(chunks);
    (0..chunks)
        .map(|i| i * step)
        .take_while(|&start| start < size)
        .map(|start| (start + step).min(size) - start)
        .collect()
}

/// The engine's `get_real_chunk`.
pub fn real_chunk(local_bsz: u64, chunk: u64) -> u64 {
    if chunk == 1 {
        1
    } else {
        chunk_like_torch(local_bsz, chunk).len() as u64
    }
}

/// The engine's `optimal_chunk_func_default(local_bsz, strategy, mbsz, min_tp)`.
pub fn optimal_chunk(local_bsz: u64, tp: u32, mbsz: u64, min_tp: u32) -> u64 {
    let local = local_bsz / (tp / min_tp) as u64;
    local.div_ceil(mbsz.max(1)).max(1)
}

/// A layer's parameters held by each GPU of a strategy (MB): split over the tp group, whole under
/// Ulysses (the engine's `parameter_size`).
fn parameter_mb(t: &LayerType, s: &Strategy) -> f64 {
    if s.sp {
        t.parameter_mb
    } else {
        t.parameter_mb / s.tp as f64
    }
}

/// The error of a tp group missing from the sequence-parallel times (`sp_time` file).
fn sp_missing(tp: u32, ulysses: bool) -> String {
    format!(
        "hardware profile has no sequence-parallel {} times for {tp} GPUs (sp_time file)",
        if ulysses { "all2all" } else { "allreduce" }
    )
}
