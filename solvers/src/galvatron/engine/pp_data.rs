//! The per-layer costs of one (task, pipeline degree), and a stage's DP input and answers read
//! from them.

use super::{units, Engine, Task};
use crate::deadline::Deadline;
use crate::galvatron::dp::{Assignment, StageDp, Table};
use pipeplan_formulations::galvatron::cost::{
    self, layer_memory, layer_time, optimal_chunk, other_time, transition, MemoryCall, OtherTime,
};
use pipeplan_formulations::galvatron::{LayerTypes, PipelineType, Strategy};

impl<'a> Engine<'a> {
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
        let per_stage_mem = lt.settings.pipeline_type == PipelineType::PipedreamFlush;
        let stages = if per_stage_mem { pp as usize } else { 1 };
        let Some(MemoryRows { mem, other_mem }) =
            self.memory_rows(t, &set, mbsz, stages, deadline)?
        else {
            return Ok(None);
        };
        let inter = transitions(lt, &set, mbsz, t.min_tp)?;
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

    /// The memory rows of the strategies of `set` for `stages` stages; `None` once the deadline
    /// passed.
    fn memory_rows(
        &self,
        t: &Task,
        set: &[Strategy],
        mbsz: u64,
        stages: usize,
        deadline: &Deadline,
    ) -> Result<Option<MemoryRows>, String> {
        let lt = self.lt;
        let nt = lt.types.len();
        let unit = lt.settings.memory_unit_mb;
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
        Ok(Some(MemoryRows { mem, other_mem }))
    }
}

/// The memory of a (task, pp) from [`Engine::memory_rows`].
struct MemoryRows {
    /// Per stage (one when the pipeline's memory is the same for all stages), per layer and
    /// strategy: units of `memory_unit_mb`.
    mem: Vec<Vec<Vec<usize>>>,
    /// The other layers' memory per vocabulary-tp degree, with the buffer the search adds.
    other_mem: Vec<(u32, Vec<f64>)>,
}

/// The transition cost of each layer type between every two strategies of `set`.
fn transitions(
    lt: &LayerTypes,
    set: &[Strategy],
    mbsz: u64,
    min_tp: u32,
) -> Result<Vec<Vec<Vec<f64>>>, String> {
    (0..lt.types.len())
        .map(|ty| {
            set.iter()
                .map(|a| {
                    set.iter()
                        .map(|b| transition(lt, ty, a, b, mbsz, min_tp))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect()
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
