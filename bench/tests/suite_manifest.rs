//! A suite's manifest and hashes: mismatches, missing files, malformed lines and stray files
//! are reported naming the member, file, line and field; the hash ignores formatting.

use pipeplan_bench::suite::{self, instance_hash, manifest, Member, Suite, SuiteError, MANIFEST};
use pipeplan_formulations::Instance;
use std::path::{Path, PathBuf};

const A: &str = "resnet50-1000px-b8-4gpu-async-tight";
const B: &str = "bert-large-s512-b8-2gpu-1f1b-loose";

/// A two-member suite copied from `suites/v1` into a fresh folder.
fn small_suite() -> (tempfile::TempDir, Vec<Member>) {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/v1");
    let all = manifest::read(&shipped.join(MANIFEST)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("instances")).unwrap();
    let members: Vec<Member> = all
        .into_iter()
        .filter(|m| m.name == A || m.name == B)
        .collect();
    assert_eq!(members.len(), 2);
    for m in &members {
        std::fs::copy(shipped.join(&m.file), dir.path().join(&m.file)).unwrap();
    }
    manifest::write(&dir.path().join(MANIFEST), &members).unwrap();
    (dir, members)
}

fn file_of(dir: &Path, name: &str) -> PathBuf {
    dir.join("instances").join(format!("{name}.json"))
}

fn message(e: SuiteError) -> String {
    e.to_string()
}

#[test]
fn a_changed_instance_is_named_with_its_file() {
    let (dir, _) = small_suite();
    assert!(Suite::open(dir.path()).is_ok());
    let path = file_of(dir.path(), B);
    let mut inst = Instance::from_path(&path).unwrap();
    inst.cluster.memory *= 2.0;
    std::fs::write(&path, inst.to_json()).unwrap();
    let e = message(Suite::open(dir.path()).unwrap_err());
    assert!(e.contains(&format!("member {B}")), "{e}");
    assert!(e.contains(&format!("{B}.json")), "{e}");
    assert!(e.contains("hash"), "{e}");
    let c = suite::check(dir.path()).unwrap();
    assert_eq!(c.members, 2);
    assert_eq!(c.problems.len(), 1);
    assert_eq!(c.problems[0].member.as_deref(), Some(B));
}

#[test]
fn formatting_does_not_change_the_hash() {
    let (dir, members) = small_suite();
    let path = file_of(dir.path(), A);
    let inst = Instance::from_path(&path).unwrap();
    let compact = serde_json::to_string(&inst).unwrap();
    std::fs::write(&path, compact).unwrap();
    assert!(Suite::open(dir.path()).is_ok());
    assert_eq!(instance_hash(&inst), members[0].hash);
}

#[test]
fn a_missing_file_is_named() {
    let (dir, _) = small_suite();
    std::fs::remove_file(file_of(dir.path(), A)).unwrap();
    let e = message(Suite::open(dir.path()).unwrap_err());
    assert!(
        e.contains(&format!("member {A}")) && e.contains("not found"),
        "{e}"
    );
    let c = suite::check(dir.path()).unwrap();
    assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
}

#[test]
fn a_manifest_edited_by_hand_is_caught() {
    let (dir, mut members) = small_suite();
    members[1].layers += 1;
    manifest::write(&dir.path().join(MANIFEST), &members).unwrap();
    let e = message(Suite::open(dir.path()).unwrap_err());
    assert!(e.contains("layers"), "{e}");
}

#[test]
fn stray_instance_files_are_listed_by_check() {
    let (dir, _) = small_suite();
    std::fs::copy(file_of(dir.path(), A), file_of(dir.path(), "extra")).unwrap();
    let c = suite::check(dir.path()).unwrap();
    assert_eq!(c.problems.len(), 1);
    assert_eq!(c.problems[0].member, None);
    assert!(c.problems[0].message.contains("extra.json"));
}

/// The error of reading a manifest whose second line is `line`.
fn bad_second_line(line: &str) -> String {
    let (dir, members) = small_suite();
    let first = serde_json::to_string(&members[0]).unwrap();
    let path = dir.path().join(MANIFEST);
    std::fs::write(&path, format!("{first}\n{line}\n")).unwrap();
    let e = message(Suite::open(dir.path()).unwrap_err());
    // `check` fails the same way, on the manifest.
    assert_eq!(message(suite::check(dir.path()).unwrap_err()), e);
    assert!(e.contains(MANIFEST) && e.contains("line 2"), "{e}");
    e
}

#[test]
fn malformed_manifest_lines_are_named() {
    let (_, members) = small_suite();
    let good = serde_json::to_value(&members[1]).unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut v = good.clone();
        v[key] = value;
        v.to_string()
    };
    let e = bad_second_line("{\"name\": \"x\",");
    assert!(e.contains("column"), "{e}");
    let mut no_hash = good.clone();
    no_hash.as_object_mut().unwrap().remove("hash");
    assert!(bad_second_line(&no_hash.to_string()).contains("hash"));
    assert!(bad_second_line(&with("layers", "many".into())).contains("invalid type"));
    assert!(bad_second_line(&with("hash", "md5:00".into())).contains("hash:"));
    assert!(bad_second_line(&with("file", "../x.json".into())).contains("file:"));
    assert!(bad_second_line(&with("name", "a b".into())).contains("name:"));
    assert!(bad_second_line(&with("tags", serde_json::json!([""]))).contains("tags:"));
    assert!(bad_second_line(&with("extra", 1.into())).contains("unknown field"));
    let twice = serde_json::to_string(&members[0]).unwrap();
    assert!(bad_second_line(&twice).contains("listed twice"));
    let same_file = with("name", "other".into());
    let mut v: serde_json::Value = serde_json::from_str(&same_file).unwrap();
    v["file"] = members[0].file.clone().into();
    assert!(bad_second_line(&v.to_string()).contains("another member"));
}

#[test]
fn a_folder_without_manifest_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let e = message(Suite::open(dir.path()).unwrap_err());
    assert!(e.contains(MANIFEST), "{e}");
    assert!(suite::check(dir.path()).is_err());
}

#[test]
fn a_partial_build_is_not_written() {
    let built = suite::generate("v1", None).unwrap();
    assert!(!built.skipped.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let e = message(built.write(&dir.path().join("v1")).unwrap_err());
    assert!(e.contains("incomplete"), "{e}");
    assert!(suite::generate("v0", None).is_err());
}
