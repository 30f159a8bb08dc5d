//! The periodic-schedule simulator: checks an explicit periodic pattern and measures memory.
//!
//! A pattern of period T repeats forever; in period k an operation with shift h processes
//! micro-batch k - h. Every rule is invariant under a shift by one period, so the simulator checks
//! them exactly on one micro-batch and one period instead of a finite unrolled window (which
//! could miss a late conflict): every dependency of Figure 1 of the MadPipe paper (F_s before
//! F_s+1, F_last before B_last, B_s+1 before B_s, sends in between, same micro-batch), no
//! resource (GPU or link) running two operations at once, and the exact memory of every GPU over
//! the period. [`unroll`] lists concrete operations for people and for cross-checks.

use crate::cost::{cut_costs, stage_costs, CutCost, StageCost};
use crate::instance::Instance;
use crate::plan::{OpKind, Pattern, PatternOp, Plan};
use std::collections::BTreeMap;
use std::fmt;

/// Relative tolerance on time comparisons.
const TOL: f64 = 1e-9;

/// A resource an operation occupies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceId {
    /// A GPU.
    Gpu(u32),
    /// The link between two GPUs (smaller id first).
    Link(u32, u32),
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceId::Gpu(g) => write!(f, "GPU {g}"),
            ResourceId::Link(a, b) => write!(f, "link {a}-{b}"),
        }
    }
}

/// Names an operation: `F[2]`, `send_b[0]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    /// Kind.
    pub op: OpKind,
    /// Stage (for sends: the stage before the cut).
    pub stage: usize,
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match self.op {
            OpKind::F => "F",
            OpKind::B => "B",
            OpKind::SendF => "send_f",
            OpKind::SendB => "send_b",
        };
        write!(f, "{k}[{}]", self.stage)
    }
}

/// Why a pattern is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleViolation {
    /// The period is not a positive, finite time.
    #[error("the period {0} ms is not a positive, finite time")]
    BadPeriod(f64),
    /// An operation the plan needs is absent.
    #[error("the pattern has no {0}")]
    Missing(OpId),
    /// An operation appears twice.
    #[error("{0} appears twice in the pattern")]
    Duplicate(OpId),
    /// An operation the plan does not have (unknown stage, or a send between stages that share
    /// their GPUs).
    #[error("{0} is not an operation of this plan ({1})")]
    Unexpected(OpId, String),
    /// A start outside `[0, T)`.
    #[error("{op} starts at {start} ms, outside [0, {period}) ms")]
    StartOutOfRange {
        /// The operation.
        op: OpId,
        /// Its start.
        start: f64,
        /// The period.
        period: f64,
    },
    /// A dependency of one micro-batch is violated.
    #[error(
        "dependency {before} -> {after} violated: on the same micro-batch, {after} starts \
         {late:.6} ms before {before} ends"
    )]
    Dependency {
        /// The operation that must finish first.
        before: OpId,
        /// The operation that must wait.
        after: OpId,
        /// By how much it starts too early (ms).
        late: f64,
    },
    /// Two operations overlap on a resource.
    #[error("{a} and {b} overlap on {resource} (modulo the period {period} ms)")]
    Overlap {
        /// The resource.
        resource: ResourceId,
        /// First operation.
        a: OpId,
        /// Second operation.
        b: OpId,
        /// The period.
        period: f64,
    },
    /// The operations of one resource need more than a period.
    #[error("{resource} is busy {busy:.6} ms per period, more than the period {period} ms")]
    Overloaded {
        /// The resource.
        resource: ResourceId,
        /// Its total busy time.
        busy: f64,
        /// The period.
        period: f64,
    },
}

/// What the simulator measured on a valid pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct SimReport {
    /// The period (ms).
    pub period: f64,
    /// Peak bytes of stored activations per GPU (index = GPU id), over the period.
    pub peak_activations: Vec<f64>,
    /// Most micro-batches any stage keeps in flight at once.
    pub in_flight: Vec<u32>,
    /// Busy time per period of each resource (ms).
    pub busy: BTreeMap<ResourceId, f64>,
}

/// A timed operation of a pattern, with its resources and duration.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedOp {
    /// Which operation.
    pub id: OpId,
    /// Start in the period.
    pub start: f64,
    /// Index shift.
    pub shift: i64,
    /// Duration from the cost model.
    pub duration: f64,
    /// Resources it occupies.
    pub resources: Vec<ResourceId>,
}

impl TimedOp {
    /// When it runs micro-batch 0, at period `t`: its start in period `shift`.
    pub fn absolute_start(&self, t: f64) -> f64 {
        self.shift as f64 * t + self.start
    }
}

/// Durations and resources of every operation a plan needs (async, under the reference model):
/// F and B of each stage (the backward includes the replicas' gradient synchronisation, done once
/// per micro-batch in an asynchronous pipeline) and the two sends of each cut that crosses
/// device groups.
pub fn plan_operations(inst: &Instance, plan: &Plan) -> BTreeMap<OpId, (f64, Vec<ResourceId>)> {
    let chain = inst.chain();
    operations_of(
        plan,
        &stage_costs(inst, &chain, plan),
        &cut_costs(inst, &chain, plan),
    )
}

/// [`plan_operations`] from the plan's stage and cut costs.
fn operations_of(
    plan: &Plan,
    costs: &[StageCost],
    cuts: &[CutCost],
) -> BTreeMap<OpId, (f64, Vec<ResourceId>)> {
    let mut ops = BTreeMap::new();
    for (s, c) in costs.iter().enumerate() {
        let gpus: Vec<ResourceId> = plan.stages[s]
            .gpus
            .iter()
            .map(|&g| ResourceId::Gpu(g))
            .collect();
        ops.insert(
            OpId {
                op: OpKind::F,
                stage: s,
            },
            (c.forward, gpus.clone()),
        );
        ops.insert(
            OpId {
                op: OpKind::B,
                stage: s,
            },
            (c.backward + c.grad_sync, gpus),
        );
    }
    for (s, c) in cuts.iter().enumerate() {
        if c.crosses {
            let link = ResourceId::Link(c.link.0.min(c.link.1), c.link.0.max(c.link.1));
            for op in [OpKind::SendF, OpKind::SendB] {
                ops.insert(OpId { op, stage: s }, (c.transfer, vec![link]));
            }
        }
    }
    ops
}

/// Checks `pattern` for `plan` on `inst` and measures memory; see the module docs.
pub fn simulate(
    inst: &Instance,
    plan: &Plan,
    pattern: &Pattern,
) -> Result<SimReport, ScheduleViolation> {
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, plan);
    let cuts = cut_costs(inst, &chain, plan);
    simulate_costed(inst, plan, pattern, &costs, &cuts)
}

/// [`simulate`] with the plan's stage and cut costs already computed (the evaluator has them).
pub fn simulate_costed(
    inst: &Instance,
    plan: &Plan,
    pattern: &Pattern,
    costs: &[StageCost],
    cuts: &[CutCost],
) -> Result<SimReport, ScheduleViolation> {
    let needed = operations_of(plan, costs, cuts);
    let t = pattern.period;
    if !(t.is_finite() && t > 0.0) {
        return Err(ScheduleViolation::BadPeriod(t));
    }
    let tol = TOL * t.max(1.0);
    let timed = pattern_ops(plan, pattern, &needed, tol)?;
    check_dependencies(&timed, plan.stages.len(), t, tol)?;
    let busy = check_resources(&timed, t, tol)?;
    let (in_flight, peak_activations) = activations(inst, plan, costs, &timed, t, tol);
    Ok(SimReport {
        period: t,
        peak_activations,
        in_flight,
        busy,
    })
}

/// The pattern's operations with their durations and resources: each operation the plan needs
/// exactly once, started within the period.
fn pattern_ops(
    plan: &Plan,
    pattern: &Pattern,
    needed: &BTreeMap<OpId, (f64, Vec<ResourceId>)>,
    tol: f64,
) -> Result<BTreeMap<OpId, TimedOp>, ScheduleViolation> {
    let t = pattern.period;
    let mut timed: BTreeMap<OpId, TimedOp> = BTreeMap::new();
    for PatternOp {
        op,
        stage,
        start,
        shift,
    } in &pattern.ops
    {
        let id = OpId {
            op: *op,
            stage: *stage,
        };
        let Some((duration, resources)) = needed.get(&id) else {
            let why = if *stage >= plan.stages.len() {
                format!("the plan has {} stages", plan.stages.len())
            } else {
                "its two stages share their GPUs, so nothing is sent".to_string()
            };
            return Err(ScheduleViolation::Unexpected(id, why));
        };
        if !(*start >= -tol && *start < t) {
            return Err(ScheduleViolation::StartOutOfRange {
                op: id,
                start: *start,
                period: t,
            });
        }
        let prev = timed.insert(
            id,
            TimedOp {
                id,
                start: start.max(0.0),
                shift: *shift,
                duration: *duration,
                resources: resources.clone(),
            },
        );
        if prev.is_some() {
            return Err(ScheduleViolation::Duplicate(id));
        }
    }
    if let Some(id) = needed.keys().find(|id| !timed.contains_key(id)) {
        return Err(ScheduleViolation::Missing(*id));
    }
    Ok(timed)
}

/// Dependencies, on micro-batch 0 (an operation with shift h runs it in period h): forwards down
/// the pipeline, backwards up, each through its send when the stages' GPUs differ.
fn check_dependencies(
    timed: &BTreeMap<OpId, TimedOp>,
    n: usize,
    t: f64,
    tol: f64,
) -> Result<(), ScheduleViolation> {
    let id = |op, stage| OpId { op, stage };
    let mut edges: Vec<(OpId, OpId)> = Vec::new();
    for s in 0..n.saturating_sub(1) {
        if timed.contains_key(&id(OpKind::SendF, s)) {
            edges.push((id(OpKind::F, s), id(OpKind::SendF, s)));
            edges.push((id(OpKind::SendF, s), id(OpKind::F, s + 1)));
            edges.push((id(OpKind::B, s + 1), id(OpKind::SendB, s)));
            edges.push((id(OpKind::SendB, s), id(OpKind::B, s)));
        } else {
            edges.push((id(OpKind::F, s), id(OpKind::F, s + 1)));
            edges.push((id(OpKind::B, s + 1), id(OpKind::B, s)));
        }
    }
    edges.push((id(OpKind::F, n - 1), id(OpKind::B, n - 1)));
    for (a, b) in edges {
        let (oa, ob) = (&timed[&a], &timed[&b]);
        let late = oa.absolute_start(t) + oa.duration - ob.absolute_start(t);
        if late > tol {
            return Err(ScheduleViolation::Dependency {
                before: a,
                after: b,
                late,
            });
        }
    }
    Ok(())
}

/// Each resource's busy time within the period, and no two of its operations overlapping on the
/// circle of length `t`.
fn check_resources(
    timed: &BTreeMap<OpId, TimedOp>,
    t: f64,
    tol: f64,
) -> Result<BTreeMap<ResourceId, f64>, ScheduleViolation> {
    let mut by_resource: BTreeMap<ResourceId, Vec<&TimedOp>> = BTreeMap::new();
    for o in timed.values() {
        for r in &o.resources {
            by_resource.entry(*r).or_default().push(o);
        }
    }
    let mut busy = BTreeMap::new();
    for (r, ops) in &by_resource {
        let total: f64 = ops.iter().map(|o| o.duration).sum();
        if total > t + tol {
            return Err(ScheduleViolation::Overloaded {
                resource: *r,
                busy: total,
                period: t,
            });
        }
        busy.insert(*r, total);
        for (i, a) in ops.iter().enumerate() {
            for b in &ops[i + 1..] {
                let ab = (b.start - a.start).rem_euclid(t);
                let ba = (a.start - b.start).rem_euclid(t);
                // [a, a + da) and [b, b + db) meet on the circle iff one starts inside the other
                // and they share more than `tol`: an operation of zero duration occupies nothing
                // (e.g. the empty forward of a stage whose backward starts at the same instant).
                let meet = |offset: f64, d_first: f64, d_second: f64| {
                    offset < d_first && (d_first - offset).min(d_second) > tol
                };
                if meet(ab, a.duration, b.duration) || meet(ba, b.duration, a.duration) {
                    return Err(ScheduleViolation::Overlap {
                        resource: *r,
                        a: a.id,
                        b: b.id,
                        period: t,
                    });
                }
            }
        }
    }
    Ok(busy)
}

/// Micro-batches in flight per stage and peak activation bytes per GPU: stage s keeps a
/// micro-batch from the start of its F to the end of its B.
fn activations(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    timed: &BTreeMap<OpId, TimedOp>,
    t: f64,
    tol: f64,
) -> (Vec<u32>, Vec<f64>) {
    let n = plan.stages.len();
    let id = |op, stage| OpId { op, stage };
    let mut lifetimes = Vec::with_capacity(n);
    for s in 0..n {
        let f = &timed[&id(OpKind::F, s)];
        let b = &timed[&id(OpKind::B, s)];
        lifetimes.push((
            f.start,
            b.absolute_start(t) + b.duration - f.absolute_start(t),
        ));
    }
    let alive = |s: usize, tau: f64| -> u32 {
        let (start, life) = lifetimes[s];
        let mut x = (tau - start).rem_euclid(t);
        if x > t - tol {
            x = 0.0;
        }
        if life > x + tol {
            ((life - x) / t - TOL).ceil().max(0.0) as u32
        } else {
            0
        }
    };
    let in_flight: Vec<u32> = (0..n).map(|s| alive(s, lifetimes[s].0)).collect();
    let mut peak = vec![0.0; inst.cluster.gpus as usize];
    for g in plan.gpus() {
        let stages: Vec<usize> = (0..n)
            .filter(|&s| plan.stages[s].gpus.contains(&g))
            .collect();
        for &probe in &stages {
            let tau = lifetimes[probe].0;
            let bytes: f64 = stages
                .iter()
                .map(|&s| alive(s, tau) as f64 * costs[s].act_per_mb)
                .sum();
            if bytes > peak[g as usize] {
                peak[g as usize] = bytes;
            }
        }
    }
    (in_flight, peak)
}

/// The operations of `pattern` with their durations and resources (from the cost model), in
/// start order; unknown operations are skipped.
pub fn timed_ops(inst: &Instance, plan: &Plan, pattern: &Pattern) -> Vec<TimedOp> {
    let needed = plan_operations(inst, plan);
    let mut v: Vec<TimedOp> = pattern
        .ops
        .iter()
        .filter_map(|o| {
            let id = OpId {
                op: o.op,
                stage: o.stage,
            };
            needed.get(&id).map(|(d, r)| TimedOp {
                id,
                start: o.start,
                shift: o.shift,
                duration: *d,
                resources: r.clone(),
            })
        })
        .collect();
    v.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.id.cmp(&b.id)));
    v
}

/// A concrete operation of the unrolled schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Occurrence {
    /// Which operation.
    pub id: OpId,
    /// Micro-batch index.
    pub batch: i64,
    /// Absolute start (ms).
    pub start: f64,
    /// Absolute end (ms).
    pub end: f64,
}

/// Unrolls `periods` periods of a pattern into concrete operations (sorted by start), for
/// display and for brute-force cross-checks of [`simulate`].
pub fn unroll(ops: &[TimedOp], period: f64, periods: usize) -> Vec<Occurrence> {
    let mut v = Vec::new();
    for k in 0..periods as i64 {
        for o in ops {
            let start = k as f64 * period + o.start;
            v.push(Occurrence {
                id: o.id,
                batch: k - o.shift,
                start,
                end: start + o.duration,
            });
        }
    }
    v.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.id.cmp(&b.id)));
    v
}
