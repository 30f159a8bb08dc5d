//! The pattern of least memory at a period: the largest memory, then the sum at that largest.

use super::model::{Alloc, Phase};
use super::{Counts, IlpGoal, IlpSchedule, MemoryObjective, TOLERANCE};
use crate::algorithm::{SolveError, Status};
use crate::deadline::Deadline;
use crate::ilp::IlpStatus;

impl Alloc<'_> {
    /// The least-memory pattern at `t` (one or two solves).
    pub(super) fn least_memory_at(
        &self,
        t: f64,
        objective: MemoryObjective,
        deadline: &Deadline,
        counts: &mut Counts,
    ) -> Result<IlpSchedule, SolveError> {
        let (st, out) = self.solve(t, Phase::Max, deadline, counts)?;
        let scale = self.memory_unit();
        let mut sched = self.schedule(&st, t, IlpGoal::LeastMemory)?;
        let bound = (out.bound * scale).min(sched.max_memory);
        sched.status = match out.status {
            IlpStatus::Optimal => Status::Optimal,
            IlpStatus::Feasible => Status::Feasible,
        };
        sched.stop = out.stop;
        // HiGHS stops at a relative gap of 1e-9 and an absolute gap of 1e-6 (in units of the
        // largest activation): an "optimal" bound is the count itself.
        let bound = if sched.status == Status::Optimal {
            sched.max_memory
        } else {
            bound
        };
        sched.bound = Some(bound);
        sched.gap = Some((sched.max_memory - bound).max(0.0) / sched.max_memory.max(1e-300));
        if objective == MemoryObjective::MaxThenSum && self.gpus.len() > 1 {
            let cap = sched.max_memory * (1.0 + 1e-9) + 1e-7 * scale;
            let second = self
                .solve(t, Phase::Sum { cap }, deadline, counts)
                .and_then(|(st2, out2)| Ok((self.schedule(&st2, t, IlpGoal::LeastMemory)?, out2)));
            match second {
                Ok((s2, out2)) => {
                    if s2.max_memory <= sched.max_memory * (1.0 + 1e-9) {
                        sched.plan = s2.plan;
                        sched.memory = s2.memory;
                        sched.max_memory = s2.max_memory;
                        sched.in_flight = s2.in_flight;
                    }
                    if sched.max_memory < bound * (1.0 - 1e-9) {
                        // A pattern below the first solve's proven least: HiGHS's proof does not
                        // hold on this model here, so none is claimed.
                        sched.notes.push(format!(
                            "the second solve found a largest memory of {} bytes, below the {} \
                             the first solve proved least: that proof does not hold (HiGHS on \
                             this big-M model), so no bound is claimed",
                            sched.max_memory, bound
                        ));
                        sched.status = Status::Feasible;
                        sched.bound = None;
                        sched.gap = None;
                    }
                    if out2.status == IlpStatus::Feasible {
                        sched.notes.push(
                            "the time limit stopped the second solve (least sum of memories): \
                             the GPUs below the largest memory may not be at their least"
                                .into(),
                        );
                    }
                }
                Err(e) if e.is_stop() => sched.notes.push(
                    "the time limit stopped the second solve (least sum of memories) before it \
                     found a pattern: the GPUs below the largest memory are not minimized"
                        .into(),
                ),
                Err(SolveError::Solver(m)) if m.starts_with(TOLERANCE) => {
                    sched.notes.push(format!("second solve discarded: {m}"))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(sched)
    }
}
