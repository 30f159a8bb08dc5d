//! A Sailor plan file (`plan_config_*.json`) read back: the plan of
//! [`crate::import::sailor::plan::SailorPlan::to_plan`] (`docs/sailor.md`, "Plans").

use crate::error::InputError;
use crate::export::RuntimePlan;
use crate::import::sailor::plan::SailorPlan;
use crate::instance::Instance;
use crate::plan::Plan;
use crate::plan_from::Noted;

/// The plan of Sailor plan file `text` on `inst` (measured values, if any, are ignored here).
pub fn read(text: &str, inst: &Instance) -> Result<RuntimePlan, InputError> {
    Ok(RuntimePlan::of(SailorPlan::from_json(text)?.to_plan(inst)?))
}

/// As [`read`], mending one mistyped layer index first when `repair` is set and that makes the
/// plan valid ([`SailorPlan::repair_layers`]). The plan is checked against the instance, as
/// [`crate::plan_from::PlanFormat::read`] checks it.
pub fn read_noted(text: &str, inst: &Instance, repair: bool) -> Result<Noted, InputError> {
    let mut sp = SailorPlan::from_json(text)?;
    let mended = if repair {
        sp.repair_layers(inst.model.layers.len())
    } else {
        None
    };
    let plan = RuntimePlan::of(sp.to_plan(inst)?);
    plan.plan.check(inst)?;
    let notes = machine_mismatch(&sp, inst)
        .into_iter()
        .chain(scaled_profile(&plan.plan, inst))
        .collect();
    Ok(Noted {
        plan,
        mended,
        notes,
    })
}

/// The plan file names the machines it was made for (GPU type and GPUs per machine); when the
/// instance's differ (`cluster.gpu`, `cluster.gpus_per_node`), the evaluator judges the plan on
/// the instance's, which may be a question worth asking but is never the run the file describes.
/// Returns what to tell the user then.
pub fn machine_mismatch(sp: &SailorPlan, inst: &Instance) -> Option<String> {
    let mut differ = Vec::new();
    if let (Some(theirs), Some(ours)) = (sp.gpu_types.first(), inst.cluster.gpu.as_deref()) {
        if theirs != ours {
            differ.push(format!(
                "its GPUs are {theirs}, the instance's {ours} (cluster.gpu)"
            ));
        }
    }
    let node = inst.cluster.gpus_per_node.unwrap_or(inst.cluster.gpus);
    if let [size] = sp.node_sizes[..] {
        if size != node {
            differ.push(format!(
                "its machines hold {size} GPUs, the instance's nodes {node} \
                 (cluster.gpus_per_node)"
            ));
        }
    }
    (!differ.is_empty()).then(|| {
        format!(
            "the plan was made for other machines: {}; it is judged on the instance's",
            differ.join("; ")
        )
    })
}

/// A Sailor plan trains each replica at its own micro-batch size; when that is not the size the
/// instance was profiled at, the evaluator scales the profile linearly, which small batches
/// (kernels far from saturation) do not follow. Returns what to tell the user then: the size
/// per replica of `plan` (as [`read`] makes it: `mbs x dp` samples per micro-batch), the
/// instance's profiled size, and the import that would use the measured profile.
pub fn scaled_profile(plan: &Plan, inst: &Instance) -> Option<String> {
    let dp = plan.stages.first()?.dp.max(1);
    let per_replica = plan.schedule.micro_batch()? / dp;
    (per_replica != inst.model.batch).then(|| {
        format!(
            "the plan trains micro-batches of {per_replica} per replica, the instance was \
             profiled at {}: its times are scaled linearly; an instance imported with --batch \
             {per_replica} uses the profile measured at that size",
            inst.model.batch
        )
    })
}
