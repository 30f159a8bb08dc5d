//! From a solved structure (shifts and orderings) to a schedule: the memory count, the start
//! times, the least period of a structure, and the simulator-checked [`IlpSchedule`].

use super::model::{Alloc, Structure};
use super::{IlpGoal, IlpSchedule, PATH_TOL, TOLERANCE};
use crate::algorithm::{SolveError, Status};
use pipeplan_formulations::plan::{Pattern, PatternOp, Schedule};
use pipeplan_formulations::simulate::simulate;
use pipeplan_formulations::units::fmt_bytes;

impl Alloc<'_> {
    /// The ILP's memory count of a structure: per used GPU (bytes), and per stage in flight.
    pub(super) fn count(&self, st: &Structure) -> (Vec<f64>, Vec<f64>, Vec<u32>) {
        let y = |a: usize, b: usize| -> i64 {
            let (c, p) = self.order(a, b);
            let v = match p {
                None => c,
                Some((k, sign)) => c + sign * if st.first[k] { 1.0 } else { 0.0 },
            };
            v as i64
        };
        let alive = |s: usize, probe: usize| -> i64 {
            st.h[self.b[s]] - st.h[self.f[s]] + y(self.f[s], self.f[probe])
                - y(self.b[s], self.f[probe])
        };
        let mut total = Vec::new();
        let mut acts = Vec::new();
        for ((_, on), c) in self.gpus.iter().zip(&self.constant) {
            let peak = on
                .iter()
                .map(|&p| {
                    on.iter()
                        .map(|&s| alive(s, p).max(0) as f64 * self.act[s])
                        .sum::<f64>()
                })
                .fold(0.0, f64::max);
            acts.push(peak);
            total.push(c + peak);
        }
        let in_flight = (0..self.f.len())
            .map(|s| alive(s, s).max(0) as u32)
            .collect();
        (total, acts, in_flight)
    }

    /// Earliest start times (ms) for a structure at period `t`: the longest paths of the
    /// difference constraints, or `None` when they have no solution.
    pub(super) fn times(&self, st: &Structure, t: f64) -> Option<Vec<f64>> {
        self.times_upto(st, t, self.n())
    }

    /// [`Self::times`] for the operations `0..upto` only (the others ignored).
    pub(super) fn times_upto(&self, st: &Structure, t: f64, upto: usize) -> Option<Vec<f64>> {
        let n = upto;
        let src = n;
        // (u, v, w): t_v >= t_u + w.
        let mut edges: Vec<(usize, usize, f64)> = Vec::new();
        for o in 0..n {
            edges.push((src, o, 0.0));
            edges.push((o, src, -t));
        }
        if n > 0 {
            edges.push((0, src, 0.0));
        }
        for o in 0..n.saturating_sub(1) {
            let w = self.ops[o].d - (st.h[o + 1] - st.h[o]) as f64 * t;
            edges.push((o, o + 1, w));
        }
        for (k, &(i, j)) in self.pairs.iter().enumerate() {
            if j >= n {
                continue;
            }
            let (a, b) = if st.first[k] { (i, j) } else { (j, i) };
            edges.push((a, b, self.sep(a, b, t)));
            edges.push((b, a, self.sep(b, a, t) - t));
        }
        let eps = PATH_TOL * t;
        let mut dist = vec![0.0f64; n + 1];
        for round in 0..=n + 1 {
            let mut changed = false;
            for &(u, v, w) in &edges {
                if dist[u] + w > dist[v] + eps {
                    dist[v] = dist[u] + w;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            if round == n + 1 {
                return None;
            }
        }
        if dist[src] > eps {
            return None;
        }
        // Every constraint must hold within the tolerance (the rounds above may have stopped on
        // sub-tolerance updates only).
        let ok = edges
            .iter()
            .all(|&(u, v, w)| dist[u] + w <= dist[v] + 2.0 * eps);
        ok.then(|| dist[..n].to_vec())
    }

    /// The least period in `[lo, t]` at which a structure feasible at `t` stays feasible, with its
    /// times (`None` if it is not feasible at `t`).
    pub(super) fn least_period_of(
        &self,
        st: &Structure,
        lo: f64,
        t: f64,
    ) -> Option<(f64, Vec<f64>)> {
        let mut best = (t, self.times(st, t)?);
        if let Some(x) = self.times(st, lo) {
            return Some((lo, x));
        }
        let mut a = lo;
        for _ in 0..200 {
            if best.0 - a <= 1e-12 * best.0 {
                break;
            }
            let mid = 0.5 * (a + best.0);
            match self.times(st, mid) {
                Some(x) => best = (mid, x),
                None => a = mid,
            }
        }
        Some(best)
    }

    /// One operation after another in chain order (feasible at the latency, one micro-batch in
    /// flight per stage).
    pub(super) fn sequential(&self) -> Structure {
        Structure {
            h: vec![0; self.n()],
            first: vec![true; self.pairs.len()],
        }
    }

    /// Turns a structure into a checked schedule at period `t`.
    pub(super) fn schedule(
        &self,
        st: &Structure,
        t: f64,
        goal: IlpGoal,
    ) -> Result<IlpSchedule, SolveError> {
        let times = self.times(st, t).ok_or_else(|| {
            SolveError::Solver(format!(
                "{TOLERANCE} are feasible only within its tolerances at period {t} ms, not \
                 exactly"
            ))
        })?;
        let mut ops = Vec::with_capacity(self.n());
        for (o, op) in self.ops.iter().enumerate() {
            let (mut start, mut shift) = (times[o], st.h[o]);
            // A start at the period end is the same as at 0 one period later.
            if start >= t {
                start = (start - t).max(0.0);
                shift += 1;
            }
            ops.push(PatternOp {
                op: op.id.op,
                stage: op.id.stage,
                start,
                shift,
            });
        }
        let pattern = Pattern { period: t, ops };
        let mut plan = self.plan.clone();
        plan.schedule = Schedule::Async {
            period: Some(t),
            pattern: Some(pattern.clone()),
        };
        let rep = simulate(self.inst, &plan, &pattern).map_err(|v| {
            SolveError::Solver(format!(
                "the simulator rejects the schedule ILP's pattern at period {t} ms: {v}"
            ))
        })?;
        let (total, acts, in_flight) = self.count(st);
        let mut memory = vec![0.0; self.inst.cluster.gpus as usize];
        for (((g, _), tot), a) in self.gpus.iter().zip(&total).zip(&acts) {
            let measured = rep.peak_activations[*g as usize];
            // Above the count is a bug; below it can only be a tie of zero-duration operations
            // that the count resolves pessimistically.
            if measured > a + 1e-9 * a.max(1.0) {
                return Err(SolveError::Solver(format!(
                    "GPU {g}: the simulator measures {} of activations, the schedule ILP counts \
                     {} (period {t} ms)",
                    fmt_bytes(measured),
                    fmt_bytes(*a)
                )));
            }
            memory[*g as usize] = *tot;
        }
        let max_memory = memory.iter().copied().fold(0.0, f64::max);
        Ok(IlpSchedule {
            plan,
            period: t,
            memory,
            max_memory,
            in_flight,
            goal,
            status: Status::Optimal,
            stop: None,
            bound: None,
            gap: None,
            period_bracket: None,
            ilp_solves: 0,
            nodes: None,
            wall_ms: 0.0,
            notes: Vec::new(),
        })
    }
}
