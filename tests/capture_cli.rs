//! `pipeplan profile-plan` and the CAPTURE family through the CLI.

mod support;

use std::process::Output;
use support::{ok, pipeplan, shipped_str as shipped};

/// Runs `pipeplan` and checks that it succeeded (stderr in the failure message).
fn succeeds(args: &[&str]) -> Output {
    let out = pipeplan(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const GPT: &str = "gpt3-2.6b-s2048-b1-16gpu-32gib.json";

#[test]
fn profile_plan_prints_runs_as_json_and_csv() {
    let out = succeeds(&["profile-plan", &shipped(GPT), "--method", "mcap", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["method"], "mcap");
    let runs = doc["runs"].as_array().unwrap();
    let layers = doc["layers"].as_u64().unwrap() as usize;
    // About L + 1 runs per batch size, two batch sizes, every run over all 16 GPUs.
    assert!(runs.len() <= 2 * (layers + 16), "{} runs", runs.len());
    for r in runs {
        assert_eq!(r["parallelism"], "pp");
        assert_eq!(r["stages"].as_array().unwrap().len(), 16);
    }
    let out = succeeds(&[
        "profile-plan",
        &shipped(GPT),
        "--method",
        "capture",
        "--csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("run,parallelism,degree,batch,stages")
    );
    for kind in [",dp,2,", ",tp,2,", ",dp,4,", ",tp,4,", ",pp,1,"] {
        assert!(text.contains(kind), "{kind} missing");
    }
    let out = ok(&["profile-plan", &shipped(GPT), "--method", "capslog"]);
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("profiling runs (capslog)"));
}

#[test]
fn profile_plan_rejects_bad_input() {
    let out = pipeplan(&["profile-plan", &shipped(GPT), "--method", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pipeplan(&["profile-plan", &shipped(GPT), "--batch=0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--batch"));
}

#[test]
fn compare_reports_memory_vectors_and_evaluations() {
    let out = pipeplan(&[
        "compare",
        &shipped("resnet50-1000px-b8-4gpu-8gib.json"),
        "--algos",
        "capture-exact,capture,mcap-bf,mcap-bo,capslog-bs,capslog-bs-tb",
        "--csv",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header = rdr.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        let claimed: Vec<&str> = r[col("claimed_memory_vector")].split(' ').collect();
        let evaluated: Vec<&str> = r[col("evaluated_memory_vector")].split(' ').collect();
        assert_eq!(claimed.len(), 4);
        assert_eq!(evaluated.len(), 4);
        assert_eq!(&r[col("claimed_objective_name")], "predicted peak memory");
        // Everyone is measured against capture-exact's optimum.
        assert_eq!(&r[col("exact_reference")], "capture-exact", "{}", &r[1]);
        assert!(r[col("gap_vs_exact")].parse::<f64>().unwrap() >= -1e-12);
    }
    let bo = rows.iter().find(|r| &r[1] == "mcap-bo").unwrap();
    assert_eq!(&bo[col("evaluations")], "100.0");
    let exact = rows.iter().find(|r| &r[1] == "capture-exact").unwrap();
    assert_eq!(&exact[col("status")], "optimal");
}

#[test]
fn profile_plan_takes_runnable_profiling_batches() {
    // GPT-3's micro-batch is 1: a quarter and a half of it are no runnable batch, and the
    // default plan says so.
    let out = succeeds(&["profile-plan", &shipped(GPT), "--method", "mcap", "--csv"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("0.25 and 0.5 is not a whole number") && err.contains("--profile-batches"),
        "{err}"
    );
    // Only the fractional size is named; sizes in either order.
    let out = pipeplan(&["profile-plan", &shipped(GPT), "--batch", "2", "--csv"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("size 0.5 is not"), "{err}");
    let out = ok(&["profile-plan", &shipped(GPT), "--profile-batches", "2,0.5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("size 0.5 is not"), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().nth(2).unwrap();
    assert!(first.contains("  0.5  "), "low size first: {first}");
    let out = pipeplan(&[
        "profile-plan",
        &shipped(GPT),
        "--method",
        "mcap",
        "--profile-batches",
        "1,2",
        "--csv",
    ]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let batches: std::collections::BTreeSet<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert_eq!(batches.into_iter().collect::<Vec<_>>(), ["1.0", "2.0"]);
    let gpt = shipped(GPT);
    for bad in [
        &["--profile-batches", "2,2"][..],
        &["--profile-batches", "1"],
        &["--profile-batches", "-1,2"],
        &["--profile-batches", "1,2", "--batch", "4"],
    ] {
        let mut args = vec!["profile-plan", gpt.as_str()];
        args.extend_from_slice(bad);
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--profile-batches"), "{bad:?}: {err}");
    }
}

#[test]
fn solve_names_the_instance_file_in_an_extension_error_but_not_in_an_option_error() {
    let text = std::fs::read_to_string(support::shipped("resnet50-1000px-b8-4gpu-8gib.json"))
        .expect("a shipped instance");
    let mut inst: serde_json::Value = serde_json::from_str(&text).unwrap();
    let layers = inst["model"]["layers"].as_array().unwrap().len();
    // One value short: the family refuses the statistics when it reads them.
    inst["extensions"]["memory_profile"] = serde_json::json!({"statistics": [{
        "parallelism": "pp", "degree": 1, "batch": 8,
        "m_i": vec![1e9; layers - 1], "m_a": vec![1e8; layers],
    }]});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short-profile.json");
    std::fs::write(&path, serde_json::to_string(&inst).unwrap()).unwrap();
    let file = path.display().to_string();
    let out = pipeplan(&["solve", &file, "--algo", "mcap-bf"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: {file}: extensions.memory_profile.statistics[0].m_i: {} values",
            layers - 1
        )),
        "{err}"
    );
    let out = pipeplan(&["solve", &file, "--algo", "madpipe", "--set", "rounds=0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: --set rounds:"), "{err}");
}
