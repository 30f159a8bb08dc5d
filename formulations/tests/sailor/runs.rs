//! Measured runs: judged on their own machines and profiled degrees, or reported with the
//! reason; the mistyped GPT-Neo plans mended when asked.

use super::*;

#[test]
fn measured_runs_are_judged_or_reported_with_the_reason() {
    let Some(root) = sailor() else { return };
    let runs = collect(&documented_runs(&root, ""), &RunOptions::default()).unwrap();
    let ready = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ready(_)))
        .count();
    let reason = |name: &str| match &runs
        .iter()
        .find(|r| r.name.ends_with(name))
        .unwrap()
        .outcome
    {
        Outcome::Invalid(r) | Outcome::Unsupported(r) => r.clone(),
        Outcome::Ready(_) => String::new(),
    };
    // The README's defects: layer 29 twice and 19 missing; a 26-layer layout for a 34-layer model.
    let dup = reason("GPT-NEO/N8/plan_config_N8_D2.json");
    assert!(
        dup.contains("layer 29 is listed 2 times") && dup.contains("[19]"),
        "{dup}"
    );
    assert!(dup.contains("--repair-layers would mend it"), "{dup}");
    let short = reason("GPT-NEO/N4/plan_config_N4_D4.json");
    assert!(
        short.contains("34 layers") && short.contains("missing"),
        "{short}"
    );
    assert!(reason("mit/N3/plan_config_N3_D1.json").contains("heterogeneous"));
    // Every homogeneous, well-formed GH200 run is judged.
    assert_eq!(
        ready,
        documented("judged").len(),
        "{:#?}",
        runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    for r in &runs {
        if let Outcome::Ready(m) = &r.outcome {
            assert_eq!(m.dataset, r.dataset);
            let p = m.predict(&Calibration::IDENTITY).unwrap();
            assert!(p.iteration_ms > 0.0 && p.peak_memory > 0.0, "{}", r.name);
            // Every run recorded its gradient reduction (`red_grads`), within the iteration.
            let sync = m.grad_sync_ms.unwrap_or(-1.0);
            assert!(sync > 0.0 && sync < m.iteration_ms, "{}: {sync}", r.name);
        }
    }
}

#[test]
fn asked_to_repair_the_three_mistyped_gpt_neo_plans_are_judged_and_say_so() {
    let Some(root) = sailor() else { return };
    let opts = RunOptions {
        repair_layers: true,
        ..RunOptions::default()
    };
    let runs = collect(&documented_runs(&root, "clariden"), &opts).unwrap();
    let mended: Vec<(&str, &str)> = runs
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.repaired.as_deref()?)))
        .collect();
    let names: Vec<&str> = mended.iter().map(|m| m.0).collect();
    assert_eq!(
        names,
        [
            "GPT-NEO/N16/plan_config_N16_D4.json",
            "GPT-NEO/N4/plan_config_N4_D1.json",
            "GPT-NEO/N8/plan_config_N8_D2.json"
        ]
    );
    for (name, note) in &mended {
        assert!(
            note.contains("layers_per_stage[2][3]")
                && note.contains("layer 29, listed twice, read as 19"),
            "{name}: {note}"
        );
    }
    let ready = |name: &str| {
        runs.iter()
            .find(|r| r.name == name)
            .is_some_and(|r| matches!(r.outcome, Outcome::Ready(_)))
    };
    assert!(names.iter().all(|n| ready(n)));
    // The mislabelled 26-layer layout is no typo: still invalid.
    assert!(!ready("GPT-NEO/N4/plan_config_N4_D4.json"));
    let judged = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ready(_)))
        .count();
    assert_eq!(judged, documented("judged").len() + 3);
}

/// One edit of a run's plan file.
type Edit = fn(&mut serde_json::Value);

/// Copies of OPT-350's `N4_D2` run (2 stages x dp 2 x tp 4, micro-batch 1, 4 nodes of 4), each
/// changed by its edit, under `OPT-350/N4/` of a new folder.
fn edited_runs(root: &std::path::Path, edits: &[(&str, Edit)]) -> tempfile::TempDir {
    let run =
        root.join("Planner/simulations/validation/clariden/OPT-350/N4/plan_config_N4_D2.json");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("OPT-350/N4");
    std::fs::create_dir_all(&folder).unwrap();
    for (name, edit) in edits {
        let mut p = plan.clone();
        edit(&mut p);
        std::fs::write(
            folder.join(format!("plan_config_{name}.json")),
            p.to_string(),
        )
        .unwrap();
    }
    dir
}

/// Every replica of every stage of a plan file: `[[[gpu_type, gpus_per_node, zone]], tp]`.
fn replicas(p: &mut serde_json::Value) -> impl Iterator<Item = &mut serde_json::Value> {
    p["pipeline_list"][0]["tmp_per_stage"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|s| s.as_array_mut().unwrap().iter_mut())
}

#[test]
fn runs_are_judged_on_their_own_machines_and_profiled_degrees_only() {
    let Some(root) = sailor() else { return };
    let dir = edited_runs(
        &root,
        &[
            ("as_run", |_| {}),
            ("nodes_of_2", |p| {
                replicas(p).for_each(|r| r[0][0][1] = 2.into());
                p["N"] = 8.into();
            }),
            ("tp_3", |p| replicas(p).for_each(|r| r[1] = 3.into())),
            ("mixed_sizes", |p| {
                replicas(p).take(1).for_each(|r| r[0][0][1] = 8.into())
            }),
            ("mixed_dp", |p| {
                let pipeline = &mut p["pipeline_list"][0];
                pipeline["dp"][1] = 1.into();
                pipeline["tmp_per_stage"][1].as_array_mut().unwrap().pop();
            }),
            ("too_few_nodes", |p| p["N"] = 2.into()),
            ("unprofiled_gpu", |p| {
                replicas(p).for_each(|r| r[0][0][0] = "H100-80".into())
            }),
            ("mixed_tp", |p| {
                p["pipeline_list"][0]["tmp_per_stage"][1][1][1] = 2.into();
            }),
        ],
    );
    let opts = RunOptions {
        root: Some(root.clone()),
        ..RunOptions::default()
    };
    let runs = collect(&[dir.path().to_path_buf()], &opts).unwrap();
    let outcome = |name: &str| {
        &runs
            .iter()
            .find(|r| r.name.ends_with(&format!("plan_config_{name}.json")))
            .unwrap()
            .outcome
    };
    let reason = |name: &str, unsupported: bool| match (outcome(name), unsupported) {
        (Outcome::Unsupported(e), true) | (Outcome::Invalid(e), false) => e.as_str(),
        (other, _) => panic!("{name}: {other:?}"),
    };
    let invalid = |name: &str| reason(name, false);
    let unsupported = |name: &str| reason(name, true);
    let Outcome::Ready(as_run) = outcome("as_run") else {
        panic!("{:?}", outcome("as_run"))
    };
    assert_eq!(as_run.instance.cluster.gpus_per_node, Some(4));
    assert_eq!(as_run.instance.cluster.gpus, 16);
    // The run's machines hold 2 GPUs each: 8 nodes of 2, each tp group over two of them.
    let Outcome::Ready(halves) = outcome("nodes_of_2") else {
        panic!("{:?}", outcome("nodes_of_2"))
    };
    assert_eq!(halves.instance.cluster.gpus_per_node, Some(2));
    assert_eq!(halves.instance.cluster.gpus, 16);
    assert!(
        halves
            .instance
            .source
            .contains("8 nodes of 2 GH-96 (not basic_cluster_config.json's 4)"),
        "{}",
        halves.instance.source
    );
    // GH-96 at micro-batch 1 is profiled at degrees 1, 2 and 4: tp 3 would be a guess.
    let e = invalid("tp_3");
    assert!(
        e.contains("pipeline_list[0].tmp_per_stage[0]")
            && e.contains("tensor-parallel degree 3")
            && e.contains("profiles_tmp.json.OPT-350.GH-96.1: profiled degrees 1, 2, 4"),
        "{e}"
    );
    let e = unsupported("mixed_sizes");
    assert!(e.contains("machines of several sizes ([8, 4] GPUs)"), "{e}");
    // A well-formed plan pipeplan does not model: not supported, not invalid.
    let e = unsupported("mixed_dp");
    assert!(
        e.contains("stages of different data-parallel degrees [2, 1]: not supported yet"),
        "{e}"
    );
    // The run's own node count must hold its plan.
    let e = invalid("too_few_nodes");
    assert!(
        e.contains("N: 2 nodes of 4 GH-96 hold 8 GPUs, but the plan uses 16"),
        "{e}"
    );
    // A GPU type the profile lacks is named in the profile, not in the training config.
    let e = invalid("unprofiled_gpu");
    assert!(
        e.starts_with("profiles_tmp.json.OPT-350.H100-80: OPT-350 is not profiled on H100-80"),
        "{e}"
    );
    let e = unsupported("mixed_tp");
    assert!(
        e.contains("replicas of stage 1 at different tensor-parallel degrees [4, 2]"),
        "{e}"
    );
}
