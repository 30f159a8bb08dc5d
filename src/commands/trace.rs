//! `pipeplan trace`: the simulator's timeline of a plan in the Chrome trace-event format.

use super::{write_or_print, Failure, Judged};
use crate::cli::TraceArgs;
use pipeplan_formulations::timeline::trace::judged_trace;

/// Runs `trace`.
pub fn run(a: TraceArgs) -> Result<(), Failure> {
    let j = Judged::read(&a.plan, &a.instance, &a.from, &a.calibration)?;
    let (inst, plan, ev) = (&j.inst, &j.plan, &j.ev);
    let (t, trace) = judged_trace(inst, plan, ev, a.periods).map_err(|e| j.blame(e))?;
    let text = serde_json::to_string(&trace).expect("traces serialize");
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
