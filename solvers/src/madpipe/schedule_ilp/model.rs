//! The MILP of one allocation at a fixed period: its operations, resources and memory terms
//! ([`Alloc`]), and one HiGHS solve of it.

use super::{Counts, ZERO_SEP};
use crate::algorithm::SolveError;
use crate::deadline::Deadline;
use crate::ilp::{self, IlpStatus, Tuning};
use good_lp::solvers::highs::HighsProblem;
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel, Variable};
use pipeplan_formulations::cost::stage_costs;
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::plan::{OpKind, Plan, Schedule, Stage};
use pipeplan_formulations::simulate::{plan_operations, OpId, ResourceId};
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance};
use std::collections::BTreeMap;

/// The variables of one MILP ([`Alloc::solve`]).
struct Vars {
    tau: Vec<Variable>,
    h: Vec<Variable>,
    y: Vec<Variable>,
    m: Vec<Variable>,
    z: Variable,
}

/// One operation of the chain.
#[derive(Debug, Clone)]
pub(super) struct Op {
    pub(super) id: OpId,
    pub(super) d: f64,
    pub(super) res: Vec<ResourceId>,
}

/// The combinatorial part of a solution: shifts and pair orderings (`first[k]`: the lower
/// operation of pair k comes first in the period).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Structure {
    pub(super) h: Vec<i64>,
    pub(super) first: Vec<bool>,
}

/// Which MILP to solve.
#[derive(Debug, Clone, Copy)]
pub(super) enum Phase {
    /// Minimize the largest memory.
    Max,
    /// Minimize the sum of memories with every memory at most `cap` (bytes).
    Sum { cap: f64 },
    /// Any pattern with every memory at most `limit` (bytes).
    Fit { limit: f64 },
}

/// An allocation prepared for the ILP: operations in chain order, resources, memory terms.
pub(super) struct Alloc<'a> {
    pub(super) inst: &'a Instance,
    pub(super) plan: Plan,
    pub(super) ops: Vec<Op>,
    /// Operation index of F_s and B_s.
    pub(super) f: Vec<usize>,
    pub(super) b: Vec<usize>,
    /// Pairs (i < j) of operations sharing a resource.
    pub(super) pairs: Vec<(usize, usize)>,
    pub(super) pair_of: BTreeMap<(usize, usize), usize>,
    /// Used GPUs with their stages.
    pub(super) gpus: Vec<(u32, Vec<usize>)>,
    /// Bytes stored per micro-batch by each stage (per GPU of its group).
    pub(super) act: Vec<f64>,
    /// States + buffers + transient of each used GPU (same order as `gpus`).
    pub(super) constant: Vec<f64>,
    /// Busy time of every resource and its operations.
    pub(super) loads: BTreeMap<ResourceId, (f64, Vec<usize>)>,
}

impl<'a> Alloc<'a> {
    pub(super) fn new(inst: &'a Instance, stages: &[Stage]) -> Result<Alloc<'a>, SolveError> {
        inst.validate()?;
        let plan = Plan {
            order: None,
            stages: stages.to_vec(),
            schedule: Schedule::one_f_one_b_star(None),
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

    pub(super) fn n(&self) -> usize {
        self.ops.len()
    }

    /// The largest load of a resource, and that resource described.
    pub(super) fn max_load(&self) -> (f64, String) {
        let mut best = (0.0, String::new());
        for (r, (load, ops)) in &self.loads {
            if *load > best.0 || best.1.is_empty() {
                best = (*load, self.describe(r, ops));
            }
        }
        best
    }

    pub(super) fn describe(&self, r: &ResourceId, ops: &[usize]) -> String {
        let names: Vec<String> = ops.iter().map(|&o| self.ops[o].id.to_string()).collect();
        format!("{r} ({})", names.join(" + "))
    }

    /// Latency of one micro-batch: every operation in sequence.
    pub(super) fn latency(&self) -> f64 {
        self.ops.iter().map(|o| o.d).sum()
    }

    /// Refuses a period that is not a positive time or is below a resource's load.
    pub(super) fn check_period(&self, t: f64) -> Result<(), SolveError> {
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
    pub(super) fn check_floor(&self, limit: f64) -> Result<(), SolveError> {
        for ((g, on), c) in self.gpus.iter().zip(&self.constant) {
            let floor = c + on.iter().map(|&s| self.act[s]).sum::<f64>();
            if !memory_limit::fits(floor, limit) {
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
    pub(super) fn order(&self, a: usize, b: usize) -> (f64, Option<(usize, f64)>) {
        if a == b {
            (1.0, None)
        } else if a < b {
            (0.0, Some((self.pair_of[&(a, b)], 1.0)))
        } else {
            (1.0, Some((self.pair_of[&(b, a)], -1.0)))
        }
    }

    /// Effective duration of operation `o` in its pair with `other` (ms).
    pub(super) fn sep(&self, o: usize, other: usize, t: f64) -> f64 {
        let both_f = self.ops[o].id.op == OpKind::F && self.ops[other].id.op == OpKind::F;
        if both_f {
            self.ops[o].d.max(ZERO_SEP * t)
        } else {
            self.ops[o].d
        }
    }

    /// Bounds of h_o: `A_o = h_o T + t_o` lies in `[P_o, P_o + o T]`.
    pub(super) fn shift_bounds(&self, t: f64) -> Vec<(f64, f64)> {
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
    pub(super) fn solve(
        &self,
        t: f64,
        phase: Phase,
        deadline: &Deadline,
        counts: &mut Counts,
    ) -> Result<(Structure, Milp), SolveError> {
        let n = self.n();
        let (vars, v) = self.variables(t);
        let objective: Expression = match phase {
            Phase::Max => v.z.into(),
            Phase::Sum { .. } => v.m.iter().copied().sum(),
            Phase::Fit { .. } => Expression::from(0.0),
        };
        let model = vars
            .minimise(objective)
            .using(good_lp::solvers::highs::highs);
        let model = self.timing_constraints(model, &v, t);
        let model = self.memory_constraints(model, &v, t, phase);
        if deadline.passed() {
            return Err(deadline.error());
        }
        let what = match phase {
            Phase::Fit { limit } => format!(
                "no periodic pattern of period {t} ms keeps every GPU within {}",
                fmt_bytes(limit)
            ),
            _ => format!("no periodic pattern of period {t} ms (a bug: the loads fit)"),
        };
        counts.solves += 1;
        let out = solve_milp(model, deadline, &what)?;
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

    /// The MILP's variables, created in the order the solution's values are read: the starts
    /// `tau` within the period, the shifts `h`, the pair orderings `y`, each GPU's memory `m`,
    /// and their largest `z`.
    fn variables(&self, t: f64) -> (ProblemVariables, Vars) {
        let mut vars = ProblemVariables::new();
        let tau = (0..self.n())
            .map(|o| vars.add(variable().min(0.0).max(if o == 0 { 0.0 } else { 1.0 })))
            .collect();
        let h = self
            .shift_bounds(t)
            .into_iter()
            .map(|(lo, hi)| vars.add(variable().integer().min(lo).max(hi)))
            .collect();
        let y = self
            .pairs
            .iter()
            .map(|_| vars.add(variable().binary()))
            .collect();
        let m = self
            .gpus
            .iter()
            .map(|_| vars.add(variable().min(0.0)))
            .collect();
        let z = vars.add(variable().min(0.0));
        (vars, Vars { tau, h, y, m, z })
    }

    /// Whether operation `a` comes before `b` in the period, as an expression of the pair
    /// orderings.
    fn ord(&self, v: &Vars, a: usize, b: usize) -> Expression {
        let (c, p) = self.order(a, b);
        match p {
            None => Expression::from(c),
            Some((k, sign)) => c + sign * v.y[k],
        }
    }

    /// Precedence along the chain (at most one period of gap) and no overlap on the circle.
    fn timing_constraints(&self, mut model: HighsProblem, v: &Vars, t: f64) -> HighsProblem {
        let (tau, h, y) = (&v.tau, &v.h, &v.y);
        for o in 0..self.n().saturating_sub(1) {
            let d = self.ops[o].d / t;
            let diff = h[o + 1] + tau[o + 1] - h[o] - tau[o];
            model = model.with(constraint!(diff.clone() >= d));
            model = model.with(constraint!(diff <= d + 1.0));
        }
        for (k, &(i, j)) in self.pairs.iter().enumerate() {
            let ei = self.sep(i, j, t) / t;
            let ej = self.sep(j, i, t) / t;
            model = model.with(constraint!(tau[i] + ei <= tau[j] + 1.0 - y[k]));
            model = model.with(constraint!(tau[j] + ej <= tau[i] + y[k]));
        }
        model
    }

    /// Each GPU's memory at every forward start (within the phase's cap), their largest, and a
    /// micro-batch alive at least as long as the chain from F_s to B_s.
    fn memory_constraints(
        &self,
        mut model: HighsProblem,
        v: &Vars,
        t: f64,
        phase: Phase,
    ) -> HighsProblem {
        let scale = self.memory_unit();
        let h = &v.h;
        for (gi, (_, on)) in self.gpus.iter().enumerate() {
            for &probe in on {
                let mut expr = Expression::from(self.constant[gi] / scale);
                for &s in on {
                    let alive = h[self.b[s]] - h[self.f[s]] + self.ord(v, self.f[s], self.f[probe])
                        - self.ord(v, self.b[s], self.f[probe]);
                    expr += (self.act[s] / scale) * alive;
                }
                model = model.with(constraint!(v.m[gi] >= expr));
            }
            model = model.with(constraint!(v.z >= v.m[gi]));
            match phase {
                Phase::Sum { cap } | Phase::Fit { limit: cap } => {
                    model = model.with(constraint!(v.m[gi] <= cap / scale));
                }
                Phase::Max => {}
            }
        }
        for s in 0..self.f.len() {
            let chain: f64 = self.ops[self.f[s]..=self.b[s]].iter().map(|o| o.d).sum();
            let need = (chain / t - 1e-9).ceil().max(1.0);
            let alive = h[self.b[s]] - h[self.f[s]] + 1.0 - self.ord(v, self.b[s], self.f[s]);
            model = model.with(constraint!(alive >= need));
        }
        model
    }

    /// Unit of memory in the MILP: the largest per-micro-batch activation (so that memory steps
    /// are well above HiGHS's absolute gap of 1e-6).
    pub(super) fn memory_unit(&self) -> f64 {
        self.act.iter().copied().fold(0.0, f64::max).max(1.0)
    }
}

/// What HiGHS returned.
#[derive(Debug, Clone)]
pub(super) struct Milp {
    pub(super) status: IlpStatus,
    /// Proven bound on the objective.
    pub(super) bound: f64,
    /// Values of the variables, in creation order.
    pub(super) values: Vec<f64>,
    /// Branch-and-bound nodes, when HiGHS reports them.
    pub(super) nodes: Option<f64>,
    /// Why HiGHS stopped before its proof.
    pub(super) stop: Option<crate::algorithm::Stop>,
}

/// Solves a model with [`ilp::solve_tuned`] and [`Tuning::Strict`] (see the module docs,
/// "HiGHS settings").
pub(super) fn solve_milp(
    problem: good_lp::solvers::highs::HighsProblem,
    deadline: &Deadline,
    what_if_infeasible: &str,
) -> Result<Milp, SolveError> {
    let out = ilp::solve_tuned(problem, deadline, what_if_infeasible, Tuning::Strict)?;
    Ok(Milp {
        status: out.status,
        bound: out.bound,
        values: out.values,
        nodes: out.nodes,
        stop: out.stop,
    })
}
