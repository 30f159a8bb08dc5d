//! PipeDream: the runtime configuration (`--config_path` of `main_with_runtime.py`, as in
//! `runtime/<task>/models/<model>/gpus=N/*.json`). The code generator makes one module per stage
//! of the partitioned graph plus the loss (criterion) module; the configuration maps modules to
//! stages (`module_to_stage_map`), stages to ranks (`stage_to_rank_map`, a stage's ranks are its
//! data-parallel replicas) and gives each stage's depth, the number of stages after it
//! (`stage_to_depth_map`).

use super::RuntimePlan;
use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// PipeDream's runtime configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Runtime stage of each generated module (the last module is the criterion).
    pub module_to_stage_map: Vec<usize>,
    /// Ranks of each stage, keyed by the stage index as a string.
    pub stage_to_rank_map: BTreeMap<String, Vec<u32>>,
    /// Stages after each stage, keyed by the stage index as a string (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_to_depth_map: Option<BTreeMap<String, usize>>,
}

/// Whether the period `t` fixed by an asynchronous plan is the one PipeDream's runtime paces
/// itself to: the least period the plan's loads allow, the evaluator's period of the plan
/// without one (as `pipedream` plans carry when no memory limit slows them).
fn at_own_pace(inst: &Instance, plan: &Plan, t: f64) -> bool {
    let free = Plan {
        schedule: Schedule::one_f_one_b_star(None),
        ..plan.clone()
    };
    crate::evaluate::evaluate(inst, &free)
        .ok()
        .and_then(|e| e.period_ms)
        .is_some_and(|p| (p - t).abs() <= 1e-9 * p.max(t))
}

/// Why PipeDream's runtime cannot run the plan as it is (empty: it can).
pub fn limits(inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
    let plan = &rp.plan;
    let mut why = Vec::new();
    match &plan.schedule {
        Schedule::Async {
            period: None,
            pattern: None,
        } => {}
        Schedule::Async {
            period: Some(t),
            pattern: None,
        } if at_own_pace(inst, plan, *t) => {}
        Schedule::Async { period, pattern } => why.push(format!(
            "the schedule fixes {}; PipeDream's runtime paces itself (1F1B at the least period, \
             with as many micro-batches in flight as that keeps)",
            match (pattern, period) {
                (Some(_), _) => "an explicit pattern".to_string(),
                (None, Some(t)) => format!("a period of {t:.3} ms"),
                (None, None) => unreachable!("matched above"),
            }
        )),
        _ => why.push(
            "the schedule is synchronous; PipeDream's runtime is asynchronous (1F1B with weight \
             stashing)"
                .into(),
        ),
    }
    if !plan.is_contiguous() {
        why.push(
            "stages share GPUs (a non-contiguous allocation); PipeDream gives each rank one stage"
                .into(),
        );
    }
    let used = plan.gpus();
    if used.iter().enumerate().any(|(i, &g)| g != i as u32) {
        why.push(format!(
            "the plan uses GPUs {used:?}; PipeDream's ranks are 0..{} with none left out",
            used.len()
        ));
    }
    let which = |f: &dyn Fn(&Stage) -> bool| -> Option<String> {
        let v: Vec<String> = (0..plan.stages.len())
            .filter(|&s| f(&plan.stages[s]))
            .map(|s| s.to_string())
            .collect();
        (!v.is_empty()).then(|| {
            format!(
                "stage{} {}",
                if v.len() > 1 { "s" } else { "" },
                v.join(", ")
            )
        })
    };
    if let Some(s) = which(&|st| st.tp > 1) {
        why.push(format!(
            "{s}: tensor parallel; PipeDream has no tensor parallelism"
        ));
    }
    if let Some(s) = which(&|st| st.sdp) {
        why.push(format!(
            "{s}: sharded model states (ZeRO-3); PipeDream replicates them"
        ));
    }
    if let Some(s) = which(&Stage::divides_part_of_states) {
        why.push(format!(
            "{s}: optimizer states or gradients divided among the replicas (ZeRO-1 or -2); \
             PipeDream replicates them"
        ));
    }
    if let Some(s) = which(&|st| !st.checkpoint.is_empty()) {
        why.push(format!(
            "{s}: activation checkpointing; PipeDream's runtime stashes every activation"
        ));
    }
    why.extend(super::layout::memory_actions(plan, "PipeDream"));
    why
}

/// The nearest plan PipeDream runs: asynchronous at its own pace, one stage per group of GPUs (stages sharing
/// GPUs merged with their neighbours), every GPU a replica (tp folded into dp, no sharding, no
/// checkpointing, swap or recompute), GPUs renumbered `0..`.
pub fn nearest(_inst: &Instance, plan: &Plan) -> Plan {
    let mut groups: Vec<Stage> = Vec::new();
    let mut owner: BTreeMap<u32, usize> = BTreeMap::new();
    for st in &plan.stages {
        let shared = st.gpus.iter().filter_map(|g| owner.get(g)).min().copied();
        match shared {
            Some(i) => {
                // Merge every group from i on into one stage on the union of their GPUs.
                let mut merged = groups.split_off(i);
                let mut g = merged.remove(0);
                for o in merged {
                    g.last = o.last;
                    g.gpus.extend(o.gpus);
                }
                g.last = st.last;
                g.gpus.extend(st.gpus.iter().copied());
                g.gpus.sort_unstable();
                g.gpus.dedup();
                groups.push(g);
            }
            None => groups.push(st.clone()),
        }
        owner.clear();
        for (i, g) in groups.iter().enumerate() {
            for &x in &g.gpus {
                owner.insert(x, i);
            }
        }
    }
    let mut next = 0u32;
    let stages = groups
        .into_iter()
        .map(|g| {
            let n = g.gpus.len() as u32;
            let gpus: Vec<u32> = (next..next + n).collect();
            next += n;
            Stage {
                gpus,
                dp: n,
                ..Stage::single(g.first, g.last, 0)
            }
        })
        .collect();
    Plan {
        order: None,
        stages,
        schedule: Schedule::one_f_one_b_star(None),
    }
}

/// The configuration of an expressible plan: one module per stage and the criterion on the
/// last stage.
pub fn config(plan: &Plan) -> RuntimeConfig {
    let n = plan.stages.len();
    let mut modules: Vec<usize> = (0..n).collect();
    modules.push(n - 1);
    RuntimeConfig {
        module_to_stage_map: modules,
        stage_to_rank_map: plan
            .stages
            .iter()
            .enumerate()
            .map(|(s, st)| (s.to_string(), st.gpus.clone()))
            .collect(),
        stage_to_depth_map: Some((0..n).map(|s| (s.to_string(), n - 1 - s)).collect()),
    }
}

/// The configuration file of an expressible plan.
pub fn write(_inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
    Ok(serde_json::to_string_pretty(&config(&rp.plan)).expect("serializable"))
}
