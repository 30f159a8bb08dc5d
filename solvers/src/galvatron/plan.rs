//! Galvatron results in the common plan format: each pipeline stage's GPUs carry runs of layers
//! with one strategy; a run is a [`Stage`], so a pipeline stage whose layers use different
//! strategies becomes neighbouring stages on the same GPU set (one pipeline position for the
//! evaluator under `1f1b` / `gpipe`). A stage's GPUs list its replicas' tp groups in turn:
//! consecutive ranks, or strided ones for a non-consecutive strategy (`consec = Some(false)`).

use super::engine::{Engine, Found};
use pipeplan_formulations::export::layout::strided;
use pipeplan_formulations::galvatron::cost::{layer_memory, MemoryCall};
use pipeplan_formulations::galvatron::output::Extras;
use pipeplan_formulations::galvatron::{LayerTypes, PipelineType, Strategy};
use pipeplan_formulations::{Instance, Plan, Schedule, Stage};

/// The plan of a search result.
pub fn to_plan(inst: &Instance, lt: &LayerTypes, f: &Found) -> Plan {
    let b = &f.best;
    let per = inst.cluster.gpus / b.pp;
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
            stages.push(Stage {
                dp: s.dp,
                tp: s.tp,
                sdp: s.sdp(),
                ulysses: s.sp,
                checkpoint: if s.cpt { (l..=e).collect() } else { Vec::new() },
                gpus: if s.consec == Some(false) {
                    strided(gpus[0], s.dp, s.tp)
                } else {
                    gpus.clone()
                },
                ..Stage::single(l, e, gpus[0])
            });
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

/// Why nothing fits: the cheapest strategy of the heaviest layer type vs. the budget.
pub fn why_infeasible(engine: &Engine) -> String {
    if let Some(why) = preset_exceeds_the_cluster(engine) {
        return why;
    }
    if let Some(why) = tp_above_the_searched_range(engine) {
        return why;
    }
    if let Some(why) = no_strategy_fills_the_cluster(engine) {
        return why;
    }
    let lt = engine.lt;
    let s = &lt.settings;
    let budget = s.memory_constraint * 1024.0;
    let gpus = s.gpu_num();
    let bsz = s.batch_sizes().first().copied().unwrap_or(1) as u64;
    let mut worst: Option<(f64, String, Strategy)> = None;
    for (ty, t) in lt.types.iter().enumerate() {
        let mut cheapest: Option<(f64, Strategy)> = None;
        for st in &engine.strategies {
            let call = MemoryCall {
                bsz,
                mbsz: (bsz / (gpus / st.pp) as u64).max(1),
                min_tp: 1,
                stage: 0,
                embed_sdp: !s.disable_sdp,
                vsp: false,
                pipeline: s.pipeline_type,
            };
            if let Ok(m) = layer_memory(lt, ty, st, &call) {
                let total = m.total * t.layers as f64 / st.pp as f64;
                if cheapest.is_none_or(|(c, _)| total < c) {
                    cheapest = Some((total, *st));
                }
            }
        }
        if let Some((c, st)) = cheapest {
            if worst.as_ref().is_none_or(|(w, _, _)| c > *w) {
                worst = Some((c, t.name.clone(), st));
            }
        }
    }
    match worst {
        Some((c, name, st)) => format!(
            "no strategy assignment fits the {budget:.0} MB budget ({:.0} MB usable after the cache reserve) at batch {bsz}; \
             the cheapest strategy for the {} layers of type {name} ({st}) needs {c:.0} MB per GPU for them alone, \
             plus {:.0} MB context and embedding memory",
            engine_budget(engine),
            lt.types.iter().find(|t| t.name == name).map_or(0, |t| t.layers),
            pipeplan_formulations::galvatron::cost::CONTEXT_MB
        ),
        None => "no strategy assignment fits the memory budget".into(),
    }
}

/// When the one strategy of a preset `search_space` (`tp`, `pp`, `3d`) asks for more GPUs than
/// the cluster has: the engine takes `max_tp_deg` or `max_pp_deg` as the degree and divides the
/// GPUs by it, so no data-parallel replica remains (it then finds no valid configuration under
/// `tp`, and divides by zero under `pp`).
fn preset_exceeds_the_cluster(engine: &Engine) -> Option<String> {
    let s = &engine.lt.settings;
    let st = engine.strategies.first()?;
    if engine.strategies.iter().any(|st| st.dp > 0) {
        return None;
    }
    let gpus = s.gpu_num();
    let fix = match s.search_space.as_str() {
        "tp" => format!("give the config's max_tp_deg a value of at most {gpus}"),
        "pp" => format!("give the config's max_pp_deg a value of at most {gpus}"),
        _ => format!("it needs at least {} GPUs", st.pp * st.tp),
    };
    Some(format!(
        "search_space `{}` fixes pp {} x tp {}, more than the {gpus} GPUs, which leaves no \
         data-parallel replica; {fix}",
        s.search_space, st.pp, st.tp
    ))
}

/// When every strategy's tp exceeds the largest `max_tp` a search task takes: the engine searches
/// layer strategies only within the vocabulary layers' tp range, which `disable_vtp` pins at 1
/// while the global memory buffer is on (the `tp` preset then has nothing to search).
fn tp_above_the_searched_range(engine: &Engine) -> Option<String> {
    let s = &engine.lt.settings;
    let widest = engine.tasks().iter().map(|t| t.max_tp).max()?;
    let least = engine.strategies.iter().map(|st| st.tp).min()?;
    if least <= widest {
        return None;
    }
    let why = if s.disable_vtp && s.global_memory_buffer {
        "disable_vtp 1 keeps the vocabulary layers at tp 1 and, with the global memory buffer on, \
         the layers' tp goes no higher; set disable_vtp 0 or global_memory_buffer false"
            .to_string()
    } else {
        format!(
            "the range stops at the GPU count and max_tp_deg ({} and {})",
            s.gpu_num(),
            s.max_tp_deg
        )
    };
    Some(format!(
        "every strategy of search_space `{}` has tp {least} or more, but the engine searches \
         layer tp only up to the vocabulary layers' largest tp, here {widest}, so it searches \
         nothing and finds no valid configuration either: {why}",
        s.search_space
    ))
}

/// When the batch cannot be split among the fewest data-parallel groups a search task allows:
/// the engine keeps a pipeline degree pp only when the batch divides evenly among its
/// `GPUs / (pp x min_tp)` groups (`min_tp` being the vocabulary layers' smallest tp) with a
/// sample per micro-batch, so too small or too odd a batch leaves no strategy at all.
fn no_strategy_fills_the_cluster(engine: &Engine) -> Option<String> {
    let lt = engine.lt;
    let s = &lt.settings;
    let layers: usize = lt.types.iter().map(|t| t.layers).sum();
    let tasks = engine.tasks();
    if tasks.is_empty() && s.settle_chunk > 0 {
        let sizes = s.batch_sizes();
        let batch = match sizes.as_slice() {
            [one] => format!("the batch of {one}"),
            _ => "any batch size searched".to_string(),
        };
        return Some(format!(
            "settle_chunk {} does not divide {batch}: the engine searches only chunk counts \
             that divide the batch (--set settle_chunk=N)",
            s.settle_chunk
        ));
    }
    if tasks.iter().any(|t| !engine.task_space(t).0.is_empty()) {
        return None;
    }
    let t = tasks.iter().min_by_key(|t| t.chunk)?;
    let gpus = s.gpu_num() as u64;
    let max_pp = engine
        .strategies
        .iter()
        .filter(|st| st.pp as usize <= layers)
        .map(|st| st.pp as u64)
        .max()?;
    let min_tp = tasks.iter().map(|t| t.min_tp as u64).max()?;
    let groups = (gpus / (max_pp * min_tp)).max(1);
    let micro = |n: u64| {
        if n == 1 {
            "1 micro-batch".to_string()
        } else {
            format!("{n} micro-batches")
        }
    };
    if t.bsz % groups == 0 && t.chunk <= t.bsz / groups {
        // The groups fill; the chunk count is what fails: the engine keeps it only when
        // micro-batches of one size make exactly that many of the replica's samples.
        let local = t.bsz / groups;
        let size = local.div_ceil(t.chunk);
        return Some(format!(
            "no strategy uses the {gpus} GPUs: {} of a replica's {local} samples take \
             {size} samples each, which make {}; the engine keeps a chunk count only when \
             micro-batches of one size make exactly that many (--set settle_chunk=N; any N \
             dividing {local} does)",
            micro(t.chunk),
            micro(local.div_ceil(size)),
        ));
    }
    let pp_why = if max_pp == s.max_pp_deg as u64 {
        "max_pp_deg".to_string()
    } else if 2 * max_pp > layers as u64 && 2 * max_pp <= gpus {
        format!("the {layers} layers: a stage holds at least one")
    } else {
        "the search space and the GPUs".to_string()
    };
    let tp_why = if s.disable_vtp {
        "disable_vtp 1"
    } else {
        "max_tp_deg and the GPUs"
    };
    Some(format!(
        "no strategy uses the {gpus} GPUs: the engine keeps a pipeline degree pp only when the \
         {}-sample batch splits evenly among the {gpus} / (pp x min_tp) data-parallel groups \
         with a sample per micro-batch ({}); pp is at most {max_pp} ({pp_why}) \
         and the vocabulary layers' tp min_tp at most {min_tp} ({tp_why}), so there are at \
         least {groups} groups, which the batch does not fill; give a batch that is a multiple \
         of {groups}{} (--set settle_bsz=N){}",
        t.bsz,
        micro(t.chunk),
        if t.chunk > 1 {
            format!(" and at least {}", groups * t.chunk)
        } else {
            String::new()
        },
        if t.chunk > 1 {
            " or fewer micro-batches (--set settle_chunk=N)"
        } else {
            ""
        }
    ))
}

fn engine_budget(engine: &Engine) -> f64 {
    let s = &engine.lt.settings;
    let m0 = (s.memory_constraint * 1024.0).floor();
    if s.quirks.mem_cache && (m0 / 1024.0).floor() > 20.0 {
        m0 - (m0 * 0.2).floor()
    } else {
        m0
    }
}
