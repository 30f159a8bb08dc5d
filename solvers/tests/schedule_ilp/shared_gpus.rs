//! Allocations whose stages share a GPU, or put two cuts on one link: valid patterns and a
//! consistent least period.

use super::*;

/// The largest load of a resource (a GPU, which stages may share, or a link) over one period of
/// the asynchronous plan of `stages`, from the simulator's operations.
fn largest_load(inst: &Instance, stages: &[Stage]) -> f64 {
    let mut by_res: BTreeMap<String, f64> = BTreeMap::new();
    for (d, res) in plan_operations(inst, &async_plan(stages, None)).values() {
        for r in res {
            *by_res.entry(r.to_string()).or_default() += d;
        }
    }
    by_res.values().copied().fold(0.0, f64::max)
}

#[test]
fn shared_gpu_patterns_are_valid() {
    let (inst, stages) = shared_case();
    let max = largest_load(&inst, &stages);
    let mut prev = f64::INFINITY;
    for t in [max, 1.2 * max, 1.7 * max, 2.5 * max, 4.0 * max] {
        for objective in [MemoryObjective::Max, MemoryObjective::MaxThenSum] {
            let s = least_memory(
                &inst,
                &stages,
                t,
                &IlpOptions {
                    objective,
                    ..opts()
                },
            )
            .unwrap();
            assert_eq!(s.status, Status::Optimal);
            let ev = check_with_evaluator(&inst, &s);
            assert!(ev.fits);
            if objective == MemoryObjective::MaxThenSum {
                // Least memory does not grow with the period.
                assert!(s.max_memory <= prev * (1.0 + 1e-12), "T = {t}");
                prev = s.max_memory;
            }
        }
    }
}

#[test]
fn shared_gpu_least_period() {
    let (big, stages) = shared_case();
    let at_load = least_memory(&big, &stages, largest_load(&big, &stages), &opts()).unwrap();
    let floor = {
        let s = least_memory(&big, &stages, 1e6, &opts()).unwrap();
        s.max_memory
    };
    assert!(floor < at_load.max_memory, "the limit must bind");
    let limit = 0.5 * (floor + at_load.max_memory);
    let o = IlpOptions {
        memory_limit: Some(limit),
        period_tolerance: 1e-4,
        ..opts()
    };
    let s = least_period(&big, &stages, &o).unwrap();
    assert_eq!(s.status, Status::Optimal);
    let (lo, hi) = s.period_bracket.unwrap();
    assert!(hi > at_load.period && hi - lo <= 1e-4 * hi, "{lo} {hi}");
    assert!(s.max_memory <= limit);
    let ev = check_with_evaluator(&big, &s);
    assert!(ev.peak_memory.iter().all(|&m| m <= limit));
    // Just below the bracket: proven infeasible.
    match fit_memory(&big, &stages, lo, &o) {
        Err(SolveError::Infeasible(m)) => assert!(m.contains("no periodic pattern"), "{m}"),
        other => panic!("expected infeasible at {lo}: {other:?}"),
    }
    // At the bracket's upper end, a pattern within the limit exists.
    let f = fit_memory(&big, &stages, hi, &o).unwrap();
    assert_eq!(f.goal, IlpGoal::FitMemory);
    assert!(f.max_memory <= limit);
    check_with_evaluator(&big, &f);
    // With the cluster's memory as the limit the answer fits the cluster.
    let small = Instance {
        cluster: Cluster {
            memory: limit,
            ..big.cluster.clone()
        },
        ..big.clone()
    };
    let s2 = least_period(
        &small,
        &stages,
        &IlpOptions {
            period_tolerance: 1e-4,
            ..opts()
        },
    )
    .unwrap();
    assert!(close(s2.period, s.period));
    assert!(check_with_evaluator(&small, &s2).fits);
}

/// Adjacent stages on one GPU exchange nothing: no communication operations, still valid.
#[test]
fn adjacent_stages_on_one_gpu() {
    let (inst, _) = shared_case();
    let stages = vec![
        Stage::single(0, 1, 0),
        Stage::single(2, 2, 0),
        Stage::single(3, 4, 1),
        Stage::single(5, 5, 2),
    ];
    let s = least_period(&inst, &stages, &opts()).unwrap();
    assert_eq!(s.status, Status::Optimal);
    assert!(check_with_evaluator(&inst, &s).fits);
    let pattern = match &s.plan.schedule {
        Schedule::Async {
            pattern: Some(p), ..
        } => p.clone(),
        other => panic!("{other:?}"),
    };
    assert!(!pattern
        .ops
        .iter()
        .any(|o| o.op == OpKind::SendF && o.stage == 0));
}

// ------------------------------------------------------------------------------------------------
// Bad input, limits, determinism
