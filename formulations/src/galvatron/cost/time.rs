//! A layer's time under a strategy (`TimeCostModel`).

use super::{parameter_mb, sp_missing, MB};
use crate::galvatron::profile::LayerTypes;
use crate::galvatron::strategy::Strategy;

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
    let param = parameter_mb(t, s);
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
    let bytes = bs * t.seq_len * t.hidden_size * lt.settings.element_bytes();
    let c = lt
        .hardware
        .sp_collective(s.tp, s.sp)
        .ok_or_else(|| sp_missing(s.tp, s.sp))?;
    Ok(count * c.time_ms(bytes))
}
