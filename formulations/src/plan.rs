//! Plans: stages (contiguous layer ranges on device groups, with an intra-stage strategy) and a
//! schedule (asynchronous periodic, synchronous 1F1B, or GPipe).

use crate::error::InputError;
use crate::instance::{Instance, ScheduleKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A partition of the chain into stages plus how they are scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Stages in chain order; together they cover every layer exactly once.
    pub stages: Vec<Stage>,
    /// How the stages are scheduled.
    pub schedule: Schedule,
    /// The order of the layers in which the stages are ranges, when it is not the chain's: a
    /// permutation of the layers keeping every edge of the instance's `dag` extension forward.
    /// Stage bounds and per-layer lists then count positions in this order, and the plan is
    /// judged on the instance relinearized in it (`layer_order::resolve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<usize>>,
}

/// One stage: layers `first..=last` on the GPUs `gpus` with an intra-stage strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// First layer (0-based, inclusive).
    pub first: usize,
    /// Last layer (inclusive).
    pub last: usize,
    /// GPU ids of the stage's device group; `dp * tp` of them. Several stages may name the same
    /// GPU (e.g. MadPipe's special processor). Replica `r` (its tensor-parallel group) is
    /// `gpus[r * tp..(r + 1) * tp]`: the order tells a runtime how the groups lie on the ranks
    /// (e.g. Galvatron's consecutive or strided tp groups); the evaluator does not depend on it.
    pub gpus: Vec<u32>,
    /// Data-parallel degree (replicas, each on `tp` GPUs).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub dp: u32,
    /// Tensor-parallel degree.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub tp: u32,
    /// Sharded data parallelism (ZeRO-3): model states divided by `dp`; the weights are gathered
    /// for every micro-batch's forward and backward, and the gradients reduce-scattered at every
    /// micro-batch (once, with `whole_gradients`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sdp: bool,
    /// ZeRO stage of a replicated stage (`sdp` off): 0 keeps every model state on every
    /// replica; 1 divides the optimizer states among the replicas (ZeRO-1, Megatron-LM's
    /// distributed optimizer), the gradients accumulating whole and reduced once per update; 2
    /// the gradients too (ZeRO-2, Galvatron's `zero2`), reduce-scattered at every micro-batch.
    /// Dividing the weights as well is `sdp` (ZeRO-3).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zero: u8,
    /// Under `sdp`: the gradients are accumulated whole over the micro-batches and divided once,
    /// after the last backward (PyTorch FSDP's `no_sync`; Galvatron's `zero3` under
    /// `async_grad_reduce`), so each GPU holds the stage's whole gradient while its weights and
    /// optimizer states stay divided. (A replicated stage that holds its gradients whole is
    /// ZeRO-1.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_gradients: bool,
    /// Ulysses sequence parallelism in each tp group (needs `tp` > 1): the group splits every
    /// sample's sequence instead of the layers' weights, so each GPU holds whole layers and
    /// exchanges activations all-to-all; gradients are shared by all `dp x tp` GPUs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ulysses: bool,
    /// Layers (global 0-based indices) whose activations are checkpointed: only their input is
    /// kept and the rest is recomputed during the backward.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoint: Vec<usize>,
    /// Layers (global 0-based indices) whose saved tensor is swapped to host memory after the
    /// forward and back before the backward (needs `cluster.pcie`; DawnPiper's MemOpt).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swap: Vec<usize>,
    /// Layers (global 0-based indices) whose saved tensor is dropped after the forward and
    /// recomputed before the backward at the cost of the node's `recompute` time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recompute: Vec<usize>,
}

fn one() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_zero(v: &u8) -> bool {
    *v == 0
}

impl Stage {
    /// Whether `other` runs on exactly the same device group (no communication between them).
    pub fn same_group(&self, other: &Stage) -> bool {
        let mut x = self.gpus.clone();
        let mut y = other.gpus.clone();
        x.sort_unstable();
        y.sort_unstable();
        x == y
    }

    /// A plain stage on one GPU.
    pub fn single(first: usize, last: usize, gpu: u32) -> Stage {
        Stage {
            first,
            last,
            gpus: vec![gpu],
            dp: 1,
            tp: 1,
            sdp: false,
            zero: 0,
            whole_gradients: false,
            ulysses: false,
            checkpoint: Vec::new(),
            swap: Vec::new(),
            recompute: Vec::new(),
        }
    }

    /// True when the stage swaps or recomputes any saved tensor.
    pub fn has_memory_actions(&self) -> bool {
        !self.swap.is_empty() || !self.recompute.is_empty()
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.last + 1 - self.first
    }

    /// Always false for a stage of a valid plan.
    pub fn is_empty(&self) -> bool {
        self.last < self.first
    }

    /// Degree dividing per-replica work: `dp * tp`.
    pub fn width(&self) -> f64 {
        f64::from(self.dp) * f64::from(self.tp)
    }

    /// GPUs that hold the same weights and share their gradients: the replicas (`dp`), or under
    /// Ulysses every GPU of the stage (`dp x tp`). ZeRO divides model states among them.
    pub fn sharers(&self) -> u32 {
        if self.ulysses {
            self.dp * self.tp
        } else {
            self.dp
        }
    }

    /// The ZeRO stage: 3 under `sdp`, else `zero`.
    pub fn zero_stage(&self) -> u8 {
        if self.sdp {
            3
        } else {
            self.zero
        }
    }

    /// Whether the stage divides some of its model states among several sharers but keeps its
    /// weights whole (ZeRO-1 or -2).
    pub fn divides_part_of_states(&self) -> bool {
        self.zero > 0 && self.sharers() > 1
    }

    /// Whether the stage divides its weights among several sharers (`sdp`, ZeRO-3).
    pub fn shards(&self) -> bool {
        self.sdp && self.sharers() > 1
    }

    /// Whether the stage divides its weights among several sharers but holds its gradients
    /// whole (`sdp` with `whole_gradients`).
    pub fn shards_with_whole_gradients(&self) -> bool {
        self.shards() && self.whole_gradients
    }

    /// Sets `whole_gradients` to `whole` where it means something: on a stage that
    /// [`shards`](Stage::shards) (elsewhere it is cleared).
    pub fn set_whole_gradients(&mut self, whole: bool) {
        self.whole_gradients = whole && self.shards();
    }

    /// Sets the ZeRO stage (0 to 3): `sdp` for 3, `zero` below. Below 3 the gradients are
    /// whole or divided by the stage alone, so `whole_gradients` is cleared.
    pub fn set_zero_stage(&mut self, stage: u8) {
        self.sdp = stage >= 3;
        self.zero = if self.sdp { 0 } else { stage };
        self.whole_gradients &= self.sdp;
    }
}

/// The schedule of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Schedule {
    /// Asynchronous periodic pipeline. Without `pattern`, the 1F1B* pattern of the contiguous
    /// partition at `period` (default: the least period the loads allow) is implied.
    Async {
        /// Period (ms).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        period: Option<f64>,
        /// An explicit periodic pattern.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<Pattern>,
    },
    /// Synchronous 1F1B with a flush per batch of `micro_batches` micro-batches.
    #[serde(rename = "1f1b")]
    OneFOneB {
        /// m (default: the instance's `training.micro_batches`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        micro_batches: Option<u32>,
        /// Samples per micro-batch, for a plan that chooses its own (default: the instance's
        /// `training.micro_batch`). The evaluator judges the plan at this size.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        micro_batch: Option<u32>,
    },
    /// GPipe: all forwards, then all backwards, flush per batch.
    Gpipe {
        /// m (default: the instance's `training.micro_batches`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        micro_batches: Option<u32>,
        /// Samples per micro-batch, for a plan that chooses its own (default: the instance's
        /// `training.micro_batch`). The evaluator judges the plan at this size.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        micro_batch: Option<u32>,
    },
}

impl Schedule {
    /// The default schedule of an instance's family (implied 1F1B* for async).
    pub fn default_for(inst: &Instance) -> Schedule {
        Schedule::of_kind(inst.training.schedule)
    }

    /// The asynchronous schedule at `period` (`None`: the least period the loads allow) with the
    /// implied 1F1B* pattern.
    pub fn one_f_one_b_star(period: Option<f64>) -> Schedule {
        Schedule::Async {
            period,
            pattern: None,
        }
    }

    /// The schedule of a family with nothing given: implied 1F1B* at the least period for async,
    /// the instance's micro-batch count for synchronous schedules.
    pub fn of_kind(kind: ScheduleKind) -> Schedule {
        match kind {
            ScheduleKind::Async => Schedule::one_f_one_b_star(None),
            ScheduleKind::OneFOneB => Schedule::OneFOneB {
                micro_batches: None,
                micro_batch: None,
            },
            ScheduleKind::Gpipe => Schedule::Gpipe {
                micro_batches: None,
                micro_batch: None,
            },
        }
    }

    /// The micro-batch size the plan chose, if any (synchronous schedules only).
    pub fn micro_batch(&self) -> Option<u32> {
        match self {
            Schedule::Async { .. } => None,
            Schedule::OneFOneB { micro_batch, .. } | Schedule::Gpipe { micro_batch, .. } => {
                *micro_batch
            }
        }
    }

    /// The family.
    pub fn kind(&self) -> ScheduleKind {
        match self {
            Schedule::Async { .. } => ScheduleKind::Async,
            Schedule::OneFOneB { .. } => ScheduleKind::OneFOneB,
            Schedule::Gpipe { .. } => ScheduleKind::Gpipe,
        }
    }
}

/// A periodic pattern: each operation starts at `start` in `[0, period)` of every period and, in
/// period k, processes micro-batch `k - shift` (the forward of the first stage has shift 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// Period T (ms).
    pub period: f64,
    /// One entry per operation.
    pub ops: Vec<PatternOp>,
}

/// The kind of a pattern operation.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum OpKind {
    /// Forward of a stage.
    F,
    /// Backward of a stage.
    B,
    /// Activation sent from stage `stage` to stage `stage + 1`.
    #[serde(rename = "send_f")]
    SendF,
    /// Gradient sent from stage `stage + 1` back to stage `stage`.
    #[serde(rename = "send_b")]
    SendB,
}

/// One operation of a periodic pattern. Durations are not stored: the simulator takes them from
/// the neutral cost model, so a pattern cannot claim shorter operations than the evaluator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternOp {
    /// What runs.
    pub op: OpKind,
    /// The stage (for sends: the stage before the cut).
    pub stage: usize,
    /// Start time within the period, in `[0, period)`.
    pub start: f64,
    /// Index shift h: in period k the operation processes micro-batch k - h.
    pub shift: i64,
}

/// Checks a solution's claimed peak memory per GPU (its `claimed.peak_memory`, which charts draw
/// beside the evaluated peaks): every entry a size in bytes, finite and not negative.
pub fn check_claimed_peaks(peaks: &[f64]) -> Result<(), InputError> {
    match peaks.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
        Some(i) => Err(InputError::field(
            format!("claimed.peak_memory[{i}]"),
            format!(
                "{} is not a memory size (a finite number of bytes, 0 or more)",
                crate::units::fmt_bytes(peaks[i])
            ),
        )),
        None => Ok(()),
    }
}

impl Plan {
    /// A contiguous plan with one GPU per stage (GPU s for stage s) from cut positions:
    /// `ends[s]` is the last layer of stage s.
    pub fn contiguous(ends: &[usize], schedule: Schedule) -> Plan {
        let mut first = 0;
        let stages = ends
            .iter()
            .enumerate()
            .map(|(s, &last)| {
                let st = Stage::single(first, last, s as u32);
                first = last + 1;
                st
            })
            .collect();
        Plan {
            order: None,
            stages,
            schedule,
        }
    }

    /// Parses a plan from JSON. A whole solution (with a `plan` field) is accepted too.
    pub fn from_json(text: &str) -> Result<Plan, InputError> {
        let doc: serde_json::Value = crate::error::parse_json(text, "plan")?;
        if doc.get("plan").is_some() && doc.get("stages").is_none() {
            let plan = doc.get("plan").cloned().unwrap_or_default();
            return serde_path_to_error::deserialize(plan).map_err(|e| {
                InputError::field(format!("plan.{}", e.path()), e.inner().to_string())
            });
        }
        crate::error::parse_json(text, "plan")
    }

    /// GPUs used by any stage, sorted.
    pub fn gpus(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self
            .stages
            .iter()
            .flat_map(|s| s.gpus.iter().copied())
            .collect();
        set.into_iter().collect()
    }

    /// Pipeline position of every stage: consecutive stages on the same device group (e.g. one
    /// Galvatron pipeline stage whose layers use different strategies on the same GPUs) form one
    /// position. Returns `None` when a GPU belongs to two positions (stages sharing GPUs that are
    /// not neighbours with identical groups), which synchronous schedules cannot express.
    pub fn positions(&self) -> Option<Vec<usize>> {
        let mut pos = Vec::with_capacity(self.stages.len());
        let mut owner: std::collections::BTreeMap<u32, usize> = Default::default();
        for (s, st) in self.stages.iter().enumerate() {
            let p = match s {
                0 => 0,
                _ if self.stages[s - 1].same_group(st) => pos[s - 1],
                _ => pos[s - 1] + 1,
            };
            for &g in &st.gpus {
                if *owner.entry(g).or_insert(p) != p {
                    return None;
                }
            }
            pos.push(p);
        }
        Some(pos)
    }

    /// True when no two stages share a GPU.
    pub fn is_contiguous(&self) -> bool {
        let total: usize = self.stages.iter().map(|s| s.gpus.len()).sum();
        total == self.gpus().len()
    }

    /// Checks the plan against an instance: stages cover the chain in order, device groups match
    /// their degrees and exist, checkpointed layers lie in their stage, the schedule is sound.
    pub fn check(&self, inst: &Instance) -> Result<(), InputError> {
        if let Some(order) = &self.order {
            crate::layer_order::check_order(inst, order)?;
        }
        let l = inst.num_layers();
        if self.stages.is_empty() {
            return Err(InputError::field("plan.stages", "no stage"));
        }
        let mut next = 0;
        for (i, s) in self.stages.iter().enumerate() {
            next = check_stage(inst, i, s, next)?;
        }
        if next != l {
            return Err(InputError::field(
                "plan.stages",
                format!(
                    "layers {next}..{} are in no stage (the chain has {l} layers)",
                    l - 1
                ),
            ));
        }
        check_schedule(&self.schedule)
    }
}

/// Stage `i`, which must start at layer `next`: its layers, degrees, GPUs, layer lists and memory
/// actions. Returns the layer the next stage starts at.
fn check_stage(inst: &Instance, i: usize, s: &Stage, next: usize) -> Result<usize, InputError> {
    let l = inst.num_layers();
    let f = |name: &str| format!("plan.stages[{i}].{name}");
    if s.first != next {
        return Err(InputError::field(
            f("first"),
            if s.first > next {
                format!("layers {next}..{} are in no stage", s.first - 1)
            } else {
                format!("layer {} is already in an earlier stage", s.first)
            },
        ));
    }
    if s.last < s.first {
        return Err(InputError::field(
            f("last"),
            format!("{} is before first = {}", s.last, s.first),
        ));
    }
    if s.last >= l {
        return Err(InputError::field(
            f("last"),
            format!("layer {} does not exist (the chain has {l} layers)", s.last),
        ));
    }
    if s.dp == 0 || s.tp == 0 {
        return Err(InputError::field(
            f(if s.dp == 0 { "dp" } else { "tp" }),
            "degree must be at least 1",
        ));
    }
    if s.ulysses && s.tp < 2 {
        return Err(InputError::field(
            f("ulysses"),
            "Ulysses sequence parallelism needs a tp group (tp of at least 2)",
        ));
    }
    if s.zero > 2 {
        return Err(InputError::field(
            f("zero"),
            format!(
                "{}: expected 0, 1 or 2 (ZeRO-3, which divides the weights too, is `sdp: true`)",
                s.zero
            ),
        ));
    }
    if s.sdp && s.zero != 0 {
        return Err(InputError::field(
            f("zero"),
            format!(
                "{} with `sdp: true`: sdp already divides every model state (ZeRO-3); give one \
                 of the two",
                s.zero
            ),
        ));
    }
    if s.whole_gradients && !s.sdp {
        return Err(InputError::field(
            f("whole_gradients"),
            "only beside `sdp: true` (ZeRO-3): a replicated stage holds its gradients whole at \
             ZeRO 0 and 1 (`zero`), and ZeRO-2 with whole gradients is ZeRO-1",
        ));
    }
    // In u64: a hand-edited degree near u32::MAX must be refused here, not overflow.
    let group = u64::from(s.dp) * u64::from(s.tp);
    if s.gpus.len() as u64 != group {
        return Err(InputError::field(
            f("gpus"),
            format!(
                "{} GPUs listed but dp x tp = {} x {} = {group}",
                s.gpus.len(),
                s.dp,
                s.tp,
            ),
        ));
    }
    check_gpus(inst, s, &f)?;
    check_layer_lists(s, &f)?;
    check_actions(inst, s, &f)?;
    Ok(s.last + 1)
}

/// A stage's GPUs exist and are listed once.
fn check_gpus(inst: &Instance, s: &Stage, f: &dyn Fn(&str) -> String) -> Result<(), InputError> {
    let mut seen = BTreeSet::new();
    for &g in &s.gpus {
        if g >= inst.cluster.gpus {
            return Err(InputError::field(
                f("gpus"),
                format!(
                    "GPU {g} does not exist (the cluster has {} GPUs, ids 0..{})",
                    inst.cluster.gpus,
                    inst.cluster.gpus - 1
                ),
            ));
        }
        if !seen.insert(g) {
            return Err(InputError::field(
                f("gpus"),
                format!("GPU {g} listed twice"),
            ));
        }
    }
    Ok(())
}

/// A stage's `checkpoint`, `swap` and `recompute` lists name its own layers, each once.
fn check_layer_lists(s: &Stage, f: &dyn Fn(&str) -> String) -> Result<(), InputError> {
    for (name, list) in [
        ("checkpoint", &s.checkpoint),
        ("swap", &s.swap),
        ("recompute", &s.recompute),
    ] {
        let mut seen = BTreeSet::new();
        for &c in list {
            if c < s.first || c > s.last {
                return Err(InputError::field(
                    f(name),
                    format!(
                        "layer {c} is not in this stage (layers {}..={})",
                        s.first, s.last
                    ),
                ));
            }
            if !seen.insert(c) {
                return Err(InputError::field(
                    f(name),
                    format!("layer {c} listed twice"),
                ));
            }
        }
    }
    Ok(())
}

/// Positive periods (a given period equal to the pattern's), and at least one micro-batch.
fn check_schedule(schedule: &Schedule) -> Result<(), InputError> {
    match schedule {
        Schedule::Async { period, pattern } => {
            if let Some(t) = period {
                if !(t.is_finite() && *t > 0.0) {
                    return Err(InputError::field(
                        "plan.schedule.period",
                        format!("must be a positive time, found {t}"),
                    ));
                }
            }
            if let Some(p) = pattern {
                if !(p.period.is_finite() && p.period > 0.0) {
                    return Err(InputError::field(
                        "plan.schedule.pattern.period",
                        format!("must be a positive time, found {}", p.period),
                    ));
                }
                if let Some(t) = period {
                    if (t - p.period).abs() > 1e-9 * t.max(1.0) {
                        return Err(InputError::field(
                            "plan.schedule.period",
                            format!("{t} differs from the pattern's period {}", p.period),
                        ));
                    }
                }
            }
        }
        Schedule::OneFOneB {
            micro_batches,
            micro_batch,
        }
        | Schedule::Gpipe {
            micro_batches,
            micro_batch,
        } => {
            if *micro_batches == Some(0) {
                return Err(InputError::field(
                    "plan.schedule.micro_batches",
                    "must be at least 1",
                ));
            }
            if *micro_batch == Some(0) {
                return Err(InputError::field(
                    "plan.schedule.micro_batch",
                    "must be at least 1",
                ));
            }
        }
    }
    Ok(())
}

/// Checks a stage's swap and recompute lists: one action per layer (none on a checkpointed
/// layer), swaps only with a host link (`cluster.pcie`) and on swappable tensors.
fn check_actions(inst: &Instance, s: &Stage, f: &dyn Fn(&str) -> String) -> Result<(), InputError> {
    if !s.has_memory_actions() {
        return Ok(());
    }
    for &c in &s.swap {
        if s.recompute.contains(&c) || s.checkpoint.contains(&c) {
            return Err(InputError::field(
                f("swap"),
                format!(
                    "layer {c} is also recomputed or checkpointed; choose one action per layer"
                ),
            ));
        }
    }
    for &c in &s.recompute {
        if s.checkpoint.contains(&c) {
            return Err(InputError::field(
                f("recompute"),
                format!("layer {c} is also checkpointed; choose one action per layer"),
            ));
        }
    }
    if s.swap.is_empty() {
        return Ok(());
    }
    if inst.cluster.pcie.is_none() {
        return Err(InputError::field(
            f("swap"),
            "swapping needs the host link bandwidth cluster.pcie, which the instance lacks",
        ));
    }
    let graph = crate::dawnpiper::graph::Graph::of(inst)?;
    if let Some(&c) = s.swap.iter().find(|&&c| !graph.nodes[c].swappable) {
        return Err(InputError::field(
            f("swap"),
            format!("layer {c}'s saved tensor is not swappable (extensions.graph.nodes[{c}].swappable = false)"),
        ));
    }
    Ok(())
}
