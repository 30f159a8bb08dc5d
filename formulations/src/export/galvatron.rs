//! Galvatron: the engine's output config ([`OutputConfig`]), which its training scripts read
//! with `--galvatron_config_path`. Every pipeline stage runs on `world / pp_deg` ranks; a layer
//! is tp x dp on them, its tp groups consecutive or strided (`tp_consecutive_flags`), sharded
//! (`dp_types_enc` 1) or under `default_dp_type` (`ddp`, `zero2` or `zero3`: one ZeRO stage for
//! every replicated stage), checkpointed or not.

use super::layout::{self, Layout};
use super::RuntimePlan;
use crate::error::InputError;
use crate::galvatron::output::{
    async_grad_reduce, default_dp_type, join, whole_gradients, Extras, OutputConfig,
};
use crate::galvatron::LayerTypes;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule};
use crate::units::fmt_ms;

/// Why Galvatron cannot run the plan as it is (empty: it can).
pub fn limits(inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
    let plan = &rp.plan;
    let mut why = Vec::new();
    if let Schedule::Async { .. } = plan.schedule {
        why.push(
            "the schedule is asynchronous; Galvatron trains synchronously (1F1B or GPipe)".into(),
        );
    }
    let whole = whole(inst, plan);
    if let Err(e) = replicated_type(plan, whole) {
        why.push(e);
    }
    why.extend(sharded_gradients(plan, whole));
    match layout::standard(plan) {
        Ok(_) => {
            for (s, st) in plan.stages.iter().enumerate() {
                if layout::consecutive(st).is_none() {
                    why.push(format!(
                        "stage {s} lists its GPUs {:?} in an order that is neither consecutive nor \
                         strided tp groups",
                        st.gpus
                    ));
                }
            }
        }
        Err(e) => why.push(e),
    }
    why.extend(layout::memory_actions(plan, "Galvatron"));
    why
}

/// The nearest plan Galvatron runs ([`layout::nearest`], GPipe kept), its replicated stages at
/// one ZeRO stage ([`layout::one_zero_stage`]): 0, or the one its `zero2` runs at (ZeRO-1 with
/// [`whole_gradients`], else ZeRO-2) for ZeRO-1 and -2.
pub fn nearest(inst: &Instance, plan: &Plan) -> Plan {
    let mut p = layout::nearest(plan, true, false);
    let whole = whole(inst, &p);
    let zero2 = if whole { 1 } else { 2 };
    layout::one_zero_stage(&mut p, |z| if z == 1 || z == 2 { zero2 } else { z });
    p.stages
        .iter_mut()
        .for_each(|s| s.set_whole_gradients(whole));
    p
}

/// Why the plan's sharded stages (`sdp` on several sharers) do not hold their gradients as
/// Galvatron's `zero3` does: whole when the runtime holds them whole (`whole`, see
/// [`whole_gradients`]), else divided (`None`: they do).
fn sharded_gradients(plan: &Plan, whole: bool) -> Option<String> {
    let s = plan
        .stages
        .iter()
        .position(|s| s.shards() && s.whole_gradients != whole)?;
    Some(if whole {
        format!(
            "stage {s} shards and divides its gradients at every micro-batch; over several \
             micro-batches under async_grad_reduce (the runtime's default) Galvatron's zero3 \
             holds them whole until the last (FSDP's no_sync)"
        )
    } else {
        format!(
            "stage {s} shards and holds its gradients whole until the last micro-batch; \
             Galvatron's zero3 does so only over several micro-batches under \
             async_grad_reduce, and divides them at every micro-batch here"
        )
    })
}

/// What Galvatron's runtime would spend on `plan` beyond the evaluator's charge, or `None`: with
/// `async_grad_reduce` off (the instance's Galvatron setting) it enters no `no_sync`, so over
/// several micro-batches its replicated stages under `ddp` (ZeRO-0) all-reduce their gradients
/// after every micro-batch, where a plan's replicated stage, as the evaluator times it,
/// reduces them once per iteration (`docs/galvatron.md`, "Import").
pub fn uncharged_reductions(inst: &Instance, plan: &Plan) -> Option<String> {
    let (_, m) = layout::batch(inst, plan);
    if async_grad_reduce(inst) || m < 2 {
        return None;
    }
    let ddp: Vec<usize> = (0..plan.stages.len())
        .filter(|&s| plan.stages[s].sharers() > 1 && plan.stages[s].zero_stage() == 0)
        .collect();
    if ddp.is_empty() {
        return None;
    }
    let (inst, judged) = crate::evaluate::judged(inst, plan);
    let costs = crate::cost::stage_costs(&inst, &inst.chain(), &judged);
    let once = ddp.iter().map(|&s| costs[s].grad_sync).fold(0.0, f64::max);
    let which = match ddp.as_slice() {
        [s] => format!("stage {s}"),
        _ => format!(
            "stages {}",
            super::distinct(&ddp.iter().map(|&s| s as u32).collect::<Vec<_>>())
        ),
    };
    let once = fmt_ms(once);
    Some(format!(
        "Galvatron's runtime with async_grad_reduce off (the instance's Galvatron setting) \
         all-reduces the gradients of {which} (ddp) after each of the {m} micro-batches, where \
         the evaluator charges one all-reduce per iteration ({once}): an iteration may take up \
         to {} x {once} longer; with async_grad_reduce on, the runtime reduces once",
        m - 1
    ))
}

/// Whether Galvatron's runtime holds the gradients whole over the plan's micro-batches
/// ([`whole_gradients`]), with the instance's `async_grad_reduce`.
fn whole(inst: &Instance, plan: &Plan) -> bool {
    let (_, m) = layout::batch(inst, plan);
    whole_gradients(async_grad_reduce(inst), u64::from(m))
}

/// The `default_dp_type` the plan's replicated stages (several sharers, not `sdp`) need: `None`
/// without such a stage (any default runs the plan), an error when they are at several ZeRO
/// stages, which one default cannot run, or at the one of ZeRO-1 and -2 that its `zero2` does
/// not run at (`whole`: the runtime holds the gradients whole, see [`whole_gradients`]).
fn replicated_type(plan: &Plan, whole: bool) -> Result<Option<&'static str>, String> {
    let stages: Vec<u8> = layout::zero_stages(plan)
        .into_iter()
        .filter(|&z| z < 3)
        .collect();
    match stages.as_slice() {
        [] => Ok(None),
        [z] => default_dp_type(*z, whole).map(Some).ok_or_else(|| {
            if whole {
                "replicated stages divide their gradients (ZeRO-2); over several micro-batches \
                 under async_grad_reduce (the runtime's default) Galvatron's zero2 holds them \
                 whole until the last, which is ZeRO-1"
                    .into()
            } else {
                "replicated stages divide only their optimizer states (ZeRO-1); Galvatron's \
                 zero2 does so only over several micro-batches under async_grad_reduce, and \
                 divides the gradients too here"
                    .into()
            }
        }),
        _ => Err(format!(
            "replicated stages run at ZeRO stages {}; Galvatron's default_dp_type sets one for \
             every layer not sharded",
            super::distinct(&stages.iter().map(|&z| u32::from(z)).collect::<Vec<_>>())
        )),
    }
}

/// The output config of an expressible plan.
pub fn write(inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
    let cfg = config(inst, rp)?;
    Ok(serde_json::to_string_pretty(&cfg).expect("serializable"))
}

/// The output config of an expressible plan ([`limits`] empty).
pub fn config(inst: &Instance, rp: &RuntimePlan) -> Result<OutputConfig, InputError> {
    let plan = &rp.plan;
    let lay: Layout = layout::standard(plan).map_err(|e| InputError::field("plan.stages", e))?;
    let n = inst.num_layers();
    let (micro, m) = layout::batch(inst, plan);
    let needed = replicated_type(plan, whole(inst, plan))
        .map_err(|e| InputError::field("plan.stages.zero", e))?;
    let extras = match &rp.galvatron {
        Some(x) => {
            if x.global_bsz.div_ceil(m as u64) != micro as u64 {
                return Err(InputError::field(
                    "galvatron.global_bsz",
                    format!(
                        "{} samples in {m} micro-batches are not the plan's micro-batches of \
                         {micro} samples",
                        x.global_bsz
                    ),
                ));
            }
            if let Some(d) = needed.filter(|&d| d != x.default_dp_type) {
                return Err(InputError::field(
                    "galvatron.default_dp_type",
                    format!(
                        "`{}`, but the plan's replicated stages run as `{d}` (their ZeRO \
                         stage)",
                        x.default_dp_type
                    ),
                ));
            }
            x.clone()
        }
        None => {
            let default = match needed {
                Some(d) => d.to_string(),
                None => LayerTypes::from_instance(inst)?
                    .map_or_else(|| "ddp".into(), |lt| lt.settings.default_dp_type),
            };
            Extras {
                vtp: 1,
                embed_sdp: false,
                vsp: false,
                global_bsz: micro as u64 * m as u64,
                default_dp_type: default,
            }
        }
    };
    // Under `zero3` every layer is sharded without its flag.
    let flag_sdp = extras.default_dp_type != "zero3";
    let (mut tp, mut consec, mut sdp, mut ckpt) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
    let mut sp = vec![0; n];
    for st in &plan.stages {
        let c = layout::consecutive(st).unwrap_or(true);
        for l in st.first..=st.last {
            tp[l] = st.tp;
            consec[l] = c as u8;
            sdp[l] = (st.sdp && flag_sdp) as u8;
            ckpt[l] = st.checkpoint.contains(&l) as u8;
            sp[l] = st.ulysses as u8;
        }
    }
    Ok(OutputConfig {
        pp_deg: lay.pp() as u32,
        tp_sizes_enc: join(&tp),
        tp_consecutive_flags: join(&consec),
        dp_types_enc: join(&sdp),
        use_sp: Some(join(&sp)),
        checkpoint: join(&ckpt),
        global_bsz: extras.global_bsz,
        chunks: m as u64,
        pp_division: join(&lay.division(plan)),
        pipeline_type: match plan.schedule {
            Schedule::Gpipe { .. } => "gpipe",
            _ => "pipedream_flush",
        }
        .into(),
        default_dp_type: extras.default_dp_type,
        vtp: Some(extras.vtp),
        vsp: Some(extras.vsp as u32),
        embed_sdp: Some(extras.embed_sdp as u32),
        cp_sizes_enc: None,
        vcp: None,
    })
}
