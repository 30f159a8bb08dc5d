//! `ilp-balanced-time`: the min-max stage-time problem as a MILP, the DP's twin.

use super::{compute_objective, ends_to_plan};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Solution, SolveError, Stats, Status, Unsupported,
};
use crate::ilp::{self, IlpStatus};
use crate::settings::{Kind, Param, Settings};
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel};
use pipeplan_formulations::baselines::{max_stage, StageSums};
use pipeplan_formulations::Instance;

/// Default of `max_binaries`: the largest model the MILP accepts. Measured on 2 shared cores
/// (`docs/limits.md`): up to 4,096 binaries HiGHS proves the optimum within 21 s; 7,680 to
/// 8,064 take 30 to 62 s, 15,872 find no plan in a minute.
pub const DEFAULT_MAX_BINARIES: u64 = 4_096;

/// `max_binaries`: the size limit of the MILP.
const MAX_BINARIES: Param = Param::new(
    "max_binaries",
    Kind::Count { min: 1 },
    "4096",
    "largest model accepted, in binary variables L x (P - 1) (HiGHS's time grows fast with it)",
);

/// Binary variables of the model: one per layer and stage boundary.
fn binaries(layers: usize, stages: usize) -> u64 {
    (layers as u64).saturating_mul(stages.saturating_sub(1) as u64)
}

/// The min-max stage-time problem as a MILP (HiGHS).
///
/// Binary `y[l][s]` = layer l lies in a stage <= s (s < P - 1). Prefixes: `y[l][s] >= y[l+1][s]`
/// and `y[l][s] <= y[l][s+1]`; stage s holds `x[l][s] = y[l][s] - y[l][s-1]`, at least one layer,
/// and its load sum_l u_l `x[l][s]` <= z; minimize z.
pub struct IlpBalancedTime;

impl Algorithm for IlpBalancedTime {
    fn name(&self) -> &'static str {
        "ilp-balanced-time"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "min-max stage compute time as a MILP solved by HiGHS (must agree with balanced-time)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn params(&self) -> Vec<Param> {
        vec![MAX_BINARIES]
    }
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        self.supports_with(inst, &self.default_settings())
    }
    fn supports_with(&self, inst: &Instance, settings: &Settings) -> Result<(), Unsupported> {
        let limit = settings
            .count("max_binaries")
            .unwrap_or(DEFAULT_MAX_BINARIES);
        let p = inst.num_layers().min(inst.cluster.gpus as usize);
        let n = binaries(inst.num_layers(), p);
        if n > limit {
            return Err(Unsupported(format!(
                "L = {} layers x (P - 1) = {} stage boundaries is {n} binary variables, above \
                 the limit of {limit} (beyond it HiGHS may not finish within a minute; --set \
                 max_binaries={n} lifts it); balanced-time, its exact DP twin, solves it in \
                 milliseconds",
                inst.num_layers(),
                p.saturating_sub(1),
            )));
        }
        Ok(())
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let p = ctx.stage_count(inst)?;
        let nl = inst.num_layers();
        let pre = StageSums::new(inst);
        let mut vars = ProblemVariables::new();
        let z = vars.add(variable().min(0.0));
        // y[l][s] for s in 0..p-1; stage p-1 is "everything", written as the constant 1.
        let y: Vec<Vec<_>> = (0..nl)
            .map(|_| {
                (0..p.saturating_sub(1))
                    .map(|_| vars.add(variable().binary()))
                    .collect()
            })
            .collect();
        let yv = |l: usize, s: isize| -> Expression {
            if s < 0 {
                Expression::from(0.0)
            } else if s as usize >= p - 1 {
                Expression::from(1.0)
            } else {
                Expression::from(y[l][s as usize])
            }
        };
        let mut model = vars.minimise(z).using(good_lp::solvers::highs::highs);
        for l in 0..nl {
            for s in 0..p.saturating_sub(1) {
                if l + 1 < nl {
                    model = model.with(constraint!(y[l][s] >= y[l + 1][s]));
                }
                if s + 2 < p {
                    model = model.with(constraint!(y[l][s] <= y[l][s + 1]));
                }
            }
        }
        for s in 0..p as isize {
            let mut count = Expression::from(0.0);
            let mut load = Expression::from(0.0);
            for l in 0..nl {
                let x = yv(l, s) - yv(l, s - 1);
                count += x.clone();
                load += x * pre.compute(l, l + 1);
            }
            model = model.with(constraint!(count >= 1.0));
            model = model.with(constraint!(load <= z));
        }
        let out = ilp::solve(
            model,
            &ctx.deadline,
            "no partition into non-empty stages (more stages than layers)",
        )?;
        // Read the stages back from the prefix indicators (index 0 is z).
        let mut ends = Vec::with_capacity(p);
        for s in 0..p - 1 {
            let inside = (0..nl)
                .filter(|&l| out.values[1 + l * (p - 1) + s] > 0.5)
                .count();
            ends.push(inside - 1);
        }
        ends.push(nl - 1);
        let value = max_stage(&ends, |k, l| pre.compute(k, l));
        let mut stats = Stats::new(match out.status {
            IlpStatus::Optimal => Status::Optimal,
            IlpStatus::Feasible => Status::Feasible,
        });
        stats.stop = out.stop;
        stats.bound = Some(out.bound);
        stats.gap = Some(out.gap);
        if let Some(n) = out.nodes {
            stats.counters.insert("ilp nodes".into(), n);
        }
        stats
            .counters
            .insert("binaries".into(), binaries(nl, p) as f64);
        let claimed = Claimed {
            objective: Some(compute_objective(value)),
            ..Claimed::default()
        };
        Ok(solution(
            self,
            inst,
            ends_to_plan(inst, &ends),
            claimed,
            stats,
        ))
    }
}
