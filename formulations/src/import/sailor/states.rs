//! What the instance's notes and training settings say about the profiled run's data type and
//! optimizer.

use crate::instance::Precision;

/// `optimizer_state_factor` (extra weight-sized copies) and its explanation for the profiled data
/// type and optimizer (SGD when `sgd`, else Adam). In fp32, the copies beyond the optimizer's
/// are DeepSpeed's: its gradient reduction flattens every gradient into one new buffer at each
/// step (`allreduce_bucket`), which the caching allocator keeps (`docs/sailor.md`).
pub fn optimizer_states(precision: Precision, sgd: bool) -> (f64, &'static str) {
    match (precision, sgd) {
        (Precision::Fp32, true) => (2.0, "SGD in fp32: the momentum and DeepSpeed's flat copy of the gradients, 8 bytes per parameter beyond the fp32 weight and gradient"),
        (Precision::Fp32, false) => (3.0, "Adam in fp32: two fp32 moments and DeepSpeed's flat copy of the gradients, 12 bytes per parameter beyond the fp32 weight and gradient"),
        (_, true) => (4.0, "SGD: fp32 master weights and gradients, 8 bytes per parameter beyond the fp16 weight and gradient"),
        (_, false) => (8.0, "Adam: fp32 master weights, two fp32 moments and fp32 gradient accumulation, 16 bytes per parameter beyond the fp16 weight and gradient"),
    }
}

/// The instance note's sentence on where the sizes come from.
pub fn sizes_note(precision: Precision) -> String {
    let dtype = if precision == Precision::Fp32 {
        "fp32"
    } else {
        "fp16"
    };
    format!("Sizes: llm_info.json, in the profiled run's data type ({dtype}); weights = params_bytes, output = act_output_bytes per sample, saved = act_mem_floats x 4 bytes per sample (the profiler's allocation).")
}
