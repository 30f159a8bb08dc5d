//! The engine's model of one search: its tasks (batch, chunks, tp range, embedding ZeRO-3), the
//! strategies and costs of a (task, pipeline degree), one memory-budget DP per stage, and the
//! pipeline cost of a division (`evaluate`). The loop over tasks and divisions is
//! [`super::search`].

mod evaluate;
mod pp_data;

use pipeplan_formulations::galvatron::{strategy, LayerTypes, Strategy};
use std::collections::HashMap;

pub(crate) use evaluate::Tables;
pub(crate) use pp_data::PpData;

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
    pub(crate) max_mem: f64,
}

/// Memory units the DP counts with, at most `u32::MAX` (petabytes at the engine's 1 MB unit),
/// so that sums over layers never overflow; the budget stays below that, so a footprint clamped
/// there never fits.
fn units(mb: f64, unit: f64) -> usize {
    (mb / unit).ceil().clamp(0.0, f64::from(u32::MAX)) as usize
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
            budget_units: (max_mem / s.memory_unit_mb)
                .floor()
                .clamp(0.0, f64::from(u32::MAX - 1)) as usize,
            mem_cache,
            max_mem,
        }
    }

    /// The memory budget the engine starts from (MB, whole): the cache reserve and the usable
    /// budget ([`Engine::max_mem`]) together.
    pub(crate) fn budget_mb(&self) -> f64 {
        self.max_mem + self.mem_cache
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
                divisors(bsz)
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
}

/// The divisors of `n`, ascending (the engine tries every chunk count from 1 to the batch and
/// keeps the divisors), found up to its square root so that a batch of billions costs no more
/// than a batch of thousands.
fn divisors(n: u64) -> Vec<u64> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut d = 1;
    while d * d <= n {
        if n % d == 0 {
            low.push(d);
            if d * d != n {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

#[cfg(test)]
mod tests {
    use super::divisors;

    #[test]
    fn divisors_are_the_chunk_counts_dividing_the_batch_in_order() {
        for n in 1..=2000u64 {
            let brute: Vec<u64> = (1..=n).filter(|c| n % c == 0).collect();
            assert_eq!(divisors(n), brute, "{n}");
        }
        assert_eq!(divisors(u64::from(u32::MAX)).len(), 32);
    }
}
