//! `exact-contiguous`: the least valid period over every contiguous partition of the chain into
//! at most P stages (stage s on GPU s), with 1F1B* memory (`docs/madpipe.md`). It is the exact
//! reference the MadPipe family is measured against.
//!
//! # Method
//!
//! For a fixed threshold `T`, an *oracle* decides whether some partition is feasible: every
//! stage and link load at most `T`, and every GPU within memory with the micro-batches 1F1B*
//! keeps at `T`. It is a dynamic program over suffixes, built backwards as 1F1B* builds its
//! groups: the state of a suffix (layers `l..L` in `q` stages) is the 1F1B* group index `g` and
//! the load `s` already in the open group. A state with a smaller `(g, s)` (lexicographically)
//! *dominates*: prepending any resource keeps it smaller (next-fit packing stays ahead), so every
//! earlier stage gets a group at most as large, hence at most as much memory. Keeping only the
//! dominant state per `(l, q)` is therefore exact: `O(L^2 P)` per oracle call. When any stage
//! count up to P is allowed, fewer stages dominate too (they leave more GPUs to the prefix), so
//! each suffix keeps a Pareto front of `(q, g, s)`, usually one or two states, instead of one
//! state per q: `O(L^2)` in practice.
//!
//! Feasibility is monotone in `T` (groups never grow with `T`), and the optimum is the valid
//! period of some partition, a sum of consecutive loads: a float. A bisection over the bit
//! patterns of positive floats (at most 64 oracle calls) keeps `lo` infeasible and `hi` the valid
//! period of a partition the oracle found, and stops when they are adjacent floats: then no
//! partition has a valid period below `hi`, which is the exact optimum. When the links between
//! GPUs differ (several nodes), a link's load depends on which GPUs it joins, so the stage a
//! q-stage suffix opens needs the total stage count p: the DP runs once per residue of p modulo
//! the period of the links' pattern (8 for 8 GPUs per node), each class sharing its links.
//! Everything is polynomial; no enumeration.
//!
//! Loads and memory are accumulated exactly as the evaluator accumulates them, so the claimed
//! period equals [`valid_period`] of the returned partition and the evaluator's verdict (it fits
//! at the period, not below). Optimal up to the 1e-12 rounding slack 1F1B* allows when it compares
//! sums with the period.
//!
//! Settings (`--set`): `fewer=false` forces exactly P stages (default: at most P; a user with P
//! GPUs may use fewer, and with 1F1B* memory fewer stages can be better: fewer links, fewer
//! groups).

use super::valid_period::{async_schedule, valid_period, ValidPeriod, MEM_TOL};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status,
};
use crate::deadline::Deadline;
use crate::settings::{Kind, Param};
use pipeplan_formulations::cost::state_copies;
use pipeplan_formulations::instance::{Chain, ScheduleKind};
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance, Plan};

/// The exact contiguous optimum (see the module docs).
pub struct ExactContiguous;

/// What [`contiguous_optimum`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct ContiguousOptimum {
    /// Last layer of every stage (stage s on GPU s).
    pub ends: Vec<usize>,
    /// Its valid period, groups and memory (the period is the optimum when `status` is
    /// `Optimal`).
    pub valid: ValidPeriod,
    /// `Optimal`, or `Feasible` when the time limit stopped the bisection.
    pub status: Status,
    /// Every contiguous partition has a valid period of at least this (ms).
    pub bound: f64,
    /// Oracle calls (each a DP over suffixes at one threshold).
    pub oracle_calls: u64,
}

impl ContiguousOptimum {
    /// The plan (stage s on GPU s, 1F1B* at the valid period) and what it claims of it.
    pub fn plan_and_claims(&self, inst: &Instance) -> (Plan, Claimed) {
        let t = self.valid.period;
        let plan = Plan::contiguous(&self.ends, async_schedule(Some(t)));
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::AsyncPeriod, t)),
            period_ms: Some(t),
            throughput: Some(inst.micro_batch() as f64 / t * 1e3),
            max_memory: Some(self.valid.max_memory()),
            peak_memory: Some(self.valid.peak_memory.clone()),
            fits: Some(true),
            ..Claimed::default()
        };
        (plan, claimed)
    }
}

/// One 1F1B* group state of a suffix: group index and load in the open group.
#[derive(Debug, Clone, Copy, PartialEq)]
struct State {
    g: u32,
    sum: f64,
}

impl State {
    /// Prepends a resource of load `x` as 1F1B* does with the exact threshold `t`.
    fn push(self, x: f64, t: f64) -> State {
        if self.sum + x > t {
            State {
                g: self.g + 1,
                sum: x,
            }
        } else {
            State {
                g: self.g,
                sum: self.sum + x,
            }
        }
    }

    fn better_than(&self, o: &State) -> bool {
        self.g < o.g || (self.g == o.g && self.sum < o.sum)
    }
}

/// The chain in the evaluator's terms for one-GPU stages.
struct Model {
    chain: Chain,
    copies: f64,
    limit: f64,
    /// Bandwidth of the link between GPU s and s + 1.
    link_bw: Vec<f64>,
    homogeneous: bool,
    /// Least `k` with `link_bw[i] == link_bw[i + k]` for every i (1 when homogeneous).
    link_period: usize,
}

impl Model {
    fn new(inst: &Instance, pmax: usize) -> Model {
        let link_bw: Vec<f64> = (0..pmax.saturating_sub(1) as u32)
            .map(|s| inst.link_bandwidth(s, s + 1))
            .collect();
        let homogeneous = link_bw.windows(2).all(|w| w[0] == w[1]);
        let link_period = (1..=link_bw.len().max(1))
            .find(|&k| (k..link_bw.len()).all(|i| link_bw[i] == link_bw[i - k]))
            .unwrap_or(1);
        Model {
            chain: inst.chain(),
            // Same expression as the evaluator's `stage_cost`.
            copies: state_copies(inst, ScheduleKind::Async),
            limit: inst.usable_memory() * (1.0 + MEM_TOL),
            link_bw,
            homogeneous,
            link_period,
        }
    }

    fn n(&self) -> usize {
        self.chain.len()
    }

    /// Load of the link carrying the cut after layer `e`, between GPU s and s + 1
    /// (`cut_costs`: bytes / lanes / bandwidth x 1e3, once forward and once backward).
    fn link_load(&self, e: usize, s: usize) -> f64 {
        let t = self.chain.cut[e] / 1.0 / self.link_bw[s] * 1e3;
        t + t
    }

    /// The state of a suffix `next` after prepending the stage that ends at layer `e`: the link
    /// into the following stage first (on GPU `gpu`'s outgoing link, when there is one), then the
    /// stage's `load`; `None` when the link alone exceeds `t` or the stage's memory (`act` per
    /// 1F1B* group in flight, plus `fixed_mem`) exceeds the limit. Both DPs extend suffixes so.
    #[allow(clippy::too_many_arguments)]
    fn prepend(
        &self,
        next: State,
        e: usize,
        gpu: Option<usize>,
        load: f64,
        act: f64,
        fixed_mem: f64,
        t: f64,
    ) -> Option<State> {
        let mut st = next;
        if let Some(gpu) = gpu {
            let link = self.link_load(e, gpu);
            if link > t {
                return None;
            }
            st = st.push(link, t);
        }
        st = st.push(load, t);
        if st.g as f64 * act + fixed_mem > self.limit {
            return None;
        }
        Some(st)
    }

    /// Calls `visit(e, load, act, fixed)` for every stage `l..=e`, in increasing `e`, while its
    /// load is at most `t` and its model states fit. The sums run in the evaluator's order
    /// (`stage_cost`), so the figures are bitwise the evaluator's.
    fn stages_from(&self, l: usize, t: f64, mut visit: impl FnMut(usize, f64, f64, f64)) {
        let c = &self.chain;
        let n = self.n();
        let (mut fwd, mut bwd, mut w, mut stored) = (0.0, 0.0, 0.0, 0.0);
        for e in l..n {
            fwd += c.forward[e];
            bwd += c.backward[e];
            w += c.weights[e];
            stored += c.saved[e];
            let load = fwd / 1.0 + bwd / 1.0;
            if load > t {
                break;
            }
            let states = w * self.copies / 1.0;
            if states > self.limit {
                break;
            }
            let mut buffers = 0.0;
            if l > 0 {
                buffers += 2.0 * c.cut[l - 1];
            }
            if e + 1 < n {
                buffers += 2.0 * c.cut[e];
            }
            visit(e, load, stored / 1.0, states + buffers / 1.0);
        }
    }

    /// A feasible partition at threshold `t` with stage count in `qmin..=qmax`, if any: the one
    /// with the fewest stages when `fewest`, otherwise the first one found.
    fn oracle(&self, t: f64, qmin: usize, qmax: usize, fewest: bool) -> Option<Vec<usize>> {
        if qmin > 1 {
            // A fixed least stage count: fewer stages do not dominate, one state per count.
            return if self.homogeneous {
                self.dp(t, None, qmin, qmax)
            } else {
                (qmin..=qmax).find_map(|p| self.dp(t, Some(p), p, p))
            };
        }
        // "At most qmax stages": one front DP per residue class of the stage count modulo the
        // links' period (every class shares its link pattern).
        let mut found: Option<Vec<usize>> = None;
        for r in 0..self.link_period {
            if let Some(ends) = self.front_dp(t, r, qmin, qmax) {
                if !fewest {
                    return Some(ends);
                }
                if found.as_ref().is_none_or(|f| ends.len() < f.len()) {
                    found = Some(ends);
                }
            }
        }
        found
    }

    /// The suffix DP for "at most `qmax` stages" over the stage counts `p ≡ r (mod k)`, `k` the
    /// links' period: the stage that a q-stage suffix opens is on GPU `p - q`, whose link to the
    /// next GPU is `link_bw[(r - q) mod k]` for every such p. A suffix state is `(q, g, sum)`;
    /// among suffixes with the same `q mod k` (hence the same links ahead), one with fewer stages
    /// and a smaller-or-equal `(g, sum)` dominates (it leaves more GPUs to the prefix and every
    /// prefix stage at most as much memory), so each `(l, q mod k)` keeps a Pareto front, usually
    /// of one or two states, instead of one state per q.
    fn front_dp(&self, t: f64, r: usize, qmin: usize, qmax: usize) -> Option<Vec<usize>> {
        #[derive(Clone, Copy)]
        struct Entry {
            q: usize,
            st: State,
            /// Last layer of the stage this entry opened, and its parent in `fronts[e + 1]`.
            e: usize,
            parent: usize,
        }
        let n = self.n();
        let k = self.link_period;
        let mut fronts: Vec<Vec<Entry>> = vec![Vec::new(); (n + 1) * k];
        fronts[n * k] = vec![Entry {
            q: 0,
            st: State { g: 1, sum: 0.0 },
            e: n,
            parent: 0,
        }];
        for l in (0..n).rev() {
            let mut mine: Vec<Vec<Entry>> = vec![Vec::new(); k];
            self.stages_from(l, t, |e, load, act, fixed_mem| {
                for res in 0..k {
                    for (parent, from) in fronts[(e + 1) * k + res].iter().enumerate() {
                        let q = from.q + 1;
                        if q > qmax {
                            continue;
                        }
                        let gpu = (q >= 2).then(|| (r + k * q - q) % k);
                        let Some(st) = self.prepend(from.st, e, gpu, load, act, fixed_mem, t)
                        else {
                            continue;
                        };
                        insert_pareto(&mut mine[q % k], Entry { q, st, e, parent }, |a| {
                            (a.q, a.st)
                        });
                    }
                }
            });
            for (res, front) in mine.into_iter().enumerate() {
                fronts[l * k + res] = front;
            }
        }
        let (mut at, _) = fronts[r % k]
            .iter()
            .enumerate()
            .filter(|(_, x)| x.q >= qmin && x.q <= qmax)
            .min_by_key(|(_, x)| x.q)?;
        let mut ends = Vec::new();
        let (mut l, mut res) = (0, r % k);
        loop {
            let x = fronts[l * k + res][at];
            ends.push(x.e);
            if x.q == 1 {
                break;
            }
            (l, res, at) = (x.e + 1, (res + k - 1) % k, x.parent);
        }
        Some(ends)
    }

    /// The suffix DP. With `fixed = Some(p)` the partition has exactly p stages and the stage of
    /// a q-stage suffix is on GPU p - q (which decides its link's bandwidth); with `None` every
    /// link has the same bandwidth and any stage count in `qmin..=qmax` is accepted.
    fn dp(&self, t: f64, fixed: Option<usize>, qmin: usize, qmax: usize) -> Option<Vec<usize>> {
        let n = self.n();
        let w = qmax + 1;
        let mut best: Vec<Option<State>> = vec![None; (n + 1) * w];
        let mut arg = vec![0usize; (n + 1) * w];
        best[n * w] = Some(State { g: 1, sum: 0.0 });
        for l in (0..n).rev() {
            // At most one stage per layer, and the suffix after a stage needs q - 1 layers.
            let qtop = qmax.min(n - l);
            self.stages_from(l, t, |e, load, act, fixed_mem| {
                for q in 1..=qtop {
                    let Some(next) = best[(e + 1) * w + q - 1] else {
                        continue;
                    };
                    let gpu = (q >= 2).then(|| fixed.map_or(0, |p| p - q));
                    let Some(st) = self.prepend(next, e, gpu, load, act, fixed_mem, t) else {
                        continue;
                    };
                    let cell = &mut best[l * w + q];
                    if cell.is_none_or(|c| st.better_than(&c)) {
                        *cell = Some(st);
                        arg[l * w + q] = e;
                    }
                }
            });
        }
        let q0 = (qmin..=qmax).find(|&q| best[q].is_some())?;
        let mut ends = Vec::with_capacity(q0);
        let (mut l, mut q) = (0, q0);
        while q > 0 {
            let e = arg[l * w + q];
            ends.push(e);
            l = e + 1;
            q -= 1;
        }
        Some(ends)
    }

    /// Why no partition fits even with one micro-batch in flight per stage.
    fn diagnose(&self, inst: &Instance, pmax: usize, exact: bool) -> String {
        let n = self.n();
        let limit = inst.usable_memory();
        // Least memory of any stage holding each layer, and the stage.
        let mut least = vec![(f64::INFINITY, 0usize, 0usize); n];
        let mut fits_from: Vec<Vec<usize>> = vec![Vec::new(); n];
        for l in 0..n {
            let (mut w, mut stored) = (0.0, 0.0);
            for e in l..n {
                let c = &self.chain;
                w += c.weights[e];
                stored += c.saved[e];
                let mut buffers = 0.0;
                if l > 0 {
                    buffers += 2.0 * c.cut[l - 1];
                }
                if e + 1 < n {
                    buffers += 2.0 * c.cut[e];
                }
                let mem = stored + (w * self.copies + buffers);
                if mem <= self.limit {
                    fits_from[l].push(e);
                }
                for x in &mut least[l..=e] {
                    if mem < x.0 {
                        *x = (mem, l, e);
                    }
                }
            }
        }
        let layers = |a: usize, b: usize| {
            if a == b {
                format!("layer {a}")
            } else {
                format!("layers {a}-{b}")
            }
        };
        if let Some(i) = (0..n)
            .filter(|&i| least[i].0 > self.limit)
            .max_by(|&a, &b| least[a].0.total_cmp(&least[b].0))
        {
            let (mem, a, b) = least[i];
            return format!(
                "layer {i} ({}) fits on no GPU: every stage holding it needs at least {} with 1 \
                 micro-batch in flight (the least: {}); GPUs have {}",
                inst.model.layers[i].name,
                fmt_bytes(mem),
                layers(a, b),
                fmt_bytes(limit)
            );
        }
        // Fewest stages that each fit with one micro-batch in flight.
        let mut need = vec![usize::MAX; n + 1];
        need[0] = 0;
        for l in 0..n {
            if need[l] == usize::MAX {
                continue;
            }
            for &e in &fits_from[l] {
                need[e + 1] = need[e + 1].min(need[l] + 1);
            }
        }
        if need[n] != usize::MAX {
            let how = if exact && need[n] < pmax {
                format!("exactly {pmax} stages were required (fewer=false)")
            } else {
                format!("at most {pmax} stages (GPUs) are available")
            };
            return format!(
                "the chain needs at least {} stages that each fit {} with 1 micro-batch in \
                 flight, but {how}",
                need[n],
                fmt_bytes(limit)
            );
        }
        let x = (0..=n).rev().find(|&x| need[x] != usize::MAX).unwrap_or(0);
        format!(
            "no split into stages that each fit {} with 1 micro-batch in flight exists: layers \
             0-{} can be split so, but no fitting stage continues from any such split through \
             layer {x} (communication buffers at the cuts add up)",
            fmt_bytes(limit),
            x.saturating_sub(1)
        )
    }
}

/// Inserts `x` into a Pareto front of `(q, state)` pairs (fewer stages and a lexicographically
/// smaller state are better) unless an entry there is at least as good; drops the entries `x`
/// beats. Ties keep the entry already there (the stage found first: the shortest).
fn insert_pareto<E: Copy>(front: &mut Vec<E>, x: E, key: impl Fn(&E) -> (usize, State)) {
    let (q, st) = key(&x);
    let no_worse = |a: &State, b: &State| !b.better_than(a);
    if front.iter().any(|y| {
        let (yq, ys) = key(y);
        yq <= q && no_worse(&ys, &st)
    }) {
        return;
    }
    front.retain(|y| {
        let (yq, ys) = key(y);
        !(q <= yq && no_worse(&st, &ys))
    });
    front.push(x);
}

/// Finds the least valid period over contiguous partitions into `qmin..=qmax` stages (stage s
/// on GPU s). Stops at `deadline` with the best partition so far (`Status::Feasible`).
pub fn contiguous_optimum(
    inst: &Instance,
    qmin: usize,
    qmax: usize,
    deadline: &Deadline,
) -> Result<ContiguousOptimum, SolveError> {
    inst.validate()?;
    let n = inst.num_layers();
    if qmin == 0 || qmin > qmax || qmax > n || qmax > inst.cluster.gpus as usize {
        return Err(SolveError::Input(InputError::field(
            "--stages",
            format!(
                "stage counts {qmin}..={qmax} are not possible with {n} layers and {} GPUs",
                inst.cluster.gpus
            ),
        )));
    }
    let model = Model::new(inst, qmax);
    let mut calls = 1;
    let Some(first) = model.oracle(f64::INFINITY, qmin, qmax, false) else {
        return Err(SolveError::Infeasible(model.diagnose(
            inst,
            qmax,
            qmin == qmax,
        )));
    };
    let vp = |ends: &[usize]| -> Result<ValidPeriod, SolveError> {
        valid_period(inst, ends).map_err(|e| match e {
            super::valid_period::ValidPeriodError::Input(i) => SolveError::Input(i),
            super::valid_period::ValidPeriodError::Memory(m) => SolveError::Solver(format!(
                "exact-contiguous: the DP found partition {ends:?} feasible but its valid \
                 period says {m}"
            )),
        })
    };
    let mut best_ends = first;
    let mut best = vp(&best_ends)?;
    // Bisection over the bit patterns of non-negative floats (monotone in the value): `lo` is
    // infeasible (every valid period exceeds it), `hi` is a valid period.
    let mut lo: u64 = 0;
    let mut hi: u64 = best.period.to_bits();
    let mut stopped = false;
    while hi - lo > 1 {
        if deadline.passed() {
            stopped = true;
            break;
        }
        let mid = lo + (hi - lo) / 2;
        calls += 1;
        match model.oracle(f64::from_bits(mid), qmin, qmax, false) {
            Some(ends) => {
                let v = vp(&ends)?;
                if v.period.to_bits() > mid {
                    return Err(SolveError::Solver(format!(
                        "exact-contiguous: partition {ends:?} is feasible at {} ms but its valid \
                         period is {} ms",
                        f64::from_bits(mid),
                        v.period
                    )));
                }
                hi = v.period.to_bits();
                best = v;
                best_ends = ends;
            }
            None => lo = mid,
        }
    }
    if !stopped {
        // Among the optimal partitions, the one with the fewest stages.
        calls += 1;
        if let Some(ends) = model.oracle(f64::from_bits(hi), qmin, qmax, true) {
            let v = vp(&ends)?;
            if v.period == best.period {
                best = v;
                best_ends = ends;
            }
        }
    }
    Ok(ContiguousOptimum {
        ends: best_ends,
        status: if stopped {
            Status::Feasible
        } else {
            Status::Optimal
        },
        bound: if stopped {
            f64::from_bits(lo + 1)
        } else {
            best.period
        },
        valid: best,
        oracle_calls: calls,
    })
}

impl Algorithm for ExactContiguous {
    fn name(&self) -> &'static str {
        "exact-contiguous"
    }
    fn family(&self) -> Family {
        Family::Madpipe
    }
    fn description(&self) -> &'static str {
        "least valid 1F1B* period over every contiguous partition into at most P stages \
         (suffix DP + float bisection, exact)"
    }
    fn exact(&self) -> bool {
        true
    }
    fn params(&self) -> Vec<Param> {
        vec![Param::new(
            "fewer",
            Kind::Flag,
            "true",
            "also consider partitions into fewer stages than GPUs",
        )]
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let fewer = ctx.settings.flag("fewer");
        let p = ctx.stage_count(inst)?;
        let opt = contiguous_optimum(inst, if fewer { 1 } else { p }, p, &ctx.deadline)?;
        let t = opt.valid.period;
        let (plan, claimed) = opt.plan_and_claims(inst);
        let mut stats = Stats::stopped(
            opt.status,
            (opt.status == Status::Feasible).then(|| ctx.deadline.stop()),
        );
        stats.bound = Some(opt.bound);
        stats.gap = Some(if t > 0.0 { (t - opt.bound) / t } else { 0.0 });
        stats
            .counters
            .insert("oracle calls".into(), opt.oracle_calls as f64);
        stats
            .counters
            .insert("breakpoints".into(), opt.valid.breakpoints as f64);
        let mut sol = solution(self, inst, plan, claimed, stats);
        sol.notes.push(format!(
            "contiguous partition into {} of at most {p} stages (GPU s for stage s), 1F1B* \
             groups {:?}; the loads alone allow {:.6} ms",
            opt.ends.len(),
            opt.valid.groups,
            opt.valid.max_load
        ));
        if opt.status == Status::Feasible {
            sol.notes.push(format!(
                "time limit reached: the optimum lies in [{:.9}, {t:.9}] ms",
                opt.bound
            ));
        }
        if inst.training.schedule != ScheduleKind::Async {
            sol.notes.push(format!(
                "asynchronous 1F1B* schedule (the MadPipe family's); the instance's default \
                 schedule {} is not used",
                inst.training.schedule
            ));
        }
        Ok(sol)
    }
}
