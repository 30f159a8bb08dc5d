//! CAPTURE's recommender (Algorithm 4) and mCAP-BF: depth-first enumeration of stage-config
//! placements, pruning every config whose predicted memory exceeds the best peak found so far,
//! with the tie-break order of [`Key`].
//!
//! Parallel with rayon over the first stage's configs; each subtree keeps its own incumbent and
//! its own share of the node cap, so results and counters do not depend on the thread count.

use crate::capture::space::{Choice, Key, PlanSpace};
use crate::deadline::Deadline;
use rayon::prelude::*;

/// Limits of one enumeration.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'d> {
    /// Search nodes (calls of the placement function) over all subtrees.
    pub max_nodes: u64,
    /// When to stop.
    pub deadline: &'d Deadline,
}

/// Outcome of an enumeration.
#[derive(Debug, Clone)]
pub struct Enumeration {
    /// Best plan found.
    pub best: Option<Key>,
    /// Search nodes visited.
    pub nodes: u64,
    /// Complete plans compared.
    pub plans: u64,
    /// True when a limit stopped the search (the best plan is then not proven optimal).
    pub stopped: bool,
    /// True when the deadline (rather than the node cap) stopped it.
    pub timed_out: bool,
}

struct Dfs<'a> {
    space: &'a PlanSpace,
    best: Option<Key>,
    nodes: u64,
    plans: u64,
    cap: u64,
    deadline: &'a Deadline,
    stopped: bool,
    timed_out: bool,
    stack: Vec<Choice>,
}

impl Dfs<'_> {
    fn place(&mut self, i: usize, g: usize) {
        if self.stopped {
            return;
        }
        if i == self.space.layers {
            self.plans += 1;
            let key = Key::of(self.space, &self.stack);
            if self.best.as_ref().is_none_or(|b| key.rank(b).is_lt()) {
                self.best = Some(key);
            }
            return;
        }
        self.nodes += 1;
        if self.nodes > self.cap {
            self.stopped = true;
            return;
        }
        if self.nodes % 4096 == 0 && self.deadline.passed() {
            self.stopped = true;
            self.timed_out = true;
            return;
        }
        for j in i..self.space.layers {
            for c in 0..self.space.configs.len() {
                self.try_stage(i, g, j, c);
            }
        }
    }

    fn try_stage(&mut self, i: usize, g: usize, j: usize, c: usize) {
        let Some(ng) = self.space.next_gpu(g, c) else {
            return;
        };
        if !self.space.can_finish(j + 1, ng) {
            return;
        }
        // The paper's pruning: a config above the best peak cannot be in a better plan.
        if let Some(b) = &self.best {
            if self.space.mem_lower(i, j, c) > b.peak() {
                return;
            }
        }
        self.stack.push((j, c));
        self.place(j + 1, ng);
        self.stack.pop();
    }
}

/// Enumerates the space within the limits.
pub fn enumerate(space: &PlanSpace, limits: Limits) -> Enumeration {
    let firsts: Vec<Choice> = (0..space.layers)
        .flat_map(|j| (0..space.configs.len()).map(move |c| (j, c)))
        .filter(|&(j, c)| {
            space
                .next_gpu(0, c)
                .is_some_and(|ng| space.can_finish(j + 1, ng))
        })
        .collect();
    let share = (limits.max_nodes / firsts.len().max(1) as u64).max(1);
    let results: Vec<Dfs> = firsts
        .par_iter()
        .map(|&(j, c)| {
            let mut dfs = Dfs {
                space,
                best: None,
                nodes: 0,
                plans: 0,
                cap: share,
                deadline: limits.deadline,
                stopped: false,
                timed_out: false,
                stack: Vec::with_capacity(space.gpus),
            };
            dfs.try_stage(0, 0, j, c);
            dfs
        })
        .collect();
    let mut out = Enumeration {
        best: None,
        nodes: 1,
        plans: 0,
        stopped: false,
        timed_out: false,
    };
    for r in results {
        out.nodes += r.nodes;
        out.plans += r.plans;
        out.stopped |= r.stopped;
        out.timed_out |= r.timed_out;
        if let Some(k) = r.best {
            if out.best.as_ref().is_none_or(|b| k.rank(b).is_lt()) {
                out.best = Some(k);
            }
        }
    }
    out
}
