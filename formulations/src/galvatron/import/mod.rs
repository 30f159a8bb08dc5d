//! Importer of Galvatron profiles: a JSON document holding a `config` object (the engine's search
//! arguments, the model's layer configs, and the profile / hardware file paths relative to a data
//! root) becomes a pipeplan instance with the `layer_types` extension.
//!
//! `config` is read in two forms. The golden form, as the engine's recorded runs write it:
//! `engine_args` (every search argument), `model_name`, `layer_configs[]`,
//! `profile_files.{memory,computation}`, `hardware_files.{allreduce,p2p,overlap,sp_time}` (a path
//! may carry a note in parentheses after it, which is dropped). It is flattened into the flat
//! form below before anything is read.
//!
//! Flat-form keys read (all others are ignored and listed in the instance's `source`):
//! - every [`Settings`] field, under the engine's flag names (0/1 accepted for booleans);
//! - `model_name`; `model_layer_configs`: `[{"hidden_size", "layer_num", "seq_len"}]`;
//! - `time_profiling_path`, `memory_profiling_path`: files, or folders holding the engine's
//!   conventional names `computation_profiling_<precision>_<model>.json` /
//!   `memory_profiling_<precision>_<model>.json`;
//! - `allreduce_bandwidth_config_path`, `p2p_bandwidth_config_path`, `overlap_coe_path`: files,
//!   or folders holding `allreduce_bandwidth_<n>nodes_<g>gpus_per_node.json`,
//!   `p2p_bandwidth_<n>nodes_<g>gpus_per_node.json`, `overlap_coefficient.json`.

mod hardware;
mod instance;
mod json;
mod layers;

pub use super::config::not_emulated;
use super::config::{config_of, flatten, resolve, settings_from};
use super::fit::FitMethod;
use super::profile::LayerTypes;
use super::profile_modes::mode;
use super::settings::Settings;
use crate::error::InputError;
use crate::instance::Instance;
pub use instance::WEIGHTS_NOTE;
use json::{read_json, read_ordered};
use layers::Profiles;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub(super) fn field(f: impl Into<String>, m: impl Into<String>) -> InputError {
    InputError::field(f, m)
}

pub(super) fn num(v: &Value, path: &Path, key: &str) -> Result<f64, InputError> {
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| field(key, "expected a finite number").in_file(path))
}

/// The profile and hardware files a config names (a folder holds the engine's conventional
/// names).
struct Paths {
    time: PathBuf,
    memory: PathBuf,
    allreduce: PathBuf,
    p2p: PathBuf,
    overlap: PathBuf,
    /// `<n>nodes_<g>gpus_per_node`, as the hardware files are named.
    nodes: String,
}

impl Paths {
    fn resolve(
        root: &Path,
        config: &Map<String, Value>,
        settings: &Settings,
        model_name: &str,
    ) -> Result<Paths, InputError> {
        let prec = &settings.mixed_precision;
        let nodes = format!(
            "{}nodes_{}gpus_per_node",
            settings.num_nodes, settings.num_gpus_per_node
        );
        Ok(Paths {
            time: resolve(
                root,
                config,
                "time_profiling_path",
                &format!("computation_profiling_{prec}_{model_name}.json"),
            )?,
            memory: resolve(
                root,
                config,
                "memory_profiling_path",
                &format!("memory_profiling_{prec}_{model_name}.json"),
            )?,
            allreduce: resolve(
                root,
                config,
                "allreduce_bandwidth_config_path",
                &format!("allreduce_bandwidth_{nodes}.json"),
            )?,
            p2p: resolve(
                root,
                config,
                "p2p_bandwidth_config_path",
                &format!("p2p_bandwidth_{nodes}.json"),
            )?,
            overlap: resolve(root, config, "overlap_coe_path", "overlap_coefficient.json")?,
            nodes,
        })
    }
}

/// Reads the profiles the `config` names and builds the instance. The config is the file's
/// `config` object or the file itself (as the engine harness takes it), either the flat
/// form (engine arguments at the top level, `model_layer_configs`, `*_path` keys) or the golden
/// form (`engine_args`, `layer_configs`, `profile_files`, `hardware_files`).
pub fn import(doc: &Value, root: &Path) -> Result<Instance, InputError> {
    import_with(doc, root, FitMethod::Engine)
}

/// [`import`] with the `sequence` mode's curves fitted by `fits` (the suite v1 keeps the
/// least-squares fits it was published with).
pub fn import_with(doc: &Value, root: &Path, fits: FitMethod) -> Result<Instance, InputError> {
    let config = &flatten(config_of(doc)?)?;
    let (settings, ignored) = settings_from(config)?;
    let mut notes = Vec::new();
    let unmodelled = not_emulated(doc)?;
    if !unmodelled.is_empty() {
        notes.push(format!(
            "engine arguments not emulated (modelled as the engine's defaults: static profile \
             values, tp-only sequence parallelism, the pipeline cost model, batch sizes from \
             min_bsz; the engine's plan and throughput may differ): {}",
            unmodelled.join(", ")
        ));
    }
    let model_name = config
        .get("model_name")
        .and_then(Value::as_str)
        .unwrap_or("model")
        .to_string();
    let cfgs = layers::layer_configs(config)?;
    let paths = Paths::resolve(root, config, &settings, &model_name)?;
    let profiles = Profiles {
        time: read_ordered(&paths.time)?,
        time_path: &paths.time,
        mem: read_json(&paths.memory)?,
        mem_path: &paths.memory,
        sp: if settings.sequence_parallel {
            "_sp"
        } else {
            ""
        },
        time_sequence: mode(config, "time_profile_mode") == "sequence",
        memory_sequence: mode(config, "memory_profile_mode") == "sequence",
        fits,
    };
    if profiles.memory_sequence && !(settings.sequence_parallel && cfgs.len() == 1) {
        return Err(field(
            "config.memory_profile_mode",
            "sequence needs sequence_parallel and a single layer type (as the engine asserts)",
        ));
    }
    let (types, max_seqs) = layers::layer_types(&profiles, &cfgs)?;
    let other = layers::other(&profiles, &cfgs, &max_seqs, &mut notes)?;
    let hardware = hardware::hardware(root, config, &settings, &paths, fits)?;
    let lt = LayerTypes {
        types,
        other,
        hardware,
        settings,
    };
    let total: usize = lt.counts().iter().sum();
    lt.check(total)?;
    instance::instance(&lt, &model_name, &ignored, &notes)
}

/// Reads the config file and imports.
pub fn import_file(config: &Path, root: &Path) -> Result<Instance, InputError> {
    let text = crate::error::read_text(config)?;
    let doc: Value =
        crate::error::parse_json(&text, "config document").map_err(|e| e.in_file(config))?;
    import(&doc, root).map_err(|e| e.in_file(config))
}
