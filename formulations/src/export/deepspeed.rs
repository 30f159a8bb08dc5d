//! DeepSpeed: `ds_config.json` (batch, gradient accumulation, ZeRO stage: the stages' one
//! [`Stage::zero_stage`](crate::Stage::zero_stage), activation checkpointing) and the
//! `PipelineModule` arguments of the pipeline split. DeepSpeed's pipeline engine has no tensor
//! parallelism of its own, one data-parallel degree for every stage, ZeRO
//! stages 0 and 1 only under pipelining, and checkpoints groups of
//! `activation_checkpoint_interval` layers (1: every layer). Stage boundaries are given as
//! DeepSpeed's `parts` (stage `s` holds layers `parts[s]..parts[s+1]`); when they are what
//! `partition_method="uniform"` computes, that method is named.

use super::layout::{self, Layout};
use super::RuntimePlan;
use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule};
use serde_json::json;

/// Why DeepSpeed cannot run the plan as it is (empty: it can).
pub fn limits(inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
    let plan = &rp.plan;
    let mut why = Vec::new();
    match plan.schedule {
        Schedule::Async { .. } => {
            why.push("the schedule is asynchronous; DeepSpeed trains synchronously (1F1B)".into())
        }
        Schedule::Gpipe { .. } => {
            why.push("the schedule is GPipe; DeepSpeed's pipeline engine runs 1F1B".into())
        }
        Schedule::OneFOneB { .. } => {}
    }
    match layout::standard(plan) {
        Ok(lay) => {
            if let Some(s) = plan.stages.iter().position(|s| s.tp > 1) {
                why.push(format!(
                    "stage {s} is {}-way tensor parallel; DeepSpeed's pipeline engine has no \
                     tensor parallelism (export to megatron for Megatron-DeepSpeed)",
                    plan.stages[s].tp
                ));
            }
            let dp = plan.stages[0].dp;
            let zero = layout::zero_stages(plan);
            if zero.len() > 1 {
                why.push(format!(
                    "stages run at ZeRO stages {}; DeepSpeed's ZeRO stage applies to the whole \
                     model",
                    super::distinct(&zero.iter().map(|&z| u32::from(z)).collect::<Vec<_>>())
                ));
            }
            if let Some(&z) = zero.iter().max().filter(|&&z| z > 1 && lay.pp() > 1) {
                why.push(format!(
                    "layers run at ZeRO stage {z}; DeepSpeed's pipeline engine supports ZeRO \
                     stages 0 and 1 only"
                ));
            }
            let (micro, _) = layout::batch(inst, plan);
            if micro % dp != 0 {
                why.push(format!(
                    "micro-batches of {micro} samples do not split over {dp} data-parallel ranks"
                ));
            }
        }
        Err(e) => why.push(e),
    }
    let ck = plan
        .stages
        .iter()
        .map(|s| s.checkpoint.len())
        .sum::<usize>();
    if ck != 0 && ck != inst.num_layers() {
        why.push(format!(
            "{ck} of {} layers are checkpointed; DeepSpeed checkpoints every layer \
             (activation_checkpoint_interval 1) or none",
            inst.num_layers()
        ));
    }
    why.extend(layout::memory_actions(plan, "DeepSpeed"));
    why
}

/// The nearest plan DeepSpeed runs: [`layout::nearest`] with tp 1 and one ZeRO stage (as most
/// layers), at most ZeRO-1 under pipelining, 1F1B, the micro-batch rounded to a multiple of dp,
/// every layer checkpointed if any was.
pub fn nearest(inst: &Instance, plan: &Plan) -> Plan {
    let mut p = layout::nearest(plan, false, true);
    let pp = p.positions().map_or(1, |v| v.last().map_or(0, |&x| x) + 1);
    let any_ck = p.stages.iter().any(|s| !s.checkpoint.is_empty());
    for st in &mut p.stages {
        st.dp *= st.tp;
        st.tp = 1;
        let zero = if st.dp > 1 { st.zero_stage() } else { 0 };
        st.set_zero_stage(if pp > 1 { zero.min(1) } else { zero });
        st.checkpoint = if any_ck {
            (st.first..=st.last).collect()
        } else {
            Vec::new()
        };
    }
    let dp = p.stages[0].dp;
    let (micro, m) = layout::batch(inst, &p);
    p.schedule = Schedule::OneFOneB {
        micro_batches: Some(m),
        micro_batch: Some(layout::micro_for_dp(micro, dp)),
    };
    p
}

/// DeepSpeed's `partition_uniform(num_items, num_parts)` (deepspeed/runtime/utils.py).
pub fn partition_uniform(items: usize, parts: usize) -> Vec<usize> {
    if items <= parts {
        return (0..=parts).map(|p| p.min(items)).collect();
    }
    let chunk = items / parts;
    let residual = items - chunk * parts;
    let mut out: Vec<usize> = (0..=parts).map(|p| p * chunk).collect();
    for i in 0..residual {
        for x in out.iter_mut().skip(i + 1) {
            *x += 1;
        }
    }
    out
}

/// `{"ds_config": .., "pipeline_module": ..}` of an expressible plan.
pub fn write(inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
    let plan = &rp.plan;
    let lay: Layout = layout::standard(plan).map_err(|e| InputError::field("plan.stages", e))?;
    let dp = plan.stages[0].dp;
    let (micro, m) = layout::batch(inst, plan);
    let zero = match layout::zero_stages(plan).as_slice() {
        [z] => *z,
        _ => 0,
    };
    let checkpointed = plan.stages.iter().any(|s| !s.checkpoint.is_empty());
    let mut parts = lay.firsts(plan);
    parts.push(inst.num_layers());
    let uniform = parts == partition_uniform(inst.num_layers(), lay.pp());
    let mut ds = json!({
        "train_batch_size": micro as u64 * m as u64,
        "train_micro_batch_size_per_gpu": micro / dp,
        "gradient_accumulation_steps": m,
        "zero_optimization": {"stage": zero},
    });
    if checkpointed {
        ds["activation_checkpointing"] = json!({
            "partition_activations": false,
            "contiguous_memory_optimization": false,
            "cpu_checkpointing": false,
        });
    }
    let doc = json!({
        "ds_config": ds,
        "pipeline_module": {
            "num_stages": lay.pp(),
            "partition_method": if uniform { json!("uniform") } else { json!(null) },
            "parts": parts,
            "activation_checkpoint_interval": if checkpointed { 1 } else { 0 },
        },
    });
    Ok(serde_json::to_string_pretty(&doc).expect("serializable"))
}
