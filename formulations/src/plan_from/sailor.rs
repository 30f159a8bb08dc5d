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
