//! Intra-stage strategies and checkpointing: what dp, tp, ZeRO and Ulysses divide, what a
//! checkpointed stage keeps, a plan that chooses its micro-batch.

use super::*;
use pipeplan_formulations::evaluate::explain::explain;
use pipeplan_formulations::units::fmt_ms;

fn one_layer() -> Instance {
    instance(&[(4.0, 8.0, 1000.0, 64.0, None)], 32.0, 4, 1e6)
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

#[test]
fn each_zero_stage_divides_its_parts_of_the_states() {
    // Adam's two moments: 2 weight versions (async) + 1 gradient + 2 = 5 W per GPU replicated.
    let mut inst = one_layer();
    inst.training.optimizer_state_factor = 2.0;
    let at = |zero: u8| {
        let mut plan = single_stage(2, 1, false);
        plan.stages[0].set_zero_stage(zero);
        let ev = evaluate(&inst, &plan).unwrap();
        let parts = memory_breakdown(&inst, &plan, &ev);
        let p = &parts[0];
        (ev, [p.weights, p.gradients, p.optimizer])
    };
    // (states per GPU, its parts, period): ZeRO-1 halves the moments, ZeRO-2 the gradient too,
    // ZeRO-3 (sdp) the weights too; only ZeRO-3 gathers the weights once more (1.5 x; every
    // micro-batch is a weight update under async).
    for (zero, states, parts, period) in [
        (0, 5000.0, [2000.0, 1000.0, 2000.0], 7.0),
        (1, 4000.0, [2000.0, 1000.0, 1000.0], 7.0),
        (2, 3500.0, [2000.0, 500.0, 1000.0], 7.0),
        (3, 2500.0, [1000.0, 500.0, 1000.0], 7.5),
    ] {
        let (ev, got) = at(zero);
        assert_all_close(&ev.peak_memory, &[states + 16.0, states + 16.0, 0.0, 0.0]);
        assert_all_close(&got, &parts);
        assert_close(ev.period_ms.unwrap(), period);
    }
    // ZeRO-3 accumulating whole gradients (FSDP's no_sync): the gradient is not divided, the
    // weights and moments are; over one micro-batch, the same communication.
    let mut plan = single_stage(2, 1, true);
    plan.stages[0].whole_gradients = true;
    let ev = evaluate(&inst, &plan).unwrap();
    let parts = memory_breakdown(&inst, &plan, &ev);
    assert_all_close(
        &[parts[0].weights, parts[0].gradients, parts[0].optimizer],
        &[1000.0, 1000.0, 1000.0],
    );
    assert_all_close(&ev.peak_memory, &[3016.0, 3016.0, 0.0, 0.0]);
    assert_close(ev.period_ms.unwrap(), 7.5);
    // On one replica nothing is divided.
    let mut plan = single_stage(1, 1, false);
    plan.stages[0].zero = 2;
    let ev = evaluate(&inst, &plan).unwrap();
    assert_all_close(&ev.peak_memory, &[5032.0, 0.0, 0.0, 0.0]);
}

#[test]
fn zero_communicates_at_every_micro_batch_where_it_divides_gradients_or_weights() {
    // One stage on 2 replicas, 1F1B over m micro-batches: F 2 and B 4 per micro-batch, one
    // all-reduce of the 1000 B of weights R = 1 ms, so a reduce-scatter or an all-gather 0.5 ms.
    let inst = one_layer();
    let at = |zero: u8, whole: bool, m: u32| {
        let mut plan = single_stage(2, 1, zero == 3);
        plan.stages[0].set_zero_stage(zero);
        plan.stages[0].whole_gradients = whole;
        plan.schedule = Schedule::OneFOneB {
            micro_batches: Some(m),
            micro_batch: None,
        };
        let ev = evaluate(&inst, &plan).unwrap();
        let stage = explain(&inst, &plan, &ev).stages.remove(0);
        // Explain names the per-micro-batch part, included in the stage's compute.
        let zero_part = stage.compute_ms - 6.0;
        let named = stage.findings.iter().any(|f| {
            f.contains(&format!(
                "of which ZeRO's gathers and reductions {}",
                fmt_ms(zero_part)
            ))
        });
        assert_eq!(named, zero_part > 0.0, "{:?}", stage.findings);
        (ev.iteration_ms.unwrap(), ev.grad_sync_ms.unwrap())
    };
    // (ZeRO stage, whole gradients, per micro-batch F + B, once per update).
    for (zero, whole, per_mb, update) in [
        // The gradients accumulate whole, one all-reduce (ZeRO-1: reduce-scatter + all-gather).
        (0, false, 6.0, 1.0),
        (1, false, 6.0, 1.0),
        // A reduce-scatter per micro-batch, the all-gather of the updated weights once.
        (2, false, 6.5, 0.5),
        // Gather for the forward and again for the backward, reduce-scatter, per micro-batch.
        (3, false, 7.5, 0.0),
        // FSDP's no_sync: both gathers per micro-batch, one reduce-scatter at the end.
        (3, true, 7.0, 0.5),
    ] {
        for m in [1, 4] {
            let (iteration, sync) = at(zero, whole, m);
            assert_close(sync, update);
            assert_close(iteration, m as f64 * per_mb + update);
        }
        // One micro-batch moves one all-reduce's volume, ZeRO-3 half as much again.
        let (one, _) = at(zero, whole, 1);
        assert_close(one, 6.0 + if zero == 3 { 1.5 } else { 1.0 });
    }
}

#[test]
fn whole_gradients_without_sdp_are_refused() {
    let mut plan = single_stage(2, 1, false);
    plan.stages[0].zero = 2;
    plan.stages[0].whole_gradients = true;
    let err = evaluate(&one_layer(), &plan).unwrap_err().to_string();
    assert!(err.contains("plan.stages[0].whole_gradients"), "{err}");
    assert!(err.contains("only beside `sdp: true`"), "{err}");
}

#[test]
fn zero_stages_beyond_two_or_beside_sdp_are_refused() {
    for (zero, sdp, says) in [
        (3, false, "expected 0, 1 or 2"),
        (1, true, "with `sdp: true`"),
    ] {
        let mut plan = single_stage(2, 1, sdp);
        plan.stages[0].zero = zero;
        let err = evaluate(&one_layer(), &plan).unwrap_err().to_string();
        assert!(err.contains("plan.stages[0].zero"), "{err}");
        assert!(err.contains(says), "{err}");
    }
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
        schedule: Schedule::one_f_one_b_star(Some(100.0)),
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
    let plain = eval(&inst, &[0, 1], Schedule::one_f_one_b_star(None));
    // Loads 5, 2, 2 at T = 5: stage 0 in group 2.
    assert_eq!(plain.in_flight, vec![2, 1]);
    assert_all_close(&plain.peak_memory, &[2.0 * 100.0 + 8.0, 4.0 + 8.0]);
    let mut plan = Plan::contiguous(&[0, 1], Schedule::one_f_one_b_star(None));
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
