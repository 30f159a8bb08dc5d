//! `pipedream`: PipeDream's planner (Narayanan et al., SOSP 2019), as its optimizer code computes
//! it (msr-fiddle/pipedream `optimizer/optimizer_graph_hierarchical.py`), followed by the valid
//! period of its partition under 1F1B*, which is how the MadPipe paper (§5) judges it: PipeDream's own pipeline model assumes at most P micro-batches in
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
//! Transfers enter the max only with `--set activation_compression_ratio=<r>` (divided by `r`;
//! default 1, as the optimizer's README demo runs it); `=none` ignores them, as the optimizer
//! does without its `--activation_compression_ratio` flag (the earlier `optimizer.py` and the
//! paper always count them). Ties go to the first split found (smallest `k`, then fewest
//! replicas); PipeDream iterates a Python set there, so its ties are arbitrary. On a chain,
//! PipeDream's antichain states are the layers and a state's output size is the layer's `cut`.
//!
//! # Levels
//!
//! On a cluster of several full nodes, all GPUs used, the search runs level by level as the
//! optimizer's `-n <gpus per node> <nodes> -b <intra> <inter>` does: the lower level fills
//! `A[i][j][m]` for every start `i` (the best pipeline of layers `i..=j` inside one node);
//! the upper level then partitions the chain over nodes with that time as a range's compute,
//! its weight synchronisation at the inter-node bandwidth (divided by the GPUs of a node for a
//! range that starts the pipeline, as the optimizer computes it, not for later ranges). Each
//! upper stage on `r` nodes is split by the lower level identically in each of its nodes.
//! Otherwise one level of every GPU is searched at the slowest link the pipeline crosses.
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
    Status,
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

/// One level of the optimizer's search: an `-n` entry and its `-b` bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct PdLevel {
    /// Machines of this level (GPUs at the innermost level, else blocks of the level below).
    pub machines: usize,
    /// Bandwidth between them (bytes/s).
    pub bandwidth: f64,
}

/// PipeDream's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PdConfig {
    /// Levels, innermost first (`-n 4 2 -b 1e10 1e9`: 4 GPUs per server at 10 GB/s, then 2
    /// servers at 1 GB/s). Every machine is used.
    pub levels: Vec<PdLevel>,
    /// Allow replicated stages (else straight: one machine per stage).
    pub replicate: bool,
    /// Apply PipeDream's memory check.
    pub memory_check: bool,
    /// Memory per machine (bytes).
    pub memory: f64,
    /// The optimizer's `--activation_compression_ratio`: activation transfers between stages
    /// enter the pipeline time divided by it; `None` (the optimizer's default) ignores them.
    pub activation_compression_ratio: Option<f64>,
}

impl PdConfig {
    /// One level of `machines` at `bandwidth`.
    pub fn single(machines: usize, bandwidth: f64) -> PdConfig {
        PdConfig {
            levels: vec![PdLevel {
                machines,
                bandwidth,
            }],
            replicate: false,
            memory_check: false,
            memory: f64::INFINITY,
            activation_compression_ratio: Some(1.0),
        }
    }

    /// GPUs used: the product of the levels' machines.
    pub fn gpus(&self) -> usize {
        self.levels.iter().map(|l| l.machines).product()
    }
}

/// One stage of PipeDream's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PdStage {
    /// First layer.
    pub first: usize,
    /// Last layer (inclusive).
    pub last: usize,
    /// Replicas (over all levels).
    pub replicas: usize,
    /// GPUs of the replicas (`replicas` of them).
    pub gpus: Vec<u32>,
    /// PipeDream's stashed-data estimate for the stage at the innermost level (bytes per
    /// replica).
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
    fn compute(&self, i: usize, j: usize) -> f64 {
        self.compute[j + 1] - self.compute[i]
    }
    fn activation(&self, i: usize, j: usize) -> f64 {
        self.activation[j + 1] - self.activation[i]
    }
    fn parameters(&self, i: usize, j: usize) -> f64 {
        self.parameters[j + 1] - self.parameters[i]
    }
}

/// The cost terms of one level (the formulas of the module docs, in ms and bytes).
struct LevelCost<'a> {
    p: &'a PdProfile,
    s: Sums,
    cfg: &'a PdConfig,
    machines: usize,
    bandwidth: f64,
    /// GPUs in one machine of this level (the optimizer's `num_machines_within_machine`).
    within: usize,
}

impl<'a> LevelCost<'a> {
    fn new(p: &'a PdProfile, cfg: &'a PdConfig, level: usize) -> LevelCost<'a> {
        LevelCost {
            p,
            s: Sums::new(p),
            cfg,
            machines: cfg.levels[level].machines,
            bandwidth: cfg.levels[level].bandwidth,
            within: cfg.levels[..level].iter().map(|l| l.machines).product(),
        }
    }

    /// Data-parallel weight synchronisation of layers `i..=j` over `r` replicas.
    fn sync(&self, i: usize, j: usize, r: usize) -> f64 {
        4.0 * (r - 1) as f64 * self.s.parameters(i, j) / (self.bandwidth * r as f64) * 1e3
    }

    /// Stashed bytes of layers `i..=j` on `r` replicas with `used` machines of the level up to
    /// and including them: `ceil((N - used) / r) (A + W)` (Python 3's `math.ceil(a / b)`).
    fn stashed(&self, i: usize, j: usize, r: usize, used: usize) -> f64 {
        (self.machines - used).div_ceil(r) as f64
            * (self.s.activation(i, j) + self.s.parameters(i, j))
    }

    fn rejected(&self, i: usize, j: usize, r: usize, used: usize) -> bool {
        self.cfg.memory_check && self.stashed(i, j, r, used) > self.cfg.memory
    }

    /// Transfer of the activations crossing the cut after `cut_after` (forward and gradient)
    /// over `r` lanes, divided by the compression ratio; 0 when transfers are ignored.
    fn transfer(&self, cut_after: usize, r: usize) -> f64 {
        match self.cfg.activation_compression_ratio {
            Some(ratio) => {
                2.0 * self.p.output[cut_after] / (self.bandwidth * r as f64) * 1e3 / ratio
            }
            None => 0.0,
        }
    }

    /// Time of a range that starts a pipeline (no split before it) on `r` replicas; its
    /// synchronisation is shared by the `within` GPUs of each machine.
    fn first_stage(&self, compute: f64, i: usize, j: usize, r: usize) -> f64 {
        (compute + self.sync(i, j, r) / self.within as f64) / r as f64
    }

    /// Time of a range after a split on `r` replicas (the optimizer does not divide this
    /// synchronisation by `within`).
    fn later_stage(&self, compute: f64, i: usize, j: usize, r: usize) -> f64 {
        (compute + self.sync(i, j, r)) / r as f64
    }

    fn top(&self, m: usize) -> usize {
        if self.cfg.replicate {
            m
        } else {
            1
        }
    }
}

/// Best pipeline time of a range: (time, split `(k, machines index of the prefix)`, replicas of
/// the last stage).
type Cell = Option<(f64, Option<(usize, usize)>, usize)>;

/// The optimizer's `A[i][j][m]` of one level for `i < starts`.
struct Table {
    n: usize,
    nm: usize,
    cells: Vec<Cell>,
}

impl Table {
    fn get(&self, i: usize, j: usize, m: usize) -> Cell {
        self.cells[(i * self.n + j) * self.nm + m]
    }

    /// Least time of layers `i..=j` on every machine of the level.
    fn best(&self, i: usize, j: usize) -> Option<f64> {
        self.get(i, j, self.nm - 1).map(|c| c.0)
    }

    /// `(first, last, replicas, machines used up to it)` of the stages of `A[i][j][m]`.
    fn walk(&self, i: usize, j: usize, m: usize) -> Vec<(usize, usize, usize, usize)> {
        let mut stages = Vec::new();
        let (mut j, mut m) = (j, m);
        while let Some((_, split, r)) = self.get(i, j, m) {
            match split {
                Some((k, mp)) => {
                    stages.push((k + 1, j, r, m + 1));
                    j = k;
                    m = mp;
                }
                None => {
                    stages.push((i, j, r, m + 1));
                    break;
                }
            }
        }
        stages.reverse();
        stages
    }
}

/// One level's DP (`compute_partitioning`): `compute(i, j)` is the time of layers `i..=j` on
/// one machine of the level (their compute at the innermost level, the level below's best
/// time above it). Rows `i < starts` are filled: every start below the final level, the first
/// only at the final one.
fn level_table(
    c: &LevelCost,
    compute: &dyn Fn(usize, usize) -> Option<f64>,
    starts: usize,
) -> Table {
    let (n, nm) = (c.p.len(), c.machines);
    let mut t = Table {
        n,
        nm,
        cells: vec![None; starts * n * nm],
    };
    let at = |i: usize, j: usize, m: usize| (i * n + j) * nm + m;
    for i in 0..starts {
        for j in i..n {
            let Some(u) = compute(i, j) else { continue };
            for m in 0..c.top(nm) {
                if !c.rejected(i, j, m + 1, m + 1) {
                    t.cells[at(i, j, m)] = Some((c.first_stage(u, i, j, m + 1), None, m + 1));
                }
            }
        }
        for m in 1..nm {
            for j in i + 1..n {
                let mut best = t.cells[at(i, j, m)];
                for k in i..j {
                    let Some(u) = compute(k + 1, j) else { continue };
                    for mp in 1..=c.top(m) {
                        if c.rejected(k + 1, j, mp, m + 1) {
                            continue;
                        }
                        let Some((prev, _, _)) = t.cells[at(i, k, m - mp)] else {
                            continue;
                        };
                        let mut time = prev
                            .max(c.later_stage(u, k + 1, j, mp))
                            .max(c.transfer(k, mp));
                        if j + 1 < n {
                            time = time.max(c.transfer(j, mp));
                        }
                        if best.is_none_or(|b| b.0 > time) {
                            best = Some((time, Some((k, m - mp)), mp));
                        }
                    }
                }
                t.cells[at(i, j, m)] = best;
            }
        }
    }
    t
}

/// PipeDream's objective of a configuration of layers `i..=j` at one level (`(first, last,
/// replicas)` per stage, in order, covering the range and using every machine of the level),
/// with `compute(i, j)` the time of layers `i..=j` on one machine of the level; `None` when its
/// memory check rejects a stage or a range has no time. The DP minimizes this; brute-force
/// tests use it.
pub fn pd_level_objective(
    p: &PdProfile,
    cfg: &PdConfig,
    level: usize,
    compute: &dyn Fn(usize, usize) -> Option<f64>,
    stages: &[(usize, usize, usize)],
) -> Option<f64> {
    let c = LevelCost::new(p, cfg, level);
    let mut used = 0;
    let mut worst: f64 = 0.0;
    for (idx, &(i, j, r)) in stages.iter().enumerate() {
        used += r;
        if c.rejected(i, j, r, used) {
            return None;
        }
        let u = compute(i, j)?;
        if idx == 0 {
            worst = worst.max(c.first_stage(u, i, j, r));
        } else {
            worst = worst
                .max(c.later_stage(u, i, j, r))
                .max(c.transfer(i - 1, r));
            if j + 1 < p.len() {
                worst = worst.max(c.transfer(j, r));
            }
        }
    }
    Some(worst)
}

/// [`pd_level_objective`] of a single-level configuration of the whole chain.
pub fn pd_objective(
    p: &PdProfile,
    cfg: &PdConfig,
    stages: &[(usize, usize, usize)],
) -> Option<f64> {
    let s = Sums::new(p);
    pd_level_objective(p, cfg, 0, &|i, j| Some(s.compute(i, j)), stages)
}

/// PipeDream's dynamic program, level by level (see the module docs). `None` when no
/// configuration passes the memory check (or fewer layers than machines in a straight
/// pipeline).
pub fn pipedream_partition(p: &PdProfile, cfg: &PdConfig) -> Option<PdPartition> {
    let n = p.len();
    if n == 0 || cfg.levels.is_empty() || cfg.levels.iter().any(|l| l.machines == 0) {
        return None;
    }
    let costs: Vec<LevelCost> = (0..cfg.levels.len())
        .map(|l| LevelCost::new(p, cfg, l))
        .collect();
    let top = cfg.levels.len() - 1;
    let mut tables: Vec<Table> = Vec::new();
    for (l, c) in costs.iter().enumerate() {
        let starts = if l == top { 1 } else { n };
        let table = match tables.last() {
            None => level_table(c, &|i, j| Some(c.s.compute(i, j)), starts),
            Some(below) => level_table(c, &|i, j| below.best(i, j), starts),
        };
        tables.push(table);
    }
    let time = tables[top].best(0, n - 1)?;
    let mut stages = Vec::new();
    expand(&tables, &costs, top, 0, n - 1, &[0], &mut stages);
    Some(PdPartition { time, stages })
}

/// The stages of layers `i..=j` at `level`, replicated on the level-above machines starting at
/// GPUs `bases`: each stage takes its replicas' blocks of GPUs in order and is split further by
/// the level below, identically in every block.
fn expand(
    tables: &[Table],
    costs: &[LevelCost],
    level: usize,
    i: usize,
    j: usize,
    bases: &[u32],
    out: &mut Vec<PdStage>,
) {
    let c = &costs[level];
    let table = &tables[level];
    let mut offset = 0u32;
    for (first, last, r, used) in table.walk(i, j, c.machines - 1) {
        let gpus: Vec<u32> = bases
            .iter()
            .flat_map(|&b| (offset..offset + r as u32).map(move |q| b + q * c.within as u32))
            .collect();
        offset += r as u32;
        if level == 0 {
            out.push(PdStage {
                first,
                last,
                replicas: gpus.len(),
                stashed: c.stashed(first, last, r, used),
                gpus,
            });
        } else {
            expand(tables, costs, level - 1, first, last, &gpus, out);
        }
    }
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

/// `--set activation_compression_ratio=<positive number>|none` (default 1: transfers count in
/// full, as the optimizer's README demo runs it).
fn compression_ratio(opts: &SolveOptions) -> Result<Option<f64>, SolveError> {
    let key = "activation_compression_ratio";
    match opts.params.get(key).map(String::as_str) {
        None => Ok(Some(1.0)),
        Some("none") => Ok(None),
        Some(v) => match v.parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 => Ok(Some(r)),
            _ => Err(SolveError::Input(InputError::field(
                format!("--set {key}"),
                format!("expected a positive number or none, found {v:?}"),
            ))),
        },
    }
}

/// The plan of a PipeDream partition: each stage on its replicas' GPUs.
pub fn pd_plan(part: &PdPartition) -> Plan {
    let stages = part
        .stages
        .iter()
        .map(|st| Stage {
            dp: st.replicas as u32,
            gpus: st.gpus.clone(),
            ..Stage::single(st.first, st.last, 0)
        })
        .collect();
    Plan {
        stages,
        schedule: async_schedule(None),
    }
}

/// The levels searched: one level of every GPU at the slowest link, or, on a cluster of
/// several full nodes using every GPU, the GPUs of a node then the nodes (the optimizer's
/// `-n <gpus per node> <nodes> -b <intra> <inter>`).
fn levels(inst: &Instance, machines: usize) -> Vec<PdLevel> {
    let (gpus, per_node) = (inst.cluster.gpus as usize, inst.gpus_per_node() as usize);
    if per_node < gpus && gpus % per_node == 0 && machines == gpus {
        return vec![
            PdLevel {
                machines: per_node,
                bandwidth: inst.cluster.bandwidth.intra_node,
            },
            PdLevel {
                machines: gpus / per_node,
                bandwidth: inst.inter_node_bandwidth(),
            },
        ];
    }
    let used: Vec<u32> = (0..machines as u32).collect();
    vec![PdLevel {
        machines,
        bandwidth: inst.group_bandwidth(&used),
    }]
}

fn describe_levels(levels: &[PdLevel]) -> String {
    levels
        .iter()
        .map(|l| format!("{} x {:.3} GB/s", l.machines, l.bandwidth / 1e9))
        .collect::<Vec<_>>()
        .join(", then ")
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
    fn solve(&self, inst: &Instance, opts: &SolveOptions) -> Result<Solution, SolveError> {
        opts.check_params(
            self.name(),
            &["replicate", "memory_check", "activation_compression_ratio"],
        )?;
        let replicate = flag(opts, "replicate", false)?;
        let memory_check = flag(opts, "memory_check", true)?;
        let activation_compression_ratio = compression_ratio(opts)?;
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
        let cfg = PdConfig {
            levels: levels(inst, machines),
            replicate,
            memory_check,
            memory: inst.cluster.memory,
            activation_compression_ratio,
        };
        let profile = PdProfile::of(inst);
        let Some(part) = pipedream_partition(&profile, &cfg) else {
            return Err(SolveError::Infeasible(format!(
                "PipeDream's memory check ((activations + weights) x ceil((N - machines so far) \
                 / replicas) <= {} per GPU) rejects every {} on {}; \
                 --set memory_check=false skips it",
                fmt_bytes(cfg.memory),
                if replicate {
                    "replicated pipeline"
                } else {
                    "straight pipeline"
                },
                describe_levels(&cfg.levels)
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
            "PipeDream's partition [{}] ({} pipeline searched on {}, its memory check {} \
             (the optimizer's --use_memory_constraint; off by default there), activation \
             transfers {}); it predicts {:.6} ms per micro-batch",
            describe(&part),
            if replicate { "replicated" } else { "straight" },
            describe_levels(&cfg.levels),
            if memory_check { "on" } else { "off" },
            match activation_compression_ratio {
                Some(r) => format!("divided by a compression ratio of {r}"),
                None => "ignored (activation_compression_ratio=none)".into(),
            },
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
            replicate,
            memory: 16e9,
            ..PdConfig::single(machines, 1e12)
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
