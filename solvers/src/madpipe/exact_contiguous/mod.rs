//! `exact-contiguous`: the least valid period over every contiguous partition of the chain into
//! at most P stages (stage s on GPU s), with 1F1B* memory (`docs/madpipe.md`). It is the exact
//! reference the MadPipe family is measured against.
//!
//! # Method
//!
//! For a fixed threshold `T`, an *oracle* decides whether some partition is feasible: every
//! stage and link load at most `T`, and every GPU within memory with the micro-batches 1F1B*
//! keeps at `T`. It is a dynamic program over suffixes, built backwards as 1F1B* builds its
//! groups: the state of a suffix (layers `l..L` in `q` stages) is the 1F1B* group index `g` and
//! the load `s` already in the open group. A state with a smaller `(g, s)` (lexicographically)
//! *dominates*: prepending any resource keeps it smaller (next-fit packing stays ahead), so every
//! earlier stage gets a group at most as large, hence at most as much memory. Keeping only the
//! dominant state per `(l, q)` is therefore exact: `O(L^2 P)` per oracle call. When any stage
//! count up to P is allowed, fewer stages dominate too (they leave more GPUs to the prefix), so
//! each suffix keeps a Pareto front of `(q, g, s)`, usually one or two states, instead of one
//! state per q: `O(L^2)` in practice.
//!
//! Feasibility is monotone in `T` (groups never grow with `T`), and the optimum is the valid
//! period of some partition, a sum of consecutive loads: a float. A bisection over the bit
//! patterns of positive floats (at most 64 oracle calls) keeps `lo` infeasible and `hi` the valid
//! period of a partition the oracle found, and stops when they are adjacent floats: then no
//! partition has a valid period below `hi`, which is the exact optimum. When the links between
//! GPUs differ (several nodes), a link's load depends on which GPUs it joins, so the stage a
//! q-stage suffix opens needs the total stage count p: the DP runs once per residue of p modulo
//! the period of the links' pattern (8 for 8 GPUs per node), each class sharing its links.
//! Everything is polynomial; no enumeration.
//!
//! Loads and memory are accumulated exactly as the evaluator accumulates them, so the claimed
//! period equals [`valid_period`] of the returned partition and the evaluator's verdict (it fits
//! at the period, not below). Optimal up to the 1e-12 rounding slack 1F1B* allows when it compares
//! sums with the period.
//!
//! Settings (`--set`): `fewer=false` forces exactly P stages (default: at most P; a user with P
//! GPUs may use fewer, and with 1F1B* memory fewer stages can be better: fewer links, fewer
//! groups).

mod diagnose;
mod oracle;

use super::valid_period::{async_schedule_note, valid_period, ValidPeriod};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status,
};
use crate::deadline::Deadline;
use crate::settings::{Kind, Param};
use oracle::Model;
use pipeplan_formulations::{InputError, Instance, Plan, Schedule};

/// The exact contiguous optimum (see the module docs).
pub struct ExactContiguous;

/// What [`contiguous_optimum`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct ContiguousOptimum {
    /// Last layer of every stage (stage s on GPU s).
    pub ends: Vec<usize>,
    /// Its valid period, groups and memory (the period is the optimum when `status` is
    /// `Optimal`).
    pub valid: ValidPeriod,
    /// `Optimal`, or `Feasible` when the time limit stopped the bisection.
    pub status: Status,
    /// Every contiguous partition has a valid period of at least this (ms).
    pub bound: f64,
    /// Oracle calls (each a DP over suffixes at one threshold).
    pub oracle_calls: u64,
}

impl ContiguousOptimum {
    /// The plan (stage s on GPU s, 1F1B* at the valid period) and what it claims of it.
    pub fn plan_and_claims(&self, inst: &Instance) -> (Plan, Claimed) {
        let t = self.valid.period;
        let plan = Plan::contiguous(&self.ends, Schedule::one_f_one_b_star(Some(t)));
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::AsyncPeriod, t)),
            period_ms: Some(t),
            throughput: Some(inst.micro_batch() as f64 / t * 1e3),
            max_memory: Some(self.valid.max_memory()),
            peak_memory: Some(self.valid.peak_memory.clone()),
            fits: Some(true),
            ..Claimed::default()
        };
        (plan, claimed)
    }
}

/// Finds the least valid period over contiguous partitions into `qmin..=qmax` stages (stage s
/// on GPU s). Stops at `deadline` with the best partition so far (`Status::Feasible`).
pub fn contiguous_optimum(
    inst: &Instance,
    qmin: usize,
    qmax: usize,
    deadline: &Deadline,
) -> Result<ContiguousOptimum, SolveError> {
    inst.validate()?;
    let n = inst.num_layers();
    if qmin == 0 || qmin > qmax || qmax > n || qmax > inst.cluster.gpus as usize {
        return Err(SolveError::Input(InputError::field(
            "--stages",
            format!(
                "stage counts {qmin}..={qmax} are not possible with {n} layers and {} GPUs",
                inst.cluster.gpus
            ),
        )));
    }
    let model = Model::new(inst, qmax);
    let mut calls = 1;
    let Some(first) = model.oracle(f64::INFINITY, qmin, qmax, false) else {
        return Err(SolveError::Infeasible(model.diagnose(
            inst,
            qmax,
            qmin == qmax,
        )));
    };
    let vp = |ends: &[usize]| -> Result<ValidPeriod, SolveError> {
        valid_period(inst, ends).map_err(|e| match e {
            super::valid_period::ValidPeriodError::Input(i) => SolveError::Input(i),
            super::valid_period::ValidPeriodError::Memory(m) => SolveError::Solver(format!(
                "exact-contiguous: the DP found partition {ends:?} feasible but its valid \
                 period says {m}"
            )),
        })
    };
    let mut best_ends = first;
    let mut best = vp(&best_ends)?;
    // Bisection over the bit patterns of non-negative floats (monotone in the value): `lo` is
    // infeasible (every valid period exceeds it), `hi` is a valid period.
    let mut lo: u64 = 0;
    let mut hi: u64 = best.period.to_bits();
    let mut stopped = false;
    while hi - lo > 1 {
        if deadline.passed() {
            stopped = true;
            break;
        }
        let mid = lo + (hi - lo) / 2;
        calls += 1;
        match model.oracle(f64::from_bits(mid), qmin, qmax, false) {
            Some(ends) => {
                let v = vp(&ends)?;
                if v.period.to_bits() > mid {
                    return Err(SolveError::Solver(format!(
                        "exact-contiguous: partition {ends:?} is feasible at {} ms but its valid \
                         period is {} ms",
                        f64::from_bits(mid),
                        v.period
                    )));
                }
                hi = v.period.to_bits();
                best = v;
                best_ends = ends;
            }
            None => lo = mid,
        }
    }
    if !stopped {
        // Among the optimal partitions, the one with the fewest stages.
        calls += 1;
        if let Some(ends) = model.oracle(f64::from_bits(hi), qmin, qmax, true) {
            let v = vp(&ends)?;
            if v.period == best.period {
                best = v;
                best_ends = ends;
            }
        }
    }
    Ok(ContiguousOptimum {
        ends: best_ends,
        status: if stopped {
            Status::Feasible
        } else {
            Status::Optimal
        },
        bound: if stopped {
            f64::from_bits(lo + 1)
        } else {
            best.period
        },
        valid: best,
        oracle_calls: calls,
    })
}

impl Algorithm for ExactContiguous {
    fn name(&self) -> &'static str {
        "exact-contiguous"
    }
    fn family(&self) -> Family {
        Family::Madpipe
    }
    fn description(&self) -> &'static str {
        "least valid 1F1B* period over every contiguous partition into at most P stages \
         (suffix DP + float bisection, exact)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn params(&self) -> Vec<Param> {
        vec![Param::new(
            "fewer",
            Kind::Flag,
            "true",
            "also consider partitions into fewer stages than GPUs",
        )]
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let fewer = ctx.settings.flag("fewer");
        let p = ctx.stage_count(inst)?;
        let opt = contiguous_optimum(inst, if fewer { 1 } else { p }, p, &ctx.deadline)?;
        let t = opt.valid.period;
        let (plan, claimed) = opt.plan_and_claims(inst);
        let mut stats = Stats::stopped(
            opt.status,
            (opt.status == Status::Feasible).then(|| ctx.deadline.stop()),
        );
        stats.bound = Some(opt.bound);
        stats.gap = Some(if t > 0.0 { (t - opt.bound) / t } else { 0.0 });
        stats
            .counters
            .insert("oracle calls".into(), opt.oracle_calls as f64);
        stats
            .counters
            .insert("breakpoints".into(), opt.valid.breakpoints as f64);
        let mut sol = solution(self, inst, plan, claimed, stats);
        sol.notes.push(format!(
            "contiguous partition into {} of at most {p} stages (GPU s for stage s), 1F1B* \
             groups {:?}; the loads alone allow {:.6} ms",
            opt.ends.len(),
            opt.valid.groups,
            opt.valid.max_load
        ));
        if opt.status == Status::Feasible {
            sol.notes.push(format!(
                "time limit reached: the optimum lies in [{:.9}, {t:.9}] ms",
                opt.bound
            ));
        }
        sol.notes.extend(async_schedule_note(inst));
        Ok(sol)
    }
}
