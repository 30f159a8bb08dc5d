//! The transition cost between neighbouring layers' strategies (`inter_layer_cost`).

use crate::galvatron::profile::LayerTypes;
use crate::galvatron::strategy::Strategy;

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
    // The engine sizes the activation with its `hidden_size` argument for every layer type.
    let sample =
        t.seq_len * lt.settings.hidden_size_or(t.hidden_size) * lt.settings.element_bytes();
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
