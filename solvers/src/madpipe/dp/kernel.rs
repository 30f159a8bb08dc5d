//! The DP at a fixed T^: the recursion over (layer, GPUs left, delay, ...) and its allocation.

use crate::deadline::Deadline;
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::memory_limit;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// The part of a stage choice `k..l` shared by both placements.
pub(super) struct Step {
    pub(super) u: f64,
    pub(super) c: f64,
    pub(super) g: u32,
    pub(super) v_key: u64,
    pub(super) v: f64,
}

pub(super) struct Dp<'a> {
    pub(super) mc: &'a MadChain,
    pub(super) t_hat: f64,
    pub(super) limit: f64,
    pub(super) gt: Grid,
    pub(super) gm: Grid,
    pub(super) gv: Grid,
    /// `max_u[k]`: largest single-layer load among layers `0..k`.
    pub(super) max_u: Vec<f64>,
}

impl<'a> Dp<'a> {
    pub(super) fn new(mc: &'a MadChain, t_hat: f64, opts: &DpOptions, ranges: Ranges) -> Dp<'a> {
        let n = mc.len();
        let mut max_u = vec![0.0f64; n + 1];
        for i in 0..n {
            max_u[i + 1] = max_u[i].max(mc.u(i, i + 1));
        }
        Dp {
            mc,
            t_hat,
            limit: memory_limit::cap(mc.memory),
            gt: Grid::new(opts.grid_t, ranges.load),
            gm: Grid::new(opts.grid_m, mc.memory),
            gv: Grid::new(opts.grid_v, ranges.delay),
            max_u,
        }
    }

    /// `ceil(x / T^)` with [`GROUP_TOL`].
    #[inline]
    pub(super) fn groups(&self, x: f64) -> f64 {
        let q = x / self.t_hat;
        let c = ceil(q);
        if c >= 1.0 && q - (c - 1.0) <= GROUP_TOL {
            c - 1.0
        } else {
            c
        }
    }

    /// `x (+) y`.
    #[inline]
    pub(super) fn oplus(&self, x: f64, y: f64) -> f64 {
        let gx = self.groups(x);
        if gx == self.groups(x + y) {
            x + y
        } else {
            self.t_hat * gx + y
        }
    }

    /// Stage `k..l` below delay `v` (whose group count `gv = ceil(v / T^)` the caller knows):
    /// its group `g` and the delay `V' = (v (+) U(k,l)) (+) C(k)`, snapped up.
    #[inline]
    pub(super) fn step(&self, k: usize, l: usize, v: f64, gv: f64) -> Step {
        let u = self.mc.u(k, l);
        let c = self.mc.c(k);
        let q = self.groups(v + u);
        let w = if q == gv { v + u } else { self.t_hat * gv + u };
        let w = if c == 0.0 { w } else { self.oplus(w, c) };
        let (v_key, v) = self.gv.snap(w);
        Step {
            u,
            c,
            g: q.clamp(1.0, u32::MAX as f64) as u32,
            v_key,
            v,
        }
    }

    #[inline]
    pub(super) fn normal_fits(&self, k: usize, l: usize, s: &Step) -> bool {
        self.mc.m(k, l, s.g as f64) <= self.limit
    }

    /// Special placement of stage `k..l`: the new (t, m) keys and values, if it fits.
    #[inline]
    pub(super) fn special(
        &self,
        k: usize,
        l: usize,
        t: f64,
        m: f64,
        s: &Step,
    ) -> Option<(u64, f64, u64, f64)> {
        let (mk, mv) = self.gm.snap(m + self.mc.m(k, l, (s.g - 1) as f64));
        if mv > self.limit {
            return None;
        }
        let (tk, tv) = self.gt.snap(t + s.u);
        Some((tk, tv, mk, mv))
    }

    /// Base case `T(l, 0, t, m, v)` for `l >= 1`: the rest as one special stage.
    #[inline]
    pub(super) fn base(&self, l: usize, t: f64, m: f64, v: f64) -> Option<f64> {
        let s = self.step(0, l, v, self.groups(v));
        self.special(0, l, t, m, &s).map(|(_, tv, _, _)| tv)
    }

    /// A lower bound on `T(l, p, t, ...)`: every layer's stage and the special GPU's load count,
    /// and the p + 1 GPUs share `t + U(0,l)`.
    #[inline]
    pub(super) fn lower_bound(&self, l: usize, p: u32, t: f64) -> f64 {
        let avg = (t + self.mc.u(0, l)) / (p as f64 + 1.0);
        t.max(self.max_u[l]).max(avg) * (1.0 - LB_TOL)
    }

    pub(super) fn vals(&self, key: &Key) -> (f64, f64, f64) {
        (
            self.gt.value(key.t),
            self.gm.value(key.m),
            self.gv.value(key.v),
        )
    }

    /// Runs the DP with `normal` normal GPUs (`T(L, normal, 0, 0, 0)`).
    pub(super) fn run(&self, normal: u32, deadline: &Deadline) -> Result<DpRun, TimedOut> {
        let n = self.mc.len();
        let root = Key {
            p: normal,
            t: self.gt.snap(0.0).0,
            m: self.gm.snap(0.0).0,
            v: self.gv.snap(0.0).0,
        };
        if normal == 0 {
            // T(L, 0, 0, 0, 0): everything on the special GPU.
            let allocation = self
                .base(n, 0.0, 0.0, 0.0)
                .map(|_| self.rebuild(&[], root, n));
            return Ok(DpRun {
                allocation,
                states: 0,
                transitions: 1,
                dominated: 0,
            });
        }
        let mut levels: Vec<Level> = (0..=n).map(|_| Level::default()).collect();
        levels[n].map.insert(root, 0);
        levels[n].recs.push(Rec {
            key: root,
            a: 0.0,
            value: f64::INFINITY,
            choice: NO_CHOICE,
        });
        let (discovered, dominated) = self.forward(&mut levels, deadline)?;
        let evaluated = self.backward(&mut levels, deadline)?;
        let states: u64 = levels.iter().map(|lv| lv.recs.len() as u64).sum();
        let value = levels[n].recs[0].value;
        let allocation = value.is_finite().then(|| self.rebuild(&levels, root, n));
        debug_assert!(allocation.as_ref().is_none_or(|a| a.period == value));
        Ok(DpRun {
            allocation,
            states,
            transitions: discovered + evaluated,
            dominated,
        })
    }

    /// The forward pass: discovers the states of levels l-1, ..., 1 from level l, pulled by
    /// target level so that each level's map has one writer; level 0 and p = 0 are base cases,
    /// computed on the spot, never stored. Returns the transitions examined and the states
    /// dropped as dominated.
    fn forward(&self, levels: &mut [Level], deadline: &Deadline) -> Result<(u64, u64), TimedOut> {
        let n = levels.len() - 1;
        let stop = AtomicBool::new(false);
        let late = || deadline.passed();
        let mut transitions: u64 = 0;
        let mut dominated: u64 = 0;
        for l in (2..=n).rev() {
            let (lower, upper) = levels.split_at_mut(l);
            // Level l is complete (all its parents are above): keep its Pareto front only.
            dominated += upper[0].keep_front();
            let parents = &upper[0].recs;
            if parents.is_empty() {
                continue;
            }
            let work = parents.len() as u64 * (l as u64 - 1);
            transitions += work;
            let expand = |(i, level): (usize, &mut Level)| {
                let k = i + 1;
                for (j, rec) in parents.iter().enumerate() {
                    if j % 64 == 0 && (stop.load(Ordering::Relaxed) || late()) {
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    let (t, m, v) = self.vals(&rec.key);
                    let p = rec.key.p;
                    let s = self.step(k, l, v, self.groups(v));
                    // A normal stage leaving p - 1 = 0 normal GPUs reaches a base case.
                    if p >= 2 && self.normal_fits(k, l, &s) {
                        let key = Key {
                            p: p - 1,
                            v: s.v_key,
                            ..rec.key
                        };
                        level.offer(key, rec.a.max(s.u).max(s.c));
                    }
                    if let Some((tk, tv, mk, _)) = self.special(k, l, t, m, &s) {
                        let key = Key {
                            p,
                            t: tk,
                            m: mk,
                            v: s.v_key,
                        };
                        level.offer(key, rec.a.max(tv).max(s.c));
                    }
                }
            };
            // Threads only pay on levels with enough work; either way the result is the same.
            if work < PAR_MIN_WORK {
                lower[1..].iter_mut().enumerate().for_each(expand);
            } else {
                lower[1..].par_iter_mut().enumerate().for_each(expand);
            }
            if stop.load(Ordering::Relaxed) {
                return Err(TimedOut);
            }
        }
        if n >= 2 {
            dominated += levels[1].keep_front();
        }
        Ok((transitions, dominated))
    }

    /// The backward pass: the values of every level from the levels below, in parallel over
    /// the states of a level. Returns the choices examined.
    fn backward(&self, levels: &mut [Level], deadline: &Deadline) -> Result<u64, TimedOut> {
        let n = levels.len() - 1;
        let stop = AtomicBool::new(false);
        let late = || deadline.passed();
        let mut transitions: u64 = 0;
        for l in 1..=n {
            let (lower, upper) = levels.split_at_mut(l);
            let recs = &mut upper[0].recs;
            let eval = |(j, rec): (usize, &mut Rec)| -> u64 {
                if j % 64 == 0 && (stop.load(Ordering::Relaxed) || late()) {
                    stop.store(true, Ordering::Relaxed);
                    return 0;
                }
                let (value, choice, examined) = self.best(lower, l, &rec.key);
                rec.value = value;
                rec.choice = choice;
                examined
            };
            transitions += if (recs.len() * l) < PAR_MIN_WORK as usize {
                recs.iter_mut().enumerate().map(eval).sum::<u64>()
            } else {
                recs.par_iter_mut().enumerate().map(eval).sum::<u64>()
            };
            if stop.load(Ordering::Relaxed) {
                return Err(TimedOut);
            }
        }
        Ok(transitions)
    }

    /// Value of the child state reached by a choice; `None` when no allocation fits from it.
    #[inline]
    pub(super) fn child_value(
        &self,
        lower: &[Level],
        k: usize,
        key: Key,
        t: f64,
        m: f64,
        v: f64,
    ) -> Option<f64> {
        if k == 0 {
            Some(t)
        } else if key.p == 0 {
            self.base(k, t, m, v)
        } else {
            lower[k]
                .map
                .get(&key)
                .map(|&i| lower[k].recs[i as usize].value)
                .filter(|x| x.is_finite())
        }
    }

    /// The best choice at state `key` of level `l` (the first strictly least in the fixed
    /// order: `k` from `l - 1` down, normal before special) and the choices examined. Choices
    /// that cannot beat the best so far (by their own load or a lower bound) are skipped, and
    /// the scan stops once no smaller `k` can fit or beat it (loads and memory only grow).
    pub(super) fn best(&self, lower: &[Level], l: usize, key: &Key) -> (f64, u32, u64) {
        let (t, m, v) = self.vals(key);
        let gv = self.groups(v);
        let p = key.p;
        let mut best = f64::INFINITY;
        let mut choice = NO_CHOICE;
        let mut examined = 0u64;
        let mut normal_alive = p >= 1;
        let mut special_alive = true;
        for k in (0..l).rev() {
            let u = self.mc.u(k, l);
            normal_alive &= u < best;
            special_alive &= t + u < best;
            if !normal_alive && !special_alive {
                break;
            }
            let c = self.mc.c(k);
            let try_n =
                normal_alive && c < best && (k == 0 || self.lower_bound(k, p - 1, t) < best);
            let try_s =
                special_alive && c < best && (k == 0 || self.lower_bound(k, p, t + u) < best);
            if !try_n && !try_s {
                continue;
            }
            examined += 1;
            let s = self.step(k, l, v, gv);
            if try_n {
                if self.mc.core(k, l, s.g as f64) > self.limit {
                    normal_alive = false;
                } else if self.normal_fits(k, l, &s) {
                    let ck = Key {
                        p: p - 1,
                        v: s.v_key,
                        ..*key
                    };
                    if let Some(x) = self.child_value(lower, k, ck, t, m, s.v) {
                        let x = x.max(s.u).max(s.c);
                        if x < best {
                            best = x;
                            choice = (k as u32) << 1;
                        }
                    }
                }
            }
            if try_s {
                if m + self.mc.core(k, l, (s.g - 1) as f64) > self.limit {
                    special_alive = false;
                } else if let Some((tk, tv, mk, mv)) = self.special(k, l, t, m, &s) {
                    let edge = tv.max(s.c);
                    if edge < best {
                        let ck = Key {
                            p,
                            t: tk,
                            m: mk,
                            v: s.v_key,
                        };
                        if let Some(x) = self.child_value(lower, k, ck, tv, mv, s.v) {
                            let x = x.max(edge);
                            if x < best {
                                best = x;
                                choice = (k as u32) << 1 | 1;
                            }
                        }
                    }
                }
            }
        }
        (best, choice, examined)
    }

    /// Follows the stored choices from the root (whose value is finite) and lists the stages.
    /// The choices were made with this arithmetic, so every step fits again.
    pub(super) fn rebuild(&self, levels: &[Level], root: Key, n: usize) -> DpAllocation {
        let mut stages = Vec::new();
        let mut key = root;
        let mut l = n;
        let mut period: f64 = 0.0;
        let (mut t, mut m, mut v) = self.vals(&root);
        while l > 0 {
            let (k, special) = if key.p == 0 {
                (0, true)
            } else {
                let rec = &levels[l].recs[levels[l].map[&key] as usize];
                ((rec.choice >> 1) as usize, rec.choice & 1 == 1)
            };
            let s = self.step(k, l, v, self.groups(v));
            let memory;
            if special {
                let (tk, tv, mk, mv) = self.special(k, l, t, m, &s).expect("a stored choice fits");
                memory = self.mc.m(k, l, (s.g - 1) as f64);
                key = Key {
                    p: key.p,
                    t: tk,
                    m: mk,
                    v: s.v_key,
                };
                (t, m) = (tv, mv);
                period = period.max(tv);
            } else {
                memory = self.mc.m(k, l, s.g as f64);
                key = Key {
                    p: key.p - 1,
                    v: s.v_key,
                    ..key
                };
                period = period.max(s.u);
            }
            period = period.max(s.c);
            stages.push(DpStage {
                first: k,
                last: l - 1,
                gpu: 0,
                special,
                load: s.u,
                group: s.g,
                memory,
                delay: v,
            });
            v = s.v;
            l = k;
        }
        stages.reverse();
        DpAllocation {
            period,
            stages,
            special_load: t,
            special_memory: m,
        }
    }
}

/// The ranges the special load and delay grids divide into their points.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ranges {
    /// Special GPU's load: `[0, load]`.
    pub(super) load: f64,
    /// Delay: `[0, delay]`.
    pub(super) delay: f64,
}

impl Ranges {
    /// The paper's: `U(0,L)` and `U(0,L) + Sum C`.
    pub(super) fn paper(mc: &MadChain) -> Ranges {
        let (total, comm) = totals(mc);
        Ranges {
            load: total,
            delay: total + comm,
        }
    }
}

/// U(0,L) and the sum of every cut's link load.
pub(super) fn totals(mc: &MadChain) -> (f64, f64) {
    let n = mc.len();
    (mc.u(0, n), (1..n).map(|k| mc.c(k)).sum())
}

/// The deadline passed inside a DP call.
#[derive(Debug)]
pub(super) struct TimedOut;
