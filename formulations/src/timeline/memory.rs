//! Each GPU's memory over a timeline.

use super::{Event, EventKind, Track};
use crate::cost::StageCost;
use crate::instance::Instance;
use crate::plan::Plan;
use std::collections::BTreeMap;

/// Memory per GPU over time from the events (see the module docs).
pub(super) fn memory(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    events: &[Event],
    end: f64,
) -> BTreeMap<u32, Vec<(f64, f64)>> {
    let reserved = inst.calibration().reserved_memory;
    let mut base: BTreeMap<u32, f64> = BTreeMap::new();
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            *base.entry(g).or_insert(reserved) += costs[s].states + costs[s].buffers;
        }
    }
    // (time, order, gpu, delta): at equal times releases come before allocations.
    let mut deltas: Vec<(f64, u8, u32, f64)> = Vec::new();
    // Activations: from the forward's start to the end of the backward's last part.
    let mut life: BTreeMap<(usize, i64), (f64, f64)> = BTreeMap::new();
    for e in events {
        let (Some(mb), Track::Gpus(_)) = (e.micro_batch, &e.track) else {
            continue;
        };
        let entry = life
            .entry((e.stage, mb))
            .or_insert((f64::INFINITY, f64::NEG_INFINITY));
        match e.kind {
            EventKind::Forward => entry.0 = entry.0.min(e.start),
            EventKind::Swap | EventKind::Recompute | EventKind::Backward | EventKind::GradSync => {
                entry.1 = entry.1.max(e.end)
            }
            _ => {}
        }
        if e.kind == EventKind::Backward && costs[e.stage].transient > 0.0 {
            for &g in &plan.stages[e.stage].gpus {
                deltas.push((e.start, 1, g, costs[e.stage].transient));
                deltas.push((e.end, 0, g, -costs[e.stage].transient));
            }
        }
    }
    for (&(s, _), &(from, to)) in &life {
        if !from.is_finite() {
            continue;
        }
        // A micro-batch whose backward lies beyond the window stays stored until its end.
        let to = if to.is_finite() { to } else { end };
        for &g in &plan.stages[s].gpus {
            deltas.push((from, 1, g, costs[s].act_per_mb));
            deltas.push((to, 0, g, -costs[s].act_per_mb));
        }
    }
    // A release and an allocation computed at the same instant by different sums of durations
    // may differ by rounding: within a relative 1e-9 they count as simultaneous (release first,
    // as the simulator counts micro-batches in flight).
    let tol = 1e-9 * end.max(1.0);
    for d in deltas.iter_mut().filter(|d| d.1 == 0) {
        d.0 -= tol;
    }
    deltas.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for d in deltas.iter_mut().filter(|d| d.1 == 0) {
        d.0 = (d.0 + tol).max(0.0);
    }
    let mut out: BTreeMap<u32, Vec<(f64, f64)>> =
        base.iter().map(|(&g, &b)| (g, vec![(0.0, b)])).collect();
    for (t, _, g, d) in deltas {
        let steps = out.get_mut(&g).expect("a GPU of the plan");
        let v = steps.last().map_or(0.0, |s| s.1) + d;
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = v,
            _ => steps.push((t, v)),
        }
    }
    out
}
