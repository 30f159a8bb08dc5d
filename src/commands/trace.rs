//! `pipeplan trace`: the simulator's timeline of a plan in the Chrome trace-event format.

use super::{read_calibrated, read_plan, write_or_print, Failure};
use crate::cli::TraceArgs;
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::timeline::{timeline, trace::chrome_trace};
use serde_json::json;

/// Runs `trace`.
pub fn run(a: TraceArgs) -> Result<(), Failure> {
    let inst = read_calibrated(&a.instance, &a.calibration)?;
    let plan = read_plan(&a.plan)?;
    let in_file = |e: pipeplan_formulations::InputError| {
        let file = if e.is_about_plan() {
            &a.plan
        } else {
            &a.instance
        };
        e.in_file(file)
    };
    let ev = evaluate(&inst, &plan).map_err(in_file)?;
    let t = timeline(&inst, &plan, a.periods).map_err(in_file)?;
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
