//! A Sailor plan file (`plan_config_*.json`) read back: the plan of
//! [`crate::import::sailor::plan::SailorPlan::to_plan`] (`docs/sailor.md`, "Plans").

use crate::error::InputError;
use crate::export::RuntimePlan;
use crate::import::sailor::plan::SailorPlan;
use crate::instance::Instance;
use crate::plan::Plan;

/// The plan of Sailor plan file `text` on `inst` (measured values, if any, are ignored here).
pub fn read(text: &str, inst: &Instance) -> Result<RuntimePlan, InputError> {
    Ok(RuntimePlan::of(SailorPlan::from_json(text)?.to_plan(inst)?))
}

/// As [`read`], mending one mistyped layer index first when that makes the plan valid
/// ([`SailorPlan::repair_layers`]); returns what was mended, if anything. The plan is checked
/// against the instance, as [`crate::plan_from::PlanFormat::read`] checks it.
pub fn read_repairing(
    text: &str,
    inst: &Instance,
) -> Result<(RuntimePlan, Option<String>), InputError> {
    let mut sp = SailorPlan::from_json(text)?;
    let mended = sp.repair_layers(inst.model.layers.len());
    let rp = RuntimePlan::of(sp.to_plan(inst)?);
    rp.plan.check(inst)?;
    Ok((rp, mended))
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
