//! The engine's model of one search: its tasks (batch, chunks, tp range, embedding ZeRO-3), the
//! strategies and costs of a (task, pipeline degree), one memory-budget DP per stage, and the
//! pipeline cost of a division (`evaluate`). The loop over tasks and divisions is
//! [`super::search`].

use super::dp::{Assignment, StageDp, Table};
use crate::deadline::Deadline;
use pipeplan_formulations::galvatron::cost::{
    self, layer_memory, layer_time, optimal_chunk, other_time, pipeline_cost, transition,
    MemoryCall, OtherTime, PipelineCall,
};
use pipeplan_formulations::galvatron::{strategy, LayerTypes, PipelineType, Strategy};
use std::collections::HashMap;

/// How the layers are divided into pipeline stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Division {
    /// The engine's rule: even with one layer type (quirk), memory-balanced otherwise.
    Engine,
    /// Always the engine's memory-balanced division.
    Memory,
    /// Time-balanced: contiguous min-max of the fastest per-layer compute time.
    Time,
    /// Galvatron-BMW's bi-objective adjustment from memory- towards time-balanced.
    Bmw {
        /// Most partitions evaluated per pipeline degree.
        max_partitions: usize,
    },
}

/// One search task (the engine's `search_for_chunk` arguments and one of its `sp_search`
/// rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Global batch size.
    pub bsz: u64,
    /// Micro-batches.
    pub chunk: u64,
    /// Smallest tp degree.
    pub min_tp: u32,
    /// Largest tp degree.
    pub max_tp: u32,
    /// Vocabulary layers under Ulysses (`vsp`; only under `sp_space tp+sp`).
    pub vsp: bool,
    /// Embedding under ZeRO-3.
    pub embed_sdp: bool,
    /// Which strategies the round searches (the engine's `sp_search`): 1 the tp ones, 2 the
    /// Ulysses ones, 3 both (strategies with tp 1 belong to every round).
    pub sp_search: u8,
}

impl Task {
    /// Whether the round searches strategy `s`.
    pub fn allows(&self, s: &Strategy) -> bool {
        match self.sp_search {
            1 => !s.sp,
            2 => s.sp || s.tp == 1,
            _ => true,
        }
    }
}

/// The best plan of one pipeline degree.
#[derive(Debug, Clone, PartialEq)]
pub struct PpResult {
    /// Pipeline degree.
    pub pp: u32,
    /// Layers per stage.
    pub partition: Vec<usize>,
    /// Strategy per layer.
    pub strategies: Vec<Strategy>,
    /// Vocabulary tp degree.
    pub vtp: u32,
    /// Iteration time (s).
    pub cost: f64,
    /// Memory per stage (MB, cache reserve included).
    pub mem_cost: Vec<f64>,
    /// Real micro-batch count.
    pub chunks: u64,
    /// Per-stage compute time of one micro-batch (s).
    pub stage_compute: Vec<f64>,
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The task that won.
    pub task: Task,
    /// Its plan.
    pub best: PpResult,
    /// Samples per second (`bsz / cost`).
    pub throughput: f64,
}

/// What the search did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Stage DPs run.
    pub dp_calls: usize,
    /// Tasks visited.
    pub tasks: usize,
    /// Partitions evaluated.
    pub partitions: usize,
    /// Whether the time limit cut the search short.
    pub cut_short: bool,
}

/// Memory-budget search context for one instance.
pub struct Engine<'a> {
    /// The profiles and settings.
    pub lt: &'a LayerTypes,
    /// The strategy space.
    pub strategies: Vec<Strategy>,
    pub(crate) types: Vec<usize>,
    /// Usable budget in units (after the cache reserve).
    pub(crate) budget_units: usize,
    /// Cache reserve (MB).
    mem_cache: f64,
    /// Budget after the reserve (MB).
    max_mem: f64,
}

fn units(mb: f64, unit: f64) -> usize {
    (mb / unit).ceil().max(0.0) as usize
}

impl<'a> Engine<'a> {
    /// Sets up the strategy space and the budget.
    pub fn new(lt: &'a LayerTypes) -> Engine<'a> {
        let s = &lt.settings;
        let m0 = (s.memory_constraint * 1024.0).floor();
        let mem_cache = if s.quirks.mem_cache && (m0 / 1024.0).floor() > 20.0 {
            (m0 * 0.2).floor()
        } else {
            0.0
        };
        let max_mem = m0 - mem_cache;
        Engine {
            lt,
            strategies: strategy::generate(s),
            types: lt.type_of_layers(),
            budget_units: (max_mem / s.memory_unit_mb).floor() as usize,
            mem_cache,
            max_mem,
        }
    }

    /// Every task in the engine's order.
    pub fn tasks(&self) -> Vec<Task> {
        let s = &self.lt.settings;
        let gpus = s.gpu_num();
        let mut min_tps = Vec::new();
        let mut i = 1;
        while i <= gpus && i <= s.max_tp_deg {
            min_tps.push(i);
            i *= 2;
        }
        if s.disable_vtp {
            min_tps = vec![1];
        }
        // With the global memory buffer (the engine's default) the largest tp degree is searched
        // too, over the same degrees; without it, it is fixed at max_tp_deg.
        let max_tps = if s.global_memory_buffer {
            min_tps.clone()
        } else {
            vec![s.max_tp_deg]
        };
        let embeds: &[bool] = if s.disable_sdp {
            &[false]
        } else {
            &[false, true]
        };
        // Ulysses rounds: the vocabulary layers under tp (vsp 0) search the tp strategies, then
        // all; under Ulysses (vsp 1) the Ulysses ones (with the global buffer only), then all.
        let vsps: &[bool] = if s.ulysses() {
            &[false, true]
        } else {
            &[false]
        };
        let rounds: &[u8] = match (s.ulysses(), s.global_memory_buffer) {
            (false, _) => &[1],
            (true, true) => &[1, 2, 3],
            (true, false) => &[1, 3],
        };
        let mut out = Vec::new();
        for bsz in s.batch_sizes() {
            let bsz = bsz as u64;
            let chunks: Vec<u64> = if s.settle_chunk > 0 {
                vec![s.settle_chunk as u64]
            } else {
                (1..=bsz).collect()
            };
            for chunk in chunks {
                if bsz % chunk != 0 {
                    continue;
                }
                for &min_tp in &min_tps {
                    for &max_tp in &max_tps {
                        if min_tp > max_tp {
                            continue;
                        }
                        for &vsp in vsps {
                            for &embed_sdp in embeds {
                                for &sp_search in rounds {
                                    if (sp_search == 1 && vsp) || (sp_search == 2 && !vsp) {
                                        continue;
                                    }
                                    out.push(Task {
                                        bsz,
                                        chunk,
                                        min_tp,
                                        max_tp,
                                        vsp,
                                        embed_sdp,
                                        sp_search,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The strategies a task allows and its micro-batch size per pipeline degree.
    pub fn task_space(&self, t: &Task) -> (Vec<Strategy>, HashMap<u32, u64>) {
        let gpus = self.lt.settings.gpu_num();
        let group = |pp: u32| (gpus / pp / t.min_tp) as u64;
        let mut st: Vec<Strategy> = self
            .strategies
            .iter()
            .filter(|s| t.min_tp <= s.tp && s.tp <= t.max_tp)
            .filter(|s| group(s.pp) > 0 && t.chunk <= t.bsz / group(s.pp))
            .filter(|s| t.allows(s))
            .copied()
            .collect();
        let mut pps: Vec<u32> = st.iter().map(|s| s.pp).collect();
        pps.sort_unstable();
        pps.dedup();
        pps.retain(|&pp| pp * t.min_tp <= gpus && t.bsz % group(pp) == 0);
        st.retain(|s| pps.contains(&s.pp));
        let mbsz: HashMap<u32, u64> = pps
            .iter()
            .map(|&pp| (pp, (t.bsz / group(pp)).div_ceil(t.chunk)))
            .collect();
        st.retain(|s| {
            let m = mbsz[&s.pp];
            t.chunk == (t.bsz / group(s.pp)).div_ceil(m)
        });
        (st, mbsz)
    }

    pub(crate) fn memory_call(&self, t: &Task, mbsz: u64, stage: usize) -> MemoryCall {
        MemoryCall {
            bsz: t.bsz,
            mbsz,
            min_tp: t.min_tp,
            stage,
            embed_sdp: t.embed_sdp,
            vsp: t.vsp,
            pipeline: self.lt.settings.pipeline_type,
        }
    }

    /// The DP input of stage `stage` holding layers `start..start + n`.
    pub(crate) fn stage_dp(&self, pd: &PpData, start: usize, n: usize, stage: usize) -> StageDp {
        let mem_rows = &pd.mem[if pd.per_stage_mem { stage } else { 0 }];
        StageDp {
            mem: mem_rows[start..start + n].to_vec(),
            intra: pd.intra[start..start + n].to_vec(),
            inter: (start..start + n)
                .map(|l| {
                    if l == 0 {
                        pd.zero_inter.clone()
                    } else {
                        pd.inter[self.types[l]].clone()
                    }
                })
                .collect(),
        }
    }

    /// A stage table read for every vocabulary-tp degree: the budget left by that degree's
    /// embedding/head memory, and the total cost with its embedding/head time added, as the
    /// engine's DP core answers.
    pub(crate) fn stage_answers(
        &self,
        pd: &PpData,
        table: &Table,
        stage: usize,
    ) -> Vec<(u32, Option<Assignment>)> {
        let unit = self.lt.settings.memory_unit_mb;
        pd.other_mem
            .iter()
            .map(|(k, other)| {
                let time = pd
                    .other_time
                    .iter()
                    .find(|o| o.vtp == *k)
                    .map_or(0.0, |o| o.dp[stage]);
                let got = self
                    .budget_units
                    .checked_sub(units(other[stage], unit))
                    .and_then(|b| table.best(b))
                    .map(|a| Assignment {
                        cost: a.cost + time,
                        ..a
                    });
                (*k, got)
            })
            .collect()
    }

    /// Runs the stage DPs and the pipeline cost of one partition (the engine's
    /// `_build_dp_and_run_multi_layer_type` after the division).
    pub(crate) fn evaluate(
        &self,
        pd: &PpData,
        partition: &[usize],
        counters: &mut Counters,
        tables: &mut Tables,
    ) -> Result<Option<PpResult>, String> {
        counters.partitions += 1;
        if !self.lt.settings.fine_grained_mode {
            return self.evaluate_coarse(pd, partition);
        }
        let unit = self.lt.settings.memory_unit_mb;
        let mut answers = Vec::new();
        let mut start = 0;
        for (i, &n) in partition.iter().enumerate() {
            let key = (pd.sp_search, pd.pp, i, start, n);
            let table = tables.entry(key).or_insert_with(|| {
                counters.dp_calls += 1;
                self.stage_dp(pd, start, n, i).solve(self.budget_units)
            });
            answers.push(self.stage_answers(pd, table, i));
            start += n;
        }
        let mut best: Option<PpResult> = None;
        for OtherTime {
            vtp: k,
            pipeline: times,
            ..
        } in &pd.other_time
        {
            let mut all = Vec::new();
            let mut mem = Vec::new();
            let mut ok = true;
            for a in &answers {
                match a
                    .iter()
                    .find(|(kk, _)| kk == k)
                    .and_then(|(_, r)| r.as_ref())
                {
                    Some(got) => {
                        all.extend(got.strategies.iter().map(|&j| pd.set[j]));
                        mem.push(self.max_mem - got.remaining as f64 * unit + self.mem_cache);
                    }
                    None => ok = false,
                }
            }
            if !ok {
                continue;
            }
            let r = self.priced(pd, partition, all, *k, mem, times)?;
            keep_faster(&mut best, r);
        }
        Ok(best)
    }

    /// The pipeline cost model's verdict on one assignment of a partition: its iteration time,
    /// with the per-stage memory the DP or the coarse rule found and the vocabulary tp degree.
    fn priced(
        &self,
        pd: &PpData,
        partition: &[usize],
        strategies: Vec<Strategy>,
        vtp: u32,
        mem_cost: Vec<f64>,
        other_time: &[f64],
    ) -> Result<PpResult, String> {
        let pc = pipeline_cost(
            self.lt,
            &strategies,
            &PipelineCall {
                partition,
                chunks: &pd.chunks,
                bsz: pd.bsz,
                min_tp: pd.min_tp,
                other_time,
            },
        )?;
        Ok(PpResult {
            pp: pd.pp,
            partition: partition.to_vec(),
            strategies,
            vtp,
            cost: pc.iteration,
            mem_cost,
            chunks: pc.chunks,
            stage_compute: pc.stage_compute,
        })
    }

    /// The engine's coarse search of one partition (`fine_grained_mode` 0): every layer takes
    /// the same strategy, with the embedding and head at its tp degree; a strategy counts when
    /// every stage's layers and embedding/head fit the budget, and the fastest pipeline wins
    /// (the first on a tie, in strategy order).
    fn evaluate_coarse(
        &self,
        pd: &PpData,
        partition: &[usize],
    ) -> Result<Option<PpResult>, String> {
        let unit = self.lt.settings.memory_unit_mb;
        let mut best: Option<PpResult> = None;
        for (si, s) in pd.set.iter().enumerate() {
            let Some(k) = pd.other_time.iter().find(|o| o.vtp == s.tp) else {
                continue;
            };
            let Some((_, other)) = pd.other_mem.iter().find(|(vtp, _)| *vtp == s.tp) else {
                continue;
            };
            let mut mem = Vec::with_capacity(partition.len());
            let mut start = 0;
            for (i, &n) in partition.iter().enumerate() {
                let rows = &pd.mem[if pd.per_stage_mem { i } else { 0 }];
                let used = rows[start..start + n].iter().map(|r| r[si]).sum::<usize>()
                    + units(other[i], unit);
                let Some(remaining) = self.budget_units.checked_sub(used) else {
                    break;
                };
                mem.push(self.max_mem - remaining as f64 * unit + self.mem_cache);
                start += n;
            }
            if mem.len() < partition.len() {
                continue;
            }
            let all = vec![*s; partition.iter().sum()];
            let r = self.priced(pd, partition, all, s.tp, mem, &k.pipeline)?;
            keep_faster(&mut best, r);
        }
        Ok(best)
    }

    /// Precomputes the per-layer costs of one (task, pp).
    pub(crate) fn pp_data(
        &self,
        t: &Task,
        pp: u32,
        st: &[Strategy],
        mbsz: u64,
        deadline: &Deadline,
    ) -> Result<Option<PpData>, String> {
        let lt = self.lt;
        let gpus = lt.settings.gpu_num();
        let set: Vec<Strategy> = st.iter().filter(|s| s.pp == pp).copied().collect();
        let dp_size = (gpus / pp) as u64;
        let chunk = optimal_chunk(t.bsz * t.min_tp as u64 / dp_size, t.min_tp, mbsz, t.min_tp);
        let chunks = vec![chunk; lt.types.len()];
        let nt = lt.types.len();
        let type_intra: Vec<Vec<f64>> = (0..nt)
            .map(|ty| {
                set.iter()
                    .map(|s| layer_time(lt, ty, s, t.bsz as f64 / chunk as f64, false))
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        let intra = self
            .types
            .iter()
            .map(|&ty| type_intra[ty].clone())
            .collect();
        let other_time = other_time(lt, mbsz, pp, t.min_tp, t.max_tp, t.embed_sdp, t.vsp)?;
        let unit = lt.settings.memory_unit_mb;
        let per_stage_mem = lt.settings.pipeline_type == PipelineType::PipedreamFlush;
        let stages = if per_stage_mem { pp as usize } else { 1 };
        let mut mem = Vec::with_capacity(stages);
        let mut other_mem = Vec::new();
        for stage in 0..stages {
            // One stage's memory rows cost (layer types x strategies) cost-model calls: with a
            // hundred stages on thousands of GPUs, seconds; `None` once the deadline passed.
            if deadline.passed() {
                return Ok(None);
            }
            let call = self.memory_call(t, mbsz, stage);
            let mut type_rows = Vec::with_capacity(nt);
            for ty in 0..nt {
                let row: Vec<cost::LayerMemory> = set
                    .iter()
                    .map(|s| layer_memory(lt, ty, s, &call))
                    .collect::<Result<_, _>>()?;
                if stage == 0 && ty == 0 {
                    // The fine-grained search leaves the buffer out of its Ulysses-only round.
                    let buffer = if lt.settings.fine_grained_mode {
                        if t.sp_search == 2 {
                            0.0
                        } else {
                            cost::global_memory_buffer(lt, mbsz, t.min_tp, t.max_tp)
                        }
                    } else {
                        cost::sequence_buffer(lt, mbsz, t.min_tp, t.max_tp)
                    };
                    other_mem = row[0]
                        .other
                        .iter()
                        .map(|(k, v)| {
                            (
                                *k,
                                v.iter().map(|x| x.ceil() + buffer).collect::<Vec<f64>>(),
                            )
                        })
                        .collect();
                }
                type_rows.push(
                    row.iter()
                        .map(|m| units(m.total.ceil(), unit))
                        .collect::<Vec<usize>>(),
                );
            }
            mem.push(
                self.types
                    .iter()
                    .map(|&ty| type_rows[ty].clone())
                    .collect::<Vec<_>>(),
            );
        }
        let inter: Vec<Vec<Vec<f64>>> = (0..nt)
            .map(|ty| {
                set.iter()
                    .map(|a| {
                        set.iter()
                            .map(|b| transition(lt, ty, a, b, mbsz, t.min_tp))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<_, _>>()?;
        // Vocabulary-tp variants known to both the memory and the time model.
        let other_time: Vec<OtherTime> = other_time
            .into_iter()
            .filter(|o| other_mem.iter().any(|(m, _)| *m == o.vtp))
            .collect();
        let n = set.len();
        Ok(Some(PpData {
            pp,
            sp_search: t.sp_search,
            bsz: t.bsz,
            min_tp: t.min_tp,
            zero_inter: vec![vec![0.0; n]; n],
            set,
            chunks,
            intra,
            inter,
            mem,
            per_stage_mem,
            other_mem,
            other_time,
        }))
    }
}

/// Keeps `r` when it is faster than `best` (the engine's strict `>`: the first wins a tie).
fn keep_faster(best: &mut Option<PpResult>, r: PpResult) {
    if best.as_ref().is_none_or(|b| b.cost > r.cost) {
        *best = Some(r);
    }
}

/// Per-(task, pp) precomputed costs.
pub(crate) struct PpData {
    pub(crate) pp: u32,
    pub(crate) sp_search: u8,
    pub(crate) bsz: u64,
    pub(crate) min_tp: u32,
    pub(crate) set: Vec<Strategy>,
    pub(crate) chunks: Vec<u64>,
    pub(crate) intra: Vec<Vec<f64>>,
    pub(crate) inter: Vec<Vec<Vec<f64>>>,
    pub(crate) zero_inter: Vec<Vec<f64>>,
    pub(crate) mem: Vec<Vec<Vec<usize>>>,
    pub(crate) per_stage_mem: bool,
    pub(crate) other_mem: Vec<(u32, Vec<f64>)>,
    pub(crate) other_time: Vec<OtherTime>,
}

/// Stage DP tables by (strategy round `sp_search`, pipeline degree, stage, first layer, layers).
/// The tables do not depend on `embed_sdp` or `vsp` (they change only the embedding/head memory,
/// i.e. the budget a table is read at, and its time), so tasks that differ only in those share
/// them.
pub(crate) type Tables = HashMap<(u8, u32, usize, usize, usize), Table>;
