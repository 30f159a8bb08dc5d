//! `pipedream`: PipeDream's planner (Narayanan et al., SOSP 2019), as its optimizer code computes
//! it (msr-fiddle/pipedream `optimizer/optimizer_graph_hierarchical.py`, one level, the final
//! one), followed by the valid period of its partition under 1F1B*, which is how the MadPipe
//! paper (§5) judges it: PipeDream's own pipeline model assumes at most P micro-batches in
//! flight and is "very optimistic" (the paper's dashed lines); the period a memory-valid 1F1B*
//! schedule reaches on its partition is the solid line.
//!
//! # PipeDream's dynamic program
//!
//! `A[j][m]` = least pipeline time of layers `0..=j` on `m + 1` machines. A single stage on
//! `m + 1` replicas takes `(U + 4 m W / (beta (m + 1))) / (m + 1)` (compute plus its data-parallel
//! weight synchronisation, shared by the replicas). A split after layer `k` puts layers
//! `k+1..=j` on `m'` replicas after `A[k][m - m']`; the pipeline time is the max of the prefix's,
//! the last stage's `(U + 4 (m' - 1) W / (beta m')) / m'`, and the transfers into and out of it,
//! `2 a / (beta m')` (activation forward plus gradient back over `m'` lanes; `a` = bytes crossing
//! the cut). Every machine is used (`--use_fewer_machines` off). Straight pipeline (the default
//! here, as the MadPipe paper compares: one GPU per stage): `m' = 1` and exactly P stages;
//! `--set replicate=true` allows replicated (data-parallel) stages.
//!
//! **Memory check** (`--use_memory_constraint`; on by default here, `--set memory_check=false`
//! turns it off): a stage of activations `A` (sum of its layers' *outputs*) and parameters `W` on
//! `m'` replicas, with `m + 1` machines used up to it, is rejected when
//! `(A + W) ceil((N - (m + 1)) / m') > M`. It counts one weight version, no gradient or optimizer
//! state and no buffers, and the last stage always passes: rough, as the MadPipe paper says.
//!
//! Transfers enter the max (the code does so only with `--activation_compression_ratio`; the
//! earlier `optimizer.py` and the paper always do), with `beta` the slowest link of the cluster.
//! Ties go to the first split found (smallest `k`, then fewest replicas); PipeDream iterates a
//! Python set there, so its ties are arbitrary. On a chain, PipeDream's antichain states are the
//! layers and a state's output size is the layer's `cut` (every tensor live across the cut).
//!
//! # Claims
//!
//! The claimed objective is PipeDream's own `A[L-1][N-1]` ("pipedream max stage time", also in
//! `claimed.period_ms`, as PipeDream predicts a period). The plan carries the valid period, also
//! stated in the notes; when no period fits the memory, the solve fails with the GPU that does
//! not fit.

use super::valid_period::{async_schedule, valid_period_of_plan, ValidPeriodError};
use crate::algorithm::{
    solution, Algorithm, Claimed, Family, Objective, Solution, SolveError, SolveOptions, Stats,
    Status, Unsupported,
};
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance, Plan, Stage};

/// Objective name of PipeDream's own estimate.
pub const PIPEDREAM_TIME: &str = "pipedream max stage time";

/// PipeDream's planner followed by its valid 1F1B* period (see the module docs).
pub struct PipeDream;

/// The per-layer numbers PipeDream's optimizer reads, in its units except time (ms).
#[derive(Debug, Clone, PartialEq)]
pub struct PdProfile {
    /// Forward + backward time of each layer (ms).
    pub compute: Vec<f64>,
    /// Activation size of each layer (bytes): its output.
    pub activation: Vec<f64>,
    /// Parameter bytes of each layer.
    pub parameters: Vec<f64>,
    /// Bytes crossing a cut after each layer (PipeDream's `output_activation_size` of a state).
    pub output: Vec<f64>,
}

impl PdProfile {
    /// The profile of an instance's chain at its trained micro-batch.
    pub fn of(inst: &Instance) -> PdProfile {
        let c = inst.chain();
        PdProfile {
            compute: (0..c.len()).map(|i| c.forward[i] + c.backward[i]).collect(),
            activation: c.act[1..].to_vec(),
            parameters: c.weights.clone(),
            output: c.cut.clone(),
        }
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.compute.len()
    }

    /// True without layers.
    pub fn is_empty(&self) -> bool {
        self.compute.is_empty()
    }
}

/// PipeDream's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PdConfig {
    /// Machines N (all are used).
    pub machines: usize,
    /// Allow replicated stages (else straight: one machine per stage).
    pub replicate: bool,
    /// Apply PipeDream's memory check.
    pub memory_check: bool,
    /// Memory per machine (bytes).
    pub memory: f64,
    /// Bandwidth (bytes/s).
    pub bandwidth: f64,
}

/// One stage of PipeDream's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PdStage {
    /// First layer.
    pub first: usize,
    /// Last layer (inclusive).
    pub last: usize,
    /// Replicas.
    pub replicas: usize,
    /// PipeDream's stashed-data estimate for the stage (bytes per replica).
    pub stashed: f64,
}

/// PipeDream's partition and its own pipeline time.
#[derive(Debug, Clone, PartialEq)]
pub struct PdPartition {
    /// Predicted time per micro-batch of the pipeline (ms).
    pub time: f64,
    /// Stages in chain order.
    pub stages: Vec<PdStage>,
}

/// Prefix sums, differenced as PipeDream differences its cumulative states.
struct Sums {
    compute: Vec<f64>,
    activation: Vec<f64>,
    parameters: Vec<f64>,
}

impl Sums {
    fn new(p: &PdProfile) -> Sums {
        let pre = |v: &[f64]| {
            let mut s = vec![0.0; v.len() + 1];
            for i in 0..v.len() {
                s[i + 1] = s[i] + v[i];
            }
            s
        };
        Sums {
            compute: pre(&p.compute),
            activation: pre(&p.activation),
            parameters: pre(&p.parameters),
        }
    }
    /// Sums over layers `i..=j`: (compute, activation, parameters).
    fn range(&self, i: usize, j: usize) -> (f64, f64, f64) {
        (
            self.compute[j + 1] - self.compute[i],
            self.activation[j + 1] - self.activation[i],
            self.parameters[j + 1] - self.parameters[i],
        )
    }
}

/// `ceil(a / b)` for `a >= 0`, `b >= 1` (Python 3's `math.ceil(a / b)`).
fn ceil_div(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

/// PipeDream's terms for layers `i..=j` on `r` replicas with `used` machines up to and including
/// this stage: (stage time, stashed bytes, rejected by the memory check).
fn stage_terms(s: &Sums, cfg: &PdConfig, i: usize, j: usize, r: usize, used: usize) -> (f64, f64) {
    let (u, a, w) = s.range(i, j);
    let stashed = ceil_div(cfg.machines - used, r) as f64 * (a + w);
    let sync = 4.0 * (r - 1) as f64 * w / (cfg.bandwidth * r as f64) * 1e3;
    ((u + sync) / r as f64, stashed)
}

fn transfer(p: &PdProfile, cfg: &PdConfig, cut_after: usize, r: usize) -> f64 {
    2.0 * p.output[cut_after] / (cfg.bandwidth * r as f64) * 1e3
}

/// PipeDream's objective of a given configuration (`(first, last, replicas)` per stage, in
/// order, covering the chain and using exactly `cfg.machines`), or `None` when its memory check
/// rejects a stage. The DP minimizes this; brute-force tests use it.
pub fn pd_objective(
    p: &PdProfile,
    cfg: &PdConfig,
    stages: &[(usize, usize, usize)],
) -> Option<f64> {
    let s = Sums::new(p);
    let n = p.len();
    let mut used = 0;
    let mut worst: f64 = 0.0;
    for (idx, &(i, j, r)) in stages.iter().enumerate() {
        used += r;
        let (t, stashed) = stage_terms(&s, cfg, i, j, r, used);
        if cfg.memory_check && stashed > cfg.memory {
            return None;
        }
        worst = worst.max(t);
        if idx > 0 {
            worst = worst.max(transfer(p, cfg, i - 1, r));
            if j + 1 < n {
                worst = worst.max(transfer(p, cfg, j, r));
            }
        }
    }
    Some(worst)
}

/// PipeDream's dynamic program (see the module docs). `None` when no configuration passes the
/// memory check (or fewer layers than machines in a straight pipeline).
pub fn pipedream_partition(p: &PdProfile, cfg: &PdConfig) -> Option<PdPartition> {
    let n = p.len();
    let nm = cfg.machines;
    if n == 0 || nm == 0 {
        return None;
    }
    let s = Sums::new(p);
    // a[j][m] = (time, split (k, m_prev), replicas of the last stage).
    type Cell = Option<(f64, Option<(usize, usize)>, usize)>;
    let mut a: Vec<Vec<Cell>> = vec![vec![None; nm]; n];
    for (j, row) in a.iter_mut().enumerate() {
        let top = if cfg.replicate { nm } else { 1 };
        for (m, cell) in row.iter_mut().enumerate().take(top) {
            let (t, stashed) = stage_terms(&s, cfg, 0, j, m + 1, m + 1);
            if cfg.memory_check && stashed > cfg.memory {
                continue;
            }
            *cell = Some((t, None, m + 1));
        }
    }
    for m in 1..nm {
        for j in 1..n {
            let mut best = a[j][m];
            for (k, prefix) in a[..j].iter().enumerate() {
                let top = if cfg.replicate { m } else { 1 };
                for mp in 1..=top {
                    let (last, stashed) = stage_terms(&s, cfg, k + 1, j, mp, m + 1);
                    if cfg.memory_check && stashed > cfg.memory {
                        continue;
                    }
                    let Some((prev, _, _)) = prefix[m - mp] else {
                        continue;
                    };
                    let mut t = prev.max(last).max(transfer(p, cfg, k, mp));
                    if j + 1 < n {
                        t = t.max(transfer(p, cfg, j, mp));
                    }
                    if best.is_none_or(|b| b.0 > t) {
                        best = Some((t, Some((k, m - mp)), mp));
                    }
                }
            }
            a[j][m] = best;
        }
    }
    let (time, _, _) = a[n - 1][nm - 1]?;
    let mut stages = Vec::new();
    let (mut j, mut m) = (n - 1, nm - 1);
    loop {
        let (_, split, r) = a[j][m]?;
        match split {
            Some((k, mp)) => {
                stages.push((k + 1, j, r, m + 1));
                j = k;
                m = mp;
            }
            None => {
                stages.push((0, j, r, m + 1));
                break;
            }
        }
    }
    stages.reverse();
    let stages = stages
        .into_iter()
        .map(|(first, last, replicas, used)| PdStage {
            first,
            last,
            replicas,
            stashed: stage_terms(&s, cfg, first, last, replicas, used).1,
        })
        .collect();
    Some(PdPartition { time, stages })
}

fn flag(opts: &SolveOptions, key: &str, default: bool) -> Result<bool, SolveError> {
    match opts.params.get(key).map(String::as_str) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => Err(SolveError::Input(InputError::field(
            format!("--set {key}"),
            format!("expected true or false, found {v:?}"),
        ))),
    }
}

/// The plan of a PipeDream partition: stage s on the next `replicas` GPUs, in order.
pub fn pd_plan(part: &PdPartition) -> Plan {
    let mut next = 0u32;
    let stages = part
        .stages
        .iter()
        .map(|st| {
            let gpus: Vec<u32> = (next..next + st.replicas as u32).collect();
            next += st.replicas as u32;
            Stage {
                dp: st.replicas as u32,
                gpus,
                ..Stage::single(st.first, st.last, 0)
            }
        })
        .collect();
    Plan {
        stages,
        schedule: async_schedule(None),
    }
}

fn describe(part: &PdPartition) -> String {
    part.stages
        .iter()
        .map(|s| {
            let l = if s.first == s.last {
                format!("{}", s.first)
            } else {
                format!("{}-{}", s.first, s.last)
            };
            if s.replicas > 1 {
                format!("{l} x{}", s.replicas)
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

impl Algorithm for PipeDream {
    fn name(&self) -> &'static str {
        "pipedream"
    }
    fn family(&self) -> Family {
        Family::Madpipe
    }
    fn description(&self) -> &'static str {
        "PipeDream's partitioning DP (straight; --set replicate=true for data-parallel stages) \
         with its rough memory check, judged at its valid 1F1B* period"
    }
    fn exact(&self) -> bool {
        false
    }
    fn supports(&self, _: &Instance) -> Result<(), Unsupported> {
        Ok(())
    }
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(self.name(), &["replicate", "memory_check"])?;
        let replicate = flag(opts, "replicate", false)?;
        let memory_check = flag(opts, "memory_check", true)?;
        let machines = if replicate {
            // Machines, not stages: a replicated pipeline may use more GPUs than layers.
            match opts.stages {
                None => inst.cluster.gpus as usize,
                Some(s) if s >= 1 && s <= inst.cluster.gpus as usize => s,
                Some(s) => {
                    return Err(SolveError::Input(InputError::field(
                        "--stages",
                        format!(
                            "with replicate=true it is the number of GPUs used: {s} is not in \
                             1..={}",
                            inst.cluster.gpus
                        ),
                    )))
                }
            }
        } else {
            opts.stage_count(inst)?
        };
        let all: Vec<u32> = (0..inst.cluster.gpus).collect();
        let cfg = PdConfig {
            machines,
            replicate,
            memory_check,
            memory: inst.cluster.memory,
            bandwidth: inst.group_bandwidth(&all),
        };
        let profile = PdProfile::of(inst);
        let Some(part) = pipedream_partition(&profile, &cfg) else {
            return Err(SolveError::Infeasible(format!(
                "PipeDream's memory check ((activations + weights) x ceil((N - machines so far) \
                 / replicas) <= {} per GPU) rejects every {} on {machines} GPUs; \
                 --set memory_check=false skips it",
                fmt_bytes(cfg.memory),
                if replicate {
                    "replicated pipeline"
                } else {
                    "straight pipeline"
                }
            )));
        };
        let mut plan = pd_plan(&part);
        let vp = valid_period_of_plan(inst, &plan).map_err(|e| match e {
            ValidPeriodError::Input(i) => SolveError::Input(i),
            ValidPeriodError::Memory(m) => SolveError::Infeasible(format!(
                "PipeDream's partition [{}] has no valid 1F1B* period: {m}",
                describe(&part)
            )),
        })?;
        plan.schedule = async_schedule(Some(vp.period));
        let claimed = Claimed {
            objective: Some(Objective {
                name: PIPEDREAM_TIME.into(),
                value: part.time,
                unit: "ms".into(),
            }),
            period_ms: Some(part.time),
            throughput: (part.time > 0.0).then(|| inst.micro_batch() as f64 / part.time * 1e3),
            fits: memory_check.then_some(true),
            ..Claimed::default()
        };
        let mut sol = solution(self, inst, plan, claimed, Stats::new(Status::Heuristic));
        sol.notes.push(format!(
            "PipeDream's partition [{}] ({} pipeline, beta = {:.3} GB/s, its memory check {}); \
             it predicts {:.6} ms per micro-batch",
            describe(&part),
            if replicate { "replicated" } else { "straight" },
            cfg.bandwidth / 1e9,
            if memory_check { "on" } else { "off" },
            part.time
        ));
        sol.notes.push(format!(
            "valid period under 1F1B* (the period of the plan): {:.6} ms, groups {:?} (the \
             loads alone allow {:.6} ms)",
            vp.period, vp.groups, vp.max_load
        ));
        sol.notes.push(format!(
            "PipeDream's stashed-data estimates per stage: {}",
            part.stages
                .iter()
                .map(|s| fmt_bytes(s.stashed))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if inst.training.schedule != ScheduleKind::Async {
            sol.notes.push(format!(
                "asynchronous 1F1B* schedule (the MadPipe family's); the instance's default \
                 schedule {} is not used",
                inst.training.schedule
            ));
        }
        Ok(sol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(compute: &[f64]) -> PdProfile {
        PdProfile {
            compute: compute.to_vec(),
            activation: vec![1e6; compute.len()],
            parameters: vec![1e6; compute.len()],
            output: vec![1e6; compute.len()],
        }
    }

    fn cfg(machines: usize, replicate: bool) -> PdConfig {
        PdConfig {
            machines,
            replicate,
            memory_check: false,
            memory: 16e9,
            bandwidth: 1e12,
        }
    }

    #[test]
    fn straight_is_min_max_with_exactly_n_stages() {
        let p = profile(&[4.0, 1.0, 1.0, 1.0, 1.0, 4.0]);
        let part = pipedream_partition(&p, &cfg(3, false)).unwrap();
        let ranges: Vec<_> = part.stages.iter().map(|s| (s.first, s.last)).collect();
        assert_eq!(ranges, vec![(0, 0), (1, 4), (5, 5)]);
        assert!((part.time - 4.0).abs() < 1e-9);
    }

    #[test]
    fn replication_splits_a_heavy_layer() {
        // A heavy layer and a light one with many parameters (expensive to replicate): 3
        // replicas of the heavy layer (9 ms / 3 plus a little weight synchronisation), 1 light.
        let mut p = profile(&[9.0, 1.0]);
        p.parameters[1] = 1e10;
        let part = pipedream_partition(&p, &cfg(4, true)).unwrap();
        assert_eq!(part.stages.len(), 2);
        assert_eq!(part.stages[0].replicas, 3);
        assert_eq!(part.stages[1].replicas, 1);
        assert!((part.time - 3.0).abs() < 1e-2, "{part:?}");
    }

    #[test]
    fn memory_check_can_reject_everything() {
        let p = profile(&[1.0, 1.0]);
        let c = PdConfig {
            memory_check: true,
            memory: 1e6,
            ..cfg(2, false)
        };
        assert_eq!(pipedream_partition(&p, &c), None);
    }
}
