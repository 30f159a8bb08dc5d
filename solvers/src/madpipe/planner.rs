//! The `madpipe` algorithm: MadPipe-DP with Algorithm 1's T^ search ([`super::dp`]), then the
//! periodic schedule of its allocation by the schedule ILP ([`super::schedule_ilp`]).
//!
//! The claim is the valid schedule's period (the paper's solid line); the DP's own estimate (the
//! dashed line) is kept in the notes and in the counters `dp period ms` and `dp t_hat ms`.
//!
//! The contiguous optimum (`exact-contiguous`, at most P stages) is an allocation of MadPipe's
//! own space; it is computed first, and the DP's allocation is kept only when its valid period
//! is lower, so `madpipe` is never worse than `exact-contiguous` (the notes say which won).

use super::dp::{madpipe_dp, DpOptions, DpResult};
use super::exact_contiguous::{contiguous_optimum, ContiguousOptimum};
use super::schedule_ilp::{busiest_resource, least_period_within, IlpOptions, IlpSchedule};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status,
};
use crate::settings::{Kind, Param};
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::units::fmt_ms;
use pipeplan_formulations::Instance;

/// MadPipe (DP + T^ search + schedule ILP).
pub struct Madpipe;

impl Algorithm for Madpipe {
    fn name(&self) -> &'static str {
        "madpipe"
    }

    fn family(&self) -> Family {
        Family::Madpipe
    }

    fn description(&self) -> &'static str {
        "MadPipe: allocation DP with a special GPU + T^ search (Algorithm 1), then the least-period \
         periodic schedule by ILP (HiGHS); --stages = GPUs used; --set grid_t/grid_m/grid_v/rounds/\
         period_tolerance"
    }

    fn exact(&self) -> bool {
        false
    }

    fn params(&self) -> Vec<Param> {
        let mut p = DpOptions::PARAMS.to_vec();
        p.push(Param::new(
            "period_tolerance",
            Kind::Real {
                above: 0.0,
                below: 1.0,
                none: false,
            },
            "0.001",
            "relative width at which the schedule ILP's period bisection stops",
        ));
        p
    }

    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let dp_opts = DpOptions::from_settings(&ctx.settings);
        let mut ilp_opts = IlpOptions::default();
        if let Some(Some(t)) = ctx.settings.real("period_tolerance") {
            ilp_opts.period_tolerance = t;
        }
        let gpus = ctx.stage_count(inst)?;
        // A contiguous partition (stage s on GPU s, one stage on the special GPU) is an
        // allocation of MadPipe's own space: the DP's allocation is kept only when its valid
        // period beats the contiguous optimum's, so madpipe is never worse than it.
        let contiguous = match contiguous_optimum(inst, 1, gpus, &ctx.deadline) {
            Ok(c) => Some(c),
            Err(SolveError::Infeasible(_)) => None,
            Err(e) => return Err(e),
        };
        // The DP only needs to beat the contiguous optimum's period. The ILP gets what the DP
        // left of the time limit; it is skipped when the allocation's busiest resource alone
        // already reaches that period.
        let ceiling = contiguous.as_ref().map(|c| c.valid.period);
        let dp = madpipe_dp(inst, gpus, &dp_opts, ceiling, &ctx.deadline).and_then(|dp| {
            if let Some(c) = ceiling {
                let (load, busiest) = busiest_resource(inst, &dp.stages)?;
                if load >= c {
                    return Ok((dp, Err((load, busiest))));
                }
            }
            let ilp = least_period_within(inst, &dp.stages, &ilp_opts, &ctx.deadline)?;
            Ok((dp, Ok(ilp)))
        });
        match (dp, contiguous) {
            (Ok((dp, Err((load, busiest)))), c) => {
                // Only checked against a ceiling, which only the contiguous optimum sets.
                let Some(c) = c else {
                    return Err(SolveError::Solver(
                        "madpipe: an allocation was bounded without a contiguous optimum".into(),
                    ));
                };
                let why = format!(
                    "the DP's allocation, whose busiest resource alone ({busiest}) takes {} per \
                     micro-batch (no schedule ILP run)",
                    fmt_ms(load)
                );
                let mut sol = self.contiguous(inst, ctx, &c, &why, Some(&dp), false);
                sol.notes.insert(
                    0,
                    format!(
                        "DP period (dashed line) {} at T^ = {}{}",
                        fmt_ms(dp.period),
                        fmt_ms(dp.t_hat),
                        blocks_note(&dp)
                    ),
                );
                Ok(sol)
            }
            (Ok((dp, Ok(ilp))), Some(c)) if c.valid.period < ilp.period => {
                let why = format!("the DP's allocation (valid period {})", fmt_ms(ilp.period));
                // A schedule ILP cut short might have scheduled the allocation below c.
                let ilp_cut = ilp.stop.is_some();
                let mut sol = self.contiguous(inst, ctx, &c, &why, Some(&dp), ilp_cut);
                sol.notes.insert(0, dp_note(&dp, &ilp));
                Ok(sol)
            }
            (Ok((dp, Ok(ilp))), c) => Ok(self.allocation(inst, ctx, dp, ilp, c.as_ref())),
            (Err(e), Some(c)) if !matches!(e, SolveError::Input(_)) => {
                let why = format!("the DP, which gave no allocation ({e})");
                Ok(self.contiguous(inst, ctx, &c, &why, None, false))
            }
            (Err(e), _) => Err(e),
        }
    }
}

impl Madpipe {
    /// The solution of the DP's allocation and its least-period schedule.
    fn allocation(
        &self,
        inst: &Instance,
        ctx: &Context,
        dp: DpResult,
        ilp: IlpSchedule,
        contiguous: Option<&ContiguousOptimum>,
    ) -> Solution {
        let mut stats = ilp.stats();
        // A heuristic either way; the deadline may have cut the T^ search or the bisection.
        stats.status = Status::Heuristic;
        if dp.timed_out {
            stats.stop = Some(ctx.deadline.stop());
        }
        // The bound and gap of the ILP refer to this allocation only, not to the problem.
        stats.bound = None;
        stats.gap = None;
        dp_counters(&mut stats, &dp);
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::AsyncPeriod, ilp.period)),
            period_ms: Some(ilp.period),
            peak_memory: Some(ilp.memory.clone()),
            max_memory: Some(ilp.max_memory),
            fits: Some(memory_limit::fits(ilp.max_memory, inst.usable_memory())),
            ..Claimed::default()
        };
        let mut sol = solution(self, inst, ilp.plan.clone(), claimed, stats);
        sol.notes.push(dp_note(&dp, &ilp));
        if let Some((lo, hi)) = ilp.period_bracket {
            sol.notes.push(format!(
                "schedule ILP: every period below {} is infeasible for this allocation; {} is \
                 feasible",
                fmt_ms(lo),
                fmt_ms(hi)
            ));
        }
        if dp.timed_out {
            sol.notes
                .push("the time limit cut the T^ search short: best allocation so far".into());
        }
        if dp.extra_round {
            sol.notes.push(
                "no round of the T^ search fitted memory; the allocation comes from an extra \
                 round at the largest useful T^"
                    .into(),
            );
        }
        sol.notes.push(match contiguous {
            Some(c) => format!(
                "kept over the contiguous optimum ({} stages, valid period {})",
                c.ends.len(),
                fmt_ms(c.valid.period)
            ),
            None => "no contiguous partition fits memory".into(),
        });
        sol.notes.extend(ilp.notes.iter().cloned());
        sol
    }

    /// The solution of the contiguous optimum, which beat the DP (`why`); `ilp_cut`: the time
    /// limit stopped the schedule ILP of the DP's allocation.
    fn contiguous(
        &self,
        inst: &Instance,
        ctx: &Context,
        c: &ContiguousOptimum,
        why: &str,
        dp: Option<&DpResult>,
        ilp_cut: bool,
    ) -> Solution {
        let (plan, claimed) = c.plan_and_claims(inst);
        let cut = c.status != Status::Optimal || ilp_cut || dp.is_none_or(|d| d.timed_out);
        let mut stats = Stats::stopped(
            Status::Heuristic,
            (cut && ctx.deadline.passed()).then(|| ctx.deadline.stop()),
        );
        stats.count("oracle calls", c.oracle_calls as f64);
        if let Some(dp) = dp {
            dp_counters(&mut stats, dp);
        }
        let mut sol = solution(self, inst, plan, claimed, stats);
        sol.notes.push(format!(
            "the contiguous optimum ({} stages, 1F1B* groups {:?}, valid period {}) beats {why}",
            c.ends.len(),
            c.valid.groups,
            fmt_ms(c.valid.period)
        ));
        if c.status != Status::Optimal {
            sol.notes.push(format!(
                "the time limit stopped the contiguous bisection: its optimum lies in [{}, {}]",
                fmt_ms(c.bound),
                fmt_ms(c.valid.period)
            ));
        }
        if ilp_cut {
            sol.notes.push(
                "the time limit stopped the schedule ILP of the DP's allocation: a longer run \
                 might schedule it below the contiguous optimum"
                    .into(),
            );
        }
        sol
    }
}

/// The DP's estimate against the valid schedule of its allocation.
fn dp_note(dp: &DpResult, ilp: &IlpSchedule) -> String {
    format!(
        "DP period (dashed line) {} at T^ = {}; valid schedule period (solid line) {}{}",
        fmt_ms(dp.period),
        fmt_ms(dp.t_hat),
        fmt_ms(ilp.period),
        blocks_note(dp)
    )
}

/// How the DP saw a long chain.
fn blocks_note(dp: &DpResult) -> String {
    dp.blocks.map_or(String::new(), |b| {
        format!(
            "; the DP ran on the chain merged into {b} blocks of consecutive layers (--set blocks)"
        )
    })
}

/// The DP's own figures, as counters.
fn dp_counters(stats: &mut Stats, dp: &DpResult) {
    stats.count("dp period ms", dp.period);
    stats.count("dp t_hat ms", dp.t_hat);
    stats.count("dp states", dp.states as f64);
    stats.count("dp rounds", dp.rounds.len() as f64);
    stats.count(
        "special stages",
        dp.detail.iter().filter(|s| s.special).count() as f64,
    );
}
