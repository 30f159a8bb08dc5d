//! capture-exact: a DP over suffixes that returns the same plan as exhaustive enumeration, the
//! tie-break included, in O(L^2 x G x C x G) time.
//!
//! State (i, g): layers i.. remain for GPUs g... Its value is the best per-GPU memory multiset of
//! the suffix under the tie-break order (sort descending, compare lexicographically). That order
//! is compatible with multiset union (A <= B implies A + C <= B + C: the common part C cancels),
//! so the best plan's suffix is a best suffix, and a best plan is one stage plus a best suffix.
//! Among equal multisets the DP keeps the first stage in (last layer, config) order, whose suffix
//! is itself the smallest in stage order: the lexicographically smallest plan, which is the one
//! enumeration in that order keeps. See `docs/capture.md`.

use crate::algorithm::SolveError;
use crate::capture::space::{Choice, PlanSpace};
use crate::deadline::Deadline;
use std::cmp::Ordering;

/// Counters of one DP run.
#[derive(Debug, Clone, Copy, Default)]
pub struct DpCounters {
    /// States with a feasible suffix.
    pub states: u64,
    /// Transitions compared.
    pub transitions: u64,
}

/// The optimal plan of the space (None when no plan exists) and the counters.
///
/// Under the 1F1B correction a stage's memory depends on its position s among P stages: the
/// state gains s, and for hybrid spaces (where P is not fixed) the DP runs once per P and keeps
/// the best plan in the same order.
///
/// It stops at `deadline` with the deadline's error: a partial DP has no plan.
pub fn solve(
    space: &PlanSpace,
    deadline: &Deadline,
) -> Result<(Option<Vec<Choice>>, DpCounters), SolveError> {
    let mut counters = DpCounters::default();
    if !space.corrected() {
        let plan = solve_fixed(space, None, &mut counters, deadline)?;
        return Ok((plan, counters));
    }
    let most = space.layers.min(space.gpus);
    let mut best: Option<crate::capture::space::Key> = None;
    for p in 1..=most {
        if let Some(plan) = solve_fixed(space, Some(p), &mut counters, deadline)? {
            let key = crate::capture::space::Key::of(space, &plan);
            if best.as_ref().is_none_or(|b| key.rank(b).is_lt()) {
                best = Some(key);
            }
        }
    }
    Ok((best.map(|k| k.choices), counters))
}

/// The DP for plans of exactly `positions` stages (any number when `None`, without correction).
fn solve_fixed(
    space: &PlanSpace,
    positions: Option<usize>,
    counters: &mut DpCounters,
    deadline: &Deadline,
) -> Result<Option<Vec<Choice>>, SolveError> {
    let (l, gpus) = (space.layers, space.gpus);
    let npos = positions.map_or(1, |p| p + 1);
    let idx = |i: usize, g: usize, s: usize| (i * (gpus + 1) + g) * npos + s;
    // Best suffix per state: sorted-descending memory and the first stage.
    let mut best: Vec<Option<(Vec<f64>, Choice)>> = vec![None; (l + 1) * (gpus + 1) * npos];
    let empty: Vec<f64> = Vec::new();
    // Position of the stage placed in state s, and of the next state.
    let step = |s: usize| if positions.is_some() { s + 1 } else { 0 };
    let last_pos = positions.unwrap_or(0);
    for i in (0..l).rev() {
        if deadline.passed() {
            return Err(deadline.error());
        }
        for g in (0..gpus).rev() {
            for s in (0..npos).rev() {
                if !space.can_finish(i, g) || (positions.is_some() && s >= last_pos) {
                    continue;
                }
                let mut cur: Option<(Vec<f64>, Choice)> = None;
                for j in i..l {
                    for c in 0..space.configs.len() {
                        let Some(ng) = space.next_gpu(g, c) else {
                            continue;
                        };
                        let ns = step(s);
                        let suffix: &[f64] = if j + 1 == l && ng == gpus && ns == last_pos {
                            &empty
                        } else if j + 1 == l || ng == gpus {
                            continue;
                        } else {
                            match &best[idx(j + 1, ng, ns)] {
                                Some((v, _)) => v,
                                None => continue,
                            }
                        };
                        counters.transitions += 1;
                        let m = space.mem_at(i, j, c, s, last_pos.max(1));
                        let d = space.degree(c);
                        let better = match &cur {
                            None => true,
                            Some((v, _)) => cmp_merged(m, d, suffix, v) == Ordering::Less,
                        };
                        if better {
                            cur = Some((merged(m, d, suffix), (j, c)));
                        }
                    }
                }
                if cur.is_some() {
                    counters.states += 1;
                }
                best[idx(i, g, s)] = cur;
            }
        }
    }
    let mut plan = Vec::new();
    let (mut i, mut g, mut s) = (0, 0, 0);
    while i < l {
        let Some((_, (j, c))) = best[idx(i, g, s)].as_ref() else {
            return Ok(None);
        };
        plan.push((*j, *c));
        g = space.next_gpu(g, *c).expect("stored transitions fit");
        s = step(s);
        i = j + 1;
    }
    Ok(Some(plan))
}

/// `d` copies of `m` merged into the descending `suffix`.
fn merged(m: f64, d: usize, suffix: &[f64]) -> Vec<f64> {
    let at = suffix.partition_point(|x| x.total_cmp(&m) == Ordering::Greater);
    let mut v = Vec::with_capacity(suffix.len() + d);
    v.extend_from_slice(&suffix[..at]);
    v.extend(std::iter::repeat_n(m, d));
    v.extend_from_slice(&suffix[at..]);
    v
}

/// Compares `merged(m, d, suffix)` with `other` without building it.
fn cmp_merged(m: f64, d: usize, suffix: &[f64], other: &[f64]) -> Ordering {
    let at = suffix.partition_point(|x| x.total_cmp(&m) == Ordering::Greater);
    let item = |k: usize| -> f64 {
        if k < at {
            suffix[k]
        } else if k < at + d {
            m
        } else {
            suffix[k - d]
        }
    };
    let n = suffix.len() + d;
    for (k, y) in other.iter().enumerate().take(n) {
        match item(k).total_cmp(y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    n.cmp(&other.len())
}
