//! `import --from sailor`, `accuracy`, `calibrate` and `--calibration` on Sailor's measured runs
//! (peers folder `sailor/`; each test prints SKIPPED without it).

mod support;

use pipeplan_formulations::peers;
use serde_json::Value;
use support::{pipeplan, shipped_str, stderr, stdout};

fn sailor() -> Option<std::path::PathBuf> {
    peers::subdir("sailor/sailor", "Sailor measured runs")
}

/// The string `key` of every member of a JSON array.
fn strings<'a>(array: &'a Value, key: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap())
        .collect()
}

fn gh200_dir(root: &std::path::Path) -> std::path::PathBuf {
    root.join("Planner/simulations/validation/clariden")
}

fn gh200_runs(root: &std::path::Path) -> String {
    gh200_dir(root).display().to_string()
}

/// A file or folder of the GH200 runs.
fn gh200_run(root: &std::path::Path, run: &str) -> std::path::PathBuf {
    gh200_dir(root).join(run)
}

#[test]
fn accuracy_judges_every_valid_run_and_names_the_rest() {
    let Some(root) = sailor() else { return };
    let all = root.join("Planner/simulations/validation");
    let out = pipeplan(&["accuracy", &all.display().to_string(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 19);
    let not = v["not_judged"].as_array().unwrap();
    let count = |status: &str| not.iter().filter(|n| n["status"] == status).count();
    assert_eq!(count("invalid"), 4, "{not:#?}");
    assert_eq!(count("unsupported"), 8, "{not:#?}");
    for n in not {
        assert!(!n["reason"].as_str().unwrap().is_empty());
    }
    for r in runs {
        let e = r["time_error"].as_f64().unwrap();
        let p = r["predicted_iteration_ms"].as_f64().unwrap();
        let m = r["measured_iteration_ms"].as_f64().unwrap();
        assert!(((p - m) / m - e).abs() < 1e-12);
    }
    assert_eq!(
        strings(&v["summary"], "dataset"),
        ["clariden/GPT-NEO", "clariden/OPT-350", "all"]
    );
    // The table says the same and lists what it left out.
    let out = pipeplan(&["accuracy", &all.display().to_string()]);
    let text = stdout(&out);
    assert!(
        text.contains("not judged (left out of the summary)"),
        "{text}"
    );
    assert!(
        text.contains("heterogeneous plans are not supported yet"),
        "{text}"
    );
    assert!(text.contains("layer 29 is listed 2 times"), "{text}");
    // The measured gradient reductions are shown next to the evaluated ones, and summarised.
    assert!(text.contains("gradient sync (evaluated)"), "{text}");
    let sync_row = text
        .lines()
        .find(|l| l.starts_with("data-parallel runs"))
        .unwrap_or_else(|| panic!("no gradient reduction summary: {text}"));
    assert_eq!(sync_row.split_whitespace().nth(2), Some("14"), "{sync_row}");
    // Runs without data parallelism measured no reduction to summarise.
    let single = gh200_run(&root, "OPT-350/N1");
    let text = stdout(&pipeplan(&["accuracy", &single.display().to_string()]));
    assert!(text.contains("gradient sync (evaluated)"), "{text}");
    assert!(!text.contains("data-parallel runs"), "{text}");
    let csv = stdout(&pipeplan(&[
        "accuracy",
        &all.display().to_string(),
        "--csv",
    ]));
    assert_eq!(csv.lines().count(), 1 + 19 + 12);
    // Nothing to fit to: calibrate says why each run was left out.
    let mit = root.join("Planner/simulations/validation/mit");
    let tmp = tempfile::tempdir().unwrap();
    let fit = tmp.path().join("cal.json");
    let out = pipeplan(&[
        "calibrate",
        &mit.display().to_string(),
        "-o",
        &fit.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("0 judged run(s) of 8: fitting and cross-validating needs at least 2")
            && e.contains("mit/N2/plan_config_N2_D1.json: unsupported: GPUs of several types"),
        "{e}"
    );
    assert!(!fit.exists());
}

#[test]
fn a_data_set_folder_given_alone_names_its_runs_by_it() {
    let Some(root) = sailor() else { return };
    let clariden = gh200_dir(&root);
    let dir = |d: &str| clariden.join(d).display().to_string();
    let out = pipeplan(&["accuracy", &dir("OPT-350"), &dir("GPT-NEO/N2"), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        strings(&v["summary"], "dataset"),
        ["OPT-350", "GPT-NEO", "all"]
    );
    let names = strings(&v["runs"], "name");
    assert!(
        names.contains(&"OPT-350/N2/plan_config_N2_D1.json"),
        "{names:?}"
    );
    assert!(
        names.contains(&"GPT-NEO/N2/plan_config_N2_D1.json"),
        "{names:?}"
    );
}

#[test]
fn calibrate_then_accuracy_meets_the_cross_validated_goals() {
    let Some(root) = sailor() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cal.json");
    let runs = gh200_runs(&root);
    // `calibrate DIR -o cal.json`: what it prints, and the file it wrote.
    let calibrate = |dir: &str| {
        let out = pipeplan(&["calibrate", dir, "-o", &file.display().to_string()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let cal: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        (stdout(&out), cal)
    };
    let (text, cal) = calibrate(&runs);
    assert!(text.contains("leave-one-out"), "{text}");
    assert_eq!(cal["format"], "pipeplan/calibration@2");
    // The 14 data-parallel runs' measured reductions fix the collective efficiency; the
    // evaluated reductions then come closer to them than the reference model's.
    assert_eq!(cal["fit"]["grad_sync_runs"], 14);
    let sync = &cal["fit"]["grad_sync_summary"];
    assert!(
        sync[1]["median"].as_f64() < sync[0]["median"].as_f64(),
        "{sync}"
    );
    assert_eq!(cal["constants"]["p2p_overlap"], 0.0, "given, not fitted");
    let cv = &cal["fit"]["summary"][2];
    assert_eq!(cv["dataset"], "after, leave-one-out");
    // Measured here: time median 3.2%, memory median 1.0% and worst 4.2% (BENCHMARKS.md).
    assert!(cv["time_median"].as_f64().unwrap() <= 0.05, "{cv}");
    assert!(cv["memory_median"].as_f64().unwrap() <= 0.05, "{cv}");
    assert!(cv["memory_worst"].as_f64().unwrap() <= 0.15, "{cv}");
    let before = &cal["fit"]["summary"][0];
    assert!(before["memory_median"].as_f64().unwrap() > 0.15, "{before}");
    // The same runs judged with the file: the in-sample errors of the fit.
    let out = pipeplan(&[
        "accuracy",
        &runs,
        "--calibration",
        &file.display().to_string(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let all = v["summary"].as_array().unwrap().last().unwrap().clone();
    let after = &cal["fit"]["summary"][1];
    assert!(
        (all["time_median"].as_f64().unwrap() - after["time_median"].as_f64().unwrap()).abs()
            < 1e-12
    );
    // Deterministic, and the shipped calibration is this fit (regenerate it with
    // `pipeplan calibrate <peers>/sailor/.../validation/clariden -o calibrations/clariden-gh200.json`).
    let shipped = support::root().join("calibrations/clariden-gh200.json");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        std::fs::read_to_string(&shipped).unwrap(),
        "calibrations/clariden-gh200.json is stale"
    );
    // Every constant is fitted here, to several runs; on OPT-350's one-stage runs without data
    // parallelism, nothing depends on the link efficiencies, which keep their reference values.
    assert!(cal["fit"].get("unconstrained").is_none(), "{}", cal["fit"]);
    assert!(cal["fit"].get("single_run").is_none(), "{}", cal["fit"]);
    let (text, cal) = calibrate(gh200_run(&root, "OPT-350/N1").to_str().unwrap());
    assert!(
        text.contains(
            "not fitted, kept at the reference value (no run's prediction depends on it): \
             p2p_efficiency, collective_efficiency"
        ),
        "{text}"
    );
    assert_eq!(cal["constants"]["p2p_efficiency"], 1.0);
    assert_eq!(cal["constants"]["collective_efficiency"], 1.0);
    assert_eq!(
        cal["fit"]["unconstrained"],
        serde_json::json!(["p2p_efficiency", "collective_efficiency"])
    );
    assert!(cal["fit"].get("single_run").is_none(), "{}", cal["fit"]);
    // OPT-350's N2: one pipeline sends between stages, one run reduces gradients; each
    // efficiency rests on that one run, and is named with it.
    let (text, cal) = calibrate(gh200_run(&root, "OPT-350/N2").to_str().unwrap());
    assert!(
        text.contains(
            "fitted to one run alone (the fold that leaves the run out keeps the reference \
             value): p2p_efficiency (OPT-350/N2/plan_config_N2_D1.json), collective_efficiency \
             (OPT-350/N2/plan_config_N2_D2.json)"
        ),
        "{text}"
    );
    assert_eq!(
        cal["fit"]["single_run"],
        serde_json::json!({
            "p2p_efficiency": "OPT-350/N2/plan_config_N2_D1.json",
            "collective_efficiency": "OPT-350/N2/plan_config_N2_D2.json",
        })
    );
}

#[test]
fn calibration_reaches_solve_and_evaluate_and_bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cal.json");
    std::fs::write(
        &file,
        r#"{"format": "pipeplan/calibration@1", "constants": {"reserved_memory": "2 GiB"}}"#,
    )
    .unwrap();
    let inst = shipped_str("bert-large-s512-b8-8gpu-8gib.json");
    let sol = dir.path().join("sol.json");
    let out = pipeplan(&[
        "solve",
        &inst,
        "--algo",
        "balanced-time",
        "-o",
        &sol.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let eval = |extra: &[&str]| -> Value {
        let mut args = vec!["evaluate", sol.to_str().unwrap(), &inst, "--json"];
        args.extend_from_slice(extra);
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let plain = eval(&[]);
    let cal = eval(&["--calibration", file.to_str().unwrap()]);
    let gib = 1024f64.powi(3);
    let diff = cal["max_memory"].as_f64().unwrap() - plain["max_memory"].as_f64().unwrap();
    assert!((diff - 2.0 * gib).abs() < 1.0, "{diff}");
    // Algorithms plan against the memory left: with the whole GPU reserved, none fits.
    std::fs::write(
        &file,
        r#"{"format": "pipeplan/calibration@2", "constants": {"reserved_memory": "8 GiB"}}"#,
    )
    .unwrap();
    let out = pipeplan(&[
        "solve",
        &inst,
        "--algo",
        "exact-contiguous",
        "--calibration",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    std::fs::write(
        &file,
        r#"{"format": "pipeplan/calibration@2", "constants": {"p2p_overlap": 2}}"#,
    )
    .unwrap();
    let out = pipeplan(&[
        "evaluate",
        sol.to_str().unwrap(),
        &inst,
        "--calibration",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("cal.json") && e.contains("constants.p2p_overlap"),
        "{e}"
    );
    let empty = tempfile::tempdir().unwrap();
    let out = pipeplan(&["accuracy", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no measured run"), "{}", stderr(&out));
}

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
}

/// OPT-350's profiles on `gpu`, 4 nodes, micro-batch 1 (the OPT-350 `N4` runs), written to `to`.
fn import_opt(root: &std::path::Path, gpu: &str, to: &std::path::Path) {
    let config = root.join("Planner/simulations/configs/training_config_opt_350.json");
    let out = pipeplan(&[
        "import",
        "--from",
        "sailor",
        config.to_str().unwrap(),
        "--gpu-type",
        gpu,
        "--nodes",
        "4",
        "--batch",
        "1",
        "-o",
        to.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
fn a_runtimes_plan_file_is_traced_plotted_and_explained_as_it_is_evaluated() {
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
    let runs = gh200_runs(&root);
    let out = pipeplan(&["accuracy", &runs, "--repair-layers", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
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
    let plain: Value =
        serde_json::from_str(&stdout(&pipeplan(&["accuracy", &runs, "--json"]))).unwrap();
    assert!(plain.get("repaired").is_none());
    let text = stdout(&pipeplan(&["accuracy", &runs, "--repair-layers"]));
    assert!(
        text.contains("mended (--repair-layers), then judged:"),
        "{text}"
    );
    assert!(text.contains("read as 19"), "{text}");
    let csv = stdout(&pipeplan(&["accuracy", &runs, "--repair-layers", "--csv"]));
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
    let out = pipeplan(&[
        "evaluate",
        "--plan-from",
        "sailor",
        "--repair-layers",
        run,
        inst,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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

#[test]
fn runs_none_of_which_can_be_judged_are_listed_without_a_summary() {
    let Some(root) = sailor() else { return };
    let run = gh200_run(&root, "OPT-350/N2/plan_config_N2_D1.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    doc.as_object_mut().unwrap().remove("max_mem");
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("OPT-350/N2");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("plan_config_N2_D1.json"), doc.to_string()).unwrap();
    let root_arg = root.display().to_string();
    let runs = dir.path().display().to_string();
    let out = pipeplan(&["accuracy", &runs, "--sailor-root", &root_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // The missing field is the one named, and no error is made up over no run.
    assert!(text.contains("max_mem: missing"), "{text}");
    assert!(text.contains("no run judged"), "{text}");
    assert!(!text.contains("time median"), "{text}");
    let out = pipeplan(&["accuracy", &runs, "--sailor-root", &root_arg, "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["summary"], Value::Array(vec![]));
    assert_eq!(strings(&v["not_judged"], "status"), ["invalid"]);
    // No chart over no run: the table first, then the error.
    let chart = dir.path().join("runs.svg");
    let chart_arg = chart.display().to_string();
    let out = pipeplan(&[
        "accuracy",
        &runs,
        "--sailor-root",
        &root_arg,
        "--plot",
        &chart_arg,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("max_mem: missing"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("no run judged: no parity chart to draw"));
    assert!(!chart.exists());
}

#[test]
fn accuracy_draws_every_judged_run_against_its_measurement() {
    let Some(root) = sailor() else { return };
    let runs = gh200_runs(&root);
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("runs.svg");
    let png = dir.path().join("runs.png");
    let table = stdout(&pipeplan(&["accuracy", &runs]));
    for chart in [&svg, &png] {
        let out = pipeplan(&["accuracy", &runs, "--plot", chart.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), table, "the table is the same with a chart");
        assert!(stderr(&out).contains("wrote "), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    // The 19 judged runs in both panels, and one legend marker per data set and panel.
    assert_eq!(text.matches("<circle").count(), 2 * 19 + 2 * 2);
    assert!(text.contains("GPT-NEO (5)") && text.contains("OPT-350 (14)"));
    assert!(text.contains("uncalibrated (the reference model): 19 measured runs"));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn folders_alike_inside_keep_their_runs_apart_and_each_file_counts_once() {
    let Some(root) = sailor() else { return };
    let run = gh200_run(&root, "OPT-350/N2/plan_config_N2_D1.json");
    let dir = tempfile::tempdir().unwrap();
    for cluster in ["a", "b"] {
        let folder = dir.path().join(cluster).join("OPT-350/N2");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(&run, folder.join("plan_config_N2_D1.json")).unwrap();
    }
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let root_arg = root.display().to_string();
    let out = pipeplan(&["accuracy", a, b, a, "--sailor-root", &root_arg, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        strings(&v["runs"], "name"),
        [
            "a/OPT-350/N2/plan_config_N2_D1.json",
            "b/OPT-350/N2/plan_config_N2_D1.json"
        ]
    );
    assert_eq!(
        strings(&v["summary"], "dataset"),
        ["a/OPT-350", "b/OPT-350", "all"]
    );
}
