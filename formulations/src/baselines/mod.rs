//! The baselines' problems: contiguous partitions of the chain, one GPU per stage (GPU s for
//! stage s), minimizing the largest stage sum of a per-layer quantity: compute time, parameter
//! bytes, or memory under the reference model with the schedule's in-flight counts
//! ([`in_flight`]).

use crate::cost::{in_flight, state_copies};
use crate::instance::Instance;

/// Prefix sums over the chain, for O(1) stage sums of layers `k..l` (half-open).
#[derive(Debug, Clone)]
pub struct StageSums {
    compute: Vec<f64>,
    weights: Vec<f64>,
    saved: Vec<f64>,
    cut: Vec<f64>,
}

impl StageSums {
    /// The sums of `inst`'s chain.
    pub fn new(inst: &Instance) -> StageSums {
        let c = inst.chain();
        let sums = |v: &dyn Fn(usize) -> f64| {
            let mut p = vec![0.0; c.len() + 1];
            for i in 0..c.len() {
                p[i + 1] = p[i] + v(i);
            }
            p
        };
        StageSums {
            compute: sums(&|i| c.forward[i] + c.backward[i]),
            weights: sums(&|i| c.weights[i]),
            saved: sums(&|i| c.saved[i]),
            cut: c.cut.clone(),
        }
    }

    /// Forward + backward time of layers `k..l` (ms).
    pub fn compute(&self, k: usize, l: usize) -> f64 {
        self.compute[l] - self.compute[k]
    }

    /// Parameter bytes of layers `k..l`.
    pub fn weights(&self, k: usize, l: usize) -> f64 {
        self.weights[l] - self.weights[k]
    }

    /// Memory of stage `s` (of `p`) holding layers `k..l` under the reference model with one GPU
    /// per stage and no checkpointing: model states + in-flight x saved activations + 2 x the cut
    /// on each inner side.
    pub fn memory(&self, inst: &Instance, p: usize, s: usize, k: usize, l: usize) -> f64 {
        let kind = inst.training.schedule;
        let in_flight = f64::from(in_flight(kind, p, s, inst.micro_batches()));
        let mut mem = self.weights(k, l) * state_copies(inst, kind)
            + in_flight * (self.saved[l] - self.saved[k]);
        if k > 0 {
            mem += 2.0 * self.cut[k - 1];
        }
        if l < self.cut.len() {
            mem += 2.0 * self.cut[l - 1];
        }
        mem
    }
}

/// The largest of `f(first, last + 1)` over the stages ending at `ends` (inclusive ends).
pub fn max_stage<F: Fn(usize, usize) -> f64>(ends: &[usize], f: F) -> f64 {
    let mut first = 0;
    let mut worst: f64 = 0.0;
    for &e in ends {
        worst = worst.max(f(first, e + 1));
        first = e + 1;
    }
    worst
}
