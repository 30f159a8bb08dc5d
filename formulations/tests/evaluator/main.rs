//! The neutral evaluator on hand-computed cases (docs/evaluator.md): synchronous 1F1B and GPipe
//! iteration times and in-flight counts, asynchronous periods from 1F1B*, memory under dp / tp /
//! sdp and checkpointing, throughput, bubble fraction, malformed plans, degenerate inputs (all
//! times zero, overflow, unvalidated instances: never a NaN or an infinity in an evaluation), and
//! the worked example of `docs/evaluator.md`.

mod degenerate;
mod malformed;
mod positions;
mod schedules;
mod strategies;
mod worked_example;

use pipeplan_formulations::evaluate::breakdown::memory_breakdown;
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

/// The field the evaluator's error on `plan` names.
fn field_of(inst: &Instance, plan: &Plan) -> String {
    match evaluate(inst, plan) {
        Err(InputError::Field { field, .. }) => field,
        other => panic!("expected a field error, got {other:?}"),
    }
}

/// Layer 0 as one asynchronous stage on `dp x tp` GPUs.
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
        schedule: Schedule::one_f_one_b_star(None),
    }
}
