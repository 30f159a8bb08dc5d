//! What fills each GPU at its evaluated peak: the parts of `docs/evaluator.md` §2 ("Memory per
//! GPU of the stage") for a whole plan.

use super::Evaluation;
use crate::cost::stage_costs;
use crate::instance::Instance;
use crate::plan::Plan;
use serde::Serialize;

/// The evaluated peak of one GPU, by part (bytes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryBreakdown {
    /// GPU id.
    pub gpu: u32,
    /// Weight versions of the GPU's stages.
    pub weights: f64,
    /// Gradients.
    pub gradients: f64,
    /// Optimizer state (`training.optimizer_state_factor` weight-sized copies).
    pub optimizer: f64,
    /// Stored activations of the micro-batches in flight at the peak.
    pub activations: f64,
    /// Communication buffers of the cuts.
    pub buffers: f64,
    /// A checkpointed or recomputed layer re-materialized, swapped tensors in transit,
    /// workspaces.
    pub transient: f64,
    /// The calibration's reserve (CUDA context, allocator).
    pub reserved: f64,
}

impl MemoryBreakdown {
    /// Sum of the parts: the evaluated peak.
    pub fn total(&self) -> f64 {
        self.weights
            + self.gradients
            + self.optimizer
            + self.activations
            + self.buffers
            + self.transient
            + self.reserved
    }
}

/// The breakdown of every GPU `plan` uses, given its evaluation `ev` (activations are what is
/// left of the evaluated peak, so the parts add up to it).
pub fn memory_breakdown(inst: &Instance, plan: &Plan, ev: &Evaluation) -> Vec<MemoryBreakdown> {
    let (inst, plan) = super::judged(inst, plan);
    let plan = &plan;
    let costs = stage_costs(&inst, &inst.chain(), plan);
    let reserved = inst.calibration().reserved_memory;
    plan.gpus()
        .into_iter()
        .map(|g| {
            let mut b = MemoryBreakdown {
                gpu: g,
                weights: 0.0,
                gradients: 0.0,
                optimizer: 0.0,
                activations: 0.0,
                buffers: 0.0,
                transient: 0.0,
                reserved,
            };
            for (s, st) in plan.stages.iter().enumerate() {
                if st.gpus.contains(&g) {
                    let c = &costs[s];
                    b.weights += c.state_parts.weights;
                    b.gradients += c.state_parts.gradients;
                    b.optimizer += c.state_parts.optimizer;
                    b.buffers += c.buffers;
                    b.transient = b.transient.max(c.transient);
                }
            }
            let peak = ev.peak_memory.get(g as usize).copied().unwrap_or(0.0);
            b.activations = (peak - b.total()).max(0.0);
            b
        })
        .collect()
}
