//! An asynchronous plan's timeline: the periodic pattern unrolled over its warm-up and periods.

use super::{backward_parts, Event, EventKind, Timeline, Track};
use crate::cost::StageCost;
use crate::instance::{Instance, ScheduleKind};
use crate::plan::{OpKind, Plan};
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
            let gpus = Track::Gpus(plan.stages[s].gpus.clone());
            match o.id.op {
                OpKind::F => events.push(Event {
                    kind: EventKind::Forward,
                    stage: s,
                    micro_batch: Some(mb),
                    start,
                    end: start + o.duration,
                    track: gpus,
                }),
                OpKind::B => {
                    events.extend(backward_parts(
                        &costs[s],
                        s,
                        mb,
                        start,
                        Some(costs[s].grad_sync),
                        &gpus,
                    ));
                }
                OpKind::SendF | OpKind::SendB => {
                    let (a, b) = (plan.stages[s].gpus[0], plan.stages[s + 1].gpus[0]);
                    events.push(Event {
                        kind: if o.id.op == OpKind::SendF {
                            EventKind::SendForward
                        } else {
                            EventKind::SendBackward
                        },
                        stage: s,
                        micro_batch: Some(mb),
                        start,
                        end: start + o.duration,
                        track: Track::Link(a, b),
                    })
                }
            }
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
