//! A Sailor plan file (`plan_config_*.json`) read back: the plan of
//! [`crate::import::sailor::plan::SailorPlan::to_plan`] (`docs/sailor.md`, "Plans").

use crate::error::InputError;
use crate::export::RuntimePlan;
use crate::import::sailor::plan::SailorPlan;
use crate::instance::Instance;

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
