//! The embedding and head time per vocabulary-tp degree (`OtherTimeCostModel`).

use super::{sp_missing, MB};
use crate::galvatron::profile::LayerTypes;

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
