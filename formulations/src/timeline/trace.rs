//! A [`Timeline`] in the Chrome trace-event format (Perfetto, `chrome://tracing`): one track
//! (thread) per GPU and per link, one complete event (`"ph": "X"`, microseconds) per operation
//! and GPU, and a memory counter (`"ph": "C"`) per GPU.

use super::{timeline, EventKind, Timeline, Track};
use crate::error::InputError;
use crate::evaluate::Evaluation;
use crate::instance::Instance;
use crate::plan::Plan;
use serde_json::{json, Value};

/// Process id of the GPU tracks.
pub const GPUS_PID: u32 = 1;
/// Process id of the link tracks.
pub const LINKS_PID: u32 = 2;
/// Process id of the host-link (PCIe) tracks, one per GPU that swaps.
pub const HOST_PID: u32 = 3;

fn us(ms: f64) -> f64 {
    ms * 1e3
}

fn short(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Forward => "F",
        EventKind::Swap => "swap wait",
        EventKind::SwapOut => "swap out",
        EventKind::SwapIn => "swap in",
        EventKind::Recompute => "recompute",
        EventKind::Backward => "B",
        EventKind::GradSync => "sync",
        EventKind::SendForward => "send F",
        EventKind::SendBackward => "send B",
    }
}

/// What `pipeplan trace` writes: the timeline of `plan` on `inst` over `periods` periods (or one
/// iteration), with the evaluator's verdict `ev` beside the simulation's in `otherData`.
pub fn judged_trace(
    inst: &Instance,
    plan: &Plan,
    ev: &Evaluation,
    periods: usize,
) -> Result<(Timeline, Value), InputError> {
    let t = timeline(inst, plan, periods)?;
    let meta = json!({
        "generator": "pipeplan trace",
        "instance": inst.name,
        "schedule": t.schedule.to_string(),
        "period_ms": t.period,
        "steady_from_ms": t.steady_from,
        "simulated_end_ms": t.end,
        "evaluated_iteration_ms": ev.iteration_ms,
        "evaluated_period_ms": ev.period_ms,
        "evaluated_peak_memory": ev.peak_memory,
        "memory_limit": ev.memory_limit,
    });
    let trace = chrome_trace(&t, meta);
    Ok((t, trace))
}

/// The trace document; `meta` goes to `otherData` (instance, plan, evaluated figures).
pub fn chrome_trace(t: &Timeline, meta: Value) -> Value {
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": GPUS_PID, "args": {"name": "GPUs"}
    })];
    for &g in t.memory.keys() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": GPUS_PID, "tid": g,
            "args": {"name": format!("GPU {g}")}
        }));
    }
    let links = t.links();
    if !links.is_empty() {
        events.push(json!({
            "name": "process_name", "ph": "M", "pid": LINKS_PID, "args": {"name": "links"}
        }));
    }
    let hosts = t.host_gpus();
    if !hosts.is_empty() {
        events.push(json!({
            "name": "process_name", "ph": "M", "pid": HOST_PID, "args": {"name": "host links (swap)"}
        }));
    }
    for g in hosts {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": HOST_PID, "tid": g,
            "args": {"name": format!("GPU {g} PCIe")}
        }));
    }
    for (i, (a, b)) in links.iter().enumerate() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": LINKS_PID, "tid": i,
            "args": {"name": format!("link {a}-{b}")}
        }));
    }
    for e in &t.events {
        let name = match e.micro_batch {
            Some(mb) => format!("{} s{} mb{mb}", short(e.kind), e.stage),
            None => format!("{} s{}", short(e.kind), e.stage),
        };
        let mut args = json!({"stage": e.stage});
        if let Some(mb) = e.micro_batch {
            args["micro_batch"] = json!(mb);
        }
        let base = |pid: u32, tid: usize| {
            json!({
                "name": name, "cat": e.kind.name(), "ph": "X",
                "ts": us(e.start), "dur": us(e.end - e.start),
                "pid": pid, "tid": tid, "args": args,
            })
        };
        match &e.track {
            Track::Gpus(gpus) => {
                for &g in gpus {
                    events.push(base(GPUS_PID, g as usize));
                }
            }
            Track::Link(a, b) => {
                let i = links.binary_search(&(*a, *b)).expect("collected above");
                events.push(base(LINKS_PID, i));
            }
            Track::Host(gpus) => {
                for &g in gpus {
                    events.push(base(HOST_PID, g as usize));
                }
            }
        }
    }
    for (g, steps) in &t.memory {
        for &(time, bytes) in steps {
            events.push(json!({
                "name": format!("GPU {g} memory"), "ph": "C", "ts": us(time),
                "pid": GPUS_PID, "tid": g, "args": {"bytes": bytes}
            }));
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": meta,
    })
}
