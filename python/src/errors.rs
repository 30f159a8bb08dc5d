//! Errors as the `pipeplan` package's exceptions, with the CLI's messages.

use pipeplan_formulations::InputError;
use pipeplan_solvers::algorithm::SolveError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The exception class `name` of `pipeplan._errors` carrying `message`.
pub(crate) fn error(py: Python<'_>, name: &str, message: String) -> PyErr {
    let class = py
        .import("pipeplan._errors")
        .and_then(|m| m.getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    }
}

/// Bad input: the CLI's exit code 2, `pipeplan.InstanceError` (a `ValueError`).
pub(crate) fn input_error(py: Python<'_>, e: &InputError) -> PyErr {
    error(py, "InstanceError", e.to_string())
}

/// A failed solve as the exception the CLI's exit code stands for, with the CLI's message.
pub(crate) fn solve_error(py: Python<'_>, e: SolveError) -> PyErr {
    let name = match e {
        SolveError::Input(_) => "InstanceError",
        SolveError::Unsupported(_) => "UnsupportedError",
        SolveError::Infeasible(_) => "InfeasibleError",
        SolveError::TimeLimit(_) => "TimeLimitError",
        // Only a raised interruption flag ends a solve so, i.e. Ctrl-C.
        SolveError::Interrupted => {
            return pyo3::exceptions::PyKeyboardInterrupt::new_err(e.to_string())
        }
        SolveError::Solver(_) => "SolverError",
    };
    error(py, name, e.to_string())
}
