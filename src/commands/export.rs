//! `export`: a plan in a training runtime's format (read back by `--plan-from`, which
//! [`super::Judged::read`] handles for every command that judges a plan).

use super::{read_calibrated, read_runtime_plan, write_or_print, Failure};
use crate::cli::ExportArgs;
use pipeplan_formulations::export::{cautions, export, ExportError};

/// `pipeplan export`.
pub fn run(a: ExportArgs) -> Result<(), Failure> {
    let inst = read_calibrated(&a.instance, &a.calibration)?;
    let (rp, told) = read_runtime_plan(&a.solution, &a.from, &inst)?;
    match export(a.to, &inst, &rp) {
        Ok(text) => {
            // A runtime takes what it can express; whether it fits, and what the runtime spends
            // beyond the evaluator's charge, are said here so that neither leaves unremarked.
            for why in cautions(a.to, &inst, &rp.plan, Some(&a.solution), &told) {
                eprintln!("warning: {why}");
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
