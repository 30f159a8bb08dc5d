//! `accuracy`, `calibrate` and `--calibration` on Sailor's measured runs (peers folder
//! `sailor/`; each test prints SKIPPED without it). The import and a run's plan file judged,
//! traced, drawn and explained: `tests/sailor_plan_cli.rs`.

mod support;

use pipeplan_formulations::peers::sailor_runs::documented;
use serde_json::Value;
use support::sailor::{documented_runs, gh200_dir, gh200_run, sailor, strings, with_runs};
use support::{ok, ok_json, pipeplan, shipped_str, stderr, stdout};

#[test]
fn accuracy_judges_every_valid_run_and_names_the_rest() {
    let Some(root) = sailor() else { return };
    let all = documented_runs(&root, "");
    let v: Value = ok_json(&with_runs(&["accuracy", "RUNS", "--json"], &all));
    assert_eq!(strings(&v["runs"], "name"), documented("judged"));
    let not = v["not_judged"].as_array().unwrap();
    let with = |status: &str| -> Vec<&str> {
        not.iter()
            .filter(|n| n["status"] == status)
            .map(|n| n["name"].as_str().unwrap())
            .collect()
    };
    assert_eq!(with("invalid"), documented("invalid"), "{not:#?}");
    assert_eq!(with("unsupported"), documented("unsupported"), "{not:#?}");
    for n in not {
        assert!(!n["reason"].as_str().unwrap().is_empty());
    }
    for r in v["runs"].as_array().unwrap() {
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
    let out = pipeplan(&with_runs(&["accuracy", "RUNS"], &all));
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
    let single = documented_runs(&root, "clariden/OPT-350/N1");
    let text = stdout(&pipeplan(&with_runs(&["accuracy", "RUNS"], &single)));
    assert!(text.contains("gradient sync (evaluated)"), "{text}");
    assert!(!text.contains("data-parallel runs"), "{text}");
    let csv = stdout(&pipeplan(&with_runs(&["accuracy", "RUNS", "--csv"], &all)));
    assert_eq!(csv.lines().count(), 1 + all.len());
    // Nothing to fit to: calibrate says why each run was left out.
    let mit = documented_runs(&root, "mit");
    let tmp = tempfile::tempdir().unwrap();
    let fit = tmp.path().join("cal.json");
    let fit_arg = fit.display().to_string();
    let out = pipeplan(&with_runs(&["calibrate", "RUNS", "-o", &fit_arg], &mit));
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains(&format!(
            "0 judged run(s) of {}: fitting and cross-validating needs at least 2",
            mit.len()
        )) && e.contains("mit/N2/plan_config_N2_D1.json: unsupported: GPUs of several types"),
        "{e}"
    );
    assert!(!fit.exists());
}

#[test]
fn accuracy_judges_or_names_every_run_the_folder_holds() {
    let Some(root) = sailor() else { return };
    // Whatever the folder holds, the documented runs and any added beside them: each plan file
    // once, judged or listed with its reason.
    let validation = root.join("Planner/simulations/validation");
    let mut files = Vec::new();
    let mut stack = vec![validation.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name.starts_with("plan_config_") && name.ends_with(".json") {
                let rel = path.strip_prefix(&validation).unwrap();
                files.push(rel.display().to_string());
            }
        }
    }
    files.sort();
    let v: Value = ok_json(&["accuracy", validation.to_str().unwrap(), "--json"]);
    let mut named: Vec<&str> = strings(&v["runs"], "name");
    named.extend(strings(&v["not_judged"], "name"));
    named.sort();
    assert_eq!(named, files);
    for n in v["not_judged"].as_array().unwrap() {
        assert!(
            ["invalid", "unsupported"].contains(&n["status"].as_str().unwrap()),
            "{n}"
        );
        assert!(!n["reason"].as_str().unwrap().is_empty(), "{n}");
    }
    for name in documented("judged") {
        assert!(
            strings(&v["runs"], "name").contains(&name.as_str()),
            "{name}"
        );
    }
}

#[test]
fn a_data_set_folder_given_alone_names_its_runs_by_it() {
    let Some(root) = sailor() else { return };
    let clariden = gh200_dir(&root);
    let dir = |d: &str| clariden.join(d).display().to_string();
    let v: Value = ok_json(&["accuracy", &dir("OPT-350"), &dir("GPT-NEO/N2"), "--json"]);
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
    let runs = documented_runs(&root, "clariden");
    let file_arg = file.display().to_string();
    // `calibrate RUNS -o cal.json`: what it prints, and the file it wrote.
    let calibrate = |runs: &[String]| {
        let out = ok(&with_runs(&["calibrate", "RUNS", "-o", &file_arg], runs));
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
    let v: Value = ok_json(&with_runs(
        &["accuracy", "RUNS", "--calibration", &file_arg, "--json"],
        &runs,
    ));
    let all = v["summary"].as_array().unwrap().last().unwrap().clone();
    let after = &cal["fit"]["summary"][1];
    assert!(
        (all["time_median"].as_f64().unwrap() - after["time_median"].as_f64().unwrap()).abs()
            < 1e-12
    );
    // Deterministic, and the shipped calibration is this fit (regenerate it with
    // `pipeplan calibrate <peers>/sailor/.../validation/clariden -o calibrations/clariden-gh200.json`
    // on the documented runs).
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
    let (text, cal) = calibrate(&documented_runs(&root, "clariden/OPT-350/N1"));
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
    let (text, cal) = calibrate(&documented_runs(&root, "clariden/OPT-350/N2"));
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
    ok(&[
        "solve",
        &inst,
        "--algo",
        "balanced-time",
        "-o",
        &sol.display().to_string(),
    ]);
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
fn a_calibration_applied_to_another_gpu_model_is_warned_of() {
    let Some(root) = sailor() else { return };
    let dir = tempfile::tempdir().unwrap();
    let shipped = support::root().join("calibrations/clariden-gh200.json");
    let shipped = shipped.to_str().unwrap();
    let warning = "calibrations/clariden-gh200.json: fitted to runs on GH-96; instance";
    for (gpu, warned) in [("A100-40", true), ("GH-96", false)] {
        let inst = dir.path().join(format!("{gpu}.json"));
        support::sailor::import_opt(&root, gpu, &inst);
        let inst = inst.to_str().unwrap();
        for args in [
            vec!["solve", inst, "-a", "uniform", "--calibration", shipped],
            vec!["compare", inst, "-a", "uniform", "--calibration", shipped],
        ] {
            let out = pipeplan(&args);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let e = stderr(&out);
            assert_eq!(e.contains(warning), warned, "{args:?}: {e}");
            if warned {
                assert!(
                    e.contains(&format!("was profiled on {gpu} (cluster.gpu)")),
                    "{e}"
                );
            }
        }
    }
    // The runs the file was fitted to: no warning.
    let runs = documented_runs(&root, "clariden/OPT-350/N4");
    let out = pipeplan(&with_runs(
        &["accuracy", "RUNS", "--calibration", shipped],
        &runs,
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
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
    let out = ok(&["accuracy", &runs, "--sailor-root", &root_arg]);
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
    let runs = documented_runs(&root, "clariden");
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("runs.svg");
    let png = dir.path().join("runs.png");
    let table = stdout(&pipeplan(&with_runs(&["accuracy", "RUNS"], &runs)));
    for chart in [&svg, &png] {
        let out = ok(&with_runs(
            &["accuracy", "RUNS", "--plot", chart.to_str().unwrap()],
            &runs,
        ));
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
    let v: Value = ok_json(&["accuracy", a, b, a, "--sailor-root", &root_arg, "--json"]);
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
