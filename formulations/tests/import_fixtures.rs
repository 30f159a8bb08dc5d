//! The importers on small hand-made profiles (tests/fixtures/import/) whose expected chains,
//! cuts above all, were computed by hand.

use pipeplan_formulations::import::{import, import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{Cluster, Instance, Precision};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

fn cluster() -> Cluster {
    Cluster::single_node(2, 8e9, 10e9)
}

fn opts() -> ImportOptions {
    ImportOptions::new(cluster())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    assert!(
        got.iter().zip(want).all(|(&g, &w)| close(g, w)),
        "{got:?} vs {want:?}"
    );
}

fn column(inst: &Instance, f: impl Fn(&pipeplan_formulations::instance::Layer) -> f64) -> Vec<f64> {
    inst.model.layers.iter().map(f).collect()
}

fn names(inst: &Instance) -> Vec<&str> {
    inst.model.layers.iter().map(|l| l.name.as_str()).collect()
}

#[test]
fn pipedream_dag_with_skip_connections() {
    let inst = import_file(Source::PipeDream, &fixture("pipedream/skip.txt"), &opts()).unwrap();
    assert_eq!(inst.name, "skip");
    // Input removed, unused __getitem__(1) removed, the rest in node-number order.
    assert_eq!(
        names(&inst),
        ["node2", "node3", "node4", "node5", "node6", "node8", "node9"]
    );
    assert_eq!(inst.model.input, 600.0);
    // Hand-computed: the input (600 B) lives until node4, node2's output until node9, node3's
    // until node8; each tensor counts once even with two later readers.
    assert_close(
        &column(&inst, |l| l.cut.unwrap()),
        &[700.0, 800.0, 250.0, 250.0, 230.0, 130.0, 0.0],
    );
    assert_close(
        &column(&inst, |l| l.output),
        &[100.0, 100.0, 50.0, 50.0, 30.0, 30.0, 10.0],
    );
    assert_close(
        &column(&inst, |l| l.forward),
        &[1.0, 0.5, 2.0, 3.0, 0.0, 0.0, 1.0],
    );
    assert_close(
        &column(&inst, |l| l.backward),
        &[2.0, 0.5, 4.0, 6.0, 0.0, 0.0, 1.0],
    );
    assert_close(
        &column(&inst, |l| l.weights),
        &[40.0, 0.0, 80.0, 100.0, 0.0, 0.0, 300.0],
    );
    assert_eq!(inst.model.layers[3].kind.as_deref(), Some("LSTM"));
    assert!(inst.model.layers.iter().all(|l| l.saved.is_none()));
    assert_eq!(inst.model.batch, 1);
    assert_eq!(inst.training.precision, Some(Precision::Fp32));
    assert!(inst.source.contains("milliseconds"), "{}", inst.source);
    assert!(inst.source.contains("does not record its batch size"));
    inst.validate().unwrap();
}

#[test]
fn pipedream_ignores_line_order() {
    let text = read("pipedream/skip.txt");
    let a = import(Source::PipeDream, &text, &opts()).unwrap();
    let mut nodes: Vec<&str> = text.lines().filter(|l| !l.starts_with('\t')).collect();
    let mut edges: Vec<&str> = text.lines().filter(|l| l.starts_with('\t')).collect();
    nodes.reverse();
    edges.sort();
    let shuffled = [nodes, edges].concat().join("\n");
    let b = import(Source::PipeDream, &shuffled, &opts()).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.to_json(),
        import(Source::PipeDream, &text, &opts()).unwrap().to_json()
    );
}

#[test]
fn pipedream_infers_image_batches() {
    // 2 x 3 x 224 x 224 fp32 images.
    let text = "node1 -- Input -- forward_compute_time=9.0, backward_compute_time=0.0, activation_size=1204224.0, parameter_size=0.0\n\
                node2 -- Conv2d(3, 8) -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=10.0, parameter_size=5.0\n\
                \tnode1 -- node2";
    let inst = import(Source::PipeDream, text, &opts()).unwrap();
    assert_eq!(inst.model.batch, 2);
    assert!(inst.source.contains("2 x 3 x 224 x 224"), "{}", inst.source);
    let mut o = opts();
    o.batch = Some(64);
    assert_eq!(import(Source::PipeDream, text, &o).unwrap().model.batch, 64);
}

#[test]
fn piper_dag_with_skip_connections() {
    let inst = import_file(Source::Piper, &fixture("piper/skip.json"), &opts()).unwrap();
    assert_eq!(inst.name, "skip");
    assert_eq!(names(&inst), ["embed", "block1", "block2", "head"]);
    // Seconds (names are not PipeDream's); forward from the recomputation TMPC when present.
    assert_close(&column(&inst, |l| l.forward), &[1.0, 2.0, 3.0, 1.0]);
    assert_close(&column(&inst, |l| l.backward), &[2.0, 4.0, 6.0, 2.0]);
    assert_close(
        &column(&inst, |l| l.weights),
        &[1000.0, 2000.0, 3000.0, 400.0],
    );
    assert_close(
        &column(&inst, |l| l.saved.unwrap()),
        &[64.0, 64.0, 48.0, 16.0],
    );
    assert_close(&column(&inst, |l| l.output), &[64.0, 32.0, 16.0, 0.0]);
    // embed's 64 B reach head (counted once), block1's 32 B reach block2, block2's 16 B head.
    assert_close(&column(&inst, |l| l.cut.unwrap()), &[64.0, 96.0, 80.0, 0.0]);
    assert_eq!(inst.cluster, cluster());
    assert_eq!(inst.training.micro_batches, Some(8));
    assert!(inst.source.contains("read as seconds"), "{}", inst.source);
}

#[test]
fn piper_precedence_of_profile_and_user() {
    let text = read("piper/skip.json");
    let mut o = opts();
    o.cluster_from_profile = true;
    o.training.micro_batches = Some(3);
    o.time_unit_ms = Some(1.0);
    o.batch = Some(16);
    o.name = Some("mine".into());
    let inst = import(Source::Piper, &text, &o).unwrap();
    assert_eq!(inst.cluster.gpus, 4);
    assert_eq!(inst.cluster.memory, 16e9);
    assert_eq!(inst.cluster.bandwidth.intra_node, 12e9);
    assert_eq!(
        inst.training.micro_batches,
        Some(3),
        "the user's value wins"
    );
    assert_eq!(inst.model.batch, 16);
    assert_eq!(
        (inst.name.as_str(), inst.model.name.as_str()),
        ("mine", "mine")
    );
    assert!(close(inst.model.layers[0].forward, 0.001));
    assert!(
        inst.source.contains("taken from the profile"),
        "{}",
        inst.source
    );
}

#[test]
fn piper_files_converted_from_pipedream_are_milliseconds() {
    let text = read("piper/skip.json")
        .replace("\"embed\"", "\"node1\"")
        .replace("\"block1\"", "\"node2\"")
        .replace("\"block2\"", "\"node3\"")
        .replace("\"head\"", "\"node10\"");
    let inst = import(Source::Piper, &text, &opts()).unwrap();
    assert_eq!(names(&inst), ["node1", "node2", "node3", "node10"]);
    assert_close(&column(&inst, |l| l.forward), &[0.001, 0.002, 0.003, 0.001]);
    assert!(
        inst.source.contains("read as milliseconds"),
        "{}",
        inst.source
    );
}

#[test]
fn dnn_partitioning_training_graph() {
    let path = fixture("dnn-partitioning/skip_training.json");
    let inst = import_file(Source::DnnPartitioning, &path, &opts()).unwrap();
    assert_eq!(inst.name, "skip_training");
    // The weight w3 shares matmul's colour class; `add` has no class; the orphaned backward node
    // gets its own layer, placed where its mirrored edges put it (after matmul, before loss).
    assert_eq!(
        names(&inst),
        [
            "input",
            "conv",
            "matmul +1",
            "add",
            "orphan_grad (backward only)",
            "loss"
        ]
    );
    assert_close(
        &column(&inst, |l| l.forward),
        &[0.0, 1.0, 2.0, 0.5, 0.0, 0.1],
    );
    assert_close(
        &column(&inst, |l| l.backward),
        &[0.0, 2.0, 4.0, 0.0, 1.0, 0.2],
    );
    assert_close(
        &column(&inst, |l| l.weights),
        &[0.0, 100.0, 500.0, 0.0, 0.0, 4.0],
    );
    assert_close(
        &column(&inst, |l| l.output),
        &[0.0, 1000.0, 300.0, 300.0, 0.0, 0.0],
    );
    // conv's 1000 B feed matmul and (skip) add; matmul's 300 B join them after matmul.
    assert_close(
        &column(&inst, |l| l.cut.unwrap()),
        &[0.0, 1000.0, 1300.0, 300.0, 300.0, 0.0],
    );
    let mut o = opts();
    o.cluster_from_profile = true;
    let inst = import_file(Source::DnnPartitioning, &path, &o).unwrap();
    assert_eq!((inst.cluster.gpus, inst.cluster.memory), (3, 4e9));
    assert_eq!(
        inst.cluster.bandwidth,
        cluster().bandwidth,
        "the file has none"
    );
}

#[test]
fn imports_are_deterministic_and_round_trip() {
    for (source, rel) in [
        (Source::PipeDream, "pipedream/skip.txt"),
        (Source::Piper, "piper/skip.json"),
        (
            Source::DnnPartitioning,
            "dnn-partitioning/skip_training.json",
        ),
    ] {
        let a = import_file(source, &fixture(rel), &opts()).unwrap();
        let b = import_file(source, &fixture(rel), &opts()).unwrap();
        assert_eq!(a.to_json(), b.to_json(), "{rel}");
        assert_eq!(Instance::from_json(&a.to_json()).unwrap(), a, "{rel}");
    }
}

#[test]
fn bad_options_and_missing_files() {
    let mut o = opts();
    o.time_unit_ms = Some(0.0);
    let e = import(Source::Piper, &read("piper/skip.json"), &o).unwrap_err();
    assert!(e.to_string().starts_with("import.time_unit_ms:"), "{e}");
    let mut o = opts();
    o.batch = Some(0);
    assert!(import(Source::Piper, &read("piper/skip.json"), &o).is_err());
    let e = import_file(Source::Piper, &fixture("piper/none.json"), &opts()).unwrap_err();
    assert!(e.to_string().contains("none.json"), "{e}");
    // A parse error carries the file name.
    let e = import_file(Source::Piper, &fixture("pipedream/skip.txt"), &opts()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&fixture("pipedream/skip.txt").display().to_string()),
        "{e}"
    );
    // A node size that does not divide the profile's GPU count is a conflict, not a guess.
    let mut o = opts();
    o.cluster_from_profile = true;
    o.cluster.gpus_per_node = Some(3);
    let e = import(Source::Piper, &read("piper/skip.json"), &o).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cluster.gpus_per_node: 3 does not divide the profile's 4 GPUs"),
        "{e}"
    );
    // The user's cluster is validated like any instance's.
    let mut o = opts();
    o.cluster.gpus = 0;
    let e = import(Source::Piper, &read("piper/skip.json"), &o).unwrap_err();
    assert!(e.to_string().starts_with("cluster.gpus:"), "{e}");
}
