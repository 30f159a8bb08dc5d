//! Bad input gets a precise error: GPU count, options, memory that never fits, deadline.

use super::*;

fn small() -> Instance {
    build(
        &[
            (1.0, 2.0, 1e6, 1e6),
            (2.0, 3.0, 2e6, 1e6),
            (1.0, 1.0, 1e6, 1e6),
        ],
        1e6,
        3,
        1e9,
        1e10,
    )
}

#[test]
fn gpu_count_and_options_are_checked() {
    let inst = small();
    let field = |e: SolveError| match e {
        SolveError::Input(e) => e.field_path().unwrap_or_default().to_string(),
        e => panic!("not an input error: {e}"),
    };
    let d = DpOptions::default();
    assert_eq!(
        field(madpipe_dp(&inst, 0, &d, None, &Deadline::none()).unwrap_err()),
        "gpus"
    );
    let e = madpipe_dp(&inst, 4, &d, None, &Deadline::none()).unwrap_err();
    assert!(e.to_string().contains("cluster has 3"), "{e}");
    let bad = DpOptions { k_rounds: 0, ..d };
    assert_eq!(
        field(madpipe_dp(&inst, 3, &bad, None, &Deadline::none()).unwrap_err()),
        "--set rounds"
    );
    let bad = DpOptions { grid_v: 1, ..d };
    assert_eq!(
        field(madpipe_dp(&inst, 3, &bad, None, &Deadline::none()).unwrap_err()),
        "--set grid_v"
    );
    let e = madpipe_dp_at(&inst, 3, 0.0, &d, &Deadline::none()).unwrap_err();
    assert_eq!(field(e), "t_hat");
    // One GPU: everything on the special GPU, as one stage (the paper's base case).
    let r = madpipe_dp(&inst, 1, &d, None, &Deadline::none()).unwrap();
    assert_eq!(r.detail.len(), 1);
    assert!(r.detail[0].special && r.detail[0].gpu == 0);
}

#[test]
fn memory_that_never_fits_names_the_binding_constraint() {
    // Layer 1's model states alone (3 x 400 MB) exceed 1 GB.
    let inst = build(
        &[
            (1.0, 2.0, 1e6, 1e6),
            (2.0, 3.0, 4e8, 1e6),
            (1.0, 1.0, 1e6, 1e6),
        ],
        1e6,
        3,
        1e9,
        1e10,
    );
    let msg = madpipe_dp(&inst, 3, &DpOptions::default(), None, &Deadline::none())
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("no feasible plan"), "{msg}");
    assert!(
        msg.contains("layer 1 (l1)") && msg.contains("model states alone"),
        "{msg}"
    );
    // Each layer's states (600 MB) fit, but no two do on one GPU, and a stage on the normal GPU
    // needs its 600 MB input too (the special GPU, charged g - 1 = 0 micro-batches at the
    // largest T^, cannot take two layers nor one with its 1.2 GB of buffers).
    let inst = build(
        &[
            (1.0, 2.0, 2e8, 6e8),
            (2.0, 3.0, 2e8, 6e8),
            (1.0, 1.0, 2e8, 6e8),
        ],
        6e8,
        2,
        1e9,
        1e10,
    );
    let msg = madpipe_dp(&inst, 2, &DpOptions::default(), None, &Deadline::none())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("no allocation of the 3 layers on 2 GPUs"),
        "{msg}"
    );
    assert!(msg.contains("needs") && msg.contains("GPUs have"), "{msg}");
}

#[test]
fn a_passed_deadline_is_a_time_limit() {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib");
    let e = madpipe_dp(
        &inst,
        8,
        &DpOptions::default(),
        None,
        &Deadline::after(Some(std::time::Duration::ZERO)),
    )
    .unwrap_err();
    assert!(matches!(e, SolveError::TimeLimit(_)), "{e}");
    let e = madpipe_dp_at(
        &inst,
        8,
        100.0,
        &DpOptions::default(),
        &Deadline::after(Some(std::time::Duration::ZERO)),
    );
    assert!(matches!(e, Err(SolveError::TimeLimit(_))));
}
