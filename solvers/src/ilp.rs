//! Running MILP models with HiGHS: models are written with good_lp's algebra and solved through
//! the HiGHS model directly, so that the MIP dual bound and gap are reported, not only a status.

use crate::algorithm::{SolveError, Stop};
use crate::deadline::Deadline;
use good_lp::solvers::highs::HighsProblem;
use highs::{HighsModelStatus, HighsSolutionStatus};
use std::time::Instant;

/// What HiGHS concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IlpStatus {
    /// Proven optimal (within `mip_rel_gap` = 1e-9).
    Optimal,
    /// A feasible solution, stopped by a limit: `bound` and `gap` say how far it may be.
    Feasible,
}

/// The outcome of a MILP solve.
#[derive(Debug, Clone, PartialEq)]
pub struct IlpOutcome {
    /// Optimal or merely feasible.
    pub status: IlpStatus,
    /// Objective of the incumbent.
    pub objective: f64,
    /// Best proven bound.
    pub bound: f64,
    /// Relative gap |objective - bound| / |objective|.
    pub gap: f64,
    /// Value of every variable, in creation order.
    pub values: Vec<f64>,
    /// Wall time (ms).
    pub wall_ms: f64,
    /// Branch-and-bound nodes, when HiGHS reports them (HiGHS 1.15 keeps the count as a 64-bit
    /// value the `highs` crate cannot read: `None` then, rather than a made-up 0).
    pub nodes: Option<f64>,
    /// Why HiGHS stopped before its proof (`None` when optimal).
    pub stop: Option<Stop>,
}

/// Solves a good_lp model built with the HiGHS backend.
///
/// HiGHS runs quietly, single-threaded and with a fixed seed (deterministic), with the time
/// limit given. Infeasibility becomes [`SolveError::Infeasible`] with `what_if_infeasible`;
/// a time limit with no incumbent becomes [`SolveError::TimeLimit`].
pub fn solve(
    problem: HighsProblem,
    deadline: &Deadline,
    what_if_infeasible: &str,
) -> Result<IlpOutcome, SolveError> {
    solve_tuned(problem, deadline, what_if_infeasible, Tuning::Default)
}

/// HiGHS settings beyond those every solve uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// HiGHS's defaults.
    Default,
    /// Presolve off, no restart of the root and a MIP feasibility tolerance of 1e-9: with the
    /// defaults HiGHS proved wrong optima on the schedule ILP's big-M models (see
    /// [`crate::madpipe::schedule_ilp`]).
    Strict,
}

/// [`solve`] with extra HiGHS settings.
pub fn solve_tuned(
    problem: HighsProblem,
    deadline: &Deadline,
    what_if_infeasible: &str,
    tuning: Tuning,
) -> Result<IlpOutcome, SolveError> {
    let start = Instant::now();
    let mut model = problem
        .try_into_inner()
        .map_err(|e| SolveError::Solver(format!("HiGHS could not build the model: {e}")))?;
    model.make_quiet();
    let set = |m: &mut highs::Model, k: &str, v: f64| -> Result<(), SolveError> {
        m.try_set_option(k, v)
            .map_err(|e| SolveError::Solver(format!("HiGHS option {k}: {e:?}")))
    };
    if let Some(t) = deadline.remaining() {
        set(&mut model, "time_limit", t.as_secs_f64())?;
    }
    set(&mut model, "mip_rel_gap", 1e-9)?;
    if tuning == Tuning::Strict {
        set(&mut model, "mip_feasibility_tolerance", 1e-9)?;
        model
            .try_set_option("presolve", "off")
            .map_err(|e| SolveError::Solver(format!("HiGHS option presolve: {e:?}")))?;
        model
            .try_set_option("mip_allow_restart", false)
            .map_err(|e| SolveError::Solver(format!("HiGHS option mip_allow_restart: {e:?}")))?;
    }
    model
        .try_set_option("threads", 1)
        .map_err(|e| SolveError::Solver(format!("HiGHS option threads: {e:?}")))?;
    model
        .try_set_option("random_seed", 0)
        .map_err(|e| SolveError::Solver(format!("HiGHS option random_seed: {e:?}")))?;
    let solved = model
        .try_solve()
        .map_err(|e| SolveError::Solver(format!("HiGHS failed: {e:?}")))?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let has_solution = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
    let status = match solved.status() {
        HighsModelStatus::Optimal => IlpStatus::Optimal,
        HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => {
            return Err(SolveError::Infeasible(what_if_infeasible.to_string()))
        }
        HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit
        | HighsModelStatus::ReachedInterrupt
        | HighsModelStatus::ReachedMemoryLimit
        | HighsModelStatus::ObjectiveBound
        | HighsModelStatus::ObjectiveTarget => {
            if !has_solution {
                return Err(deadline.error());
            }
            IlpStatus::Feasible
        }
        other => return Err(SolveError::Solver(format!("HiGHS status {other:?}"))),
    };
    if !has_solution {
        return Err(SolveError::Solver(
            "HiGHS reported no primal solution".into(),
        ));
    }
    let stop = match status {
        IlpStatus::Optimal => None,
        IlpStatus::Feasible => Some(deadline.stop()),
    };
    let objective = solved.objective_value();
    let bound = solved
        .double_info_value(c"mip_dual_bound")
        .unwrap_or(f64::NAN);
    let gap = if bound.is_finite() {
        (objective - bound).abs() / objective.abs().max(1e-12)
    } else {
        solved.mip_gap()
    };
    let nodes = solved
        .int_info_value(c"mip_node_count")
        .ok()
        .map(|n| n as f64);
    Ok(IlpOutcome {
        status,
        objective,
        bound,
        gap,
        values: solved.get_solution().columns().to_vec(),
        wall_ms,
        nodes,
        stop,
    })
}
