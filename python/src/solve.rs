//! Solving and comparing (as `pipeplan solve` and `compare`), and the algorithms' registry.

use crate::errors::{error, input_error, solve_error};
use crate::instance::PyInstance;
use crate::interrupt::wait_interruptibly;
use crate::json;
use pipeplan_formulations::{InputError, Instance};
use pipeplan_solvers::algorithm::{parse_time_limit, Algorithm, SolveError, SolveOptions};
use pipeplan_solvers::harness::{self, Record};
use pipeplan_solvers::registry;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

/// A time limit: seconds, a time with a unit (`"500ms"`) or `None` (no limit).
pub(crate) fn time_limit(py: Python<'_>, limit: &Bound<'_, PyAny>) -> PyResult<Option<Duration>> {
    if limit.is_none() {
        return Ok(None);
    }
    let text = match limit.extract::<f64>() {
        Ok(secs) => secs.to_string(),
        Err(_) => limit.str()?.to_string(),
    };
    parse_time_limit(&text).map_err(|m| input_error(py, &InputError::field("--time-limit", m)))
}

pub(crate) fn options(
    py: Python<'_>,
    limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<SolveOptions> {
    Ok(SolveOptions {
        time_limit: time_limit(py, limit)?,
        seed,
        stages,
        params: settings,
    })
}

/// The algorithm called `name`, with the CLI's message for an unknown one.
pub(crate) fn algorithm(py: Python<'_>, name: &str) -> PyResult<Box<dyn Algorithm>> {
    registry::by_name(name).ok_or_else(|| {
        input_error(
            py,
            &InputError::field(
                "--algo",
                format!(
                    "unknown algorithm {name:?}; known: {}",
                    registry::names().join(", ")
                ),
            ),
        )
    })
}

/// Solves `instance` with `algorithm` (as `pipeplan solve --json`); returns the solution's JSON
/// and its CSV record's JSON.
#[pyfunction]
#[pyo3(signature = (instance, algorithm_name, time_limit, seed, stages, settings))]
pub(crate) fn solve(
    py: Python<'_>,
    instance: &Bound<'_, PyInstance>,
    algorithm_name: &str,
    time_limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<(String, String)> {
    let algo = algorithm(py, algorithm_name)?;
    let inst = &instance.get().inner;
    let opts = options(py, time_limit, seed, stages, settings)?;
    match harness::support(algo.as_ref(), inst, &opts) {
        Err(SolveError::Unsupported(u)) => {
            return Err(error(
                py,
                "UnsupportedError",
                harness::unsupported_message(algo.as_ref(), inst, &u),
            ))
        }
        Err(e) => return Err(solve_error(py, e)),
        Ok(()) => {}
    }
    let result = wait_interruptibly(py, |flag| {
        harness::run_interruptible(algo.as_ref(), inst, &opts, Some(flag))
    })?;
    let sol = result.map_err(|e| solve_error(py, e))?;
    Ok((json(&sol), json(&Record::of_solution(&sol))))
}

/// Runs `algorithms` (default: all) on every instance (as `pipeplan compare`); returns the
/// comparison's JSON (`--json`) and its CSV records' JSON (`--csv`).
#[pyfunction]
#[pyo3(signature = (instances, algorithms, time_limit, seed, stages, settings))]
pub(crate) fn compare(
    py: Python<'_>,
    instances: Vec<Bound<'_, PyInstance>>,
    algorithms: Option<Vec<String>>,
    time_limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<(String, String)> {
    let insts: Vec<Instance> = instances.iter().map(|i| i.get().inner.clone()).collect();
    let algos: Vec<Box<dyn Algorithm>> = match algorithms {
        None => registry::all(),
        Some(names) => names
            .iter()
            .map(|n| algorithm(py, n.trim()))
            .collect::<PyResult<_>>()?,
    };
    let opts = options(py, time_limit, seed, stages, settings)?;
    let rows = wait_interruptibly(py, |flag| {
        harness::compare_interruptible(&algos, &insts, &opts, Some(flag))
    })?;
    let records: Vec<Record> = rows.iter().map(Record::of_row).collect();
    Ok((json(&rows), json(&records)))
}

/// Every algorithm: name, family, exact, description (as `pipeplan algorithms --json`).
#[pyfunction]
pub(crate) fn algorithms() -> String {
    let entries = registry::entries();
    json(&entries)
}

/// Every algorithm's settings (as `pipeplan algorithms --params --json`).
#[pyfunction]
pub(crate) fn settings() -> String {
    let entries = registry::settings();
    json(&entries)
}
