//! The oracle: for a threshold `T`, a feasible contiguous partition if one exists (the dynamic
//! program over suffixes of the module docs).

use pipeplan_formulations::cost::state_copies;
use pipeplan_formulations::instance::{Chain, ScheduleKind};
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::Instance;

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
pub(super) struct Model {
    pub(super) chain: Chain,
    pub(super) copies: f64,
    pub(super) limit: f64,
    /// Bandwidth of the link between GPU s and s + 1.
    link_bw: Vec<f64>,
    homogeneous: bool,
    /// Least `k` with `link_bw[i] == link_bw[i + k]` for every i (1 when homogeneous).
    link_period: usize,
}

impl Model {
    pub(super) fn new(inst: &Instance, pmax: usize) -> Model {
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
            limit: memory_limit::cap(inst.usable_memory()),
            link_bw,
            homogeneous,
            link_period,
        }
    }

    pub(super) fn n(&self) -> usize {
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
    pub(super) fn oracle(
        &self,
        t: f64,
        qmin: usize,
        qmax: usize,
        fewest: bool,
    ) -> Option<Vec<usize>> {
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
