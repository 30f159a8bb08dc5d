//! Stage memory and compute of a contiguous node range under DawnPiper's per-stage model, and
//! the compute-balanced and memory-balanced cut positions (Algorithm 2 of the paper's appendix,
//! `docs/dawnpiper.md`).
//!
//! A stage is nodes `a..=b` on one GPU. Its memory without swap/recompute is the evaluator's
//! (`cost::stage_cost`): model states + communication buffers + `g` x stored activations +
//! transient bytes, where `g` is the number of micro-batches the stage keeps in flight:
//! `P - s` for asynchronous PipeDream-style stages (the ratio P : P-1 : ... : 1 of Algorithm 2;
//! an upper bound of what 1F1B* keeps), `min(P - s, m)` for synchronous 1F1B and `m` for GPipe.

use crate::cost::{stage_cost_with, ActionModel, StageCost};
use crate::dawnpiper::comm::CutComm;
use crate::error::InputError;
use crate::instance::{Chain, Instance, ScheduleKind};
use crate::plan::Stage;

pub use crate::cost::in_flight;

/// Everything needed to cost contiguous stages of one instance for a pipeline of `p` stages.
#[derive(Debug, Clone)]
pub struct Model<'a> {
    /// The instance.
    pub inst: &'a Instance,
    /// Its chain at the trained micro-batch.
    pub chain: Chain,
    /// Per-node recompute times, workspaces and the host link.
    pub actions: ActionModel,
    /// Idle-time lower bounds of every node (single-GPU stages).
    pub idle: Vec<f64>,
    /// Schedule family planned for.
    pub kind: ScheduleKind,
    /// Number of stages.
    pub stages: usize,
    /// Micro-batches per batch (synchronous schedules).
    pub micro_batches: u32,
    /// Memory of one GPU (bytes).
    pub memory: f64,
    /// Prefix sums of forward + backward.
    compute_prefix: Vec<f64>,
    /// Prefix sums of weights and of saved bytes.
    weight_prefix: Vec<f64>,
    saved_prefix: Vec<f64>,
    /// Sparse table of workspace maxima: `ws_max[j][i]` = max over `i..i + 2^j`.
    ws_max: Vec<Vec<f64>>,
    /// Sparse table of the buffer a stage ending at each node holds (its outgoing cut; 0 after
    /// the last node), for [`Model::plain_memory_end`].
    cut_max: Vec<Vec<f64>>,
    /// Whether weights, saved bytes and cuts are all non-negative, so that a stage's plain
    /// memory without its end buffer only grows with the stage (the bound behind
    /// [`Model::plain_memory_end`]'s skips).
    monotone: bool,
    /// Weight copies per parameter byte (versions + gradient + optimizer).
    copies: f64,
    /// Swappable flag of every node.
    swappable: Vec<bool>,
    /// Communication across every cut position (appendix B.2).
    pub comm: CutComm,
}

impl<'a> Model<'a> {
    /// The model of `inst` for `stages` stages under `kind`. Fails on an invalid `graph`
    /// extension or a stage count of 0 or above the node count.
    pub fn new(
        inst: &'a Instance,
        kind: ScheduleKind,
        stages: usize,
    ) -> Result<Model<'a>, InputError> {
        let actions = ActionModel::of(inst)?;
        let graph = crate::dawnpiper::graph::Graph::of(inst)?;
        let swappable = graph.nodes.iter().map(|n| n.swappable).collect();
        let n = inst.num_layers();
        if stages == 0 || stages > n {
            return Err(InputError::field(
                "stages",
                format!("{stages} stages for a graph of {n} nodes: need 1..={n}"),
            ));
        }
        let chain = inst.chain();
        let comm = CutComm::new(inst, &chain, &graph, stages);
        let idle = crate::cost::idle_lower_bounds(&chain, &vec![1.0; n]);
        let mut compute_prefix = vec![0.0; n + 1];
        let mut weight_prefix = vec![0.0; n + 1];
        let mut saved_prefix = vec![0.0; n + 1];
        for i in 0..n {
            compute_prefix[i + 1] = compute_prefix[i] + chain.forward[i] + chain.backward[i];
            weight_prefix[i + 1] = weight_prefix[i] + chain.weights[i];
            saved_prefix[i + 1] = saved_prefix[i] + chain.saved[i];
        }
        let ws_max = sparse_max(actions.workspace.clone());
        let end_cut: Vec<f64> = (0..n)
            .map(|i| if i + 1 < n { chain.cut[i] } else { 0.0 })
            .collect();
        let copies = crate::cost::state_copies(inst, kind);
        let monotone = copies >= 0.0
            && [&chain.weights, &chain.saved, &end_cut]
                .iter()
                .all(|v| v.iter().all(|&x| x >= 0.0));
        let cut_max = sparse_max(end_cut);
        Ok(Model {
            inst,
            chain,
            actions,
            idle,
            kind,
            stages,
            micro_batches: inst.micro_batches(),
            memory: inst.usable_memory(),
            compute_prefix,
            weight_prefix,
            saved_prefix,
            ws_max,
            cut_max,
            monotone,
            copies,
            swappable,
            comm,
        })
    }

    /// Whether node `i`'s saved tensor may be swapped.
    pub fn graph_swappable(&self, i: usize) -> bool {
        self.swappable[i]
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.chain.len()
    }

    /// True when there is no node.
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// Forward + backward time of nodes `a..=b` (ms per micro-batch).
    pub fn compute(&self, a: usize, b: usize) -> f64 {
        self.compute_prefix[b + 1] - self.compute_prefix[a]
    }

    /// In-flight micro-batches of stage `s`.
    pub fn in_flight(&self, s: usize) -> u32 {
        in_flight(self.kind, self.stages, s, self.micro_batches)
    }

    /// The evaluator's cost of stage `s` = nodes `a..=b` on GPU `s` with the given actions.
    pub fn cost(
        &self,
        a: usize,
        b: usize,
        s: usize,
        swap: &[usize],
        recompute: &[usize],
    ) -> StageCost {
        let st = Stage {
            swap: swap.to_vec(),
            recompute: recompute.to_vec(),
            ..Stage::single(a, b, s as u32)
        };
        stage_cost_with(
            self.inst,
            &self.chain,
            &st,
            self.kind,
            s > 0 && a > 0,
            s + 1 < self.stages && b + 1 < self.len(),
            Some((&self.actions, &self.idle)),
        )
    }

    /// Peak memory of a stage from its cost: states + buffers + g x activations + transient.
    pub fn peak(&self, c: &StageCost, s: usize) -> f64 {
        c.states + c.buffers + self.in_flight(s) as f64 * c.act_per_mb + c.transient
    }

    /// Peak memory of stage `s` = nodes `a..=b` without swap or recompute, in O(1) from prefix
    /// sums (equal to `peak(cost(a, b, s, &[], &[]))`, which tests check).
    pub fn plain_memory(&self, a: usize, b: usize, s: usize) -> f64 {
        self.plain_memory_g(a, b, s, self.in_flight(s))
    }

    /// [`Model::plain_memory`] with `g` micro-batches in flight.
    pub fn plain_memory_g(&self, a: usize, b: usize, s: usize, g: u32) -> f64 {
        let end_cut = (s + 1 < self.stages && b + 1 < self.len()).then(|| self.chain.cut[b]);
        self.memory_with(a, b, s, g, end_cut)
    }

    /// Plain memory of nodes `a..=b` on stage `s` with `end_cut` as the outgoing cut (none:
    /// no end buffer). Every term grows with its input, and so does the rounded sum: with
    /// [`Model::plain_memory_end`]'s larger inputs the result bounds the exact one.
    fn memory_with(&self, a: usize, b: usize, s: usize, g: u32, end_cut: Option<f64>) -> f64 {
        let states = (self.weight_prefix[b + 1] - self.weight_prefix[a]) * self.copies;
        let act = self.saved_prefix[b + 1] - self.saved_prefix[a];
        let mut buffers = 0.0;
        if s > 0 && a > 0 {
            buffers += 2.0 * self.chain.cut[a - 1];
        }
        if let Some(c) = end_cut {
            buffers += 2.0 * c;
        }
        let ws = range_max(&self.ws_max, a, b);
        states + buffers + g as f64 * act + ws
    }

    /// The last node `end` in `start..=last` such that every stage `start..=e` with
    /// `start < e <= end` fits `t` as [`Model::plain_memory`] on stage `s`; `start` when
    /// `start..=start + 1` does not (or `start == last`). (The linear scan's answer: it stops at
    /// the first stage over `t`, even though a longer one may fit again, since the end buffer
    /// varies with the end.)
    ///
    /// Usually in O(log n) bound checks: without its end buffer a stage's memory only grows with
    /// the stage, so the memory of `start..=hi` with the largest end buffer among the ends
    /// `lo..=hi` bounds all of them, and a block within `t` is skipped whole; blocks grow by
    /// doubling and shrink by halving, down to one node, whose bound is exact. Falls back to the
    /// scan when a weight, saved size, cut or the weight-copy factor is negative (or NaN).
    pub fn plain_memory_end(&self, start: usize, last: usize, s: usize, t: f64) -> usize {
        let g = self.in_flight(s);
        let mut end = start;
        if !self.monotone {
            while end < last && self.plain_memory_g(start, end + 1, s, g) <= t {
                end += 1;
            }
            return end;
        }
        let has_end_buffer = s + 1 < self.stages;
        let mut step = 1usize;
        while end < last {
            let lo = end + 1;
            let hi = end.saturating_add(step).min(last);
            let bound_cut = has_end_buffer.then(|| range_max(&self.cut_max, lo, hi));
            if self.memory_with(start, hi, s, g, bound_cut) <= t {
                end = hi;
                step = step.saturating_mul(2);
            } else if hi > lo {
                step = (hi - lo).div_ceil(2);
            } else {
                // A one-node block's bound is its exact memory (the table holds 0 after the
                // last node, which has no end buffer): `lo` is the first stage over `t`.
                break;
            }
        }
        end
    }
}

/// Sparse table of range maxima over `v`: level `j` holds the maxima of `i..i + 2^j`.
fn sparse_max(v: Vec<f64>) -> Vec<Vec<f64>> {
    let n = v.len();
    let mut table = vec![v];
    let mut span = 1;
    while 2 * span <= n {
        let prev = table.last().expect("one level");
        let next: Vec<f64> = (0..=n - 2 * span)
            .map(|i| prev[i].max(prev[i + span]))
            .collect();
        table.push(next);
        span *= 2;
    }
    table
}

/// Maximum of `a..=b` from a [`sparse_max`] table.
fn range_max(table: &[Vec<f64>], a: usize, b: usize) -> f64 {
    let len = b + 1 - a;
    let j = usize::BITS as usize - 1 - len.leading_zeros() as usize;
    table[j][a].max(table[j][b + 1 - (1 << j)])
}

/// Which quantity a balanced partition equalizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Forward + backward time.
    Compute,
    /// Peak memory without swap/recompute (stage-dependent in-flight counts).
    Memory,
}

/// Balanced partition of nodes `a..=b` into stages `s0..s0 + k` (global stage indices, so that
/// memory uses the right in-flight counts): the min-max partition of the chosen quantity by
/// bisection on the bound with a greedy left-to-right fill (each stage takes the longest prefix
/// within the bound, leaving a node for every later stage). Returns the last node of each stage
/// but the last (`k - 1` cut positions). Needs `b - a + 1 >= k >= 1`.
pub fn balanced_cuts(
    model: &Model,
    a: usize,
    b: usize,
    s0: usize,
    k: usize,
    what: Balance,
) -> Vec<usize> {
    assert!(
        k >= 1 && b + 1 - a >= k,
        "balanced_cuts: {k} stages for nodes {a}..={b}"
    );
    if k == 1 {
        return Vec::new();
    }
    let value = |x: usize, y: usize, s: usize| match what {
        Balance::Compute => model.compute(x, y),
        Balance::Memory => model.plain_memory(x, y, s),
    };
    // Greedy fill under bound t; None if the nodes do not fit in k stages.
    let fill = |t: f64| -> Option<Vec<usize>> {
        let mut cuts = Vec::with_capacity(k - 1);
        let mut start = a;
        for j in 0..k - 1 {
            let s = s0 + j;
            let last_allowed = b - (k - 1 - j); // leave one node per later stage
            let mut end = start;
            if value(start, start, s) > t {
                return None;
            }
            if what == Balance::Compute {
                // Compute only grows with the stage: binary search the longest prefix within t
                // (the same end as the linear scan below, in O(log n)).
                let (mut lo, mut hi) = (start, last_allowed);
                while lo < hi {
                    let m = lo + (hi - lo).div_ceil(2);
                    if value(start, m, s) <= t {
                        lo = m;
                    } else {
                        hi = m - 1;
                    }
                }
                end = lo;
            }
            if what == Balance::Memory {
                end = model.plain_memory_end(start, last_allowed, s, t);
            }
            while end < last_allowed && value(start, end + 1, s) <= t {
                end += 1;
            }
            cuts.push(end);
            start = end + 1;
        }
        (value(start, b, s0 + k - 1) <= t).then_some(cuts)
    };
    let mut lo = 0.0f64;
    let mut hi = (0..k).map(|j| value(a, b, s0 + j)).fold(0.0, f64::max);
    // The whole range's value usually bounds every stage, but not always for memory: a stage
    // with a cut also holds the cut's buffers. Double the bound until the fill succeeds (any
    // large enough bound does: every stage then takes all it may).
    let mut first = fill(hi);
    for _ in 0..64 {
        if first.is_some() {
            break;
        }
        hi = if hi > 0.0 { 2.0 * hi } else { 1.0 };
        first = fill(hi);
    }
    let mut best = first.unwrap_or_else(|| (0..k - 1).map(|j| a + j).collect());
    for _ in 0..60 {
        if hi - lo <= 1e-9 * hi.max(1e-12) {
            break;
        }
        let mid = 0.5 * (lo + hi);
        match fill(mid) {
            Some(c) => {
                best = c;
                hi = mid;
            }
            None => lo = mid,
        }
    }
    best
}

/// The compute-balanced and memory-balanced positions of the cut after stage `mid` when nodes
/// `a..=b` are split over stages `lo..=hi` (Theorem 4.1's interval ends), as last nodes of
/// stage `mid`.
pub fn comp_mem_positions(
    model: &Model,
    a: usize,
    b: usize,
    lo: usize,
    hi: usize,
    mid: usize,
) -> (usize, usize) {
    let k = hi - lo + 1;
    let j = mid - lo;
    let cb = balanced_cuts(model, a, b, lo, k, Balance::Compute)[j];
    let mb = balanced_cuts(model, a, b, lo, k, Balance::Memory)[j];
    (cb, mb)
}
