//! PipeDream's dynamic program, level by level, as its optimizer computes it (the formulas are
//! in the parent module's docs): the cost terms of a level, the `A[i][j][m]` tables, and the
//! partition read back from them.

use super::states::PdStates;
use crate::algorithm::SolveError;
use crate::deadline::Deadline;
use pipeplan_formulations::layer_order::Dag;
use pipeplan_formulations::Instance;

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
    /// The layer graph (`[from, to]` edges, `extensions.dag`), when the instance has it.
    pub edges: Option<Vec<[usize; 2]>>,
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
            edges: Dag::of(inst)
                .ok()
                .flatten()
                .map(|d| d.edges)
                .filter(|e| !e.is_empty()),
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
    /// The optimizer's `--use_fewer_machines`: a range may leave machines of its level unused
    /// when that is faster (`A[i][j][m]` takes `A[i][j][m - 1]`).
    pub use_fewer_machines: bool,
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
            use_fewer_machines: false,
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
    /// First state of its range: the stage runs after state `first - 1` (from the start when
    /// 0). On the chain's prefixes, its first layer.
    pub first: usize,
    /// Last state (inclusive); on the chain's prefixes, its last layer.
    pub last: usize,
    /// Its layers, ascending.
    pub layers: Vec<usize>,
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

/// A range's sum: state `j`'s minus state `i - 1`'s, as the optimizer differences them.
fn range(v: &[f64], i: usize, j: usize) -> f64 {
    if i == 0 {
        v[j]
    } else {
        v[j] - v[i - 1]
    }
}

/// The cost terms of one level (the formulas of the module docs, in ms and bytes).
struct LevelCost<'a> {
    s: &'a PdStates,
    cfg: &'a PdConfig,
    machines: usize,
    bandwidth: f64,
    /// GPUs in one machine of this level: the product of the machines of the levels below.
    within: usize,
    /// What the synchronisation of a range that starts the pipeline is divided by: the
    /// optimizer's `num_machines_within_machine`, the machines of the level just below (not
    /// the GPUs of a machine: the two differ from three levels on).
    share: usize,
}

impl<'a> LevelCost<'a> {
    fn new(s: &'a PdStates, cfg: &'a PdConfig, level: usize) -> LevelCost<'a> {
        LevelCost {
            s,
            cfg,
            machines: cfg.levels[level].machines,
            bandwidth: cfg.levels[level].bandwidth,
            within: cfg.levels[..level].iter().map(|l| l.machines).product(),
            share: level
                .checked_sub(1)
                .map_or(1, |below| cfg.levels[below].machines),
        }
    }

    /// Time of the range on one GPU: its compute, or `None` when it is not a set of layers.
    fn compute(&self, i: usize, j: usize) -> Option<f64> {
        self.s.nested(i, j).then(|| range(&self.s.compute, i, j))
    }

    /// Data-parallel weight synchronisation of the range `i..=j` over `r` replicas.
    fn sync(&self, i: usize, j: usize, r: usize) -> f64 {
        4.0 * (r - 1) as f64 * range(&self.s.parameters, i, j) / (self.bandwidth * r as f64) * 1e3
    }

    /// Stashed bytes of layers `i..=j` on `r` replicas with `used` machines of the level up to
    /// and including them: `ceil((N - used) / r) (A + W)` (Python 3's `math.ceil(a / b)`).
    fn stashed(&self, i: usize, j: usize, r: usize, used: usize) -> f64 {
        (self.machines - used).div_ceil(r) as f64
            * (range(&self.s.activation, i, j) + range(&self.s.parameters, i, j))
    }

    fn rejected(&self, i: usize, j: usize, r: usize, used: usize) -> bool {
        self.cfg.memory_check && self.stashed(i, j, r, used) > self.cfg.memory
    }

    /// Transfer of the activations crossing the cut after `cut_after` (forward and gradient)
    /// over `r` lanes, divided by the compression ratio; 0 when transfers are ignored.
    fn transfer(&self, cut_after: usize, r: usize) -> f64 {
        match self.cfg.activation_compression_ratio {
            Some(ratio) => {
                2.0 * self.s.output[cut_after] / (self.bandwidth * r as f64) * 1e3 / ratio
            }
            None => 0.0,
        }
    }

    /// Time of a range that starts a pipeline (no split before it) on `r` replicas; its
    /// synchronisation is divided by `share`, as the optimizer divides it.
    fn first_stage(&self, compute: f64, i: usize, j: usize, r: usize) -> f64 {
        (compute + self.sync(i, j, r) / self.share as f64) / r as f64
    }

    /// Time of a range after a split on `r` replicas (the optimizer does not divide this
    /// synchronisation by `share`).
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

    /// `(first, last, replicas, machines used up to it)` of the stages of `A[i][j][m]`. The
    /// machines used are counted from the cell, not from `m`: with `use_fewer_machines` a cell
    /// may hold the configuration of fewer machines.
    fn walk(&self, i: usize, j: usize, m: usize) -> Vec<(usize, usize, usize, usize)> {
        let mut stages = Vec::new();
        let (mut j, mut m) = (j, m);
        while let Some((_, split, r)) = self.get(i, j, m) {
            match split {
                Some((k, mp)) => {
                    stages.push((k + 1, j, r, mp + 1 + r));
                    j = k;
                    m = mp;
                }
                None => {
                    stages.push((i, j, r, r));
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
    deadline: &Deadline,
) -> Result<Table, SolveError> {
    let (n, nm) = (c.s.len(), c.machines);
    let mut t = Table {
        n,
        nm,
        cells: vec![None; starts * n * nm],
    };
    let at = |i: usize, j: usize, m: usize| (i * n + j) * nm + m;
    for i in 0..starts {
        if deadline.passed() {
            return Err(deadline.error());
        }
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
                if c.cfg.use_fewer_machines {
                    // The optimizer's `A[i][j][m - 1][0] < min_pipeline_time`, after its
                    // single stage: with a time on m + 1 machines and none on m, Python raises a
                    // TypeError there; no answer of it exists to follow, so that time is kept.
                    let fewer = t.cells[at(i, j, m - 1)];
                    match (best, fewer) {
                        (None, _) => best = fewer,
                        (Some(b), Some(f)) if f.0 < b.0 => best = fewer,
                        _ => {}
                    }
                }
                // Splits after a state of the range (the optimizer's predecessors of `j`
                // that follow state `i - 1`; below the final level, that contain it).
                let preds = c.s.preds(j);
                for &k in &preds[preds.partition_point(|&k| k < i)..] {
                    if !c.s.nested(i, k) {
                        continue;
                    }
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
            if deadline.passed() {
                return Err(deadline.error());
            }
        }
    }
    Ok(t)
}

/// PipeDream's objective of a configuration of layers `i..=j` at one level (`(first, last,
/// replicas)` per stage, in order, covering the range and using every machine of the level),
/// with `compute(i, j)` the time of layers `i..=j` on one machine of the level; `None` when its
/// memory check rejects a stage or a range has no time. The DP minimizes this; brute-force
/// tests use it.
pub fn pd_level_objective(
    s: &PdStates,
    cfg: &PdConfig,
    level: usize,
    compute: &dyn Fn(usize, usize) -> Option<f64>,
    stages: &[(usize, usize, usize)],
) -> Option<f64> {
    let c = LevelCost::new(s, cfg, level);
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
            if j + 1 < s.len() {
                worst = worst.max(c.transfer(j, r));
            }
        }
    }
    Some(worst)
}

/// [`pd_level_objective`] of a single-level configuration of every state (ranges of states,
/// `None` when one is not a set of layers).
pub fn pd_objective(s: &PdStates, cfg: &PdConfig, stages: &[(usize, usize, usize)]) -> Option<f64> {
    let c = LevelCost::new(s, cfg, 0);
    pd_level_objective(s, cfg, 0, &|i, j| c.compute(i, j), stages)
}

/// PipeDream's dynamic program, level by level (see the module docs). `None` when no
/// configuration passes the memory check (or fewer layers than machines in a straight
/// pipeline).
pub fn pipedream_partition(s: &PdStates, cfg: &PdConfig) -> Option<PdPartition> {
    pipedream_partition_within(s, cfg, &Deadline::none()).unwrap_or(None)
}

/// Bytes of the DP's tables for `n` states under `cfg`: `A[i][j][m]` of every level, with every
/// start `i` below the final level (n^2 x machines cells there).
pub fn table_bytes(n: usize, cfg: &PdConfig) -> f64 {
    let top = cfg.levels.len().saturating_sub(1);
    let cells: f64 = cfg
        .levels
        .iter()
        .enumerate()
        .map(|(l, level)| {
            let starts = if l == top { 1 } else { n };
            starts as f64 * n as f64 * level.machines as f64
        })
        .sum();
    cells * std::mem::size_of::<Cell>() as f64
}

/// [`pipedream_partition`] stopping at `deadline` (its error then: the DP has no plan before
/// its last level is complete).
pub fn pipedream_partition_within(
    s: &PdStates,
    cfg: &PdConfig,
    deadline: &Deadline,
) -> Result<Option<PdPartition>, SolveError> {
    let n = s.len();
    if n == 0 || cfg.levels.is_empty() || cfg.levels.iter().any(|l| l.machines == 0) {
        return Ok(None);
    }
    let costs: Vec<LevelCost> = (0..cfg.levels.len())
        .map(|l| LevelCost::new(s, cfg, l))
        .collect();
    let top = cfg.levels.len() - 1;
    let mut tables: Vec<Table> = Vec::new();
    for (l, c) in costs.iter().enumerate() {
        let starts = if l == top { 1 } else { n };
        let table = match tables.last() {
            None => level_table(c, &|i, j| c.compute(i, j), starts, deadline)?,
            Some(below) => level_table(c, &|i, j| below.best(i, j), starts, deadline)?,
        };
        tables.push(table);
    }
    let Some(time) = tables[top].best(0, n - 1) else {
        return Ok(None);
    };
    let mut stages = Vec::new();
    expand(&tables, &costs, top, 0, n - 1, &[0], &mut stages);
    Ok(Some(PdPartition { time, stages }))
}

/// The stages of the states `i..=j` at `level`, replicated on the level-above machines starting at
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
                layers: c.s.layers(first, last),
                replicas: gpus.len(),
                stashed: c.stashed(first, last, r, used),
                gpus,
            });
        } else {
            expand(tables, costs, level - 1, first, last, &gpus, out);
        }
    }
}
