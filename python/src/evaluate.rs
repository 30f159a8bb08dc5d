//! Judging a plan with the neutral evaluator (as `pipeplan evaluate`), explaining it (`explain`),
//! drawing or tracing it (`plot`, `trace`), and writing it for a training runtime (`export`).

use crate::errors::{error, input_error};
use crate::instance::PyInstance;
use crate::json;
use pipeplan_formulations::evaluate::evaluate as judge;
use pipeplan_formulations::export::{
    cautions, export as export_as, ExportError, Format as ExportFormat, RuntimePlan,
};
use pipeplan_formulations::plan::check_claimed_peaks;
use pipeplan_formulations::plan_from::PlanFormat;
use pipeplan_formulations::timeline::trace::judged_trace;
use pipeplan_formulations::{InputError, Instance, Plan};
use pipeplan_solvers::harness::Record;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// Judges a plan (JSON text) on `instance` with the neutral evaluator (as `pipeplan evaluate
/// --json`); returns the evaluation's JSON and its CSV record's JSON.
#[pyfunction]
pub(crate) fn evaluate(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
) -> PyResult<(String, String)> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let e = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    Ok((json(&e), json(&Record::of_evaluation(inst, &plan, &e))))
}

/// Reads a runtime's plan file (`format`: `galvatron`, `pipedream` or `sailor`) for `instance`,
/// as `--plan-from FORMAT` does; returns the plan's JSON and what to tell the user (what was
/// mended, then the notes). The plan is judged by whichever call takes it next.
#[pyfunction]
#[pyo3(signature = (format, path, modules, repair_layers, instance))]
pub(crate) fn read_plan_file(
    py: Python<'_>,
    format: &str,
    path: PathBuf,
    modules: Option<PathBuf>,
    repair_layers: bool,
    instance: &Bound<'_, PyInstance>,
) -> PyResult<(String, Vec<String>)> {
    let (rp, told) = runtime_file(
        py,
        format,
        &path,
        modules.as_deref(),
        repair_layers,
        &instance.get().inner,
    )?;
    Ok((json(&rp.plan), told))
}

/// A runtime's plan file read as `--plan-from FORMAT` reads it, with what to tell the user
/// (what was mended, then the notes).
fn runtime_file(
    py: Python<'_>,
    format: &str,
    path: &Path,
    modules: Option<&Path>,
    repair_layers: bool,
    inst: &Instance,
) -> PyResult<(RuntimePlan, Vec<String>)> {
    let format: PlanFormat = format.parse().map_err(|e| error(py, "InstanceError", e))?;
    let noted = format
        .read_path(path, modules, repair_layers, inst)
        .map_err(|e| input_error(py, &e))?;
    let told = noted.messages(path, "repair_layers");
    Ok((noted.plan, told))
}

/// A judged plan's chart as SVG text (as `pipeplan plot` draws it), titled after `name` (what
/// made the plan): the simulator's timeline over `periods` periods above every GPU's memory,
/// the claimed peaks as ticks when given.
#[pyfunction]
#[pyo3(signature = (plan, instance, name, claimed_peak_memory, periods))]
pub(crate) fn plan_svg(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
    name: &str,
    claimed_peak_memory: Option<Vec<f64>>,
    periods: usize,
) -> PyResult<String> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let ev = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    let claimed = claimed_peak_memory.as_deref();
    if let Some(peaks) = claimed {
        check_claimed_peaks(peaks).map_err(|e| input_error(py, &e))?;
    }
    pipeplan_charts::plan_chart(name, inst, &plan, &ev, claimed, periods).map_err(|e| match e {
        pipeplan_charts::PlanChartError::Input(e) => input_error(py, &e),
        pipeplan_charts::PlanChartError::Draw(e) => error(py, "InstanceError", e),
    })
}

/// A judged plan's timeline as `pipeplan trace` writes it (Chrome trace-event JSON text), over
/// `periods` periods (or one iteration).
#[pyfunction]
#[pyo3(signature = (plan, instance, periods))]
pub(crate) fn trace(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
    periods: usize,
) -> PyResult<String> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let ev = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    let (_, trace) = judged_trace(inst, &plan, &ev, periods).map_err(|e| input_error(py, &e))?;
    Ok(json(&trace))
}

/// Why a judged plan's period or iteration and memory are what they are, stage by stage, as
/// `pipeplan explain --json` prints it (JSON text).
#[pyfunction]
pub(crate) fn explain(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
) -> PyResult<String> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let ev = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    Ok(json(&pipeplan_formulations::evaluate::explain::explain(
        inst, &plan, &ev,
    )))
}

/// A plan in a training runtime's format `to`, as `pipeplan export --to` writes it: `plan` is the
/// JSON text of a plan or solution (a Galvatron solution's extras kept), or with `plan_from` the
/// path of a runtime's plan file, read as `read_plan_file` reads it. Returns the text and what
/// to tell the user (a mended layer index; the evaluator's word when the plan does not fit); a
/// plan the runtime cannot run raises `UnsupportedError` with the CLI's message (every reason,
/// the nearest plan it runs and both evaluated costs).
#[pyfunction]
#[pyo3(signature = (plan, instance, to, plan_from, modules, repair_layers))]
pub(crate) fn export(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
    to: &str,
    plan_from: Option<&str>,
    modules: Option<PathBuf>,
    repair_layers: bool,
) -> PyResult<(String, Vec<String>)> {
    let inst = &instance.get().inner;
    let to: ExportFormat = to.parse().map_err(|e| error(py, "InstanceError", e))?;
    let (rp, told, file) = match plan_from {
        None => {
            let rp = RuntimePlan::from_json(plan).map_err(|e| input_error(py, &e))?;
            (rp, Vec::new(), None)
        }
        Some(format) => {
            let path = PathBuf::from(plan);
            let (rp, told) =
                runtime_file(py, format, &path, modules.as_deref(), repair_layers, inst)?;
            (rp, told, Some(path))
        }
    };
    let in_file = |e: InputError| match &file {
        Some(f) => e.in_file(f),
        None => e,
    };
    match export_as(to, inst, &rp) {
        Ok(text) => {
            let mut told = told;
            let more = cautions(to, inst, &rp.plan, file.as_deref(), &told);
            told.extend(more);
            Ok((text, told))
        }
        Err(ExportError::Input(e)) => Err(input_error(py, &in_file(e))),
        Err(ExportError::Inexpressible(x)) => {
            let message = x.message(inst, &rp.plan);
            let message = match &file {
                Some(f) => format!("{}: {message}", f.display()),
                None => message,
            };
            Err(error(py, "UnsupportedError", message))
        }
    }
}
