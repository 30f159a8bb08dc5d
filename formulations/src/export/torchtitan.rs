//! torchtitan: the `[parallelism]` section of a job's TOML file (degrees, pipeline split points,
//! schedule, micro-batch size), with the `[training]` batch and the `[activation_checkpoint]`
//! mode it implies. torchtitan runs one tp degree and one data-parallel layout everywhere:
//! `data_parallel_shard_degree` (FSDP, sharded model states) or
//! `data_parallel_replicate_degree` (replicas). A split point is the name of the module a stage
//! starts with: the instance's layer names, which must be the model's module names (torchtitan's
//! Llama: `layers.<i>`). Activation checkpointing wraps transformer blocks: all (`full`), none,
//! or every k-th block of each stage (`selective` with a number).

use super::layout::{self, Layout, Role};
use super::RuntimePlan;
use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};

/// Why torchtitan cannot run the plan as it is (empty: it can).
pub fn limits(inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
    let plan = &rp.plan;
    let mut why = Vec::new();
    if let Schedule::Async { .. } = plan.schedule {
        why.push("the schedule is asynchronous; torchtitan trains synchronously".to_string());
    }
    match layout::standard(plan) {
        Ok(_) => {
            let tp: Vec<u32> = plan.stages.iter().map(|s| s.tp).collect();
            if tp.iter().any(|&t| t != tp[0]) {
                why.push(format!(
                    "tensor-parallel degrees differ between layers ({}); torchtitan uses one \
                     tensor_parallel_degree",
                    super::distinct(&tp)
                ));
            }
            if plan
                .stages
                .iter()
                .any(|s| layout::consecutive(s) != Some(true))
            {
                why.push("a stage's tp groups are strided; torchtitan's are consecutive".into());
            }
            let dp = plan.stages[0].dp;
            if let Some(s) = plan.stages.iter().position(Stage::divides_part_of_states) {
                why.push(format!(
                    "stage {s} divides part of its model states (ZeRO-{}); torchtitan's data \
                     parallelism replicates them all or shards them all (FSDP)",
                    plan.stages[s].zero
                ));
            }
            if dp > 1 && plan.stages.iter().any(|s| s.sdp != plan.stages[0].sdp) {
                why.push(
                    "some layers shard their model states and others do not; torchtitan applies \
                     FSDP to the whole model or to none of it"
                        .into(),
                );
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
    if checkpointing(inst, plan).is_none() {
        why.push(
            "the checkpointed layers are not all transformer blocks, none, or every k-th block \
             of each stage"
                .into(),
        );
    }
    why.extend(layout::memory_actions(plan, "torchtitan"));
    why
}

/// The nearest plan torchtitan runs: [`layout::nearest`] with one tp and one sharding (ZeRO-1
/// and -2 sharded as FSDP), the micro-batch rounded to a multiple of dp, every block
/// checkpointed if any layer was.
pub fn nearest(inst: &Instance, plan: &Plan) -> Plan {
    let mut p = layout::nearest(plan, true, true);
    layout::one_zero_stage(&mut p, |z| if z > 0 { 3 } else { 0 });
    let dp = p.stages[0].dp;
    let (micro, m) = layout::batch(inst, &p);
    let micro = layout::micro_for_dp(micro, dp);
    p.schedule = match p.schedule {
        Schedule::Gpipe { .. } => Schedule::Gpipe {
            micro_batches: Some(m),
            micro_batch: Some(micro),
        },
        _ => Schedule::OneFOneB {
            micro_batches: Some(m),
            micro_batch: Some(micro),
        },
    };
    let any = p.stages.iter().any(|s| !s.checkpoint.is_empty());
    let roles = layout::roles(inst);
    for st in &mut p.stages {
        st.checkpoint = if any {
            (st.first..=st.last)
                .filter(|&l| roles[l] == Role::Block)
                .collect()
        } else {
            Vec::new()
        };
    }
    p
}

/// The activation-checkpoint mode: `Some("none")`, `Some("full")`, `Some(k)` for every k-th
/// block of each stage, `None` when not expressible.
fn checkpointing(inst: &Instance, plan: &Plan) -> Option<String> {
    let roles = layout::roles(inst);
    let mut ck = vec![false; inst.num_layers()];
    for st in &plan.stages {
        for &l in &st.checkpoint {
            ck[l] = true;
        }
    }
    if ck.iter().zip(&roles).any(|(&c, &r)| c && r != Role::Block) {
        return None;
    }
    let blocks: Vec<usize> = (0..ck.len()).filter(|&l| roles[l] == Role::Block).collect();
    if blocks.iter().all(|&l| !ck[l]) {
        return Some("none".into());
    }
    if blocks.iter().all(|&l| ck[l]) {
        return Some("full".into());
    }
    let lay = layout::standard(plan).ok()?;
    let per_stage: Vec<Vec<bool>> = lay
        .positions
        .iter()
        .map(|ss| {
            let (a, b) = (plan.stages[ss[0]].first, plan.stages[ss[ss.len() - 1]].last);
            (a..=b)
                .filter(|&l| roles[l] == Role::Block)
                .map(|l| ck[l])
                .collect()
        })
        .collect();
    (2..=blocks.len())
        .find(|&k| {
            per_stage
                .iter()
                .all(|v| v.iter().enumerate().all(|(i, &c)| c == ((i + 1) % k == 0)))
        })
        .map(|k| k.to_string())
}

/// The TOML of an expressible plan.
pub fn write(inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
    let plan = &rp.plan;
    let lay: Layout = layout::standard(plan).map_err(|e| InputError::field("plan.stages", e))?;
    let st = &plan.stages[0];
    let (tp, dp) = (st.tp, st.dp);
    let sharded = plan.stages.iter().all(|s| s.sdp) && dp > 1;
    let (micro, m) = layout::batch(inst, plan);
    let splits: Vec<String> = lay
        .firsts(plan)
        .iter()
        .skip(1)
        .map(|&l| format!("\"{}\"", escape(&inst.model.layers[l].name)))
        .collect();
    let schedule = match plan.schedule {
        Schedule::Gpipe { .. } => "GPipe",
        _ => "1F1B",
    };
    let mode = checkpointing(inst, plan).ok_or_else(|| {
        InputError::field("plan.stages.checkpoint", "not expressible in torchtitan")
    })?;
    let ac = match mode.as_str() {
        "none" | "full" => format!("mode = \"{mode}\"\n"),
        k => format!("mode = \"selective\"\nselective_ac_option = \"{k}\"\n"),
    };
    Ok(format!(
        "# {} GPUs = dp {dp} x tp {tp} x pp {pp}\n\
         [parallelism]\n\
         data_parallel_replicate_degree = {rep}\n\
         data_parallel_shard_degree = {shard}\n\
         tensor_parallel_degree = {tp}\n\
         pipeline_parallel_degree = {pp}\n\
         pipeline_parallel_split_points = [{splits}]\n\
         pipeline_parallel_schedule = \"{schedule}\"\n\
         pipeline_parallel_microbatch_size = {mb}\n\
         \n\
         [training]\n\
         local_batch_size = {local}\n\
         global_batch_size = {global}\n\
         \n\
         [activation_checkpoint]\n\
         {ac}",
        dp * tp * lay.pp() as u32,
        pp = lay.pp(),
        rep = if sharded { 1 } else { dp },
        shard = if sharded { dp } else { 1 },
        splits = splits.join(", "),
        mb = micro / dp,
        local = (micro / dp) as u64 * m as u64,
        global = micro as u64 * m as u64,
    ))
}

/// A TOML basic string's content.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
