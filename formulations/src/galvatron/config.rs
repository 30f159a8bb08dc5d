//! The `config` of a Galvatron import document: its two forms (the golden form flattened into
//! the flat one), the settings it sets, the file paths it names (with their notes), and which
//! engine arguments pipeplan emulates. [`super::import`] reads the profiles from here on.

use super::import::field;
use super::settings::Settings;
use crate::error::InputError;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Settings from the engine's arguments; returns the ignored keys.
pub(super) fn settings_from(
    config: &Map<String, Value>,
) -> Result<(Settings, Vec<String>), InputError> {
    // Every key a config may set: a default with the fields written only when off switched off.
    let every = Settings {
        fine_grained_mode: false,
        sp_space: "tp+sp".into(),
        ..Settings::default()
    };
    let defaults = serde_json::to_value(every).expect("settings serialize");
    let known = defaults.as_object().expect("object");
    let mut picked = Map::new();
    let mut ignored = Vec::new();
    for (k, v) in config {
        match known.get(k) {
            Some(Value::Bool(_)) => {
                let b = match v {
                    Value::Bool(b) => *b,
                    Value::Number(n) if n.as_f64() == Some(0.0) => false,
                    Value::Number(n) if n.as_f64() == Some(1.0) => true,
                    _ => return Err(field(format!("config.{k}"), "expected true/false or 0/1")),
                };
                picked.insert(k.clone(), Value::Bool(b));
            }
            Some(_) => {
                picked.insert(k.clone(), v.clone());
            }
            None => ignored.push(k.clone()),
        }
    }
    let s: Settings = crate::error::parse_json(&Value::Object(picked).to_string(), "config")
        .map_err(|e| match e {
            InputError::Json {
                field: f, message, ..
            } => field(format!("config.{f}"), message),
            e => e,
        })?;
    s.check("config")?;
    Ok((s, ignored))
}

pub(super) fn resolve(
    root: &Path,
    config: &Map<String, Value>,
    key: &str,
    name: &str,
) -> Result<PathBuf, InputError> {
    let rel = config.get(key).and_then(Value::as_str).ok_or_else(|| {
        field(
            format!("config.{key}"),
            "missing: a path relative to --data-root",
        )
    })?;
    let p = root.join(rel);
    // A folder (or, when it does not exist, anything not named *.json) gets the engine's name.
    let folder =
        p.is_dir() || (!p.exists() && p.extension().and_then(|e| e.to_str()) != Some("json"));
    Ok(if folder { p.join(name) } else { p })
}

/// The file a config's path stands for. A trailing note in parentheses is dropped, except
/// `"dir/x.json (staged copy of y.json)"`, which means the engine read the content of `y.json`
/// under the name `x.json`: that is `dir/y.json` (a `y` with a folder is relative to the data
/// root, like every path).
fn resolve_note(path: &str) -> String {
    let Some(i) = path.find(" (").filter(|_| path.ends_with(')')) else {
        return path.to_string();
    };
    let (named, note) = (&path[..i], &path[i + 2..path.len() - 1]);
    match note.strip_prefix("staged copy of ").map(str::trim) {
        Some(source) if !source.is_empty() => {
            if source.contains('/') {
                source.to_string()
            } else {
                match named.rfind('/') {
                    Some(j) => format!("{}/{source}", &named[..j]),
                    None => source.to_string(),
                }
            }
        }
        _ => named.to_string(),
    }
}

/// The flat form of a config written as the engine's golden files write it: `engine_args` (every
/// search argument), `layer_configs`, `profile_files.{memory,computation}` and
/// `hardware_files.{allreduce,p2p,overlap,sp_time}`. A config without `engine_args` is already
/// flat and is returned as it is.
pub(super) fn flatten(config: &Map<String, Value>) -> Result<Map<String, Value>, InputError> {
    let Some(args) = config.get("engine_args") else {
        return Ok(config.clone());
    };
    let args = args.as_object().ok_or_else(|| {
        field(
            "config.engine_args",
            "expected an object of search arguments",
        )
    })?;
    let mut flat = args.clone();
    for key in ["model_name", "model_dir"] {
        if let Some(v) = config.get(key) {
            flat.insert(key.into(), v.clone());
        }
    }
    if let Some(v) = config.get("layer_configs") {
        flat.insert("model_layer_configs".into(), v.clone());
    }
    let paths = [
        ("profile_files", "computation", "time_profiling_path"),
        ("profile_files", "memory", "memory_profiling_path"),
        (
            "hardware_files",
            "allreduce",
            "allreduce_bandwidth_config_path",
        ),
        ("hardware_files", "p2p", "p2p_bandwidth_config_path"),
        ("hardware_files", "overlap", "overlap_coe_path"),
        ("hardware_files", "sp_time", "sp_time_path"),
    ];
    for (group, key, flat_key) in paths {
        let Some(v) = config.get(group).and_then(|g| g.get(key)) else {
            continue;
        };
        let p = v.as_str().ok_or_else(|| {
            field(
                format!("config.{group}.{key}"),
                "expected a path relative to --data-root",
            )
        })?;
        flat.insert(flat_key.into(), Value::String(resolve_note(p)));
    }
    Ok(flat)
}

/// Engine arguments pipeplan emulates, with the values it emulates (the engine's default
/// first). A config that sets one of them to another value imports (the static profile values
/// are read instead), and [`not_emulated`] names it: the engine's plan and throughput may then
/// differ (`docs/galvatron.md`, "Golden replays").
const EMULATED: [(&str, &[&str]); 4] = [
    ("time_profile_mode", &["static", "sequence"]),
    ("memory_profile_mode", &["static", "sequence"]),
    ("sp_space", &["tp", "tp+sp"]),
    // 0 leaves the engine's DP without a vocabulary-tp choice (`vtp` stays -1): it reports a
    // cost with no strategy for any layer (run on `g3_bert1024_8gpu_4GB_bsz256`'s config; the
    // harness cannot record such an answer). pipeplan plans with the pipeline cost model.
    ("use_pipeline_costmodel", &["1", "true"]),
];

/// The config of a file: its `config` object (a recording of the engine holds one), or the file
/// itself when it is a bare config, as the engine harness takes (`engine_args` or
/// `model_layer_configs` at the top level).
pub fn config_of(doc: &Value) -> Result<&Map<String, Value>, InputError> {
    match doc.get("config") {
        Some(Value::Object(config)) => Ok(config),
        Some(_) => Err(field("config", "must be an object")),
        None => doc
            .as_object()
            .filter(|d| d.contains_key("engine_args") || d.contains_key("model_layer_configs"))
            .ok_or_else(|| {
                field(
                    "config",
                    "missing: the file must hold a `config` object, or be a config itself \
                     (`engine_args` or `model_layer_configs` at the top level)",
                )
            }),
    }
}

/// The engine arguments of a config (either form) whose values pipeplan does not emulate, as
/// `name=value`; empty when the engine's search is reproduced as modelled.
pub fn not_emulated(doc: &Value) -> Result<Vec<String>, InputError> {
    let flat = flatten(config_of(doc)?)?;
    let text = |key: &str| {
        flat.get(key)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    };
    let mut out: Vec<String> = EMULATED
        .iter()
        .filter_map(|(key, modelled)| {
            let v = text(key)?;
            (!modelled.contains(&v.as_str())).then(|| format!("{key}={v}"))
        })
        .collect();
    // `recommend_min_bsz` acts only in a batch-size search (`settle_bsz` not positive), where the
    // engine at 14f5972 raises a TypeError before searching (`estimate_strategy_max_bsz` calls
    // `get_pp_stage_for_bsz` without its `mbsz_dict`); pipeplan searches from `min_bsz`.
    let recommend = text("recommend_min_bsz").is_some_and(|v| v != "0" && v != "false");
    let searched = flat
        .get("settle_bsz")
        .and_then(Value::as_f64)
        .is_none_or(|b| b <= 0.0);
    if recommend && searched {
        out.push("recommend_min_bsz=1 (the engine raises a TypeError there)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{config_of, not_emulated, resolve_note};
    use serde_json::json;

    #[test]
    fn a_bare_config_is_its_own_config_and_anything_else_is_named() {
        let config = json!({"engine_args": {"settle_bsz": 64}, "model_name": "m"});
        let recorded = json!({"config": config.clone(), "result": {}});
        assert_eq!(config_of(&recorded).unwrap(), config.as_object().unwrap());
        assert_eq!(config_of(&config).unwrap(), config.as_object().unwrap());
        let flat = json!({"model_layer_configs": [], "settle_bsz": 64});
        assert_eq!(config_of(&flat).unwrap(), flat.as_object().unwrap());
        let not_object = config_of(&json!({"config": [1]})).unwrap_err().to_string();
        assert!(
            not_object.contains("config: must be an object"),
            "{not_object}"
        );
        for other in [json!({"result": {}}), json!([1]), json!(3)] {
            let e = config_of(&other).unwrap_err().to_string();
            assert!(e.contains("config: missing"), "{other}: {e}");
        }
    }

    #[test]
    fn arguments_the_engine_would_answer_differently_are_named() {
        let doc = |args: serde_json::Value| json!({"config": {"engine_args": args}});
        let plain = doc(json!({"settle_bsz": 256, "recommend_min_bsz": 1, "sp_space": "tp"}));
        assert!(not_emulated(&plain).unwrap().is_empty(), "a settled batch");
        let searched = doc(json!({"settle_bsz": -1, "recommend_min_bsz": 1}));
        assert_eq!(
            not_emulated(&searched).unwrap(),
            ["recommend_min_bsz=1 (the engine raises a TypeError there)"]
        );
        let no_costmodel = doc(json!({"use_pipeline_costmodel": 0, "recommend_min_bsz": 0}));
        assert_eq!(
            not_emulated(&no_costmodel).unwrap(),
            ["use_pipeline_costmodel=0"]
        );
        assert!(not_emulated(&doc(json!({"use_pipeline_costmodel": 1})))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_staged_copy_reads_its_source() {
        let staged = "hardware_configs/sp_time_1nodes_4gpus_per_node.json (staged copy of \
                      sp_time_1nodes_8gpus_per_node.json)";
        assert_eq!(
            resolve_note(staged),
            "hardware_configs/sp_time_1nodes_8gpus_per_node.json"
        );
        assert_eq!(
            resolve_note("a/x.json (staged copy of b/y.json)"),
            "b/y.json"
        );
        assert_eq!(resolve_note("x.json (staged copy of y.json)"), "y.json");
        // Any other note is only a note; a path without one is itself.
        assert_eq!(resolve_note("a/x.json (measured twice)"), "a/x.json");
        assert_eq!(resolve_note("a/x (1).json"), "a/x (1).json");
        assert_eq!(resolve_note("a/x.json"), "a/x.json");
    }
}
