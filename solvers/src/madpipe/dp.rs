//! MadPipe-DP and its T^ search (MadPipe paper §4.2, Algorithm 1; `docs/madpipe.md`): an allocation
//! of the chain to P GPUs where P - 1 *normal* GPUs hold one contiguous stage each and one
//! *special* GPU may hold any number of stages.
//!
//! # The model (paper §4.2, in [`MadChain`]'s terms: 0-based layers, half-open ranges `k..l`)
//!
//! For a target period T^, `T(l, p, t_P, m_P, V)` is the least period of an allocation of layers
//! `0..l` on `p` normal GPUs plus the special one, which already carries load `t_P` and memory
//! `m_P`, when the delay between the end of `F_{l-1}` and the start of `B_{l-1}` is at least `V`.
//! The last stage `k..l` keeps `g = max(1, ceil((V + U(k,l)) / T^))` micro-batches in flight (the
//! 1F1B* group it would fall in), and the delay seen by layer `k - 1` is
//! `V' = (V (+) U(k,l)) (+) C(k)`, where `C(k)` is the load of the link carrying the cut before
//! layer `k` and `x (+) y` is `x + y` when `ceil(x/T^) = ceil((x+y)/T^)`, else
//! `T^ ceil(x/T^) + y` (a new 1F1B* group starts). Then
//!
//! - normal stage (needs `p >= 1` and `M(k,l,g) <= M`):
//!   `T_N = max(U(k,l), C(k), T(k, p-1, t_P, m_P, V'))`;
//! - special stage (needs `m_P' = m_P + M(k,l,g-1) <= M`, `t_P' = t_P + U(k,l)`):
//!   `T_S = max(t_P', C(k), T(k, p, t_P', m_P', V'))`;
//!
//! with the paper's base cases `T(0, p, t_P, m_P, V) = t_P` and, for `l > 0`,
//! `T(l, 0, t_P, m_P, V) = t_P + U(0,l)` if the whole rest fits on the special GPU as one stage
//! (`m_P + M(0,l,g-1) <= M`), else infeasible. The answer is `T(L, P-1, 0, 0, 0)`.
//!
//! The special GPU is charged `g - 1` activations per stage: the paper's deliberate
//! *under*-estimate (its true peak depends on how its stages interleave, which only the schedule
//! ILP decides). Every other quantity is an over-estimate or exact, see below.
//!
//! # Rounding (never under-estimates)
//!
//! `t_P`, `m_P` and `V` are snapped *up* onto uniform grids after every step: `t_P` on
//! `grid_t` points over `[0, U(0,L)]`, `m_P` on `grid_m` points over `[0, M]`, `V` on `grid_v`
//! points over `[0, U(0,L) + Sum C]` (the paper's 101, 11 and 51 points; values above the range
//! continue on the same step). Since `(+)`, `g` and the memories are non-decreasing in their
//! arguments, the DP's delays, in-flight counts, memories and special load are at least those of
//! the exact model for the same allocation. A grid of 0 points means exact values (no rounding).
//!
//! # Evaluation
//!
//! Only states reachable from the root are stored, level by level (`l` = layers left). A
//! forward pass discovers the states of each level from the levels above, in parallel over the
//! target levels, and tracks for each state the least bottleneck `a` of the paths reaching it
//! (the largest load already committed). Once a level is complete it keeps only its Pareto front:
//! a state with no more normal GPUs left and no less load, memory, delay and bottleneck than
//! another one cannot lead to a shorter period (`T` is monotone in each), so dropping it leaves
//! the period unchanged (a tie may resolve to another allocation of the same period). On
//! ResNet-101 at P = 8 the ten rounds then store 25 thousand states instead of 2.6 million, and
//! take about 70 ms instead of 5 s (benches/madpipe.rs). A backward pass then computes the
//! values, in parallel over the states of a level, skipping choices whose own load or a lower
//! bound (special load, busiest layer, average load) cannot beat the best so far. Levels with
//! little work run on the calling thread. Ties go to the first choice in a fixed order (the last
//! stage shortest first, normal before special), so the result does not depend on the threads.
//!
//! # Where this reads the paper
//!
//! - `C(k)` in `V'` is the cut *before* the stage (the paper writes `C(k)` in `V'` but `C(k-1)`,
//!   1-based, in `T_N` and `T_S`; only the cut before the stage is crossed there).
//! - `g >= 1` (a stage of zero load below zero delay still holds one micro-batch).
//! - Every stage boundary counts a link and buffers, even between two consecutive stages on the
//!   special GPU (the paper's formulas do; this only over-estimates).
//! - The T^ search adds one round at the largest useful T^ when its K rounds all fail, so that
//!   infeasibility is only reported when no T^ fits (see [`madpipe_dp`]).

use crate::algorithm::SolveError;
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::units::{fmt_bytes, fmt_ms};
use pipeplan_formulations::{InputError, Instance, Stage};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Relative slack when comparing memory with the limit (as the evaluator does).
const MEM_TOL: f64 = 1e-9;
/// Relative slack of the group count `ceil(x / T^)`: `x` within `GROUP_TOL T^` above a multiple
/// of T^ counts as that multiple (absorbs rounding of sums, like 1F1B*'s own tolerance).
const GROUP_TOL: f64 = 1e-12;
/// Relative slack of lower bounds (sums of loads taken in another order).
const LB_TOL: f64 = 1e-9;
/// Stage choices a level must examine before its pass runs on rayon's threads (below, the
/// synchronisation costs more than it saves).
const PAR_MIN_WORK: u64 = 8192;

// ------------------------------------------------------------------------------------------------
// Options

/// Discretization and search settings of MadPipe-DP (paper §5: 101 x 11 x 51 points, K = 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpOptions {
    /// Points of the special GPU's load grid over `[0, U(0,L)]` (`--set grid_t`); 0 = exact.
    pub grid_t: usize,
    /// Points of the special GPU's memory grid over `[0, M]` (`--set grid_m`); 0 = exact.
    pub grid_m: usize,
    /// Points of the delay grid over `[0, U(0,L) + Sum C]` (`--set grid_v`); 0 = exact.
    pub grid_v: usize,
    /// Rounds K of the T^ search (`--set rounds`).
    pub k_rounds: usize,
}

impl Default for DpOptions {
    fn default() -> Self {
        DpOptions {
            grid_t: 101,
            grid_m: 11,
            grid_v: 51,
            k_rounds: 10,
        }
    }
}

impl DpOptions {
    /// The `--set` keys [`DpOptions::from_params`] reads.
    pub const KEYS: [&'static str; 4] = ["grid_t", "grid_m", "grid_v", "rounds"];

    /// No rounding at all (every grid 0): the DP memoizes exact values. Exponential in the worst
    /// case; meant for small chains and tests.
    pub fn exact() -> DpOptions {
        DpOptions {
            grid_t: 0,
            grid_m: 0,
            grid_v: 0,
            ..DpOptions::default()
        }
    }

    /// Reads `grid_t`, `grid_m`, `grid_v` (integers >= 2, or `0` / `exact` for no rounding) and
    /// `rounds` (integer >= 1) from `--set` parameters, defaults for absent keys. Other keys are
    /// ignored: the calling algorithm rejects unknown ones (with [`DpOptions::KEYS`] among its
    /// known keys).
    pub fn from_params(params: &BTreeMap<String, String>) -> Result<DpOptions, SolveError> {
        let mut o = DpOptions::default();
        let grid = |key: &str, default: usize| -> Result<usize, SolveError> {
            let Some(text) = params.get(key) else {
                return Ok(default);
            };
            let t = text.trim();
            if t.eq_ignore_ascii_case("exact") {
                return Ok(0);
            }
            match t.parse::<usize>() {
                Ok(n) if n == 0 || n >= 2 => Ok(n),
                _ => Err(SolveError::Input(InputError::field(
                    format!("--set {key}"),
                    format!(
                        "must be a number of grid points >= 2 (the grid spans 0 and the maximum), \
                         or 0 / \"exact\" for no rounding; found \"{text}\""
                    ),
                ))),
            }
        };
        o.grid_t = grid("grid_t", o.grid_t)?;
        o.grid_m = grid("grid_m", o.grid_m)?;
        o.grid_v = grid("grid_v", o.grid_v)?;
        if let Some(text) = params.get("rounds") {
            o.k_rounds = match text.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(SolveError::Input(InputError::field(
                        "--set rounds",
                        format!(
                            "must be an integer >= 1 (rounds of the T^ search); found \"{text}\""
                        ),
                    )))
                }
            };
        }
        Ok(o)
    }
}

// ------------------------------------------------------------------------------------------------
// Results

/// One stage of the DP's allocation, with what the DP assumed of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DpStage {
    /// First layer (0-based, inclusive).
    pub first: usize,
    /// Last layer (inclusive).
    pub last: usize,
    /// GPU id (the special GPU is `gpus - 1`).
    pub gpu: u32,
    /// On the special GPU.
    pub special: bool,
    /// U(first..=last): forward + backward time per micro-batch (ms).
    pub load: f64,
    /// `g`: the 1F1B* group the DP placed the stage in (micro-batches in flight on a normal
    /// GPU; the special GPU is charged `g - 1`).
    pub group: u32,
    /// Memory the DP charged for the stage: `M(k,l,g)` (normal) or `M(k,l,g-1)` (special).
    pub memory: f64,
    /// The delay `V` (ms, as rounded by the DP) between the end of the stage's last forward and
    /// the start of its backward.
    pub delay: f64,
}

/// What one DP call of the T^ search gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundOutcome {
    /// The DP's period `T` (max load of its allocation).
    Period(f64),
    /// No allocation fits memory at this T^.
    Infeasible,
    /// The deadline passed during this round.
    TimedOut,
}

/// One round of the T^ search.
#[derive(Debug, Clone, PartialEq)]
pub struct DpRound {
    /// The target period T^ (ms).
    pub t_hat: f64,
    /// The DP's answer.
    pub outcome: RoundOutcome,
    /// States stored by this round's DP.
    pub states: u64,
}

/// The allocation MadPipe-DP + Algorithm 1 chose, and what the DP claims of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DpResult {
    /// The allocation as plan stages in chain order: contiguous layer ranges; normal stages on
    /// GPUs `0, 1, ...` in chain order, special stages all on GPU `gpus - 1`.
    pub stages: Vec<Stage>,
    /// The same stages with the DP's assumptions.
    pub detail: Vec<DpStage>,
    /// P: GPUs of the allocation (P - 1 normal + 1 special).
    pub gpus: usize,
    /// The special GPU's id (`gpus - 1`).
    pub special_gpu: u32,
    /// Algorithm 1's period estimate `max(T, T^)` (the paper's dashed line): at this period the
    /// allocation's loads fit (T) and its memory was estimated (T^).
    pub period: f64,
    /// `T`: the DP's period of the allocation, the largest load of a GPU or link as the DP counts
    /// it (the special GPU's load rounded up on its grid).
    pub dp_period: f64,
    /// The T^ at which the allocation was built.
    pub t_hat: f64,
    /// Claimed memory per GPU (bytes, index = GPU id, `gpus` entries; 0 for unused GPUs). Normal
    /// GPUs: `M(k,l,g)`. The special GPU: the DP's `m_P` (sum of `M(k,l,g-1)`, rounded up on its
    /// grid), the paper's lower estimate.
    pub memory: Vec<f64>,
    /// The special GPU's load as the DP counts it (rounded up), ms.
    pub special_load: f64,
    /// Every round of the T^ search, in order.
    pub rounds: Vec<DpRound>,
    /// States stored over all rounds.
    pub states: u64,
    /// Stage choices examined over all rounds (forward and backward passes).
    pub transitions: u64,
    /// States dropped because another state of their level dominates them.
    pub dominated: u64,
    /// The deadline cut the search short: this is the best allocation of the rounds completed.
    pub timed_out: bool,
    /// True when none of the K rounds fitted memory and the allocation comes from one extra
    /// round at the largest useful T^ (every stage in the first 1F1B* group).
    pub extra_round: bool,
}

/// The allocation of one DP call at a fixed T^.
#[derive(Debug, Clone, PartialEq)]
pub struct DpAllocation {
    /// The DP's period T of the allocation.
    pub period: f64,
    /// Stages in chain order.
    pub stages: Vec<DpStage>,
    /// The special GPU's load and memory as the DP counts them (rounded).
    pub special_load: f64,
    /// See `special_load`.
    pub special_memory: f64,
}

/// Result of [`madpipe_dp_at`].
#[derive(Debug, Clone, PartialEq)]
pub struct DpRun {
    /// The DP's best allocation, if one fits.
    pub allocation: Option<DpAllocation>,
    /// States stored (kept on their level's Pareto front).
    pub states: u64,
    /// Stage choices examined (forward and backward passes).
    pub transitions: u64,
    /// States dropped because another state of their level dominates them.
    pub dominated: u64,
}

// ------------------------------------------------------------------------------------------------
// Grids and keys

/// `x.ceil()` without the libm call on the hot path (x86-64's baseline has no rounding
/// instruction): exact for every finite `x`.
#[inline]
fn ceil(x: f64) -> f64 {
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
struct Grid {
    step: f64,
}

impl Grid {
    fn new(points: usize, range: f64) -> Grid {
        let step = if points >= 2 && range > 0.0 && range.is_finite() {
            range / (points - 1) as f64
        } else {
            0.0
        };
        Grid { step }
    }

    /// The least grid point >= `x` (its key and value).
    #[inline]
    fn snap(self, x: f64) -> (u64, f64) {
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
    fn value(self, key: u64) -> f64 {
        if self.step == 0.0 {
            f64::from_bits(key)
        } else {
            key as f64 * self.step
        }
    }
}

/// A DP state at a given level (layers left): normal GPUs left and the grid keys of t_P, m_P, V.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    p: u32,
    t: u64,
    m: u64,
    v: u64,
}

/// FxHash (rustc's hasher): keys are small integers or float bits, no DoS concern, and a fixed
/// hasher keeps iteration orders reproducible.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

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

type Map = HashMap<Key, u32, BuildHasherDefault<Fx>>;

/// A stored state: its key, the least bottleneck `a` over the paths reaching it (max load
/// already committed), its value and the choice achieving it (`k << 1 | special`).
#[derive(Debug, Clone)]
struct Rec {
    key: Key,
    a: f64,
    value: f64,
    choice: u32,
}

#[derive(Default)]
struct Level {
    map: Map,
    recs: Vec<Rec>,
}

impl Level {
    /// Records a path reaching state `key` with bottleneck `a`.
    #[inline]
    fn offer(&mut self, key: Key, a: f64) {
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
    fn keep_front(&mut self) -> u64 {
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

const NO_CHOICE: u32 = u32::MAX;

// ------------------------------------------------------------------------------------------------
// The DP at a fixed T^

/// The part of a stage choice `k..l` shared by both placements.
struct Step {
    u: f64,
    c: f64,
    g: u32,
    v_key: u64,
    v: f64,
}

struct Dp<'a> {
    mc: &'a MadChain,
    t_hat: f64,
    limit: f64,
    gt: Grid,
    gm: Grid,
    gv: Grid,
    /// `max_u[k]`: largest single-layer load among layers `0..k`.
    max_u: Vec<f64>,
}

impl<'a> Dp<'a> {
    fn new(mc: &'a MadChain, t_hat: f64, opts: &DpOptions) -> Dp<'a> {
        let n = mc.len();
        let (total, comm) = totals(mc);
        let mut max_u = vec![0.0f64; n + 1];
        for i in 0..n {
            max_u[i + 1] = max_u[i].max(mc.u(i, i + 1));
        }
        Dp {
            mc,
            t_hat,
            limit: mc.memory * (1.0 + MEM_TOL),
            gt: Grid::new(opts.grid_t, total),
            gm: Grid::new(opts.grid_m, mc.memory),
            gv: Grid::new(opts.grid_v, total + comm),
            max_u,
        }
    }

    /// `ceil(x / T^)` with [`GROUP_TOL`].
    #[inline]
    fn groups(&self, x: f64) -> f64 {
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
    fn oplus(&self, x: f64, y: f64) -> f64 {
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
    fn step(&self, k: usize, l: usize, v: f64, gv: f64) -> Step {
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
    fn normal_fits(&self, k: usize, l: usize, s: &Step) -> bool {
        self.mc.m(k, l, s.g as f64) <= self.limit
    }

    /// Special placement of stage `k..l`: the new (t, m) keys and values, if it fits.
    #[inline]
    fn special(
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
    fn base(&self, l: usize, t: f64, m: f64, v: f64) -> Option<f64> {
        let s = self.step(0, l, v, self.groups(v));
        self.special(0, l, t, m, &s).map(|(_, tv, _, _)| tv)
    }

    /// A lower bound on `T(l, p, t, ...)`: every layer's stage and the special GPU's load count,
    /// and the p + 1 GPUs share `t + U(0,l)`.
    #[inline]
    fn lower_bound(&self, l: usize, p: u32, t: f64) -> f64 {
        let avg = (t + self.mc.u(0, l)) / (p as f64 + 1.0);
        t.max(self.max_u[l]).max(avg) * (1.0 - LB_TOL)
    }

    fn vals(&self, key: &Key) -> (f64, f64, f64) {
        (
            self.gt.value(key.t),
            self.gm.value(key.m),
            self.gv.value(key.v),
        )
    }

    /// Runs the DP with `normal` normal GPUs (`T(L, normal, 0, 0, 0)`).
    fn run(&self, normal: u32, deadline: Option<Instant>) -> Result<DpRun, TimedOut> {
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
        let stop = AtomicBool::new(false);
        let late = || deadline.is_some_and(|d| Instant::now() >= d);
        let mut levels: Vec<Level> = (0..=n).map(|_| Level::default()).collect();
        levels[n].map.insert(root, 0);
        levels[n].recs.push(Rec {
            key: root,
            a: 0.0,
            value: f64::INFINITY,
            choice: NO_CHOICE,
        });
        let mut transitions: u64 = 0;
        let mut dominated: u64 = 0;

        // Forward: discover the states of levels l-1, ..., 1 from level l, pulled by target
        // level so that each level's map has one writer. Level 0 and p = 0 are base cases,
        // computed on the spot, never stored.
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

        // Backward: values from the levels below, in parallel over the states of a level.
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
        let states: u64 = levels.iter().map(|lv| lv.recs.len() as u64).sum();
        let value = levels[n].recs[0].value;
        let allocation = value.is_finite().then(|| self.rebuild(&levels, root, n));
        debug_assert!(allocation.as_ref().is_none_or(|a| a.period == value));
        Ok(DpRun {
            allocation,
            states,
            transitions,
            dominated,
        })
    }

    /// Value of the child state reached by a choice; `None` when no allocation fits from it.
    #[inline]
    fn child_value(
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
    fn best(&self, lower: &[Level], l: usize, key: &Key) -> (f64, u32, u64) {
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
    fn rebuild(&self, levels: &[Level], root: Key, n: usize) -> DpAllocation {
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

/// U(0,L) and the sum of every cut's link load.
fn totals(mc: &MadChain) -> (f64, f64) {
    let n = mc.len();
    (mc.u(0, n), (1..n).map(|k| mc.c(k)).sum())
}

/// The deadline passed inside a DP call.
#[derive(Debug)]
struct TimedOut;

// ------------------------------------------------------------------------------------------------
// Public entry points

fn check_input(inst: &Instance, gpus: usize, opts: &DpOptions) -> Result<(), SolveError> {
    inst.validate()?;
    if gpus == 0 {
        return Err(SolveError::Input(InputError::field(
            "gpus",
            "MadPipe needs at least 1 GPU (P - 1 normal + 1 special)",
        )));
    }
    if gpus > inst.cluster.gpus as usize {
        return Err(SolveError::Input(InputError::field(
            "gpus",
            format!(
                "{gpus} GPUs asked but the cluster has {}",
                inst.cluster.gpus
            ),
        )));
    }
    if opts.k_rounds == 0 {
        return Err(SolveError::Input(InputError::field(
            "--set rounds",
            "must be at least 1",
        )));
    }
    for (key, points) in [
        ("grid_t", opts.grid_t),
        ("grid_m", opts.grid_m),
        ("grid_v", opts.grid_v),
    ] {
        if points == 1 {
            return Err(SolveError::Input(InputError::field(
                format!("--set {key}"),
                "a grid needs at least 2 points (0 and the maximum), or 0 for exact values",
            )));
        }
    }
    Ok(())
}

fn time_limit(started: Instant, deadline: Option<Instant>) -> SolveError {
    let secs = match deadline {
        Some(d) => d.saturating_duration_since(started).as_secs_f64(),
        None => started.elapsed().as_secs_f64(),
    };
    SolveError::TimeLimit(secs)
}

/// One MadPipe-DP call at a fixed target period `t_hat` on `gpus` GPUs (P - 1 normal + 1
/// special), without the T^ search: `T(L, P-1, 0, 0, 0)` and its allocation (stages with
/// `gpu` 0; [`madpipe_dp`] numbers the GPUs).
///
/// Fails on a malformed instance, `gpus` outside `1..=cluster.gpus`, a grid of 1 point, a
/// non-positive or non-finite `t_hat`, or when the deadline passes ([`SolveError::TimeLimit`]).
pub fn madpipe_dp_at(
    inst: &Instance,
    gpus: usize,
    t_hat: f64,
    opts: &DpOptions,
    deadline: Option<Instant>,
) -> Result<DpRun, SolveError> {
    check_input(inst, gpus, opts)?;
    if !(t_hat.is_finite() && t_hat > 0.0) {
        return Err(SolveError::Input(InputError::field(
            "t_hat",
            format!("must be a positive time, found {t_hat}"),
        )));
    }
    let mc = MadChain::new(inst);
    let started = Instant::now();
    Dp::new(&mc, t_hat, opts)
        .run((gpus - 1) as u32, deadline)
        .map_err(|_| time_limit(started, deadline))
}

/// MadPipe's first phase: Algorithm 1's search for T^ (lb = U(0,L)/P, ub = U(0,L) + Sum C,
/// `opts.k_rounds` rounds), each round a MadPipe-DP call on `gpus` GPUs (P - 1 normal + 1
/// special), returning the allocation of least `max(T, T^)` (the earliest round on ties).
///
/// If no round fits memory, one extra round runs at the largest useful T^ (above every delay the
/// grids can produce, so every stage keeps the fewest micro-batches the model allows: memory is
/// non-decreasing in `g`); only if that fails too is the instance [`SolveError::Infeasible`],
/// with the binding constraint. When `deadline` passes, the best allocation so far is returned
/// with `timed_out` set, or [`SolveError::TimeLimit`] if there is none. Rounds run one after
/// the other (each depends on the previous); each DP runs in parallel on rayon's current pool,
/// with the same result for any number of threads.
///
/// Fails on a malformed instance, `gpus` outside `1..=cluster.gpus`, options out of range, or a
/// chain whose every load is 0 (no period to search).
pub fn madpipe_dp(
    inst: &Instance,
    gpus: usize,
    opts: &DpOptions,
    deadline: Option<Instant>,
) -> Result<DpResult, SolveError> {
    check_input(inst, gpus, opts)?;
    let started = Instant::now();
    let mc = MadChain::new(inst);
    let n = mc.len();
    let (total, comm) = totals(&mc);
    let ub0 = total + comm;
    if !(ub0 > 0.0 && ub0.is_finite()) {
        return Err(SolveError::Input(InputError::field(
            "model.layers",
            format!(
                "every layer takes 0 ms and nothing crosses a link (total load {ub0} ms): the \
                 period is 0 and T^ is undefined"
            ),
        )));
    }
    let mut search = Search {
        mc: &mc,
        opts,
        normal: (gpus - 1) as u32,
        deadline,
        rounds: Vec::new(),
        best: None,
        states: 0,
        transitions: 0,
        dominated: 0,
    };
    let mut lb = total / gpus as f64;
    let mut ub = ub0;
    let mut t_hat = lb;
    let mut timed_out = false;
    for _ in 0..opts.k_rounds {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            timed_out = true;
            break;
        }
        let Ok(t_i) = search.round(t_hat) else {
            timed_out = true;
            break;
        };
        let t_i = t_i.unwrap_or(f64::INFINITY);
        lb = lb.max(t_i.min(t_hat));
        ub = ub.min(t_i.max(t_hat));
        t_hat = (lb + ub) / 2.0;
    }
    let mut extra_round = false;
    if search.best.is_none() && !timed_out {
        let t_max = ub0 + (n as f64 + 1.0) * Grid::new(opts.grid_v, ub0).step;
        match search.round(t_max) {
            Ok(Some(_)) => extra_round = true,
            Ok(None) => {
                return Err(SolveError::Infeasible(infeasible_message(
                    inst, &mc, gpus, t_max,
                )))
            }
            Err(TimedOut) => timed_out = true,
        }
    }
    let Search {
        rounds,
        best,
        states,
        transitions,
        dominated,
        ..
    } = search;
    let Some((period, t_hat, alloc)) = best else {
        return Err(time_limit(started, deadline));
    };
    let special_gpu = (gpus - 1) as u32;
    let mut detail = alloc.stages;
    let mut next = 0u32;
    let mut memory = vec![0.0; gpus];
    for s in &mut detail {
        if s.special {
            s.gpu = special_gpu;
        } else {
            s.gpu = next;
            memory[next as usize] = s.memory;
            next += 1;
        }
    }
    if detail.iter().any(|s| s.special) {
        memory[special_gpu as usize] = alloc.special_memory;
    }
    let stages = detail
        .iter()
        .map(|s| Stage::single(s.first, s.last, s.gpu))
        .collect();
    Ok(DpResult {
        stages,
        detail,
        gpus,
        special_gpu,
        period,
        dp_period: alloc.period,
        t_hat,
        memory,
        special_load: alloc.special_load,
        rounds,
        states,
        transitions,
        dominated,
        timed_out,
        extra_round,
    })
}

/// The state of Algorithm 1 across rounds.
struct Search<'a> {
    mc: &'a MadChain,
    opts: &'a DpOptions,
    normal: u32,
    deadline: Option<Instant>,
    rounds: Vec<DpRound>,
    /// Least `max(T, T^)` so far, its T^ and allocation.
    best: Option<(f64, f64, DpAllocation)>,
    states: u64,
    transitions: u64,
    dominated: u64,
}

impl Search<'_> {
    /// One MadPipe-DP call at `t_hat`: its period T, or `None` when no allocation fits.
    fn round(&mut self, t_hat: f64) -> Result<Option<f64>, TimedOut> {
        if !(t_hat > 0.0 && t_hat.is_finite()) {
            // T^ = 0 only when U(0,L) = 0: no positive period to estimate memory at.
            self.rounds.push(DpRound {
                t_hat,
                outcome: RoundOutcome::Infeasible,
                states: 0,
            });
            return Ok(None);
        }
        let run = match Dp::new(self.mc, t_hat, self.opts).run(self.normal, self.deadline) {
            Ok(run) => run,
            Err(e) => {
                self.rounds.push(DpRound {
                    t_hat,
                    outcome: RoundOutcome::TimedOut,
                    states: 0,
                });
                return Err(e);
            }
        };
        self.states += run.states;
        self.transitions += run.transitions;
        self.dominated += run.dominated;
        let t = run.allocation.as_ref().map(|a| a.period);
        self.rounds.push(DpRound {
            t_hat,
            outcome: t.map_or(RoundOutcome::Infeasible, RoundOutcome::Period),
            states: run.states,
        });
        if let Some(a) = run.allocation {
            let tilde = a.period.max(t_hat);
            if self.best.as_ref().is_none_or(|b| tilde < b.0) {
                self.best = Some((tilde, t_hat, a));
            }
        }
        Ok(t)
    }
}

/// Why no allocation fits at the most permissive T^: the heaviest layer, the model states as a
/// whole, or the fullest GPU of the least-memory contiguous split (one micro-batch per stage).
fn infeasible_message(inst: &Instance, mc: &MadChain, gpus: usize, t_max: f64) -> String {
    let n = mc.len();
    let mem = mc.memory;
    let name = |i: usize| &inst.model.layers[i].name;
    let heaviest = (0..n)
        .max_by(|&a, &b| mc.states(a, a + 1).total_cmp(&mc.states(b, b + 1)))
        .unwrap_or(0);
    let need = mc.states(heaviest, heaviest + 1);
    let head = format!(
        "no allocation of the {n} layers on {gpus} GPUs fits {} per GPU in MadPipe's memory \
         model, even at T^ = {} where every stage keeps the fewest micro-batches",
        fmt_bytes(mem),
        fmt_ms(t_max)
    );
    if need > mem * (1.0 + MEM_TOL) {
        return format!(
            "{head}: layer {heaviest} ({}) needs {} for its model states alone ({} weight \
             copies); GPUs have {}",
            name(heaviest),
            fmt_bytes(need),
            mc.state_copies,
            fmt_bytes(mem)
        );
    }
    let states = mc.states(0, n);
    if states > gpus as f64 * mem * (1.0 + MEM_TOL) {
        return format!(
            "{head}: the model states alone need {} in total; {gpus} GPUs hold {}",
            fmt_bytes(states),
            fmt_bytes(gpus as f64 * mem)
        );
    }
    let p = gpus.min(n);
    let part = crate::minmax::min_max_partition(n, p, |_, k, l| mc.m(k, l, 1.0));
    let mut first = 0;
    let mut worst = (0, 0);
    for &e in &part.ends {
        if mc.m(first, e + 1, 1.0) >= part.value {
            worst = (first, e);
            break;
        }
        first = e + 1;
    }
    format!(
        "{head}: e.g. the least-memory contiguous split into {p} stages with one micro-batch each \
         still needs {} on one GPU (layers {}..={}); GPUs have {}",
        fmt_bytes(part.value),
        worst.0,
        worst.1,
        fmt_bytes(mem)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipeplan_formulations::instance::{Cluster, Layer};

    /// Batch 4, input 3 MiB, layers a, b, c; two GPUs of 1 GiB at 1 GB/s.
    fn inst() -> Instance {
        let mib = 1024.0 * 1024.0;
        let layers = vec![
            Layer::new("a", 1.0, 2.0, 10.0 * mib, 2.0 * mib),
            Layer::new("b", 2.0, 3.0, 20.0 * mib, mib),
            Layer::new("c", 1.0, 1.0, 5.0 * mib, 4.0 * mib),
        ];
        let cluster = Cluster::single_node(2, 1024.0 * mib, 1e9);
        let inst = Instance::new("", 4, 3.0 * mib, layers, cluster);
        inst.validate().unwrap();
        inst
    }

    #[test]
    fn fast_ceil_is_ceil() {
        for x in [
            0.0,
            0.5,
            1.0,
            1.000_000_1,
            2.999_999,
            7.0,
            1e15 + 0.5,
            4.5e15,
            1e300,
            -1.5,
            -0.0,
        ] {
            assert_eq!(ceil(x), x.ceil(), "{x}");
        }
    }

    #[test]
    fn snap_is_the_least_grid_point_at_or_above() {
        let g = Grid::new(11, 1.0);
        for i in 0..=3000 {
            let x = i as f64 * 0.000_37;
            let (k, v) = g.snap(x);
            assert!(v >= x, "{x} -> {v}");
            assert!(k == 0 || (k - 1) as f64 * g.step < x, "{x} -> {k}");
            assert_eq!(g.value(k), v);
        }
        // Grid points map to themselves, and the grid continues above its range.
        assert_eq!(g.snap(0.3).0, 3);
        assert_eq!(g.snap(1.25).0, 13);
        // Exact mode: keys are the bits, values unchanged.
        let e = Grid::new(0, 1.0);
        assert_eq!(e.snap(0.123), (0.123f64.to_bits(), 0.123));
        assert_eq!(e.snap(-0.0), (0, 0.0));
    }

    #[test]
    fn groups_and_oplus_follow_the_paper() {
        let inst = inst();
        let mc = MadChain::new(&inst);
        let dp = Dp::new(&mc, 10.0, &DpOptions::exact());
        assert_eq!(dp.groups(0.0), 0.0);
        assert_eq!(dp.groups(10.0), 1.0);
        assert_eq!(
            dp.groups(10.0 + 1e-12),
            1.0,
            "rounding noise stays in the group"
        );
        assert_eq!(dp.groups(10.1), 2.0);
        // Same group: x + y; else the next group starts at T^ ceil(x / T^).
        assert_eq!(dp.oplus(3.0, 4.0), 7.0);
        assert_eq!(dp.oplus(7.0, 3.0), 10.0);
        assert_eq!(dp.oplus(8.0, 4.0), 14.0);
        assert_eq!(dp.oplus(0.0, 4.0), 4.0);
        assert_eq!(dp.oplus(10.0, 0.0), 10.0);
        assert_eq!(dp.oplus(15.0, 6.0), 26.0);
        // step = (V (+) U) (+) C with g = ceil((V + U) / T^): the last stage of a chain.
        let s = dp.step(1, 3, 0.0, 0.0);
        assert_eq!(s.u, 7.0);
        assert_eq!(s.g, 1);
        assert_eq!(s.v, dp.oplus(7.0, mc.c(1)));
    }

    #[test]
    fn the_pareto_front_keeps_only_undominated_states() {
        let key = |p, t, m, v| Key { p, t, m, v };
        let mut level = Level::default();
        level.offer(key(2, 1, 1, 1), 5.0);
        level.offer(key(2, 1, 1, 2), 5.0); // dominated: more delay
        level.offer(key(1, 1, 1, 1), 5.0); // dominated: fewer GPUs
        level.offer(key(2, 1, 1, 3), 4.0); // kept: smaller bottleneck
        level.offer(key(2, 0, 2, 1), 9.0); // kept: less load
        level.offer(key(2, 1, 1, 2), 3.0); // same state again: its bottleneck drops to 3
        assert_eq!(level.keep_front(), 2);
        let mut kept: Vec<_> = level.recs.iter().map(|r| (r.key, r.a)).collect();
        kept.sort_by(|a, b| a.1.total_cmp(&b.1));
        assert_eq!(
            kept,
            vec![
                (key(2, 1, 1, 2), 3.0),
                (key(2, 1, 1, 1), 5.0),
                (key(2, 0, 2, 1), 9.0)
            ]
        );
        for (i, r) in level.recs.iter().enumerate() {
            assert_eq!(level.map[&r.key], i as u32);
        }
    }

    #[test]
    fn options_from_params() {
        let p = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            DpOptions::from_params(&p(&[])).unwrap(),
            DpOptions::default()
        );
        let o = DpOptions::from_params(&p(&[
            ("grid_t", "201"),
            ("grid_m", "exact"),
            ("grid_v", "0"),
            ("rounds", "3"),
            ("ilp_time", "5"),
        ]))
        .unwrap();
        assert_eq!(
            o,
            DpOptions {
                grid_t: 201,
                grid_m: 0,
                grid_v: 0,
                k_rounds: 3
            }
        );
        for (key, bad) in [
            ("grid_t", "1"),
            ("grid_m", "-3"),
            ("grid_v", "fine"),
            ("rounds", "0"),
            ("rounds", "2.5"),
        ] {
            let e = DpOptions::from_params(&p(&[(key, bad)])).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(&format!("--set {key}")), "{msg}");
            assert!(msg.contains(bad), "{msg}");
        }
    }
}
