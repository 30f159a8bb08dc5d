//! Running algorithms: one timed, evaluated solve ([`run`]) and the side-by-side comparison of
//! many algorithms on many instances ([`compare()`]).
//!
//! The harness, not the algorithm, measures wall time and calls the neutral evaluator, so an
//! algorithm can neither forget nor colour the `evaluated` figures.
//!
//! A front end that must stop solves from another thread (the Python package on Ctrl-C) passes an
//! interruption flag to [`run_interruptible`] / [`compare_interruptible`]: every solve's
//! [`Deadline`](crate::Deadline) watches it, and a comparison starts no further solve once it is
//! raised.

mod compare;
mod gaps;
mod record;

pub use compare::{compare, compare_interruptible, Outcome, Row};
pub use gaps::relative_gap;
pub use record::Record;

use crate::algorithm::{Algorithm, Context, Solution, SolveError, SolveOptions, Unsupported};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::Instance;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// A flag that stops every solve watching it once raised (set from another thread).
pub type Interrupt = Arc<AtomicBool>;

/// The message of `algo` declining `inst`, as `pipeplan solve` reports it.
pub fn unsupported_message(algo: &dyn Algorithm, inst: &Instance, why: &Unsupported) -> String {
    format!(
        "{} does not support instance {}: {why}",
        algo.name(),
        inst.name
    )
}

/// Whether `algo` runs on `inst` with the settings of `opts`: the settings checked against its
/// declaration, then [`Algorithm::supports_with`] (size limits some settings lift,
/// `docs/limits.md`). What [`run`] checks first; front ends call it to word a refusal with
/// [`unsupported_message`].
pub fn support(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
) -> Result<(), SolveError> {
    check(algo, inst, opts).map(|_| ())
}

/// [`support`], returning the context a solve starts from.
fn check(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
) -> Result<Context, SolveError> {
    let ctx = Context::of(algo, opts)?;
    algo.supports_with(inst, &ctx.settings)?;
    Ok(ctx)
}

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
    run_interruptible(algo, inst, opts, None)
}

/// [`run`], also stopping when `interrupt` is raised: the algorithm returns its best plan so far
/// (stopped for [`Stop::Interrupted`](crate::Stop::Interrupted)) or
/// [`SolveError::Interrupted`].
pub fn run_interruptible(
    algo: &dyn Algorithm,
    inst: &Instance,
    opts: &SolveOptions,
    interrupt: Option<&Interrupt>,
) -> Result<Solution, SolveError> {
    let mut ctx = check(algo, inst, opts)?;
    if let Some(flag) = interrupt {
        ctx.deadline = ctx.deadline.with_interrupt(Arc::clone(flag));
    }
    let start = Instant::now();
    let mut sol = algo.compute(inst, &ctx).map_err(|e| match e {
        // No plan: say what no plan can avoid (docs/evaluator.md, "Explanations").
        SolveError::Infeasible(why) => SolveError::Infeasible(format!(
            "{why}; {}",
            pipeplan_formulations::evaluate::explain::certificate(inst).line()
        )),
        e => e,
    })?;
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
