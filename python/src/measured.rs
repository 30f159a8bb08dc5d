//! Measured runs: the evaluator's accuracy on them and its calibration (as `pipeplan accuracy`
//! and `calibrate`).

use crate::errors::{error, input_error};
use crate::instance::{calibration_file, warn_if_foreign};
use crate::json;
use pipeplan_charts::parity;
use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::import::sailor::report::gather;
use pipeplan_formulations::import::sailor::runs::RunOptions;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Every measured run (Sailor plan files) under `paths` judged by the evaluator, under the
/// calibration file when given (as `pipeplan accuracy --csv`); returns the records' JSON and, with
/// `chart`, the runs drawn as `accuracy --plot` draws them (SVG text).
#[pyfunction]
#[pyo3(signature = (paths, calibration, sailor_root, model, repair_layers, chart))]
pub(crate) fn accuracy(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    calibration: Option<PathBuf>,
    sailor_root: Option<PathBuf>,
    model: Option<String>,
    repair_layers: bool,
    chart: bool,
) -> PyResult<(String, Option<String>)> {
    let file = match &calibration {
        Some(p) => Some((p, calibration_file(py, p)?)),
        None => None,
    };
    let cal = file
        .as_ref()
        .map_or(Calibration::IDENTITY, |(_, f)| f.constants);
    let opts = RunOptions {
        root: sailor_root,
        model,
        repair_layers,
    };
    let gathered = gather(&paths, &opts).map_err(|e| input_error(py, &e))?;
    if let Some((path, file)) = &file {
        for run in &gathered.ready {
            warn_if_foreign(py, path, file, &run.instance)?;
        }
    }
    let scores = gathered.scores(&cal).map_err(|e| input_error(py, &e))?;
    let svg = if chart {
        let title = parity::title(calibration.as_deref(), &cal, scores.len());
        let svg = parity::parity_svg(&title, &scores, parity::BAND)
            .map_err(|e| error(py, "InstanceError", e))?;
        Some(svg)
    } else {
        None
    };
    Ok((json(&gathered.records(&scores)), svg))
}

/// The evaluator's constants fitted to every measured run under `paths` (as `pipeplan calibrate`);
/// returns the calibration file's JSON. The GIL is released while fitting.
#[pyfunction]
#[pyo3(signature = (paths, p2p_overlap, sailor_root, model, repair_layers))]
pub(crate) fn calibrate(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    p2p_overlap: f64,
    sailor_root: Option<PathBuf>,
    model: Option<String>,
    repair_layers: bool,
) -> PyResult<String> {
    let opts = RunOptions {
        root: sailor_root,
        model,
        repair_layers,
    };
    let options = pipeplan_solvers::calibrate::Options { p2p_overlap };
    let fitted = py
        .detach(|| {
            let gathered = gather(&paths, &opts)?;
            pipeplan_solvers::calibrate::calibrate(&gathered, &options)
        })
        .map_err(|e| input_error(py, &e))?;
    Ok(fitted.file.to_json())
}
