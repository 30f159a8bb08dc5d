//! CAPSlog's planner (pipeline only): binary search on a memory threshold with a greedy fill,
//! and the recursive tie-break variant.
//!
//! Greedy fill at threshold T: each GPU takes layers while the stage's predicted memory stays
//! <= T, leaving at least one layer for every later GPU; the last GPU takes the rest. It is
//! exact when M_a >= 0 and starting a stage later never costs more (M_i(l+1) <= M_i(l) +
//! M_a(l+1)); with negative M_a a stage can drop back under T after exceeding it, which the
//! greedy never sees (test `capslog_bs_misses_the_optimum_with_negative_m_a`).
//!
//! The tie-break variant (our reconstruction; the CAPSlog text is not in the shared papers):
//! after the search, split at the stage holding the peak and run the same search recursively on
//! the layers and GPUs before it and after it, which lowers the other GPUs' memory.

use crate::algorithm::SolveError;
use crate::capture::space::{cmp_sorted_desc, Choice, PlanSpace};
use crate::deadline::Deadline;

/// Greedy fill of layers `a..b` over GPUs `off..off + p` at threshold `t` (stage ends,
/// absolute).
fn greedy(
    space: &PlanSpace,
    a: usize,
    b: usize,
    off: usize,
    p: usize,
    t: f64,
) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(p);
    let mut first = a;
    for gpu in 0..p {
        let left = p - gpu - 1;
        if gpu == p - 1 {
            if first >= b || space.mem_at(first, b - 1, 0, off + gpu, space.gpus) > t {
                return None;
            }
            ends.push(b - 1);
            break;
        }
        if first + left >= b || space.mem_at(first, first, 0, off + gpu, space.gpus) > t {
            return None;
        }
        let mut last = first;
        while last + 1 + left < b && space.mem_at(first, last + 1, 0, off + gpu, space.gpus) <= t {
            last += 1;
        }
        ends.push(last);
        first = last + 1;
    }
    Some(ends)
}

/// Binary search over the distinct predicted stage memories for the least threshold at which the
/// greedy fill of `a..b` over `p` GPUs succeeds; returns that fill and the number of fills tried.
/// Each search sorts its L^2/2 x P candidates: on long chains the tie-break's recursion makes many
/// such searches, so `deadline` is checked before each (its error: no plan yet).
pub fn binary_search(
    space: &PlanSpace,
    a: usize,
    b: usize,
    off: usize,
    p: usize,
    deadline: &Deadline,
) -> Result<(Option<Vec<usize>>, u64), SolveError> {
    if deadline.passed() {
        return Err(deadline.error());
    }
    let mut cands: Vec<f64> = (a..b)
        .flat_map(|i| {
            (i..b).flat_map(move |j| {
                (off..off + p).map(move |s| space.mem_at(i, j, 0, s, space.gpus))
            })
        })
        .collect();
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    let (mut lo, mut hi) = (0usize, cands.len());
    let mut found = None;
    let mut tries = 0;
    while lo < hi {
        let mid = (lo + hi) / 2;
        tries += 1;
        match greedy(space, a, b, off, p, cands[mid]) {
            Some(ends) => {
                found = Some(ends);
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    Ok((found, tries))
}

/// A CAPSlog search's answer: the plan (`None` when no fill succeeds) and the greedy fills it
/// tried; its error when the deadline stopped it.
pub type Searched = Result<(Option<Vec<Choice>>, u64), SolveError>;

/// capslog-bs over the whole pipeline space.
pub fn bs(space: &PlanSpace, deadline: &Deadline) -> Searched {
    let (ends, tries) = binary_search(space, 0, space.layers, 0, space.gpus, deadline)?;
    Ok((ends.map(|e| e.into_iter().map(|j| (j, 0)).collect()), tries))
}

/// capslog-bs-tb: [`bs`], then the recursive tie-break around the peak stage.
pub fn bs_tb(space: &PlanSpace, deadline: &Deadline) -> Searched {
    let mut tries = 0;
    let ends = tb(space, 0, space.layers, 0, space.gpus, &mut tries, deadline)?;
    Ok((ends.map(|e| e.into_iter().map(|j| (j, 0)).collect()), tries))
}

fn tb(
    space: &PlanSpace,
    a: usize,
    b: usize,
    off: usize,
    p: usize,
    tries: &mut u64,
    deadline: &Deadline,
) -> Result<Option<Vec<usize>>, SolveError> {
    let (ends, t) = binary_search(space, a, b, off, p, deadline)?;
    *tries += t;
    let Some(ends) = ends else {
        return Ok(None);
    };
    if p <= 1 {
        return Ok(Some(ends));
    }
    // The first stage holding the peak.
    let mut first = a;
    let mut peak = (0, f64::NEG_INFINITY, a);
    for (s, &e) in ends.iter().enumerate() {
        let m = space.mem_at(first, e, 0, off + s, space.gpus);
        if m > peak.1 {
            peak = (s, m, first);
        }
        first = e + 1;
    }
    let (s, _, start) = peak;
    let end = ends[s];
    let mut out = Vec::with_capacity(p);
    if s > 0 {
        let before = tb(space, a, start, off, s, tries, deadline)?;
        out.extend(better(space, a, off, before, &ends[..s]));
    }
    out.push(end);
    if s + 1 < p {
        let after = tb(space, end + 1, b, off + s + 1, p - s - 1, tries, deadline)?;
        out.extend(better(space, end + 1, off + s + 1, after, &ends[s + 1..]));
    }
    Ok(Some(out))
}

/// The better (tie-break order) of a recursive fill and the original one of the same layers.
fn better(
    space: &PlanSpace,
    a: usize,
    off: usize,
    new: Option<Vec<usize>>,
    old: &[usize],
) -> Vec<usize> {
    let sorted = |ends: &[usize]| {
        let mut first = a;
        let mut v: Vec<f64> = ends
            .iter()
            .enumerate()
            .map(|(k, &e)| {
                let m = space.mem_at(first, e, 0, off + k, space.gpus);
                first = e + 1;
                m
            })
            .collect();
        v.sort_by(|x, y| y.total_cmp(x));
        v
    };
    match new {
        Some(n) if cmp_sorted_desc(&sorted(&n), &sorted(old)).is_lt() => n,
        _ => old.to_vec(),
    }
}
