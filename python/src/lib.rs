//! `pipeplan._native`: the Python bindings of pipeplan's crates. The `pipeplan` package
//! (`python/pipeplan/`) wraps these functions in its public API; results cross the boundary as
//! the library's own JSON (the `--json` output of the CLI), which Python parses.
//!
//! Every call that solves runs on a worker thread while the calling thread waits without the GIL
//! (`interrupt::wait_interruptibly`): other Python threads run meanwhile, and Ctrl-C (checked every
//! `SIGNAL_POLL`) raises the solves' interruption flag, waits for them to stop and re-raises
//! `KeyboardInterrupt`. A panic of the worker becomes `pipeplan.SolverError`; nothing panics
//! across the boundary.

mod errors;
mod evaluate;
mod instance;
mod instances;
mod interrupt;
mod measured;
mod solve;

use pyo3::prelude::*;

/// A result as the library's JSON, which the package parses.
pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("results serialize to JSON")
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<instance::PyInstance>()?;
    m.add_function(wrap_pyfunction!(solve::solve, m)?)?;
    m.add_function(wrap_pyfunction!(solve::compare, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(measured::accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(measured::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::read_plan_file, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::plan_svg, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::trace, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::explain, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::export, m)?)?;
    m.add_function(wrap_pyfunction!(solve::algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(solve::settings, m)?)?;
    m.add_function(wrap_pyfunction!(instances::models, m)?)?;
    m.add_function(wrap_pyfunction!(instances::generate_instance, m)?)?;
    m.add_function(wrap_pyfunction!(instances::import_profile, m)?)?;
    Ok(())
}
