//! Galvatron-BMW's bi-objective partition adjustment (§IV-B, Algorithm 2, appendix B): start from
//! the memory-balanced partition, repeatedly move a boundary layer off the slowest stage to a
//! neighbour, keep a move only under the three validation limits, explore a FIFO queue of
//! partitions, return the fastest plan seen.
//!
//! Limits on a new partition p' (from p with slowest stage time C_max):
//! 1. every stage time of p' is at most C_max;
//! 2. every stage fits the memory budget (the stage DPs find a plan);
//! 3. every stage memory is at most the largest stage memory of the time-balanced partition p_t
//!    (when p_t is infeasible, its stage memory is the budget, so the limit is limit 2).

use super::engine::{Counters, Engine, PpData, PpResult, Tables, Task};
use crate::deadline::Deadline;
use pipeplan_formulations::galvatron::Strategy;
use std::collections::{BTreeSet, VecDeque};

/// Runs the adjustment for one (task, pp); `None` when no partition fits.
#[allow(clippy::too_many_arguments)]
pub(crate) fn adjust(
    engine: &Engine,
    pd: &PpData,
    pp: u32,
    t: &Task,
    mbsz: u64,
    st: &[Strategy],
    max_partitions: usize,
    counters: &mut Counters,
    cache: &mut Tables,
    deadline: &Deadline,
) -> Result<Option<PpResult>, String> {
    let start = match engine.memory_balanced(pp, t, mbsz, st)? {
        Some(p) => p,
        None => return Ok(None),
    };
    if pp == 1 {
        return engine.evaluate(pd, &start, counters, cache);
    }
    let Some(pt) = engine.time_balanced(pp as usize, &pd.intra) else {
        return Ok(None);
    };
    let time_plan = engine.evaluate(pd, &pt, counters, cache)?;
    let mem_limit = time_plan
        .as_ref()
        .map(|r| r.mem_cost.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        .unwrap_or(f64::INFINITY);
    let mut best = time_plan;
    // The engine's own division is a candidate too, so BMW never loses to galvatron-base.
    let even = engine.even(pp as usize);
    if let Some(r) = engine.evaluate(pd, &even, counters, cache)? {
        if best.as_ref().is_none_or(|b| b.cost > r.cost) {
            best = Some(r);
        }
    }
    let mut seen = BTreeSet::from([start.clone(), pt.clone()]);
    let mut queue = VecDeque::from([start]);
    let mut evaluated = 1;
    while let Some(p) = queue.pop_front() {
        if deadline.passed() {
            counters.cut_short = true;
            break;
        }
        let Some(r) = engine.evaluate(pd, &p, counters, cache)? else {
            continue;
        };
        if best.as_ref().is_none_or(|b| b.cost > r.cost) {
            best = Some(r.clone());
        }
        let c_max = r
            .stage_compute
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let slow = r
            .stage_compute
            .iter()
            .position(|&c| c == c_max)
            .unwrap_or(0);
        let mut moves = Vec::new();
        if p[slow] > 1 {
            if slow > 0 {
                let mut q = p.clone();
                q[slow] -= 1;
                q[slow - 1] += 1;
                moves.push(q);
            }
            if slow + 1 < p.len() {
                let mut q = p.clone();
                q[slow] -= 1;
                q[slow + 1] += 1;
                moves.push(q);
            }
        }
        for q in moves {
            if !seen.insert(q.clone()) || evaluated >= max_partitions {
                continue;
            }
            evaluated += 1;
            let Some(rq) = engine.evaluate(pd, &q, counters, cache)? else {
                continue;
            };
            let time_ok = rq.stage_compute.iter().all(|&c| c <= c_max);
            let mem_ok = rq.mem_cost.iter().all(|&m| m <= mem_limit);
            if time_ok && mem_ok {
                queue.push_back(q);
            }
        }
    }
    Ok(best)
}
