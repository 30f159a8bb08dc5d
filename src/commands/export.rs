//! `export`: a plan in a training runtime's format (read back by `--plan-from`, which
//! [`super::Judged::read`] handles for every command that judges a plan).

use super::{read_calibrated, read_runtime_plan, write_or_print, Failure};
use crate::cli::ExportArgs;
use pipeplan_formulations::export::{export, misfit, ExportError};

/// `pipeplan export`.
pub fn run(a: ExportArgs) -> Result<(), Failure> {
    let inst = read_calibrated(&a.instance, &a.calibration)?;
    let rp = read_runtime_plan(&a.solution, &a.from, &inst)?;
    match export(a.to, &inst, &rp) {
        Ok(text) => {
            // A runtime takes what it can express; whether it fits is the evaluator's word,
            // said here so that a plan bound to run out of memory does not leave unremarked.
            if let Some(why) = misfit(&inst, &rp.plan) {
                eprintln!("warning: {}: {why}", a.solution.display());
            }
            write_or_print(a.output.as_deref(), &text)
        }
        Err(ExportError::Input(e)) => Err(e.in_file(&a.solution).into()),
        Err(ExportError::Inexpressible(x)) => Err(Failure::input(format!(
            "{}: {}",
            a.solution.display(),
            x.message(&inst, &rp.plan)
        ))),
    }
}
