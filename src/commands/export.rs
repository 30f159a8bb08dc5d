//! `export`: a plan in a training runtime's format (read back by `--plan-from`, which
//! [`super::Judged::read`] handles for every command that judges a plan).

use super::{read_calibrated, write_or_print, Failure};
use crate::cli::ExportArgs;
use pipeplan_formulations::error::read_text;
use pipeplan_formulations::evaluate::evaluate as judge;
use pipeplan_formulations::export::{export, layout, ExportError, Inexpressible, RuntimePlan};
use pipeplan_formulations::units::{fmt_bytes, fmt_ms};
use pipeplan_formulations::{Evaluation, Instance, Plan, Schedule, Stage};
use std::collections::BTreeSet;
use std::path::Path;

/// `pipeplan export`.
pub fn run(a: ExportArgs) -> Result<(), Failure> {
    let inst = read_calibrated(&a.instance, &a.calibration)?;
    let rp =
        RuntimePlan::from_json(&read_text(&a.solution)?).map_err(|e| e.in_file(&a.solution))?;
    match export(a.to, &inst, &rp) {
        Ok(text) => write_or_print(a.output.as_deref(), &text),
        Err(ExportError::Input(e)) => Err(e.in_file(&a.solution).into()),
        Err(ExportError::Inexpressible(x)) => {
            Err(Failure::input(inexpressible(&a.solution, &inst, &rp, &x)))
        }
    }
}

/// The reasons, and the nearest plan's evaluated cost beside the plan's own.
fn inexpressible(file: &Path, inst: &Instance, rp: &RuntimePlan, x: &Inexpressible) -> String {
    let cost = |plan| match judge(inst, plan) {
        Ok(e) => summary(&e),
        Err(e) => format!("not evaluated: {e}"),
    };
    format!(
        "{}: {} cannot run this plan as it is: {}. The nearest plan it runs ({}) evaluates to {} \
         (this plan: {}); nothing was written",
        file.display(),
        x.format.runtime(),
        x.reasons.join("; "),
        shape(inst, &x.nearest),
        cost(&x.nearest),
        cost(&rp.plan),
    )
}

/// Stages, degrees, schedule and batch of a plan, in a few words.
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
    format!(
        "{positions} pipeline stages, tp {}, dp {}, {batch}",
        set(&|s| s.tp),
        set(&|s| s.dp)
    )
}

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
