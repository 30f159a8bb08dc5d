//! The measured runs of the peers folder's Sailor checkout that its README documents
//! (`sailor_runs.json` beside this file), by what `pipeplan accuracy` makes of them. Tests whose
//! counts or fitted figures are fixed read exactly these files, so that runs added beside them
//! in the folder change nothing there.

use std::path::{Path, PathBuf};

/// The verdicts `accuracy` gives runs, as `sailor_runs.json` groups them.
pub const VERDICTS: [&str; 3] = ["judged", "invalid", "unsupported"];

fn manifest() -> serde_json::Value {
    serde_json::from_str(include_str!("sailor_runs.json")).expect("sailor_runs.json parses")
}

/// The documented runs `accuracy` gives `verdict` (one of [`VERDICTS`]), as paths under
/// `Planner/simulations/validation`, sorted.
pub fn documented(verdict: &str) -> Vec<String> {
    of_verdict(&manifest(), verdict)
}

fn of_verdict(doc: &serde_json::Value, verdict: &str) -> Vec<String> {
    let mut names: Vec<String> = doc[verdict]
        .as_array()
        .unwrap_or_else(|| panic!("sailor_runs.json has no list {verdict:?}"))
        .iter()
        .map(|x| x.as_str().expect("a path").to_string())
        .collect();
    names.sort();
    names
}

/// The documented runs under `under` (a folder of `Planner/simulations/validation`: `""`,
/// `clariden`, `clariden/OPT-350/N1`...) of the Sailor checkout `root`, whatever their verdict,
/// sorted. Panics, naming the file, when one is missing: the peers folder is then not the one
/// documented.
pub fn documented_runs(root: &Path, under: &str) -> Vec<PathBuf> {
    let validation = root.join("Planner/simulations/validation");
    let prefix = if under.is_empty() {
        String::new()
    } else {
        format!("{}/", under.trim_end_matches('/'))
    };
    let doc = manifest();
    let mut runs: Vec<PathBuf> = VERDICTS
        .iter()
        .flat_map(|v| of_verdict(&doc, v))
        .filter(|name| name.starts_with(&prefix))
        .map(|name| {
            let path = validation.join(&name);
            assert!(
                path.is_file(),
                "{} is missing: the peers folder is not the one sailor_runs.json documents",
                path.display()
            );
            path
        })
        .collect();
    assert!(!runs.is_empty(), "no documented run under {under:?}");
    runs.sort();
    runs
}
