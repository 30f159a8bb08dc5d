//! `pipeplan export` and `evaluate --plan-from` end to end: files written, exit codes, messages.

mod support;

use pipeplan_formulations::peers;
use support::{ok, pipeplan, shipped_str, stderr, stdout};

/// `pipeplan solve INSTANCE --algo ALGO -o SOLUTION`, which must succeed.
fn solve_to(inst: &str, algo: &str, solution: &std::path::Path) {
    ok(&[
        "solve",
        inst,
        "--algo",
        algo,
        "-o",
        solution.to_str().unwrap(),
    ]);
}

#[test]
fn a_galvatron_solution_exports_and_reads_back() {
    let inst = shipped_str("bert-large-s512-b8-8gpu-8gib.json");
    let tmp = tempfile::tempdir().unwrap();
    let sol = tmp.path().join("bert-sol.json");
    solve_to(&inst, "galvatron-base", &sol);
    let cfg = tmp.path().join("bert-galvatron.json");
    ok(&[
        "export",
        sol.to_str().unwrap(),
        &inst,
        "--to",
        "galvatron",
        "-o",
        cfg.to_str().unwrap(),
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert!(v["pp_deg"].as_u64().unwrap() >= 1);
    // Read back and judged: the same evaluation as the solution's plan.
    let a = pipeplan(&["evaluate", sol.to_str().unwrap(), &inst, "--json"]);
    let b = ok(&[
        "evaluate",
        "--plan-from",
        "galvatron",
        cfg.to_str().unwrap(),
        &inst,
        "--json",
    ]);
    assert_eq!(stdout(&a), stdout(&b));
    // Exported again from the config read back: the same file, so nothing is lost on the way.
    let again = ok(&[
        "export",
        "--plan-from",
        "galvatron",
        cfg.to_str().unwrap(),
        &inst,
        "--to",
        "galvatron",
    ]);
    assert_eq!(stdout(&again), std::fs::read_to_string(&cfg).unwrap());
}

#[test]
fn an_inexpressible_plan_exits_2_with_the_nearest_plans_cost() {
    let inst = shipped_str("resnet50-1000px-b8-4gpu-8gib.json");
    let tmp = tempfile::tempdir().unwrap();
    let sol = tmp.path().join("balanced-sol.json");
    solve_to(&inst, "balanced-time", &sol);
    let o = pipeplan(&["export", sol.to_str().unwrap(), &inst, "--to", "megatron"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("Megatron-LM cannot run this plan"), "{err}");
    assert!(err.contains("asynchronous"), "{err}");
    assert!(
        err.contains("The nearest plan it runs (4 pipeline stages"),
        "{err}"
    );
    assert!(err.contains(") evaluates to "), "{err}");
    assert!(err.contains("samples/s"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing written");
    // Under a calibration the nearest plan costs what the calibrated evaluator says.
    let cal = support::root().join("calibrations/clariden-gh200.json");
    let cal = cal.to_str().unwrap();
    let calibrated = ["export", sol.to_str().unwrap(), &inst, "--calibration", cal];
    let o = pipeplan(&[&calibrated[..], &["--to", "megatron"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let cost = |err: &str| err.split(") evaluates to ").nth(1).unwrap().to_string();
    assert_ne!(cost(&stderr(&o)), cost(&err), "{}", stderr(&o));
    // PipeDream's runtime runs it, and the file it gets does not depend on the constants.
    let o = ok(&["export", sol.to_str().unwrap(), &inst, "--to", "pipedream"]);
    assert!(stdout(&o).contains("stage_to_rank_map"));
    let c = pipeplan(&[&calibrated[..], &["--to", "pipedream"]].concat());
    assert_eq!(stdout(&c), stdout(&o));
}

#[test]
fn pipedream_plans_export_to_its_runtime_at_its_own_pace_only() {
    // GPT-3 2.6B on 8 GPUs: the 1F1B* period of PipeDream's plan is the least its loads allow,
    // the pace PipeDream's runtime keeps: the plan exports.
    let inst = shipped_str("gpt3-2.6b-s2048-b1-8gpu-40gib.json");
    let tmp = tempfile::tempdir().unwrap();
    let sol = tmp.path().join("pipedream-sol.json");
    solve_to(&inst, "pipedream", &sol);
    let o = ok(&["export", sol.to_str().unwrap(), &inst, "--to", "pipedream"]);
    let config: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sol).unwrap()).unwrap();
    assert_eq!(
        config["stage_to_rank_map"].as_object().unwrap().len(),
        plan["plan"]["stages"].as_array().unwrap().len()
    );
    assert!(!stderr(&o).contains("does not fit"), "{}", stderr(&o));
    // T5 on 8 GPUs of 8 GiB: no 1F1B* period of PipeDream's partition fits; the plan carries
    // none, exports, and the evaluator's verdict is said beside it.
    let t5 = shipped_str("t5-512-4-s512-b8-8gpu-8gib.json");
    solve_to(&t5, "pipedream", &sol);
    let o = ok(&["export", sol.to_str().unwrap(), &t5, "--to", "pipedream"]);
    assert!(stdout(&o).contains("stage_to_rank_map"));
    assert!(
        stderr(&o).contains("the evaluator says this plan does not fit: GPU "),
        "{}",
        stderr(&o)
    );
    // ResNet-50 on 4 GPUs of 8 GiB: memory slows its period from 141 ms to 591 ms; the runtime
    // would run at 141 ms and keep more micro-batches than fit, so the plan does not export.
    let inst = shipped_str("resnet50-1000px-b8-4gpu-8gib.json");
    solve_to(&inst, "pipedream", &sol);
    let o = pipeplan(&["export", sol.to_str().unwrap(), &inst, "--to", "pipedream"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the schedule fixes a period of 591.155 ms"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_formats_and_files_are_one_line_errors() {
    let inst = shipped_str("resnet50-1000px-b8-4gpu-8gib.json");
    let o = pipeplan(&["export", "x.json", &inst, "--to", "alpa"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown export format `alpa`"),
        "{}",
        stderr(&o)
    );
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad-galvatron.json");
    std::fs::write(&bad, r#"{"pp_deg": 3}"#).unwrap();
    let o = pipeplan(&[
        "evaluate",
        "--plan-from",
        "galvatron",
        bad.to_str().unwrap(),
        &inst,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(bad.to_str().unwrap()) && err.contains("tp_sizes_enc"),
        "{err}"
    );
}

/// A recording imported (its profiles under `data`, the peers' `v2.x_14f5972`) and its
/// engine's output config written beside it in `tmp`: (instance, config, the recording).
fn recorded_config(
    golden: &std::path::Path,
    data: &std::path::Path,
    tmp: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf, serde_json::Value) {
    let inst = tmp.join("inst.json");
    ok(&[
        "import",
        "--from",
        "galvatron",
        "--config",
        golden.to_str().unwrap(),
        "--data-root",
        data.to_str().unwrap(),
        "-o",
        inst.to_str().unwrap(),
    ]);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
    let cfg = tmp.join("output-config.json");
    std::fs::write(&cfg, doc["result"]["output_config"].to_string()).unwrap();
    (inst, cfg, doc)
}

#[test]
fn a_golden_output_config_is_judged() {
    let what = "export_cli::a_golden_output_config_is_judged";
    let Some(dir) = peers::subdir("galvatron", what) else {
        return;
    };
    let golden = dir.join("golden/g_bert1024_8gpu_12GB_bsz256.json");
    let tmp = tempfile::tempdir().unwrap();
    let (inst, cfg, _) = recorded_config(&golden, &dir.join("v2.x_14f5972"), tmp.path());
    let o = ok(&[
        "evaluate",
        "--plan-from",
        "galvatron",
        cfg.to_str().unwrap(),
        inst.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("samples/s") || stdout(&o).contains("throughput"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_ddp_config_without_async_grad_reduce_is_judged_with_a_note() {
    let what = "export_cli::a_ddp_config_without_async_grad_reduce_is_judged_with_a_note";
    let Some(dir) = peers::subdir("galvatron", what) else {
        return;
    };
    // The engine's plan at ddp over 4 chunks with async_grad_reduce off (references/galvatron).
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("references/galvatron/fine_h_swin_chunk4_ddp_nonconsec.json");
    let tmp = tempfile::tempdir().unwrap();
    let (inst, cfg, doc) = recorded_config(&golden, &dir.join("v2.x_14f5972"), tmp.path());
    let (cfg, inst) = (cfg.to_str().unwrap(), inst.to_str().unwrap());
    let o = ok(&["evaluate", "--plan-from", "galvatron", cfg, inst]);
    let note = format!(
        "note: {cfg}: Galvatron's runtime with async_grad_reduce off (the instance's Galvatron \
         setting) all-reduces the gradients of stage"
    );
    assert!(stderr(&o).contains(&note), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("after each of the 4 micro-batches"),
        "{}",
        stderr(&o)
    );
    // Exported again: the same config, and the note once (reading the file said it).
    let o = ok(&[
        "export",
        "--plan-from",
        "galvatron",
        cfg,
        inst,
        "--to",
        "galvatron",
    ]);
    let written: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(written, doc["result"]["output_config"]);
    assert_eq!(
        stderr(&o).matches("async_grad_reduce off").count(),
        1,
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains(&note), "{}", stderr(&o));
    // A solution file of that plan, exported: the caution as a warning.
    let sol = tmp.path().join("swin-sol.json");
    ok(&[
        "solve",
        inst,
        "--algo",
        "galvatron-base",
        "-o",
        sol.to_str().unwrap(),
    ]);
    let o = ok(&["export", sol.to_str().unwrap(), inst, "--to", "galvatron"]);
    let written: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(written, doc["result"]["output_config"]);
    assert!(
        stderr(&o).contains(&format!(
            "warning: {}: Galvatron's runtime with async_grad_reduce off",
            sol.display()
        )),
        "{}",
        stderr(&o)
    );
}

/// A hand-edited micro-batch of 2^32 - 1 samples: the runtimes that round it to a multiple of
/// the data-parallel degree write or refuse it, never overflow.
#[test]
fn a_micro_batch_near_u32_max_exports_without_overflow() {
    let inst = shipped_str("bert-large-s512-b8-8gpu-8gib.json");
    let tmp = tempfile::tempdir().unwrap();
    let sol = tmp.path().join("huge-micro.json");
    solve_to(&inst, "galvatron-base", &sol);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sol).unwrap()).unwrap();
    v["plan"]["schedule"]["micro_batch"] = u32::MAX.into();
    std::fs::write(&sol, v.to_string()).unwrap();
    for to in ["megatron", "torchtitan", "deepspeed"] {
        let o = pipeplan(&["export", sol.to_str().unwrap(), &inst, "--to", to]);
        assert!(
            matches!(o.status.code(), Some(0 | 2)),
            "{to}: {}",
            stderr(&o)
        );
    }
}
