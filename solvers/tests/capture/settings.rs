//! The family table, settings, layer merging and bad statistics.

use super::*;

#[test]
fn the_family_table_keeps_every_name_and_setting() {
    let common = ["merge", "correct_1f1b"];
    let want: [(&str, bool, &[&str]); 6] = [
        ("capture", true, &["max_nodes"]),
        ("mcap-bf", true, &["max_nodes"]),
        (
            "mcap-bo",
            false,
            &["initial", "iterations", "candidates", "engine", "refit"],
        ),
        ("capslog-bs", false, &[]),
        ("capslog-bs-tb", false, &[]),
        ("capture-exact", true, &["space"]),
    ];
    let algos = pipeplan_solvers::capture::algorithms();
    assert_eq!(algos.len(), want.len());
    for (kind, (algo, (name, exact, own))) in Kind::ALL.iter().zip(algos.iter().zip(want)) {
        assert_eq!(algo.name(), name);
        assert_eq!(algo.exact(), exact, "{name}");
        assert_eq!(algo.family(), pipeplan_solvers::Family::Capture);
        assert!(!algo.description().is_empty());
        let params: Vec<&str> = common.iter().chain(own).copied().collect();
        let declared: Vec<&str> = CaptureAlgorithm(*kind)
            .params()
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(declared, params, "{name}");
        assert_eq!(CaptureAlgorithm(*kind).name(), name);
    }
}

#[test]
fn settings_are_checked() {
    let inst = shipped("resnet50-1000px-b8-4gpu-8gib.json");
    let mut opts = SolveOptions::default();
    opts.params.insert("bogus".into(), "1".into());
    for algo in pipeplan_solvers::capture::algorithms() {
        let e = algo.solve(&inst, &opts).unwrap_err().to_string();
        assert!(e.contains("--set bogus"), "{}: {e}", algo.name());
    }
    let mut opts = SolveOptions::default();
    opts.params.insert("space".into(), "mesh".into());
    assert!(CAPTURE_EXACT
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string()
        .contains("--set space"));
    let mut opts = SolveOptions::default();
    opts.params.insert("merge".into(), "x".into());
    assert!(CAPTURE_EXACT
        .solve(&inst, &opts)
        .unwrap_err()
        .to_string()
        .contains("--set merge"));
}

#[test]
fn layer_merger_plans_cover_the_original_chain() {
    let inst = shipped("gpt3-2.6b-s2048-b1-16gpu-32gib.json");
    let merged = solve(&CAPTURE_EXACT, &inst, &[("merge", "16")]);
    let full = solve(&CAPTURE_EXACT, &inst, &[]);
    assert_eq!(
        merged.plan.stages.last().unwrap().last + 1,
        inst.num_layers()
    );
    assert!(merged.notes.iter().any(|n| n.contains("merged to 16")));
    // Merging restricts the cut positions: never better than the full chain.
    assert!(merged.claimed.max_memory.unwrap() >= full.claimed.max_memory.unwrap());
}

#[test]
fn bad_statistics_fail_with_the_field() {
    let mut inst = instance(2, 2, &[("pp", 1, vec![1.0, 2.0], vec![0.0, 1.0])], 2);
    inst.extensions.insert(
        "memory_profile".into(),
        json!({"statistics": [{"parallelism": "pp", "degree": 1, "batch": 1, "m_i": [1], "m_a": [0, 1]}]}),
    );
    let e = harness::run(&CAPTURE_EXACT, &inst, &SolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("extensions.memory_profile.statistics[0].m_i"),
        "{e}"
    );
}
