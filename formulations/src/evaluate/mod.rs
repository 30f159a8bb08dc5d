//! The neutral evaluator: judges any plan under one documented reference model (docs/evaluator.md,
//! `docs/evaluator.md`), whatever algorithm produced it.
//!
//! - async: the explicit pattern if the plan has one, else the 1F1B* pattern of the contiguous
//!   partition at the plan's period (default: the least period the loads allow). Either way the
//!   pattern runs through the [simulator](crate::simulate), which measures the activations.
//! - 1f1b: iteration = (m-1) x max_r C_r + sum_r C_r + the slowest gradient all-reduce, with
//!   stage s (0-based, of P) keeping min(P - s, m) micro-batches. Neighbouring stages on the same
//!   device group form one pipeline position (one resource, one s): a pipeline stage whose
//!   layers use different strategies on the same GPUs.
//! - gpipe: iteration = (m-1) x max F + sum F + (m-1) x max B + sum B + all-reduce, m in flight.
//!
//! Communications between stages count as resources of the pipeline, as in MadPipe.

use crate::cost::{cut_costs, measured_degree, splits_weights, stage_costs, CutCost, StageCost};
use crate::error::InputError;
use crate::instance::{Chain, Instance, ScheduleKind};
use crate::memory_limit;
use crate::one_f_one_b_star::{one_f_one_b_star, Resource};
use crate::plan::{OpKind, Pattern, PatternOp, Plan, Schedule};
use crate::units::fmt_bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the evaluator says of a plan. Every figure is the evaluator's own, never an algorithm's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evaluation {
    /// Schedule family evaluated.
    pub schedule: ScheduleKind,
    /// Every GPU within memory and the schedule valid.
    pub fits: bool,
    /// Memory per GPU of the cluster (bytes).
    pub memory_limit: f64,
    /// Peak memory of every GPU of the cluster, index = GPU id (0 for unused GPUs).
    pub peak_memory: Vec<f64>,
    /// Largest entry of `peak_memory`.
    pub max_memory: f64,
    /// GPU with the largest peak.
    pub max_memory_gpu: u32,
    /// Period of an asynchronous pipeline (ms per micro-batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// Iteration time of a synchronous pipeline (ms per batch of m micro-batches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// Micro-batches per iteration (synchronous schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro_batches: Option<u32>,
    /// Gradient synchronisation of a synchronous iteration (ms, included in `iteration_ms`): the
    /// slowest pipeline position's data-parallel all-reduces after its last backward.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub grad_sync_ms: Option<f64>,
    /// Training throughput (samples/s).
    pub throughput: f64,
    /// Fraction of GPU time idle: 1 - busy / (GPUs used x period or iteration).
    pub bubble: f64,
    /// Micro-batches each stage keeps in flight at its peak.
    pub in_flight: Vec<u32>,
    /// Forward + backward time of each stage per micro-batch (ms, with TP and recompute).
    pub stage_time: Vec<f64>,
    /// GPUs the plan uses.
    pub gpus_used: u32,
    /// The simulator's verdict on the periodic pattern (async plans, explicit or 1F1B*).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_schedule: Option<bool>,
    /// Why the schedule is invalid, or why a GPU does not fit.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

pub mod accuracy;
mod asynchronous;
pub mod breakdown;
pub mod explain;
mod synchronous;

/// What the schedule family's model says of a plan's time and activations.
struct Timing {
    /// Micro-batches in flight per stage at its peak.
    in_flight: Vec<u32>,
    /// Peak activation bytes per GPU of the cluster.
    activations: Vec<f64>,
    /// Period (async).
    period: Option<f64>,
    /// Iteration (synchronous).
    iteration: Option<f64>,
    /// Micro-batches per iteration (synchronous).
    micro_batches: Option<u32>,
    /// Gradient synchronisation included in the iteration (synchronous).
    grad_sync: Option<f64>,
    /// The simulator's verdict (async).
    valid: Option<bool>,
    /// GPU-ms of work per period or iteration.
    busy: f64,
    /// The period or the iteration (ms).
    span: f64,
    /// Why the schedule is invalid, if it is.
    notes: Vec<String>,
}

/// The instance and plan `plan`'s evaluation judged: the plan in the chain's order (see
/// [`crate::layer_order::resolve`]) on the instance at the plan's micro-batch. For the figures
/// that go with an [`Evaluation`], so `plan` already passed [`evaluate`] (were its order refused,
/// the plan is taken as it is).
pub(crate) fn judged(inst: &Instance, plan: &Plan) -> (Instance, Plan) {
    let (inst, plan) = match crate::layer_order::resolve(inst, plan) {
        Ok((i, p)) => (i.into_owned(), p.into_owned()),
        Err(_) => (inst.clone(), plan.clone()),
    };
    match plan.schedule.micro_batch() {
        Some(b) if b != inst.micro_batch() => (inst.with_micro_batch(b), plan),
        _ => (inst, plan),
    }
}

/// Evaluates `plan` on `inst`.
///
/// Fails, naming the field, on input that cannot be judged: an instance that breaks a rule of the
/// format (it is validated again here, so an instance built in code cannot smuggle in a zero
/// bandwidth), a malformed plan (it does not cover the chain, names missing GPUs, or needs an
/// explicit pattern it lacks), a plan whose every operation takes 0 ms (under an implied period,
/// whose least value would be 0 ms, and under a synchronous schedule, whose iteration would take
/// 0 ms: the throughput would be infinite), or figures that overflow `f64`. A plan that is
/// well-formed but does not fit or has an invalid pattern is evaluated with `fits = false` and the
/// reason in `notes`. Every number of a returned [`Evaluation`] is finite.
pub fn evaluate(inst: &Instance, plan: &Plan) -> Result<Evaluation, InputError> {
    inst.validate()?;
    if plan.order.is_some() {
        // Resolving checks the order; the plan is checked in it.
        let (inst, plan) = crate::layer_order::resolve(inst, plan)?;
        return evaluate(&inst, &plan);
    }
    plan.check(inst)?;
    if let Some(b) = plan.schedule.micro_batch() {
        if b != inst.micro_batch() {
            // A plan that chose its own micro-batch size is judged at that size.
            let mut ev = evaluate(&inst.with_micro_batch(b), plan)?;
            ev.notes.insert(
                0,
                format!(
                    "evaluated at the plan's micro-batch of {b} samples (the instance trains {})",
                    inst.micro_batch()
                ),
            );
            return Ok(ev);
        }
    }
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, plan);
    let cuts = cut_costs(inst, &chain, plan);
    let kind = plan.schedule.kind();
    let used = plan.gpus();
    let gpus_used = used.len() as u32;
    let mut notes: Vec<String> = unmeasured_degrees(&chain, plan).into_iter().collect();
    let stage_time: Vec<f64> = costs.iter().map(|c| c.forward + c.backward).collect();
    let (resources, resource_of_stage) = pipeline_resources(&costs, &cuts, kind);
    if let Some(r) = resources.iter().position(|r| !r.load().is_finite()) {
        let what = format!("the load of {}", describe_resource(r, &resource_of_stage));
        return Err(overflow(&what, resources[r].load()));
    }
    let micro = inst.micro_batch() as f64;

    let timing = timing(
        inst,
        plan,
        (&costs, &cuts),
        (&resources, &resource_of_stage),
    )?;
    let Timing {
        in_flight,
        activations,
        period,
        iteration,
        micro_batches: m,
        grad_sync,
        valid,
        busy: busy_total,
        span,
        notes: mut timing_notes,
    } = timing;
    notes.append(&mut timing_notes);

    let peak = peak_memory(inst, plan, &costs, activations, &used);
    let (max_gpu, max_memory) =
        peak.iter().enumerate().fold(
            (0, 0.0),
            |acc, (g, &v)| if v > acc.1 { (g, v) } else { acc },
        );
    let limit = inst.cluster.memory;
    let within = within_memory(&peak, limit, &mut notes);
    let fits = valid != Some(false) && within;
    // `span` (the period or the iteration) is positive here: a given period is checked by
    // `Plan::check`, an implied one by `least_period`, an iteration above.
    debug_assert!(span > 0.0, "span {span}");
    let samples = micro * m.unwrap_or(1) as f64;
    let throughput = samples / span * 1e3;
    let bubble = (1.0 - busy_total / (gpus_used.max(1) as f64 * span)).clamp(0.0, 1.0);
    let ev = Evaluation {
        schedule: kind,
        fits,
        memory_limit: limit,
        peak_memory: peak,
        max_memory,
        max_memory_gpu: max_gpu as u32,
        period_ms: period,
        iteration_ms: iteration,
        micro_batches: m,
        grad_sync_ms: grad_sync,
        throughput,
        bubble,
        in_flight,
        stage_time,
        gpus_used,
        valid_schedule: valid,
        notes,
    };
    check_finite(&ev)?;
    Ok(ev)
}

/// The timing of `plan` under its schedule, from its stage and cut costs and the resources they
/// load (a resource per stage group or link, and each stage's).
fn timing(
    inst: &Instance,
    plan: &Plan,
    (costs, cuts): (&[StageCost], &[CutCost]),
    (resources, resource_of_stage): (&[Resource], &[usize]),
) -> Result<Timing, InputError> {
    match &plan.schedule {
        Schedule::Async { period, pattern } => asynchronous::timing(
            inst,
            plan,
            (costs, cuts),
            resources,
            resource_of_stage,
            *period,
            pattern.as_ref(),
        ),
        Schedule::OneFOneB { micro_batches, .. } | Schedule::Gpipe { micro_batches, .. } => {
            synchronous::timing(
                inst,
                plan,
                costs,
                cuts,
                plan.schedule.kind(),
                *micro_batches,
            )
        }
    }
}

/// Whether every GPU's `peak` is within `limit` (with the slack of
/// [`memory_limit`](crate::memory_limit)); notes each GPU that is not.
fn within_memory(peak: &[f64], limit: f64, notes: &mut Vec<String>) -> bool {
    let mut within = true;
    for (g, &p) in peak.iter().enumerate() {
        if !memory_limit::fits(p, limit) {
            within = false;
            notes.push(format!(
                "GPU {g} needs {} but has {}",
                fmt_bytes(p),
                fmt_bytes(limit)
            ));
        }
    }
    within
}

/// Peak memory per GPU: the schedule's stored `activations`, then each stage's states and
/// buffers, the largest transient of its stages, and on every GPU the plan uses (`used`,
/// sorted) what the framework holds before training (calibration).
fn peak_memory(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    activations: Vec<f64>,
    used: &[u32],
) -> Vec<f64> {
    let mut peak = activations;
    let mut transient = vec![0.0f64; peak.len()];
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            peak[g as usize] += costs[s].states + costs[s].buffers;
            transient[g as usize] = transient[g as usize].max(costs[s].transient);
        }
    }
    let reserved = inst.calibration().reserved_memory;
    for (g, (p, t)) in peak.iter_mut().zip(&transient).enumerate() {
        *p += t;
        if used.binary_search(&(g as u32)).is_ok() {
            *p += reserved;
        }
    }
    peak
}

/// Says which stages run at a tensor-parallel degree the instance does not measure while it
/// measures others: their layers are one GPU's numbers divided by the degree, with modelled
/// all-reduces ([`crate::cost::measured_degree`]), not measured numbers.
fn unmeasured_degrees(chain: &Chain, plan: &Plan) -> Option<String> {
    if chain.tensor_parallel.is_empty() {
        return None;
    }
    let stages: Vec<String> = plan
        .stages
        .iter()
        .enumerate()
        .filter(|(_, st)| splits_weights(st) && measured_degree(chain, st).is_none())
        .map(|(s, st)| format!("{s} (tp {})", st.tp))
        .collect();
    if stages.is_empty() {
        return None;
    }
    let measured: Vec<String> = chain.tensor_parallel.keys().map(u32::to_string).collect();
    Some(format!(
        "stage{} {} at a tensor-parallel degree the instance does not measure (it measures {}): \
         their layers are one GPU's numbers divided by the degree, with an all-reduce of each \
         layer's output per pass",
        if stages.len() > 1 { "s" } else { "" },
        stages.join(", "),
        measured.join(", ")
    ))
}

/// Why a plan has no least period: the start of the error messages for plans whose every
/// operation takes 0 ms.
const ZERO_WORK: &str = "every operation of this plan takes 0 ms (every layer's forward and \
                             backward time is 0 and nothing crosses a link or is all-reduced)";

/// The least period the pipeline's resources allow (their largest load), which must be positive:
/// a period is a positive time (docs/evaluator.md: starts lie in `[0, T)`), so a plan whose every
/// operation takes 0 ms has no least period and needs one to be given. `field` names the period.
fn least_period(resources: &[Resource], field: &str) -> Result<f64, InputError> {
    let least = resources.iter().map(Resource::load).fold(0.0, f64::max);
    if !least.is_finite() {
        Err(overflow("the least period", least))
    } else if least > 0.0 {
        Ok(least)
    } else {
        Err(InputError::field(
            field,
            format!(
                "{ZERO_WORK}, so its least period is 0 ms, but a period must be positive; give \
                 one (e.g. \"period\": 1) to evaluate the plan's memory at it"
            ),
        ))
    }
}

/// Refuses to hand out a non-finite figure (sums of huge but finite inputs can overflow).
fn check_finite(ev: &Evaluation) -> Result<(), InputError> {
    let scalars = [
        ("max_memory", ev.max_memory),
        ("throughput", ev.throughput),
        ("bubble", ev.bubble),
        ("period_ms", ev.period_ms.unwrap_or(0.0)),
        ("iteration_ms", ev.iteration_ms.unwrap_or(0.0)),
        ("grad_sync_ms", ev.grad_sync_ms.unwrap_or(0.0)),
    ];
    let vectors = [
        ("peak_memory", &ev.peak_memory),
        ("stage_time", &ev.stage_time),
    ];
    let bad = scalars
        .into_iter()
        .find(|(_, v)| !v.is_finite())
        .or_else(|| {
            vectors
                .into_iter()
                .find_map(|(name, v)| v.iter().find(|x| !x.is_finite()).map(|&x| (name, x)))
        });
    match bad {
        None => Ok(()),
        Some((name, v)) => Err(overflow(name, v)),
    }
}

fn overflow(what: &str, v: f64) -> InputError {
    InputError::field(
        "model",
        format!(
            "the evaluation overflows: {what} = {v}; the instance's times or sizes are too large \
             to add up in f64"
        ),
    )
}

/// The pipeline's resources in chain order: every stage, and after it the cut to the next stage
/// when that cut crosses device groups. Returns them with the resource index of each stage.
/// In an asynchronous pipeline a stage's backward includes its gradient synchronisation.
pub fn pipeline_resources(
    costs: &[StageCost],
    cuts: &[CutCost],
    kind: ScheduleKind,
) -> (Vec<Resource>, Vec<usize>) {
    let n = costs.len();
    let mut resources = Vec::with_capacity(2 * n);
    let mut resource_of_stage = Vec::with_capacity(n);
    for (s, c) in costs.iter().enumerate() {
        resource_of_stage.push(resources.len());
        let sync = if kind == ScheduleKind::Async {
            c.grad_sync
        } else {
            0.0
        };
        resources.push(Resource {
            forward: c.forward,
            backward: c.backward + sync,
        });
        if s + 1 < n && cuts[s].crosses {
            resources.push(Resource {
                forward: cuts[s].transfer,
                backward: cuts[s].transfer,
            });
        }
    }
    (resources, resource_of_stage)
}

fn describe_resource(r: usize, resource_of_stage: &[usize]) -> String {
    match resource_of_stage.iter().position(|&x| x == r) {
        Some(s) => format!("stage {s}"),
        None => {
            let s = resource_of_stage.iter().rposition(|&x| x < r).unwrap_or(0);
            format!("the link after stage {s}")
        }
    }
}

/// Activation bytes per GPU when stage s keeps `in_flight[s]` micro-batches.
fn activations_by_gpu(
    inst: &Instance,
    plan: &Plan,
    costs: &[StageCost],
    in_flight: &[u32],
) -> Vec<f64> {
    let mut v = vec![0.0; inst.cluster.gpus as usize];
    for (s, st) in plan.stages.iter().enumerate() {
        for &g in &st.gpus {
            v[g as usize] += in_flight[s] as f64 * costs[s].act_per_mb;
        }
    }
    v
}

/// Turns a 1F1B* pattern over the plan's resources into an explicit [`Pattern`].
/// `resource_of_stage[s]` is the resource index of stage s; the resource after it, if it is not
/// the next stage, is the cut after s.
pub fn star_to_pattern(
    star: &crate::one_f_one_b_star::StarPattern,
    resource_of_stage: &[usize],
) -> Pattern {
    let mut ops = Vec::new();
    let n = resource_of_stage.len();
    for (s, &r) in resource_of_stage.iter().enumerate() {
        ops.push(PatternOp {
            op: OpKind::F,
            stage: s,
            start: star.f_start[r],
            shift: star.f_shift[r],
        });
        ops.push(PatternOp {
            op: OpKind::B,
            stage: s,
            start: star.b_start[r],
            shift: star.b_shift[r],
        });
        let next = if s + 1 < n {
            resource_of_stage[s + 1]
        } else {
            star.group.len()
        };
        if next > r + 1 {
            let c = r + 1;
            ops.push(PatternOp {
                op: OpKind::SendF,
                stage: s,
                start: star.f_start[c],
                shift: star.f_shift[c],
            });
            ops.push(PatternOp {
                op: OpKind::SendB,
                stage: s,
                start: star.b_start[c],
                shift: star.b_shift[c],
            });
        }
    }
    Pattern {
        period: star.period,
        ops,
    }
}

/// The 1F1B* pattern of a contiguous async plan at period `t` (default: the least period).
/// Fails when the plan shares GPUs, `t` is not a positive time or is below a resource's load, or
/// no `t` is given and every operation takes 0 ms (no least period).
pub fn one_f_one_b_star_pattern(
    inst: &Instance,
    plan: &Plan,
    t: Option<f64>,
) -> Result<Pattern, InputError> {
    let mut p = plan.clone();
    p.schedule = Schedule::one_f_one_b_star(t);
    if !p.is_contiguous() {
        return Err(InputError::field(
            "plan.stages",
            "stages share GPUs: 1F1B* is defined for contiguous allocations",
        ));
    }
    let chain = inst.chain();
    let costs = stage_costs(inst, &chain, &p);
    let cuts = cut_costs(inst, &chain, &p);
    let (resources, resource_of_stage) = pipeline_resources(&costs, &cuts, ScheduleKind::Async);
    let t = match t {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return Err(InputError::field(
                "period",
                format!("must be a positive time, found {t}"),
            ))
        }
        Some(t) => t,
        None => least_period(&resources, "period")?,
    };
    let star = one_f_one_b_star(&resources, t).map_err(|r| {
        InputError::field(
            "period",
            format!(
                "{t} ms is below the load {:.6} ms of {}",
                resources[r].load(),
                describe_resource(r, &resource_of_stage)
            ),
        )
    })?;
    Ok(star_to_pattern(&star, &resource_of_stage))
}
