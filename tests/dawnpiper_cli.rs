//! `pipeplan max-batch` and `solve --algo dawnpiper` from the command line.

mod support;

use support::{ok, ok_json, pipeplan};

#[test]
fn max_batch_prints_one_row_per_algorithm_and_setting() {
    let rows: serde_json::Value = ok_json(&[
        "max-batch",
        "instances/inception-v3-1000px-b8-4gpu-6gib.json",
        "--algo",
        "dawnpiper,balanced-time",
        "--json",
        "--max-micro-batch",
        "64",
    ]);
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
        "-a",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--algo: unknown algorithm"));
}

#[test]
fn solve_with_dawnpiper_prints_actions_in_json() {
    let sol: serde_json::Value = ok_json(&[
        "solve",
        "instances/densenet121-1000px-b8-8gpu-4gib.json",
        "--algo",
        "dawnpiper",
        "--json",
    ]);
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
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("tiny.json");
    ok(&[
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
    let sol: serde_json::Value = ok_json(&[
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
}

#[test]
fn max_batch_varies_the_settings_asked_for_only_where_declared() {
    let rows: serde_json::Value = ok_json(&[
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
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["memopt"], "swap");
    assert_eq!(rows[1]["memopt"], "recompute");
    assert_eq!(rows[2]["algorithm"], "balanced-time");
    assert!(rows[2].get("memopt").is_none());
}

/// A shipped instance with a `graph` extension whose node 2 reads node 3 and node 3 reads node
/// 2, written to a file of its own.
fn instance_with_cyclic_graph(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(support::shipped("resnet50-1000px-b8-4gpu-8gib.json"))
        .expect("a shipped instance");
    let mut inst: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<String> = inst["model"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect();
    let mut nodes: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::json!({ "name": n }))
        .collect();
    nodes[2]["inputs"] = serde_json::json!([names[3]]);
    nodes[3]["inputs"] = serde_json::json!([names[2]]);
    inst["extensions"]["graph"] = serde_json::json!({ "nodes": nodes });
    let path = dir.join("cyclic-graph.json");
    std::fs::write(&path, serde_json::to_string(&inst).unwrap()).unwrap();
    path
}

#[test]
fn a_bad_graph_extension_is_reported_when_the_instance_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = instance_with_cyclic_graph(dir.path());
    let file = path.display().to_string();
    let out = pipeplan(&["validate", &file]);
    assert_eq!(out.status.code(), Some(2));
    let text = support::stdout(&out);
    assert!(
        text.contains(&format!(
            "{file}: extensions.graph.nodes: the graph has a cycle"
        )),
        "{text}"
    );
    // Every algorithm, not only DawnPiper's, refuses the file, naming it.
    for algo in ["uniform", "dawnpiper"] {
        let out = pipeplan(&["solve", &file, "--algo", algo]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!(
                "error: {file}: extensions.graph.nodes: the graph has a cycle"
            )),
            "{err}"
        );
    }
}
