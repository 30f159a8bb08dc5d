//! One property over the whole registry, on random small instances (edges included: one layer,
//! one GPU, more GPUs than layers, memory far too small): every algorithm returns a plan the
//! evaluator accepts or one clear error, never a panic; and on every objective, an exact
//! algorithm's proven optimum is at least as good as every heuristic of the same space.

use pipeplan_formulations::testing::small_instance;
use pipeplan_solvers::harness::run;
use pipeplan_solvers::{registry, ObjectiveKind, SolveError, SolveOptions, Status};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// Objectives whose heuristics search a space the exact algorithm of that objective does not
/// cover: `madpipe`'s allocations need not be contiguous (`exact-contiguous` is over contiguous
/// partitions only).
const NOT_NESTED: [ObjectiveKind; 1] = [ObjectiveKind::AsyncPeriod];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_algorithm_answers_and_exact_bounds_heuristics(inst in small_instance(6, 5)) {
        let opts = SolveOptions {
            time_limit: Some(Duration::from_secs(5)),
            ..SolveOptions::default()
        };
        let mut results = Vec::new();
        for algo in registry::all() {
            let out = catch_unwind(AssertUnwindSafe(|| run(algo.as_ref(), &inst, &opts)));
            let out = match out {
                Ok(out) => out,
                Err(_) => panic!("{} panicked on {}", algo.name(), inst.to_json()),
            };
            match &out {
                Ok(sol) => prop_assert!(sol.evaluated.is_some()),
                Err(SolveError::Solver(m)) => {
                    prop_assert!(false, "{}: solver failure {m} on {}", algo.name(), inst.to_json())
                }
                Err(e) => {
                    let m = e.to_string();
                    prop_assert!(!m.is_empty() && !m.contains('\n'), "{}: {m:?}", algo.name());
                }
            }
            results.push((algo, out));
        }
        for (exact, e) in &results {
            let Ok(e) = e else { continue };
            let (true, Status::Optimal, Some(eo)) =
                (exact.exact(), e.stats.status, e.claimed.objective)
            else {
                continue;
            };
            if NOT_NESTED.contains(&eo.kind) {
                continue;
            }
            for (heur, h) in &results {
                let Ok(h) = h else { continue };
                let Some(ho) = h.claimed.objective else { continue };
                if heur.exact() || ho.kind != eo.kind {
                    continue;
                }
                prop_assert!(
                    eo.value <= ho.value * (1.0 + 1e-9) + 1e-9,
                    "{} claims {} {} but heuristic {} claims {} on {}",
                    exact.name(), eo.kind, eo.value, heur.name(), ho.value, inst.to_json()
                );
            }
        }
    }
}
