//! The neutral evaluator on hand-computed cases (docs/evaluator.md): synchronous 1F1B and GPipe
//! iteration times and in-flight counts, asynchronous periods from 1F1B*, memory under dp / tp /
//! sdp and checkpointing, throughput, bubble fraction, malformed plans, degenerate inputs (all
//! times zero, overflow, unvalidated instances: never a NaN or an infinity in an evaluation), and
//! the worked example of `docs/evaluator.md`.

use pipeplan_formulations::evaluate::{evaluate, one_f_one_b_star_pattern, Evaluation};
use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_formulations::plan::{Pattern, Plan, Schedule, Stage};
use pipeplan_formulations::simulate::{simulate, ScheduleViolation};
use pipeplan_formulations::InputError;

/// (forward ms, backward ms, weight bytes, output bytes, saved bytes override).
type L5 = (f64, f64, f64, f64, Option<f64>);

/// Model batch 8 (= the micro-batch), one node, memory 1 MB per GPU.
fn instance(layers: &[L5], input: f64, gpus: u32, bw: f64) -> Instance {
    let layers = layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o, saved))| Layer {
        saved,
        ..Layer::new(format!("l{i}"), f, b, w, o)
    });
    let cluster = Cluster::single_node(gpus, 1e6, bw);
    let inst = Instance::new("t", 8, input, layers.collect(), cluster);
    inst.validate().expect("test instance is valid");
    inst
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[track_caller]
fn assert_close(a: f64, b: f64) {
    assert!(close(a, b), "{a} != {b}");
}

#[track_caller]
fn assert_all_close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!(close(*x, *y), "{a:?} vs {b:?}");
    }
}

/// Two stages: l0 (F 1, B 4, W 100, out 10) on GPU 0 and l1 (F 3, B 1, W 200, out 20) on GPU 1,
/// input 5 bytes. The link takes 10 B / 10 kB/s = 1 ms each way, so the pipeline's resources
/// have loads 5 (stage 0), 2 (link), 4 (stage 1).
fn two_stage() -> Instance {
    instance(
        &[(1.0, 4.0, 100.0, 10.0, None), (3.0, 1.0, 200.0, 20.0, None)],
        5.0,
        2,
        1e4,
    )
}

fn eval(inst: &Instance, ends: &[usize], schedule: Schedule) -> Evaluation {
    let ev = evaluate(inst, &Plan::contiguous(ends, schedule)).expect("well-formed plan");
    assert_sound(&ev);
    ev
}

/// Every figure finite (no NaN, no infinity), the bubble a fraction, and the JSON form reads back
/// (serde_json writes a non-finite number as `null`, which does not read back as a number).
#[track_caller]
fn assert_sound(ev: &Evaluation) {
    let mut all = vec![ev.memory_limit, ev.max_memory, ev.throughput, ev.bubble];
    all.extend(ev.period_ms);
    all.extend(ev.iteration_ms);
    all.extend(&ev.peak_memory);
    all.extend(&ev.stage_time);
    assert!(all.iter().all(|x| x.is_finite()), "{ev:?}");
    assert!((0.0..=1.0).contains(&ev.bubble), "{ev:?}");
    assert!(ev.throughput > 0.0, "{ev:?}");
    let json = serde_json::to_string(ev).unwrap();
    assert!(!json.contains("null"), "{json}");
    let back: Evaluation = serde_json::from_str(&json).unwrap();
    assert_eq!(back.in_flight, ev.in_flight, "{json}");
    assert!(close(back.throughput, ev.throughput), "{json}");
}

// ------------------------------------------------------------------------------------------------
// Synchronous schedules

#[test]
fn one_f_one_b_iteration_and_memory() {
    let inst = two_stage();
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
    );
    // (m - 1) x max load + sum of loads = 3 x 5 + (5 + 2 + 4).
    assert_close(ev.iteration_ms.unwrap(), 26.0);
    assert_eq!(ev.period_ms, None);
    assert_eq!(ev.micro_batches, Some(4));
    // min(P - s, m) with P = 2 stages.
    assert_eq!(ev.in_flight, vec![2, 1]);
    // One weight version + gradient: 2 W; activations in flight x input; buffers 2 x 10.
    assert_all_close(
        &ev.peak_memory,
        &[2.0 * 100.0 + 2.0 * 5.0 + 20.0, 2.0 * 200.0 + 10.0 + 20.0],
    );
    assert_close(ev.max_memory, 430.0);
    assert_eq!(ev.max_memory_gpu, 1);
    // 4 micro-batches of 8 samples per 26 ms.
    assert_close(ev.throughput, 32.0 / 26.0 * 1e3);
    // Busy: 4 x 5 on GPU 0 and 4 x 4 on GPU 1, out of 2 x 26.
    assert_close(ev.bubble, 1.0 - 36.0 / 52.0);
    assert_all_close(&ev.stage_time, &[5.0, 4.0]);
    assert_eq!(ev.valid_schedule, None);
    assert!(ev.fits && ev.notes.is_empty());
    assert_eq!(ev.gpus_used, 2);
}

#[test]
fn one_f_one_b_in_flight_is_min_of_depth_and_m() {
    let layers = [(1.0, 1.0, 0.0, 10.0, None); 3];
    let inst = instance(&layers, 10.0, 3, 1e4);
    for (m, expect) in [
        (1, vec![1, 1, 1]),
        (2, vec![2, 2, 1]),
        (3, vec![3, 2, 1]),
        (7, vec![3, 2, 1]),
    ] {
        let ev = eval(
            &inst,
            &[0, 1, 2],
            Schedule::OneFOneB {
                micro_batches: Some(m),
                micro_batch: None,
            },
        );
        assert_eq!(ev.in_flight, expect, "m = {m}");
        // Resources: 2, 2 (link), 2, 2 (link), 2.
        assert_close(ev.iteration_ms.unwrap(), (m - 1) as f64 * 2.0 + 10.0);
        let g = ev.in_flight.iter().map(|&k| k as f64 * 10.0);
        let expect_mem: Vec<f64> = g.zip([20.0, 40.0, 20.0]).map(|(a, buf)| a + buf).collect();
        assert_all_close(&ev.peak_memory, &expect_mem);
    }
}

#[test]
fn gpipe_iteration_and_memory() {
    let inst = two_stage();
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::Gpipe {
            micro_batches: Some(4),
            micro_batch: None,
        },
    );
    // Forwards: (m - 1) x max F + sum F = 3 x 3 + (1 + 1 + 3); backwards 3 x 4 + (4 + 1 + 1).
    assert_close(ev.iteration_ms.unwrap(), 14.0 + 18.0);
    assert_eq!(ev.in_flight, vec![4, 4]);
    assert_all_close(
        &ev.peak_memory,
        &[200.0 + 4.0 * 5.0 + 20.0, 400.0 + 4.0 * 10.0 + 20.0],
    );
    assert_close(ev.throughput, 32.0 / 32.0 * 1e3);
    assert_close(ev.bubble, 1.0 - 36.0 / 64.0);
}

#[test]
fn synchronous_default_micro_batches_is_the_gpu_count() {
    let inst = two_stage();
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::OneFOneB {
            micro_batches: None,
            micro_batch: None,
        },
    );
    assert_eq!(ev.micro_batches, Some(2));
    assert_close(ev.iteration_ms.unwrap(), 5.0 + 11.0);
    let mut inst = two_stage();
    inst.training.micro_batches = Some(3);
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    );
    assert_eq!(ev.micro_batches, Some(3));
    assert_eq!(ev.in_flight, vec![3, 3]);
}

#[test]
fn synchronous_gradient_allreduce_is_added_once() {
    // One layer on two data-parallel GPUs: F 4 / 2, B 8 / 2, all-reduce of 1000 B over 2 GPUs at
    // 1 MB/s: 2 (1/2) 1000 / 1e6 s = 1 ms, once per iteration.
    let inst = instance(&[(4.0, 8.0, 1000.0, 64.0, None)], 32.0, 2, 1e6);
    let plan = Plan {
        order: None,
        stages: vec![Stage {
            dp: 2,
            gpus: vec![0, 1],
            ..Stage::single(0, 0, 0)
        }],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(3),
            micro_batch: None,
        },
    };
    let ev = evaluate(&inst, &plan).unwrap();
    assert_close(ev.iteration_ms.unwrap(), 3.0 * 6.0 + 1.0);
    assert_close(ev.throughput, 24.0 / 19.0 * 1e3);
    // Both GPUs busy 3 x 6 + 1 of 19.
    assert_close(ev.bubble, 0.0);
}

// ------------------------------------------------------------------------------------------------
// Asynchronous schedules

#[test]
fn async_default_period_is_the_largest_load() {
    let inst = two_stage();
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
    assert_close(ev.period_ms.unwrap(), 5.0);
    assert_eq!(ev.iteration_ms, None);
    assert_eq!(ev.valid_schedule, Some(true));
    // Loads 5, 2, 4 at T = 5: groups 3, 2, 1.
    assert_eq!(ev.in_flight, vec![3, 1]);
    // Two weight versions + gradient: 3 W.
    assert_all_close(
        &ev.peak_memory,
        &[300.0 + 3.0 * 5.0 + 20.0, 600.0 + 10.0 + 20.0],
    );
    assert_close(ev.throughput, 8.0 / 5.0 * 1e3);
    assert_close(ev.bubble, 1.0 - 9.0 / 10.0);
}

#[test]
fn async_period_given() {
    let inst = two_stage();
    for (t, g) in [(6.0, vec![2, 1]), (7.0, vec![2, 1]), (11.0, vec![1, 1])] {
        let ev = eval(
            &inst,
            &[0, 1],
            Schedule::Async {
                period: Some(t),
                pattern: None,
            },
        );
        assert_eq!(ev.in_flight, g, "T = {t}");
        assert_close(ev.period_ms.unwrap(), t);
        assert_close(ev.throughput, 8.0 / t * 1e3);
        assert_close(ev.bubble, 1.0 - 9.0 / (2.0 * t));
        assert_close(ev.peak_memory[0], 300.0 + g[0] as f64 * 5.0 + 20.0);
    }
}

#[test]
fn async_does_not_fit_in_memory() {
    let mut inst = two_stage();
    inst.cluster.memory = 600.0;
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
    assert_eq!(ev.valid_schedule, Some(true));
    assert!(!ev.fits);
    assert!(
        ev.notes.iter().any(|n| n.contains("GPU 1")),
        "{:?}",
        ev.notes
    );
}

// ------------------------------------------------------------------------------------------------
// Intra-stage strategies and checkpointing

/// One layer: F 4, B 8, W 1000, output 64, input 32; 4 GPUs at 1 MB/s.
fn one_layer() -> Instance {
    instance(&[(4.0, 8.0, 1000.0, 64.0, None)], 32.0, 4, 1e6)
}

fn single_stage(dp: u32, tp: u32, sdp: bool) -> Plan {
    Plan {
        order: None,
        stages: vec![Stage {
            first: 0,
            last: 0,
            gpus: (0..dp * tp).collect(),
            dp,
            tp,
            sdp,
            checkpoint: Vec::new(),
            ..Stage::single(0, 0, 0)
        }],
        schedule: Schedule::Async {
            period: None,
            pattern: None,
        },
    }
}

#[test]
fn data_parallel_divides_activations_not_states() {
    let ev = evaluate(&one_layer(), &single_stage(2, 1, false)).unwrap();
    // 3 W per GPU, input / dp, one micro-batch in flight.
    assert_all_close(&ev.peak_memory, &[3016.0, 3016.0, 0.0, 0.0]);
    // F 4 / 2, B 8 / 2 + all-reduce 2 (1/2) 1000 B / 1 MB/s = 1 ms.
    assert_close(ev.period_ms.unwrap(), 7.0);
    assert_close(ev.throughput, 8.0 / 7.0 * 1e3);
    assert_eq!(ev.gpus_used, 2);
    assert_close(ev.bubble, 0.0);
}

#[test]
fn sharded_data_parallel_divides_states() {
    let ev = evaluate(&one_layer(), &single_stage(2, 1, true)).unwrap();
    assert_all_close(&ev.peak_memory, &[1516.0, 1516.0, 0.0, 0.0]);
    // Reduce-scatter + two all-gathers: 1.5 x the all-reduce.
    assert_close(ev.period_ms.unwrap(), 7.5);
}

/// A Ulysses stage of `tp` GPUs per replica.
fn ulysses_stage(dp: u32, tp: u32, sdp: bool) -> Plan {
    let mut plan = single_stage(dp, tp, sdp);
    plan.stages[0].ulysses = true;
    plan
}

#[test]
fn ulysses_keeps_states_whole_and_shares_gradients_over_the_group() {
    let ev = evaluate(&one_layer(), &ulysses_stage(1, 2, false)).unwrap();
    // Whole states (3 W), activations / 2 as under tp.
    assert_all_close(&ev.peak_memory, &[3016.0, 3016.0, 0.0, 0.0]);
    // Each pass: work / 2 + all-to-all of the 64 B output over 2 GPUs (1/2 x 64 B at 1 MB/s =
    // 0.032 ms); the gradients all-reduced over both GPUs (1 ms).
    assert_close(ev.period_ms.unwrap(), 2.0 + 4.0 + 2.0 * 0.032 + 1.0);
    // Under sdp the states are sharded over the whole group, the reduction 1.5 x.
    let ev = evaluate(&one_layer(), &ulysses_stage(1, 2, true)).unwrap();
    assert_all_close(&ev.peak_memory, &[1516.0, 1516.0, 0.0, 0.0]);
    assert_close(ev.period_ms.unwrap(), 2.0 + 4.0 + 2.0 * 0.032 + 1.5);
}

#[test]
fn ulysses_needs_a_tp_group() {
    let err = evaluate(&one_layer(), &ulysses_stage(2, 1, false))
        .unwrap_err()
        .to_string();
    assert!(err.contains("plan.stages[0].ulysses"), "{err}");
    assert!(err.contains("tp of at least 2"), "{err}");
}

#[test]
fn tensor_parallel_divides_states_and_activations() {
    let ev = evaluate(&one_layer(), &single_stage(1, 2, false)).unwrap();
    assert_all_close(&ev.peak_memory, &[1516.0, 1516.0, 0.0, 0.0]);
    // Each pass: work / 2 + all-reduce of the 64 B output over 2 GPUs (0.064 ms).
    assert_close(ev.period_ms.unwrap(), 2.0 + 4.0 + 2.0 * 0.064);
    assert_all_close(&ev.stage_time, &[6.128]);
    // dp 2 x tp 2 on four GPUs: states / tp, activations / (dp tp); with sdp states / dp too.
    let ev = evaluate(&one_layer(), &single_stage(2, 2, false)).unwrap();
    assert_all_close(&ev.peak_memory, &[1508.0; 4]);
    let ev = evaluate(&one_layer(), &single_stage(2, 2, true)).unwrap();
    assert_all_close(&ev.peak_memory, &[758.0; 4]);
}

#[test]
fn data_parallel_stage_divides_its_buffers() {
    // Stage 0 on GPUs 0-1 (dp 2), stage 1 on GPU 2. Period = sum of loads: one group.
    let inst = instance(
        &[(2.0, 2.0, 100.0, 40.0, None), (1.0, 1.0, 100.0, 8.0, None)],
        16.0,
        3,
        1e4,
    );
    let plan = Plan {
        order: None,
        stages: vec![
            Stage {
                dp: 2,
                gpus: vec![0, 1],
                ..Stage::single(0, 0, 0)
            },
            Stage::single(1, 1, 2),
        ],
        schedule: Schedule::Async {
            period: Some(100.0),
            pattern: None,
        },
    };
    let ev = evaluate(&inst, &plan).unwrap();
    assert_eq!(ev.in_flight, vec![1, 1]);
    // GPU 0/1: 3 W + 16 / 2 + 2 x 40 / 2; GPU 2: 3 W + 40 + 2 x 40.
    assert_all_close(&ev.peak_memory, &[348.0, 348.0, 420.0]);
}

#[test]
fn checkpointing_keeps_the_input_and_one_transient() {
    // l0 keeps 100 B for its backward (input 8); l1 keeps its input 4. The link: 4 B at 4 kB/s =
    // 1 ms each way.
    let inst = instance(
        &[
            (2.0, 3.0, 0.0, 4.0, Some(100.0)),
            (1.0, 1.0, 0.0, 4.0, None),
        ],
        8.0,
        2,
        4e3,
    );
    let plain = eval(
        &inst,
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
    // Loads 5, 2, 2 at T = 5: stage 0 in group 2.
    assert_eq!(plain.in_flight, vec![2, 1]);
    assert_all_close(&plain.peak_memory, &[2.0 * 100.0 + 8.0, 4.0 + 8.0]);
    let mut plan = Plan::contiguous(
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
    plan.stages[0].checkpoint = vec![0];
    let ck = evaluate(&inst, &plan).unwrap();
    // The backward recomputes the forward: loads 7, 2, 2 at T = 7, still group 2.
    assert_all_close(&ck.stage_time, &[7.0, 2.0]);
    assert_close(ck.period_ms.unwrap(), 7.0);
    assert_eq!(ck.in_flight, vec![2, 1]);
    // 2 inputs of 8 B kept + one re-materialized layer (100 - 8) + buffers.
    assert_all_close(&ck.peak_memory, &[2.0 * 8.0 + 92.0 + 8.0, 4.0 + 8.0]);
    // Synchronous 1F1B, m = 2: stage 0 keeps 2.
    plan.schedule = Schedule::OneFOneB {
        micro_batches: Some(2),
        micro_batch: None,
    };
    let ev = evaluate(&inst, &plan).unwrap();
    assert_eq!(ev.in_flight, vec![2, 1]);
    assert_all_close(&ev.peak_memory, &[2.0 * 8.0 + 92.0 + 8.0, 4.0 + 8.0]);
    assert_close(ev.iteration_ms.unwrap(), 7.0 + 11.0);
}

#[test]
fn a_plan_that_chooses_its_micro_batch_is_judged_at_it() {
    // two_stage is profiled at 8 samples; a plan training 16 per micro-batch doubles every time
    // and activation (loads 10, 4, 8 at m = 2) and is judged as the instance that trains 16.
    let inst = two_stage();
    let mut plan = Plan::contiguous(
        &[0, 1],
        Schedule::OneFOneB {
            micro_batches: Some(2),
            micro_batch: Some(16),
        },
    );
    let ev = evaluate(&inst, &plan).unwrap();
    assert_close(ev.iteration_ms.unwrap(), 10.0 + (10.0 + 4.0 + 8.0));
    assert_close(ev.throughput, 2.0 * 16.0 / (32.0 / 1000.0));
    assert!(ev.notes[0].contains("micro-batch of 16"), "{:?}", ev.notes);
    plan.schedule = Schedule::OneFOneB {
        micro_batches: Some(2),
        micro_batch: None,
    };
    let mut same = evaluate(&inst.with_micro_batch(16), &plan).unwrap();
    same.notes.insert(0, ev.notes[0].clone());
    assert_eq!(ev, same);
    // The instance's own size: no note, the same figures as without the field.
    plan.schedule = Schedule::OneFOneB {
        micro_batches: Some(2),
        micro_batch: Some(8),
    };
    let own = evaluate(&inst, &plan).unwrap();
    plan.schedule = Schedule::OneFOneB {
        micro_batches: Some(2),
        micro_batch: None,
    };
    assert_eq!(own, evaluate(&inst, &plan).unwrap());
}

// ------------------------------------------------------------------------------------------------
// Malformed plans

fn field_of(inst: &Instance, plan: &Plan) -> String {
    match evaluate(inst, plan) {
        Err(InputError::Field { field, .. }) => field,
        other => panic!("expected a field error, got {other:?}"),
    }
}

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
            field_of(
                &inst,
                &with(Schedule::Async {
                    period: Some(t),
                    pattern: None
                })
            ),
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
                schedule: Schedule::Async {
                    period: None,
                    pattern: None
                }
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

// ------------------------------------------------------------------------------------------------
// Degenerate chains

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
    let implied = Plan::contiguous(
        &[1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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
    let ev = eval(
        &inst,
        &[1],
        Schedule::Async {
            period: Some(2.0),
            pattern: None,
        },
    );
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
    let ev = eval(
        &inst,
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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
    let ev = eval(
        &inst,
        &[0],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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
    let ev = eval(
        &inst,
        &[0],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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
    let plan = Plan::contiguous(
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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
    let plan = Plan::contiguous(
        &[1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
    let (field, message) = field_and_message(evaluate(&inst, &plan));
    assert_eq!(field, "model");
    assert!(message.contains("overflows"), "{message}");
    // Times too: a forward of 1e308 ms on each of two layers.
    let inst = instance(&[(1e308, 1.0, 1.0, 1.0, None); 2], 1.0, 1, 1e4);
    for schedule in [
        plan.schedule.clone(),
        Schedule::Async {
            period: Some(5.0),
            pattern: None,
        },
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
    let plan = Plan::contiguous(
        &[0, 1],
        Schedule::Async {
            period: None,
            pattern: None,
        },
    );
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

// ------------------------------------------------------------------------------------------------
// The worked example of docs/evaluator.md (keep the two in sync)

const DOC_INSTANCE: &str = r#"{
  "format": "pipeplan/instance@1",
  "name": "doc-example",
  "model": {
    "batch": 8,
    "input": "10 MB",
    "layers": [
      {"name": "l0", "forward": 2, "backward": 4, "weights": "100 MB", "output": "20 MB"},
      {"name": "l1", "forward": 3, "backward": 6, "weights": "200 MB", "output": "10 MB",
       "saved": "60 MB"},
      {"name": "l2", "forward": 1, "backward": 2, "weights": "300 MB", "output": "10 MB"},
      {"name": "l3", "forward": 2, "backward": 3, "weights": "50 MB", "output": "1 MB"}
    ]
  },
  "cluster": {"gpus": 2, "memory": "1.4 GB", "bandwidth": {"intra_node": "10 GB/s"}},
  "training": {"micro_batches": 4, "optimizer_state_factor": 1}
}"#;

fn doc_plan(schedule: &str, checkpoint: bool) -> Plan {
    let ck = if checkpoint {
        r#", "checkpoint": [1]"#
    } else {
        ""
    };
    Plan::from_json(&format!(
        r#"{{"stages": [{{"first": 0, "last": 1, "gpus": [0]{ck}}},
                        {{"first": 2, "last": 3, "gpus": [1]}}],
            "schedule": {schedule}}}"#
    ))
    .unwrap()
}

#[test]
fn worked_example_of_the_docs() {
    let inst = Instance::from_json(DOC_INSTANCE).unwrap();
    let run = |schedule: &str, ck: bool| {
        let ev = evaluate(&inst, &doc_plan(schedule, ck)).unwrap();
        assert_sound(&ev);
        if std::env::var_os("PIPEPLAN_PRINT").is_some() {
            println!(
                "{schedule} ck={ck}\n{}",
                serde_json::to_string_pretty(&ev).unwrap()
            );
        }
        ev
    };
    let mb = 1e6;
    // Async, implied 1F1B* at the least period: loads 15 (stage 0), 2 (link), 8 (stage 1).
    let a = run(r#"{"kind": "async"}"#, false);
    assert_close(a.period_ms.unwrap(), 15.0);
    assert_eq!(a.in_flight, vec![2, 1]);
    // 4 W (2 versions + gradient + momentum) + g x saved + 2 x cut.
    assert_all_close(
        &a.peak_memory,
        &[
            (1200.0 + 2.0 * 70.0 + 20.0) * mb,
            (1400.0 + 20.0 + 20.0) * mb,
        ],
    );
    assert!(!a.fits && a.notes.len() == 1, "{:?}", a.notes);
    assert_close(a.throughput, 8.0 / 15.0 * 1e3);
    assert_close(a.bubble, 1.0 - 23.0 / 30.0);
    if std::env::var_os("PIPEPLAN_PRINT").is_some() {
        let p = one_f_one_b_star_pattern(&inst, &doc_plan(r#"{"kind": "async"}"#, false), None);
        println!("{}", serde_json::to_string_pretty(&p.unwrap()).unwrap());
    }
    // Async at T = 25: one group, one micro-batch each.
    let a25 = run(r#"{"kind": "async", "period": 25}"#, false);
    assert_eq!(a25.in_flight, vec![1, 1]);
    assert_close(a25.peak_memory[0], (1200.0 + 70.0 + 20.0) * mb);
    // Synchronous 1F1B, m = 4: (m - 1) x 15 + 25.
    let s = run(r#"{"kind": "1f1b"}"#, false);
    assert_close(s.iteration_ms.unwrap(), 70.0);
    assert_eq!(s.in_flight, vec![2, 1]);
    assert_all_close(
        &s.peak_memory,
        &[(900.0 + 140.0 + 20.0) * mb, (1050.0 + 20.0 + 20.0) * mb],
    );
    assert!(s.fits);
    assert_close(s.throughput, 32.0 / 70.0 * 1e3);
    assert_close(s.bubble, 1.0 - 92.0 / 140.0);
    // GPipe, m = 4: forwards 3 x 5 + 9, backwards 3 x 10 + 16.
    let g = run(r#"{"kind": "gpipe"}"#, false);
    assert_close(g.iteration_ms.unwrap(), 70.0);
    assert_eq!(g.in_flight, vec![4, 4]);
    assert_all_close(
        &g.peak_memory,
        &[(900.0 + 280.0 + 20.0) * mb, (1050.0 + 80.0 + 20.0) * mb],
    );
    // 1F1B with l1 checkpointed: stage 0 keeps 10 + 20 MB per micro-batch, re-materializes
    // 60 - 20 MB once, and its backward grows by l1's forward (3 ms).
    let c = run(r#"{"kind": "1f1b"}"#, true);
    assert_all_close(&c.stage_time, &[18.0, 8.0]);
    assert_close(c.iteration_ms.unwrap(), 3.0 * 18.0 + 28.0);
    assert_close(c.peak_memory[0], (900.0 + 2.0 * 30.0 + 40.0 + 20.0) * mb);
}

// ------------------------------------------------------------------------------------------------
// Pipeline positions: neighbouring stages on one device group

fn stage(first: usize, gpus: &[u32], dp: u32, checkpoint: Vec<usize>) -> Stage {
    Stage {
        first,
        last: first,
        gpus: gpus.to_vec(),
        dp,
        tp: 1,
        sdp: false,
        checkpoint,
        ..Stage::single(first, first, 0)
    }
}

#[test]
fn neighbouring_stages_on_one_group_form_one_pipeline_position() {
    // No weights and no outputs: no all-reduce, no transfer; only compute.
    let layers = [
        (1.0, 2.0, 0.0, 0.0, None),
        (3.0, 4.0, 0.0, 0.0, None),
        (5.0, 6.0, 0.0, 0.0, None),
    ];
    let inst = instance(&layers, 0.0, 4, 1e6);
    let plan = Plan {
        order: None,
        // l0 and l1 both on GPUs {0,1} (l1 checkpointed: another strategy), l2 on {2,3}.
        stages: vec![
            stage(0, &[0, 1], 2, vec![]),
            stage(1, &[1, 0], 2, vec![1]),
            stage(2, &[2, 3], 2, vec![]),
        ],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
    };
    assert_eq!(plan.positions(), Some(vec![0, 0, 1]));
    let ev = evaluate(&inst, &plan).unwrap();
    assert_sound(&ev);
    // Position 0: (1 + 2) / 2 + (3 + 4 + 3) / 2 = 6.5 ms; position 1: (5 + 6) / 2 = 5.5 ms.
    assert_close(ev.iteration_ms.unwrap(), 3.0 * 6.5 + 6.5 + 5.5);
    assert_eq!(ev.in_flight, vec![2, 2, 1]);
}

#[test]
fn a_gpu_in_two_pipeline_positions_is_an_error_for_synchronous_schedules() {
    let layers = [(1.0, 2.0, 0.0, 0.0, None); 3];
    let inst = instance(&layers, 0.0, 2, 1e6);
    let plan = Plan {
        order: None,
        stages: vec![
            stage(0, &[0], 1, vec![]),
            stage(1, &[1], 1, vec![]),
            stage(2, &[0], 1, vec![]),
        ],
        schedule: Schedule::Gpipe {
            micro_batches: None,
            micro_batch: None,
        },
    };
    assert_eq!(plan.positions(), None);
    assert_eq!(field_of(&inst, &plan), "plan.stages");
}
