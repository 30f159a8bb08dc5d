//! The embedding and head time per vocabulary-tp degree (`OtherTimeCostModel`).

use super::{sp_missing, MB};
use crate::galvatron::profile::{Hardware, LayerTypes};

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
    let world = lt.settings.gpu_num();
    let ov = lt.hardware.overlap_coe;
    let (fwd_factor, bwd_factor) = if embed_sdp { (0.5, 1.0) } else { (0.0, 0.5) };
    let mut out = Vec::new();
    let mut k = min_tp;
    while k <= max_tp && world / pp >= k {
        let dp = world / pp / k;
        let per = tp_times(lt, mbsz, k, dp, vsp)?;
        let dp_coe = gradient_coe(&lt.hardware, k, dp, world / pp, vsp)?;
        let fct = mbsz as f64 / min_tp as f64 * lt.other.forward_ms_per_sample;
        let ends = ends(lt, pp, k, vsp, fct, &per)?;
        let mut with = vec![0.0; pp as usize];
        let mut without = vec![0.0; pp as usize];
        for (e, &(size, fct, tp_time)) in ends.iter().enumerate() {
            let at = if e == 0 { 0 } else { pp as usize - 1 };
            let comm = size * dp_coe;
            with[at] = 0.001
                * overlap(
                    ov,
                    comm * fwd_factor,
                    fct,
                    comm * bwd_factor,
                    fct * 2.0,
                    tp_time,
                );
            without[at] = 0.001
                * overlap(
                    ov,
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

/// The engine's `get_overlap_time` at overlap coefficient `ov`.
fn overlap(ov: f64, f_comm: f64, f_comp: f64, b_comm: f64, b_comp: f64, tp: f64) -> f64 {
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
}

/// The error of a missing all-reduce coefficient.
fn missing_coe(key: String) -> String {
    format!("hardware profile has no allreduce coefficient \"{key}\"")
}

/// Per layer type, the tp communication of a micro-batch through the vocabulary layers at
/// degree `k` with `dp` replicas (ms): none under `vsp`, Ulysses' all-to-all, or Megatron's
/// all-reduce.
fn tp_times(lt: &LayerTypes, mbsz: u64, k: u32, dp: u32, vsp: bool) -> Result<Vec<f64>, String> {
    let (set, h) = (&lt.settings, &lt.hardware);
    let hs = set.hidden_size_or(lt.types[0].hidden_size);
    let bytes = set.element_bytes();
    if vsp {
        return Ok(vec![0.0; lt.types.len()]);
    }
    if set.ulysses() {
        let c = (k > 1)
            .then(|| {
                h.sp_collective(k, false)
                    .ok_or_else(|| sp_missing(k, false))
            })
            .transpose()?;
        return Ok(lt
            .types
            .iter()
            .map(|t| c.map_or(0.0, |c| c.line_ms(mbsz as f64 * t.seq_len * hs * bytes)))
            .collect());
    }
    let tp_coe = if k == 1 || dp == 1 {
        h.coe_plain(k)
            .ok_or_else(|| missing_coe(format!("{k}_1")))?
    } else {
        h.coe(&format!("{k}_0"))
            .ok_or_else(|| missing_coe(format!("{k}_0")))?
    };
    Ok(lt
        .types
        .iter()
        .map(|t| (k as f64 - 1.0) / k as f64 * (mbsz as f64 * t.seq_len * hs / MB) * bytes * tp_coe)
        .collect())
}

/// The ring all-reduce coefficient of the vocabulary layers' gradients (ms per MB, times
/// `(n - 1) / n`): over the `dp` tp-`k` replicas, or every GPU of the stage (`stage_gpus`)
/// under `vsp`.
fn gradient_coe(h: &Hardware, k: u32, dp: u32, stage_gpus: u32, vsp: bool) -> Result<f64, String> {
    let group = if vsp { stage_gpus } else { dp };
    let coe = if vsp || k == 1 || dp == 1 {
        h.coe_plain(group)
            .ok_or_else(|| missing_coe(format!("{group}_1")))?
    } else {
        h.coe(&format!("{dp}_0"))
            .ok_or_else(|| missing_coe(format!("{dp}_0")))?
    };
    Ok(coe * ((group as f64 - 1.0) / group as f64))
}

/// (gradient bytes / 4, compute, tp time) of the first and last stage (one entry when `pp` is
/// 1), from the forward compute `fct` and the tp times `per` of [`tp_times`].
fn ends(
    lt: &LayerTypes,
    pp: u32,
    k: u32,
    vsp: bool,
    fct: f64,
    per: &[f64],
) -> Result<Vec<(f64, f64, f64)>, String> {
    let o = &lt.other;
    let key = |w: &str| format!("other memory profile has no {w} model_states for vocab tp {k}");
    // Under vsp the states are whole: profiled at tp 1.
    let ms_tp = if vsp { 1 } else { k };
    if pp == 1 {
        let size = o
            .pp_off
            .model_states_at(ms_tp)
            .ok_or_else(|| key("pp_off"))?
            / 4.0;
        let tp_time = per.iter().sum::<f64>() + per[per.len() - 1];
        return Ok(vec![(size, fct, tp_time)]);
    }
    // The engine sizes both ends' gradients by one end's model states: the first stage's, the
    // last stage's under vsp.
    let end = if vsp { &o.pp_on_last } else { &o.pp_on_first };
    let first = end
        .model_states_at(ms_tp)
        .ok_or_else(|| key(if vsp { "last-stage" } else { "first-stage" }))?
        / 4.0;
    Ok(vec![
        (first, fct / 2.0, per[0]),
        (first, fct / 2.0, per[per.len() - 1]),
    ])
}
