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
//! Exactly the evaluator's ([`plan_operations`]): `F_s` and `B_s` per stage (the backward includes
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
//! rounding). The pattern then goes through [`simulate`]; a pattern it rejects, or activations it
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

use crate::algorithm::{SolveError, Stats, Status};
use crate::ilp::{self, IlpStatus, Tuning};
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel};
use pipeplan_formulations::cost::stage_costs;
use pipeplan_formulations::plan::{OpKind, Pattern, PatternOp, Plan, Schedule, Stage};
use pipeplan_formulations::simulate::{plan_operations, simulate, OpId, ResourceId};
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance};
use std::collections::BTreeMap;
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
    /// Proven lower bound on the goal's objective: the largest memory (bytes) for
    /// [`IlpGoal::LeastMemory`], the period (ms) for [`IlpGoal::LeastPeriod`]; `None` for
    /// [`IlpGoal::FitMemory`].
    pub bound: Option<f64>,
    /// Relative gap `(value - bound) / value` of the goal's objective.
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
        let mut st = Stats::new(self.status);
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
    let deadline = opts.time_limit.map(|d| start + d);
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    alloc.check_period(period)?;
    let mut counts = Counts::default();
    let mut sched = alloc
        .least_memory_at(period, opts.objective, deadline, &mut counts)
        .map_err(|e| full_limit(e, opts))?;
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
    let deadline = opts.time_limit.map(|d| start + d);
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    alloc.check_period(period)?;
    let limit = opts.memory_limit.unwrap_or(inst.cluster.memory);
    alloc.check_floor(limit)?;
    let mut counts = Counts::default();
    let (st, _) = alloc
        .solve(period, Phase::Fit { limit }, deadline, &mut counts)
        .map_err(|e| full_limit(e, opts))?;
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
    let start = Instant::now();
    let deadline = opts.time_limit.map(|d| start + d);
    let alloc = Alloc::new(inst, stages)?;
    check_options(opts)?;
    let limit = opts.memory_limit.unwrap_or(inst.cluster.memory);
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
    // Upper end: one operation at a time, over the latency of one micro-batch (the least period
    // of that structure: the latency, up to the separation of zero-duration forwards).
    let seq = alloc.sequential();
    let big = alloc.latency().max(lo_load) * (1.0 + ZERO_SEP * (alloc.n() as f64 + 1.0));
    let (mut hi, _) = alloc
        .least_period_of(&seq, lo_load, big)
        .ok_or_else(|| SolveError::Solver("the sequential pattern is infeasible (a bug)".into()))?;
    let mut best = seq;
    let mut lo = lo_load;
    // True while `lo` itself may be feasible (only the largest load bounds it).
    let mut lo_open = true;
    let mut proven = true;
    let mut notes = Vec::new();
    while hi > lo && hi - lo > opts.period_tolerance * hi {
        let t = if lo_open { lo } else { 0.5 * (lo + hi) };
        match alloc.solve(t, Phase::Fit { limit }, deadline, &mut counts) {
            Ok((st, _)) => {
                // HiGHS's tolerances may accept shifts and orderings that need a hair more than
                // t: the least period of the structure is searched a little above t too.
                let (t_min, _) = alloc
                    .least_period_of(&st, lo, t * (1.0 + 1e-5))
                    .ok_or_else(|| {
                        SolveError::Solver(format!(
                            "the schedule ILP's shifts and orderings at period {t} ms are not \
                             feasible near that period (numerical tolerance)"
                        ))
                    })?;
                if t_min < hi {
                    hi = t_min;
                    best = st;
                }
                if lo_open && hi <= lo {
                    break;
                }
                if lo_open {
                    // Not exactly feasible at the load (tolerance): bisect from there on.
                    lo_open = false;
                    proven = false;
                }
            }
            Err(SolveError::Infeasible(_)) => {
                lo = t;
                lo_open = false;
            }
            Err(SolveError::TimeLimit(_)) => {
                proven = false;
                notes.push(format!(
                    "the time limit stopped the bisection while solving period {t} ms"
                ));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    // The least-memory pattern at the period found, if time remains; else the feasible one.
    let mut sched = match alloc.least_memory_at(hi, opts.objective, deadline, &mut counts) {
        Ok(s) if s.max_memory <= limit * (1.0 + 1e-9) => s,
        Ok(_) | Err(SolveError::TimeLimit(_)) => {
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
    sched.bound = Some(lo);
    sched.gap = Some(gap);
    sched.period_bracket = Some((lo, hi));
    sched.notes.extend(notes);
    sched.finish(start, &counts);
    Ok(sched)
}

/// A time limit reached by one solve is the call's whole limit.
fn full_limit(e: SolveError, opts: &IlpOptions) -> SolveError {
    match e {
        SolveError::TimeLimit(_) => {
            SolveError::TimeLimit(opts.time_limit.map_or(0.0, |d| d.as_secs_f64()))
        }
        e => e,
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

/// One operation of the chain.
#[derive(Debug, Clone)]
struct Op {
    id: OpId,
    d: f64,
    res: Vec<ResourceId>,
}

/// The combinatorial part of a solution: shifts and pair orderings (`first[k]`: the lower
/// operation of pair k comes first in the period).
#[derive(Debug, Clone, PartialEq)]
struct Structure {
    h: Vec<i64>,
    first: Vec<bool>,
}

/// Which MILP to solve.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Minimize the largest memory.
    Max,
    /// Minimize the sum of memories with every memory at most `cap` (bytes).
    Sum { cap: f64 },
    /// Any pattern with every memory at most `limit` (bytes).
    Fit { limit: f64 },
}

/// An allocation prepared for the ILP: operations in chain order, resources, memory terms.
struct Alloc<'a> {
    inst: &'a Instance,
    plan: Plan,
    ops: Vec<Op>,
    /// Operation index of F_s and B_s.
    f: Vec<usize>,
    b: Vec<usize>,
    /// Pairs (i < j) of operations sharing a resource.
    pairs: Vec<(usize, usize)>,
    pair_of: BTreeMap<(usize, usize), usize>,
    /// Used GPUs with their stages.
    gpus: Vec<(u32, Vec<usize>)>,
    /// Bytes stored per micro-batch by each stage (per GPU of its group).
    act: Vec<f64>,
    /// States + buffers + transient of each used GPU (same order as `gpus`).
    constant: Vec<f64>,
    /// Busy time of every resource and its operations.
    loads: BTreeMap<ResourceId, (f64, Vec<usize>)>,
}

impl<'a> Alloc<'a> {
    fn new(inst: &'a Instance, stages: &[Stage]) -> Result<Alloc<'a>, SolveError> {
        inst.validate()?;
        let plan = Plan {
            stages: stages.to_vec(),
            schedule: Schedule::Async {
                period: None,
                pattern: None,
            },
        };
        plan.check(inst)?;
        let needed = plan_operations(inst, &plan);
        let n = stages.len();
        let mut order: Vec<OpId> = Vec::new();
        let id = |op, stage| OpId { op, stage };
        for s in 0..n {
            order.push(id(OpKind::F, s));
            if s + 1 < n && needed.contains_key(&id(OpKind::SendF, s)) {
                order.push(id(OpKind::SendF, s));
            }
        }
        for s in (0..n).rev() {
            if s + 1 < n && needed.contains_key(&id(OpKind::SendB, s)) {
                order.push(id(OpKind::SendB, s));
            }
            order.push(id(OpKind::B, s));
        }
        let ops: Vec<Op> = order
            .iter()
            .map(|oid| {
                let (d, res) = needed[oid].clone();
                Op { id: *oid, d, res }
            })
            .collect();
        let idx: BTreeMap<OpId, usize> = order.iter().enumerate().map(|(i, o)| (*o, i)).collect();
        let f = (0..n).map(|s| idx[&id(OpKind::F, s)]).collect();
        let b = (0..n).map(|s| idx[&id(OpKind::B, s)]).collect();
        let mut loads: BTreeMap<ResourceId, (f64, Vec<usize>)> = BTreeMap::new();
        for (i, o) in ops.iter().enumerate() {
            for r in &o.res {
                let e = loads.entry(*r).or_default();
                e.0 += o.d;
                e.1.push(i);
            }
        }
        let mut pairs = Vec::new();
        let mut pair_of = BTreeMap::new();
        for i in 0..ops.len() {
            for j in i + 1..ops.len() {
                if ops[i].res.iter().any(|r| ops[j].res.contains(r)) {
                    pair_of.insert((i, j), pairs.len());
                    pairs.push((i, j));
                }
            }
        }
        let chain = inst.chain();
        let costs = stage_costs(inst, &chain, &plan);
        let mut gpus = Vec::new();
        let mut constant = Vec::new();
        for g in plan.gpus() {
            let on: Vec<usize> = (0..n).filter(|&s| stages[s].gpus.contains(&g)).collect();
            let c = on
                .iter()
                .map(|&s| costs[s].states + costs[s].buffers)
                .sum::<f64>()
                + on.iter().map(|&s| costs[s].transient).fold(0.0, f64::max);
            constant.push(c);
            gpus.push((g, on));
        }
        Ok(Alloc {
            inst,
            act: costs.iter().map(|c| c.act_per_mb).collect(),
            plan,
            ops,
            f,
            b,
            pairs,
            pair_of,
            gpus,
            constant,
            loads,
        })
    }

    fn n(&self) -> usize {
        self.ops.len()
    }

    /// The largest load of a resource, and that resource described.
    fn max_load(&self) -> (f64, String) {
        let mut best = (0.0, String::new());
        for (r, (load, ops)) in &self.loads {
            if *load > best.0 || best.1.is_empty() {
                best = (*load, self.describe(r, ops));
            }
        }
        best
    }

    fn describe(&self, r: &ResourceId, ops: &[usize]) -> String {
        let names: Vec<String> = ops.iter().map(|&o| self.ops[o].id.to_string()).collect();
        format!("{r} ({})", names.join(" + "))
    }

    /// Latency of one micro-batch: every operation in sequence.
    fn latency(&self) -> f64 {
        self.ops.iter().map(|o| o.d).sum()
    }

    /// Refuses a period that is not a positive time or is below a resource's load.
    fn check_period(&self, t: f64) -> Result<(), SolveError> {
        if !(t.is_finite() && t > 0.0) {
            return Err(SolveError::Input(InputError::field(
                "period",
                format!("must be a positive time, found {t}"),
            )));
        }
        for (r, (load, ops)) in &self.loads {
            if *load > t * (1.0 + 1e-12) + 1e-12 {
                return Err(SolveError::Input(InputError::field(
                    "period",
                    format!(
                        "{t} ms is below the load {load:.6} ms of {} per micro-batch",
                        self.describe(r, ops)
                    ),
                )));
            }
        }
        Ok(())
    }

    /// Refuses a memory limit below what a GPU needs at any period (one micro-batch per stage).
    fn check_floor(&self, limit: f64) -> Result<(), SolveError> {
        for ((g, on), c) in self.gpus.iter().zip(&self.constant) {
            let floor = c + on.iter().map(|&s| self.act[s]).sum::<f64>();
            if floor > limit * (1.0 + 1e-9) {
                return Err(SolveError::Infeasible(format!(
                    "GPU {g} needs at least {} at any period (model states, buffers and one \
                     micro-batch of activations for each of its stages {on:?}); it has {}",
                    fmt_bytes(floor),
                    fmt_bytes(limit)
                )));
            }
        }
        Ok(())
    }

    /// Y(a, b) = 1 when a comes before b in the period, as (constant, pair index, sign):
    /// `constant + sign * y[pair]`.
    fn order(&self, a: usize, b: usize) -> (f64, Option<(usize, f64)>) {
        if a == b {
            (1.0, None)
        } else if a < b {
            (0.0, Some((self.pair_of[&(a, b)], 1.0)))
        } else {
            (1.0, Some((self.pair_of[&(b, a)], -1.0)))
        }
    }

    /// Effective duration of operation `o` in its pair with `other` (ms).
    fn sep(&self, o: usize, other: usize, t: f64) -> f64 {
        let both_f = self.ops[o].id.op == OpKind::F && self.ops[other].id.op == OpKind::F;
        if both_f {
            self.ops[o].d.max(ZERO_SEP * t)
        } else {
            self.ops[o].d
        }
    }

    /// Bounds of h_o: `A_o = h_o T + t_o` lies in `[P_o, P_o + o T]`.
    fn shift_bounds(&self, t: f64) -> Vec<(f64, f64)> {
        let mut prefix = 0.0;
        let mut v = Vec::with_capacity(self.n());
        for (o, op) in self.ops.iter().enumerate() {
            let lo = ((prefix / t) - 1.0 - 1e-9).ceil().max(0.0);
            let hi = (prefix / t + 1e-9).floor() + o as f64;
            v.push(if o == 0 { (0.0, 0.0) } else { (lo, hi.max(lo)) });
            prefix += op.d;
        }
        v
    }

    /// Builds and solves one MILP at period `t`; returns the structure and HiGHS's outcome.
    fn solve(
        &self,
        t: f64,
        phase: Phase,
        deadline: Option<Instant>,
        counts: &mut Counts,
    ) -> Result<(Structure, Milp), SolveError> {
        let n = self.n();
        let scale = self.memory_unit();
        let mut vars = ProblemVariables::new();
        let tau: Vec<_> = (0..n)
            .map(|o| vars.add(variable().min(0.0).max(if o == 0 { 0.0 } else { 1.0 })))
            .collect();
        let h: Vec<_> = self
            .shift_bounds(t)
            .into_iter()
            .map(|(lo, hi)| vars.add(variable().integer().min(lo).max(hi)))
            .collect();
        let y: Vec<_> = self
            .pairs
            .iter()
            .map(|_| vars.add(variable().binary()))
            .collect();
        let m: Vec<_> = self
            .gpus
            .iter()
            .map(|_| vars.add(variable().min(0.0)))
            .collect();
        let z = vars.add(variable().min(0.0));
        let objective: Expression = match phase {
            Phase::Max => z.into(),
            Phase::Sum { .. } => m.iter().copied().sum(),
            Phase::Fit { .. } => Expression::from(0.0),
        };
        let mut model = vars
            .minimise(objective)
            .using(good_lp::solvers::highs::highs);
        let ord = |a: usize, b: usize| -> Expression {
            let (c, p) = self.order(a, b);
            match p {
                None => Expression::from(c),
                Some((k, sign)) => c + sign * y[k],
            }
        };
        // Precedence, with at most one period of gap.
        for o in 0..n.saturating_sub(1) {
            let d = self.ops[o].d / t;
            let diff = h[o + 1] + tau[o + 1] - h[o] - tau[o];
            model = model.with(constraint!(diff.clone() >= d));
            model = model.with(constraint!(diff <= d + 1.0));
        }
        // No overlap on the circle.
        for (k, &(i, j)) in self.pairs.iter().enumerate() {
            let ei = self.sep(i, j, t) / t;
            let ej = self.sep(j, i, t) / t;
            model = model.with(constraint!(tau[i] + ei <= tau[j] + 1.0 - y[k]));
            model = model.with(constraint!(tau[j] + ej <= tau[i] + y[k]));
        }
        // Memory at every forward start.
        for (gi, (_, on)) in self.gpus.iter().enumerate() {
            for &probe in on {
                let mut expr = Expression::from(self.constant[gi] / scale);
                for &s in on {
                    let alive = h[self.b[s]] - h[self.f[s]] + ord(self.f[s], self.f[probe])
                        - ord(self.b[s], self.f[probe]);
                    expr += (self.act[s] / scale) * alive;
                }
                model = model.with(constraint!(m[gi] >= expr));
            }
            model = model.with(constraint!(z >= m[gi]));
            match phase {
                Phase::Sum { cap } | Phase::Fit { limit: cap } => {
                    model = model.with(constraint!(m[gi] <= cap / scale));
                }
                Phase::Max => {}
            }
        }
        // A micro-batch lives at least as long as the chain from F_s to B_s.
        for s in 0..self.f.len() {
            let chain: f64 = self.ops[self.f[s]..=self.b[s]].iter().map(|o| o.d).sum();
            let need = (chain / t - 1e-9).ceil().max(1.0);
            let alive = h[self.b[s]] - h[self.f[s]] + 1.0 - ord(self.b[s], self.f[s]);
            model = model.with(constraint!(alive >= need));
        }
        let remaining = match deadline {
            None => None,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(SolveError::TimeLimit(0.0));
                }
                Some(left)
            }
        };
        let what = match phase {
            Phase::Fit { limit } => format!(
                "no periodic pattern of period {t} ms keeps every GPU within {}",
                fmt_bytes(limit)
            ),
            _ => format!("no periodic pattern of period {t} ms (a bug: the loads fit)"),
        };
        counts.solves += 1;
        let out = solve_milp(model, remaining, &what)?;
        if let Some(nodes) = out.nodes {
            *counts.nodes.get_or_insert(0.0) += nodes;
        }
        let st = Structure {
            h: (0..n).map(|o| out.values[n + o].round() as i64).collect(),
            first: (0..self.pairs.len())
                .map(|k| out.values[2 * n + k] > 0.5)
                .collect(),
        };
        Ok((st, out))
    }

    /// Unit of memory in the MILP: the largest per-micro-batch activation (so that memory steps
    /// are well above HiGHS's absolute gap of 1e-6).
    fn memory_unit(&self) -> f64 {
        self.act.iter().copied().fold(0.0, f64::max).max(1.0)
    }

    /// The least-memory pattern at `t` (one or two solves).
    fn least_memory_at(
        &self,
        t: f64,
        objective: MemoryObjective,
        deadline: Option<Instant>,
        counts: &mut Counts,
    ) -> Result<IlpSchedule, SolveError> {
        let (st, out) = self.solve(t, Phase::Max, deadline, counts)?;
        let scale = self.memory_unit();
        let mut sched = self.schedule(&st, t, IlpGoal::LeastMemory)?;
        let bound = (out.bound * scale).min(sched.max_memory);
        sched.status = match out.status {
            IlpStatus::Optimal => Status::Optimal,
            IlpStatus::Feasible => Status::Feasible,
        };
        // HiGHS stops at a relative gap of 1e-9 and an absolute gap of 1e-6 (in units of the
        // largest activation): an "optimal" bound is the count itself.
        let bound = if sched.status == Status::Optimal {
            sched.max_memory
        } else {
            bound
        };
        sched.bound = Some(bound);
        sched.gap = Some((sched.max_memory - bound).max(0.0) / sched.max_memory.max(1e-300));
        if objective == MemoryObjective::MaxThenSum && self.gpus.len() > 1 {
            let cap = sched.max_memory * (1.0 + 1e-9) + 1e-7 * scale;
            let second = self
                .solve(t, Phase::Sum { cap }, deadline, counts)
                .and_then(|(st2, out2)| Ok((self.schedule(&st2, t, IlpGoal::LeastMemory)?, out2)));
            match second {
                Ok((s2, out2)) => {
                    if s2.max_memory <= sched.max_memory * (1.0 + 1e-9) {
                        sched.plan = s2.plan;
                        sched.memory = s2.memory;
                        sched.max_memory = s2.max_memory;
                        sched.in_flight = s2.in_flight;
                    }
                    if out2.status == IlpStatus::Feasible {
                        sched.notes.push(
                            "the time limit stopped the second solve (least sum of memories): \
                             the GPUs below the largest memory may not be at their least"
                                .into(),
                        );
                    }
                }
                Err(SolveError::TimeLimit(_)) => sched.notes.push(
                    "the time limit stopped the second solve (least sum of memories) before it \
                     found a pattern: the GPUs below the largest memory are not minimized"
                        .into(),
                ),
                Err(SolveError::Solver(m)) if m.starts_with(TOLERANCE) => {
                    sched.notes.push(format!("second solve discarded: {m}"))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(sched)
    }

    /// The ILP's memory count of a structure: per used GPU (bytes), and per stage in flight.
    fn count(&self, st: &Structure) -> (Vec<f64>, Vec<f64>, Vec<u32>) {
        let y = |a: usize, b: usize| -> i64 {
            let (c, p) = self.order(a, b);
            let v = match p {
                None => c,
                Some((k, sign)) => c + sign * if st.first[k] { 1.0 } else { 0.0 },
            };
            v as i64
        };
        let alive = |s: usize, probe: usize| -> i64 {
            st.h[self.b[s]] - st.h[self.f[s]] + y(self.f[s], self.f[probe])
                - y(self.b[s], self.f[probe])
        };
        let mut total = Vec::new();
        let mut acts = Vec::new();
        for ((_, on), c) in self.gpus.iter().zip(&self.constant) {
            let peak = on
                .iter()
                .map(|&p| {
                    on.iter()
                        .map(|&s| alive(s, p).max(0) as f64 * self.act[s])
                        .sum::<f64>()
                })
                .fold(0.0, f64::max);
            acts.push(peak);
            total.push(c + peak);
        }
        let in_flight = (0..self.f.len())
            .map(|s| alive(s, s).max(0) as u32)
            .collect();
        (total, acts, in_flight)
    }

    /// Earliest start times (ms) for a structure at period `t`: the longest paths of the
    /// difference constraints, or `None` when they have no solution.
    fn times(&self, st: &Structure, t: f64) -> Option<Vec<f64>> {
        self.times_upto(st, t, self.n())
    }

    /// [`Self::times`] for the operations `0..upto` only (the others ignored).
    fn times_upto(&self, st: &Structure, t: f64, upto: usize) -> Option<Vec<f64>> {
        let n = upto;
        let src = n;
        // (u, v, w): t_v >= t_u + w.
        let mut edges: Vec<(usize, usize, f64)> = Vec::new();
        for o in 0..n {
            edges.push((src, o, 0.0));
            edges.push((o, src, -t));
        }
        if n > 0 {
            edges.push((0, src, 0.0));
        }
        for o in 0..n.saturating_sub(1) {
            let w = self.ops[o].d - (st.h[o + 1] - st.h[o]) as f64 * t;
            edges.push((o, o + 1, w));
        }
        for (k, &(i, j)) in self.pairs.iter().enumerate() {
            if j >= n {
                continue;
            }
            let (a, b) = if st.first[k] { (i, j) } else { (j, i) };
            edges.push((a, b, self.sep(a, b, t)));
            edges.push((b, a, self.sep(b, a, t) - t));
        }
        let eps = PATH_TOL * t;
        let mut dist = vec![0.0f64; n + 1];
        for round in 0..=n + 1 {
            let mut changed = false;
            for &(u, v, w) in &edges {
                if dist[u] + w > dist[v] + eps {
                    dist[v] = dist[u] + w;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            if round == n + 1 {
                return None;
            }
        }
        if dist[src] > eps {
            return None;
        }
        // Every constraint must hold within the tolerance (the rounds above may have stopped on
        // sub-tolerance updates only).
        let ok = edges
            .iter()
            .all(|&(u, v, w)| dist[u] + w <= dist[v] + 2.0 * eps);
        ok.then(|| dist[..n].to_vec())
    }

    /// The least period in `[lo, t]` at which a structure feasible at `t` stays feasible, with its
    /// times (`None` if it is not feasible at `t`).
    fn least_period_of(&self, st: &Structure, lo: f64, t: f64) -> Option<(f64, Vec<f64>)> {
        let mut best = (t, self.times(st, t)?);
        if let Some(x) = self.times(st, lo) {
            return Some((lo, x));
        }
        let mut a = lo;
        for _ in 0..200 {
            if best.0 - a <= 1e-12 * best.0 {
                break;
            }
            let mid = 0.5 * (a + best.0);
            match self.times(st, mid) {
                Some(x) => best = (mid, x),
                None => a = mid,
            }
        }
        Some(best)
    }

    /// One operation after another in chain order (feasible at the latency, one micro-batch in
    /// flight per stage).
    fn sequential(&self) -> Structure {
        Structure {
            h: vec![0; self.n()],
            first: vec![true; self.pairs.len()],
        }
    }

    /// Turns a structure into a checked schedule at period `t`.
    fn schedule(&self, st: &Structure, t: f64, goal: IlpGoal) -> Result<IlpSchedule, SolveError> {
        let times = self.times(st, t).ok_or_else(|| {
            SolveError::Solver(format!(
                "{TOLERANCE} are feasible only within its tolerances at period {t} ms, not \
                 exactly"
            ))
        })?;
        let mut ops = Vec::with_capacity(self.n());
        for (o, op) in self.ops.iter().enumerate() {
            let (mut start, mut shift) = (times[o], st.h[o]);
            // A start at the period end is the same as at 0 one period later.
            if start >= t {
                start = (start - t).max(0.0);
                shift += 1;
            }
            ops.push(PatternOp {
                op: op.id.op,
                stage: op.id.stage,
                start,
                shift,
            });
        }
        let pattern = Pattern { period: t, ops };
        let mut plan = self.plan.clone();
        plan.schedule = Schedule::Async {
            period: Some(t),
            pattern: Some(pattern.clone()),
        };
        let rep = simulate(self.inst, &plan, &pattern).map_err(|v| {
            SolveError::Solver(format!(
                "the simulator rejects the schedule ILP's pattern at period {t} ms: {v}"
            ))
        })?;
        let (total, acts, in_flight) = self.count(st);
        let mut memory = vec![0.0; self.inst.cluster.gpus as usize];
        for (((g, _), tot), a) in self.gpus.iter().zip(&total).zip(&acts) {
            let measured = rep.peak_activations[*g as usize];
            // Above the count is a bug; below it can only be a tie of zero-duration operations
            // that the count resolves pessimistically.
            if measured > a + 1e-9 * a.max(1.0) {
                return Err(SolveError::Solver(format!(
                    "GPU {g}: the simulator measures {} of activations, the schedule ILP counts \
                     {} (period {t} ms)",
                    fmt_bytes(measured),
                    fmt_bytes(*a)
                )));
            }
            memory[*g as usize] = *tot;
        }
        let max_memory = memory.iter().copied().fold(0.0, f64::max);
        Ok(IlpSchedule {
            plan,
            period: t,
            memory,
            max_memory,
            in_flight,
            goal,
            status: Status::Optimal,
            bound: None,
            gap: None,
            period_bracket: None,
            ilp_solves: 0,
            nodes: None,
            wall_ms: 0.0,
            notes: Vec::new(),
        })
    }
}

/// What HiGHS returned.
#[derive(Debug, Clone)]
struct Milp {
    status: IlpStatus,
    /// Proven bound on the objective.
    bound: f64,
    /// Values of the variables, in creation order.
    values: Vec<f64>,
    /// Branch-and-bound nodes, when HiGHS reports them.
    nodes: Option<f64>,
}

/// Solves a model with [`ilp::solve_tuned`] and [`Tuning::Strict`] (see the module docs,
/// "HiGHS settings").
fn solve_milp(
    problem: good_lp::solvers::highs::HighsProblem,
    time_limit: Option<Duration>,
    what_if_infeasible: &str,
) -> Result<Milp, SolveError> {
    let out = ilp::solve_tuned(problem, time_limit, what_if_infeasible, Tuning::Strict)?;
    Ok(Milp {
        status: out.status,
        bound: out.bound,
        values: out.values,
        nodes: out.nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipeplan_formulations::instance::{Cluster, Layer};

    fn instance(layers: &[(f64, f64, f64, f64)], gpus: u32, bandwidth: f64) -> Instance {
        let mib = 1024.0 * 1024.0;
        let layers = layers.iter().enumerate();
        let layers =
            layers.map(|(i, &(f, b, w, o))| Layer::new(format!("l{i}"), f, b, w * mib, o * mib));
        let cluster = Cluster::single_node(gpus, 1e15, bandwidth);
        let inst = Instance::new("brute", 1, 2.0 * mib, layers.collect(), cluster);
        inst.validate().unwrap();
        inst
    }

    /// Whether some structure has a largest memory below `target`, by exhaustive search:
    /// operations in chain order, each with a shift increment of 0..=3 periods over its
    /// predecessor (a gap of up to two periods, more than the ILP allows) and every position in the period order of the
    /// operations already placed on its resources, pruned by the longest-path check of the
    /// placed prefix and by a lower bound on memory (a stage whose forward has shift h(F) keeps
    /// at least h - h(F) micro-batches once an operation of shift h is placed, one less at the
    /// other forwards of its GPU, and at least ceil(D_s / T)).
    fn beaten(alloc: &Alloc, t: f64, target: f64) -> bool {
        fn bound(alloc: &Alloc, t: f64, st: &Structure, placed: usize) -> f64 {
            let h_now = st.h[placed - 1];
            let mut worst: f64 = 0.0;
            for ((_, on), c) in alloc.gpus.iter().zip(&alloc.constant) {
                for &probe in on.iter().filter(|&&p| alloc.f[p] < placed) {
                    let mut m = *c;
                    for &s in on.iter().filter(|&&s| alloc.f[s] < placed) {
                        let lived = h_now - st.h[alloc.f[s]];
                        let n = if s == probe {
                            let chain: f64 =
                                alloc.ops[alloc.f[s]..=alloc.b[s]].iter().map(|o| o.d).sum();
                            (lived as f64).max((chain / t - 1e-9).ceil())
                        } else {
                            (lived - 1).max(0) as f64
                        };
                        m += n * alloc.act[s];
                    }
                    worst = worst.max(m);
                }
            }
            worst
        }
        fn go(alloc: &Alloc, t: f64, st: &mut Structure, o: usize, target: f64) -> bool {
            let n = alloc.n();
            if o == n {
                let (total, _, _) = alloc.count(st);
                return total.iter().copied().fold(0.0, f64::max) < target;
            }
            // Operations placed before `o` sharing a resource with it.
            let earlier: Vec<usize> = (0..o)
                .filter(|&i| alloc.pair_of.contains_key(&(i, o)))
                .collect();
            // Rank of i among the earlier operations in the period order (same resource).
            let rank = |i: usize, st: &Structure| {
                earlier
                    .iter()
                    .filter(|&&j| {
                        j != i && st.first[alloc.pair_of[&(j.min(i), j.max(i))]] == (j < i)
                    })
                    .count()
            };
            let ranks: Vec<usize> = earlier.iter().map(|&i| rank(i, st)).collect();
            for inc in 0..=3i64 {
                if o == 0 && inc > 0 {
                    break;
                }
                st.h[o] = if o == 0 { 0 } else { st.h[o - 1] + inc };
                if bound(alloc, t, st, o + 1) >= target {
                    break;
                }
                // Insert `o` after the first `pos` earlier operations of the period order.
                for pos in 0..=earlier.len() {
                    for (&i, &r) in earlier.iter().zip(&ranks) {
                        st.first[alloc.pair_of[&(i, o)]] = r < pos;
                    }
                    if alloc.times_upto(st, t, o + 1).is_some() && go(alloc, t, st, o + 1, target) {
                        return true;
                    }
                }
            }
            false
        }
        let mut st = Structure {
            h: vec![0; alloc.n()],
            first: vec![true; alloc.pairs.len()],
        };
        go(alloc, t, &mut st, 0, target)
    }

    /// Non-contiguous allocations (a GPU holding two stages, two cuts on one link): no structure
    /// of the exhaustive search beats the ILP's least largest memory, at several periods.
    #[test]
    fn least_memory_matches_exhaustive_search() {
        let layers = [
            (1.0, 2.0, 10.0, 8.0),
            (2.0, 3.0, 20.0, 4.0),
            (0.5, 1.0, 5.0, 6.0),
            (1.5, 2.5, 8.0, 2.0),
        ];
        let allocations = [
            vec![
                Stage::single(0, 0, 0),
                Stage::single(1, 2, 1),
                Stage::single(3, 3, 0),
            ],
            vec![
                Stage::single(0, 1, 0),
                Stage::single(2, 2, 1),
                Stage::single(3, 3, 1),
            ],
            vec![
                Stage::single(0, 0, 1),
                Stage::single(1, 1, 0),
                Stage::single(2, 3, 1),
            ],
        ];
        for (a, stages) in allocations.iter().enumerate() {
            for bw in [2e9, 1e12] {
                let inst = instance(&layers, 2, bw);
                let alloc = Alloc::new(&inst, stages).unwrap();
                let load = alloc.max_load().0;
                for f in [1.0, 1.15, 1.4, 2.0, 3.0] {
                    let t = load * f;
                    let opts = IlpOptions {
                        objective: MemoryObjective::Max,
                        ..IlpOptions::default()
                    };
                    let s = least_memory(&inst, stages, t, &opts).unwrap();
                    // The ILP's pattern passed the simulator with this memory; nothing is lower.
                    assert!(
                        !beaten(&alloc, t, s.max_memory * (1.0 - 1e-9)),
                        "allocation {a}, bw {bw}, T = {t}: the search beats the ILP's {}",
                        s.max_memory
                    );
                    // ... and the search is not vacuous: it reaches the ILP's memory.
                    assert!(beaten(&alloc, t, s.max_memory * (1.0 + 1e-9)));
                }
            }
        }
    }
}
