//! Exact min-max partitioning of a chain into P contiguous non-empty stages:
//! minimize max_s cost(s, k, l) where stage s holds layers `k..l` (half-open).
//!
//! Dynamic program `best[s][l]` = least max cost of the first `l` layers in `s + 1` stages,
//! O(P L^2) cost evaluations. Each row depends only on the previous one, so its cells are computed
//! in parallel with rayon; ties go to the smallest cut, so the result does not depend on threads.

use rayon::prelude::*;

/// Result of a min-max partition.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// The optimal max cost.
    pub value: f64,
    /// Last layer (inclusive) of every stage.
    pub ends: Vec<usize>,
    /// Cost evaluations performed.
    pub evaluations: u64,
}

/// Solves the min-max partition of `layers` layers into `stages` stages.
/// `cost(s, k, l)` is the cost of stage s holding layers `k..l`; it must be cheap (prefix sums).
///
/// Panics if `stages` is 0 or exceeds `layers` (callers check this with a clear message).
pub fn min_max_partition<F>(layers: usize, stages: usize, cost: F) -> Partition
where
    F: Fn(usize, usize, usize) -> f64 + Sync,
{
    assert!(stages >= 1 && stages <= layers, "1 <= stages <= layers");
    let inf = f64::INFINITY;
    // best[s][l], arg[s][l]: first layer of stage s in an optimal split of the first l layers.
    let mut best = vec![vec![inf; layers + 1]; stages];
    let mut arg = vec![vec![0usize; layers + 1]; stages];
    for (l, b) in best[0].iter_mut().enumerate().skip(1) {
        *b = cost(0, 0, l);
    }
    for s in 1..stages {
        let prev = &best[s - 1];
        // Stage s needs at least one layer and leaves one for each earlier stage.
        let row: Vec<(f64, usize)> = (0..=layers)
            .into_par_iter()
            .map(|l| {
                if l < s + 1 {
                    return (inf, 0);
                }
                let mut b = inf;
                let mut a = s;
                for (k, p) in prev.iter().enumerate().take(l).skip(s) {
                    let v = p.max(cost(s, k, l));
                    if v < b {
                        b = v;
                        a = k;
                    }
                }
                (b, a)
            })
            .collect();
        for (l, (b, a)) in row.into_iter().enumerate() {
            best[s][l] = b;
            arg[s][l] = a;
        }
    }
    let mut ends = vec![0; stages];
    let mut l = layers;
    for s in (0..stages).rev() {
        ends[s] = l - 1;
        l = if s == 0 { 0 } else { arg[s][l] };
    }
    let evaluations = (layers as u64)
        + (1..stages as u64)
            .map(|s| {
                let n = layers as u64 - s;
                n * (n + 1) / 2
            })
            .sum::<u64>();
    Partition {
        value: best[stages - 1][layers],
        ends,
        evaluations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(w: &[f64], p: usize) -> f64 {
        // All ways to place p - 1 cuts among the L - 1 gaps.
        let l = w.len();
        let mut best = f64::INFINITY;
        let gaps = l - 1;
        for mask in 0u32..(1 << gaps) {
            if mask.count_ones() as usize != p - 1 {
                continue;
            }
            let mut worst: f64 = 0.0;
            let mut acc = 0.0;
            for (i, x) in w.iter().enumerate() {
                acc += x;
                if i == l - 1 || mask & (1 << i) != 0 {
                    worst = worst.max(acc);
                    acc = 0.0;
                }
            }
            best = best.min(worst);
        }
        best
    }

    proptest! {
        #[test]
        fn matches_brute_force(w in prop::collection::vec(0.0f64..10.0, 1..11), p in 1usize..6) {
            prop_assume!(p <= w.len());
            let mut prefix = vec![0.0; w.len() + 1];
            for i in 0..w.len() { prefix[i + 1] = prefix[i] + w[i]; }
            let part = min_max_partition(w.len(), p, |_, k, l| prefix[l] - prefix[k]);
            prop_assert!((part.value - brute(&w, p)).abs() < 1e-9);
            // The returned cuts achieve the value and make p non-empty stages.
            prop_assert_eq!(part.ends.len(), p);
            prop_assert_eq!(*part.ends.last().unwrap(), w.len() - 1);
            let mut first = 0;
            let mut worst: f64 = 0.0;
            for &e in &part.ends {
                prop_assert!(e >= first);
                worst = worst.max(prefix[e + 1] - prefix[first]);
                first = e + 1;
            }
            prop_assert!((worst - part.value).abs() < 1e-9);
        }
    }

    #[test]
    fn position_dependent_cost() {
        // Stage s pays (s + 1) x its load: the DP must push weight to early stages.
        let w = [1.0, 1.0, 1.0, 1.0];
        let part = min_max_partition(4, 2, |s, k, l| (s + 1) as f64 * (l - k) as f64 * w[0]);
        assert_eq!(part.ends, vec![2, 3]);
        assert_eq!(part.value, 3.0);
    }
}
