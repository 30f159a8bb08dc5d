//! DP states: the rounding grids, the memo keys and the per-level tables.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `x.ceil()` without the libm call on the hot path (x86-64's baseline has no rounding
/// instruction): exact for every finite `x`.
#[inline]
pub(super) fn ceil(x: f64) -> f64 {
    if (0.0..4.0e15).contains(&x) {
        let t = x as u64 as f64;
        if t < x {
            t + 1.0
        } else {
            t
        }
    } else {
        x.ceil()
    }
}

/// A uniform grid of step `step` from 0 (values above the range continue on the same step);
/// step 0 means exact values.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    pub(super) step: f64,
}

impl Grid {
    pub(super) fn new(points: usize, range: f64) -> Grid {
        let step = if points >= 2 && range > 0.0 && range.is_finite() {
            range / (points - 1) as f64
        } else {
            0.0
        };
        Grid { step }
    }

    /// The least grid point >= `x` (its key and value).
    #[inline]
    pub(super) fn snap(self, x: f64) -> (u64, f64) {
        let x = if x > 0.0 { x } else { 0.0 };
        if self.step == 0.0 {
            return (x.to_bits(), x);
        }
        let mut i = ceil(x / self.step);
        if i * self.step < x {
            i += 1.0;
        } else if i >= 1.0 && (i - 1.0) * self.step >= x {
            i -= 1.0;
        }
        (i as u64, i * self.step)
    }

    #[inline]
    pub(super) fn value(self, key: u64) -> f64 {
        if self.step == 0.0 {
            f64::from_bits(key)
        } else {
            key as f64 * self.step
        }
    }
}

/// A DP state at a given level (layers left): normal GPUs left and the grid keys of t_P, m_P, V.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) p: u32,
    pub(super) t: u64,
    pub(super) m: u64,
    pub(super) v: u64,
}

/// FxHash (rustc's hasher): keys are small integers or float bits, no DoS concern, and a fixed
/// hasher keeps iteration orders reproducible.
#[derive(Default, Clone, Copy)]
pub(super) struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type Map = HashMap<Key, u32, BuildHasherDefault<Fx>>;

/// A stored state: its key, the least bottleneck `a` over the paths reaching it (max load
/// already committed), its value and the choice achieving it (`k << 1 | special`).
#[derive(Debug, Clone)]
pub(super) struct Rec {
    pub(super) key: Key,
    pub(super) a: f64,
    pub(super) value: f64,
    pub(super) choice: u32,
}

#[derive(Default)]
pub(super) struct Level {
    pub(super) map: Map,
    pub(super) recs: Vec<Rec>,
}

impl Level {
    /// Records a path reaching state `key` with bottleneck `a`.
    #[inline]
    pub(super) fn offer(&mut self, key: Key, a: f64) {
        match self.map.get(&key) {
            Some(&i) => {
                let r = &mut self.recs[i as usize];
                r.a = r.a.min(a);
            }
            None => {
                self.map.insert(key, self.recs.len() as u32);
                self.recs.push(Rec {
                    key,
                    a,
                    value: f64::INFINITY,
                    choice: NO_CHOICE,
                });
            }
        }
    }

    /// Removes every state dominated by another one of the level, and returns how many.
    ///
    /// State `x` dominates `y` when it has at least as many normal GPUs left, no more load,
    /// memory or delay (`p >= `, `t, m, v <=`) and a bottleneck `a` no larger. `T(.)` is
    /// non-increasing in p and non-decreasing in t, m and v (grids and memories are monotone),
    /// so every path through `y` is matched by one through `x` at most as long: the root's
    /// value does not change. Keys of distinct states differ, so domination is a strict order;
    /// sorting by `(-p, t, m, v, a)` puts dominators first and one sweep against the kept states
    /// finds the front. Keys compare as values: grid indices, or bits of non-negative floats.
    pub(super) fn keep_front(&mut self) -> u64 {
        if self.recs.len() < 2 {
            return 0;
        }
        let mut recs = std::mem::take(&mut self.recs);
        recs.sort_unstable_by(|x, y| {
            (y.key.p.cmp(&x.key.p))
                .then(x.key.t.cmp(&y.key.t))
                .then(x.key.m.cmp(&y.key.m))
                .then(x.key.v.cmp(&y.key.v))
                .then(x.a.total_cmp(&y.a))
        });
        let before = recs.len();
        let mut front: Vec<Rec> = Vec::new();
        for r in recs {
            let dominated = front.iter().any(|f| {
                f.key.p >= r.key.p
                    && f.key.t <= r.key.t
                    && f.key.m <= r.key.m
                    && f.key.v <= r.key.v
                    && f.a <= r.a
            });
            if !dominated {
                front.push(r);
            }
        }
        self.map.clear();
        for (i, r) in front.iter().enumerate() {
            self.map.insert(r.key, i as u32);
        }
        self.recs = front;
        (before - self.recs.len()) as u64
    }
}

pub(super) const NO_CHOICE: u32 = u32::MAX;
