//! `pipeplan suite generate | check | list` end to end: output, exit codes, messages.

mod support;

use pipeplan_formulations::peers;
use support::{ok, pipeplan, root, stderr, stdout};

fn shipped() -> String {
    root().join("suites/v1").display().to_string()
}

#[test]
fn the_shipped_suite_checks() {
    let o = ok(&["suite", "check", &shipped()]);
    assert!(stdout(&o).contains("207 members"), "{}", stdout(&o));
    let o = pipeplan(&["suite", "check", &shipped(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["members"], 207);
    assert_eq!(v["problems"], serde_json::json!([]));
}

#[test]
fn list_filters_by_every_tag_given() {
    let o = ok(&[
        "suite",
        "list",
        &shipped(),
        "--tag",
        "memory:tight",
        "--tag",
        "schedule:gpipe",
        "--json",
    ]);
    let v: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(!v.is_empty());
    for m in &v {
        let tags: Vec<&str> = m["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(tags.contains(&"memory:tight") && tags.contains(&"schedule:gpipe"));
    }
    let table = stdout(&pipeplan(&["suite", "list", &shipped()]));
    assert!(table.starts_with("member"), "{table}");
    assert_eq!(table.lines().count(), 1 + 207);
    let csv = stdout(&pipeplan(&["suite", "list", &shipped(), "--csv"]));
    assert!(csv.starts_with("name,file,hash,layers,gpus,tags"), "{csv}");
}

#[test]
fn an_unknown_tag_lists_the_known_ones() {
    let o = pipeplan(&["suite", "list", &shipped(), "--tag", "memory:huge"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.starts_with("error: ") && e.contains("memory:tight"),
        "{e}"
    );
}

#[test]
fn check_names_the_changed_member_and_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("suites/v1");
    let name = "gpt3-2.6b-s2048-b1-4gpu-1f1b-moderate";
    let manifest = std::fs::read_to_string(src.join("manifest.jsonl")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.contains(&format!("\"{name}\"")))
        .unwrap();
    std::fs::create_dir(dir.path().join("instances")).unwrap();
    std::fs::write(dir.path().join("manifest.jsonl"), format!("{line}\n")).unwrap();
    let file = format!("instances/{name}.json");
    let text = std::fs::read_to_string(src.join(&file)).unwrap();
    std::fs::write(
        dir.path().join(&file),
        text.replacen("\"gpus\": 4", "\"gpus\": 2", 1),
    )
    .unwrap();
    let d = dir.path().display().to_string();
    let o = pipeplan(&["suite", "check", &d]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.starts_with("error: "), "{e}");
    assert!(
        e.contains(&format!("member {name}")) && e.contains(&file),
        "{e}"
    );
    assert!(stdout(&o).contains("invalid"), "{}", stdout(&o));
    // A malformed line is named.
    std::fs::write(
        dir.path().join("manifest.jsonl"),
        format!("{line}\n{{oops\n"),
    )
    .unwrap();
    let o = pipeplan(&["suite", "check", &d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("manifest.jsonl: line 2"),
        "{}",
        stderr(&o)
    );
    // No manifest at all.
    let o = pipeplan(&[
        "suite",
        "list",
        &dir.path().join("nowhere").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("manifest.jsonl"), "{}", stderr(&o));
}

#[test]
fn generate_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s").display().to_string();
    let o = pipeplan(&["suite", "generate", "v0", "-o", &out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown suite version \"v0\""),
        "{}",
        stderr(&o)
    );
    let missing = dir.path().join("no-peers").display().to_string();
    let o = pipeplan(&["suite", "generate", "v1", "-o", &out, "--peers", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("peers folder not found"),
        "{}",
        stderr(&o)
    );
    // A folder that is not empty is never overwritten (the peers check comes first).
    if let Some(p) = peers::dir("generate_refuses_bad_requests (non-empty folder)") {
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let busy = dir.path().display().to_string();
        let o = pipeplan(&[
            "suite",
            "generate",
            "v1",
            "-o",
            &busy,
            "--peers",
            &p.display().to_string(),
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
    }
}

#[test]
fn generate_writes_the_shipped_suite() {
    let Some(p) = peers::dir("generate_writes_the_shipped_suite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v1");
    ok(&[
        "suite",
        "generate",
        "v1",
        "-o",
        &out.display().to_string(),
        "--peers",
        &p.display().to_string(),
    ]);
    let ours = std::fs::read_to_string(out.join("manifest.jsonl")).unwrap();
    let shipped = std::fs::read_to_string(root().join("suites/v1/manifest.jsonl")).unwrap();
    assert_eq!(ours, shipped);
    ok(&["suite", "check", &out.display().to_string()]);
}
