//! The periodic-schedule ILP (MadPipe §4.3, `docs/madpipe.md`, "The schedule ILP"), solved by HiGHS: for a
//! given allocation (stages on GPUs, possibly several stages on one GPU), the periodic pattern of
//! least memory at a period ([`least_memory`]), a pattern within a memory limit ([`fit_memory`]),
//! and the least period at which one exists ([`least_period`], a bisection on the period).
//!
//! The paper's base ILP (its reference \[1\]) is not public; this is our reconstruction. Every
//! pattern it returns is checked by the [simulator](pipeplan_formulations::simulate) before it is
//! returned, and the memory the ILP counts must equal the simulator's.
//!
//! # Operations
//!
//! Exactly the evaluator's ([`plan_operations`](pipeplan_formulations::simulate::plan_operations)): `F_s` and `B_s` per stage (the backward includes
//! the replicas' gradient synchronisation) and, for each cut between stages on different device
//! groups, `send_f` and `send_b` on the link. They form one dependency chain (MadPipe's Figure 1)
//! `F_0 -> send_f_0 -> F_1 -> ... -> F_{N-1} -> B_{N-1} -> ... -> send_b_0 -> B_0`, numbered
//! `o = 0..n` in that order; `d_o` is the duration, `P_o = d_0 + ... + d_{o-1}`.
//!
//! # Formulation at a fixed period T (times in units of T: `delta_o = d_o / T`)
//!
//! Variables:
//! - `tau_o` in `[0, 1]`: start of `o` in the period (`t_o = T tau_o`); `tau_0 = 0`;
//! - `h_o` integer in `[ceil(P_o / T) - 1, floor(P_o / T) + o]`: index shift (in period k, `o`
//!   processes micro-batch `k - h_o`); `h_0 = 0`;
//! - `y_ij` binary for every pair `i < j` of operations sharing a GPU or a link: 1 when `i` comes
//!   first in the period;
//! - `m_g >= 0`: memory of used GPU g (in units of the largest per-micro-batch activation), `z`.
//!
//! Constraints:
//! - precedence of consecutive operations: `delta_o <= (h_{o+1} + tau_{o+1}) - (h_o + tau_o) <=
//!   delta_o + 1`;
//! - no overlap on the circle of length T: `tau_i + e_i <= tau_j + 1 - y_ij` and
//!   `tau_j + e_j <= tau_i + y_ij`, with `e = delta` (see zero durations below);
//! - memory, checked at every forward start `theta = tau(F_s')` of a stage s' on GPU g (where the
//!   simulator checks it; memory only grows there):
//!   `m_g >= c_g + Sum_{s on g} abar_s (h(B_s) - h(F_s) + Y(F_s, F_s') - Y(B_s, F_s'))`, where
//!   `Y(a, b)` is the ordering binary "a before b" (`y_ab` or `1 - y_ba`, and `Y(F_s, F_s) = 1`),
//!   `abar_s` the bytes stage s stores per micro-batch and `c_g` the states, buffers and
//!   re-materialization transient of g (the evaluator's constants);
//! - the cut `h(B_s) - h(F_s) + 1 - Y(B_s, F_s) >= ceil(D_s / T)`, `D_s` the total duration of the
//!   chain from `F_s` to `B_s` (a micro-batch lives at least that long);
//! - `z >= m_g`.
//!
//! Objective: minimize `z` (the largest memory), then, if asked ([`MemoryObjective::MaxThenSum`]),
//! minimize `Sum_g m_g` subject to `m_g <= z*` (a second solve). Under a memory limit M
//! ([`fit_memory`]): `m_g <= M` and no objective (the first feasible pattern).
//!
//! # Why it is exact, and what differs from a first formulation
//!
//! - **Wrapping is modelled, not excluded.** A first formulation restricted starts to `[0, T - d_o]`; here
//!   `tau_o` ranges over the whole period and an operation may run past the period end: the two
//!   no-overlap inequalities above are exactly non-overlap on the circle (with `y_ij = 1`,
//!   `[t_i, t_i + d_i)` ends before `t_j`, and `[t_j, t_j + d_j)` ends, modulo T, before the
//!   next `t_i`). Excluding wrapping would lose optimal patterns (1F1B*'s wrap) and make every
//!   period at which a fully loaded resource has no boundary in common with the others
//!   infeasible.
//! - **The memory brackets are the ordering binaries.** A first formulation linked two extra binaries
//!   `[t(F_s) <= theta]`, `[end(B_s) <= theta]` to the start times. On one GPU, `F_s`, `B_s` and
//!   `F_s'` share the GPU, so `[t(F_s) <= t(F_s')] = Y(F_s, F_s')`; and if `B_s` comes after
//!   `F_s'` in the period, it ends after `t(F_s')` and, wrapping or not, within one period of it.
//!   A case analysis of the simulator's count (micro-batches whose lifetime
//!   `[t(F_s) + h(F_s) T, t(B_s) + d(B_s) + h(B_s) T)` contains the instant) gives exactly
//!   `h(B_s) - h(F_s) + Y(F_s, F_s') - Y(B_s, F_s')`, wrapped `B_s` included: no extra binary and
//!   no big-M for memory.
//! - **Starts in the closed period `[0, T]`.** An operation at T is the same as at 0 with its
//!   shift plus one (same circle, same absolute times, same count), so the extracted pattern
//!   moves it there.
//! - **Restrictions that keep an optimum** (so "infeasible" and "optimal" stay exact):
//!   `tau_0 = h_0 = 0` (rotating a pattern and renumbering micro-batches changes nothing); the gap
//!   between consecutive operations of the chain is at most one period (moving every later
//!   operation one period earlier keeps the pattern valid and shortens the lifetime of every
//!   stage whose forward is before the gap and backward after it, so memory never grows), which
//!   gives the upper bound of the precedence and of `h_o`. The memory cut is implied by the
//!   model over the integers and only strengthens the relaxation.
//! - **Zero durations.** Two operations of zero duration can start at the same instant, and
//!   then the sign of `Y(F_s, F_s')` no longer tells which forward came first; the forwards of
//!   two stages on one GPU are therefore kept `1e-6 T` apart when one of them has zero duration
//!   (`e_o = max(delta_o, 1e-6)` in their no-overlap pair). Everything else is exact.
//!
//! # HiGHS settings
//!
//! Solved with [`crate::ilp::Tuning::Strict`] (no restart, MIP feasibility tolerance 1e-9,
//! presolve off): HiGHS's default reductions cut off optimal patterns of this degenerate model
//! (the measurements are in `docs/madpipe.md`, "HiGHS settings"). Every solution is still
//! checked by the simulator; optimality rests on HiGHS.
//!
//! # From the ILP to a checked pattern
//!
//! HiGHS solves with absolute tolerances (1e-7 on rows) larger than the simulator's (1e-9 T), so
//! start times are not read from it: its shifts and orderings are kept and the start times recomputed
//! as the earliest solution of the remaining difference constraints (a longest path, exact up to
//! rounding). The pattern then goes through [`simulate`](pipeplan_formulations::simulate::simulate); a pattern it rejects, or activations it
//! measures above the ILP's count, is a bug and becomes [`SolveError::Solver`].
//!
//! # Least period
//!
//! Feasibility under a memory limit is monotone in T (a pattern of period T, with the same starts
//! and shifts, stays valid at any larger period and keeps no more micro-batches), so
//! [`least_period`] bisects: the lower end starts at the largest load (no period can be
//! shorter) and rises only when HiGHS proves a period infeasible; the upper end starts at the
//! latency of one micro-batch (one operation at a time: each stage keeps one micro-batch, the
//! least possible memory) and, whenever a period is feasible, drops to the least period at which
//! the same shifts and orderings stay feasible (exact, by a search on the longest-path check).
//! It stops when `hi - lo <= tolerance x hi` and returns the least-memory pattern at `hi`.

use crate::algorithm::{SolveError, Stats, Status, Stop};
use crate::deadline::Deadline;
use model::Phase;
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::plan::{Plan, Stage};
use pipeplan_formulations::{InputError, Instance};
use std::time::{Duration, Instant};

/// Least separation (in units of T) kept between two forwards on one GPU when one of them takes
/// no time, so that the ordering binary decides which one came first.
const ZERO_SEP: f64 = 1e-6;

/// Relative tolerance of the longest-path recomputation of start times (well below the
/// simulator's 1e-9).
const PATH_TOL: f64 = 1e-12;

/// Start of the message of a solution HiGHS accepts within its tolerances but that is not
/// feasible at the exact period.
const TOLERANCE: &str = "HiGHS's shifts and orderings";

/// What the memory objective minimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryObjective {
    /// The largest memory of any GPU (one solve).
    Max,
    /// The largest memory, then the sum over GPUs at that largest memory (two solves): on a
    /// contiguous allocation every GPU then gets its own least memory (1F1B*'s, Proposition 1).
    #[default]
    MaxThenSum,
}

/// Options of the schedule ILP.
#[derive(Debug, Clone, PartialEq)]
pub struct IlpOptions {
    /// Wall-clock limit of the whole call (all solves of a bisection together). `None`: none.
    pub time_limit: Option<Duration>,
    /// Objective of [`least_memory`] (and of the final pattern of [`least_period`]).
    pub objective: MemoryObjective,
    /// Relative width at which [`least_period`] stops bisecting: `hi - lo <= tolerance x hi`.
    pub period_tolerance: f64,
    /// Memory of each GPU for [`fit_memory`] and [`least_period`] (bytes); default: the
    /// cluster's.
    pub memory_limit: Option<f64>,
}

impl Default for IlpOptions {
    /// One minute (the paper's limit), [`MemoryObjective::MaxThenSum`], tolerance 1e-3, the
    /// cluster's memory.
    fn default() -> Self {
        IlpOptions {
            time_limit: Some(Duration::from_secs(60)),
            objective: MemoryObjective::MaxThenSum,
            period_tolerance: 1e-3,
            memory_limit: None,
        }
    }
}

/// Which question an [`IlpSchedule`] answers; `bound` and `gap` refer to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IlpGoal {
    /// Least largest memory at a given period (bound and gap in bytes of the largest memory).
    LeastMemory,
    /// A pattern within a memory limit at a given period (a feasibility problem: no bound).
    FitMemory,
    /// Least period at which a pattern fits in memory (bound and gap on the period, ms).
    LeastPeriod,
}

/// A periodic schedule found by the ILP and checked by the simulator.
#[derive(Debug, Clone, PartialEq)]
pub struct IlpSchedule {
    /// The allocation with `Schedule::Async { period: Some(T), pattern: Some(..) }`.
    pub plan: Plan,
    /// The period T (ms).
    pub period: f64,
    /// Peak memory of every GPU of the cluster as the ILP counts it (bytes, index = GPU id, 0 for
    /// unused GPUs): model states + buffers + re-materialization transient + activations, the
    /// evaluator's terms. Equal to what the simulator measures.
    pub memory: Vec<f64>,
    /// Largest entry of `memory`.
    pub max_memory: f64,
    /// Micro-batches each stage keeps in flight (at its forward start, its peak).
    pub in_flight: Vec<u32>,
    /// The question answered.
    pub goal: IlpGoal,
    /// `Optimal`: proven (least memory; a pattern within the limit; the least period within
    /// `period_tolerance`). `Feasible`: stopped by the time limit, see `bound` and `gap`.
    pub status: Status,
    /// Why the call stopped before its proof (`None`: it ran to its end).
    pub stop: Option<Stop>,
    /// Proven lower bound on the goal's objective: the largest memory (bytes) for
    /// [`IlpGoal::LeastMemory`], the period (ms) for [`IlpGoal::LeastPeriod`]; `None` for
    /// [`IlpGoal::FitMemory`], and for a least memory whose proof the second solve refuted
    /// (status `Feasible`, noted).
    pub bound: Option<f64>,
    /// Relative gap `(value - bound) / value` of the goal's objective (`None` without a bound).
    pub gap: Option<f64>,
    /// [`least_period`]: `(lo, hi)` with every period `< lo` proven infeasible (or below the
    /// largest load) and `hi = period` feasible.
    pub period_bracket: Option<(f64, f64)>,
    /// MILPs solved.
    pub ilp_solves: u32,
    /// Branch-and-bound nodes over all solves, when HiGHS reports them (HiGHS 1.15 does not,
    /// through the `highs` crate).
    pub nodes: Option<f64>,
    /// Wall time of the call (ms).
    pub wall_ms: f64,
    /// Remarks (a polishing solve stopped by the time limit, ...).
    pub notes: Vec<String>,
}

impl IlpSchedule {
    /// Solve statistics in the [`Stats`] form (status, bound, gap; counters `ilp solves`,
    /// `ilp nodes`).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::stopped(self.status, self.stop);
        st.wall_ms = self.wall_ms;
        st.bound = self.bound;
        st.gap = self.gap;
        st.counters
            .insert("ilp solves".into(), f64::from(self.ilp_solves));
        if let Some(n) = self.nodes {
            st.counters.insert("ilp nodes".into(), n);
        }
        st
    }
}

/// The pattern of least largest memory at period `period` for the allocation `stages`.
///
/// Fails with [`SolveError::Input`] on a malformed allocation (naming the field: stages not
/// covering the chain, missing GPUs...), a period that is not a positive time or is below the
/// load of a GPU or link (named); with [`SolveError::TimeLimit`] when the limit passes before any
/// pattern is found. With [`MemoryObjective::MaxThenSum`], a second solve that the time limit
/// stops leaves the first solve's pattern (noted).
pub fn least_memory(
    inst: &Instance,
    stages: &[Stage],
    period: f64,
    opts: &IlpOptions,
) -> Result<IlpSchedule, SolveError> {
    let start = Instant::now();
    let deadline = Deadline::after(opts.time_limit);
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    alloc.check_period(period)?;
    let mut counts = Counts::default();
    let mut sched = alloc.least_memory_at(period, opts.objective, &deadline, &mut counts)?;
    sched.finish(start, &counts);
    Ok(sched)
}

/// A pattern of period `period` keeping every GPU within `opts.memory_limit` (default: the
/// cluster's memory), the first HiGHS finds.
///
/// Fails like [`least_memory`], and with [`SolveError::Infeasible`] when HiGHS proves that no
/// pattern of this period fits (the message says which GPU cannot fit at any period, if one
/// cannot).
pub fn fit_memory(
    inst: &Instance,
    stages: &[Stage],
    period: f64,
    opts: &IlpOptions,
) -> Result<IlpSchedule, SolveError> {
    let start = Instant::now();
    let deadline = Deadline::after(opts.time_limit);
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    alloc.check_period(period)?;
    let limit = opts.memory_limit.unwrap_or(inst.usable_memory());
    alloc.check_floor(limit)?;
    let mut counts = Counts::default();
    let (st, _) = alloc.solve(period, Phase::Fit { limit }, &deadline, &mut counts)?;
    let mut sched = alloc.schedule(&st, period, IlpGoal::FitMemory)?;
    sched.status = Status::Optimal;
    sched.finish(start, &counts);
    Ok(sched)
}

/// The least period at which a pattern of the allocation `stages` keeps every GPU within
/// `opts.memory_limit` (default: the cluster's memory), by bisection to
/// `opts.period_tolerance`, with the least-memory pattern at that period.
///
/// Fails with [`SolveError::Input`] on a malformed allocation or options, and with
/// [`SolveError::Infeasible`] when a GPU does not fit even with one micro-batch per stage (its
/// memory at any period), naming it. When the time limit stops the bisection, the best period
/// found so far is returned with status `Feasible` and its bracket; the latency of one
/// micro-batch is always feasible then, so a time limit never leaves this without an answer.
pub fn least_period(
    inst: &Instance,
    stages: &[Stage],
    opts: &IlpOptions,
) -> Result<IlpSchedule, SolveError> {
    least_period_within(inst, stages, opts, &Deadline::after(opts.time_limit))
}

/// The least period any schedule of the allocation can have, the load of its busiest resource
/// (GPU or link, in the instance's topology), and that resource described: cheap, no ILP.
pub fn busiest_resource(inst: &Instance, stages: &[Stage]) -> Result<(f64, String), SolveError> {
    Ok(Alloc::new(inst, stages)?.max_load())
}

/// [`least_period`] within a deadline the caller started (`opts.time_limit` is not used).
pub fn least_period_within(
    inst: &Instance,
    stages: &[Stage],
    opts: &IlpOptions,
    deadline: &Deadline,
) -> Result<IlpSchedule, SolveError> {
    let start = Instant::now();
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    let limit = opts.memory_limit.unwrap_or(inst.usable_memory());
    alloc.check_floor(limit)?;
    let (lo_load, busiest) = alloc.max_load();
    if lo_load <= 0.0 || lo_load.is_nan() {
        return Err(SolveError::Input(InputError::field(
            "model.layers",
            format!(
                "every operation of this allocation takes 0 ms ({busiest} included), so it has \
                 no least period"
            ),
        )));
    }
    let mut counts = Counts::default();
    let mut b = Bisection::start(&alloc, lo_load)?;
    b.run(&alloc, opts.period_tolerance, limit, deadline, &mut counts)?;
    let Bisection {
        lo,
        hi,
        best,
        proven,
        mut stop,
        mut notes,
        ..
    } = b;
    // The least-memory pattern at the period found, if time remains; else the feasible one.
    let mut sched = match alloc.least_memory_at(hi, opts.objective, deadline, &mut counts) {
        Ok(s) if memory_limit::fits(s.max_memory, limit) => s,
        Ok(_) => {
            notes.push("the final least-memory solve did not finish; pattern as found".into());
            alloc.schedule(&best, hi, IlpGoal::LeastPeriod)?
        }
        Err(e) if e.is_stop() => {
            stop = Some(deadline.stop());
            notes.push("the final least-memory solve did not finish; pattern as found".into());
            alloc.schedule(&best, hi, IlpGoal::LeastPeriod)?
        }
        Err(SolveError::Solver(m)) if m.starts_with(TOLERANCE) => {
            notes.push(format!("final least-memory solve discarded: {m}"));
            alloc.schedule(&best, hi, IlpGoal::LeastPeriod)?
        }
        Err(e) => return Err(e),
    };
    sched.goal = IlpGoal::LeastPeriod;
    let gap = if hi > 0.0 { (hi - lo) / hi } else { 0.0 };
    sched.status = if proven && gap <= opts.period_tolerance {
        Status::Optimal
    } else {
        Status::Feasible
    };
    sched.stop = stop;
    sched.bound = Some(lo);
    sched.gap = Some(gap);
    sched.period_bracket = Some((lo, hi));
    sched.notes.extend(notes);
    sched.finish(start, &counts);
    Ok(sched)
}

/// The bisection on the period: `lo` infeasible (or the largest load), `hi` reached by `best`.
struct Bisection {
    lo: f64,
    hi: f64,
    /// The structure reaching `hi`.
    best: model::Structure,
    /// True while `lo` itself may be feasible (only the largest load bounds it).
    lo_open: bool,
    /// Whether `lo` is a proven bound.
    proven: bool,
    stop: Option<Stop>,
    notes: Vec<String>,
}

impl Bisection {
    /// The bracket from the largest load `lo_load` to the sequential pattern: one operation at a
    /// time, over the latency of one micro-batch (the least period of that structure: the
    /// latency, up to the separation of zero-duration forwards).
    fn start(alloc: &Alloc, lo_load: f64) -> Result<Bisection, SolveError> {
        let seq = alloc.sequential();
        let big = alloc.latency().max(lo_load) * (1.0 + ZERO_SEP * (alloc.n() as f64 + 1.0));
        let (hi, _) = alloc.least_period_of(&seq, lo_load, big).ok_or_else(|| {
            SolveError::Solver("the sequential pattern is infeasible (a bug)".into())
        })?;
        Ok(Bisection {
            lo: lo_load,
            hi,
            best: seq,
            lo_open: true,
            proven: true,
            stop: None,
            notes: Vec::new(),
        })
    }

    /// Narrows the bracket to `tolerance` (relative), solving the fitting ILP at the load first,
    /// then at midpoints, until the deadline.
    fn run(
        &mut self,
        alloc: &Alloc,
        tolerance: f64,
        limit: f64,
        deadline: &Deadline,
        counts: &mut Counts,
    ) -> Result<(), SolveError> {
        while self.hi > self.lo && self.hi - self.lo > tolerance * self.hi {
            let t = if self.lo_open {
                self.lo
            } else {
                0.5 * (self.lo + self.hi)
            };
            match alloc.solve(t, Phase::Fit { limit }, deadline, counts) {
                Ok((st, _)) => {
                    // HiGHS's tolerances may accept shifts and orderings that need a hair more
                    // than t: the least period of the structure is searched a little above t too.
                    let (t_min, _) = alloc
                        .least_period_of(&st, self.lo, t * (1.0 + 1e-5))
                        .ok_or_else(|| {
                            SolveError::Solver(format!(
                                "the schedule ILP's shifts and orderings at period {t} ms are not \
                                 feasible near that period (numerical tolerance)"
                            ))
                        })?;
                    if t_min < self.hi {
                        self.hi = t_min;
                        self.best = st;
                    }
                    if self.lo_open && self.hi <= self.lo {
                        break;
                    }
                    if self.lo_open {
                        // Not exactly feasible at the load (tolerance): bisect from there on.
                        self.lo_open = false;
                        self.proven = false;
                    }
                }
                Err(SolveError::Infeasible(_)) => {
                    self.lo = t;
                    self.lo_open = false;
                }
                Err(e) if e.is_stop() => {
                    self.proven = false;
                    self.stop = Some(deadline.stop());
                    self.notes.push(format!(
                        "the {} stopped the bisection while solving period {t} ms",
                        deadline.stop()
                    ));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn check_options(opts: &IlpOptions) -> Result<(), SolveError> {
    let tol = opts.period_tolerance;
    if !(tol.is_finite() && tol > 0.0 && tol < 1.0) {
        return Err(SolveError::Input(InputError::field(
            "period_tolerance",
            format!("must lie in (0, 1), found {tol}"),
        )));
    }
    if let Some(m) = opts.memory_limit {
        if !(m.is_finite() && m > 0.0) {
            return Err(SolveError::Input(InputError::field(
                "memory_limit",
                format!("must be a positive size, found {m}"),
            )));
        }
    }
    Ok(())
}

/// Solve counters of one call.
#[derive(Debug, Default)]
struct Counts {
    solves: u32,
    nodes: Option<f64>,
}

impl IlpSchedule {
    fn finish(&mut self, start: Instant, counts: &Counts) {
        self.ilp_solves = counts.solves;
        self.nodes = counts.nodes;
        self.wall_ms = start.elapsed().as_secs_f64() * 1e3;
    }
}

mod extract;
mod least_memory;
mod model;
#[cfg(test)]
mod tests;

use model::Alloc;
