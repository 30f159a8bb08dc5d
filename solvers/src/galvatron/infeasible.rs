//! Why a Galvatron search found no plan: the engine's rule that left it nothing to search (a
//! preset above the GPUs, layer tp above the vocabulary layers' range, a batch or chunk count
//! its filters skip), else the memory the least demanding searched strategy needs against the
//! budget.

use super::engine::{Engine, Task};
use pipeplan_formulations::galvatron::cost::layer_memory;
use pipeplan_formulations::galvatron::Strategy;
use std::collections::HashMap;

/// Why nothing fits: the engine's rule that left nothing to search, else the least memory a
/// searched strategy needs against the budget.
pub fn why_infeasible(engine: &Engine) -> String {
    let tasks: Vec<Searched> = engine
        .tasks()
        .into_iter()
        .map(|t| {
            let (space, mbsz) = engine.task_space(&t);
            Searched { t, space, mbsz }
        })
        .collect();
    let rule = preset_exceeds_the_cluster(engine)
        .or_else(|| tp_above_the_searched_range(engine, &tasks))
        .or_else(|| chunk_divides_no_batch(engine, &tasks))
        .or_else(|| no_strategy_fills_the_cluster(engine, &tasks));
    if let Some(why) = rule {
        return why;
    }
    let (budget, usable) = (engine.budget_mb(), engine.max_mem);
    let head = format!(
        "no strategy assignment fits the {budget:.0} MB budget ({usable:.0} MB usable after the \
         cache reserve)"
    );
    let Some(l) = least_memory(engine, &tasks) else {
        return head;
    };
    let verdict = if l.total <= usable {
        "; that is within the budget, so what exceeds it is the engine's division of the \
         layers among the stages, uneven where they differ"
    } else {
        ""
    };
    format!(
        "{head}: the least any searched strategy needs on its busiest pipeline stage, with \
         every layer on it and the layers divided evenly, is {:.0} MB ({} at batch {} in {}, \
         stage {}: {:.0} MB of layers, {:.0} MB of context, embedding and head){verdict}",
        l.total,
        l.strategy,
        l.bsz,
        micro_batches(l.chunk),
        l.stage,
        l.layers,
        l.other
    )
}

/// A search task with the strategies it keeps and its micro-batch size per pipeline degree.
struct Searched {
    t: Task,
    space: Vec<Strategy>,
    mbsz: HashMap<u32, u64>,
}

/// The memory of one searched strategy on its busiest pipeline stage (MB).
struct StageMemory {
    total: f64,
    layers: f64,
    other: f64,
    stage: usize,
    strategy: Strategy,
    bsz: u64,
    chunk: u64,
}

/// Over every search task and every strategy it keeps, with every layer on that strategy and
/// the layers divided evenly among the stages: the least memory of the busiest stage, its
/// layers' share (with the micro-batches in flight there) plus its context, embedding and head
/// (at the vocabulary tp that needs least).
fn least_memory(engine: &Engine, tasks: &[Searched]) -> Option<StageMemory> {
    let mut least: Option<StageMemory> = None;
    for Searched { t, space, mbsz } in tasks {
        for st in space {
            let Some(busiest) = (0..st.pp as usize)
                .map(|stage| stage_memory(engine, t, st, mbsz[&st.pp], stage))
                .collect::<Option<Vec<_>>>()
                .and_then(|v| v.into_iter().max_by(|a, b| a.total.total_cmp(&b.total)))
            else {
                continue;
            };
            if least.as_ref().is_none_or(|l| busiest.total < l.total) {
                least = Some(busiest);
            }
        }
    }
    least
}

/// Stage `stage`'s memory under strategy `st` in task `t` (None where the profiles lack a key).
fn stage_memory(
    engine: &Engine,
    t: &Task,
    st: &Strategy,
    mbsz: u64,
    stage: usize,
) -> Option<StageMemory> {
    let lt = engine.lt;
    let call = engine.memory_call(t, mbsz, stage);
    let (mut layers, mut other) = (0.0, f64::INFINITY);
    for (ty, lty) in lt.types.iter().enumerate() {
        let m = layer_memory(lt, ty, st, &call).ok()?;
        layers += m.total * lty.layers as f64 / st.pp as f64;
        for (_, stages) in &m.other {
            other = other.min(stages[stage]);
        }
    }
    let total = layers + other;
    total.is_finite().then_some(StageMemory {
        total,
        layers,
        other,
        stage,
        strategy: *st,
        bsz: t.bsz,
        chunk: t.chunk,
    })
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
fn tp_above_the_searched_range(engine: &Engine, tasks: &[Searched]) -> Option<String> {
    let s = &engine.lt.settings;
    let widest = tasks.iter().map(|x| x.t.max_tp).max()?;
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
fn no_strategy_fills_the_cluster(engine: &Engine, tasks: &[Searched]) -> Option<String> {
    if tasks.iter().any(|x| !x.space.is_empty()) {
        return None;
    }
    let lt = engine.lt;
    let s = &lt.settings;
    let layers: usize = lt.types.iter().map(|t| t.layers).sum();
    let t = &tasks.iter().min_by_key(|x| x.t.chunk)?.t;
    let gpus = s.gpu_num() as u64;
    let max_pp = engine
        .strategies
        .iter()
        .filter(|st| st.pp as usize <= layers)
        .map(|st| st.pp as u64)
        .max()?;
    let min_tp = tasks.iter().map(|x| x.t.min_tp as u64).max()?;
    let groups = (gpus / (max_pp * min_tp)).max(1);
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
            micro_batches(t.chunk),
            micro_batches(local.div_ceil(size)),
        ));
    }
    let pp_why = if max_pp == s.max_pp_deg as u64 {
        "max_pp_deg".to_string()
    } else if 2 * max_pp > layers as u64 && 2 * max_pp <= gpus {
        format!("the {layers} layers: a stage holds at least one")
    } else {
        "the search space and the GPUs".to_string()
    };
    let (at_least, fewer) = if t.chunk > 1 {
        (
            format!(" and at least {}", groups * t.chunk),
            " or fewer micro-batches (--set settle_chunk=N)",
        )
    } else {
        (String::new(), "")
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
         of {groups}{at_least} (--set settle_bsz=N){fewer}",
        t.bsz,
        micro_batches(t.chunk),
    ))
}

/// When a `settle_chunk` divides no batch size searched: the engine searches only chunk counts
/// that divide the batch, so there is no task at all.
fn chunk_divides_no_batch(engine: &Engine, tasks: &[Searched]) -> Option<String> {
    let s = &engine.lt.settings;
    if !tasks.is_empty() || s.settle_chunk <= 0 {
        return None;
    }
    let sizes = s.batch_sizes();
    let batch = match sizes.as_slice() {
        [one] => format!("the batch of {one}"),
        _ => "any batch size searched".to_string(),
    };
    Some(format!(
        "settle_chunk {} does not divide {batch}: the engine searches only chunk counts that \
         divide the batch (--set settle_chunk=N)",
        s.settle_chunk
    ))
}

/// "1 micro-batch", "n micro-batches".
fn micro_batches(n: u64) -> String {
    if n == 1 {
        "1 micro-batch".to_string()
    } else {
        format!("{n} micro-batches")
    }
}
