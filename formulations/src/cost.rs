//! The reference cost model of the neutral evaluator (DESIGN.md §3), per stage and per cut.
//!
//! All times are per micro-batch in ms, all sizes in bytes per GPU of the stage's device group.

use crate::instance::{Chain, Instance, ScheduleKind};
use crate::plan::{Plan, Stage};

/// Ring all-reduce time (ms) of `bytes` over `d` participants at `bw` bytes/s: 2(d-1)/d x bytes/bw.
pub fn allreduce_ms(bytes: f64, d: u32, bw: f64) -> f64 {
    if d <= 1 {
        0.0
    } else {
        2.0 * (d - 1) as f64 / d as f64 * bytes / bw * 1e3
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
}

/// Whether two stages share exactly the same device group (no communication between them).
pub fn same_group(a: &Stage, b: &Stage) -> bool {
    let mut x = a.gpus.clone();
    let mut y = b.gpus.clone();
    x.sort_unstable();
    y.sort_unstable();
    x == y
}

/// Weight versions kept by a schedule family: async keeps `training.weight_versions`, synchronous
/// schedules keep one.
pub fn weight_versions(inst: &Instance, kind: ScheduleKind) -> f64 {
    match kind {
        ScheduleKind::Async => inst.training.weight_versions as f64,
        _ => 1.0,
    }
}

/// Cost of every stage of a plan.
pub fn stage_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<StageCost> {
    let kind = plan.schedule.kind();
    let n = plan.stages.len();
    (0..n)
        .map(|s| {
            let st = &plan.stages[s];
            let cut_before = s > 0 && !same_group(&plan.stages[s - 1], st);
            let cut_after = s + 1 < n && !same_group(st, &plan.stages[s + 1]);
            stage_cost(inst, chain, st, kind, cut_before, cut_after)
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
    let (k, l) = (st.first, st.last + 1);
    let w = st.width();
    let tp_bw = inst.group_bandwidth(&st.gpus);
    let ckpt = |i: usize| st.checkpoint.contains(&i);
    let mut fwd = 0.0;
    let mut bwd = 0.0;
    let mut tp_comm = 0.0;
    let mut stored = 0.0;
    let mut transient: f64 = 0.0;
    for i in k..l {
        fwd += chain.forward[i];
        bwd += chain.backward[i];
        if ckpt(i) {
            bwd += chain.forward[i];
            stored += chain.act[i];
            transient = transient.max(chain.saved[i] - chain.act[i]);
        } else {
            stored += chain.saved[i];
        }
        // One all-reduce of the layer's output (this replica's share) per pass.
        tp_comm += allreduce_ms(chain.act[i + 1] / st.dp as f64, st.tp, tp_bw);
    }
    let weights = chain.weights(k, l);
    let copies = weight_versions(inst, kind) + 1.0 + inst.training.optimizer_state_factor;
    let mut states = weights * copies / st.tp as f64;
    if st.sdp {
        states /= st.dp as f64;
    }
    let dp_bw = inst.group_bandwidth(&st.gpus);
    let mut grad_sync = allreduce_ms(weights / st.tp as f64, st.dp, dp_bw);
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
    StageCost {
        forward: fwd / w + tp_comm,
        backward: bwd / w + tp_comm,
        grad_sync,
        states,
        act_per_mb: stored / w,
        transient: transient.max(0.0) / w,
        buffers: buffers / st.dp as f64,
    }
}

/// Cost of every cut of a plan (`plan.stages.len() - 1` entries).
pub fn cut_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<CutCost> {
    plan.stages
        .windows(2)
        .map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let link = (a.gpus[0], b.gpus[0]);
            if same_group(a, b) {
                return CutCost {
                    transfer: 0.0,
                    crosses: false,
                    link,
                };
            }
            // The slowest pair decides; replicas exchange their shares in parallel.
            let mut all: Vec<u32> = a.gpus.clone();
            all.extend(&b.gpus);
            let bw = inst.group_bandwidth(&all);
            let lanes = a.dp.min(b.dp) as f64;
            CutCost {
                transfer: chain.cut[a.last] / lanes / bw * 1e3,
                crosses: true,
                link,
            }
        })
        .collect()
}
