//! Precise errors: every `ScheduleViolation` variant on hand-made patterns.

use super::brute::brute;
use super::*;

/// Two stages (F 1, B 2 each) on GPUs 0 and 1, a 1 ms link between them.
fn two_stage() -> (Instance, Plan) {
    let layers = [(1.0, 2.0, 10.0, 1.0), (1.0, 2.0, 10.0, 1.0)];
    (
        instance(&layers, 1.0, 2, 1000.0),
        async_plan(&[0, 1], None, None),
    )
}

fn pat(period: f64, ops: &[(OpKind, usize, f64, i64)]) -> Pattern {
    Pattern {
        period,
        ops: ops
            .iter()
            .map(|&(op, stage, start, shift)| PatternOp {
                op,
                stage,
                start,
                shift,
            })
            .collect(),
    }
}

/// Everything in sequence inside one period of 10 ms: F0 0, send 1, F1 2, B1 3, send 5, B0 6.
fn sequential() -> Vec<(OpKind, usize, f64, i64)> {
    use OpKind::*;
    vec![
        (F, 0, 0.0, 0),
        (SendF, 0, 1.0, 0),
        (F, 1, 2.0, 0),
        (B, 1, 3.0, 0),
        (SendB, 0, 5.0, 0),
        (B, 0, 6.0, 0),
    ]
}

fn with(
    mut v: Vec<(OpKind, usize, f64, i64)>,
    k: OpKind,
    s: usize,
    start: f64,
    shift: i64,
) -> Vec<(OpKind, usize, f64, i64)> {
    let e = v.iter_mut().find(|e| e.0 == k && e.1 == s).unwrap();
    e.2 = start;
    e.3 = shift;
    v
}

/// Checks the simulator's verdict, and that the evaluator reports the same violation.
fn expect_violation(p: Pattern, check: impl Fn(&ScheduleViolation) -> bool) {
    let (inst, _) = two_stage();
    let plan = async_plan(&[0, 1], None, Some(p.clone()));
    let err = simulate(&inst, &plan, &p).expect_err("invalid pattern");
    assert!(check(&err), "unexpected violation: {err:?}");
    let ev = evaluate(&inst, &plan).unwrap();
    assert!(!ev.fits);
    assert_eq!(ev.valid_schedule, Some(false));
    assert!(
        ev.notes.iter().any(|n| n.contains(&err.to_string())),
        "notes {:?} lack {err}",
        ev.notes
    );
}

#[test]
fn sequential_pattern_is_valid() {
    let (inst, plan) = two_stage();
    let rep = simulate(&inst, &plan, &pat(10.0, &sequential())).unwrap();
    assert_eq!(rep.in_flight, vec![1, 1]);
    assert_eq!(rep.peak_activations, vec![1.0, 1.0]);
    assert_eq!(rep.busy[&ResourceId::Link(0, 1)], 2.0);
    let ev = evaluate(
        &inst,
        &async_plan(&[0, 1], None, Some(pat(10.0, &sequential()))),
    )
    .unwrap();
    assert!(ev.fits && ev.valid_schedule == Some(true));
    assert_eq!(ev.period_ms, Some(10.0));
}

#[test]
fn missing_operation() {
    let mut v = sequential();
    v.retain(|e| !(e.0 == OpKind::B && e.1 == 1));
    expect_violation(pat(10.0, &v), |e| {
        *e == ScheduleViolation::Missing(op(OpKind::B, 1))
    });
    let mut v = sequential();
    v.retain(|e| e.0 != OpKind::SendB);
    expect_violation(pat(10.0, &v), |e| {
        *e == ScheduleViolation::Missing(op(OpKind::SendB, 0))
    });
}

#[test]
fn duplicate_operation() {
    let mut v = sequential();
    v.push((OpKind::F, 0, 0.5, 1));
    expect_violation(pat(10.0, &v), |e| {
        *e == ScheduleViolation::Duplicate(op(OpKind::F, 0))
    });
}

#[test]
fn unexpected_operation() {
    let mut v = sequential();
    v.push((OpKind::F, 2, 9.0, 0));
    expect_violation(
        pat(10.0, &v),
        |e| matches!(e, ScheduleViolation::Unexpected(id, _) if *id == op(OpKind::F, 2)),
    );
    // A single stage has no cut: a send is not an operation of the plan.
    let layers = [(1.0, 2.0, 10.0, 1.0), (1.0, 2.0, 10.0, 1.0)];
    let inst = instance(&layers, 1.0, 1, 1000.0);
    let plan = async_plan(&[1], None, None);
    use OpKind::*;
    let p = pat(10.0, &[(F, 0, 0.0, 0), (B, 0, 2.0, 0), (SendF, 0, 5.0, 0)]);
    assert!(matches!(
        simulate(&inst, &plan, &p),
        Err(ScheduleViolation::Unexpected(..))
    ));
}

#[test]
fn start_out_of_range() {
    for start in [10.0, 12.5, -1.0, f64::NAN] {
        let v = with(sequential(), OpKind::F, 1, start, 0);
        expect_violation(pat(10.0, &v), |e| {
            matches!(e, ScheduleViolation::StartOutOfRange { op: id, period, .. }
                if *id == op(OpKind::F, 1) && *period == 10.0)
        });
    }
}

#[test]
fn dependency_violated() {
    // F1 starts before the activation has arrived.
    let v = with(sequential(), OpKind::F, 1, 1.5, 0);
    expect_violation(pat(10.0, &v), |e| {
        matches!(e, ScheduleViolation::Dependency { before, after, late }
            if *before == op(OpKind::SendF, 0) && *after == op(OpKind::F, 1) && *late == 0.5)
    });
    // Same start times, but B0 runs on the previous micro-batch: micro-batch 0 reaches it a
    // period before its gradient exists.
    let v = with(sequential(), OpKind::B, 0, 6.0, -1);
    expect_violation(pat(10.0, &v), |e| {
        matches!(e, ScheduleViolation::Dependency { before, after, .. }
            if *before == op(OpKind::SendB, 0) && *after == op(OpKind::B, 0))
    });
    // The last stage's backward before its forward (wrapping into the next period is fine).
    let v = with(sequential(), OpKind::B, 1, 1.0, 0);
    expect_violation(pat(10.0, &v), |e| {
        matches!(e, ScheduleViolation::Dependency { before, after, .. }
            if *before == op(OpKind::F, 1) && *after == op(OpKind::B, 1))
    });
}

#[test]
fn overlap_on_a_gpu() {
    // B0 of the previous micro-batch at 0.5: its dependencies hold but it meets F0 on GPU 0.
    let v = with(sequential(), OpKind::B, 0, 0.5, 1);
    expect_violation(pat(10.0, &v), |e| {
        *e == ScheduleViolation::Overlap {
            resource: ResourceId::Gpu(0),
            a: op(OpKind::F, 0),
            b: op(OpKind::B, 0),
            period: 10.0,
        }
    });
}

#[test]
fn overlap_on_a_link() {
    // The gradient send at 1.5 of the next period meets the activation send [1, 2).
    let v = with(sequential(), OpKind::SendB, 0, 1.5, 1);
    let v = with(v, OpKind::B, 0, 2.5, 1);
    expect_violation(pat(10.0, &v), |e| {
        *e == ScheduleViolation::Overlap {
            resource: ResourceId::Link(0, 1),
            a: op(OpKind::SendF, 0),
            b: op(OpKind::SendB, 0),
            period: 10.0,
        }
    });
}

#[test]
fn overlap_across_the_period_end() {
    use OpKind::*;
    let (inst, plan) = two_stage();
    // B1 at 9 runs over the period end, into [0, 1) of the next period: fine, nothing is there.
    let v = with(sequential(), B, 1, 9.0, 0);
    let v = with(v, SendB, 0, 2.0, 1);
    let v = with(v, B, 0, 3.0, 1);
    let rep = simulate(&inst, &plan, &pat(10.0, &v));
    assert!(rep.is_ok(), "{rep:?}");
    assert!(brute(&inst, &plan, &pat(10.0, &v)).valid);
    // F1 of micro-batch 0 at -0.5: before its input.
    let w = with(v, F, 1, 9.5, -1);
    assert!(matches!(
        simulate(&inst, &plan, &pat(10.0, &w)),
        Err(ScheduleViolation::Dependency { .. })
    ));
    // Period 9: B1 [8, 10) wraps onto F1 [0.5, 1.5) of the next period.
    let v = with(sequential(), SendF, 0, 8.5, 0);
    let v = with(v, F, 1, 0.5, 1);
    let v = with(v, B, 1, 8.0, 1);
    let v = with(v, SendB, 0, 1.0, 2);
    let v = with(v, B, 0, 2.0, 2);
    expect_violation(pat(9.0, &v), |e| {
        *e == ScheduleViolation::Overlap {
            resource: ResourceId::Gpu(1),
            a: op(F, 1),
            b: op(B, 1),
            period: 9.0,
        }
    });
}

#[test]
fn overloaded_resource() {
    // Period 2.5 < the 3 ms load of each GPU; dependencies hold (sequential absolute times).
    use OpKind::*;
    let p = pat(
        2.5,
        &[
            (F, 0, 0.0, 0),
            (SendF, 0, 1.0, 0),
            (F, 1, 2.0, 0),
            (B, 1, 0.5, 1),
            (SendB, 0, 0.0, 2),
            (B, 0, 1.0, 2),
        ],
    );
    expect_violation(p, |e| {
        *e == ScheduleViolation::Overloaded {
            resource: ResourceId::Gpu(0),
            busy: 3.0,
            period: 2.5,
        }
    });
}

#[test]
fn zero_time_operations_occupy_nothing() {
    // A stage whose forward takes no time: in 1F1B* its forward and backward start together.
    let layers = [
        (1.0, 1.0, 1.0, 1.0),
        (0.0, 1.0, 1.0, 0.0),
        (1.0, 1.0, 1.0, 1.0),
    ];
    let inst = instance(&layers, 1.0, 3, BW);
    let plan = async_plan(&[0, 1, 2], None, None);
    for t in [2.0, 2.5, 3.0, 7.0] {
        let p = one_f_one_b_star_pattern(&inst, &plan, Some(t)).unwrap();
        let rep = simulate(&inst, &plan, &p);
        assert!(rep.is_ok(), "T = {t}: {rep:?}\n{p:?}");
        assert_eq!(rep.is_ok(), brute(&inst, &plan, &p).valid);
    }
    // Zero-time sends (empty activations).
    let layers = [(1.0, 2.0, 10.0, 0.0), (1.0, 2.0, 10.0, 0.0)];
    let inst = instance(&layers, 1.0, 2, 1000.0);
    let plan = async_plan(&[0, 1], None, None);
    let v = with(sequential(), OpKind::SendB, 0, 1.0, 1);
    let v = with(v, OpKind::B, 0, 1.0, 1);
    assert!(simulate(&inst, &plan, &pat(10.0, &v)).is_ok());
}

#[test]
fn star_near_a_group_boundary_passes_the_simulator() {
    // Resources: stage 0 (load 1), a link with nothing to send (0), stage 1 (load 2). Periods
    // within a few 1e-9 of a load or of a group's load: whatever 1F1B* builds must pass the
    // simulator, and it must refuse periods the simulator would call overloaded.
    let layers = [(0.5, 0.5, 0.0, 0.0), (1.0, 1.0, 0.0, 0.0)];
    let inst = instance(&layers, 0.0, 2, BW);
    for t in [
        2.0 - 3e-9,
        2.0 + 3e-9,
        3.0 - 3.5e-9,
        3.0 - 1e-12,
        3.0 + 1e-12,
    ] {
        let plan = async_plan(&[0, 1], Some(t), None);
        match one_f_one_b_star_pattern(&inst, &plan, Some(t)) {
            Ok(p) => {
                let rep = simulate(&inst, &plan, &p);
                assert!(rep.is_ok(), "T = {t}: {rep:?}\n{p:?}");
            }
            Err(e) => assert!(t < 2.0, "T = {t}: {e}"),
        }
    }
    // Loads 2, 0, 1, 0, 1: all in one group at T = 4 only.
    let layers = [
        (1.0, 1.0, 0.0, 0.0),
        (0.5, 0.5, 0.0, 0.0),
        (0.5, 0.5, 0.0, 0.0),
    ];
    let inst = instance(&layers, 0.0, 3, BW);
    for t in [3.0 - 3.5e-9, 4.0 - 4.5e-9, 4.0 - 1e-12, 4.0 + 1e-12] {
        let plan = async_plan(&[0, 1, 2], Some(t), None);
        let p = one_f_one_b_star_pattern(&inst, &plan, Some(t)).unwrap();
        let rep = simulate(&inst, &plan, &p);
        assert!(rep.is_ok(), "T = {t}: {rep:?}\n{p:?}");
    }
}

#[test]
fn stages_sharing_a_gpu() {
    // Stages 0 and 2 on GPU 0, stage 1 on GPU 1 (MadPipe's special processor): both stages'
    // activations count on GPU 0, and the two links 0-1 are one resource.
    let layers = [
        (1.0, 1.0, 0.0, 1.0),
        (1.0, 1.0, 0.0, 1.0),
        (1.0, 1.0, 0.0, 1.0),
    ];
    let inst = instance(&layers, 1.0, 2, 1000.0);
    let mut plan = async_plan(&[0, 1, 2], None, None);
    plan.stages[2] = Stage::single(2, 2, 0);
    use OpKind::*;
    // Everything in sequence in a period of 20.
    let seq = [
        (F, 0, 0.0, 0),
        (SendF, 0, 1.0, 0),
        (F, 1, 2.0, 0),
        (SendF, 1, 3.0, 0),
        (F, 2, 4.0, 0),
        (B, 2, 5.0, 0),
        (SendB, 1, 6.0, 0),
        (B, 1, 7.0, 0),
        (SendB, 0, 8.0, 0),
        (B, 0, 9.0, 0),
    ];
    let rep = simulate(&inst, &plan, &pat(20.0, &seq)).unwrap();
    assert_eq!(rep.in_flight, vec![1, 1, 1]);
    // At F2's start stage 0's micro-batch is alive too: 1 + 1 bytes on GPU 0.
    assert_eq!(rep.peak_activations, vec![2.0, 1.0]);
    assert_eq!(rep.busy[&ResourceId::Link(0, 1)], 4.0);
    assert_eq!(rep.busy[&ResourceId::Gpu(0)], 4.0);
    let bf = brute(&inst, &plan, &pat(20.0, &seq));
    assert!(bf.valid);
    assert_eq!(bf.peak, vec![2.0, 1.0]);
    // The two sends meet on the shared link.
    let mut v = seq.to_vec();
    v[3].2 = 1.5;
    v[4].2 = 2.5;
    v[5].2 = 3.5;
    assert!(matches!(
        simulate(&inst, &plan, &pat(20.0, &v)),
        Err(ScheduleViolation::Dependency { .. })
    ));
    // send_b[1] of the previous micro-batch at [1.5, 2.5) meets send_f[0] [1, 2) on the shared
    // link.
    let mut v = seq.to_vec();
    v[6] = (SendB, 1, 1.5, 1);
    v[7] = (B, 1, 10.0, 1);
    v[8] = (SendB, 0, 11.0, 1);
    v[9] = (B, 0, 12.0, 1);
    let err = simulate(&inst, &plan, &pat(20.0, &v)).unwrap_err();
    assert_eq!(
        err,
        ScheduleViolation::Overlap {
            resource: ResourceId::Link(0, 1),
            a: op(SendF, 0),
            b: op(SendB, 1),
            period: 20.0
        }
    );
}
