//! A layer's memory under a strategy (`MemoryCostModel`) and Megatron's global memory buffer.

use super::{chunk_like_torch, optimal_chunk, parameter_mb, MB};
use crate::galvatron::profile::{LayerType, LayerTypes, OtherMemory};
use crate::galvatron::settings::PipelineType;
use crate::galvatron::strategy::Strategy;

/// What the memory model says about one layer under one strategy (MB).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerMemory {
    /// Parameters per GPU.
    pub parameter: f64,
    /// Model states per GPU (after ZeRO ratios).
    pub model_states: f64,
    /// Stored activations per GPU.
    pub activation: f64,
    /// `model_states + activation` (the engine's `enc_total`).
    pub total: f64,
    /// "Other" memory per pipeline stage, by vocabulary-tp degree (`(degree, per stage)`),
    /// including the 1024 MB context.
    pub other: Vec<(u32, Vec<f64>)>,
}

/// Everything a memory evaluation depends on besides the strategy.
#[derive(Debug, Clone, Copy)]
pub struct MemoryCall {
    /// Global batch size.
    pub bsz: u64,
    /// Micro-batch size at tp = min_tp.
    pub mbsz: u64,
    /// Smallest tp degree of the search (the engine's `min_tp`).
    pub min_tp: u32,
    /// Pipeline stage (for 1F1B in-flight micro-batches).
    pub stage: usize,
    /// Embedding under ZeRO-3 (`embed_sdp`).
    pub embed_sdp: bool,
    /// Vocabulary layers under Ulysses (`vsp`): their states whole on every GPU of the stage,
    /// shared by all of them.
    pub vsp: bool,
    /// Schedule of the memory model.
    pub pipeline: PipelineType,
}

/// PyTorch context memory the engine adds to every stage (MB).
pub const CONTEXT_MB: f64 = 1024.0;

fn zero_ratios(lt: &LayerTypes, chunks: u64) -> (impl Fn(f64) -> f64, impl Fn(f64) -> f64) {
    let s = &lt.settings;
    let b = if s.quirks.zero_bias { 0.003 } else { 0.0 };
    let mixed = s.mixed();
    let mode = if chunks == 1 {
        0
    } else if s.async_grad_reduce {
        1
    } else {
        2
    };
    let z2 = move |d: f64| match (mode, mixed) {
        (0, true) => 7.0 / 8.0 * (1.0 / d + b) + 1.0 / 8.0,
        (0, false) | (2, false) => 3.0 / 4.0 * (1.0 / d + b) + 1.0 / 4.0,
        (1, true) => 6.0 / 8.0 * (1.0 / d + b) + 2.0 / 8.0,
        (1, false) => 2.0 / 4.0 * (1.0 / d + b) + 2.0 / 4.0,
        _ => (7.0 / 8.0 * (1.0 / d + b) + 1.0 / 8.0) * 5.0 / 4.0,
    };
    let z3 = move |d: f64| match (mode, mixed) {
        (0, _) => 1.0 / d + b,
        (1, true) => 7.0 / 8.0 * (1.0 / d + b) + 1.0 / 8.0,
        (1, false) => 3.0 / 4.0 * (1.0 / d + b) + 1.0 / 4.0,
        _ => (1.0 / d + b) * 5.0 / 4.0,
    };
    (z2, z3)
}

/// The engine's `MemoryCostModel(strategy, ...).get_memory_cost()` for a layer of type `ty`.
/// Errors name the missing profile key.
pub fn layer_memory(
    lt: &LayerTypes,
    ty: usize,
    s: &Strategy,
    c: &MemoryCall,
) -> Result<LayerMemory, String> {
    let set = &lt.settings;
    let t = &lt.types[ty];
    let parameter = parameter_mb(t, s);
    let mut model_states = 4.0 * parameter;
    let (chunks, bsz) = stored_samples(s, c)?;
    let activation = activation_mb(lt, t, s, bsz)?;
    let (z2, z3) = zero_ratios(lt, chunks);
    let sdp = s.sdp_size() as f64;
    match s.fsdp {
        Some(true) => model_states *= z3(sdp),
        Some(false) if set.zero2() => model_states *= z2(sdp),
        _ => {}
    }
    let total = model_states + activation;
    let other = other_memory(lt, s, c, chunks)?;
    Ok(LayerMemory {
        parameter,
        model_states,
        activation,
        total,
        other,
    })
}

/// The engine's micro-batch count (`chunks`) for strategy `s`, and the samples whose
/// activations a GPU stores at the peak: the micro-batches in flight at the stage under 1F1B
/// (or without a pipeline), the first micro-batch under GPipe.
fn stored_samples(s: &Strategy, c: &MemoryCall) -> Result<(u64, f64), String> {
    let (dp, pp) = (s.dp as f64, s.pp);
    let mut bsz = c.bsz as f64 / dp;
    let chunks0 = optimal_chunk(c.bsz / s.dp as u64, s.tp, c.mbsz, c.min_tp);
    let max_chunks = (c.bsz / (s.tp as u64 * s.dp as u64 / c.min_tp as u64)).max(1);
    let chunks = chunks0.min(max_chunks);
    let local = (c.bsz as f64 / dp / (s.tp / c.min_tp) as f64) as u64;
    let micro = chunk_like_torch(local, chunks);
    if micro.is_empty() {
        return Err(format!(
            "batch size {} leaves no sample per replica for strategy {s}",
            c.bsz
        ));
    }
    let total_mb: u64 = micro.iter().sum();
    let sum_to = |n: usize| micro.iter().take(n).sum::<u64>() as f64 / total_mb as f64;
    let one_f_one_b = (c.pipeline == PipelineType::PipedreamFlush && pp > 1) || pp == 1;
    if one_f_one_b {
        let end = ((pp as usize).saturating_sub(c.stage)).min(chunks as usize);
        bsz *= sum_to(end);
    } else {
        bsz = micro[0] as f64;
    }
    Ok((chunks, bsz))
}

/// The activations of `bsz` samples of layer type `t` (MB): its checkpoint input under `cpt`
/// (split over tp with sequence parallelism), else its profiled activation at the strategy's tp.
fn activation_mb(lt: &LayerTypes, t: &LayerType, s: &Strategy, bsz: f64) -> Result<f64, String> {
    if s.cpt {
        let a = t
            .activation_mb_per_sample
            .get("checkpoint")
            .ok_or_else(|| {
                format!(
                    "layer type {} has no activation for checkpointing (key \"checkpoint\")",
                    t.name
                )
            })?;
        let mut a = a * bsz;
        if lt.settings.sequence_parallel {
            a /= s.tp as f64;
        }
        Ok(a)
    } else {
        Ok(t.activation(s.tp).ok_or_else(|| {
            format!(
                "layer type {} has no activation for tp {} (key \"{}\")",
                t.name, s.tp, s.tp
            )
        })? * bsz)
    }
}

/// The embedding and head memory per stage (with the context), for every vocabulary-tp
/// degree the search tries.
fn other_memory(
    lt: &LayerTypes,
    s: &Strategy,
    c: &MemoryCall,
    chunks: u64,
) -> Result<Vec<(u32, Vec<f64>)>, String> {
    let set = &lt.settings;
    let (tp, dp, pp) = (s.tp as f64, s.dp as f64, s.pp);
    let (z2, z3) = zero_ratios(lt, chunks);
    let gpu = set.gpu_num();
    let mut tps = Vec::new();
    let mut i = c.min_tp;
    while i * pp <= gpu && i <= set.max_tp_deg {
        tps.push(i);
        i *= 2;
    }
    if set.disable_vtp {
        tps = vec![1];
    }
    let o = &lt.other;
    let key = |what: &str, tp: u32| {
        format!("other memory profile has no {what} for vocab tp {tp} (key \"{tp}\")")
    };
    let mut other = Vec::new();
    for vtp in tps {
        let mut st = vec![0.0; pp as usize];
        let olb = c.bsz as f64 * vtp as f64 / tp / dp / chunks as f64;
        // Under vsp the vocabulary states are whole (profiled at tp 1) and shared by the stage.
        let (sd, ms_tp) = if c.vsp {
            (s.tp * s.dp, 1)
        } else {
            (s.tp * s.dp / vtp, vtp)
        };
        let ratio = if c.embed_sdp {
            z3(sd as f64)
        } else if set.zero2() {
            z2(sd as f64)
        } else {
            1.0
        };
        // One vocabulary block: its states at `ms_tp`, sharded by `ratio`, and its activation
        // at `vtp` for `act` micro-batch shares.
        let block = |m: &OtherMemory, what: &str, act: f64| -> Result<f64, String> {
            Ok(m.model_states_at(ms_tp)
                .ok_or_else(|| key(&format!("{what} model_states"), ms_tp))?
                * ratio
                + m.activation_at(vtp)
                    .ok_or_else(|| key(&format!("{what} activation"), vtp))?
                    * act)
        };
        if pp == 1 {
            st[0] += block(&o.pp_off, "pp_off", olb)?;
        } else {
            // The engine counts the first stage's embedding activations for `pp` micro-batches
            // in flight and the last stage's head for one (not the layers' 1F1B ratios).
            let (bf, bl) = if c.pipeline == PipelineType::PipedreamFlush {
                (olb * pp as f64, olb)
            } else {
                (olb, olb)
            };
            st[0] += block(&o.pp_on_first, "first-stage", bf)?;
            let last = st.len() - 1;
            st[last] += block(&o.pp_on_last, "last-stage", bl)?;
        }
        for v in st.iter_mut() {
            *v += CONTEXT_MB;
        }
        other.push((vtp, st));
    }
    Ok(other)
}

/// Megatron's global memory buffer under sequence parallelism (MB, whole), added to the
/// embedding/head memory of every stage: the gathered activation of one micro-batch at the
/// largest tp, `mbsz / min_tp x max_tp x hidden x longest sequence x 4 B`, halved (the engine
/// halves it for any `mixed_precision` value, `fp32` included: it tests the string's truth);
/// 0 without sequence parallelism or with `global_memory_buffer` off.
pub fn global_memory_buffer(lt: &LayerTypes, mbsz: u64, min_tp: u32, max_tp: u32) -> f64 {
    if !lt.settings.global_memory_buffer {
        return 0.0;
    }
    sequence_buffer(lt, mbsz, min_tp, max_tp)
}

/// The buffer of [`global_memory_buffer`] whatever `global_memory_buffer` says, 0 without
/// sequence parallelism: what the engine's coarse search (`fine_grained_mode` 0) adds to every
/// stage.
pub fn sequence_buffer(lt: &LayerTypes, mbsz: u64, min_tp: u32, max_tp: u32) -> f64 {
    let s = &lt.settings;
    if !s.sequence_parallel {
        return 0.0;
    }
    let hidden = s.hidden_size_or(lt.types.iter().map(|t| t.hidden_size).fold(0.0, f64::max));
    let seq = lt.types.iter().map(|t| t.seq_len).fold(0.0, f64::max);
    let mut mb = mbsz as f64 / min_tp as f64 * max_tp as f64 * hidden * seq * 4.0 / MB;
    if !s.mixed_precision.is_empty() {
        mb /= 2.0;
    }
    mb.trunc()
}
