//! One stage DP of the search as the engine's DP core receives and answers it, for replays
//! against the engine's recorded calls (`docs/galvatron.md`, "Golden replays").

use super::dp::{Assignment, StageDp};
use super::engine::{Engine, Task};
use crate::deadline::Deadline;
use pipeplan_formulations::galvatron::Strategy;

/// One stage DP call (see [`Engine::stage_call`]).
#[derive(Debug, Clone)]
pub struct StageCall {
    /// The strategies of the pipeline degree, in the DP's column order.
    pub strategies: Vec<Strategy>,
    /// Memory units, layer costs and transitions of the stage's layers.
    pub dp: StageDp,
    /// The budget (memory units).
    pub budget_units: usize,
    /// Embedding/head memory per vocabulary-tp degree (MB, whole).
    pub other_mem: Vec<(u32, f64)>,
    /// Embedding/head time per vocabulary-tp degree (s).
    pub other_time: Vec<(u32, f64)>,
    /// Per vocabulary-tp degree: total cost (layers, transitions and embedding/head time),
    /// strategy index per layer and unused units; `None` when nothing fits.
    pub answers: Vec<(u32, Option<Assignment>)>,
}

impl Engine<'_> {
    /// One stage DP as the engine's DP core receives and answers it, for replays against its
    /// recorded calls: the task `t` at pipeline degree `pp` with layers per stage `partition`;
    /// `None` when the task has no strategy at that degree.
    pub fn stage_call(
        &self,
        t: &Task,
        pp: u32,
        partition: &[usize],
        stage: usize,
    ) -> Result<Option<StageCall>, String> {
        let (st, mbsz) = self.task_space(t);
        let Some(&m) = mbsz.get(&pp) else {
            return Ok(None);
        };
        let Some(pd) = self.pp_data(t, pp, &st, m, &Deadline::none())? else {
            return Ok(None);
        };
        let start: usize = partition[..stage].iter().sum();
        let dp = self.stage_dp(&pd, start, partition[stage], stage);
        let table = dp.solve(self.budget_units);
        let answers = self.stage_answers(&pd, &table, stage);
        Ok(Some(StageCall {
            strategies: pd.set.clone(),
            budget_units: self.budget_units,
            other_mem: pd.other_mem.iter().map(|(k, v)| (*k, v[stage])).collect(),
            other_time: pd.other_time.iter().map(|o| (o.vtp, o.dp[stage])).collect(),
            dp,
            answers,
        }))
    }
}
