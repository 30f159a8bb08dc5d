//! Pipeline positions: neighbouring stages on one device group.

use super::*;

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
