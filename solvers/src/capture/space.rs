//! The plan space shared by the family's algorithms: stage configs placed on consecutive GPUs of
//! a mesh of nodes, the predicted memory of every (layer range, config), the paper's tie-break
//! order, and the conversion of a chosen sequence of stages into a [`Plan`] and a [`Solution`].

use crate::algorithm::{
    Algorithm, Claimed, Context, Objective, ObjectiveKind, Solution, SolveError, Stats,
};
use crate::settings::{Kind, Param, Settings};
use pipeplan_formulations::capture::{MemoryProfile, Parallelism, Predictor, StageConfig};
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::{InputError, Instance};
use std::cmp::Ordering;

/// One stage of a plan: its last (predictor) layer and the index of its config in
/// [`PlanSpace::configs`]. The first layer follows from the previous stage.
pub type Choice = (usize, usize);

/// A plan space: predictor layers, allowed configs and the mesh.
#[derive(Debug, Clone)]
pub struct PlanSpace {
    /// The predictor (possibly over merged layers).
    pub predictor: Predictor,
    /// Allowed stage configs, in tie-break order.
    pub configs: Vec<StageConfig>,
    /// GPUs to fill (all of them must be used).
    pub gpus: usize,
    /// GPUs per node: a stage never straddles two nodes.
    pub per_node: usize,
    /// Number of predictor layers.
    pub layers: usize,
    /// `mem[(c * L + i) * L + j]` = predicted memory of layers i..=j under config c.
    mem: Vec<f64>,
    /// The same as (fixed part, batch-proportional part), for the 1F1B correction.
    parts: Vec<(f64, f64)>,
    /// 1F1B correction: (micro-batches m, in-flight count g of the statistics).
    correction: Option<(f64, f64)>,
    /// `min_stages[g]`: fewest stages that fill GPUs g..G.
    min_stages: Vec<usize>,
    /// What was derived, merged or assumed.
    pub notes: Vec<String>,
}

/// Settings shared by every algorithm of the family.
pub const COMMON_PARAMS: [Param; 2] = [
    Param::derived(
        "merge",
        Kind::Count { min: 1 },
        "merge the statistics to this many layers (layer merger; default: no merging)",
    ),
    Param::new(
        "correct_1f1b",
        Kind::Flag,
        "false",
        "scale batch-proportional memory to 1F1B's in-flight micro-batches",
    ),
];

impl PlanSpace {
    /// The pipeline-only space: `stages` stages of one GPU each.
    pub fn pipeline(inst: &Instance, ctx: &Context) -> Result<PlanSpace, SolveError> {
        let p = ctx.stage_count(inst)?;
        PlanSpace::build(inst, &ctx.settings, p, p, 1)
    }

    /// The hybrid space of CAPTURE: every GPU of the cluster, stages of power-of-two degree up to
    /// the GPUs per node, pp / dp / tp.
    pub fn hybrid(inst: &Instance, ctx: &Context) -> Result<PlanSpace, SolveError> {
        let g = inst.cluster.gpus as usize;
        let k = inst.gpus_per_node() as usize;
        if g % k != 0 {
            return Err(InputError::field(
                "cluster.gpus_per_node",
                format!("{k} GPUs per node do not divide the {g} GPUs into nodes"),
            )
            .into());
        }
        let max_degree = 1u32 << (usize::BITS - 1 - k.leading_zeros());
        PlanSpace::build(inst, &ctx.settings, g, k, max_degree)
    }

    fn build(
        inst: &Instance,
        settings: &Settings,
        gpus: usize,
        per_node: usize,
        max_degree: u32,
    ) -> Result<PlanSpace, SolveError> {
        let profile = MemoryProfile::of_instance(inst, max_degree)?;
        let mut notes = profile.notes.clone();
        let target = inst.micro_batch() as f64;
        let predictor = match settings.count("merge") {
            None => Predictor::new(&profile, target),
            Some(lm) => {
                let lm = lm as usize;
                notes.push(format!(
                    "layer merger: {} layers merged to {}",
                    profile.layers(),
                    lm.min(profile.layers())
                ));
                Predictor::merged(&profile, target, lm)?
            }
        };
        let configs = predictor.configs(max_degree);
        notes.extend(missing_configs_note(&configs, max_degree));
        let correction = if settings.flag("correct_1f1b") {
            let g = predictor.in_flight().ok_or_else(|| {
                InputError::field(
                    "extensions.memory_profile.in_flight",
                    "the 1F1B correction (--set correct_1f1b=true) needs the micro-batches in \
                     flight during profiling",
                )
            })?;
            let m = inst.micro_batches() as f64;
            notes.push(format!(
                "1F1B correction: batch-proportional memory x min({m}, P - stage) / {g}"
            ));
            Some((m, g))
        } else {
            None
        };
        let (mem, parts) = memory_tables(&predictor, &configs)?;
        let mut space = PlanSpace {
            layers: predictor.layers(),
            predictor,
            configs,
            gpus,
            per_node,
            mem,
            parts,
            correction,
            min_stages: Vec::new(),
            notes,
        };
        space.min_stages = space.min_stages();
        if space.min_stages[0] > space.layers {
            return Err(SolveError::Infeasible(format!(
                "{} layers cannot fill {gpus} GPUs: at least {} stages of one layer or more are \
                 needed",
                space.layers, space.min_stages[0]
            )));
        }
        Ok(space)
    }

    /// `min_stages[g]`: the fewest stages that fill GPUs `g..G` (`usize::MAX` when none do).
    fn min_stages(&self) -> Vec<usize> {
        let gpus = self.gpus;
        let mut min_stages: Vec<usize> = (0..=gpus).map(|_| usize::MAX).collect();
        min_stages[gpus] = 0;
        for g in (0..gpus).rev() {
            for c in 0..self.configs.len() {
                if let Some(next) = self.next_gpu(g, c) {
                    if min_stages[next] != usize::MAX {
                        min_stages[g] = min_stages[g].min(min_stages[next] + 1);
                    }
                }
            }
        }
        min_stages
    }

    /// Degree of config `c`.
    pub fn degree(&self, c: usize) -> usize {
        self.configs[c].degree as usize
    }

    /// Predicted per-GPU memory of layers `i..=j` under config `c`.
    #[inline]
    pub fn mem(&self, i: usize, j: usize, c: usize) -> f64 {
        self.mem[(c * self.layers + i) * self.layers + j]
    }

    /// Whether the 1F1B correction is on (stage memory then depends on the pipeline position).
    pub fn corrected(&self) -> bool {
        self.correction.is_some()
    }

    /// Predicted memory of layers `i..=j` under config `c` at pipeline position `s` of `p`
    /// (the position matters only under the 1F1B correction).
    #[inline]
    pub fn mem_at(&self, i: usize, j: usize, c: usize, s: usize, p: usize) -> f64 {
        match self.correction {
            None => self.mem(i, j, c),
            Some((m, g)) => {
                let (a, b) = self.parts[(c * self.layers + i) * self.layers + j];
                a + b * m.min((p - s) as f64) / g
            }
        }
    }

    /// A lower bound of [`PlanSpace::mem_at`] over every position (for pruning).
    #[inline]
    pub fn mem_lower(&self, i: usize, j: usize, c: usize) -> f64 {
        match self.correction {
            None => self.mem(i, j, c),
            Some((m, g)) => {
                let (a, b) = self.parts[(c * self.layers + i) * self.layers + j];
                let most = m.min(self.gpus as f64);
                a + b.min(b * most) / g
            }
        }
    }

    /// The GPU after a stage of config `c` placed at GPU `g`, if it fits in `g`'s node.
    #[inline]
    pub fn next_gpu(&self, g: usize, c: usize) -> Option<usize> {
        let d = self.degree(c);
        (g % self.per_node + d <= self.per_node && g + d <= self.gpus).then_some(g + d)
    }

    /// Whether layers `i..` can fill GPUs `g..` (enough layers for the fewest stages, and
    /// GPUs left exactly when layers are).
    #[inline]
    pub fn can_finish(&self, i: usize, g: usize) -> bool {
        let layers_left = self.layers - i;
        (layers_left == 0) == (g == self.gpus)
            && self.min_stages[g] != usize::MAX
            && layers_left >= self.min_stages[g]
    }

    /// Per-GPU predicted memory of a plan in placement order.
    pub fn memory_vector(&self, choices: &[Choice]) -> Vec<f64> {
        let mut first = 0;
        let mut v = Vec::with_capacity(self.gpus);
        let p = choices.len();
        for (s, &(last, c)) in choices.iter().enumerate() {
            let m = self.mem_at(first, last, c, s, p);
            v.extend(std::iter::repeat_n(m, self.degree(c)));
            first = last + 1;
        }
        v
    }

    /// The plan of a sequence of stages, on consecutive GPUs from 0, with the instance's
    /// schedule.
    pub fn plan(&self, inst: &Instance, choices: &[Choice]) -> Plan {
        let mut first = 0;
        let mut gpu = 0u32;
        let stages = choices
            .iter()
            .map(|&(last, c)| {
                let cfg = self.configs[c];
                let d = cfg.degree;
                let (a, _) = self.predictor.group(first);
                let (_, b) = self.predictor.group(last);
                first = last + 1;
                let gpus: Vec<u32> = (gpu..gpu + d).collect();
                gpu += d;
                let (dp, tp) = match cfg.parallelism {
                    Parallelism::Pp => (1, 1),
                    Parallelism::Dp => (d, 1),
                    Parallelism::Tp => (1, d),
                };
                Stage {
                    gpus,
                    dp,
                    tp,
                    ..Stage::single(a, b, 0)
                }
            })
            .collect();
        Plan {
            order: None,
            stages,
            schedule: Schedule::default_for(inst),
        }
    }

    /// A solution with the claimed predicted memory of a plan.
    pub fn solution(
        &self,
        algo: &dyn Algorithm,
        inst: &Instance,
        choices: &[Choice],
        stats: Stats,
    ) -> Solution {
        let v = self.memory_vector(choices);
        let mut per_gpu = vec![0.0; inst.cluster.gpus as usize];
        per_gpu[..v.len()].copy_from_slice(&v);
        let peak = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::PredictedPeakMemory, peak)),
            peak_memory: Some(per_gpu),
            max_memory: Some(peak),
            fits: Some(memory_limit::fits(peak, inst.usable_memory())),
            ..Claimed::default()
        };
        let mut sol =
            crate::algorithm::solution(algo, inst, self.plan(inst, choices), claimed, stats);
        sol.notes = self.notes.clone();
        sol
    }
}

/// The paper's tie-break as a total order on per-GPU memory vectors: sort each descending and
/// compare lexicographically (drop the highest GPU, compare the rest, repeat).
pub fn cmp_sorted_desc(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.total_cmp(y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

/// A plan's full rank: its per-GPU memory sorted descending, then (final tie-break, where the
/// paper picks at random) the stage sequence in lexicographic order.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// Per-GPU predicted memory, sorted descending.
    pub memory: Vec<f64>,
    /// The stages.
    pub choices: Vec<Choice>,
}

impl Key {
    /// The key of a plan.
    pub fn of(space: &PlanSpace, choices: &[Choice]) -> Key {
        let mut memory = space.memory_vector(choices);
        memory.sort_by(|a, b| b.total_cmp(a));
        Key {
            memory,
            choices: choices.to_vec(),
        }
    }

    /// The predicted peak.
    pub fn peak(&self) -> f64 {
        self.memory[0]
    }

    /// Total order: memory (tie-break), then stages.
    pub fn rank(&self, other: &Key) -> Ordering {
        cmp_sorted_desc(&self.memory, &other.memory).then_with(|| self.choices.cmp(&other.choices))
    }
}

/// The note naming the dp and tp configs up to `max_degree` the statistics do not cover.
fn missing_configs_note(configs: &[StageConfig], max_degree: u32) -> Option<String> {
    if max_degree <= 1 {
        return None;
    }
    let missing: Vec<String> = [Parallelism::Dp, Parallelism::Tp]
        .iter()
        .flat_map(|&p| {
            let mut d = 2;
            let mut v = Vec::new();
            while d <= max_degree {
                let c = StageConfig {
                    parallelism: p,
                    degree: d,
                };
                if !configs.contains(&c) {
                    v.push(c.to_string());
                }
                d *= 2;
            }
            v
        })
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "no statistics for {}: those stage configs are not considered",
            missing.join(", ")
        )
    })
}

/// [`PlanSpace`]'s `mem` and `parts`.
type MemoryTables = (Vec<f64>, Vec<(f64, f64)>);

/// The predicted memory of every (config, first layer, last layer), whole and as (fixed,
/// batch-proportional) parts; an overflow is an error.
fn memory_tables(
    predictor: &Predictor,
    configs: &[StageConfig],
) -> Result<MemoryTables, SolveError> {
    let l = predictor.layers();
    let mut mem = vec![f64::NAN; configs.len() * l * l];
    let mut parts = vec![(f64::NAN, f64::NAN); configs.len() * l * l];
    for (c, &cfg) in configs.iter().enumerate() {
        for i in 0..l {
            for j in i..l {
                let (a, b) = predictor.parts(i, j, cfg).expect("config is supported");
                mem[(c * l + i) * l + j] = a + b;
                parts[(c * l + i) * l + j] = (a, b);
            }
        }
    }
    if let Some(x) = mem.iter().find(|x| !x.is_nan() && !x.is_finite()) {
        return Err(InputError::field(
            "extensions.memory_profile",
            format!("a predicted stage memory overflows ({x})"),
        )
        .into());
    }
    Ok((mem, parts))
}
