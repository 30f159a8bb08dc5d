//! Deriving the `layer_types` extension from the layer chain when an instance lacks it.
//!
//! Rule (also in `docs/galvatron.md`): every chain layer becomes its own layer type (count 1) at
//! the trained micro-batch; per sample: `forward_ms_per_sample = forward / micro_batch`,
//! `activation_mb_per_sample[d] = saved / micro_batch / d / 2^20` for every power-of-two d up to
//! the GPU count, `checkpoint` = the layer's input per sample; `parameter_mb` = the weights at
//! the engine's 4 bytes per parameter / 2^20 (`settings::parameter_mb`; its model states are 4x
//! that); `seq_len = 1` and `hidden_size` = output bytes per sample / element size, so that the
//! engine's message sizes equal the chain's activation bytes. No embedding/head ("other") memory
//! or time. Allreduce coefficients are `1000 * 2^20 / bandwidth` ms/MB, with the inter-node bandwidth for groups that leave a node
//! (consecutive groups larger than a node; strided groups on more than one node); p2p likewise;
//! overlap coefficient 1.3 (the engine's default). Settings: one batch of
//! `micro_batch x micro_batches` samples in `micro_batches` chunks, memory budget = GPU memory,
//! tensor parallelism within a node (max tp = GPUs per node), pipelines of at most one stage per
//! layer (max pp = the largest power of two up to min(GPUs, layers)), memory unit chosen so that
//! the budget is at most 128 units (rounded up, never optimistic).

use super::profile::{Hardware, LayerType, LayerTypes, Other, OtherMemory};
use super::settings::{parameter_mb, PipelineType, Settings};
use super::MB;
use crate::instance::{Instance, Precision, ScheduleKind, Traffic};
use std::collections::BTreeMap;

/// The largest power of two at most `n` (1 for 0).
fn pow2_floor(n: u32) -> u32 {
    if n <= 1 {
        1
    } else {
        1 << (u32::BITS - 1 - n.leading_zeros())
    }
}

/// The derived extension (see the module documentation for the rule).
pub fn derive(inst: &Instance) -> LayerTypes {
    let chain = inst.chain();
    let mb = inst.micro_batch() as f64;
    let gpus = inst.cluster.gpus;
    let per_node = inst.gpus_per_node();
    let mixed = !matches!(inst.training.precision, None | Some(Precision::Fp32));
    let elem = if mixed { 2.0 } else { 4.0 };
    let degrees: Vec<u32> = (0..=gpus.trailing_zeros()).map(|k| 1 << k).collect();
    let types = (0..inst.num_layers())
        .map(|l| {
            let mut act = BTreeMap::new();
            for &d in &degrees {
                act.insert(d.to_string(), chain.saved[l] / mb / d as f64 / MB);
            }
            act.insert("checkpoint".into(), chain.act[l] / mb / MB);
            LayerType {
                name: inst.model.layers[l].name.clone(),
                layers: 1,
                seq_len: 1.0,
                hidden_size: chain.act[l + 1] / mb / elem,
                parameter_mb: parameter_mb(chain.weights[l], elem),
                activation_mb_per_sample: act,
                forward_ms_per_sample: chain.forward[l] / mb,
            }
        })
        .collect();
    let intra = inst.intra_node_bandwidth(Traffic::Collective);
    let inter = inst.inter_node_bandwidth(Traffic::Collective);
    let coe = |bw: f64| 1000.0 * MB / bw;
    let mut allreduce = BTreeMap::new();
    allreduce.insert("1".to_string(), 0.0);
    for &n in degrees.iter().filter(|&&n| n >= 2) {
        let consec = if n <= per_node { intra } else { inter };
        let strided = if gpus > per_node { inter } else { intra };
        if n == gpus {
            allreduce.insert(n.to_string(), coe(consec));
        } else {
            allreduce.insert(format!("{n}_1"), coe(consec));
            allreduce.insert(format!("{n}_0"), coe(strided));
        }
    }
    let p2p_bw = if gpus > per_node {
        inst.inter_node_bandwidth(Traffic::P2p)
    } else {
        inst.intra_node_bandwidth(Traffic::P2p)
    };
    let p2p = degrees
        .iter()
        .filter(|&&n| n >= 2)
        .map(|&n| (n.to_string(), coe(p2p_bw)))
        .collect();
    let zero = || OtherMemory {
        model_states: [("1".to_string(), 0.0)].into(),
        activation: [("1".to_string(), 0.0)].into(),
    };
    let budget_mb = inst.usable_memory() / MB;
    let settings = Settings {
        num_nodes: gpus / per_node,
        num_gpus_per_node: per_node,
        memory_constraint: memory_constraint_gb(inst),
        mixed_precision: if mixed { "bf16" } else { "fp32" }.into(),
        pipeline_type: if inst.training.schedule == ScheduleKind::Gpipe {
            PipelineType::Gpipe
        } else {
            PipelineType::PipedreamFlush
        },
        settle_bsz: (inst.micro_batch() * inst.micro_batches()) as i64,
        settle_chunk: inst.micro_batches() as i64,
        max_tp_deg: per_node,
        // A pipeline has at most one stage per layer: deeper degrees only cost search time
        // (seconds per degree on thousands of GPUs, docs/limits.md).
        max_pp_deg: pow2_floor(gpus.min(inst.num_layers().min(u32::MAX as usize) as u32)),
        memory_unit_mb: (budget_mb / 128.0).ceil().max(1.0),
        ..Settings::default()
    };
    LayerTypes {
        types,
        other: Other {
            pp_off: zero(),
            pp_on_first: zero(),
            pp_on_last: zero(),
            forward_ms_per_sample: 0.0,
        },
        hardware: Hardware {
            allreduce_ms_per_mb: allreduce,
            p2p_ms_per_mb: p2p,
            overlap_coe: 1.3,
            sp_allreduce: BTreeMap::new(),
            sp_all2all: BTreeMap::new(),
        },
        settings,
    }
}

/// The engine's `memory_constraint` (GB of 1024 MB) for the instance: its usable memory
/// ([`Instance::usable_memory`]), which the evaluator judges against.
pub fn memory_constraint_gb(inst: &Instance) -> f64 {
    inst.usable_memory() / (1024.0 * MB)
}

/// The layer types a Galvatron planner searches (see [`layer_types`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    /// The instance's extension, or the derived one, planning against the instance's budget.
    pub layer_types: LayerTypes,
    /// Whether they were derived from the chain (the instance has no extension).
    pub derived: bool,
    /// The extension's own `memory_constraint` (GB), when it differed from the budget.
    pub replaced_budget: Option<f64>,
}

/// The instance's extension, or the derived one, with the memory budget the evaluator judges
/// against ([`memory_constraint_gb`]): whatever the engine's arguments said when it was
/// imported, a plan is judged against the instance's GPU memory less a calibration's reserve
/// (`docs/galvatron.md`, "The budget").
pub fn layer_types(inst: &Instance) -> Result<Searched, crate::InputError> {
    let (mut lt, derived) = match LayerTypes::from_instance(inst)? {
        Some(lt) => (lt, false),
        None => {
            let lt = derive(inst);
            lt.check(inst.num_layers())?;
            (lt, true)
        }
    };
    let budget = memory_constraint_gb(inst);
    let replaced_budget =
        (lt.settings.memory_constraint != budget).then_some(lt.settings.memory_constraint);
    lt.settings.memory_constraint = budget;
    Ok(Searched {
        layer_types: lt,
        derived,
        replaced_budget,
    })
}
