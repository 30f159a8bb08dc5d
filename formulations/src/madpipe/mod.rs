//! The chain quantities of the MadPipe family (docs/madpipe.md, MadPipe paper §3), stated in the
//! terms of the neutral evaluator's cost model so that every claim of the family can equal the
//! evaluation of its plan.
//!
//! Indices are 0-based and ranges half-open: layers `k..l`. With weight versions v and optimizer
//! factor o, a GPU holding layers `k..l` and keeping `g` micro-batches in flight needs
//!
//! `M(k, l, g) = (v + 1 + o) W(k..l) + g saved(k..l) + 2 cut(k-1) [k > 0] + 2 cut(l-1) [l < L]`
//!
//! which is the paper's `Sum (3 W_i + g a_{i-1}) + 2 (a_{k-1} + a_l)` for v = 2, o = 0 and the
//! default `saved` (a layer's input) and `cut` (its output). The buffer terms are dropped at the
//! ends of the chain, as in the paper. The cut after layer `l - 1` takes
//! `C(l) = 2 cut(l-1) / beta` per micro-batch on its link (activation forward, gradient back).

use crate::cost::state_copies;
use crate::instance::{Chain, Instance, ScheduleKind, Traffic};

/// The chain of an instance in MadPipe's terms, for asynchronous schedules on one link bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct MadChain {
    /// The evaluator's chain (times and sizes at the trained micro-batch).
    pub chain: Chain,
    /// Weight-sized copies of model states: versions + 1 gradient + optimizer factor.
    pub state_copies: f64,
    /// Link bandwidth beta between two stages (bytes/s): the intra-node bandwidth when every GPU
    /// is in one node, else the inter-node one (the slowest link a cut may cross).
    pub beta: f64,
    /// GPU memory (bytes).
    pub memory: f64,
    /// Prefix sums of weights and saved bytes, for O(1) range sums.
    w_prefix: Vec<f64>,
    s_prefix: Vec<f64>,
}

impl MadChain {
    /// The chain of `inst` under its asynchronous schedule settings.
    pub fn new(inst: &Instance) -> MadChain {
        let chain = inst.chain();
        let n = chain.len();
        let mut w_prefix = vec![0.0; n + 1];
        let mut s_prefix = vec![0.0; n + 1];
        for i in 0..n {
            w_prefix[i + 1] = w_prefix[i] + chain.weights[i];
            s_prefix[i + 1] = s_prefix[i] + chain.saved[i];
        }
        let all: Vec<u32> = (0..inst.cluster.gpus).collect();
        MadChain {
            state_copies: state_copies(inst, ScheduleKind::Async),
            beta: inst.group_bandwidth(&all, Traffic::P2p),
            memory: inst.usable_memory(),
            chain,
            w_prefix,
            s_prefix,
        }
    }

    /// The same chain over blocks of consecutive layers ([`Chain::merged`]): block `b` ends at
    /// layer `ends[b]`.
    pub fn merged(&self, ends: &[usize]) -> MadChain {
        let chain = self.chain.merged(ends);
        let mut w_prefix = vec![0.0];
        let mut s_prefix = vec![0.0];
        for &last in ends {
            w_prefix.push(self.w_prefix[last + 1]);
            s_prefix.push(self.s_prefix[last + 1]);
        }
        MadChain {
            chain,
            w_prefix,
            s_prefix,
            ..*self
        }
    }

    /// Number of layers L.
    pub fn len(&self) -> usize {
        self.chain.len()
    }

    /// True for an empty chain (never for a validated instance).
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// U(k..l): forward + backward time of layers `k..l` per micro-batch (ms).
    pub fn u(&self, k: usize, l: usize) -> f64 {
        self.chain.compute(k, l)
    }

    /// C(l): load of the link carrying the cut after layer `l - 1` (forward activation plus
    /// backward gradient, ms per micro-batch); 0 at the ends of the chain (`l = 0` or `l = L`).
    pub fn c(&self, l: usize) -> f64 {
        if l == 0 || l >= self.len() {
            0.0
        } else {
            2.0 * self.transfer(l)
        }
    }

    /// One-way transfer time of the cut after layer `l - 1` (ms).
    pub fn transfer(&self, l: usize) -> f64 {
        self.chain.cut[l - 1] / self.beta * 1e3
    }

    /// Model states of layers `k..l` (bytes).
    pub fn states(&self, k: usize, l: usize) -> f64 {
        self.state_copies * (self.w_prefix[l] - self.w_prefix[k])
    }

    /// Bytes stored per in-flight micro-batch by layers `k..l`.
    pub fn activations(&self, k: usize, l: usize) -> f64 {
        self.s_prefix[l] - self.s_prefix[k]
    }

    /// Communication buffers of a stage `k..l` that has neighbours on other GPUs on both sides
    /// (none at the ends of the chain).
    pub fn buffers(&self, k: usize, l: usize) -> f64 {
        let before = if k > 0 {
            2.0 * self.chain.cut[k - 1]
        } else {
            0.0
        };
        let after = if l < self.len() {
            2.0 * self.chain.cut[l - 1]
        } else {
            0.0
        };
        before + after
    }

    /// M(k, l, g) without the communication buffers: model states plus `g` micro-batches of
    /// activations. It only grows as `k` decreases (states, activations and `g` all grow).
    pub fn core(&self, k: usize, l: usize, g: f64) -> f64 {
        self.states(k, l) + g * self.activations(k, l)
    }

    /// M(k, l, g): memory of layers `k..l` alone on a GPU keeping `g` micro-batches in flight.
    pub fn m(&self, k: usize, l: usize, g: f64) -> f64 {
        self.core(k, l, g) + self.buffers(k, l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::evaluate;
    use crate::instance::{Cluster, Layer};
    use crate::plan::{Plan, Schedule};

    /// Batch 4, input 3 MiB; two GPUs of 1 GiB at 1 GB/s.
    fn inst() -> Instance {
        let mib = 1024.0 * 1024.0;
        let layers = vec![
            Layer::new("a", 1.0, 2.0, 10.0 * mib, 2.0 * mib),
            Layer::new("b", 2.0, 3.0, 20.0 * mib, mib),
            Layer::new("c", 1.0, 1.0, 5.0 * mib, 4.0 * mib),
            Layer::new("d", 3.0, 4.0, mib, mib),
        ];
        let cluster = Cluster::single_node(2, 1024.0 * mib, 1e9);
        let inst = Instance::new("", 4, 3.0 * mib, layers, cluster);
        inst.validate().unwrap();
        inst
    }

    #[test]
    fn memory_and_loads_equal_the_evaluators() {
        let inst = inst();
        let mc = MadChain::new(&inst);
        assert_eq!(mc.u(0, 4), 17.0);
        assert!((mc.c(2) - 2.0 * 1024.0 * 1024.0 / 1e9 * 1e3).abs() < 1e-12);
        assert_eq!(mc.c(0), 0.0);
        assert_eq!(mc.c(4), 0.0);
        let plan = Plan::contiguous(&[1, 3], Schedule::default_for(&inst));
        let ev = evaluate(&inst, &plan).unwrap();
        let (g0, g1) = (ev.in_flight[0] as f64, ev.in_flight[1] as f64);
        assert!((ev.peak_memory[0] - mc.m(0, 2, g0)).abs() < 1e-6);
        assert!((ev.peak_memory[1] - mc.m(2, 4, g1)).abs() < 1e-6);
        let mib = 1024.0 * 1024.0;
        // Paper form: 3 W + g a_{k-1} + 2 (a_{k-1} + a_l), buffers dropped at the ends.
        assert!((mc.m(0, 2, 2.0) - (3.0 * 30.0 + 2.0 * 5.0 + 2.0 * 1.0) * mib).abs() < 1e-6);
    }

    #[test]
    fn merged_blocks_keep_every_whole_block_sum() {
        let inst = inst();
        let mc = MadChain::new(&inst);
        // Blocks {a}, {b, c}, {d}.
        let ends = [0, 2, 3];
        let b = mc.merged(&ends);
        assert_eq!(b.len(), 3);
        let first = |k: usize| if k == 0 { 0 } else { ends[k - 1] + 1 };
        for k in 0..3 {
            for l in k + 1..=3 {
                let (lk, ll) = (first(k), ends[l - 1] + 1);
                assert_eq!(b.u(k, l), mc.u(lk, ll));
                assert_eq!(b.c(k), mc.c(lk));
                for g in [1.0, 3.0] {
                    assert_eq!(b.m(k, l, g), mc.m(lk, ll, g), "blocks {k}..{l}");
                }
            }
        }
    }
}
