//! Galvatron results in the common plan format: each pipeline stage's GPUs carry runs of layers
//! with one strategy; a run is a [`Stage`], so a pipeline stage whose layers use different
//! strategies becomes neighbouring stages on the same GPU set (one pipeline position for the
//! evaluator under `1f1b` / `gpipe`). A stage's GPUs list its replicas' tp groups in turn:
//! consecutive ranks, or strided ones for a non-consecutive strategy (`consec = Some(false)`).

use super::engine::Found;
use pipeplan_formulations::export::layout::strided;
use pipeplan_formulations::galvatron::output::{as_run, whole_gradients, Extras};
use pipeplan_formulations::galvatron::{LayerTypes, PipelineType, Strategy};
use pipeplan_formulations::{Instance, Plan, Schedule, Stage};

/// The plan of a search result.
pub fn to_plan(inst: &Instance, lt: &LayerTypes, f: &Found) -> Plan {
    let b = &f.best;
    let per = inst.cluster.gpus / b.pp;
    let whole = whole_gradients(lt.settings.async_grad_reduce, b.chunks);
    let mut stages = Vec::new();
    let mut start = 0;
    for (i, &n) in b.partition.iter().enumerate() {
        let gpus: Vec<u32> = (i as u32 * per..(i as u32 + 1) * per).collect();
        let mut l = start;
        while l < start + n {
            let s = b.strategies[l];
            let mut e = l;
            while e + 1 < start + n && b.strategies[e + 1] == s {
                e += 1;
            }
            let stage = Stage {
                dp: s.dp,
                tp: s.tp,
                ulysses: s.sp,
                checkpoint: if s.cpt { (l..=e).collect() } else { Vec::new() },
                gpus: if s.consec == Some(false) {
                    strided(gpus[0], s.dp, s.tp)
                } else {
                    gpus.clone()
                },
                ..Stage::single(l, e, gpus[0])
            };
            // What the runtime runs, as the evaluator judges it.
            stages.push(as_run(stage, &lt.settings.default_dp_type, s.sdp(), whole));
            l = e + 1;
        }
        start += n;
    }
    let m = Some(b.chunks as u32);
    // The search picks its own batch: the plan says which micro-batch size it trains (uneven
    // chunks, as torch's `chunk` makes them, are rounded up to the largest).
    let micro_batch = Some(f.task.bsz.div_ceil(b.chunks.max(1)) as u32);
    let schedule = match lt.settings.pipeline_type {
        PipelineType::Gpipe => Schedule::Gpipe {
            micro_batches: m,
            micro_batch,
        },
        PipelineType::PipedreamFlush => Schedule::OneFOneB {
            micro_batches: m,
            micro_batch,
        },
    };
    Plan {
        order: None,
        stages,
        schedule,
    }
}

/// The search result's decisions the plan does not hold.
pub fn extras(lt: &LayerTypes, f: &Found) -> Extras {
    Extras {
        vtp: f.best.vtp,
        embed_sdp: f.task.embed_sdp,
        vsp: f.task.vsp,
        global_bsz: f.task.bsz,
        default_dp_type: lt.settings.default_dp_type.clone(),
    }
}

/// Claimed memory per GPU (bytes): the stage's memory in the engine's model.
pub fn peak_per_gpu(inst: &Instance, f: &Found) -> Vec<f64> {
    let per = (inst.cluster.gpus / f.best.pp) as usize;
    let mut out = Vec::new();
    for m in &f.best.mem_cost {
        out.extend(std::iter::repeat_n(m * 1024.0 * 1024.0, per));
    }
    out
}

/// `pp-tp-dp[*][f][-c]` per layer, runs compressed as `s x n`.
pub fn strategy_string(s: &[Strategy]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let mut j = i;
        while j + 1 < s.len() && s[j + 1] == s[i] {
            j += 1;
        }
        out.push(format!("{} x{}", s[i], j + 1 - i));
        i = j + 1;
    }
    out.join(", ")
}
