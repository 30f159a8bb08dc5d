//! Running algorithms: one timed, evaluated solve ([`run`]) and the side-by-side comparison of
//! many algorithms on many instances ([`compare()`]).
//!
//! The harness, not the algorithm, measures wall time and calls the neutral evaluator, so an
//! algorithm can neither forget nor colour the `evaluated` figures.

mod compare;
mod gaps;

pub use compare::{compare, Outcome, Row};

use crate::algorithm::{Algorithm, Context, Solution, SolveError, SolveOptions};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::Instance;
use std::time::Instant;

/// Solves `inst` with `algo`, times the solve and attaches the evaluator's verdict.
///
/// A plan the evaluator rejects as malformed is a bug of the algorithm and is reported as
/// [`SolveError::Solver`], never passed on; an instance the evaluator cannot judge is
/// [`SolveError::Input`].
pub fn run(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
) -> Result<Solution, SolveError> {
    algo.supports(inst)?;
    let ctx = Context::of(algo, opts)?;
    let start = Instant::now();
    let mut sol = algo.compute(inst, &ctx)?;
    sol.stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let eval = evaluate(inst, &sol.plan).map_err(|e| {
        if e.is_about_plan() {
            SolveError::Solver(format!(
                "{} produced a plan the evaluator rejects: {e}",
                algo.name()
            ))
        } else {
            // Something of the instance itself the evaluator cannot judge (e.g. no time at all).
            SolveError::Input(e)
        }
    })?;
    sol.evaluated = Some(eval);
    Ok(sol)
}
