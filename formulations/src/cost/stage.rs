//! The cost of one stage: its layers' compute and tensor-parallel communication, model states,
//! gradient synchronisation, activations and buffers, and what swap and recompute change.

use super::{
    allreduce_ms, alltoall_ms, measured_degree, state_copies, swap_stall, weight_versions,
    ActionModel, ModelStates, StageCost,
};
use crate::instance::{Chain, Instance, ScheduleKind, Traffic};
use crate::plan::Stage;

/// Cost of one stage with the swap/recompute model: `extra` = the per-layer model and the idle
/// lower bounds of [`idle_lower_bounds`](super::idle_lower_bounds) (`None`: no actions, no
/// workspace). [`stage_costs`](super::stage_costs) passes it when
/// [`ActionModel::needed`].
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
    let sums = LayerSums::of(inst, chain, st);
    // Tensor parallelism splits the weights over the tp group; Ulysses keeps them whole.
    let split = if st.ulysses { 1.0 } else { st.tp as f64 };
    let (states, state_parts) = model_states(inst, kind, st, sums.weights / split);
    let dp_bw = inst.group_bandwidth(&st.gpus, Traffic::Collective);
    let dp_comm = DataParallelComm::of(st, allreduce_ms(sums.weights / split, st.sharers(), dp_bw));
    let zero_comm = dp_comm.per_micro_batch();
    let mut buffers = 0.0;
    if cut_before {
        buffers += 2.0 * chain.cut[k - 1];
    }
    if cut_after {
        buffers += 2.0 * chain.cut[l - 1];
    }
    let mut stored = sums.stored;
    let mut transient = sums.transient;
    let actions = match extra {
        Some((model, idle)) => {
            let a = Actions::of(chain, st, model, idle, &sums, zero_comm);
            stored -= a.removed;
            transient = transient.max(a.longest_run);
            a
        }
        None => Actions::default(),
    };
    let tp_comm = sums.tp_comm;
    StageCost {
        forward: sums.fwd / w + tp_comm + dp_comm.forward,
        backward: sums.bwd / w
            + tp_comm
            + dp_comm.backward
            + actions.recompute / w
            + actions.swap_stall,
        grad_sync: dp_comm.update,
        zero_comm,
        states,
        state_parts,
        act_per_mb: stored.max(0.0) / w,
        transient: (transient.max(0.0) + actions.transient) / w,
        buffers: buffers / st.dp as f64,
        recompute: actions.recompute / w,
        reforward: sums.reforward / w,
        swap_stall: actions.swap_stall,
        swap_transfer: actions.swap_transfer,
    }
}

/// A stage's data-parallel communication (ms), by when it happens (`docs/evaluator.md`,
/// section 2). A reduce-scatter and an all-gather each move half of an all-reduce.
struct DataParallelComm {
    /// Per micro-batch, in its forward: ZeRO-3 gathers the weights it frees after use.
    forward: f64,
    /// Per micro-batch, in its backward: ZeRO-3 gathers the weights again, and ZeRO-2 and ZeRO-3
    /// reduce-scatter the micro-batch's gradients into the shards (not ZeRO-3 with whole
    /// gradients, which accumulates them whole).
    backward: f64,
    /// Once per weight update, after the last backward: the all-reduce of the accumulated
    /// gradients (replicated states, ZeRO-1: a reduce-scatter and the all-gather of the updated
    /// weights), the all-gather of the updated weights (ZeRO-2), the reduce-scatter of the
    /// accumulated gradients (ZeRO-3 with whole gradients).
    update: f64,
}

impl DataParallelComm {
    /// The communication of `st`, given one all-reduce of its weights among its sharers.
    fn of(st: &Stage, all_reduce: f64) -> DataParallelComm {
        let half = all_reduce / 2.0;
        let (forward, backward, update) = match st.zero_stage() {
            3 if st.shards_with_whole_gradients() => (half, half, half),
            3 => (half, all_reduce, 0.0),
            2 => (0.0, half, half),
            _ => (0.0, 0.0, all_reduce),
        };
        DataParallelComm {
            forward,
            backward,
            update,
        }
    }

    /// What happens at every micro-batch, forward and backward together.
    fn per_micro_batch(&self) -> f64 {
        self.forward + self.backward
    }
}

/// Model states per GPU of a stage holding `weights` bytes of weights per GPU (before any ZeRO
/// division): the total and its parts. ZeRO stage `z` divides among the stage's sharers the
/// optimizer states from `z` = 1, the gradient from 2 and the weight versions from 3 (`sdp`);
/// `whole_gradients` keeps the gradient whole under `sdp`.
fn model_states(
    inst: &Instance,
    kind: ScheduleKind,
    st: &Stage,
    weights: f64,
) -> (f64, ModelStates) {
    let zero = st.zero_stage();
    let sharers = st.sharers() as f64;
    let part = |copies: f64, from: u8| {
        if zero >= from {
            weights * copies / sharers
        } else {
            weights * copies
        }
    };
    let parts = ModelStates {
        weights: part(weight_versions(inst, kind), 3),
        gradients: if st.shards_with_whole_gradients() {
            weights
        } else {
            part(1.0, 2)
        },
        optimizer: part(inst.training.optimizer_state_factor, 1),
    };
    // Undivided or wholly divided, the total is the one product (as the planners that model no
    // ZeRO compute it); in between, the sum of the parts.
    let copies = state_copies(inst, kind);
    let total = match zero {
        0 => weights * copies,
        3 if !st.shards_with_whole_gradients() => weights * copies / sharers,
        _ => parts.weights + parts.gradients + parts.optimizer,
    };
    (total, parts)
}

/// A stage's layers summed, whole-group figures (bytes and ms before the division by the
/// stage's width), except `tp_comm`, per GPU.
struct LayerSums {
    fwd: f64,
    /// Backward, with the forward again of checkpointed layers.
    bwd: f64,
    /// Tensor-parallel communication per pass (ms).
    tp_comm: f64,
    /// Activations stored per micro-batch (a checkpointed layer keeps only its input).
    stored: f64,
    /// The largest re-materialization of a checkpointed layer.
    transient: f64,
    weights: f64,
    /// Forward of checkpointed layers run again during the backward.
    reforward: f64,
}

impl LayerSums {
    fn of(inst: &Instance, chain: &Chain, st: &Stage) -> LayerSums {
        let tp_bw = inst.group_bandwidth(&st.gpus, Traffic::Collective);
        let ckpt = |i: usize| st.checkpoint.contains(&i);
        // Layers measured at the stage's tensor-parallel degree: their per-GPU numbers times the
        // degree stand for the whole group's, so the division by `tp` gives them back, and the
        // measured times already include the group's all-reduces.
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
        let mut sums = LayerSums {
            fwd: 0.0,
            bwd: 0.0,
            tp_comm: 0.0,
            stored: 0.0,
            transient: 0.0,
            weights: 0.0,
            reforward: 0.0,
        };
        for i in st.first..=st.last {
            let (f, b, saved, w_i) = layer(i);
            sums.fwd += f;
            sums.bwd += b;
            sums.weights += w_i;
            if ckpt(i) {
                sums.bwd += f;
                sums.reforward += f;
                sums.stored += chain.act[i];
                sums.transient = sums.transient.max(saved - chain.act[i]);
            } else {
                sums.stored += saved;
            }
            if st.ulysses {
                // One all-to-all of the layer's output (this replica's share) per pass.
                sums.tp_comm += alltoall_ms(chain.act[i + 1] / st.dp as f64, st.tp, tp_bw);
            } else if measured.is_none() {
                // One all-reduce of the layer's output (this replica's share) per pass.
                sums.tp_comm += allreduce_ms(chain.act[i + 1] / st.dp as f64, st.tp, tp_bw);
            }
        }
        sums
    }
}

/// What swap and recompute change in a stage (`docs/evaluator.md`, "Swap and recompute").
#[derive(Default)]
struct Actions {
    /// Recompute time per micro-batch, whole group (ms).
    recompute: f64,
    /// Stall waiting for swapped tensors (ms).
    swap_stall: f64,
    /// One-way host transfer of the swapped tensors (ms).
    swap_transfer: f64,
    /// Bytes the swapped and recomputed tensors remove from every stored micro-batch but one.
    removed: f64,
    /// The longest run of consecutive recomputed layers' saved bytes (re-materialized at once).
    longest_run: f64,
    /// Transient bytes: the swapped tensors of the micro-batch at the peak and the largest
    /// workspace.
    transient: f64,
}

impl Actions {
    fn of(
        chain: &Chain,
        st: &Stage,
        model: &ActionModel,
        idle: &[f64],
        sums: &LayerSums,
        zero_comm: f64,
    ) -> Actions {
        let (k, l) = (st.first, st.last + 1);
        let w = st.width();
        let mut swapped = 0.0;
        for &i in &st.swap {
            swapped += chain.saved[i];
        }
        let mut recompute = 0.0;
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
        let workspace = model.workspace[k..l].iter().copied().fold(0.0, f64::max);
        let mut a = Actions {
            recompute,
            removed: swapped + rec_bytes,
            longest_run,
            transient: swapped + workspace,
            ..Actions::default()
        };
        if let (Some(pcie), false) = (model.pcie, st.swap.is_empty()) {
            let compute = (sums.fwd + sums.bwd + recompute) / w + 2.0 * sums.tp_comm + zero_comm;
            let one_way = |i: usize| chain.saved[i] / w / pcie * 1e3;
            a.swap_transfer = st.swap.iter().map(|&i| one_way(i)).sum();
            a.swap_stall = swap_stall(st.swap.iter().map(|&i| (one_way(i), idle[i])), compute);
        }
        a
    }
}
