//! `pipeplan import --from galvatron` and `solve --algo galvatron-*` end to end.

mod support;

use std::path::PathBuf;
use support::{ok, pipeplan};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("formulations/tests/fixtures/galvatron")
}

#[test]
fn import_then_solve() {
    let out = std::env::temp_dir().join(format!(
        "pipeplan-galvatron-cli-{}.json",
        std::process::id()
    ));
    let cfg = fixtures().join("config.json");
    ok(&[
        "import",
        "--from",
        "galvatron",
        "--config",
        cfg.to_str().unwrap(),
        "--data-root",
        fixtures().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = ok(&[
        "solve",
        out.to_str().unwrap(),
        "--algo",
        "galvatron-bmw",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sol = if v.is_array() { v[0].clone() } else { v };
    assert!(sol["claimed"]["throughput"].as_f64().unwrap() > 0.0);
    assert!(sol["evaluated"]["throughput"].as_f64().unwrap() > 0.0);
    let _ = std::fs::remove_file(out);
}

#[test]
fn import_errors_are_one_line() {
    let o = pipeplan(&["import", "--from", "galvatron"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--config"));
    let cfg = fixtures().join("config.json");
    let o = pipeplan(&[
        "import",
        "--from",
        "galvatron",
        "--config",
        cfg.to_str().unwrap(),
        "--data-root",
        "/nonexistent",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("/nonexistent") && e.contains("handwritten_time_profile.json"),
        "{e}"
    );
}
