//! Synchronous timelines (what `trace` writes and `plot` draws) against the evaluator's closed
//! form `(m - 1) max + sum + sync` (`docs/evaluator.md`, "Timelines").

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::testing::chain;
use pipeplan_formulations::timeline::{timeline, EventKind, Timeline, Track};
use pipeplan_formulations::Instance;

/// One stage per layer range of `bounds` (inclusive), each on `dp` data-parallel replicas of its
/// own GPUs, under 1F1B with `m` micro-batches.
fn one_f_one_b(bounds: &[(usize, usize)], dp: u32, m: u32) -> Plan {
    let stages = bounds
        .iter()
        .enumerate()
        .map(|(s, &(first, last))| Stage {
            gpus: (s as u32 * dp..(s as u32 + 1) * dp).collect(),
            dp,
            ..Stage::single(first, last, 0)
        })
        .collect();
    Plan {
        order: None,
        stages,
        schedule: Schedule::OneFOneB {
            micro_batches: Some(m),
            micro_batch: None,
        },
    }
}

/// `times` forward (ms) per layer, backward twice that; `output` bytes between layers.
fn layers(times: &[f64], gpus: u32, output: f64) -> Instance {
    let mut inst = chain(times, gpus);
    for l in &mut inst.model.layers {
        l.output = output;
    }
    inst.validate().unwrap();
    inst
}

/// The simulated end and the evaluator's closed form.
fn ends(inst: &Instance, plan: &Plan) -> (Timeline, f64) {
    let closed = evaluate(inst, plan).unwrap().iteration_ms.unwrap();
    (timeline(inst, plan, 1).unwrap(), closed)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn a_synchronous_iteration_ends_with_each_groups_gradient_synchronisation() {
    let inst = layers(&[1.0; 4], 4, 0.0);
    let plan = one_f_one_b(&[(0, 1), (2, 3)], 2, 4);
    let (t, closed) = ends(&inst, &plan);
    let syncs: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::GradSync)
        .collect();
    assert_eq!(syncs.len(), 2, "one per device group: {syncs:?}");
    for s in &syncs {
        assert_eq!(s.micro_batch, None);
        assert!(s.end > s.start, "{s:?}");
        assert_eq!(s.track, Track::Gpus(plan.stages[s.stage].gpus.clone()));
        let last_backward = t
            .events
            .iter()
            .filter(|e| e.stage == s.stage && e.kind == EventKind::Backward)
            .map(|e| e.end)
            .fold(0.0, f64::max);
        assert!(close(s.start, last_backward), "{s:?} vs {last_backward}");
    }
    // Balanced stages and no transfer: the closed form, which ends with the first stage's sync.
    assert!(close(t.end, closed), "{} vs {closed}", t.end);
    let first = syncs.iter().find(|s| s.stage == 0).unwrap();
    assert!(close(first.end, t.end));

    // Without replicas there is nothing to synchronise.
    let plan = one_f_one_b(&[(0, 1), (2, 3)], 1, 4);
    let (t, closed) = ends(&inst, &plan);
    assert!(t.events.iter().all(|e| e.kind != EventKind::GradSync));
    assert!(close(t.end, closed), "{} vs {closed}", t.end);
}

#[test]
fn transfers_on_the_one_f_one_b_cycle_end_the_iteration_later_than_the_closed_form() {
    // Two stages of 6 ms (F 2, B 4); 1 MB at 10 GB/s = 0.1 ms each way.
    let inst = layers(&[1.0; 4], 2, 1e6);
    for m in [1, 2, 4, 8, 16] {
        let (t, closed) = ends(&inst, &one_f_one_b(&[(0, 1), (2, 3)], 1, m));
        // Stage 0 keeps two micro-batches in flight, so from the third on each waits for the
        // previous round trip: 2 periods >= 2 x 6 + 2 x 0.1, a period of 6.1 ms where the
        // closed form has 6.
        let later = (m as f64 - 2.0).max(0.0) * 0.1;
        assert!(close(t.end, closed + later), "m {m}: {} vs {closed}", t.end);
    }
}

#[test]
fn unbalanced_stages_without_transfers_end_no_later_than_the_closed_form() {
    // Stages of 1, 3 and 2 layers: the closed form paces every micro-batch by the slowest.
    let inst = layers(&[1.0; 6], 3, 0.0);
    for m in [1, 3, 8] {
        let (t, closed) = ends(&inst, &one_f_one_b(&[(0, 0), (1, 3), (4, 5)], 1, m));
        assert!(
            t.end <= closed * (1.0 + 1e-9),
            "m {m}: {} > {closed}",
            t.end
        );
    }
    let (t, closed) = ends(&inst, &one_f_one_b(&[(0, 0), (1, 3), (4, 5)], 1, 8));
    assert!(t.end < closed - 1.0, "{} vs {closed}", t.end);
}

#[test]
fn every_micro_batch_runs_a_forward_a_backward_and_its_transfers() {
    let inst = layers(&[1.0; 4], 2, 1e6);
    let (t, _) = ends(&inst, &one_f_one_b(&[(0, 1), (2, 3)], 1, 3));
    for (kind, want) in [
        (EventKind::Forward, 6),
        (EventKind::Backward, 6),
        (EventKind::SendForward, 3),
        (EventKind::SendBackward, 3),
    ] {
        let n = t.events.iter().filter(|e| e.kind == kind).count();
        assert_eq!(n, want, "{kind:?}");
    }
    for e in t
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SendForward | EventKind::SendBackward))
    {
        assert_eq!(e.track, Track::Link(0, 1), "{e:?}");
        assert_eq!(e.stage, 0, "a transfer belongs to the stage before its cut");
        assert!(close(e.end - e.start, 0.1), "{e:?}");
    }
}
