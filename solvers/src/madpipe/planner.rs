//! The `madpipe` algorithm: MadPipe-DP with Algorithm 1's T^ search ([`super::dp`]), then the
//! periodic schedule of its allocation by the schedule ILP ([`super::schedule_ilp`]).
//!
//! The claim is the valid schedule's period (the paper's solid line); the DP's own estimate (the
//! dashed line) is kept in the notes and in the counters `dp period ms` and `dp t_hat ms`.

use super::dp::{madpipe_dp, DpOptions};
use super::schedule_ilp::{least_period_within, IlpOptions};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Status,
};
use crate::settings::{Kind, Param};
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
        let dp = madpipe_dp(inst, gpus, &dp_opts, &ctx.deadline)?;
        // The ILP gets what the DP left of the time limit.
        let ilp = least_period_within(inst, &dp.stages, &ilp_opts, &ctx.deadline)?;

        let mut stats = ilp.stats();
        // A heuristic either way; the deadline may have cut the T^ search or the bisection.
        stats.status = Status::Heuristic;
        if dp.timed_out {
            stats.stop = Some(ctx.deadline.stop());
        }
        // The bound and gap of the ILP refer to this allocation only, not to the problem.
        stats.bound = None;
        stats.gap = None;
        let c = &mut stats.counters;
        c.insert("dp period ms".into(), dp.period);
        c.insert("dp t_hat ms".into(), dp.t_hat);
        c.insert("dp states".into(), dp.states as f64);
        c.insert("dp rounds".into(), dp.rounds.len() as f64);
        c.insert(
            "special stages".into(),
            dp.detail.iter().filter(|s| s.special).count() as f64,
        );
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::AsyncPeriod, ilp.period)),
            period_ms: Some(ilp.period),
            peak_memory: Some(ilp.memory.clone()),
            max_memory: Some(ilp.max_memory),
            fits: Some(ilp.max_memory <= inst.cluster.memory),
            ..Claimed::default()
        };
        let mut sol = solution(self, inst, ilp.plan.clone(), claimed, stats);
        sol.notes.push(format!(
            "DP period (dashed line) {} at T^ = {}; valid schedule period (solid line) {}",
            fmt_ms(dp.period),
            fmt_ms(dp.t_hat),
            fmt_ms(ilp.period)
        ));
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
        sol.notes.extend(ilp.notes.iter().cloned());
        Ok(sol)
    }
}
