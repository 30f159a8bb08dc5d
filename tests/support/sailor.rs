//! Sailor's measured runs in the peers folder (`sailor/`), for the tests that read them.

use super::{pipeplan, stderr};
use pipeplan_formulations::peers;
use pipeplan_formulations::peers::sailor_runs;
use serde_json::Value;

/// The Sailor checkout of the peers folder; `None`, with a SKIPPED line, without it.
pub fn sailor() -> Option<std::path::PathBuf> {
    peers::subdir("sailor/sailor", "Sailor measured runs")
}

/// The string `key` of every member of a JSON array.
pub fn strings<'a>(array: &'a Value, key: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap())
        .collect()
}

/// The GH200 runs (Alps Clariden).
pub fn gh200_dir(root: &std::path::Path) -> std::path::PathBuf {
    root.join("Planner/simulations/validation/clariden")
}

/// [`sailor_runs::documented_runs`] as arguments: tests whose counts or fitted figures are
/// fixed pass these files rather than the folder, so that runs added to it change nothing there.
pub fn documented_runs(root: &std::path::Path, under: &str) -> Vec<String> {
    sailor_runs::documented_runs(root, under)
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// `args` with `runs` in place of the `"RUNS"` among them.
pub fn with_runs(args: &[&str], runs: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| match *a {
            "RUNS" => runs.to_vec(),
            a => vec![a.to_string()],
        })
        .collect()
}

/// A file or folder of the GH200 runs.
pub fn gh200_run(root: &std::path::Path, run: &str) -> std::path::PathBuf {
    gh200_dir(root).join(run)
}

/// OPT-350's profiles on `gpu`, 4 nodes, micro-batch 1 (the OPT-350 `N4` runs), written to `to`.
pub fn import_opt(root: &std::path::Path, gpu: &str, to: &std::path::Path) {
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
