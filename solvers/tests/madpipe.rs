//! The `madpipe` algorithm end to end: its plans pass the simulator and the neutral evaluator
//! confirms its claims.

use pipeplan_formulations::testing::shipped;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveOptions};
use pipeplan_solvers::harness;
use pipeplan_solvers::madpipe::Madpipe;
use std::time::Duration;

fn check(inst: &Instance, opts: &SolveOptions) -> pipeplan_solvers::Solution {
    let sol = harness::run(&Madpipe, inst, opts).unwrap_or_else(|e| panic!("{}: {e}", inst.name));
    let ev = sol.evaluated.as_ref().unwrap();
    assert_eq!(
        ev.valid_schedule,
        Some(true),
        "{}: {:?}",
        inst.name,
        ev.notes
    );
    let claimed = sol.claimed.period_ms.unwrap();
    let evaluated = ev.period_ms.unwrap();
    assert!(
        (claimed - evaluated).abs() <= 1e-9 * claimed.max(1.0),
        "{}: claimed period {claimed} vs evaluated {evaluated}",
        inst.name
    );
    let mem = sol.claimed.peak_memory.as_ref().unwrap();
    for (g, (c, e)) in mem.iter().zip(&ev.peak_memory).enumerate() {
        assert!(
            (c - e).abs() <= 1e-6 * e.max(1.0),
            "{} GPU {g}: claimed {c} vs evaluated {e}",
            inst.name
        );
    }
    assert_eq!(sol.claimed.fits, Some(ev.fits));
    sol
}

#[test]
fn claims_match_the_evaluator_on_a_tight_shipped_instance() {
    // No baseline fits this one (the least max stage memory of a contiguous split is 8.30 GiB).
    let inst = shipped("resnet50-1000px-b8-4gpu-8gib.json");
    let opts = SolveOptions {
        time_limit: Some(Duration::from_secs(120)),
        ..SolveOptions::default()
    };
    let sol = check(&inst, &opts);
    assert!(sol.evaluated.as_ref().unwrap().fits);
    assert!(sol.notes[0].contains("dashed line"));
}

#[test]
fn settings_are_checked() {
    let inst = shipped("resnet50-1000px-b8-4gpu-8gib.json");
    for (k, v) in [("grid_t", "1"), ("period_tolerance", "2"), ("nope", "1")] {
        let mut opts = SolveOptions::default();
        opts.params.insert(k.into(), v.into());
        let e = Madpipe.solve(&inst, &opts).unwrap_err().to_string();
        assert!(e.contains(k), "{k}: {e}");
    }
}
