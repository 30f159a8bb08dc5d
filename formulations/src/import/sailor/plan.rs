//! A Sailor plan file (`plan_config_*.json`) as a pipeplan plan, with what was measured when it
//! ran.
//!
//! Fields read (`docs/sailor.md`): `pipeline_list[0]` with `num_stages`, `layers_per_stage`
//! (layer indices per stage), `tmp_per_stage` (per stage, per data-parallel replica
//! `[[[gpu_type, gpus_per_node, zone]], tensor_parallel_degree]`) and `dp`; `mbs` (samples per
//! micro-batch of one replica), `gbs` (global batch); measured, when present: `real` (iteration
//! time, s), `max_mem` (peak memory of the busiest GPU, bytes) and `red_grads` (the gradient
//! reduction's share of the iteration, s); `N` (nodes).

use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};
use serde_json::Value;
use std::collections::BTreeSet;

/// One stage of a Sailor plan.
#[derive(Debug, Clone, PartialEq)]
pub struct SailorStage {
    /// Layer indices, as listed.
    pub layers: Vec<usize>,
    /// Data-parallel degree.
    pub dp: u32,
    /// Tensor-parallel degree of its first replica (of every replica unless
    /// [`SailorPlan::unsupported`] names the stage).
    pub tp: u32,
    /// Tensor-parallel degree of each replica.
    pub replica_tps: Vec<u32>,
    /// GPU type of every replica.
    pub gpu_type: String,
}

/// A Sailor plan file: the plan and, for a run, its measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct SailorPlan {
    /// Stages in pipeline order.
    pub stages: Vec<SailorStage>,
    /// Samples per micro-batch of one replica.
    pub micro_batch: u32,
    /// Samples per iteration.
    pub global_batch: u32,
    /// Measured iteration time (ms), when the plan was run.
    pub measured_iteration_ms: Option<f64>,
    /// Measured peak memory of the busiest GPU (bytes), when the plan was run.
    pub measured_peak_memory: Option<f64>,
    /// Measured gradient reduction (ms): the part of the iteration spent synchronising
    /// gradients, when the run recorded it.
    pub measured_grad_sync_ms: Option<f64>,
    /// Nodes the run used (`N`), when given.
    pub nodes: Option<u32>,
    /// Pipelines in `pipeline_list` (only the first is read: several are not supported yet).
    pub pipelines: usize,
    /// GPU types, each listed once, in order of appearance.
    pub gpu_types: Vec<String>,
    /// GPUs per machine, each size listed once, in order of appearance.
    pub node_sizes: Vec<u32>,
}

fn field(f: impl Into<String>, m: impl Into<String>) -> InputError {
    InputError::field(f, m)
}

/// A count: an integer from 1 to `u32::MAX`.
fn positive(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .filter(|&n| n >= 1)
        .and_then(|n| u32::try_from(n).ok())
}

impl SailorPlan {
    /// Reads a plan file's text. What pipeplan does not model (several pipelines, GPU types,
    /// data-parallel degrees; [`SailorPlan::unsupported`]) is read; [`SailorPlan::to_plan`]
    /// refuses it.
    pub fn from_json(text: &str) -> Result<SailorPlan, InputError> {
        let doc: Value = crate::error::parse_json(text, "Sailor plan")?;
        let pipes = doc
            .get("pipeline_list")
            .and_then(Value::as_array)
            .ok_or_else(|| field("pipeline_list", "missing: a list with one pipeline"))?;
        // Only the first pipeline is read: several are not supported (`unsupported`).
        let pipe = pipes
            .first()
            .ok_or_else(|| field("pipeline_list", "empty: one pipeline expected"))?;
        let at = |k: &str| format!("pipeline_list[0].{k}");
        let layers = pipe
            .get("layers_per_stage")
            .and_then(Value::as_array)
            .ok_or_else(|| field(at("layers_per_stage"), "missing: layer indices per stage"))?;
        let tmp = pipe
            .get("tmp_per_stage")
            .and_then(Value::as_array)
            .ok_or_else(|| field(at("tmp_per_stage"), "missing"))?;
        let dps = pipe
            .get("dp")
            .and_then(Value::as_array)
            .ok_or_else(|| field(at("dp"), "missing: data-parallel degree per stage"))?;
        let n = layers.len();
        if let Some(k) = pipe.get("num_stages").and_then(Value::as_u64) {
            if k as usize != n {
                return Err(field(
                    at("num_stages"),
                    format!("{k}, but layers_per_stage lists {n} stages"),
                ));
            }
        }
        if n == 0 {
            return Err(field(at("layers_per_stage"), "no stage"));
        }
        if tmp.len() != n || dps.len() != n {
            return Err(field(
                at("tmp_per_stage"),
                format!(
                    "{} entries and dp {} for {n} stages; one per stage expected",
                    tmp.len(),
                    dps.len()
                ),
            ));
        }
        let mut gpu_types: Vec<String> = Vec::new();
        let mut node_sizes: Vec<u32> = Vec::new();
        let mut stages = Vec::with_capacity(n);
        for s in 0..n {
            stages.push(read_stage(
                s,
                (&layers[s], &dps[s], &tmp[s]),
                &mut gpu_types,
                &mut node_sizes,
            )?);
        }
        let uint = |k: &str| -> Result<u32, InputError> {
            positive(doc.get(k)).ok_or_else(|| field(k, "missing or not a positive integer"))
        };
        let measured_iteration_ms = measured(&doc, "real", false)?.map(|s| s * 1e3);
        // A reduction may take no time (one replica), but not more than the whole iteration.
        let measured_grad_sync_ms = measured(&doc, "red_grads", true)?.map(|s| s * 1e3);
        if let (Some(sync), Some(it)) = (measured_grad_sync_ms, measured_iteration_ms) {
            if sync > it {
                return Err(field(
                    "red_grads",
                    format!(
                        "the gradient reduction ({} s) is longer than the iteration it is part \
                         of (`real`, {} s)",
                        sync / 1e3,
                        it / 1e3
                    ),
                ));
            }
        }
        Ok(SailorPlan {
            stages,
            micro_batch: uint("mbs")?,
            global_batch: uint("gbs")?,
            measured_iteration_ms,
            measured_peak_memory: measured(&doc, "max_mem", false)?,
            measured_grad_sync_ms,
            nodes: match doc.get("N") {
                None | Some(Value::Null) => None,
                n => Some(positive(n).ok_or_else(|| {
                    field("N", "not a positive integer (the nodes the run used)")
                })?),
            },
            pipelines: pipes.len(),
            gpu_types,
            node_sizes,
        })
    }

    /// Checks that every stage's tensor-parallel degree is one of `profiled` (the degrees the
    /// profile measured at the plan's micro-batch), naming the stage's field otherwise: judged
    /// against a measured run, a degree the profile lacks would be a scaling rule's guess.
    pub fn check_degrees(&self, profiled: &[u32], profile: &str) -> Result<(), InputError> {
        let Some((s, st)) = self
            .stages
            .iter()
            .enumerate()
            .find(|(_, st)| !profiled.contains(&st.tp))
        else {
            return Ok(());
        };
        let list: Vec<String> = profiled.iter().map(u32::to_string).collect();
        Err(field(
            format!("pipeline_list[0].tmp_per_stage[{s}]"),
            format!(
                "tensor-parallel degree {}: the profile has no measurement at it ({profile}: \
                 profiled degrees {})",
                st.tp,
                list.join(", ")
            ),
        ))
    }

    /// Checks that the stages list every layer of an `n`-layer model once, in order. When one
    /// mistyped index is the only fault, the error says how [`SailorPlan::repair_layers`]
    /// would mend it.
    pub fn check_layers(&self, n: usize) -> Result<(), InputError> {
        self.layer_fault(n)
            .map_err(|e| match (e, self.clone().repair_layers(n)) {
                (InputError::Field { field, message }, Some(mend)) => InputError::Field {
                    field,
                    message: format!("{message}; --repair-layers would mend it: {mend}"),
                },
                (e, _) => e,
            })
    }

    fn layer_fault(&self, n: usize) -> Result<(), InputError> {
        let f = "pipeline_list[0].layers_per_stage";
        let mut seen: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut beyond = BTreeSet::new();
        for (s, st) in self.stages.iter().enumerate() {
            for &l in &st.layers {
                match seen.get_mut(l) {
                    Some(v) => v.push(s),
                    None => {
                        beyond.insert(l);
                    }
                }
            }
        }
        let twice: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, v)| v.len() > 1)
            .map(|(l, v)| format!("layer {l} is listed {} times (stages {v:?})", v.len()))
            .collect();
        let missing: Vec<usize> = (0..n).filter(|&l| seen[l].is_empty()).collect();
        let mut problems = twice;
        if !missing.is_empty() {
            problems.push(format!("{} missing: {missing:?}", plural(&missing)));
        }
        if !beyond.is_empty() {
            problems.push(format!(
                "{beyond:?} beyond the model's {n} layers (0..{})",
                n.saturating_sub(1)
            ));
        }
        if !problems.is_empty() {
            return Err(field(
                f,
                format!(
                    "the stages must list each of the model's {n} layers once: {}",
                    problems.join("; ")
                ),
            ));
        }
        for (s, st) in self.stages.iter().enumerate() {
            if st.layers.windows(2).any(|w| w[1] != w[0] + 1) {
                return Err(field(
                    format!("{f}[{s}]"),
                    format!("layers {:?} are not consecutive", st.layers),
                ));
            }
        }
        for (s, w) in self.stages.windows(2).enumerate() {
            let (Some(&last), Some(&first)) = (w[0].layers.last(), w[1].layers.first()) else {
                continue;
            };
            if first != last + 1 {
                return Err(field(
                    format!("{f}[{}]", s + 1),
                    format!(
                        "starts at layer {first}, not after stage {s}'s last layer {last}: the \
                         stages must follow the model's order"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Mends one mistyped layer index, when the user asks (`--repair-layers`): the stages list
    /// one layer twice and miss exactly one, and exactly one of the duplicate's entries, read as
    /// the missing index, makes the plan valid (GPT-NEO's `... 18, 29, 20 ...` for 19). Returns
    /// what was changed, or `None` when the plan is valid or the mend is not that one
    /// unambiguous change (the plan stays as it was, and [`SailorPlan::check_layers`] says why).
    pub fn repair_layers(&mut self, n: usize) -> Option<String> {
        if self.layer_fault(n).is_ok() {
            return None;
        }
        let mut count = vec![0usize; n];
        for &l in self.stages.iter().flat_map(|st| &st.layers) {
            *count.get_mut(l)? += 1;
        }
        let [missing] = (0..n).filter(|&l| count[l] == 0).collect::<Vec<_>>()[..] else {
            return None;
        };
        let mut mends = Vec::new();
        for (s, st) in self.stages.iter().enumerate() {
            for (i, &l) in st.layers.iter().enumerate() {
                if count[l] == 2 {
                    let mut mended = self.clone();
                    mended.stages[s].layers[i] = missing;
                    if mended.layer_fault(n).is_ok() {
                        mends.push((s, i, l, mended));
                    }
                }
            }
        }
        let mut mends = mends.into_iter();
        let (Some((s, i, l, mended)), None) = (mends.next(), mends.next()) else {
            return None;
        };
        *self = mended;
        Some(format!(
            "pipeline_list[0].layers_per_stage[{s}][{i}]: layer {l}, listed twice, read as \
             {missing}, the one missing"
        ))
    }

    /// What pipeplan does not model in this plan, as (field, reason), the first found: several
    /// pipelines, GPUs of several types, stages of different data-parallel degrees
    /// (pipeplan's micro-batch spans a stage's replicas, so such stages would each see another
    /// number of micro-batches), replicas of one stage at different tensor-parallel degrees (the
    /// evaluator gives a stage one degree).
    pub fn unsupported(&self) -> Option<(String, String)> {
        let at = |k: String| format!("pipeline_list[0].{k}");
        let dps: Vec<u32> = self.stages.iter().map(|st| st.dp).collect();
        if self.pipelines > 1 {
            Some((
                "pipeline_list".into(),
                format!(
                    "{} pipelines: plans of several pipelines are not supported yet",
                    self.pipelines
                ),
            ))
        } else if self.gpu_types.len() > 1 {
            Some((
                at("tmp_per_stage".into()),
                format!(
                    "GPUs of several types ({}): heterogeneous plans are not supported yet",
                    self.gpu_types.join(", ")
                ),
            ))
        } else if let Some(s) = dps.iter().position(|&d| d != dps[0]) {
            Some((
                at(format!("dp[{s}]")),
                format!("stages of different data-parallel degrees {dps:?}: not supported yet"),
            ))
        } else {
            let s = self
                .stages
                .iter()
                .position(|st| st.replica_tps.iter().any(|&t| t != st.tp))?;
            Some((
                at(format!("tmp_per_stage[{s}]")),
                format!(
                    "replicas of stage {s} at different tensor-parallel degrees {:?}: not \
                     supported yet",
                    self.stages[s].replica_tps
                ),
            ))
        }
    }

    /// The plan on `inst`: stage `s` on the next `dp x tp` GPUs (each replica's tensor-parallel
    /// group on consecutive GPUs, as Megatron places them), synchronous 1F1B with micro-batches
    /// of `mbs x dp` samples (pipeplan's micro-batch spans the replicas) and `gbs / (mbs x dp)`
    /// of them.
    pub fn to_plan(&self, inst: &Instance) -> Result<Plan, InputError> {
        if let Some((f, why)) = self.unsupported() {
            return Err(field(f, why));
        }
        self.check_layers(inst.model.layers.len())?;
        let dp = self.stages[0].dp;
        let per_step = self.micro_batch as u64 * dp as u64;
        if self.global_batch as u64 % per_step != 0 {
            return Err(field(
                "gbs",
                format!(
                    "{} is not a multiple of mbs x dp = {per_step}",
                    self.global_batch
                ),
            ));
        }
        let mut next = 0u32;
        let mut stages = Vec::with_capacity(self.stages.len());
        for st in &self.stages {
            let width = st.dp * st.tp;
            let gpus: Vec<u32> = (next..next + width).collect();
            next += width;
            stages.push(Stage {
                dp: st.dp,
                tp: st.tp,
                gpus,
                ..Stage::single(st.layers[0], *st.layers.last().expect("non-empty"), 0)
            });
        }
        if next > inst.cluster.gpus {
            return Err(field(
                "pipeline_list[0].tmp_per_stage",
                format!(
                    "the plan uses {next} GPUs but the instance has {}",
                    inst.cluster.gpus
                ),
            ));
        }
        Ok(Plan {
            order: None,
            stages,
            schedule: Schedule::OneFOneB {
                micro_batches: Some((self.global_batch as u64 / per_step) as u32),
                micro_batch: Some(per_step as u32),
            },
        })
    }
}

/// Stage `s` of the plan's pipeline from its `layers_per_stage`, `dp` and `tmp_per_stage`
/// entries; the GPU types and node sizes its machines name are added to `gpu_types` and
/// `node_sizes` in order of appearance.
fn read_stage(
    s: usize,
    (layers, dp, tmp): (&Value, &Value, &Value),
    gpu_types: &mut Vec<String>,
    node_sizes: &mut Vec<u32>,
) -> Result<SailorStage, InputError> {
    let at = |k: &str| format!("pipeline_list[0].{k}");
    let ls: Vec<usize> = layers
        .as_array()
        .and_then(|a| a.iter().map(|v| v.as_u64().map(|x| x as usize)).collect())
        .ok_or_else(|| {
            field(
                format!("{}[{s}]", at("layers_per_stage")),
                "not a list of layer indices",
            )
        })?;
    if ls.is_empty() {
        return Err(field(
            format!("{}[{s}]", at("layers_per_stage")),
            "empty stage",
        ));
    }
    let dp = positive(Some(dp))
        .ok_or_else(|| field(format!("{}[{s}]", at("dp")), "not a positive integer"))?;
    let replicas = tmp.as_array().ok_or_else(|| {
        field(
            format!("{}[{s}]", at("tmp_per_stage")),
            "not a list of replicas",
        )
    })?;
    if replicas.len() != dp as usize {
        return Err(field(
            format!("{}[{s}]", at("tmp_per_stage")),
            format!("{} replicas but dp[{s}] = {dp}", replicas.len()),
        ));
    }
    let mut tps = Vec::with_capacity(replicas.len());
    let mut types = BTreeSet::new();
    for (r, rep) in replicas.iter().enumerate() {
        let f = || format!("{}[{s}][{r}]", at("tmp_per_stage"));
        let vms = rep
            .get(0)
            .and_then(Value::as_array)
            .ok_or_else(|| field(f(), "expected [[[gpu_type, gpus_per_node, zone]], tp]"))?;
        let tp = positive(rep.get(1))
            .ok_or_else(|| field(f(), "tensor-parallel degree is not a positive integer"))?;
        tps.push(tp);
        for vm in vms {
            let ty = vm
                .get(0)
                .and_then(Value::as_str)
                .ok_or_else(|| field(f(), "a machine without a GPU type string"))?;
            let size = positive(vm.get(1))
                .ok_or_else(|| field(f(), "a machine's GPUs per node is not a positive integer"))?;
            if !node_sizes.contains(&size) {
                node_sizes.push(size);
            }
            types.insert(ty.to_string());
            if !gpu_types.iter().any(|t| t == ty) {
                gpu_types.push(ty.to_string());
            }
        }
    }
    Ok(SailorStage {
        layers: ls,
        dp,
        tp: tps[0],
        replica_tps: tps,
        gpu_type: types.into_iter().next().unwrap_or_default(),
    })
}

/// A measured value `k` of the plan file, when present: positive, or (`zero_ok`) possibly 0.
fn measured(doc: &Value, k: &str, zero_ok: bool) -> Result<Option<f64>, InputError> {
    match doc.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && (x > 0.0 || zero_ok && x == 0.0) => Ok(Some(x)),
            _ => Err(field(
                k,
                format!(
                    "measured value {v} is not a {}",
                    if zero_ok {
                        "number >= 0"
                    } else {
                        "positive number"
                    }
                ),
            )),
        },
    }
}

fn plural(v: &[usize]) -> &'static str {
    if v.len() == 1 {
        "layer"
    } else {
        "layers"
    }
}
