//! Malformed plans: each names its field.

use super::*;

#[test]
fn malformed_plans_name_the_field() {
    let layers = [(1.0, 1.0, 1.0, 1.0, None); 3];
    let inst = instance(&layers, 1.0, 2, 1e4);
    let sched = Schedule::OneFOneB {
        micro_batches: None,
        micro_batch: None,
    };
    let plan = |stages: Vec<Stage>| Plan {
        order: None,
        stages,
        schedule: sched.clone(),
    };
    // A gap: layer 1 in no stage.
    assert_eq!(
        field_of(
            &inst,
            &plan(vec![Stage::single(0, 0, 0), Stage::single(2, 2, 1)])
        ),
        "plan.stages[1].first"
    );
    // An overlap: layer 1 twice.
    assert_eq!(
        field_of(
            &inst,
            &plan(vec![Stage::single(0, 1, 0), Stage::single(1, 2, 1)])
        ),
        "plan.stages[1].first"
    );
    // The tail uncovered, a layer past the chain, no stage, last before first.
    assert_eq!(
        field_of(
            &inst,
            &plan(vec![Stage::single(0, 0, 0), Stage::single(1, 1, 1)])
        ),
        "plan.stages"
    );
    assert_eq!(
        field_of(
            &inst,
            &plan(vec![Stage::single(0, 0, 0), Stage::single(1, 3, 1)])
        ),
        "plan.stages[1].last"
    );
    assert_eq!(field_of(&inst, &plan(vec![])), "plan.stages");
    let backwards = Stage::single(1, 0, 1);
    assert_eq!(
        field_of(&inst, &plan(vec![Stage::single(0, 0, 0), backwards])),
        "plan.stages[1].last"
    );
    // GPU ids out of range, listed twice, or not dp x tp of them.
    assert_eq!(
        field_of(
            &inst,
            &plan(vec![Stage::single(0, 0, 0), Stage::single(1, 2, 2)])
        ),
        "plan.stages[1].gpus"
    );
    let twice = Stage {
        dp: 2,
        gpus: vec![1, 1],
        ..Stage::single(0, 2, 0)
    };
    assert_eq!(field_of(&inst, &plan(vec![twice])), "plan.stages[0].gpus");
    let short = Stage {
        dp: 2,
        ..Stage::single(0, 2, 0)
    };
    assert_eq!(field_of(&inst, &plan(vec![short])), "plan.stages[0].gpus");
    let long = Stage {
        tp: 1,
        gpus: vec![0, 1],
        ..Stage::single(0, 2, 0)
    };
    assert_eq!(field_of(&inst, &plan(vec![long])), "plan.stages[0].gpus");
    // Degrees whose product passes u32::MAX: refused, not an overflow.
    let huge = Stage {
        dp: u32::MAX,
        tp: 4,
        ..Stage::single(0, 2, 0)
    };
    assert_eq!(field_of(&inst, &plan(vec![huge])), "plan.stages[0].gpus");
    let zero = Stage {
        tp: 0,
        gpus: vec![],
        ..Stage::single(0, 2, 0)
    };
    assert_eq!(field_of(&inst, &plan(vec![zero])), "plan.stages[0].tp");
    // A checkpointed layer outside its stage.
    let ck = Stage {
        checkpoint: vec![2],
        ..Stage::single(0, 1, 0)
    };
    assert_eq!(
        field_of(&inst, &plan(vec![ck, Stage::single(2, 2, 1)])),
        "plan.stages[0].checkpoint"
    );
    // Schedules: zero micro-batches, a non-positive period, a period below a load.
    let ok = vec![Stage::single(0, 1, 0), Stage::single(2, 2, 1)];
    let with = |schedule: Schedule| Plan {
        order: None,
        stages: ok.clone(),
        schedule,
    };
    assert_eq!(
        field_of(
            &inst,
            &with(Schedule::Gpipe {
                micro_batches: Some(0),
                micro_batch: None,
            })
        ),
        "plan.schedule.micro_batches"
    );
    assert_eq!(
        field_of(
            &inst,
            &with(Schedule::OneFOneB {
                micro_batches: None,
                micro_batch: Some(0),
            })
        ),
        "plan.schedule.micro_batch"
    );
    for t in [0.0, -1.0, f64::NAN, 3.9] {
        assert_eq!(
            field_of(&inst, &with(Schedule::one_f_one_b_star(Some(t)))),
            "plan.schedule.period",
            "T = {t}"
        );
    }
    // Shared GPUs: async needs an explicit pattern, synchronous schedules are refused.
    let shared = vec![
        Stage::single(0, 0, 0),
        Stage::single(1, 1, 1),
        Stage::single(2, 2, 0),
    ];
    assert_eq!(
        field_of(
            &inst,
            &Plan {
                order: None,
                stages: shared.clone(),
                schedule: Schedule::one_f_one_b_star(None)
            }
        ),
        "plan.schedule.pattern"
    );
    assert_eq!(
        field_of(
            &inst,
            &Plan {
                order: None,
                stages: shared,
                schedule: sched.clone()
            }
        ),
        "plan.stages"
    );
}
