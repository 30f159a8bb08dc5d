//! `pipeplan trace`: the simulator's timeline of a plan in the Chrome trace-event format.

use super::{write_or_print, Failure, Judged};
use crate::cli::TraceArgs;
use pipeplan_formulations::timeline::{timeline, trace::chrome_trace};
use serde_json::json;

/// Runs `trace`.
pub fn run(a: TraceArgs) -> Result<(), Failure> {
    let j = Judged::read(&a.plan, &a.instance, &a.from, &a.calibration)?;
    let (inst, plan, ev) = (&j.inst, &j.plan, &j.ev);
    let t = timeline(inst, plan, a.periods).map_err(|e| j.blame(e))?;
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
    let text = serde_json::to_string(&chrome_trace(&t, meta)).expect("traces serialize");
    write_or_print(a.output.as_deref(), &text)?;
    if let Some(p) = a
        .output
        .as_deref()
        .filter(|p| *p != std::path::Path::new("-"))
    {
        eprintln!(
            "wrote {}: {} events over {:.3} ms (open it in https://ui.perfetto.dev or chrome://tracing)",
            p.display(),
            t.events.len(),
            t.end
        );
    }
    Ok(())
}
