//! MemOpt: the Capuchin-style swap/recompute cost model of one stage (`docs/dawnpiper.md`).
//!
//! Given a stage (nodes `a..=b`, stage index `s`) that does not fit in GPU memory:
//! 1. **Free swaps**: tensors whose round trip over PCIe (2 d_i) hides inside their idle time
//!    (FreeTime = idle_i - 2 d_i >= 0), largest FreeTime first, while the host link keeps up
//!    with the stage (sum d_i <= compute): no overhead.
//! 2. **Cheapest first**: for every remaining candidate the cheaper of swap and recompute by
//!    memory saved per ms of added time (MSPS), picked greedily (lazy re-evaluation of the
//!    marginal cost against the current aggregate), until the stage fits.
//!
//! Memory and time are the evaluator's (`cost::stage_cost_with`): the returned actions, costed by
//! the evaluator, give exactly the returned `time` and `peak`.

use super::balance::Model;
use crate::memory_limit;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What MemOpt may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// Swapping (also needs `cluster.pcie`).
    pub swap: bool,
    /// Recomputation.
    pub recompute: bool,
}

impl Allowed {
    /// Both actions.
    pub const ALL: Allowed = Allowed {
        swap: true,
        recompute: true,
    };
    /// No memory optimization.
    pub const NONE: Allowed = Allowed {
        swap: false,
        recompute: false,
    };
}

/// MemOpt's result for one stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// Nodes whose saved tensor is swapped (sorted).
    pub swap: Vec<usize>,
    /// Nodes whose saved tensor is recomputed (sorted).
    pub recompute: Vec<usize>,
    /// Compute + overhead per micro-batch (ms): the evaluator's forward + backward.
    pub time: f64,
    /// Added time of the actions (recompute + swap stall, ms).
    pub overhead: f64,
    /// Peak memory (bytes) with `g` micro-batches in flight.
    pub peak: f64,
    /// Whether the peak is within the GPU memory.
    pub fits: bool,
}

impl StagePlan {
    /// True when the stage needed swap or recompute.
    pub fn optimized(&self) -> bool {
        !self.swap.is_empty() || !self.recompute.is_empty()
    }
}

#[derive(PartialEq)]
struct Cand {
    msps: f64,
    node: usize,
    swap: bool,
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        // Highest MSPS first; ties: lower node, recompute before swap (deterministic).
        self.msps
            .total_cmp(&o.msps)
            .then(o.node.cmp(&self.node))
            .then(o.swap.cmp(&self.swap))
    }
}

/// Running aggregates of a stage's actions, mirroring `cost::stage_cost_with` (w = 1).
struct State<'m, 'a> {
    m: &'m Model<'a>,
    a: usize,
    g: f64,
    base_peak: f64,
    compute: f64,
    pcie: Option<f64>,
    swapped: f64,
    rec_bytes: f64,
    rec_time: f64,
    longest_run: f64,
    exposed: f64,
    transfer: f64,
    rec: Vec<bool>,
    used: Vec<bool>,
}

impl State<'_, '_> {
    fn stall(&self, exposed: f64, transfer: f64, rec_time: f64) -> f64 {
        exposed.max(transfer - (self.compute + rec_time)).max(0.0)
    }
    fn time(&self) -> f64 {
        self.compute + self.rec_time + self.stall(self.exposed, self.transfer, self.rec_time)
    }
    fn peak(&self) -> f64 {
        // states + buffers + workspace + g x (act - removed) + removed swaps + longest run.
        self.base_peak - self.g * (self.swapped + self.rec_bytes) + self.swapped + self.longest_run
    }
    fn d(&self, i: usize) -> f64 {
        self.pcie
            .map_or(f64::INFINITY, |p| self.m.chain.saved[i] / p * 1e3)
    }
    /// Run of recomputed nodes that `i` would join (bytes, including `i`).
    fn run_with(&self, i: usize) -> f64 {
        let saved = &self.m.chain.saved;
        let mut run = saved[i];
        let mut j = i;
        while j > self.a && self.rec[j - 1 - self.a] {
            j -= 1;
            run += saved[j];
        }
        let mut j = i + 1;
        while j - self.a < self.rec.len() && self.rec[j - self.a] {
            run += saved[j];
            j += 1;
        }
        run
    }
    /// (memory saved, time added) by swapping or recomputing `i` now.
    fn gain(&self, i: usize, swap: bool) -> (f64, f64) {
        let saved = self.m.chain.saved[i];
        let now = self.time();
        if swap {
            let d = self.d(i);
            let exposed = self.exposed + (2.0 * d - self.m.idle[i]).max(0.0);
            let t = self.compute
                + self.rec_time
                + self.stall(exposed, self.transfer + d, self.rec_time);
            ((self.g - 1.0) * saved, t - now)
        } else {
            let run = self.run_with(i);
            let rt = self.rec_time + self.m.actions.recompute[i];
            let t = self.compute + rt + self.stall(self.exposed, self.transfer, rt);
            (self.g * saved - (run - self.longest_run).max(0.0), t - now)
        }
    }
    fn apply(&mut self, i: usize, swap: bool) {
        let saved = self.m.chain.saved[i];
        self.used[i - self.a] = true;
        if swap {
            let d = self.d(i);
            self.exposed += (2.0 * d - self.m.idle[i]).max(0.0);
            self.transfer += d;
            self.swapped += saved;
        } else {
            self.longest_run = self.longest_run.max(self.run_with(i));
            self.rec[i - self.a] = true;
            self.rec_time += self.m.actions.recompute[i];
            self.rec_bytes += saved;
        }
    }
}

fn msps(saving: f64, added: f64) -> f64 {
    if saving <= 0.0 {
        f64::NEG_INFINITY
    } else if added <= 1e-12 {
        f64::INFINITY
    } else {
        saving / added
    }
}

/// MemOpt for stage `s` = nodes `a..=b` of `model`, with the actions `allowed`.
pub fn memopt(model: &Model, a: usize, b: usize, s: usize, allowed: Allowed) -> StagePlan {
    memopt_g(model, a, b, s, model.in_flight(s), allowed)
}

/// [`memopt`] with `g` micro-batches in flight (e.g. the evaluator's count for an async stage).
pub fn memopt_g(
    model: &Model,
    a: usize,
    b: usize,
    s: usize,
    g: u32,
    allowed: Allowed,
) -> StagePlan {
    let limit = memory_limit::cap(model.memory);
    let base_peak = model.plain_memory_g(a, b, s, g);
    let compute = model.compute(a, b);
    let pcie = model.actions.pcie.filter(|_| allowed.swap);
    let mut st = State {
        m: model,
        a,
        g: g as f64,
        base_peak,
        compute,
        pcie,
        swapped: 0.0,
        rec_bytes: 0.0,
        rec_time: 0.0,
        longest_run: 0.0,
        exposed: 0.0,
        transfer: 0.0,
        rec: vec![false; b + 1 - a],
        used: vec![false; b + 1 - a],
    };
    if base_peak > limit && (pcie.is_some() || allowed.recompute) {
        st.hidden_swaps(b, limit);
        st.cheapest_first(b, limit, allowed.recompute);
    }
    let swap: Vec<usize> = (a..=b)
        .filter(|&i| st.used[i - a] && !st.rec[i - a])
        .collect();
    let recompute: Vec<usize> = (a..=b).filter(|&i| st.rec[i - a]).collect();
    let time = st.time();
    let peak = st.peak();
    StagePlan {
        overhead: time - compute,
        fits: peak <= limit,
        swap,
        recompute,
        time,
        peak,
    }
}

impl State<'_, '_> {
    /// Whether node `i`'s saved tensor may be swapped: a host link, two or more micro-batches
    /// in flight, bytes to move, and the graph allows it.
    fn swappable(&self, i: usize) -> bool {
        self.pcie.is_some()
            && self.g >= 2.0
            && self.m.chain.saved[i] > 0.0
            && self.m.graph_swappable(i)
    }

    /// Phase 1, up to node `b`: swaps that hide in their idle time, largest free time first,
    /// while the peak exceeds `limit` and the link keeps up with the compute.
    fn hidden_swaps(&mut self, b: usize, limit: f64) {
        if self.pcie.is_none() {
            return;
        }
        let mut free: Vec<(f64, usize)> = (self.a..=b)
            .filter(|&i| self.swappable(i))
            .map(|i| (self.m.idle[i] - 2.0 * self.d(i), i))
            .filter(|&(f, _)| f >= 0.0)
            .collect();
        free.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        for (_, i) in free {
            if self.peak() <= limit {
                break;
            }
            if self.transfer + self.d(i) <= self.compute + self.rec_time {
                self.apply(i, true);
            }
        }
    }

    /// Phase 2, up to node `b`: the action saving the most memory per ms added, re-evaluated
    /// lazily, until the peak is within `limit` or no action is left.
    fn cheapest_first(&mut self, b: usize, limit: f64, recompute: bool) {
        let mut heap = BinaryHeap::new();
        for i in self.a..=b {
            if self.used[i - self.a] || self.m.chain.saved[i] <= 0.0 {
                continue;
            }
            for swap in [false, true] {
                let ok = if swap { self.swappable(i) } else { recompute };
                if ok {
                    let (sv, t) = self.gain(i, swap);
                    heap.push(Cand {
                        msps: msps(sv, t),
                        node: i,
                        swap,
                    });
                }
            }
        }
        while self.peak() > limit {
            let Some(c) = heap.pop() else { break };
            if self.used[c.node - self.a] {
                continue;
            }
            let (sv, t) = self.gain(c.node, c.swap);
            let now = msps(sv, t);
            if now == f64::NEG_INFINITY {
                continue;
            }
            if now < c.msps && heap.peek().is_some_and(|n| n.msps > now) {
                heap.push(Cand { msps: now, ..c });
                continue;
            }
            self.apply(c.node, c.swap);
        }
    }
}
