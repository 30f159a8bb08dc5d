//! What [`export`](super::export) says when a runtime cannot run a plan: every reason, and the
//! nearest plan the runtime runs with its evaluated cost beside the plan's own.

use super::{layout, Inexpressible};
use crate::evaluate::{evaluate, Evaluation};
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};
use crate::units::{fmt_bytes, fmt_ms};
use std::collections::BTreeSet;

impl Inexpressible {
    /// The refusal of `plan` on `inst`, in one line (without the file it came from): the
    /// reasons, the nearest plan's shape and both plans' evaluated costs.
    pub fn message(&self, inst: &Instance, plan: &Plan) -> String {
        let cost = |plan| match evaluate(inst, plan) {
            Ok(e) => summary(&e),
            Err(e) => format!("not evaluated: {e}"),
        };
        format!(
            "{} cannot run this plan as it is: {}. The nearest plan it runs ({}) evaluates to {} \
             (this plan: {}); nothing was written",
            self.format.runtime(),
            self.reasons.join("; "),
            shape(inst, &self.nearest),
            cost(&self.nearest),
            cost(plan),
        )
    }
}

/// Stages, degrees, ZeRO stages, schedule and batch of a plan, in a few words.
fn shape(inst: &Instance, plan: &Plan) -> String {
    let set = |f: &dyn Fn(&Stage) -> u32| {
        let v: BTreeSet<u32> = plan.stages.iter().map(f).collect();
        v.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
    };
    let positions = plan
        .positions()
        .map_or(plan.stages.len(), |p| p.last().map_or(0, |&x| x + 1));
    let batch = match &plan.schedule {
        Schedule::Async { .. } => "asynchronous".to_string(),
        s => {
            let (micro, m) = layout::batch(inst, plan);
            let kind = if matches!(s, Schedule::Gpipe { .. }) {
                "GPipe"
            } else {
                "1F1B"
            };
            format!("{kind}, {m} micro-batches of {micro} samples")
        }
    };
    // The ZeRO stage is said only where some stage divides its states.
    let zero = if plan.stages.iter().any(|s| s.zero_stage() > 0) {
        let whole = if plan.stages.iter().any(Stage::shards_with_whole_gradients) {
            " (whole gradients)"
        } else {
            ""
        };
        format!(", ZeRO {}{whole}", set(&|s| u32::from(s.zero_stage())))
    } else {
        String::new()
    };
    format!(
        "{positions} pipeline stage{}, tp {}, dp {}{zero}, {batch}",
        if positions == 1 { "" } else { "s" },
        set(&|s| s.tp),
        set(&|s| s.dp)
    )
}

/// Time, throughput and memory of an evaluation, in a few words.
fn summary(e: &Evaluation) -> String {
    let time = match (e.iteration_ms, e.period_ms) {
        (Some(t), _) => format!("{} per iteration", fmt_ms(t)),
        (None, Some(t)) => format!("{} period", fmt_ms(t)),
        (None, None) => "no time".into(),
    };
    format!(
        "{time}, {:.2} samples/s, max memory {}{}",
        e.throughput,
        fmt_bytes(e.max_memory),
        if e.fits { "" } else { ", does NOT fit" }
    )
}
