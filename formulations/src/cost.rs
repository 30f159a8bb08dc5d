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

use crate::error::InputError;
use crate::instance::{Chain, Instance, MeasuredDegree, ScheduleKind, Traffic};
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
    /// Forward time per micro-batch: sum of forwards / (dp x tp) + TP all-reduces.
    pub forward: f64,
    /// Backward time per micro-batch: sum of backwards / (dp x tp) + recomputation of
    /// checkpointed layers + TP all-reduces.
    pub backward: f64,
    /// Gradient synchronisation across data-parallel replicas for one weight update (ms):
    /// 2(d-1)/d x W/tp / bandwidth, or 3(d-1)/d x ... under sdp (reduce-scatter + 2 all-gathers).
    pub grad_sync: f64,
    /// Model states per GPU: W x (versions + 1 + optimizer factor) / tp [/ dp under sdp].
    pub states: f64,
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

/// Per-layer inputs of the swap/recompute model, at the trained micro-batch: from the `graph`
/// extension or derived from the chain ([`crate::dawnpiper::graph`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ActionModel {
    /// Time to recompute each layer's saved tensor (ms).
    pub recompute: Vec<f64>,
    /// Bytes each layer allocates and frees while it runs.
    pub workspace: Vec<f64>,
    /// Host link bandwidth (bytes/s), if the cluster has one.
    pub pcie: Option<f64>,
}

impl ActionModel {
    /// The model of `inst` (fails on an invalid `graph` extension, naming the field).
    pub fn of(inst: &Instance) -> Result<ActionModel, InputError> {
        let g = crate::dawnpiper::graph::Graph::of(inst)?;
        Ok(ActionModel {
            recompute: g.nodes.iter().map(|n| n.recompute).collect(),
            workspace: g.nodes.iter().map(|n| n.workspace).collect(),
            pcie: inst.cluster.pcie,
        })
    }

    /// Whether the model is needed at all for `plan`: some stage swaps or recomputes, or the
    /// instance has a `graph` extension (whose workspaces count as transient memory).
    pub fn needed(inst: &Instance, plan: &Plan) -> bool {
        inst.extensions.contains_key(crate::dawnpiper::graph::KEY)
            || plan.stages.iter().any(Stage::has_memory_actions)
    }
}

/// Lower bound of every layer's idle time between its forward and its backward, in any
/// schedule: the forward and backward times of every later layer, each divided by the width of
/// its stage (`width[l]`; 1 for single-GPU stages). A communication only adds to it.
pub fn idle_lower_bounds(chain: &Chain, width: &[f64]) -> Vec<f64> {
    let n = chain.len();
    let mut idle = vec![0.0; n];
    let mut acc = 0.0;
    for l in (0..n).rev() {
        idle[l] = acc;
        acc += (chain.forward[l] + chain.backward[l]) / width[l];
    }
    idle
}

/// Swap stall of a stage (ms per micro-batch): `max(sum_i max(0, 2 d_i - idle_i), D - C, 0)`
/// with `d_i = bytes_i / pcie`, `D = sum d_i` and `C` the stage's compute per micro-batch.
pub fn swap_stall(transfers: impl Iterator<Item = (f64, f64)>, compute: f64) -> f64 {
    let mut exposed = 0.0;
    let mut total = 0.0;
    for (d, idle) in transfers {
        exposed += (2.0 * d - idle).max(0.0);
        total += d;
    }
    exposed.max(total - compute).max(0.0)
}

/// Costs of a cut between stage s and s+1 (zero when both stages run on the same device group).
#[derive(Debug, Clone, PartialEq)]
pub struct CutCost {
    /// Time of sending the activation forward (and, equally, the gradient back), ms.
    pub transfer: f64,
    /// True when the two stages' device groups differ, i.e. bytes cross a link.
    pub crosses: bool,
    /// The two GPUs identifying the link (first GPU of each group).
    pub link: (u32, u32),
    /// The part of each transfer both stages wait for instead of computing (ms, each way):
    /// `(1 - p2p_overlap)` of it; `transfer` keeps the overlapped part.
    pub blocking: f64,
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
/// invalid `graph` extension is reported by [`Plan::check`] and by the evaluator, and is
/// treated here as absent (no workspace, recompute = forward).
pub fn stage_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<StageCost> {
    let kind = plan.schedule.kind();
    let n = plan.stages.len();
    let extra = if ActionModel::needed(inst, plan) {
        let model = ActionModel::of(inst).unwrap_or_else(|_| ActionModel {
            recompute: chain.forward.clone(),
            workspace: vec![0.0; chain.len()],
            pcie: inst.cluster.pcie,
        });
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

/// Cost of one stage; `cut_before` / `cut_after` say whether it exchanges data with another
/// device group on that side (for the buffers).
pub fn stage_cost(
    inst: &Instance,
    chain: &Chain,
    st: &Stage,
    kind: ScheduleKind,
    cut_before: bool,
    cut_after: bool,
) -> StageCost {
    let extra = if st.has_memory_actions() {
        let model = ActionModel::of(inst).unwrap_or_else(|_| ActionModel {
            recompute: chain.forward.clone(),
            workspace: vec![0.0; chain.len()],
            pcie: inst.cluster.pcie,
        });
        let idle = idle_lower_bounds(chain, &vec![1.0; chain.len()]);
        Some((model, idle))
    } else {
        None
    };
    let extra = extra.as_ref().map(|(m, i)| (m, i.as_slice()));
    stage_cost_with(inst, chain, st, kind, cut_before, cut_after, extra)
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

/// Cost of one stage with the swap/recompute model: `extra` = the per-layer model and the idle
/// lower bounds of [`idle_lower_bounds`] (`None`: no actions, no workspace). [`stage_cost`] uses
/// the model only when the stage has actions, with idle times for single-GPU stages.
pub fn stage_cost_with(
    inst: &Instance,
    chain: &Chain,
    st: &Stage,
    kind: ScheduleKind,
    cut_before: bool,
    cut_after: bool,
    extra: Option<(&ActionModel, &[f64])>,
) -> StageCost {
    let (k, l) = (st.first, st.last + 1);
    let w = st.width();
    let tp_bw = inst.group_bandwidth(&st.gpus, Traffic::Collective);
    let ckpt = |i: usize| st.checkpoint.contains(&i);
    // Layers measured at the stage's tensor-parallel degree: their per-GPU numbers times the
    // degree stand for the whole group's, so the division by `tp` below gives them back, and
    // the measured times already include the group's all-reduces.
    let measured = measured_degree(chain, st);
    let tpf = st.tp as f64;
    let layer = |i: usize| match measured {
        Some(m) => (
            m.forward[i] * tpf,
            m.backward[i] * tpf,
            m.saved[i] * tpf,
            m.weights[i] * tpf,
        ),
        None => (
            chain.forward[i],
            chain.backward[i],
            chain.saved[i],
            chain.weights[i],
        ),
    };
    let mut fwd = 0.0;
    let mut bwd = 0.0;
    let mut tp_comm = 0.0;
    let mut stored = 0.0;
    let mut transient: f64 = 0.0;
    let mut weights = 0.0;
    let mut reforward = 0.0;
    for i in k..l {
        let (f, b, saved, w_i) = layer(i);
        fwd += f;
        bwd += b;
        weights += w_i;
        if ckpt(i) {
            bwd += f;
            reforward += f;
            stored += chain.act[i];
            transient = transient.max(saved - chain.act[i]);
        } else {
            stored += saved;
        }
        if st.ulysses {
            // One all-to-all of the layer's output (this replica's share) per pass.
            tp_comm += alltoall_ms(chain.act[i + 1] / st.dp as f64, st.tp, tp_bw);
        } else if measured.is_none() {
            // One all-reduce of the layer's output (this replica's share) per pass.
            tp_comm += allreduce_ms(chain.act[i + 1] / st.dp as f64, st.tp, tp_bw);
        }
    }
    let copies = state_copies(inst, kind);
    // Tensor parallelism splits the weights over the tp group; Ulysses keeps them whole and
    // shares the gradients over every GPU of the stage.
    let (split, sharers) = if st.ulysses {
        (1.0, st.dp * st.tp)
    } else {
        (st.tp as f64, st.dp)
    };
    let mut states = weights * copies / split;
    if st.sdp {
        states /= sharers as f64;
    }
    let dp_bw = inst.group_bandwidth(&st.gpus, Traffic::Collective);
    let mut grad_sync = allreduce_ms(weights / split, sharers, dp_bw);
    if st.sdp {
        grad_sync *= 1.5;
    }
    let mut buffers = 0.0;
    if cut_before {
        buffers += 2.0 * chain.cut[k - 1];
    }
    if cut_after {
        buffers += 2.0 * chain.cut[l - 1];
    }
    // Swap and recompute: removed from the stored activations of all but one micro-batch.
    let mut recompute = 0.0;
    let mut swap_stall_ms = 0.0;
    let mut swap_transfer = 0.0;
    let mut extra_transient = 0.0;
    if let Some((model, idle)) = extra {
        let mut swapped = 0.0;
        for &i in &st.swap {
            swapped += chain.saved[i];
        }
        let mut rec_bytes = 0.0;
        let mut run: f64 = 0.0;
        let mut longest_run: f64 = 0.0;
        for i in k..l {
            if st.recompute.contains(&i) {
                recompute += model.recompute[i];
                rec_bytes += chain.saved[i];
                run += chain.saved[i];
                longest_run = longest_run.max(run);
            } else {
                run = 0.0;
            }
        }
        stored -= swapped + rec_bytes;
        transient = transient.max(longest_run);
        let workspace = model.workspace[k..l].iter().copied().fold(0.0, f64::max);
        extra_transient = swapped + workspace;
        if let (Some(pcie), false) = (model.pcie, st.swap.is_empty()) {
            let compute = (fwd + bwd + recompute) / w + 2.0 * tp_comm;
            let one_way = |i: usize| chain.saved[i] / w / pcie * 1e3;
            swap_transfer = st.swap.iter().map(|&i| one_way(i)).sum();
            swap_stall_ms = swap_stall(st.swap.iter().map(|&i| (one_way(i), idle[i])), compute);
        }
    }
    StageCost {
        forward: fwd / w + tp_comm,
        backward: bwd / w + tp_comm + recompute / w + swap_stall_ms,
        grad_sync,
        states,
        act_per_mb: stored.max(0.0) / w,
        transient: (transient.max(0.0) + extra_transient) / w,
        buffers: buffers / st.dp as f64,
        recompute: recompute / w,
        reforward: reforward / w,
        swap_stall: swap_stall_ms,
        swap_transfer,
    }
}

/// Cost of every cut of a plan (`plan.stages.len() - 1` entries).
pub fn cut_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<CutCost> {
    let overlap = inst.calibration().p2p_overlap;
    plan.stages
        .windows(2)
        .map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let link = (a.gpus[0], b.gpus[0]);
            if a.same_group(b) {
                return CutCost {
                    transfer: 0.0,
                    crosses: false,
                    link,
                    blocking: 0.0,
                };
            }
            // The slowest pair decides; replicas exchange their shares in parallel.
            let mut all: Vec<u32> = a.gpus.clone();
            all.extend(&b.gpus);
            let bw = inst.group_bandwidth(&all, Traffic::P2p);
            let lanes = a.dp.min(b.dp) as f64;
            let full = chain.cut[a.last] / lanes / bw * 1e3;
            CutCost {
                transfer: full * overlap,
                crosses: true,
                link,
                blocking: full * (1.0 - overlap),
            }
        })
        .collect()
}
