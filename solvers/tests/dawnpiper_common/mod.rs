//! Helpers shared by the DawnPiper test files.

use pipeplan_solvers::algorithm::{Solution, SolveOptions};

/// Solve options with `params` (`KEY`, `VALUE`) and `stages`.
pub fn with(params: &[(&str, &str)], stages: Option<usize>) -> SolveOptions {
    let mut o = SolveOptions {
        stages,
        ..SolveOptions::default()
    };
    for (k, v) in params {
        o.params.insert((*k).into(), (*v).into());
    }
    o
}

/// The claimed objective's value.
pub fn objective(sol: &Solution) -> f64 {
    sol.claimed.objective.as_ref().unwrap().value
}
