//! The engine's outer search (`parallelism_optimization` / `DpOnModel.fit`): over batch sizes,
//! micro-batch counts, the smallest and largest tp degrees, embedding ZeRO-3 and pipeline
//! degrees, one memory-budget DP per pipeline stage, the vocabulary-tp choice by the pipeline
//! cost model. Independent (batch, chunk, min_tp, max_tp, vsp, embed_sdp, sp_search) tasks run
//! in parallel with rayon; the winner is chosen in the engine's iteration order, so results do
//! not depend on the thread count.

pub use super::engine::{Counters, Division, Engine, Found, PpResult, Task};

use super::engine::Tables;
use crate::deadline::Deadline;
use rayon::prelude::*;

/// Relative difference within which two costs count as equal, so that the earlier candidate
/// keeps its place as in the engine, which compares with a strict `<` and `>`. Our sums round
/// differently from the engine's (about 1e-15 relative), and where the engine's costs tie
/// exactly (a single stage's cost does not depend on the micro-batch count) ours must tie too.
const TIE: f64 = 1e-12;

/// Whether cost `new` beats `old` by more than a rounding difference ([`TIE`]).
fn lower(new: f64, old: f64) -> bool {
    new < old * (1.0 - TIE)
}

impl Engine<'_> {
    /// Best plan of one task over its pipeline degrees.
    pub fn run_task(
        &self,
        t: &Task,
        division: Division,
        counters: &mut Counters,
    ) -> Result<Option<PpResult>, String> {
        self.run_task_with(t, division, counters, &mut Tables::new(), &Deadline::none())
    }

    /// [`Engine::run_task`] reading and filling stage tables shared with related tasks, and
    /// stopping between pipeline degrees at `deadline` (one task on thousands of GPUs takes
    /// seconds; `counters.cut_short` says so).
    fn run_task_with(
        &self,
        t: &Task,
        division: Division,
        counters: &mut Counters,
        tables: &mut Tables,
        deadline: &Deadline,
    ) -> Result<Option<PpResult>, String> {
        let (st, mbsz) = self.task_space(t);
        if st.is_empty() {
            return Ok(None);
        }
        let gpus = self.lt.settings.gpu_num();
        let mut pps: Vec<u32> = st.iter().map(|s| s.pp).collect();
        pps.sort_unstable();
        pps.dedup();
        let mut best: Option<PpResult> = None;
        for pp in pps {
            if deadline.passed() {
                counters.cut_short = true;
                break;
            }
            if pp * t.min_tp > gpus || t.bsz % (gpus / (pp * t.min_tp)) as u64 != 0 {
                continue;
            }
            let m = mbsz[&pp];
            let Some(pd) = self.pp_data(t, pp, &st, m, deadline)? else {
                counters.cut_short = true;
                break;
            };
            let single =
                self.lt.types.len() == 1 && self.lt.settings.quirks.even_division_single_type;
            let res = match division {
                Division::Engine if single => {
                    self.evaluate(&pd, &self.even(pp as usize), counters, tables)?
                }
                Division::Engine | Division::Memory => match self.memory_balanced(pp, t, m, &st)? {
                    Some(p) => self.evaluate(&pd, &p, counters, tables)?,
                    None => None,
                },
                Division::Time => match self.time_balanced(pp as usize, &pd.intra) {
                    Some(p) => self.evaluate(&pd, &p, counters, tables)?,
                    None => None,
                },
                Division::Bmw { max_partitions } => super::bmw::adjust(
                    self,
                    &pd,
                    pp,
                    t,
                    m,
                    &st,
                    max_partitions,
                    counters,
                    tables,
                    deadline,
                )?,
            };
            if let Some(r) = res {
                if best.as_ref().is_none_or(|b| lower(r.cost, b.cost)) {
                    best = Some(r);
                }
            }
        }
        Ok(best)
    }

    /// The whole search; `deadline` stops it between tasks and between a task's pipeline degrees
    /// (the counters say so).
    pub fn search(
        &self,
        division: Division,
        deadline: &Deadline,
    ) -> Result<(Option<Found>, Counters), String> {
        let tasks = self.tasks();
        // Tasks that differ only in vsp, embed_sdp and sp_search are neighbours and share their
        // stage tables.
        let mut groups: Vec<&[Task]> = Vec::new();
        let mut rest = &tasks[..];
        while let Some(first) = rest.first() {
            let n = rest
                .iter()
                .take_while(|t| {
                    Task {
                        vsp: first.vsp,
                        embed_sdp: first.embed_sdp,
                        sp_search: first.sp_search,
                        ..**t
                    } == *first
                })
                .count();
            groups.push(&rest[..n]);
            rest = &rest[n..];
        }
        let results: Vec<(Result<Option<PpResult>, String>, Counters)> = groups
            .par_iter()
            .flat_map_iter(|group| {
                let mut tables = Tables::new();
                group
                    .iter()
                    .map(|t| {
                        let mut c = Counters::default();
                        if deadline.passed() {
                            c.cut_short = true;
                            return (Ok(None), c);
                        }
                        c.tasks = 1;
                        let r = self.run_task_with(t, division, &mut c, &mut tables, deadline);
                        (r, c)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut counters = Counters::default();
        let mut found: Option<Found> = None;
        for (t, (r, c)) in tasks.iter().zip(results) {
            counters.dp_calls += c.dp_calls;
            counters.tasks += c.tasks;
            counters.partitions += c.partitions;
            counters.cut_short |= c.cut_short;
            if let Some(best) = r? {
                let throughput = t.bsz as f64 / best.cost;
                // Throughput is the batch over the cost: higher by more than a rounding
                // difference, as `lower` for costs.
                if found
                    .as_ref()
                    .is_none_or(|f| lower(f.throughput, throughput))
                {
                    found = Some(Found {
                        task: *t,
                        best,
                        throughput,
                    });
                }
            }
        }
        Ok((found, counters))
    }
}
