//! The galvatron cost model, following the reference engine (`cost_model.py`:
//! `MemoryCostModel`, `TimeCostModel`, `OtherTimeCostModel`, `pipeline_costmodel`). Memory in MB,
//! per-layer times in seconds (the engine's `0.001` factor), as the engine computes them; every
//! expression keeps the engine's order of floating-point operations. Formulas: `docs/galvatron.md`.

use super::profile::LayerTypes;
use super::settings::PipelineType;
use super::strategy::Strategy;

const MB: f64 = 1024.0 * 1024.0;

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
    let (tp, dp, pp) = (s.tp as f64, s.dp as f64, s.pp);
    // Ulysses keeps the whole layer on every GPU of the tp group.
    let parameter = if s.sp {
        t.parameter_mb
    } else {
        t.parameter_mb / tp
    };
    let mut model_states = 4.0 * parameter;
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
    let activation = if s.cpt {
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
        if set.sequence_parallel {
            a /= tp;
        }
        a
    } else {
        t.activation(s.tp).ok_or_else(|| {
            format!(
                "layer type {} has no activation for tp {} (key \"{}\")",
                t.name, s.tp, s.tp
            )
        })? * bsz
    };
    let (z2, z3) = zero_ratios(lt, chunks);
    let sdp = s.sdp_size() as f64;
    match s.fsdp {
        Some(true) => model_states *= z3(sdp),
        Some(false) if set.zero2() => model_states *= z2(sdp),
        _ => {}
    }
    let total = model_states + activation;

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
        if pp == 1 {
            st[0] += o
                .pp_off
                .model_states_at(ms_tp)
                .ok_or_else(|| key("pp_off model_states", ms_tp))?
                * ratio
                + o.pp_off
                    .activation_at(vtp)
                    .ok_or_else(|| key("pp_off activation", vtp))?
                    * olb;
        } else {
            // The engine counts the first stage's embedding activations for `pp` micro-batches
            // in flight and the last stage's head for one (not the layers' 1F1B ratios).
            let (bf, bl) = if c.pipeline == PipelineType::PipedreamFlush {
                (olb * pp as f64, olb)
            } else {
                (olb, olb)
            };
            st[0] += o
                .pp_on_first
                .model_states_at(ms_tp)
                .ok_or_else(|| key("first-stage model_states", ms_tp))?
                * ratio
                + o.pp_on_first
                    .activation_at(vtp)
                    .ok_or_else(|| key("first-stage activation", vtp))?
                    * bf;
            let last = st.len() - 1;
            st[last] += o
                .pp_on_last
                .model_states_at(ms_tp)
                .ok_or_else(|| key("last-stage model_states", ms_tp))?
                * ratio
                + o.pp_on_last
                    .activation_at(vtp)
                    .ok_or_else(|| key("last-stage activation", vtp))?
                    * bl;
        }
        for v in st.iter_mut() {
            *v += CONTEXT_MB;
        }
        other.push((vtp, st));
    }
    Ok(LayerMemory {
        parameter,
        model_states,
        activation,
        total,
        other,
    })
}

/// Communication coefficients (dc: data parallel, tc: tensor parallel) of a strategy.
fn coefficients(lt: &LayerTypes, s: &Strategy) -> Result<(f64, f64), String> {
    let h = &lt.hardware;
    let miss = |k: String| format!("hardware profile has no allreduce coefficient \"{k}\"");
    let plain = |n: u32| h.coe_plain(n).ok_or_else(|| miss(format!("{n}_1")));
    let get = |k: String| h.coe(&k).ok_or_else(|| miss(k));
    if s.sp {
        // The gradients of a Ulysses layer are reduced over its whole tp x dp group; its tp
        // coefficient is never read (the sequence-parallel times replace it).
        Ok((plain(s.sdp_size())?, 0.0))
    } else if s.tp == 1 || s.dp == 1 {
        Ok((plain(s.dp)?, plain(s.tp)?))
    } else if s.consec == Some(true) {
        Ok((get(format!("{}_0", s.dp))?, get(format!("{}_1", s.tp))?))
    } else {
        Ok((get(format!("{}_1", s.dp))?, get(format!("{}_0", s.tp))?))
    }
}

/// The engine's `TimeCostModel(strategy, global_batch_size = bsz).gen_result()` for one layer of
/// type `ty` (seconds); `no_comm` drops the data-parallel gradient reduction.
pub fn layer_time(
    lt: &LayerTypes,
    ty: usize,
    s: &Strategy,
    bsz: f64,
    no_comm: bool,
) -> Result<f64, String> {
    let set = &lt.settings;
    let t = &lt.types[ty];
    let (pp, tp, dp) = (s.pp as f64, s.tp as f64, s.dp as f64);
    let layers = t.layers as f64;
    let param = if s.sp {
        t.parameter_mb
    } else {
        t.parameter_mb / tp
    };
    let (dc, tc) = coefficients(lt, s)?;
    let ov = lt.hardware.overlap_coe;
    let dc_overlap = dc * ov;
    let bs = bsz / dp;
    let fct = t.forward_ms_per_sample * bs / tp * layers;
    let mut bct = fct * 2.0;
    let mut dp_msg = 2.0 * (dp - 1.0) / dp * param * layers;
    let mut tp_msg =
        2.0 * (tp - 1.0) / tp * (bs * t.seq_len * t.hidden_size * 4.0 * 4.0 / MB) * layers;
    let mut p2p = None;
    if s.pp > 1 {
        if let Some(coe) = lt.hardware.p2p_ms_per_mb.get(&s.pp.to_string()) {
            let mut size = pp * 2.0 * bs * t.seq_len * t.hidden_size * 4.0 / MB;
            if set.mixed() {
                size /= 2.0;
            }
            p2p = Some((size, *coe));
        } else {
            return Err(format!(
                "hardware profile has no p2p coefficient for pp {}",
                s.pp
            ));
        }
    }
    if s.cpt {
        bct += fct;
        tp_msg *= 1.5;
    }
    if set.mixed() {
        dp_msg /= 2.0;
        tp_msg /= 2.0;
    }
    let allgather = dp_msg * 0.5;
    if no_comm {
        dp_msg = 0.0;
    }
    let allgather = if no_comm && !set.quirks.fsdp_allgather_in_compute {
        0.0
    } else {
        allgather
    };
    let tp_time = if set.ulysses() {
        ulysses_tp_time(lt, ty, s, bs)?
    } else {
        tp_msg * tc
    };
    let overlap = |msg: f64, bct: f64| {
        let dp_ov = msg * dc_overlap;
        let bct_ov = bct * ov;
        if dp_ov > bct_ov {
            (bct_ov, (msg - bct_ov / dc_overlap) * dc)
        } else if dp_ov < bct_ov {
            (dp_ov, bct - dp_ov / ov)
        } else {
            (bct_ov, 0.0)
        }
    };
    let mut result = if s.tp == 1 && s.dp > 1 {
        let (o, r) = overlap(dp_msg, bct);
        fct + o + r
    } else if s.dp == 1 && s.tp > 1 {
        fct + bct + tp_time
    } else if s.dp == 1 && s.tp == 1 {
        fct + bct
    } else if s.tp < s.tp * s.dp / 2 {
        let (o, r) = overlap(dp_msg, bct);
        fct + o + r + tp_time
    } else {
        let (o, r) = overlap(dp_msg, bct * 1.0 / 2.0);
        fct + 1.0 / 2.0 * bct + o + r + tp_time
    };
    if s.sdp() {
        result += allgather * dc * 1.0;
    }
    if let Some((size, coe)) = p2p {
        result += size * coe;
    }
    let coe = 0.001 * set.costmodel_coe;
    Ok(result * coe / layers)
}

/// Tensor-parallel communication of a whole layer type under `sp_space tp+sp` (ms), for
/// Ulysses and plain tp strategies alike: four collectives per layer (six with checkpointing) of
/// one micro-batch's activation, `bs x seq x hidden` elements, timed by the sp profile (all-to-all
/// for Ulysses, all-gather otherwise).
fn ulysses_tp_time(lt: &LayerTypes, ty: usize, s: &Strategy, bs: f64) -> Result<f64, String> {
    if s.tp == 1 {
        return Ok(0.0);
    }
    let t = &lt.types[ty];
    let mut count = 4.0 * t.layers as f64;
    if s.cpt {
        count *= 1.5;
    }
    let bytes = bs * t.seq_len * t.hidden_size * if lt.settings.mixed() { 2.0 } else { 4.0 };
    let c = lt
        .hardware
        .sp_collective(s.tp, s.sp)
        .ok_or_else(|| sp_missing(s.tp, s.sp))?;
    Ok(count * c.time_ms(bytes))
}

fn sp_missing(tp: u32, ulysses: bool) -> String {
    format!(
        "hardware profile has no sequence-parallel {} times for {tp} GPUs (sp_time file)",
        if ulysses { "all2all" } else { "allreduce" }
    )
}

/// The embedding/head time of one vocabulary-tp degree, per stage (seconds; 0 for the middle
/// stages).
#[derive(Debug, Clone, PartialEq)]
pub struct OtherTime {
    /// Vocabulary tp degree.
    pub vtp: u32,
    /// With its gradient reduction: what the stage DPs add (`gen_result()[0]`).
    pub dp: Vec<f64>,
    /// Without the reduction the pipeline cost model adds itself (`gen_result()[1]`).
    pub pipeline: Vec<f64>,
}

/// The engine's `OtherTimeCostModel(...).gen_result()`: per vocabulary-tp degree from
/// `min_tp`, the embedding/head compute of a micro-batch (split between the first and last
/// stage when pipelined), its tp all-reduce, and its data-parallel gradient reduction (half in
/// the backward, or half in each pass under `embed_sdp`) overlapped with the compute at the
/// overlap coefficient. Under `vsp` (Ulysses vocabulary layers) there is no tp communication and
/// the whole states are reduced over the stage's GPUs.
pub fn other_time(
    lt: &LayerTypes,
    mbsz: u64,
    pp: u32,
    min_tp: u32,
    max_tp: u32,
    embed_sdp: bool,
    vsp: bool,
) -> Result<Vec<OtherTime>, String> {
    let set = &lt.settings;
    let world = set.gpu_num();
    let h = &lt.hardware;
    let hs = if set.hidden_size > 0.0 {
        set.hidden_size
    } else {
        lt.types[0].hidden_size
    };
    let bytes = if set.mixed() { 2.0 } else { 4.0 };
    let miss = |k: String| format!("hardware profile has no allreduce coefficient \"{k}\"");
    let o = &lt.other;
    let ov = h.overlap_coe;
    // The engine's get_overlap_time.
    let overlap = |f_comm: f64, f_comp: f64, b_comm: f64, b_comp: f64, tp: f64| {
        let (f_comp, b_comp) = (f_comp * ov, b_comp * ov);
        let f = if f_comp > f_comm {
            f_comm + (f_comp - f_comm) / ov
        } else {
            f_comm
        };
        let b = if b_comp > b_comm {
            b_comm + (b_comp - b_comm) / ov
        } else {
            b_comm
        };
        f + b + tp
    };
    let (fwd_factor, bwd_factor) = if embed_sdp { (0.5, 1.0) } else { (0.0, 0.5) };
    let mut out = Vec::new();
    let mut k = min_tp;
    while k <= max_tp && world / pp >= k {
        let dp = world / pp / k;
        let per: Vec<f64> = if vsp {
            vec![0.0; lt.types.len()]
        } else if set.ulysses() {
            let c = (k > 1)
                .then(|| {
                    h.sp_collective(k, false)
                        .ok_or_else(|| sp_missing(k, false))
                })
                .transpose()?;
            lt.types
                .iter()
                .map(|t| c.map_or(0.0, |c| c.line_ms(mbsz as f64 * t.seq_len * hs * bytes)))
                .collect()
        } else {
            let tp_coe = if k == 1 || dp == 1 {
                h.coe_plain(k).ok_or_else(|| miss(format!("{k}_1")))?
            } else {
                h.coe(&format!("{k}_0"))
                    .ok_or_else(|| miss(format!("{k}_0")))?
            };
            lt.types
                .iter()
                .map(|t| {
                    (k as f64 - 1.0) / k as f64
                        * (mbsz as f64 * t.seq_len * hs / MB)
                        * bytes
                        * tp_coe
                })
                .collect()
        };
        // The gradient group: the tp-k replicas, or every GPU of the stage under vsp.
        let group = if vsp { world / pp } else { dp };
        let mut dp_coe = if vsp || k == 1 || dp == 1 {
            h.coe_plain(group)
                .ok_or_else(|| miss(format!("{group}_1")))?
        } else {
            h.coe(&format!("{dp}_0"))
                .ok_or_else(|| miss(format!("{dp}_0")))?
        };
        dp_coe *= (group as f64 - 1.0) / group as f64;
        let key =
            |w: &str| format!("other memory profile has no {w} model_states for vocab tp {k}");
        let fct = mbsz as f64 / min_tp as f64 * o.forward_ms_per_sample;
        // (gradient bytes / 4, compute, tp time) of the first and last stage.
        // Under vsp the states are whole: profiled at tp 1.
        let ms_tp = if vsp { 1 } else { k };
        let ends: Vec<(f64, f64, f64)> = if pp == 1 {
            let size = o
                .pp_off
                .model_states_at(ms_tp)
                .ok_or_else(|| key("pp_off"))?
                / 4.0;
            let tp_time = per.iter().sum::<f64>() + per[per.len() - 1];
            vec![(size, fct, tp_time)]
        } else {
            // The engine sizes both ends' gradients by one end's model states: the first
            // stage's, the last stage's under vsp.
            let end = if vsp { &o.pp_on_last } else { &o.pp_on_first };
            let first = end
                .model_states_at(ms_tp)
                .ok_or_else(|| key(if vsp { "last-stage" } else { "first-stage" }))?
                / 4.0;
            vec![
                (first, fct / 2.0, per[0]),
                (first, fct / 2.0, per[per.len() - 1]),
            ]
        };
        let mut with = vec![0.0; pp as usize];
        let mut without = vec![0.0; pp as usize];
        for (e, &(size, fct, tp_time)) in ends.iter().enumerate() {
            let at = if e == 0 { 0 } else { pp as usize - 1 };
            let comm = size * dp_coe;
            with[at] = 0.001
                * overlap(
                    comm * fwd_factor,
                    fct,
                    comm * bwd_factor,
                    fct * 2.0,
                    tp_time,
                );
            without[at] = 0.001
                * overlap(
                    comm * fwd_factor,
                    fct,
                    comm * (bwd_factor - 0.5),
                    fct * 2.0,
                    tp_time,
                );
        }
        out.push(OtherTime {
            vtp: k,
            dp: with,
            pipeline: without,
        });
        k *= 2;
    }
    Ok(out)
}

/// Inputs of the engine's `pipeline_costmodel` besides the per-layer strategies.
#[derive(Debug, Clone)]
pub struct PipelineCall<'a> {
    /// Layers per stage.
    pub partition: &'a [usize],
    /// Micro-batch count per layer type (before the engine's `get_real_chunk`).
    pub chunks: &'a [u64],
    /// Global batch size.
    pub bsz: u64,
    /// Smallest tp degree of the search.
    pub min_tp: u32,
    /// Other (embedding/head) time per stage for the chosen vocab tp (seconds).
    pub other_time: &'a [f64],
}

/// Per-stage costs and the iteration time (seconds) of the engine's `pipeline_costmodel`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineCost {
    /// Per-stage time with gradient reduction, one micro-batch (`stage_costs_bsz_chunked`).
    pub stage_with_reduce: Vec<f64>,
    /// Per-stage compute time of one micro-batch, other layers included.
    pub stage_compute: Vec<f64>,
    /// Micro-batches.
    pub chunks: u64,
    /// Iteration time (seconds).
    pub iteration: f64,
}

/// The engine's `pipeline_costmodel` (Eq. 9 plus the engine's bubble bound and reduce tail).
pub fn pipeline_cost(
    lt: &LayerTypes,
    strategies: &[Strategy],
    c: &PipelineCall,
) -> Result<PipelineCost, String> {
    let types = lt.type_of_layers();
    let s0 = strategies[0];
    let local = (c.bsz as f64 / (s0.tp * s0.dp / c.min_tp) as f64) as u64;
    let chunks: Vec<u64> = c.chunks.iter().map(|&ch| real_chunk(local, ch)).collect();
    let max_chunk = *chunks.iter().max().unwrap_or(&1);
    let mut per_reduce = Vec::with_capacity(strategies.len());
    let mut per_compute = Vec::with_capacity(strategies.len());
    for (l, s) in strategies.iter().enumerate() {
        let b = c.bsz as f64 / chunks[types[l]] as f64;
        per_reduce.push(layer_time(lt, types[l], s, b, false)?);
        per_compute.push(layer_time(lt, types[l], s, b, true)?);
    }
    let sums = |v: &[f64]| {
        let mut out = Vec::new();
        let mut start = 0;
        for &n in c.partition {
            out.push(v[start..start + n].iter().sum::<f64>());
            start += n;
        }
        out
    };
    let reduce = sums(&per_reduce);
    let mut compute = sums(&per_compute);
    for (i, t) in c.other_time.iter().enumerate() {
        compute[i] += t;
    }
    let pp = c.partition.len();
    let mc = max_chunk as f64;
    let last = compute[pp - 1];
    let mut result = compute.iter().sum::<f64>() + last * (mc - 1.0);
    if lt.settings.quirks.bubble_bound {
        let c0 = compute[0];
        let rest: f64 = compute[1..].iter().sum();
        let w = ((pp - 1).min(max_chunk as usize - 1)) as f64;
        let bound = f64::max(w * c0 * 1.0 / 3.0, rest * 1.0 / 3.0)
            + f64::max(w * c0 * 2.0 / 3.0, rest * 2.0 / 3.0)
            + c0 * f64::max(0.0, mc + 1.0 - pp as f64);
        result = result.max(bound);
    }
    let mut tail = f64::NEG_INFINITY;
    let mut acc = 0.0;
    for i in 0..pp {
        acc += compute[i];
        tail = tail.max(reduce[i] - acc);
    }
    result += tail.max(0.0);
    Ok(PipelineCost {
        stage_with_reduce: reduce,
        stage_compute: compute,
        chunks: max_chunk,
        iteration: result,
    })
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
    let hidden = if s.hidden_size > 0.0 {
        s.hidden_size
    } else {
        lt.types.iter().map(|t| t.hidden_size).fold(0.0, f64::max)
    };
    let seq = lt.types.iter().map(|t| t.seq_len).fold(0.0, f64::max);
    let mut mb = mbsz as f64 / min_tp as f64 * max_tp as f64 * hidden * seq * 4.0 / MB;
    if !s.mixed_precision.is_empty() {
        mb /= 2.0;
    }
    mb.trunc()
}

/// Transition cost R(i -> j) between the strategies of neighbouring layers of type `ty` (the
/// engine's `inter_layer_cost`, seconds-scaled by its `1e-7`): the activation of a micro-batch
/// regathered across the larger tp group when the tp layout changes (a larger tp, the same tp
/// with the other rank order, world 8 from tp 4 to tp 2 with the other order, or, under
/// sequence parallelism, any change of tp).
pub fn transition(
    lt: &LayerTypes,
    ty: usize,
    a: &Strategy,
    b: &Strategy,
    mbsz: u64,
    min_tp: u32,
) -> Result<f64, String> {
    let q = lt.settings.quirks;
    let t = &lt.types[ty];
    let case1 = b.tp > a.tp;
    let mut case2 = false;
    let mut case3 = false;
    if let (Some(ca), Some(cb)) = (a.consec, b.consec) {
        case2 = a.tp == b.tp && ca != cb;
        let world = a.tp * a.dp;
        case3 = q.transition_case3 && world == 8 && a.tp == 4 && b.tp == 2 && ca != cb;
    }
    let case4 = lt.settings.sequence_parallel && a.tp != b.tp;
    let sample = t.seq_len
        * t.hidden_size
        * if lt.settings.mixed_precision == "fp32" {
            4.0
        } else {
            2.0
        };
    let max_tp = a.tp.max(b.tp);
    let mut cost = 0.0;
    if case1 || case2 || case3 || case4 {
        cost = (max_tp as f64 - 1.0) / max_tp as f64
            * mbsz as f64
            * (max_tp / min_tp.max(1)) as f64
            * sample;
    }
    // The coefficient of the larger tp group (the rank order of the strategy that has it).
    let h = &lt.hardware;
    let miss = |k: String| format!("hardware profile has no allreduce coefficient \"{k}\"");
    let coe = if max_tp == 1 || a.dp.min(b.dp) == 1 {
        h.coe_plain(max_tp)
            .ok_or_else(|| miss(format!("{max_tp}_1")))?
    } else {
        let consec = if b.tp > a.tp { b.consec } else { a.consec };
        let k = format!("{max_tp}_{}", u8::from(consec == Some(true)));
        h.coe(&k).ok_or_else(|| miss(k))?
    };
    cost = cost * coe * 1e-7;
    if q.transition_biases && a != b {
        // Into a Ulysses layer from its tp twin.
        if a.matches_except_sp(b, false, false) && b.sp {
            cost = 1e-10;
        }
        if a.matches_except(b, true, false) && b.sdp() {
            cost = 1e-9;
        }
        if a.matches_except(b, false, true) && b.cpt {
            cost = 2e-9;
        }
        if a.matches_except(b, true, true) && b.sdp() && b.cpt {
            cost = 3e-9;
        }
        if a.matches_except(b, true, true)
            && !a.matches_except(b, true, false)
            && !a.matches_except(b, false, true)
            && a.sdp()
            && b.cpt
        {
            cost = 1e-9;
        }
    }
    Ok(cost)
}
