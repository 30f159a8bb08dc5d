//! Degenerate chains: all times zero, one layer on one GPU, overflowing sums, instances built in
//! code; never a NaN or an infinity in an evaluation.

use super::*;

fn field_and_message(r: Result<Evaluation, InputError>) -> (String, String) {
    match r {
        Err(InputError::Field { field, message }) => (field, message),
        other => panic!("expected a field error, got {other:?}"),
    }
}

/// Every time 0 (a memory-only profile): two layers of 1 B weights on one GPU.
fn all_zero_times() -> Instance {
    instance(&[(0.0, 0.0, 1.0, 0.0, None); 2], 0.0, 1, 1e4)
}

#[test]
fn all_zero_times_async() {
    // Such an instance is valid (times are only required to be non-negative, docs/instance-format.md), but a
    // plan whose every operation takes 0 ms has no least period: a period is a positive time
    // (§3, starts in [0, T)). The evaluator used to take T = 0, build 1F1B* with NaN starts and
    // blame the schedule it had chosen itself (fits = false, infinite throughput).
    let inst = all_zero_times();
    let implied = Plan::contiguous(&[1], Schedule::one_f_one_b_star(None));
    let (field, message) = field_and_message(evaluate(&inst, &implied));
    assert_eq!(field, "plan.schedule.period");
    assert!(message.contains("takes 0 ms"), "{message}");
    assert!(message.contains("period must be positive"), "{message}");
    // The library's 1F1B* pattern builder says the same.
    let err = one_f_one_b_star_pattern(&inst, &implied, None).unwrap_err();
    assert!(
        matches!(&err, InputError::Field { field, .. } if field == "period"),
        "{err}"
    );
    // Given a period, the plan is judged normally. Its operations take no time, so the simulator
    // (half-open lifetimes, from the start of F to the end of B) sees no micro-batch in flight:
    // only the model states, 3 W, remain.
    let ev = eval(&inst, &[1], Schedule::one_f_one_b_star(Some(2.0)));
    assert!(ev.fits && ev.notes.is_empty(), "{:?}", ev.notes);
    assert_eq!(ev.valid_schedule, Some(true));
    assert_eq!(ev.in_flight, vec![0]);
    assert_all_close(&ev.peak_memory, &[6.0]);
    assert_close(ev.throughput, 8.0 / 2.0 * 1e3);
    assert_close(ev.bubble, 1.0);
    // And so is the explicit 1F1B* pattern at that period.
    let pattern = one_f_one_b_star_pattern(&inst, &implied, Some(2.0)).unwrap();
    let explicit = Plan::contiguous(
        &[1],
        Schedule::Async {
            period: None,
            pattern: Some(pattern),
        },
    );
    let ev2 = evaluate(&inst, &explicit).unwrap();
    assert_sound(&ev2);
    assert_eq!(ev2.valid_schedule, Some(true));
    assert_eq!(ev2.peak_memory, ev.peak_memory);
    // Non-positive periods are refused by the pattern builder too.
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = one_f_one_b_star_pattern(&inst, &implied, Some(t)).unwrap_err();
        assert!(
            matches!(&err, InputError::Field { field, .. } if field == "period"),
            "T = {t}: {err}"
        );
    }
}

#[test]
fn all_zero_times_synchronous() {
    // A synchronous iteration of a plan with no work takes 0 ms: throughput undefined.
    let inst = all_zero_times();
    for schedule in [
        Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
        Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    ] {
        let r = evaluate(&inst, &Plan::contiguous(&[1], schedule.clone()));
        let (field, message) = field_and_message(r);
        assert_eq!(field, "model.layers", "{schedule:?}");
        assert!(message.contains("takes 0 ms"), "{message}");
    }
}

#[test]
fn zero_compute_with_communication_or_gradient_sync() {
    // No compute, but 10 B cross the link at 10 kB/s: the link's load (1 + 1 ms) sets the period.
    let inst = instance(&[(0.0, 0.0, 1.0, 10.0, None); 2], 0.0, 2, 1e4);
    let ev = eval(&inst, &[0, 1], Schedule::one_f_one_b_star(None));
    assert_close(ev.period_ms.unwrap(), 2.0);
    assert_eq!(ev.valid_schedule, Some(true));
    // Loads 0, 2, 0 at T = 2: one group. Stage 0 holds its micro-batch while the link works
    // (2 ms); stage 1's F and B take no time, so it holds one for no time (half-open lifetimes).
    assert_eq!(ev.in_flight, vec![1, 0]);
    // The GPUs do nothing: all bubble.
    assert_close(ev.bubble, 1.0);
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::OneFOneB {
            micro_batches: Some(3),
            micro_batch: None,
        },
    );
    // (m - 1) x 2 + 2.
    assert_close(ev.iteration_ms.unwrap(), 6.0);
    assert_close(ev.bubble, 1.0);
    // No compute on two data-parallel replicas: the gradient all-reduce (2 (1/2) 1000 B at
    // 1 MB/s = 1 ms) is the only work.
    let inst = instance(&[(0.0, 0.0, 1000.0, 0.0, None)], 0.0, 2, 1e6);
    let mut plan = single_stage(2, 1, false);
    let ev = evaluate(&inst, &plan).unwrap();
    assert_sound(&ev);
    assert_close(ev.period_ms.unwrap(), 1.0);
    plan.schedule = Schedule::Gpipe {
        micro_batches: Some(2),
        micro_batch: None,
    };
    let ev = evaluate(&inst, &plan).unwrap();
    assert_sound(&ev);
    assert_close(ev.iteration_ms.unwrap(), 1.0);
}

#[test]
fn single_layer_single_gpu() {
    // F 2, B 3, W 100, input 7; one GPU, no link, no all-reduce.
    let inst = instance(&[(2.0, 3.0, 100.0, 50.0, None)], 7.0, 1, 1e4);
    let ev = eval(&inst, &[0], Schedule::one_f_one_b_star(None));
    assert_close(ev.period_ms.unwrap(), 5.0);
    assert_eq!(ev.in_flight, vec![1]);
    // 3 W (two versions + gradient) + the input, no buffers.
    assert_all_close(&ev.peak_memory, &[307.0]);
    assert_close(ev.throughput, 8.0 / 5.0 * 1e3);
    assert_close(ev.bubble, 0.0);
    let ev = eval(
        &inst,
        &[0],
        Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
    );
    assert_close(ev.iteration_ms.unwrap(), 3.0 * 5.0 + 5.0);
    assert_eq!(ev.in_flight, vec![1]);
    assert_all_close(&ev.peak_memory, &[207.0]);
    assert_close(ev.bubble, 0.0);
    let ev = eval(
        &inst,
        &[0],
        Schedule::Gpipe {
            micro_batches: Some(4),
            micro_batch: None,
        },
    );
    assert_close(ev.iteration_ms.unwrap(), 3.0 * 2.0 + 2.0 + 3.0 * 3.0 + 3.0);
    assert_eq!(ev.in_flight, vec![4]);
    assert_all_close(&ev.peak_memory, &[200.0 + 4.0 * 7.0]);
    assert_close(ev.throughput, 32.0 / 20.0 * 1e3);
}

#[test]
fn smaller_micro_batch_scales_times_and_activations() {
    // Profiled at batch 8, trained at micro-batch 2: times and activations x 1/4, weights not.
    let mut inst = instance(&[(4.0, 8.0, 100.0, 40.0, None)], 40.0, 1, 1e4);
    inst.training.micro_batch = Some(2);
    let ev = eval(&inst, &[0], Schedule::one_f_one_b_star(None));
    assert_close(ev.period_ms.unwrap(), 3.0);
    assert_all_close(&ev.peak_memory, &[300.0 + 10.0]);
    assert_close(ev.throughput, 2.0 / 3.0 * 1e3);
}

#[test]
fn instances_built_in_code_are_validated() {
    // A zero bandwidth would make transfers infinite (or 0 / 0 = NaN for empty cuts): the
    // evaluator validates the instance first and names the field.
    let mut inst = two_stage();
    inst.cluster.bandwidth.intra_node = 0.0;
    let plan = Plan::contiguous(&[0, 1], Schedule::one_f_one_b_star(None));
    assert_eq!(
        field_and_message(evaluate(&inst, &plan)).0,
        "cluster.bandwidth.intra_node"
    );
    // Zero samples per micro-batch, a NaN time.
    let mut inst = two_stage();
    inst.training.micro_batch = Some(0);
    assert_eq!(
        field_and_message(evaluate(&inst, &plan)).0,
        "training.micro_batch"
    );
    let mut inst = two_stage();
    inst.model.layers[1].backward = f64::NAN;
    assert_eq!(
        field_and_message(evaluate(&inst, &plan)).0,
        "model.layers[1].backward"
    );
}

#[test]
fn overflowing_sums_are_an_error_not_infinity() {
    // Each weight is finite, their model states (3 x 2e308) are not.
    let inst = instance(&[(1.0, 1.0, 1e308, 1.0, None); 2], 1.0, 1, 1e4);
    let plan = Plan::contiguous(&[1], Schedule::one_f_one_b_star(None));
    let (field, message) = field_and_message(evaluate(&inst, &plan));
    assert_eq!(field, "model");
    assert!(message.contains("overflows"), "{message}");
    // Times too: a forward of 1e308 ms on each of two layers.
    let inst = instance(&[(1e308, 1.0, 1.0, 1.0, None); 2], 1.0, 1, 1e4);
    for schedule in [
        plan.schedule.clone(),
        Schedule::one_f_one_b_star(Some(5.0)),
        Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    ] {
        let plan = Plan {
            order: None,
            schedule,
            ..plan.clone()
        };
        let (field, message) = field_and_message(evaluate(&inst, &plan));
        assert_eq!(field, "model", "{message}");
        assert!(message.contains("load of stage 0"), "{message}");
    }
}

#[test]
fn simulator_refuses_a_non_positive_period() {
    let inst = two_stage();
    let plan = Plan::contiguous(&[0, 1], Schedule::one_f_one_b_star(None));
    let good = one_f_one_b_star_pattern(&inst, &plan, None).unwrap();
    assert!(simulate(&inst, &plan, &good).is_ok());
    for t in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        let bad = Pattern {
            period: t,
            ..good.clone()
        };
        assert!(
            matches!(
                simulate(&inst, &plan, &bad),
                Err(ScheduleViolation::BadPeriod(_))
            ),
            "T = {t}"
        );
    }
    // Through the evaluator, a pattern's period is checked as a plan field.
    let bad = Plan {
        order: None,
        schedule: Schedule::Async {
            period: None,
            pattern: Some(Pattern {
                period: 0.0,
                ..good
            }),
        },
        ..plan
    };
    assert_eq!(
        field_and_message(evaluate(&inst, &bad)).0,
        "plan.schedule.pattern.period"
    );
}
