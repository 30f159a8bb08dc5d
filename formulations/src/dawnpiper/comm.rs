//! Communication across DawnPiper's cuts (appendix B.2 of the paper, `docs/dawnpiper.md`).
//!
//! A cut after node `p` between stage `s` (GPU `s`) and stage `s + 1` (GPU `s + 1`) sends the
//! chain's `cut[p]` bytes forward and the same bytes of gradient back per micro-batch; the
//! evaluator charges the link `2 x cut[p] / bandwidth` per micro-batch as a resource of its own.
//! Appendix B.2 splits that volume in two for the cut positions of one BiPar walk (the window
//! between the compute- and the memory-balanced positions): **inevitable** bytes, tensors that
//! cross every position of the window whatever is chosen (produced at or before its first
//! position and read after its last, like BERT's embedding output), which are disregarded, and
//! the **avoidable** rest, which the walk keeps small.

use crate::dawnpiper::graph::Graph;
use crate::instance::{Chain, Instance};

/// Per-cut communication of one instance planned over `stages` stages, one per GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct CutComm {
    /// Bytes crossing a cut after node `p` (the chain's `cut`).
    cut: Vec<f64>,
    /// Bytes of node `i`'s output (the chain's `act[i + 1]`, the layer's `output`).
    output: Vec<f64>,
    /// Nodes whose output is last read by node `j` (only nodes read by a later node).
    by_last_use: Vec<Vec<usize>>,
    /// Output bytes crossing a cut after node `p` by the graph's edges: produced at or before
    /// `p`, last read after it.
    crossing: Vec<f64>,
    /// Bandwidth (bytes/s) of the link from GPU `s` to GPU `s + 1`.
    bandwidth: Vec<f64>,
}

impl CutComm {
    /// The cuts of `inst` (its chain `chain` and graph `graph`) for `stages` stages.
    pub fn new(inst: &Instance, chain: &Chain, graph: &Graph, stages: usize) -> CutComm {
        let n = chain.len();
        let mut last_use: Vec<Option<usize>> = vec![None; n];
        for (j, node) in graph.nodes.iter().enumerate() {
            for &i in &node.inputs {
                last_use[i] = Some(last_use[i].map_or(j, |l| l.max(j)));
            }
        }
        let mut by_last_use = vec![Vec::new(); n];
        for (i, l) in last_use.iter().enumerate() {
            if let Some(j) = *l {
                by_last_use[j].push(i);
            }
        }
        // Each read output enters the running sum where it is produced and leaves where it is
        // last read.
        let mut crossing = vec![0.0; n];
        let mut live = 0.0;
        for p in 0..n {
            if last_use[p].is_some() {
                live += chain.act[p + 1];
            }
            for &i in &by_last_use[p] {
                live -= chain.act[i + 1];
            }
            crossing[p] = live;
        }
        let gpus = inst.cluster.gpus.max(1);
        let bandwidth = (0..stages.saturating_sub(1))
            .map(|s| {
                let a = (s as u32).min(gpus - 1);
                let b = (s as u32 + 1).min(gpus - 1);
                inst.link_bandwidth(a, b)
            })
            .collect();
        CutComm {
            cut: chain.cut.clone(),
            output: chain.act[1..].to_vec(),
            by_last_use,
            crossing,
            bandwidth,
        }
    }

    /// Bytes crossing a cut after node `p`.
    pub fn bytes(&self, p: usize) -> f64 {
        self.cut[p]
    }

    /// Link time (ms per micro-batch: activation forward plus gradient back) of a cut after
    /// node `p` between stages `s` and `s + 1`, as the evaluator charges it.
    pub fn link_ms(&self, p: usize, s: usize) -> f64 {
        self.time_ms(self.cut[p], s)
    }

    /// Time (ms per micro-batch, both directions) of `bytes` over the link after stage `s`.
    pub fn time_ms(&self, bytes: f64, s: usize) -> f64 {
        2.0 * bytes / self.bandwidth[s] * 1e3
    }

    /// Inevitable bytes of the window of cut positions `w0..=w1`: outputs of nodes at or before
    /// `w0` still read after `w1`, so they cross every position of the window. Costs
    /// O(window + tensors that die inside it): the outputs crossing `w0` minus those whose last
    /// reader lies in `w0 + 1..=w1`.
    pub fn inevitable(&self, w0: usize, w1: usize) -> f64 {
        let mut bytes = self.crossing[w0];
        for j in w0 + 1..=w1 {
            bytes -= self.by_last_use[j]
                .iter()
                .filter(|&&i| i <= w0)
                .map(|&i| self.output[i])
                .sum::<f64>();
        }
        bytes.max(0.0)
    }

    /// Avoidable bytes of a cut after node `p` in the window `w0..=w1`: its volume minus the
    /// window's inevitable bytes (never negative; the chain's `cut` may count a fused node's
    /// tensors differently from the sum of outputs).
    pub fn avoidable(&self, p: usize, inevitable: f64) -> f64 {
        (self.cut[p] - inevitable).max(0.0)
    }
}
