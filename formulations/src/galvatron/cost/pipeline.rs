//! The iteration time of an assignment (`pipeline_costmodel`).

use super::{layer_time, real_chunk};
use crate::galvatron::profile::LayerTypes;
use crate::galvatron::strategy::Strategy;

/// Inputs of the engine's `pipeline_costmodel` besides the per-layer strategies.
#[derive(Debug, Clone)]
pub struct PipelineCall<'a> {
    /// Layers per stage.
    pub partition: &'a [usize],
    /// Micro-batch count per layer type (before the engine's `get_real_chunk`).
    pub chunks: &'a [u64],
    /// Global batch size.
    pub bsz: u64,
    /// Smallest tp degree of the search.
    pub min_tp: u32,
    /// Other (embedding/head) time per stage for the chosen vocab tp (seconds).
    pub other_time: &'a [f64],
}

/// Per-stage costs and the iteration time (seconds) of the engine's `pipeline_costmodel`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineCost {
    /// Per-stage time with gradient reduction, one micro-batch (`stage_costs_bsz_chunked`).
    pub stage_with_reduce: Vec<f64>,
    /// Per-stage compute time of one micro-batch, other layers included.
    pub stage_compute: Vec<f64>,
    /// Micro-batches.
    pub chunks: u64,
    /// Iteration time (seconds).
    pub iteration: f64,
}

/// The engine's `pipeline_costmodel` (Eq. 9 plus the engine's bubble bound and reduce tail).
pub fn pipeline_cost(
    lt: &LayerTypes,
    strategies: &[Strategy],
    c: &PipelineCall,
) -> Result<PipelineCost, String> {
    let types = lt.type_of_layers();
    let s0 = strategies[0];
    let local = (c.bsz as f64 / (s0.tp * s0.dp / c.min_tp) as f64) as u64;
    let chunks: Vec<u64> = c.chunks.iter().map(|&ch| real_chunk(local, ch)).collect();
    let max_chunk = *chunks.iter().max().unwrap_or(&1);
    let mut per_reduce = Vec::with_capacity(strategies.len());
    let mut per_compute = Vec::with_capacity(strategies.len());
    for (l, s) in strategies.iter().enumerate() {
        let b = c.bsz as f64 / chunks[types[l]] as f64;
        per_reduce.push(layer_time(lt, types[l], s, b, false)?);
        per_compute.push(layer_time(lt, types[l], s, b, true)?);
    }
    let sums = |v: &[f64]| {
        let mut out = Vec::new();
        let mut start = 0;
        for &n in c.partition {
            out.push(v[start..start + n].iter().sum::<f64>());
            start += n;
        }
        out
    };
    let reduce = sums(&per_reduce);
    let mut compute = sums(&per_compute);
    for (i, t) in c.other_time.iter().enumerate() {
        compute[i] += t;
    }
    let pp = c.partition.len();
    let mc = max_chunk as f64;
    let last = compute[pp - 1];
    let mut result = compute.iter().sum::<f64>() + last * (mc - 1.0);
    if lt.settings.quirks.bubble_bound {
        let c0 = compute[0];
        let rest: f64 = compute[1..].iter().sum();
        let w = ((pp - 1).min(max_chunk as usize - 1)) as f64;
        let bound = f64::max(w * c0 * 1.0 / 3.0, rest * 1.0 / 3.0)
            + f64::max(w * c0 * 2.0 / 3.0, rest * 2.0 / 3.0)
            + c0 * f64::max(0.0, mc + 1.0 - pp as f64);
        result = result.max(bound);
    }
    let mut tail = f64::NEG_INFINITY;
    let mut acc = 0.0;
    for i in 0..pp {
        acc += compute[i];
        tail = tail.max(reduce[i] - acc);
    }
    result += tail.max(0.0);
    Ok(PipelineCost {
        stage_with_reduce: reduce,
        stage_compute: compute,
        chunks: max_chunk,
        iteration: result,
    })
}
