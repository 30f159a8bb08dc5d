//! Test support, behind the `testing` feature: the shipped instances, small instance builders
//! and proptest strategies shared by the workspace's tests and benchmarks.

use crate::instance::{Cluster, Instance, Layer, ScheduleKind};
use proptest::prelude::*;
use std::path::PathBuf;

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// Path of the shipped instance `name` (with or without `.json`) under `instances/`.
pub fn shipped_path(name: &str) -> PathBuf {
    let file = if name.ends_with(".json") {
        name.to_string()
    } else {
        format!("{name}.json")
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../instances")
        .join(file)
}

/// The shipped instance `name` (panics with the path if it does not load: a test setup error).
pub fn shipped(name: &str) -> Instance {
    let p = shipped_path(name);
    Instance::from_path(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every shipped instance, in file-name order.
pub fn all_shipped() -> Vec<Instance> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../instances");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| Instance::from_path(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// A validated chain of layers with forward times `times` (ms), backward twice that, 1 MB of
/// weights and output each, on `gpus` GPUs of 16 GB at 10 GB/s, batch 1, async.
pub fn chain(times: &[f64], gpus: u32) -> Instance {
    let layers = times
        .iter()
        .enumerate()
        .map(|(i, &t)| Layer::new(format!("l{i}"), t, 2.0 * t, 1e6, 1e6))
        .collect();
    let mut inst = Instance::new("t", 1, 1e6, layers, Cluster::single_node(gpus, 16e9, 1e10));
    inst.source = "test".into();
    inst.validate().expect("the chain is valid");
    inst
}

/// Random small instances, edges included: 1 to `max_layers` layers (zero-weight and
/// zero-time layers among them), 1 to `max_gpus` GPUs (more GPUs than layers too), memory from
/// far too little to plenty, every schedule family.
pub fn small_instance(max_layers: usize, max_gpus: u32) -> impl Strategy<Value = Instance> {
    let layer = (
        prop_oneof![Just(0.0), 0.1f64..10.0],
        0.1f64..20.0,
        prop_oneof![Just(0.0), 0.5f64..64.0],
        0.1f64..16.0,
    );
    (
        prop::collection::vec(layer, 1..=max_layers),
        1..=max_gpus,
        prop_oneof![0.05f64..0.5, 0.5f64..4.0, Just(64.0)],
        1e9f64..1e11,
        prop_oneof![
            Just(ScheduleKind::Async),
            Just(ScheduleKind::OneFOneB),
            Just(ScheduleKind::Gpipe)
        ],
        1u32..=4,
    )
        .prop_map(|(layers, gpus, memory_gib, bw, schedule, micro_batches)| {
            let layers = layers
                .into_iter()
                .enumerate()
                .map(|(i, (f, b, w, o))| Layer::new(format!("l{i}"), f, b, w * MIB, o * MIB))
                .collect();
            let cluster = Cluster::single_node(gpus, memory_gib * GIB, bw);
            let mut inst = Instance::new("random", 4, 2.0 * MIB, layers, cluster);
            inst.source = "proptest".into();
            inst.training.schedule = schedule;
            if schedule != ScheduleKind::Async {
                inst.training.micro_batches = Some(micro_batches);
            }
            inst
        })
}

/// Proptest settings of every property test in the workspace's test files: `cases` cases,
/// failures kept in and replayed from `<test file>.proptest-regressions` beside the test's
/// source. Proptest's own default puts the file of a test folder's module
/// (`tests/<name>/<module>.rs`) in a `proptest-regressions/` folder beside the test folder, and
/// reaches the same file as this for a flat `tests/<name>.rs` only after printing a warning.
pub fn proptest_config(cases: u32) -> ProptestConfig {
    use proptest::test_runner::FileFailurePersistence;
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::with_cases(cases)
    }
}
