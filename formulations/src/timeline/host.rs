//! Swaps on the host links (PCIe), placed around the forwards and backwards that cause them.

use super::{Event, EventKind, Track};
use crate::cost::StageCost;
use crate::plan::Plan;

/// Swap-out after each forward and swap-in before each backward of a stage that swaps, on the
/// host links; the swap-in ends when the backward proper may start (after the wait).
pub(super) fn swap_transfers(plan: &Plan, costs: &[StageCost], events: &[Event]) -> Vec<Event> {
    let mut out = Vec::new();
    for e in events {
        let c = &costs[e.stage];
        if c.swap_transfer <= 0.0 || e.micro_batch.is_none() {
            continue;
        }
        let host = Track::Host(plan.stages[e.stage].gpus.clone());
        let (kind, start) = match e.kind {
            EventKind::Forward => (EventKind::SwapOut, e.end),
            // The first part of a backward: the wait when there is one, else the rest.
            EventKind::Swap => (EventKind::SwapIn, e.end - c.swap_transfer),
            EventKind::Recompute | EventKind::Backward
                if c.swap_stall <= 0.0
                    && (e.kind == EventKind::Recompute || c.recompute + c.reforward <= 0.0) =>
            {
                (EventKind::SwapIn, e.start - c.swap_transfer)
            }
            _ => continue,
        };
        out.push(Event {
            kind,
            stage: e.stage,
            micro_batch: e.micro_batch,
            start,
            end: start + c.swap_transfer,
            track: host.clone(),
        });
    }
    out
}
