//! The cost of a division: the stage DPs and the pipeline cost of one partition, in the
//! engine's fine-grained and coarse modes.

use super::{units, Counters, Engine, PpData, PpResult};
use crate::galvatron::dp::Table;
use pipeplan_formulations::galvatron::cost::{pipeline_cost, OtherTime, PipelineCall};
use pipeplan_formulations::galvatron::Strategy;
use std::collections::HashMap;

impl<'a> Engine<'a> {
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
}

/// Keeps `r` when it is faster than `best` (the engine's strict `>`: the first wins a tie).
fn keep_faster(best: &mut Option<PpResult>, r: PpResult) {
    if best.as_ref().is_none_or(|b| b.cost > r.cost) {
        *best = Some(r);
    }
}

/// Stage DP tables by (strategy round `sp_search`, pipeline degree, stage, first layer, layers).
/// The tables do not depend on `embed_sdp` or `vsp` (they change only the embedding/head memory,
/// i.e. the budget a table is read at, and its time), so tasks that differ only in those share
/// them.
pub(crate) type Tables = HashMap<(u8, u32, usize, usize, usize), Table>;
