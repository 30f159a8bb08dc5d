//! `pipeplan import --from galvatron` and `solve --algo galvatron-*` end to end.

mod support;

use std::path::PathBuf;
use support::{ok, pipeplan};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("formulations/tests/fixtures/galvatron")
}

/// `pipeplan import --from galvatron --config CONFIG` over the fixtures' profiles.
fn import(config: &std::path::Path) -> std::process::Output {
    pipeplan(&[
        "import",
        "--from",
        "galvatron",
        "--config",
        config.to_str().unwrap(),
        "--data-root",
        fixtures().to_str().unwrap(),
    ])
}

#[test]
fn import_then_solve() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tiny.json");
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

/// Counts that would take the import or the search past any memory (a mistyped layer count, GPU
/// count or batch range) are refused by field, as the other malformed values are.
#[test]
fn absurd_counts_are_refused_by_field() {
    let base = fixture_config();
    let dir = tempfile::tempdir().unwrap();
    // Each case: the config's fields edited (pointer, value), and the error it must give.
    let cases: [(Vec<(&str, serde_json::Value)>, &str); 6] = [
        (
            vec![("/config/model_layer_configs/0/layer_num", 1e20.into())],
            "config.model_layer_configs[0].layer_num: 1e20 is not a layer count",
        ),
        (
            vec![("/config/model_layer_configs/1/layer_num", 2.5.into())],
            "config.model_layer_configs[1].layer_num: 2.5 is not a layer count",
        ),
        (
            vec![
                ("/config/num_nodes", 65536.into()),
                ("/config/num_gpus_per_node", 65536.into()),
            ],
            "config.num_gpus_per_node: nodes x GPUs per node is more GPUs than can be counted",
        ),
        (
            vec![("/config/settle_bsz", 4294967304u64.into())],
            "config.settle_bsz: at most 4294967295",
        ),
        (
            vec![("/config/settle_chunk", 4294967304u64.into())],
            "config.settle_chunk: at most 4294967295",
        ),
        (
            vec![
                ("/config/settle_bsz", (-1).into()),
                ("/config/max_bsz", u32::MAX.into()),
                ("/config/bsz_scale", 1.into()),
            ],
            "config.max_bsz: the batch-size search would visit",
        ),
    ];
    for (edits, want) in cases {
        let mut config = base.clone();
        for (at, value) in edits {
            match config.pointer_mut(at) {
                Some(v) => *v = value,
                None => {
                    let (parent, key) = at.rsplit_once('/').unwrap();
                    config.pointer_mut(parent).unwrap()[key] = value;
                }
            }
        }
        let path = dir.path().join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let o = import(&path);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{want}: {e}");
        assert!(
            e.contains(want) && e.contains("config.json: "),
            "{want}: {e}"
        );
    }
}

/// A layer of absurd activation bytes (finite, so a valid instance) is a footprint that never
/// fits the DP's budget, not an overflow of its memory units.
#[test]
fn an_absurd_footprint_never_fits_and_never_overflows() {
    let path = support::shipped("swin-huge-224px-b32-8gpu-16gib.json");
    let mut inst: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    inst["model"]["layers"][26]["saved"] = 1e308.into();
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("swin.json");
    std::fs::write(&edited, inst.to_string()).unwrap();
    let o = pipeplan(&[
        "solve",
        edited.to_str().unwrap(),
        "--algo",
        "galvatron-base",
        "--time-limit",
        "10",
        "--json",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{e}");
    if o.status.success() {
        let sol: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(sol["evaluated"]["fits"], false, "{sol}");
    }
}

/// A bare config (the object the engine harness takes, without the recording's `config`
/// wrapper) imports as the same instance; a JSON file that is neither names the field.
#[test]
fn a_bare_config_imports_as_its_recording_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let doc = fixture_config();
    let bare = dir.join("bare.json");
    std::fs::write(&bare, doc["config"].to_string()).unwrap();
    let instance = |cfg: &std::path::Path| {
        let o = import(cfg);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["name"] = serde_json::Value::Null;
        v
    };
    assert_eq!(instance(&bare), instance(&fixtures().join("config.json")));
    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"result": {}}"#).unwrap();
    let o = import(&other);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("other.json") && e.contains("config: missing") && e.contains("engine_args"),
        "{e}"
    );
}

/// The fixture config (a recording's form, `{"config": ...}`).
fn fixture_config() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("config.json")).unwrap()).unwrap()
}

/// `pipeplan solve --from galvatron CONFIG --algo galvatron-base` over the fixtures' profiles,
/// the fixture config with `edits` set in it: the exit code and stderr.
fn solve_edited(edits: &serde_json::Value) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = fixture_config();
    for (k, v) in edits.as_object().unwrap() {
        doc["config"][k] = v.clone();
    }
    let cfg = tmp.path().join("edited.json");
    std::fs::write(&cfg, doc.to_string()).unwrap();
    let o = pipeplan(&[
        "solve",
        "--from",
        "galvatron",
        cfg.to_str().unwrap(),
        "--data-root",
        fixtures().to_str().unwrap(),
        "--algo",
        "galvatron-base",
    ]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A one-strategy search space whose degree exceeds the GPUs (`search_space tp` with
/// `max_tp_deg 8` on 4 GPUs) leaves no data-parallel replica: no plan, as in the engine, and the
/// message names the preset and the limit to change.
#[test]
fn a_preset_larger_than_the_cluster_is_named() {
    for (space, limit) in [("tp", "max_tp_deg"), ("pp", "max_pp_deg")] {
        let (code, e) = solve_edited(&serde_json::json!({"search_space": space, limit: 8}));
        assert_ne!(code, Some(0));
        assert!(
            e.contains(&format!("search_space `{space}` fixes"))
                && e.contains(&format!("the config's {limit} a value of at most 4")),
            "{e}"
        );
    }
    // tp 4 fits the GPUs, but with the vocabulary layers pinned at tp 1 (`disable_vtp`) and the
    // global memory buffer on, the engine searches layer tp up to 1 only.
    let (code, e) = solve_edited(&serde_json::json!({"search_space": "tp", "disable_vtp": 1}));
    assert_ne!(code, Some(0));
    assert!(
        e.contains("has tp 4 or more") && e.contains("set disable_vtp 0"),
        "{e}"
    );
}

/// Batches and chunk counts for which the engine keeps no strategy: each message names the
/// engine's rule and a setting that meets it.
#[test]
fn batches_and_chunk_counts_the_engine_skips_are_named() {
    let cases = [
        (
            serde_json::json!({"settle_bsz": 6, "settle_chunk": 4}),
            "settle_chunk 4 does not divide the batch of 6",
        ),
        (
            serde_json::json!({"settle_bsz": 3, "max_pp_deg": 1, "disable_vtp": 1}),
            "at least 4 groups, which the batch does not fill; give a batch that is a multiple \
             of 4 (--set settle_bsz=N)",
        ),
        (
            serde_json::json!({"settle_bsz": 24, "settle_chunk": 4, "max_pp_deg": 1,
                               "disable_vtp": 1}),
            "4 micro-batches of a replica's 6 samples take 2 samples each, which make 3 \
             micro-batches",
        ),
    ];
    for (edits, expected) in &cases {
        let (code, e) = solve_edited(edits);
        assert_eq!(code, Some(1), "{edits}");
        assert!(e.contains(expected), "{edits}: {e}");
    }
}
