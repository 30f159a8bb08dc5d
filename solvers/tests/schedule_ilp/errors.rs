//! Bad input gets precise errors; a tiny time limit is honoured.

use super::*;

#[test]
fn allocation_not_covering_the_chain() {
    let (inst, _) = shared_case();
    let stages = vec![Stage::single(0, 1, 0), Stage::single(2, 3, 1)];
    let e = least_memory(&inst, &stages, 100.0, &opts()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SolveError::Input(_)), "{e:?}");
    assert!(
        msg.contains("plan.stages") && msg.contains("layers 4..5 are in no stage"),
        "{msg}"
    );

    let stages = vec![Stage::single(0, 1, 0), Stage::single(3, 5, 1)];
    let msg = least_period(&inst, &stages, &opts())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("plan.stages[1].first") && msg.contains("layers 2..2"),
        "{msg}"
    );

    let stages = vec![Stage::single(0, 2, 0), Stage::single(3, 5, 7)];
    let msg = least_period(&inst, &stages, &opts())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("GPU 7 does not exist"), "{msg}");
}

#[test]
fn period_below_the_load() {
    let (inst, stages) = shared_case();
    let e = least_memory(&inst, &stages, 5.0, &opts()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SolveError::Input(_)), "{e:?}");
    // GPU 0 holds stages 0 and 2: 1 + 2 + 1.5 + 2.5 = 7 ms.
    assert!(
        msg.contains("period") && msg.contains("below the load 7.000000 ms of GPU 0"),
        "{msg}"
    );
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let msg = fit_memory(&inst, &stages, t, &opts())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("positive time"), "{t}: {msg}");
    }
    let bad = IlpOptions {
        period_tolerance: 0.0,
        ..opts()
    };
    assert!(least_period(&inst, &stages, &bad)
        .unwrap_err()
        .to_string()
        .contains("period_tolerance"));
}

#[test]
fn memory_that_never_fits() {
    let (inst, stages) = shared_case();
    let o = IlpOptions {
        memory_limit: Some(40.0 * MIB),
        ..opts()
    };
    let e = least_period(&inst, &stages, &o).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SolveError::Infeasible(_)), "{e:?}");
    assert!(
        msg.contains("GPU 0 needs at least") && msg.contains("at any period"),
        "{msg}"
    );
}

/// A larger allocation (10 stages, 19 resources) with a 1 ms limit: a status or a time-limit
/// error, quickly; `least_period` always answers (the latency is feasible).
#[test]
fn time_limit_is_honoured() {
    let layers: Vec<L> = (0..20)
        .map(|i| {
            (
                0.5 + (i * 7 % 5) as f64 * 0.4,
                1.0 + (i * 3 % 7) as f64 * 0.5,
                10.0,
                2.0 + (i % 4) as f64,
            )
        })
        .collect();
    let inst = instance(&layers, 10, 1e15, 8e9);
    let stages = contiguous(&[1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    let o = IlpOptions {
        time_limit: Some(Duration::from_millis(1)),
        ..opts()
    };
    let max = resource_loads(&inst, &stages)
        .into_iter()
        .fold(0.0, f64::max);
    let start = Instant::now();
    match least_memory(&inst, &stages, max, &o) {
        Ok(s) => {
            check_with_evaluator(&inst, &s);
        }
        Err(SolveError::TimeLimit(t)) => assert_eq!(t, 0.001),
        Err(e) => panic!("{e}"),
    }
    let s = least_period(
        &inst,
        &stages,
        &IlpOptions {
            memory_limit: Some(120.0 * MIB),
            ..o
        },
    )
    .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(s.status, Status::Feasible);
    let (lo, hi) = s.period_bracket.unwrap();
    assert!(lo <= hi && s.gap.unwrap() > 0.0);
    assert!(check_with_evaluator(&inst, &s)
        .peak_memory
        .iter()
        .all(|&m| m <= 120.0 * MIB));
    assert!(s.stats().counters.contains_key("ilp solves"));
}
