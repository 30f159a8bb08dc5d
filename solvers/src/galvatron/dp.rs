//! The memory-budget DP kernel (Galvatron Eq. 4 / the engine's `DPAlg`): per layer a strategy,
//! minimizing the sum of layer costs plus transition costs under a total memory budget in integer
//! memory units.
//!
//! `f[v][s]` = least cost of the layers so far with total memory at most `v`, the last layer
//! using strategy `s`. One table serves every budget up to its size, so a sweep over budgets (the
//! vocabulary-tp variants, the forward-budget sweep) reads rows of one table.

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

/// A filled DP table.
#[derive(Debug, Clone)]
pub struct Table {
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
    /// Fills the table for budgets `0..=budget`; any larger budget may be queried too. Ties keep
    /// the first strategy (the engine's `argmin`).
    pub fn solve(&self, budget: usize) -> Table {
        let layers = self.mem.len();
        let ns = self.mem.first().map_or(0, Vec::len);
        assert!(ns < NONE as usize, "too many strategies");
        // Budgets above the sum of the layers' largest footprints behave like that sum (no
        // constraint binds), so the table stops there; `best` clamps its budget to it.
        let cap: usize = self
            .mem
            .iter()
            .map(|r| r.iter().copied().max().unwrap_or(0))
            .sum();
        let budget = budget.min(cap);
        let width = budget + 1;
        let mut f = vec![0.0f64; width * ns];
        let mut mark = vec![NONE; layers * width * ns];
        // Row minima of the previous layer's table: with non-negative transition costs, when
        // the first minimizing predecessor has a zero transition into `s`, it is the answer
        // (the full scan would return the same value and index).
        let mut row_min = vec![(0.0f64, 0usize); width];
        let mut prev = f.clone();
        for l in 0..layers {
            // Read the previous layer's table (the engine's Python fallback updates in place,
            // which differs only for zero-memory layers, where it would mix two layers).
            prev.copy_from_slice(&f);
            let f_prev = &prev;
            let (mem, intra, inter) = (&self.mem[l], &self.intra[l], &self.inter[l]);
            let nonneg = inter.iter().all(|r| r.iter().all(|&c| c >= 0.0));
            for (v, rm) in row_min.iter_mut().enumerate() {
                let row = &f_prev[v * ns..(v + 1) * ns];
                let mut a = 0;
                for (i, &x) in row.iter().enumerate() {
                    if x < row[a] {
                        a = i;
                    }
                }
                *rm = (row[a], a);
            }
            for v in (0..width).rev() {
                for s in 0..ns {
                    let m = &mut mark[(l * width + v) * ns + s];
                    if v < mem[s] {
                        *m = NONE;
                        f[v * ns + s] = f64::INFINITY;
                        continue;
                    }
                    let base = (v - mem[s]) * ns;
                    if nonneg {
                        let (val, a) = row_min[v - mem[s]];
                        if inter[a][s] == 0.0 {
                            *m = a as u16;
                            f[v * ns + s] = (val + 0.0) + intra[s];
                            continue;
                        }
                    }
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
        Table {
            strategies: ns,
            budget,
            f,
            mark,
            mem: self.mem.clone(),
        }
    }
}

impl Table {
    /// The best assignment within `budget` units (`None` when nothing fits).
    pub fn best(&self, budget: usize) -> Option<Assignment> {
        let ns = self.strategies;
        let layers = self.mem.len();
        if ns == 0 || layers == 0 {
            return None;
        }
        let slack = budget.saturating_sub(self.budget);
        let budget = budget - slack;
        let row = &self.f[budget * ns..(budget + 1) * ns];
        let mut s = 0;
        for (i, &c) in row.iter().enumerate() {
            if c < row[s] {
                s = i;
            }
        }
        let cost = row[s];
        if cost.is_infinite() || cost.is_nan() {
            return None;
        }
        let width = self.budget + 1;
        let mut out = vec![0; layers];
        out[layers - 1] = s;
        let mut v = budget;
        for l in (1..layers).rev() {
            let prev = self.mark[(l * width + v) * ns + s] as usize;
            v -= self.mem[l][s];
            s = prev;
            out[l - 1] = s;
        }
        Some(Assignment {
            cost,
            strategies: out,
            remaining: v - self.mem[0][s] + slack,
        })
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
