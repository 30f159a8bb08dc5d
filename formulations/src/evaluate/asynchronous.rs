//! The timing of an asynchronous plan: its explicit pattern, or the 1F1B* pattern of its
//! contiguous partition at its period (default: the least period its loads allow), run through
//! the simulator, which measures the activations in flight.

use super::{activations_by_gpu, describe_resource, least_period, star_to_pattern, Timing};
use crate::cost::{CutCost, StageCost};
use crate::error::InputError;
use crate::instance::Instance;
use crate::one_f_one_b_star::{one_f_one_b_star, Resource};
use crate::plan::{Pattern, Plan};
use crate::simulate::simulate_costed;

/// Timing of `plan` under `Schedule::Async { period, pattern }`, whose resources are `resources`
/// (`resource_of_stage[s]`: stage s's), with the stage and cut costs the evaluator computed.
pub(super) fn timing(
    inst: &Instance,
    plan: &Plan,
    (costs, cuts): (&[StageCost], &[CutCost]),
    resources: &[Resource],
    resource_of_stage: &[usize],
    period: Option<f64>,
    pattern: Option<&Pattern>,
) -> Result<Timing, InputError> {
    let n = plan.stages.len();
    let pattern = match pattern {
        Some(p) => p.clone(),
        None => {
            if !plan.is_contiguous() {
                return Err(InputError::field(
                    "plan.schedule.pattern",
                    "stages share GPUs: an asynchronous plan with shared GPUs needs an \
                     explicit pattern (1F1B* is defined for contiguous allocations)",
                ));
            }
            let t = match period {
                Some(t) => t,
                None => least_period(resources, "plan.schedule.period")?,
            };
            match one_f_one_b_star(resources, t) {
                Ok(star) => star_to_pattern(&star, resource_of_stage),
                Err(r) => {
                    return Err(InputError::field(
                        "plan.schedule.period",
                        format!(
                            "period {t} ms is below the load {:.6} ms of {}",
                            resources[r].load(),
                            describe_resource(r, resource_of_stage)
                        ),
                    ))
                }
            }
        }
    };
    let t = pattern.period;
    let busy: f64 = (0..n)
        .map(|s| plan.stages[s].gpus.len() as f64 * resources[resource_of_stage[s]].load())
        .sum();
    Ok(match simulate_costed(inst, plan, &pattern, costs, cuts) {
        Ok(rep) => Timing {
            in_flight: rep.in_flight,
            activations: rep.peak_activations,
            period: Some(t),
            iteration: None,
            micro_batches: None,
            grad_sync: None,
            valid: Some(true),
            busy,
            span: t,
            notes: Vec::new(),
        },
        Err(v) => {
            // Lower bound: one micro-batch in flight per stage.
            let ones = vec![1; n];
            let activations = activations_by_gpu(inst, plan, costs, &ones);
            Timing {
                in_flight: ones,
                activations,
                period: Some(t),
                iteration: None,
                micro_batches: None,
                grad_sync: None,
                valid: Some(false),
                busy,
                span: t,
                notes: vec![format!("invalid schedule: {v}")],
            }
        }
    })
}
