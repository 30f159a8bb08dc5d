//! Baselines every researcher knows, one GPU per stage, GPU s for stage s:
//!
//! - `uniform`: equal layer counts (Megatron-LM); the first `L mod P` stages get one more layer.
//! - `balanced-time`: exact min-max of stage compute time sum(forward + backward)
//!   (torchgpipe's balance by time).
//! - `balanced-params`: exact min-max of stage parameter bytes (DeepSpeed's "parameters").
//! - `balanced-memory`: exact min-max of stage memory under the evaluator's memory model with
//!   the schedule's in-flight counts (1f1b: min(P - s, m); gpipe: m; async: P - s, PipeDream's
//!   steady-state count).
//! - `ilp-balanced-time`: the min-max stage-time problem as a MILP solved by HiGHS.

use crate::algorithm::{
    solution, Algorithm, Claimed, Family, Objective, Solution, SolveError, SolveOptions, Stats,
    Status, Unsupported,
};
use crate::ilp::{self, IlpStatus};
use crate::minmax::min_max_partition;
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel};
use pipeplan_formulations::cost::weight_versions;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::{Instance, Plan, Schedule};

/// Prefix sums over the chain for O(1) stage costs.
struct Prefix {
    compute: Vec<f64>,
    weights: Vec<f64>,
    saved: Vec<f64>,
    cut: Vec<f64>,
}

impl Prefix {
    fn new(inst: &Instance) -> Prefix {
        let c = inst.chain();
        let sums = |v: &dyn Fn(usize) -> f64| {
            let mut p = vec![0.0; c.len() + 1];
            for i in 0..c.len() {
                p[i + 1] = p[i] + v(i);
            }
            p
        };
        Prefix {
            compute: sums(&|i| c.forward[i] + c.backward[i]),
            weights: sums(&|i| c.weights[i]),
            saved: sums(&|i| c.saved[i]),
            cut: c.cut.clone(),
        }
    }
    fn compute(&self, k: usize, l: usize) -> f64 {
        self.compute[l] - self.compute[k]
    }
    fn weights(&self, k: usize, l: usize) -> f64 {
        self.weights[l] - self.weights[k]
    }
}

fn ends_to_plan(inst: &Instance, ends: &[usize]) -> Plan {
    Plan::contiguous(ends, Schedule::default_for(inst))
}

fn max_stage<F: Fn(usize, usize) -> f64>(ends: &[usize], f: F) -> f64 {
    let mut first = 0;
    let mut worst: f64 = 0.0;
    for &e in ends {
        worst = worst.max(f(first, e + 1));
        first = e + 1;
    }
    worst
}

fn compute_objective(value: f64) -> Objective {
    Objective {
        name: "max stage compute".into(),
        value,
        unit: "ms".into(),
    }
}

fn no_params(algo: &dyn Algorithm, opts: &SolveOptions) -> Result<(), SolveError> {
    opts.check_params(algo.name(), &[])
}

/// Equal layer counts per stage.
pub struct Uniform;

impl Algorithm for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "equal layer counts per stage (Megatron-LM); claims its max stage compute"
    }
    fn exact(&self) -> bool {
        false
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        no_params(self, opts)?;
        let p = opts.stage_count(inst)?;
        let l = inst.num_layers();
        let (q, r) = (l / p, l % p);
        let mut ends = Vec::with_capacity(p);
        let mut last = 0;
        for s in 0..p {
            last += q + usize::from(s < r);
            ends.push(last - 1);
        }
        let pre = Prefix::new(inst);
        let claimed = Claimed {
            objective: Some(compute_objective(max_stage(&ends, |k, l| {
                pre.compute(k, l)
            }))),
            ..Claimed::default()
        };
        Ok(solution(
            self,
            inst,
            ends_to_plan(inst, &ends),
            claimed,
            Stats::new(Status::Heuristic),
        ))
    }
}

/// Exact min-max DP on stage compute time.
pub struct BalancedTime;

impl Algorithm for BalancedTime {
    fn name(&self) -> &'static str {
        "balanced-time"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage compute time, sum(forward + backward) (torchgpipe balance by time)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        no_params(self, opts)?;
        let p = opts.stage_count(inst)?;
        let pre = Prefix::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |_, k, l| pre.compute(k, l));
        let mut stats = Stats::new(Status::Optimal);
        stats.bound = Some(part.value);
        stats.gap = Some(0.0);
        stats
            .counters
            .insert("cost evaluations".into(), part.evaluations as f64);
        let claimed = Claimed {
            objective: Some(compute_objective(part.value)),
            ..Claimed::default()
        };
        Ok(solution(
            self,
            inst,
            ends_to_plan(inst, &part.ends),
            claimed,
            stats,
        ))
    }
}

/// Exact min-max DP on stage parameter bytes.
pub struct BalancedParams;

impl Algorithm for BalancedParams {
    fn name(&self) -> &'static str {
        "balanced-params"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage parameter bytes (DeepSpeed partition_method=parameters)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        no_params(self, opts)?;
        let p = opts.stage_count(inst)?;
        let pre = Prefix::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |_, k, l| pre.weights(k, l));
        let mut stats = Stats::new(Status::Optimal);
        stats.bound = Some(part.value);
        stats.gap = Some(0.0);
        let claimed = Claimed {
            objective: Some(Objective {
                name: "max stage parameters".into(),
                value: part.value,
                unit: "bytes".into(),
            }),
            ..Claimed::default()
        };
        Ok(solution(
            self,
            inst,
            ends_to_plan(inst, &part.ends),
            claimed,
            stats,
        ))
    }
}

/// Exact min-max DP on stage memory (evaluator's model, schedule-dependent in-flight counts).
pub struct BalancedMemory;

/// Memory of stage s (of p) holding layers `k..l` under the reference model with one GPU per
/// stage, no checkpointing: states + in-flight x saved + 2 x cut on each inner side.
fn stage_memory(inst: &Instance, pre: &Prefix, p: usize, s: usize, k: usize, l: usize) -> f64 {
    let kind = inst.training.schedule;
    let m = inst.micro_batches() as usize;
    let in_flight = match kind {
        ScheduleKind::OneFOneB => (p - s).min(m),
        ScheduleKind::Gpipe => m,
        ScheduleKind::Async => p - s,
    } as f64;
    let copies = weight_versions(inst, kind) + 1.0 + inst.training.optimizer_state_factor;
    let mut mem = pre.weights(k, l) * copies + in_flight * (pre.saved[l] - pre.saved[k]);
    if k > 0 {
        mem += 2.0 * pre.cut[k - 1];
    }
    if l < pre.cut.len() {
        mem += 2.0 * pre.cut[l - 1];
    }
    mem
}

impl Algorithm for BalancedMemory {
    fn name(&self) -> &'static str {
        "balanced-memory"
    }
    fn family(&self) -> Family {
        Family::Baseline
    }
    fn description(&self) -> &'static str {
        "exact min-max DP on stage memory (reference model; in-flight 1f1b min(P-s,m), gpipe m, async P-s)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        no_params(self, opts)?;
        let p = opts.stage_count(inst)?;
        let pre = Prefix::new(inst);
        let part = min_max_partition(inst.num_layers(), p, |s, k, l| {
            stage_memory(inst, &pre, p, s, k, l)
        });
        let mut peak = vec![0.0; inst.cluster.gpus as usize];
        let mut first = 0;
        for (s, &e) in part.ends.iter().enumerate() {
            peak[s] = stage_memory(inst, &pre, p, s, first, e + 1);
            first = e + 1;
        }
        let mut stats = Stats::new(Status::Optimal);
        stats.bound = Some(part.value);
        stats.gap = Some(0.0);
        let claimed = Claimed {
            objective: Some(Objective {
                name: "max stage memory".into(),
                value: part.value,
                unit: "bytes".into(),
            }),
            max_memory: Some(part.value),
            fits: Some(part.value <= inst.cluster.memory),
            peak_memory: Some(peak),
            ..Claimed::default()
        };
        let mut sol = solution(self, inst, ends_to_plan(inst, &part.ends), claimed, stats);
        if inst.training.schedule == ScheduleKind::Async {
            sol.notes.push(
                "async in-flight counts use PipeDream's P - s; the evaluator's 1F1B* counts \
                 communications as stages and may keep more"
                    .into(),
            );
        }
        Ok(sol)
    }
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
    fn supports(&self, inst: &Instance) -> Result<(), Unsupported> {
        // L x (P-1) binaries: beyond this HiGHS takes minutes, and balanced-time is exact anyway.
        let p = inst.num_layers().min(inst.cluster.gpus as usize);
        let n = inst.num_layers() * p.saturating_sub(1);
        if n > 20_000 {
            return Err(Unsupported(format!(
                "{n} binary variables (L = {}, P = {p}); use balanced-time, its exact DP twin",
                inst.num_layers()
            )));
        }
        Ok(())
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        no_params(self, opts)?;
        let p = opts.stage_count(inst)?;
        let nl = inst.num_layers();
        let pre = Prefix::new(inst);
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
            opts.time_limit,
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
        stats.bound = Some(out.bound);
        stats.gap = Some(out.gap);
        if let Some(n) = out.nodes {
            stats.counters.insert("ilp nodes".into(), n);
        }
        stats
            .counters
            .insert("binaries".into(), (nl * (p - 1)) as f64);
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
