//! PipeDream's runtime configuration ([`RuntimeConfig`]) as a plan. The configuration maps
//! modules to stages and stages to ranks; which layers a module holds is in the partitioned
//! graph the code generator read (`stage_id=N` on each node line: module `N`), given as
//! [`ReadOptions::modules`]. Its node ids are matched to the instance's layer names (an
//! instance imported from the same profile, `import --from pipedream`, has them). The last
//! module may be the criterion, which holds no layer. Every stage becomes a [`Stage`] whose
//! replicas are its ranks (rank = GPU id), asynchronous as PipeDream runs. PipeDream's optimizer
//! cuts its graph at down-sets, so a stage's layers need not be a range of the chain: the plan
//! then lists the layers stage after stage (`plan.order`), which the instance's layer graph
//! must allow (`crate::layer_order`).

use super::ReadOptions;
use crate::error::InputError;
use crate::export::pipedream::RuntimeConfig;
use crate::export::RuntimePlan;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};
use std::collections::BTreeMap;

fn bad(field: &str, msg: impl Into<String>) -> InputError {
    InputError::field(field, msg)
}

/// `node -> module` of a partitioned graph: node lines ending in `-- stage_id=N`.
fn modules(text: &str) -> Result<BTreeMap<String, usize>, InputError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('\t') || line.trim().is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split(" -- ").map(str::trim).collect();
        let Some(sid) = parts.last().and_then(|p| p.strip_prefix("stage_id=")) else {
            continue;
        };
        let sid = sid.parse().map_err(|_| {
            bad(
                &format!("line {}", i + 1),
                format!("stage_id=`{sid}` is not a whole number"),
            )
        })?;
        out.insert(parts[0].to_string(), sid);
    }
    if out.is_empty() {
        return Err(bad(
            "",
            "no node line ends in `-- stage_id=N`: not a partitioned PipeDream graph",
        ));
    }
    Ok(out)
}

/// Reads a runtime configuration.
pub fn read(text: &str, inst: &Instance, opts: &ReadOptions) -> Result<RuntimePlan, InputError> {
    let cfg: RuntimeConfig = crate::error::parse_json(text, "PipeDream runtime configuration")?;
    let (name, graph) = opts.modules.as_ref().ok_or_else(|| {
        bad(
            "module_to_stage_map",
            "which layers each module holds is in the partitioned graph the code generator \
             read: give it (--modules FILE)",
        )
    })?;
    let by_node = modules(graph).map_err(|e| e.in_file(std::path::Path::new(name)))?;
    let placed = placement(inst, &by_node, &cfg)?;
    // The layers stage after stage, module after module, each in chain order: the plan's layer
    // order. The optimizer cuts its graph at down-sets, so a stage need not be a range of the
    // chain (the plan then names this order; its check needs the instance's layer graph).
    let mut order: Vec<usize> = (0..placed.len()).collect();
    order.sort_by_key(|&l| (placed[l], l));
    let stages = stages(&cfg, &order, &placed)?;
    check_depths(&cfg)?;
    Ok(RuntimePlan::of(Plan {
        order: crate::layer_order::plan_order(order),
        stages,
        schedule: Schedule::one_f_one_b_star(None),
    }))
}

/// The stage and module of every layer of `inst`.
fn placement(
    inst: &Instance,
    by_node: &BTreeMap<String, usize>,
    cfg: &RuntimeConfig,
) -> Result<Vec<(usize, usize)>, InputError> {
    let stages_n = cfg.stage_to_rank_map.len();
    let map = &cfg.module_to_stage_map;
    let mut placed = Vec::with_capacity(inst.num_layers());
    for layer in &inst.model.layers {
        let m = by_node.get(&layer.name).copied().ok_or_else(|| {
            bad(
                "module_to_stage_map",
                format!(
                    "layer `{}` of the instance is in no module of the partitioned graph",
                    layer.name
                ),
            )
        })?;
        let s = *map.get(m).ok_or_else(|| {
            bad(
                "module_to_stage_map",
                format!(
                    "{} entries, but the partitioned graph has module {m}",
                    map.len()
                ),
            )
        })?;
        if s >= stages_n {
            return Err(bad(
                &format!("module_to_stage_map[{m}]"),
                format!("stage {s}, but stage_to_rank_map has {stages_n} stages"),
            ));
        }
        placed.push((s, m));
    }
    Ok(placed)
}

/// The stages, in chain order, each the range of `order` its layers take and its ranks.
fn stages(
    cfg: &RuntimeConfig,
    order: &[usize],
    placed: &[(usize, usize)],
) -> Result<Vec<Stage>, InputError> {
    let stages_n = cfg.stage_to_rank_map.len();
    let mut stage_layers: Vec<Option<(usize, usize)>> = vec![None; stages_n];
    for (p, &l) in order.iter().enumerate() {
        let range = stage_layers[placed[l].0].get_or_insert((p, p));
        range.1 = p;
    }
    let mut stages = Vec::new();
    for (s, layers) in stage_layers.into_iter().enumerate() {
        let key = s.to_string();
        let ranks = cfg.stage_to_rank_map.get(&key).ok_or_else(|| {
            bad(
                "stage_to_rank_map",
                format!("no stage \"{key}\" (stages are numbered 0..{stages_n})"),
            )
        })?;
        let (first, last) = layers.ok_or_else(|| {
            bad(
                "module_to_stage_map",
                format!("stage {s} holds no module with layers"),
            )
        })?;
        if ranks.is_empty() {
            return Err(bad(&format!("stage_to_rank_map.{key}"), "no rank"));
        }
        stages.push(Stage {
            gpus: ranks.clone(),
            dp: ranks.len() as u32,
            ..Stage::single(first, last, ranks[0])
        });
    }
    stages.sort_by_key(|s| s.first);
    Ok(stages)
}

/// `stage_to_depth_map`, when given, describes a straight pipeline.
fn check_depths(cfg: &RuntimeConfig) -> Result<(), InputError> {
    let stages_n = cfg.stage_to_rank_map.len();
    if let Some(depths) = &cfg.stage_to_depth_map {
        for (k, &d) in depths {
            let s: usize = k
                .parse()
                .map_err(|_| bad("stage_to_depth_map", format!("key `{k}` is not a stage")))?;
            if s >= stages_n || d != stages_n - 1 - s {
                return Err(bad(
                    &format!("stage_to_depth_map.{k}"),
                    format!(
                        "depth {d}; a straight pipeline of {stages_n} stages has {} stages after stage {s}",
                        stages_n.saturating_sub(1 + s)
                    ),
                ));
            }
        }
    }
    Ok(())
}
