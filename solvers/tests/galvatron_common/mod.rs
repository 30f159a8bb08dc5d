//! The Galvatron engine's runs the tests replay: the peers' golden recordings and the project's
//! own runs (`references/galvatron/`), with the data folder their paths are relative to.

use pipeplan_formulations::peers;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `.json` files of `dir`, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("json"))
        .collect();
    files.sort();
    files
}

/// The golden files (the peers' and the project's own runs of the engine) and the data folder
/// their paths are relative to; `None`, with a SKIPPED line, without the peers folder.
pub fn goldens(what: &str) -> Option<(Vec<PathBuf>, PathBuf)> {
    let dir = peers::subdir("galvatron/golden", what)?;
    let data = dir.parent().unwrap().join("v2.x_14f5972");
    assert!(data.is_dir(), "{} is missing", data.display());
    let mut files = json_files(&dir);
    assert!(!files.is_empty(), "no golden files in {}", dir.display());
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../references/galvatron");
    let own = json_files(&own);
    assert!(!own.is_empty(), "no reference runs in references/galvatron");
    files.extend(own);
    Some((files, data))
}

/// Whether the engine found no plan in golden `doc` (`result.throughput_samples_per_s` is null:
/// "no valid configuration").
pub fn engine_found_none(doc: &Value) -> bool {
    doc["result"]["throughput_samples_per_s"].is_null()
}
