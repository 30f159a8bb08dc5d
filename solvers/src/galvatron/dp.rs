//! The memory-budget DP kernel (Galvatron Eq. 4 / the engine's `DPAlg`): per layer a strategy,
//! minimizing the sum of layer costs plus transition costs under a total memory budget in integer
//! memory units.
//!
//! `f[v][s]` = least cost of the layers so far with total memory at most `v`, the last layer
//! using strategy `s`: for each `s` a non-increasing step function of `v`. The engine fills it
//! densely, one entry per memory unit (`dense`); [`StageDp::solve`] keeps only its steps, the
//! Pareto frontier of (memory, cost) with the engine's first-index tie-breaks, and computes each
//! step's value with the same additions in the same order, so values, back-pointers and answers
//! are identical (property-tested against the dense table), with work proportional to the
//! number of steps instead of the budget. One table serves every budget up to its size, so a
//! sweep over budgets (the vocabulary-tp variants, the forward-budget sweep) reads one table.

/// The DP's input for one pipeline stage.
#[derive(Debug, Clone)]
pub struct StageDp {
    /// Memory units of each layer under each strategy (`mem[l][s]`).
    pub mem: Vec<Vec<usize>>,
    /// Cost of each layer under each strategy (`intra[l][s]`).
    pub intra: Vec<Vec<f64>>,
    /// Transition cost `inter[l][a][b]` from strategy `a` (layer l-1) to `b` (layer l).
    pub inter: Vec<Vec<Vec<f64>>>,
}

/// A filled dense DP table (the engine's layout).
#[derive(Debug, Clone)]
pub struct DenseTable {
    strategies: usize,
    budget: usize,
    /// `f[v * S + s]` after the last layer.
    f: Vec<f64>,
    /// Back-pointers `mark[(l * (B + 1) + v) * S + s]`.
    mark: Vec<u16>,
    mem: Vec<Vec<usize>>,
}

/// One optimal assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// Total cost.
    pub cost: f64,
    /// Strategy index per layer.
    pub strategies: Vec<usize>,
    /// Budget units left unused.
    pub remaining: usize,
}

const NONE: u16 = u16::MAX;

impl StageDp {
    /// Budgets above the sum of the layers' largest footprints behave like that sum (no
    /// constraint binds), so tables stop there and reads clamp their budget to it.
    fn cap(&self) -> usize {
        self.mem
            .iter()
            .map(|r| r.iter().copied().max().unwrap_or(0))
            .sum()
    }

    /// Fills the dense table for budgets `0..=budget`; any larger budget may be queried too.
    /// Ties keep the first strategy (the engine's `argmin`). The reference for [`StageDp::solve`].
    pub fn solve_dense(&self, budget: usize) -> DenseTable {
        let layers = self.mem.len();
        let ns = self.mem.first().map_or(0, Vec::len);
        assert!(ns < NONE as usize, "too many strategies");
        let budget = budget.min(self.cap());
        let width = budget + 1;
        let mut f = vec![0.0f64; width * ns];
        let mut mark = vec![NONE; layers * width * ns];
        let mut prev = f.clone();
        for l in 0..layers {
            // Read the previous layer's table (the engine's Python fallback updates in place,
            // which differs only for zero-memory layers, where it would mix two layers).
            prev.copy_from_slice(&f);
            let f_prev = &prev;
            let (mem, intra, inter) = (&self.mem[l], &self.intra[l], &self.inter[l]);
            for v in (0..width).rev() {
                for s in 0..ns {
                    let m = &mut mark[(l * width + v) * ns + s];
                    if v < mem[s] {
                        *m = NONE;
                        f[v * ns + s] = f64::INFINITY;
                        continue;
                    }
                    let base = (v - mem[s]) * ns;
                    let mut best = f64::INFINITY;
                    let mut arg = 0usize;
                    for (si, row) in inter.iter().enumerate() {
                        let c = (f_prev[base + si] + row[s]) + intra[s];
                        if c < best {
                            best = c;
                            arg = si;
                        }
                    }
                    *m = arg as u16;
                    f[v * ns + s] = best;
                }
            }
        }
        DenseTable {
            strategies: ns,
            budget,
            f,
            mark,
            mem: self.mem.clone(),
        }
    }
}

impl DenseTable {
    /// The best assignment within `budget` units (`None` when nothing fits).
    pub fn best(&self, budget: usize) -> Option<Assignment> {
        let (ns, width) = (self.strategies, self.budget + 1);
        read(
            &self.mem,
            ns,
            self.budget,
            budget,
            |s, v| self.f[v * ns + s],
            |l, s, v| self.mark[(l * width + v) * ns + s] as usize,
        )
    }
}

/// The engine's reading of a filled table at `budget` (clamped to the table's `table_budget`,
/// the rest counted as unused): the first strategy of least cost after the last layer, then the
/// back-pointers `prev_at(layer, strategy, budget)` down to the first layer.
fn read(
    mem: &[Vec<usize>],
    ns: usize,
    table_budget: usize,
    budget: usize,
    cost_at: impl Fn(usize, usize) -> f64,
    prev_at: impl Fn(usize, usize, usize) -> usize,
) -> Option<Assignment> {
    let layers = mem.len();
    if ns == 0 || layers == 0 {
        return None;
    }
    let slack = budget.saturating_sub(table_budget);
    let budget = budget - slack;
    let mut s = 0;
    let mut cost = f64::INFINITY;
    for i in 0..ns {
        let c = cost_at(i, budget);
        if c < cost {
            cost = c;
            s = i;
        }
    }
    if cost.is_infinite() || cost.is_nan() {
        return None;
    }
    let mut out = vec![0; layers];
    out[layers - 1] = s;
    let mut v = budget;
    for l in (1..layers).rev() {
        let prev = prev_at(l, s, v);
        v -= mem[l][s];
        s = prev;
        out[l - 1] = s;
    }
    Some(Assignment {
        cost,
        strategies: out,
        remaining: v - mem[0][s] + slack,
    })
}

/// One step of `f[.][s]` of a layer: from memory `start` on (until the next step), the cost
/// `value`, reached from the previous layer's strategy `arg`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Step {
    start: usize,
    value: f64,
    arg: u16,
}

/// A filled DP table: per layer and strategy the steps of `f[.][s]`, by increasing start.
#[derive(Debug, Clone)]
pub struct Table {
    strategies: usize,
    budget: usize,
    steps: Vec<Vec<Vec<Step>>>,
    mem: Vec<Vec<usize>>,
}

/// The step of `steps` in force at `v` (`None` below the first).
fn at(steps: &[Step], v: usize) -> Option<&Step> {
    match steps.partition_point(|st| st.start <= v) {
        0 => None,
        i => Some(&steps[i - 1]),
    }
}

impl StageDp {
    /// Fills the table for budgets `0..=budget` (steps beyond it are dropped; a larger budget
    /// reads as `budget`). Ties keep the first strategy (the engine's `argmin`).
    pub fn solve(&self, budget: usize) -> Table {
        let layers = self.mem.len();
        let ns = self.mem.first().map_or(0, Vec::len);
        assert!(ns < NONE as usize, "too many strategies");
        let budget = budget.min(self.cap());
        let mut steps: Vec<Vec<Vec<Step>>> = Vec::with_capacity(layers);
        // Before the first layer every strategy costs 0 at every budget.
        let mut prev: Vec<Vec<Step>> = vec![
            vec![Step {
                start: 0,
                value: 0.0,
                arg: 0,
            }];
            ns
        ];
        let mut events: Vec<(usize, usize, f64)> = Vec::new();
        for l in 0..layers {
            let (mem, intra, inter) = (&self.mem[l], &self.intra[l], &self.inter[l]);
            // Where each f[.][s'] of the previous layer steps down: (budget, s', new value), by
            // budget then s'.
            events.clear();
            for (sp, row) in prev.iter().enumerate() {
                events.extend(row.iter().map(|st| (st.start, sp, st.value)));
            }
            events.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut layer_steps = Vec::with_capacity(ns);
            for s in 0..ns {
                // The engine's candidates (f + inter) + intra and their first minimum, updated
                // only where a candidate changes: the f's never increase with the budget (nor,
                // rounding being monotone, do the candidates), so the minimum at a budget is the
                // old one or a changed candidate's, and on a tie the lower index wins.
                let mut out: Vec<Step> = Vec::new();
                let (mut best, mut arg) = (f64::INFINITY, 0usize);
                let mut i = 0;
                while i < events.len() {
                    let u = events[i].0;
                    let v = u + mem[s];
                    if v > budget {
                        break;
                    }
                    let (mut low, mut low_arg) = (f64::INFINITY, usize::MAX);
                    while i < events.len() && events[i].0 == u {
                        let (_, si, f) = events[i];
                        let c = (f + inter[si][s]) + intra[s];
                        if c < low {
                            low = c;
                            low_arg = si;
                        }
                        i += 1;
                    }
                    if low < best || (low == best && low_arg < arg) {
                        best = low;
                        arg = low_arg;
                    }
                    if best.is_infinite() {
                        continue;
                    }
                    match out.last() {
                        Some(last) if last.value == best && last.arg as usize == arg => {}
                        _ => out.push(Step {
                            start: v,
                            value: best,
                            arg: arg as u16,
                        }),
                    }
                }
                layer_steps.push(out);
            }
            prev = layer_steps.clone();
            steps.push(layer_steps);
        }
        Table {
            strategies: ns,
            budget,
            steps,
            mem: self.mem.clone(),
        }
    }
}

impl Table {
    /// The best assignment within `budget` units (`None` when nothing fits).
    pub fn best(&self, budget: usize) -> Option<Assignment> {
        let last = self.steps.len().checked_sub(1)?;
        read(
            &self.mem,
            self.strategies,
            self.budget,
            budget,
            |s, v| at(&self.steps[last][s], v).map_or(f64::INFINITY, |st| st.value),
            |l, s, v| {
                at(&self.steps[l][s], v)
                    .expect("a finite state has a step")
                    .arg as usize
            },
        )
    }

    /// Steps kept over all layers and strategies (the dense table holds one entry per memory
    /// unit instead).
    pub fn steps(&self) -> usize {
        self.steps.iter().flatten().map(Vec::len).sum()
    }
}

/// Exhaustive reference: every assignment, for tests (`S^L` of them).
pub fn brute_force(dp: &StageDp, budget: usize) -> Option<(f64, usize)> {
    let layers = dp.mem.len();
    let ns = dp.mem[0].len();
    let mut best: Option<(f64, usize)> = None;
    let mut idx = vec![0usize; layers];
    loop {
        let mem: usize = (0..layers).map(|l| dp.mem[l][idx[l]]).sum();
        if mem <= budget {
            let mut cost = 0.0;
            for l in 0..layers {
                // The first layer's transition comes from the best predecessor, as in the DP.
                let inter = if l == 0 {
                    (0..ns)
                        .map(|a| dp.inter[0][a][idx[0]])
                        .fold(f64::INFINITY, f64::min)
                } else {
                    dp.inter[l][idx[l - 1]][idx[l]]
                };
                cost += inter + dp.intra[l][idx[l]];
            }
            if best.is_none_or(|(c, _)| cost < c) {
                best = Some((cost, mem));
            }
        }
        let mut l = 0;
        loop {
            if l == layers {
                return best;
            }
            idx[l] += 1;
            if idx[l] < ns {
                break;
            }
            idx[l] = 0;
            l += 1;
        }
    }
}
