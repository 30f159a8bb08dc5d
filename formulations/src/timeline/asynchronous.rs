//! An asynchronous plan's timeline: the periodic pattern unrolled over its warm-up and periods.

use super::{op_events, Timeline};
use crate::cost::StageCost;
use crate::instance::{Instance, ScheduleKind};
use crate::plan::Plan;
use crate::simulate::timed_ops;
use std::collections::BTreeMap;

pub(super) fn asynchronous(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    pattern: &crate::plan::Pattern,
    periods: usize,
) -> Timeline {
    let ops = timed_ops(inst, plan, pattern);
    let t = pattern.period;
    let warm = ops.iter().map(|o| o.shift).max().unwrap_or(0).max(0) as usize;
    let total = warm + periods.max(1);
    let mut events = Vec::new();
    for k in 0..total as i64 {
        for o in &ops {
            let mb = k - o.shift;
            if mb < 0 {
                continue;
            }
            let start = k as f64 * t + o.start;
            let s = o.id.stage;
            let sync = Some(costs[s].grad_sync);
            events.extend(op_events(
                plan,
                &costs[s],
                o.id.op,
                s,
                mb,
                (start, o.duration),
                sync,
            ));
        }
    }
    let end = events.iter().map(|e| e.end).fold(0.0, f64::max);
    Timeline {
        schedule: ScheduleKind::Async,
        events,
        memory: BTreeMap::new(),
        period: Some(t),
        steady_from: Some(warm as f64 * t),
        end,
    }
}
