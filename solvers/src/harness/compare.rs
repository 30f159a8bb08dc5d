//! Many algorithms on many instances, side by side.

use super::gaps::fill_gaps;
use super::{run_interruptible, Interrupt};
use crate::algorithm::{Algorithm, Solution, SolveError, SolveOptions};
use pipeplan_formulations::Instance;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::Ordering;

/// Outcome of one (instance, algorithm) pair of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Instance name.
    pub instance: String,
    /// Algorithm name.
    pub algorithm: String,
    /// The solution, or why there is none.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Relative gap of the claimed objective over the best proven-optimal value of the same
    /// objective by an exact algorithm on this instance: (value - best) / best. `None` when no
    /// exact reference for that objective ran to optimality.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_vs_exact: Option<f64>,
    /// The exact algorithm the gap refers to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_reference: Option<String>,
    /// Relative gap of the **evaluated** period of an asynchronous plan that fits over the best
    /// proven-optimal claimed `async period` on this instance (`exact-contiguous`'s optimum):
    /// (evaluated - best) / best. It compares algorithms whose own objectives differ (e.g.
    /// PipeDream's max stage time) on the evaluator's figure; negative when a non-contiguous plan
    /// beats the contiguous optimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_gap_vs_exact: Option<f64>,
}

/// A solve's result within a comparison.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Outcome {
    /// A plan, claimed and evaluated.
    Solved {
        /// The solution (with `evaluated` filled).
        solution: Box<Solution>,
    },
    /// The algorithm does not handle the instance.
    Unsupported {
        /// Why.
        reason: String,
    },
    /// The solve failed (infeasible, time limit, solver error, bad options).
    Failed {
        /// Why.
        reason: String,
    },
}

impl Row {
    /// The solution, if the solve produced one.
    pub fn solution(&self) -> Option<&Solution> {
        match &self.outcome {
            Outcome::Solved { solution } => Some(solution),
            _ => None,
        }
    }
}

/// Runs every algorithm on every instance, in parallel across pairs (rayon), and fills the gap
/// of each claimed objective against the exact references. Rows come in instance-major order of
/// the inputs, whatever the thread count; unsupported pairs are kept as rows so the table says why.
pub fn compare(
    algos: &[Box<dyn Algorithm>],
    instances: &[Instance],
    opts: &SolveOptions,
) -> Vec<Row> {
    compare_interruptible(algos, instances, opts, None)
}

/// [`compare()`], stopping when `interrupt` is raised: running solves stop as at their deadline,
/// and the pairs not yet started are not solved (their rows fail with
/// [`SolveError::Interrupted`]'s message), so the call returns promptly with every row.
pub fn compare_interruptible(
    algos: &[Box<dyn Algorithm>],
    instances: &[Instance],
    opts: &SolveOptions,
    interrupt: Option<&Interrupt>,
) -> Vec<Row> {
    let pairs: Vec<(usize, usize)> = (0..instances.len())
        .flat_map(|i| (0..algos.len()).map(move |a| (i, a)))
        .collect();
    let mut rows: Vec<Row> = pairs
        .par_iter()
        .map(|&(i, a)| {
            let (inst, algo) = (&instances[i], algos[a].as_ref());
            let stopped = interrupt.is_some_and(|f| f.load(Ordering::Relaxed));
            let result = if stopped {
                Err(SolveError::Interrupted)
            } else {
                run_interruptible(algo, inst, opts, interrupt)
            };
            let outcome = match result {
                Ok(s) => Outcome::Solved {
                    solution: Box::new(s),
                },
                Err(SolveError::Unsupported(u)) => Outcome::Unsupported { reason: u.0 },
                Err(e) => Outcome::Failed {
                    reason: e.to_string(),
                },
            };
            Row {
                instance: inst.name.clone(),
                algorithm: algo.name().to_string(),
                outcome,
                gap_vs_exact: None,
                exact_reference: None,
                period_gap_vs_exact: None,
            }
        })
        .collect();
    for chunk in rows.chunks_mut(algos.len().max(1)) {
        fill_gaps(chunk, algos);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;
    use pipeplan_formulations::testing::chain;

    #[test]
    fn compare_is_ordered_and_gaps_are_against_exact() {
        let insts = vec![
            chain(&[5.0, 1.0, 1.0, 1.0, 1.0, 5.0], 3),
            chain(&[1.0; 4], 2),
        ];
        let algos = registry::all();
        let rows = compare(&algos, &insts, &SolveOptions::default());
        assert_eq!(rows.len(), insts.len() * algos.len());
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row.algorithm, algos[k % algos.len()].name());
            assert_eq!(row.instance, insts[k / algos.len()].name);
            // Families may decline an instance (e.g. Galvatron needs power-of-two GPU counts);
            // every algorithm that accepts it must solve it.
            if matches!(row.outcome, Outcome::Unsupported { .. }) {
                continue;
            }
            let sol = row.solution().unwrap_or_else(|| {
                panic!(
                    "{} does not solve {}: {:?}",
                    row.algorithm, row.instance, row.outcome
                )
            });
            assert!(sol.evaluated.is_some());
        }
        // uniform splits [5,1 | 1,1 | 1,5] = 18 ms max; balanced-time reaches 15 ms (5 | 1111 | 5)
        // => uniform's gap is 3/15 = 0.2; the exact algorithms have gap 0.
        let gap = |name: &str| {
            rows.iter()
                .find(|r| r.algorithm == name)
                .unwrap()
                .gap_vs_exact
        };
        assert!((gap("uniform").unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(gap("balanced-time"), Some(0.0));
        assert_eq!(gap("ilp-balanced-time").map(|g| g.abs() < 1e-6), Some(true));
    }

    #[test]
    fn a_raised_interrupt_starts_no_solve() {
        let insts = vec![chain(&[1.0; 4], 2)];
        let algos = registry::all();
        let flag = Interrupt::default();
        flag.store(true, Ordering::Relaxed);
        let rows = compare_interruptible(&algos, &insts, &SolveOptions::default(), Some(&flag));
        assert_eq!(rows.len(), algos.len());
        let interrupted = SolveError::Interrupted.to_string();
        for row in &rows {
            assert!(
                matches!(&row.outcome, Outcome::Failed { reason } if *reason == interrupted),
                "{}: {:?}",
                row.algorithm,
                row.outcome
            );
        }
    }
}
