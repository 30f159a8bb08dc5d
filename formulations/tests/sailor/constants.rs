//! Tensor-parallel measurements in place of the scaling rule, and the calibration constants
//! where the docs say they act (docs/calibration.md).

use super::*;

fn tp_stage(gpus: Vec<u32>, dp: u32, tp: u32) -> Plan {
    Plan {
        order: None,
        stages: vec![Stage {
            dp,
            tp,
            gpus,
            ..Stage::single(0, 3, 0)
        }],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(1),
            micro_batch: None,
        },
    }
}

#[test]
fn measured_degrees_replace_the_scaling_rule() {
    let inst = four_layers(8);
    // tp 2 is measured: 4 layers x (3 + 5) ms, no all-reduce added.
    let ev = evaluate(&inst, &tp_stage(vec![0, 1], 1, 2)).unwrap();
    assert!(
        (ev.stage_time[0] - 32.0).abs() < 1e-9,
        "{:?}",
        ev.stage_time
    );
    assert!(
        ev.notes.iter().all(|n| !n.contains("does not measure")),
        "{:?}",
        ev.notes
    );
    // tp 4 is not: 4 layers x (4 + 8) ms / 4 plus the all-reduces of the scaling rule, and the
    // notes say so.
    let ev4 = evaluate(&inst, &tp_stage(vec![0, 1, 2, 3], 1, 4)).unwrap();
    assert!(
        ev4.stage_time[0] > 12.0 && ev4.stage_time[0] < 14.0,
        "{:?}",
        ev4.stage_time
    );
    assert_eq!(
        ev4.notes,
        ["stage 0 (tp 4) at a tensor-parallel degree the instance does not measure (it measures \
          2): their layers are one GPU's numbers divided by the degree, with an all-reduce of \
          each layer's output per pass"]
    );
    // Without measurements the rule is the model, and nothing is said.
    let mut plain = inst.clone();
    plain
        .model
        .layers
        .iter_mut()
        .for_each(|l| l.tensor_parallel.clear());
    let ev = evaluate(&plain, &tp_stage(vec![0, 1, 2, 3], 1, 4)).unwrap();
    assert!(ev.notes.is_empty(), "{:?}", ev.notes);
    // A layer measured at other degrees than layer 0 is refused, naming it.
    let mut bad = inst.clone();
    bad.model.layers[2].tensor_parallel[0].degree = 4;
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("model.layers[2].tensor_parallel"), "{e}");
}

#[test]
fn calibration_constants_act_where_documented() {
    let inst = four_layers(8);
    let plan = Plan {
        order: None,
        stages: vec![
            Stage {
                dp: 1,
                tp: 2,
                gpus: vec![0, 1],
                ..Stage::single(0, 1, 0)
            },
            Stage {
                dp: 1,
                tp: 2,
                gpus: vec![4, 5],
                ..Stage::single(2, 3, 0)
            },
        ],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
    };
    let base = evaluate(&inst, &plan).unwrap();
    let identity = evaluate(&inst.calibrated(&Calibration::IDENTITY), &plan).unwrap();
    assert_eq!(base, identity);
    let with = |c: Calibration| evaluate(&inst.calibrated(&c), &plan).unwrap();
    let reserved = with(Calibration {
        reserved_memory: 1e9,
        ..Calibration::IDENTITY
    });
    for g in [0usize, 1, 4, 5] {
        assert!((reserved.peak_memory[g] - base.peak_memory[g] - 1e9).abs() < 1.0);
    }
    assert_eq!(reserved.peak_memory[2], 0.0, "unused GPUs hold nothing");
    let slower = with(Calibration {
        compute_factor: 2.0,
        ..Calibration::IDENTITY
    });
    assert!((slower.stage_time[0] - 2.0 * base.stage_time[0]).abs() < 1e-9);
    // Blocking transfers join the stages' time; a slower link lengthens the iteration.
    let blocking = with(Calibration {
        p2p_overlap: 0.0,
        ..Calibration::IDENTITY
    });
    assert!(blocking.stage_time[0] > base.stage_time[0]);
    assert!(blocking.iteration_ms > base.iteration_ms);
    // A slow point-to-point link lengthens the iteration, not the gradient reduction; slow
    // collectives lengthen the reduction of data-parallel stages and nothing else.
    let slow_p2p = with(Calibration {
        p2p_efficiency: 0.01,
        ..Calibration::IDENTITY
    });
    assert!(slow_p2p.iteration_ms > base.iteration_ms);
    let replicated = Plan {
        stages: plan
            .stages
            .iter()
            .map(|s| Stage {
                dp: 2,
                tp: 1,
                ..s.clone()
            })
            .collect(),
        ..plan.clone()
    };
    let sync = |c: Calibration| {
        let ev = evaluate(&inst.calibrated(&c), &replicated).unwrap();
        (ev.grad_sync_ms.unwrap(), ev.iteration_ms.unwrap())
    };
    let (sync0, it0) = sync(Calibration::IDENTITY);
    assert!(sync0 > 0.0);
    let (sync_p2p, _) = sync(Calibration {
        p2p_efficiency: 0.01,
        ..Calibration::IDENTITY
    });
    assert_eq!(sync_p2p, sync0);
    let (sync_slow, it_slow) = sync(Calibration {
        collective_efficiency: 0.5,
        ..Calibration::IDENTITY
    });
    assert!((sync_slow - 2.0 * sync0).abs() < 1e-9 * sync0);
    assert!((it_slow - it0 - sync0).abs() < 1e-9 * it0);
    assert_eq!(
        base.grad_sync_ms,
        Some(0.0),
        "one replica: nothing to reduce"
    );
    let more_acts = with(Calibration {
        activation_factor: 3.0,
        ..Calibration::IDENTITY
    });
    assert!(more_acts.max_memory > base.max_memory);
    assert_eq!(
        inst.calibrated(&Calibration {
            reserved_memory: 1e9,
            ..Calibration::IDENTITY
        })
        .usable_memory(),
        inst.cluster.memory - 1e9
    );
}
