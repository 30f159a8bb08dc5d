//! `import --from sailor`, and a measured run's plan file (`--plan-from sailor`) judged, traced,
//! drawn and explained, mistyped layers mended (peers folder `sailor/`; each test prints SKIPPED
//! without it).

mod support;

use serde_json::Value;
use support::sailor::{documented_runs, gh200_run, import_opt, sailor, strings, with_runs};
use support::{ok, ok_json, pipeplan, stderr, stdout};

#[test]
fn import_from_sailor_needs_a_gpu_type_and_writes_a_valid_instance() {
    let Some(root) = sailor() else { return };
    let config = root
        .join("Planner/simulations/configs/training_config_gpt_neo27.json")
        .display()
        .to_string();
    let out = pipeplan(&["import", "--from", "sailor", &config]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("gpu_type"), "{}", stderr(&out));
    let import = |options: &[&str]| -> Value {
        let mut args = vec!["import", "--from", "sailor", &config, "--gpu-type", "GH-96"];
        args.extend_from_slice(options);
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let v = import(&["--nodes", "8", "--batch", "4"]);
    assert_eq!(v["cluster"]["gpus"], 32);
    assert_eq!(
        v["cluster"]["gpu"], "GH-96",
        "the GPU model the profile measured"
    );
    assert_eq!(v["model"]["layers"].as_array().unwrap().len(), 34);
    // Nodes of another size: `--nodes` of them, each with `--gpus-per-node` GPUs.
    let v = import(&["--nodes", "3", "--gpus-per-node", "2"]);
    assert_eq!(v["cluster"]["gpus"], 6);
    assert_eq!(v["cluster"]["gpus_per_node"], 2);
    // More GPUs than a count holds: the larger factor named, not an overflow.
    for (options, field) in [
        (
            ["--nodes", "4294967295", "--gpus-per-node", "2"],
            "import.nodes",
        ),
        (
            ["--nodes", "2", "--gpus-per-node", "4294967295"],
            "import.gpus_per_node",
        ),
    ] {
        let mut args = vec!["import", "--from", "sailor", &config, "--gpu-type", "GH-96"];
        args.extend_from_slice(&options);
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let want = format!("{field}: ");
        assert!(stderr(&out).contains(&want), "{}", stderr(&out));
        assert!(stderr(&out).contains("more GPUs than can be counted"));
    }
}

#[test]
fn evaluate_plan_from_sailor_judges_a_measured_run_as_accuracy_does() {
    let Some(root) = sailor() else { return };
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("opt.json");
    let import = |gpu: &str, to: &std::path::Path| import_opt(&root, gpu, to);
    import("GH-96", &inst);
    let table = stdout(&pipeplan(&[
        "evaluate",
        "--plan-from",
        "sailor",
        &gh200_run(&root, "OPT-350/N4/plan_config_N4_D2.json")
            .display()
            .to_string(),
        inst.to_str().unwrap(),
    ]));
    assert!(
        table.contains("26 layers, 16 GH-96 GPUs (4 per node)"),
        "{table}"
    );
    let evaluate_on = |run: &std::path::Path, on: &std::path::Path, options: &[&str]| {
        let mut args = vec![
            "evaluate",
            "--plan-from",
            "sailor",
            run.to_str().unwrap(),
            on.to_str().unwrap(),
        ];
        args.extend_from_slice(options);
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let evaluate = |run: &std::path::Path, options: &[&str]| evaluate_on(run, &inst, options);
    let run = gh200_run(&root, "OPT-350/N4/plan_config_N4_D2.json");
    let out = evaluate(&run, &["--json"]);
    let ev: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let acc: Value = serde_json::from_str(&stdout(&pipeplan(&[
        "accuracy",
        run.to_str().unwrap(),
        "--json",
    ])))
    .unwrap();
    let predicted = acc["runs"][0]["predicted_iteration_ms"].as_f64().unwrap();
    assert!((ev["iteration_ms"].as_f64().unwrap() - predicted).abs() < 1e-9 * predicted);
    // The gradient synchronisation within it (2 replicas per stage), as accuracy shows it next
    // to the run's measured reduction, and in the table.
    let sync = ev["grad_sync_ms"].as_f64().unwrap();
    assert!(sync > 0.0 && sync < predicted, "{sync}");
    assert_eq!(
        acc["runs"][0]["predicted_grad_sync_ms"].as_f64(),
        Some(sync)
    );
    assert!(acc["runs"][0]["measured_grad_sync_ms"].as_f64().unwrap() > 0.0);
    let table = stdout(&evaluate(&run, &[]));
    assert!(table.contains("of which gradient sync"), "{table}");
    // The instance is profiled at the plan's micro-batch: nothing is scaled, nothing said.
    assert!(
        !stderr(&out).contains("scaled linearly"),
        "{}",
        stderr(&out)
    );
    // A run at another micro-batch (4) is judged with the profile scaled, and that is said.
    let run4 = gh200_run(&root, "OPT-350/N4/plan_config_N4_D4.json");
    let e = stderr(&evaluate(&run4, &[]));
    assert!(
        e.contains("micro-batches of 4 per replica") && e.contains("--batch 4"),
        "{e}"
    );
    assert!(!e.contains("other machines"), "its own machines: {e}");
    // The same plan judged on A100s: as asked, and the note names both GPU types.
    let a100 = dir.path().join("a100.json");
    import("A100-40", &a100);
    let out = evaluate_on(&run, &a100, &[]);
    let e = stderr(&out);
    assert!(
        e.contains(
            "plan_config_N4_D2.json: the plan was made for other machines: its GPUs are GH-96, \
             the instance's A100-40 (cluster.gpu)"
        ),
        "{e}"
    );
}

#[test]
fn a_runtimes_plan_file_is_traced_plotted_explained_and_exported_as_it_is_evaluated() {
    let Some(root) = sailor() else { return };
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("opt.json");
    import_opt(&root, "GH-96", &inst);
    let run = gh200_run(&root, "OPT-350/N4/plan_config_N4_D2.json");
    let (run, inst) = (run.to_str().unwrap(), inst.to_str().unwrap());
    let ok = |args: &[&str]| {
        let out = pipeplan(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        out
    };
    let from = ["--plan-from", "sailor"];
    let ev: Value = serde_json::from_str(&stdout(&ok(&[
        &["evaluate", run, inst, "--json"][..],
        &from,
    ]
    .concat())))
    .unwrap();
    let iteration = ev["iteration_ms"].as_f64().unwrap();

    // trace: the evaluator's verdict beside the simulation of the two stages of two replicas.
    let trace: Value =
        serde_json::from_str(&stdout(&ok(&[&["trace", run, inst][..], &from].concat()))).unwrap();
    let meta = &trace["otherData"];
    assert_eq!(meta["evaluated_iteration_ms"].as_f64(), Some(iteration));
    let cats: std::collections::BTreeSet<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["cat"].as_str())
        .collect();
    for want in ["forward", "backward", "send activation", "send gradient"] {
        assert!(cats.contains(want), "{want}: {cats:?}");
    }
    let end = meta["simulated_end_ms"].as_f64().unwrap();
    assert!(
        (end - iteration).abs() < 0.05 * iteration,
        "{end} vs {iteration}"
    );

    // explain: the instance's machines, both stages.
    let text = stdout(&ok(&[&["explain", run, inst][..], &from].concat()));
    assert!(text.contains("16 GH-96 GPUs (4 per node)"), "{text}");
    assert!(
        text.contains("stage 0") && text.contains("stage 1"),
        "{text}"
    );

    // plot: a chart titled after the plan file.
    let svg = dir.path().join("plan.svg");
    let svg_arg = svg.to_str().unwrap();
    ok(&[&["plot", run, inst, "-o", svg_arg][..], &from].concat());
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.contains("plan_config_N4_D2"));

    // export: the measured plan as Megatron-DeepSpeed arguments (its 24 decoder layers, 11 and
    // 13 beside the embedding and the head).
    let args = stdout(&ok(&[
        &["export", run, inst, "--to", "megatron"][..],
        &from,
    ]
    .concat()));
    for want in [
        "16 GPUs = tp 4 x pp 2 x dp 2",
        "--num-layers 24",
        "--decoder-first-pipeline-num-layers 11",
        "--micro-batch-size 1",
        "--global-batch-size 64",
    ] {
        assert!(args.contains(want), "{want}: {args}");
    }

    // Without --plan-from the runtime's file is not a plan, and its options need the format.
    let out = pipeplan(&["trace", run, inst]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("plan_config_N4_D2.json"),
        "{}",
        stderr(&out)
    );
    let out = pipeplan(&["explain", run, inst, "--repair-layers"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--plan-from"), "{}", stderr(&out));
}

#[test]
fn repair_layers_mends_the_mistyped_plans_and_lists_them() {
    let Some(root) = sailor() else { return };
    let runs = documented_runs(&root, "clariden");
    let v: Value = ok_json(&with_runs(
        &["accuracy", "RUNS", "--repair-layers", "--json"],
        &runs,
    ));
    assert_eq!(v["runs"].as_array().unwrap().len(), 22);
    let mended = strings(&v["repaired"], "name");
    assert_eq!(mended.len(), 3, "{mended:?}");
    assert!(mended.contains(&"GPT-NEO/N8/plan_config_N8_D2.json"));
    let judged = strings(&v["runs"], "name");
    assert!(mended.iter().all(|m| judged.contains(m)));
    assert_eq!(
        strings(&v["not_judged"], "name"),
        ["GPT-NEO/N4/plan_config_N4_D4.json"]
    );
    // Without the flag, no `repaired` member, and the reason says what the flag would do.
    let plain: Value = serde_json::from_str(&stdout(&pipeplan(&with_runs(
        &["accuracy", "RUNS", "--json"],
        &runs,
    ))))
    .unwrap();
    assert!(plain.get("repaired").is_none());
    let text = stdout(&pipeplan(&with_runs(
        &["accuracy", "RUNS", "--repair-layers"],
        &runs,
    )));
    assert!(
        text.contains("mended (--repair-layers), then judged:"),
        "{text}"
    );
    assert!(text.contains("read as 19"), "{text}");
    let csv = stdout(&pipeplan(&with_runs(
        &["accuracy", "RUNS", "--repair-layers", "--csv"],
        &runs,
    )));
    assert_eq!(
        csv.lines().filter(|l| l.contains("read as 19")).count(),
        3,
        "{csv}"
    );

    // `evaluate --plan-from sailor` mends the same way, only when asked, and says so.
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("neo.json");
    let config = root
        .join("Planner/simulations/configs/training_config_gpt_neo27.json")
        .display()
        .to_string();
    let args = ["--gpu-type", "GH-96", "--nodes", "8", "--batch", "4"];
    let mut import = vec![
        "import",
        "--from",
        "sailor",
        &config,
        "-o",
        inst.to_str().unwrap(),
    ];
    import.extend(args);
    let out = pipeplan(&import);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = gh200_run(&root, "GPT-NEO/N8/plan_config_N8_D2.json");
    let (run, inst) = (run.to_str().unwrap(), inst.to_str().unwrap());
    let out = pipeplan(&["evaluate", "--plan-from", "sailor", run, inst]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--repair-layers would"),
        "{}",
        stderr(&out)
    );
    let out = ok(&[
        "evaluate",
        "--plan-from",
        "sailor",
        "--repair-layers",
        run,
        inst,
        "--json",
    ]);
    assert!(
        stderr(&out).contains("mended (--repair-layers)"),
        "{}",
        stderr(&out)
    );
    let ev: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let acc = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "GPT-NEO/N8/plan_config_N8_D2.json")
        .unwrap();
    let predicted = acc["predicted_iteration_ms"].as_f64().unwrap();
    assert!((ev["iteration_ms"].as_f64().unwrap() - predicted).abs() < 1e-9 * predicted);
    let out = pipeplan(&[
        "evaluate",
        "--plan-from",
        "galvatron",
        "--repair-layers",
        run,
        inst,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("mends Sailor plan files"),
        "{}",
        stderr(&out)
    );
}
