//! Synchronous schedules (1F1B and GPipe: the iteration, micro-batches in flight, the gradient
//! synchronisation) and asynchronous ones (the period, memory that does not fit).

use super::*;

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

#[test]
fn async_default_period_is_the_largest_load() {
    let inst = two_stage();
    let ev = eval(&inst, &[0, 1], Schedule::one_f_one_b_star(None));
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
        let ev = eval(&inst, &[0, 1], Schedule::one_f_one_b_star(Some(t)));
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
    let ev = eval(&inst, &[0, 1], Schedule::one_f_one_b_star(None));
    assert_eq!(ev.valid_schedule, Some(true));
    assert!(!ev.fits);
    assert!(
        ev.notes.iter().any(|n| n.contains("GPU 1")),
        "{:?}",
        ev.notes
    );
}
