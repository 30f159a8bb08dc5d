//! The reference cost model of the neutral evaluator (docs/evaluator.md), per stage and per cut.
//!
//! All times are per micro-batch in ms, all sizes in bytes per GPU of the stage's device group.
//!
//! Swap and recompute actions (DawnPiper's MemOpt, `docs/evaluator.md` "Swap and recompute"):
//! a swapped or recomputed layer's saved tensor leaves the stored activations of every in-flight
//! micro-batch but one (the micro-batch in flight at the peak may still hold all of them:
//! counted in `transient`); recomputation adds the node's recompute time to the backward and
//! re-materializes one run of consecutive recomputed layers at a time; swapping stalls the stage
//! by `max(sum_i max(0, 2 d_i - idle_i), D - C)`, with `d_i` the one-way transfer of tensor i
//! over PCIe, `idle_i` a lower bound of the time between its forward and its backward in any
//! schedule (the forward and backward of every later layer), `D = sum_i d_i` and `C` the stage's
//! compute per micro-batch.

mod actions;
mod cuts;
mod stage;

pub use actions::{idle_lower_bounds, swap_stall, ActionModel};
pub use cuts::{cut_costs, CutCost};
pub use stage::stage_cost_with;

use crate::instance::{Chain, Instance, MeasuredDegree, ScheduleKind};
use crate::plan::{Plan, Stage};

/// Ring all-reduce time (ms) of `bytes` over `d` participants at `bw` bytes/s: 2(d-1)/d x bytes/bw.
pub fn allreduce_ms(bytes: f64, d: u32, bw: f64) -> f64 {
    if d <= 1 {
        0.0
    } else {
        2.0 * (d - 1) as f64 / d as f64 * bytes / bw * 1e3
    }
}

/// All-to-all of `bytes` per GPU among `d` GPUs at bandwidth `bw` (bytes/s), in ms: each sends
/// all but its own share, `(d - 1) / d x bytes` (0 when `d` = 1).
pub fn alltoall_ms(bytes: f64, d: u32, bw: f64) -> f64 {
    if d <= 1 {
        0.0
    } else {
        (d - 1) as f64 / d as f64 * bytes / bw * 1e3
    }
}

/// Costs of one stage under the reference model.
#[derive(Debug, Clone, PartialEq)]
pub struct StageCost {
    /// Forward time per micro-batch: sum of forwards / (dp x tp) + TP all-reduces + ZeRO's
    /// forward part of [`StageCost::zero_comm`].
    pub forward: f64,
    /// Backward time per micro-batch: sum of backwards / (dp x tp) + recomputation of
    /// checkpointed layers + TP all-reduces + the backward part of [`StageCost::zero_comm`].
    pub backward: f64,
    /// Data-parallel communication once per weight update, after the last backward (ms): by
    /// ZeRO stage, `docs/evaluator.md`, section 2 (the gradient all-reduce without ZeRO).
    pub grad_sync: f64,
    /// ZeRO's communication per micro-batch (ms, forward and backward together, included in
    /// them): all-gathers of the weights and reduce-scatters of the gradients
    /// (`docs/evaluator.md`, section 2).
    pub zero_comm: f64,
    /// Model states per GPU: W x (versions + 1 + optimizer factor) / tp, with the parts the
    /// stage's ZeRO stage divides further divided by its sharers (all of them under sdp).
    pub states: f64,
    /// [`StageCost::states`] by part.
    pub state_parts: ModelStates,
    /// Bytes stored per in-flight micro-batch per GPU (checkpointed layers keep only their input).
    pub act_per_mb: f64,
    /// Transient bytes while a checkpointed layer is re-materialized (one micro-batch).
    pub transient: f64,
    /// Communication buffers: 2 x (cut bytes) on each side that has a cut to another device group.
    pub buffers: f64,
    /// Recomputation of `recompute` layers per micro-batch (ms, included in `backward`).
    pub recompute: f64,
    /// Forward of checkpointed layers run again during the backward (ms, included in
    /// `backward`).
    pub reforward: f64,
    /// Stall waiting for swapped tensors per micro-batch (ms, included in `backward`).
    pub swap_stall: f64,
    /// One-way host transfer of the stage's swapped tensors per micro-batch (ms): out after
    /// the forward, back in before the backward, overlapping compute except for `swap_stall`.
    pub swap_transfer: f64,
}

/// A GPU's model states by part (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelStates {
    /// The weight versions the schedule keeps.
    pub weights: f64,
    /// The gradient.
    pub gradients: f64,
    /// The optimizer state (`training.optimizer_state_factor` weight-sized copies).
    pub optimizer: f64,
}

/// Weight versions kept by a schedule family: async keeps `training.weight_versions`, synchronous
/// schedules keep one.
pub fn weight_versions(inst: &Instance, kind: ScheduleKind) -> f64 {
    match kind {
        ScheduleKind::Async => inst.training.weight_versions as f64,
        _ => 1.0,
    }
}

/// Bytes a GPU keeps per parameter byte it holds: the schedule's weight versions, one gradient
/// and the optimizer state (`training.optimizer_state_factor`). `docs/design.md`, memory model.
pub fn state_copies(inst: &Instance, kind: ScheduleKind) -> f64 {
    weight_versions(inst, kind) + 1.0 + inst.training.optimizer_state_factor
}

/// Micro-batches stage `s` (0-based) of a `p`-stage pipeline of one GPU per stage keeps in flight
/// under `kind` with `m` micro-batches: the `p - s` stages ahead of it (async, PipeDream's steady
/// state), at most `m` (1f1b), or all `m` (gpipe).
pub fn in_flight(kind: ScheduleKind, p: usize, s: usize, m: u32) -> u32 {
    let ahead = (p - s) as u32;
    match kind {
        ScheduleKind::Async => ahead,
        ScheduleKind::OneFOneB => ahead.min(m),
        ScheduleKind::Gpipe => m,
    }
}

/// Cost of every stage of a plan.
///
/// Swap and recompute actions and graph workspaces are costed with [`ActionModel::of`]; an
/// invalid `graph` extension (reported by [`Instance::validate`] when the instance is read) is
/// treated here as absent (no workspace, recompute = forward).
pub fn stage_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<StageCost> {
    let kind = plan.schedule.kind();
    let n = plan.stages.len();
    let extra = if ActionModel::needed(inst, plan) {
        let model = ActionModel::or_chain(inst, chain);
        let mut width = vec![1.0; chain.len()];
        for st in &plan.stages {
            for w in width.iter_mut().take(st.last + 1).skip(st.first) {
                *w = st.width();
            }
        }
        let idle = idle_lower_bounds(chain, &width);
        Some((model, idle))
    } else {
        None
    };
    let cuts = cut_costs(inst, chain, plan);
    (0..n)
        .map(|s| {
            let st = &plan.stages[s];
            let cut_before = s > 0 && !plan.stages[s - 1].same_group(st);
            let cut_after = s + 1 < n && !st.same_group(&plan.stages[s + 1]);
            let extra = extra.as_ref().map(|(m, i)| (m, i.as_slice()));
            let mut c = stage_cost_with(inst, chain, st, kind, cut_before, cut_after, extra);
            // The share of each adjacent transfer the stage waits for (calibration's
            // `p2p_overlap` < 1): one message each way per micro-batch.
            let waits: f64 = [s.checked_sub(1), (s + 1 < n).then_some(s)]
                .into_iter()
                .flatten()
                .map(|c| cuts[c].blocking)
                .sum();
            c.forward += waits;
            c.backward += waits;
            c
        })
        .collect()
}

/// Whether the stage splits its layers' weights over a tensor-parallel group, so that an instance
/// may measure its layers at its degree: tp above 1 and not a Ulysses group (which splits the
/// sequence, not the weights).
pub fn splits_weights(st: &Stage) -> bool {
    st.tp > 1 && !st.ulysses
}

/// The measurements of the stage's layers at its tensor-parallel degree, when the instance has
/// them (`model.layers[i].tensor_parallel`); `None` when the stage does not split its weights
/// ([`splits_weights`]) or its degree is not measured: its layers are then divided by the degree.
pub fn measured_degree<'a>(chain: &'a Chain, st: &Stage) -> Option<&'a MeasuredDegree> {
    splits_weights(st).then(|| chain.measured(st.tp)).flatten()
}
