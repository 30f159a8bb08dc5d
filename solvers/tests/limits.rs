//! Size limits (`docs/limits.md`): an algorithm declines an instance too big for it up front,
//! with a message naming the instance's size and the limit (and the setting that lifts it), and
//! accepts the same instance once that setting allows it, or a smaller one.

use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_solvers::capture::{CAPSLOG_BS, CAPTURE, CAPTURE_EXACT, MCAP_BF};
use pipeplan_solvers::harness::{run, support, unsupported_message};
use pipeplan_solvers::{registry, Algorithm, SolveError, SolveOptions};
use std::time::Duration;

const MIB: f64 = 1024.0 * 1024.0;

/// `layers` layers on `gpus` GPUs of 16 GiB, 8 to a node.
fn chain(layers: usize, gpus: u32) -> Instance {
    let layers = (0..layers)
        .map(|i| Layer::new(format!("l{i}"), 1.0, 2.0, 20.0 * MIB, 4.0 * MIB))
        .collect();
    let mut cluster = Cluster::single_node(gpus, 16.0 * 1024.0 * MIB, 100e9);
    if gpus > 8 {
        cluster.gpus_per_node = Some(8);
        cluster.bandwidth.inter_node = Some(25e9);
    }
    let inst = Instance::new("chain", 8, 4.0 * MIB, layers, cluster);
    inst.validate().unwrap();
    inst
}

fn with(key: &str, value: &str) -> SolveOptions {
    let mut o = SolveOptions::default();
    o.params.insert(key.into(), value.into());
    o
}

/// The refusal of `algo` on `inst` at its defaults, checked to contain every part of `parts`.
#[track_caller]
fn declines(algo: &dyn Algorithm, inst: &Instance, parts: &[&str]) -> String {
    let why = algo
        .supports(inst)
        .expect_err("declined at the default settings")
        .0;
    for p in parts {
        assert!(why.contains(p), "{}: {why:?} lacks {p:?}", algo.name());
    }
    assert!(!why.contains('\n'), "{why:?}");
    // The harness declines it the same way, before solving.
    match support(algo, inst, &SolveOptions::default()) {
        Err(SolveError::Unsupported(u)) => assert_eq!(u.0, why),
        other => panic!("{}: {other:?}", algo.name()),
    }
    why
}

#[test]
fn ilp_balanced_time_declines_models_above_max_binaries() {
    let ilp = registry::by_name("ilp-balanced-time").unwrap();
    // 128 layers x 63 stage boundaries = 8,064 binaries.
    let big = chain(128, 64);
    declines(
        ilp.as_ref(),
        &big,
        &[
            "L = 128 layers",
            "8064 binary variables",
            "limit of 4096",
            "--set max_binaries=8064",
            "balanced-time",
        ],
    );
    assert!(support(ilp.as_ref(), &big, &with("max_binaries", "8064")).is_ok());
    assert!(support(ilp.as_ref(), &big, &with("max_binaries", "8063")).is_err());
    // 64 x 63 = 4,032: under the limit, solved to optimality.
    let small = chain(64, 64);
    assert!(ilp.supports(&small).is_ok());
    let msg = unsupported_message(ilp.as_ref(), &big, &ilp.supports(&big).unwrap_err());
    assert!(msg.starts_with("ilp-balanced-time does not support instance chain: "));
}

#[test]
fn capture_spaces_too_big_for_memory_are_declined_until_merged() {
    // 4,000 layers: CAPTURE's space on 2 nodes of 8 tabulates 7 configs x 4000^2 x 24 bytes.
    let long = chain(4000, 16);
    declines(
        &CAPTURE,
        &long,
        &[
            "4000 layers x 7 stage configs",
            "2.50 GiB",
            "limit of 2.00 GiB",
            "--set merge=N",
        ],
    );
    assert!(support(&CAPTURE, &long, &with("merge", "1000")).is_ok());
    // Pipeline-only: one config, 366 MiB: accepted.
    assert!(MCAP_BF.supports(&long).is_ok());
    // CAPSlog also sorts L^2/2 x P thresholds: 4,000 layers on 32 GPUs need 2.26 GiB.
    let wide = chain(4000, 32);
    declines(
        &CAPSLOG_BS,
        &wide,
        &[
            "4000 layers x 1 stage configs",
            "32 GPUs' candidate thresholds",
            "limit of 2.00 GiB",
        ],
    );
    assert!(CAPSLOG_BS.supports(&chain(2000, 32)).is_ok());
}

#[test]
fn capture_exact_declines_dps_above_its_step_limit() {
    // 1,250 layers on 256 GPUs (32 nodes): 781,875 x 257 x 7 x 264 = 3.7e11 steps.
    let inst = chain(1250, 256);
    declines(
        &CAPTURE_EXACT,
        &inst,
        &[
            "1250 layers on 256 GPUs with 7 stage configs",
            "3.7e11 steps",
            "limit of 1e11",
            "--set merge=N",
        ],
    );
    assert!(support(&CAPTURE_EXACT, &inst, &with("merge", "200")).is_ok());
    // The ladder's far rung, 1,250 layers on 32 GPUs, is accepted (7.2e9 steps).
    assert!(CAPTURE_EXACT.supports(&chain(1250, 32)).is_ok());
    // Fewer layers than nodes: the space itself answers that no plan fills the GPUs.
    let sparse = chain(16, 1024);
    assert!(CAPTURE_EXACT.supports(&sparse).is_ok());
    let e = run(&CAPTURE_EXACT, &sparse, &SolveOptions::default()).unwrap_err();
    assert!(matches!(e, SolveError::Infeasible(_)), "{e}");
}

#[test]
fn pipedream_declines_dp_tables_above_four_gib() {
    let pd = registry::by_name("pipedream").unwrap();
    // Two nodes of 8: the node level keeps 5000^2 x 8 cells.
    let inst = chain(5000, 16);
    let opts = SolveOptions {
        time_limit: Some(Duration::from_secs(5)),
        ..SolveOptions::default()
    };
    match run(pd.as_ref(), &inst, &opts) {
        Err(SolveError::Unsupported(u)) => {
            for p in [
                "5000 layers",
                "8 x 100.000 GB/s, then 2 x 25.000 GB/s",
                "limit of 4.00 GiB",
            ] {
                assert!(u.0.contains(p), "{:?} lacks {p:?}", u.0);
            }
        }
        other => panic!("{other:?}"),
    }
}
