//! `pipeplan max-batch` and `solve --algo dawnpiper` from the command line.

mod support;

use support::pipeplan;

#[test]
fn max_batch_prints_one_row_per_algorithm_and_setting() {
    let out = pipeplan(&[
        "max-batch",
        "instances/inception-v3-1000px-b8-4gpu-6gib.json",
        "--algo",
        "dawnpiper,balanced-time",
        "--json",
        "--max-micro-batch",
        "64",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["algorithm"], "dawnpiper");
    assert_eq!(rows[0]["memopt"], "on");
    assert_eq!(rows[1]["memopt"], "off");
    assert_eq!(rows[2]["algorithm"], "balanced-time");
}

#[test]
fn max_batch_rejects_unknown_algorithms() {
    let out = pipeplan(&[
        "max-batch",
        "instances/inception-v3-1000px-b8-4gpu-6gib.json",
        "--algo",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--algo: unknown algorithm"));
}

#[test]
fn solve_with_dawnpiper_prints_actions_in_json() {
    let out = pipeplan(&[
        "solve",
        "instances/densenet121-1000px-b8-8gpu-4gib.json",
        "--algo",
        "dawnpiper",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sol: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sol["evaluated"]["fits"], true);
    let actions: usize = sol["plan"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.get("recompute")
                .map_or(0, |r| r.as_array().unwrap().len())
        })
        .sum();
    assert!(actions > 0);
}

/// An imported operator graph solved with links in the objective (`--set comm=include`): the
/// claimed objective names the links and, on this async plan, is the evaluated period; a bad
/// `comm` value is one clear error.
#[test]
fn solve_with_comm_include_claims_the_evaluated_period() {
    let dir = std::env::temp_dir().join(format!("pipeplan-dawnpiper-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inst = dir.join("tiny.json");
    let out = pipeplan(&[
        "import",
        "--from",
        "dnn-partitioning",
        "formulations/tests/fixtures/dawnpiper/tiny_operator_graph.json",
        "--gpus",
        "2",
        "--memory",
        "8GiB",
        "--bandwidth",
        "1GB/s",
        "-o",
        inst.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = pipeplan(&[
        "solve",
        inst.to_str().unwrap(),
        "--algo",
        "dawnpiper",
        "--stages",
        "2",
        "--set",
        "schedule=async",
        "--set",
        "comm=include",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sol: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let obj = &sol["claimed"]["objective"];
    assert!(obj["name"].as_str().unwrap().contains("link"), "{obj}");
    let (claimed, period) = (
        obj["value"].as_f64().unwrap(),
        sol["evaluated"]["period_ms"].as_f64().unwrap(),
    );
    assert!(
        (claimed - period).abs() <= 1e-9 * period,
        "{claimed} vs {period}"
    );
    let out = pipeplan(&[
        "solve",
        inst.to_str().unwrap(),
        "--algo",
        "dawnpiper",
        "--set",
        "comm=sometimes",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--set comm"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn max_batch_varies_the_settings_asked_for_only_where_declared() {
    let out = pipeplan(&[
        "max-batch",
        "instances/inception-v3-1000px-b8-4gpu-6gib.json",
        "--algos",
        "dawnpiper,balanced-time",
        "--vary",
        "memopt=swap,recompute",
        "--time-limit",
        "1500ms",
        "--max-micro-batch",
        "16",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["memopt"], "swap");
    assert_eq!(rows[1]["memopt"], "recompute");
    assert_eq!(rows[2]["algorithm"], "balanced-time");
    assert!(rows[2].get("memopt").is_none());
}
