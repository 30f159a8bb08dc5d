//! Sailor's profiles as an instance (`docs/sailor.md`).
//!
//! Sailor (eth-easl/sailor) predicts training runs of Megatron-DeepSpeed from per-layer profiles.
//! An instance is built for one model, GPU type, node count and micro-batch size from the files
//! of a Sailor checkout (paths relative to its `sailor/` folder, [`Files`]):
//!
//! - the training config (`Planner/simulations/configs/training_config_*.json`) names the model,
//!   its layer count, optimizer and global batch;
//! - `Planner/simulations/profiles_tmp.json`: per model, GPU type, micro-batch size and
//!   tensor-parallel degree, per layer `[forward, backward, update]` in seconds;
//! - `Planner/llm_info.json`: per model, tensor-parallel degree and layer, `params_floats` and
//!   `params_bytes` (parameters per GPU, and their bytes in the profiled run's data type),
//!   `act_output_bytes` (bytes of the layer's output per sample) and `act_mem_floats` (bytes
//!   allocated by the layer's forward per sample, divided by 4, as Sailor's profiler records
//!   them);
//! - `Planner/simulations/configs/basic_cluster_config.json`: GPUs per node and memory per GPU;
//! - `providers/intra_node_bandwidths.json`, `providers/multizone_bandwidths_het.json`: fitted
//!   bandwidth curves; the instance takes each curve's saturation bandwidth (bytes/s).
//!
//! Every tensor-parallel degree profiled at the micro-batch size (and sized in `llm_info`) is
//! carried as measurements ([`crate::instance::TensorParallel`]); the evaluator uses them instead
//! of dividing by the degree.

mod machines;
pub mod plan;
mod profile;
pub mod report;
pub mod runs;
mod states;

pub use states::{optimizer_states, sizes_note};

use crate::error::InputError;
use crate::instance::{Instance, Model, ScheduleKind, Training, FORMAT};
use machines::machines;
use profile::{degrees, precision_of, profile_at, sizes_of};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The files of a Sailor checkout an instance is read from. Each file is parsed once however
/// many imports read it: clones share what was parsed, so the runs of one checkout
/// ([`runs::collect`]) parse its 617 KB profile once, not three times per run.
#[derive(Clone)]
pub struct Files {
    /// The `sailor/` folder (holding `Planner/` and `providers/`).
    pub root: PathBuf,
    parsed: Arc<Mutex<Parsed>>,
}

/// What a [`Files`] has read: JSON files by path relative to the root, and the training configs.
#[derive(Default)]
struct Parsed {
    json: BTreeMap<&'static str, Arc<Value>>,
    configs: Option<BTreeMap<String, PathBuf>>,
}

impl PartialEq for Files {
    fn eq(&self, other: &Files) -> bool {
        self.root == other.root
    }
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files").field("root", &self.root).finish()
    }
}

impl Files {
    /// The checkout whose `sailor/` folder is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Files {
        Files {
            root: root.into(),
            parsed: Arc::default(),
        }
    }

    /// The checkout holding `path`: the nearest folder above it with `Planner/llm_info.json`.
    pub fn above(path: &Path) -> Option<Files> {
        path.ancestors()
            .find(|d| d.join("Planner").join("llm_info.json").is_file())
            .map(Files::new)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The JSON file `rel`, parsed on first use. A file that cannot be read or parsed is not
    /// kept: each use reports its error.
    fn read(&self, rel: &'static str) -> Result<Arc<Value>, InputError> {
        if let Some(v) = self.parsed().json.get(rel) {
            return Ok(Arc::clone(v));
        }
        let p = self.path(rel);
        let text = crate::error::read_text(&p)?;
        let value: Value =
            crate::error::parse_json(&text, "Sailor file").map_err(|e| e.in_file(&p))?;
        let value = Arc::new(value);
        self.parsed().json.insert(rel, Arc::clone(&value));
        Ok(value)
    }

    /// What was parsed; a lock poisoned by a panic elsewhere still holds whole entries.
    fn parsed(&self) -> std::sync::MutexGuard<'_, Parsed> {
        self.parsed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tensor-parallel degrees at which `model` is profiled on `gpu` at micro-batch `mbs`:
    /// timed (`profiles_tmp.json`) and sized (`llm_info.json`), ascending. The import carries
    /// these as measurements, the smallest as the model's own numbers.
    pub fn profiled_degrees(
        &self,
        model: &str,
        gpu: &str,
        mbs: u32,
    ) -> Result<Vec<u32>, InputError> {
        let profiles = self.read("Planner/simulations/profiles_tmp.json")?;
        let llm = self.read("Planner/llm_info.json")?;
        let by_tp = profile_at(&profiles, model, gpu, mbs)?;
        Ok(degrees(by_tp, sizes_of(&llm, model)?).0)
    }

    /// The training configs of the checkout, by the model they name (read on first use).
    pub fn training_configs(&self) -> Result<BTreeMap<String, PathBuf>, InputError> {
        if let Some(configs) = &self.parsed().configs {
            return Ok(configs.clone());
        }
        let configs = self.read_training_configs()?;
        self.parsed().configs = Some(configs.clone());
        Ok(configs)
    }

    fn read_training_configs(&self) -> Result<BTreeMap<String, PathBuf>, InputError> {
        let dir = self.path("Planner/simulations/configs");
        let entries = std::fs::read_dir(&dir).map_err(|e| InputError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let mut out = BTreeMap::new();
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            let is_config = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("training_config") && n.ends_with(".json"));
            if !is_config {
                continue;
            }
            let text = crate::error::read_text(&p)?;
            let doc: Value =
                crate::error::parse_json(&text, "training config").map_err(|e| e.in_file(&p))?;
            if let Some(m) = doc.get("model").and_then(Value::as_str) {
                out.insert(m.to_string(), p);
            }
        }
        Ok(out)
    }
}

/// What selects one instance from the checkout's profiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// GPU type as Sailor names it (`GH-96`, `A100-40`, ...).
    pub gpu_type: String,
    /// Nodes of that GPU type.
    pub nodes: u32,
    /// Samples per micro-batch of one data-parallel replica (a profiled size).
    pub micro_batch: u32,
    /// GPUs per node; default (`None`): `basic_cluster_config.json`'s for the GPU type. A
    /// measured run gives its machines' own.
    pub gpus_per_node: Option<u32>,
}

/// Imports the training config `config` (JSON text) with the checkout `files`.
pub fn import(
    config: &str,
    files: &Files,
    sel: &Selection,
    name: Option<&str>,
) -> Result<Instance, InputError> {
    let TrainingConfig {
        model,
        layers: layers_n,
        global_batch,
        optimizer,
    } = TrainingConfig::parse(config)?;
    if sel.nodes == 0 {
        return Err(InputError::field("import.nodes", "must be at least 1"));
    }
    if sel.micro_batch == 0 {
        return Err(InputError::field(
            "import.batch",
            "must be at least 1 sample",
        ));
    }

    let profiles = files.read("Planner/simulations/profiles_tmp.json")?;
    let llm = files.read("Planner/llm_info.json")?;
    let cluster_cfg = files.read("Planner/simulations/configs/basic_cluster_config.json")?;
    let intra_bw = files.read("providers/intra_node_bandwidths.json")?;
    let inter_bw = files.read("providers/multizone_bandwidths_het.json")?;

    let by_tp = profile_at(&profiles, &model, &sel.gpu_type, sel.micro_batch)?;
    let gpu = &sel.gpu_type;
    let mbs = sel.micro_batch.to_string();
    let sizes = sizes_of(&llm, &model)?;
    let (degrees, skipped) = degrees(by_tp, sizes);
    let Some(&base) = degrees.first() else {
        return Err(InputError::field(
            format!("profiles_tmp.json.{model}.{gpu}.{mbs}"),
            "no tensor-parallel degree is both timed here and sized in llm_info.json",
        ));
    };
    let (layers, input) = profile::layers(by_tp, sizes, &degrees, sel, &model, layers_n)?;
    let m = machines(&cluster_cfg, &intra_bw, &inter_bw, sel)?;
    let name = name.map_or_else(
        || format!("sailor-{model}-{gpu}-{}n-mbs{}", sel.nodes, sel.micro_batch),
        str::to_string,
    );
    let precision = precision_of(sizes, base, layers_n, &model)?;
    let sgd = optimizer.eq_ignore_ascii_case("sgd");
    let (state_factor, optimizer_note) = optimizer_states(precision, sgd);
    let training = Training {
        micro_batch: Some(sel.micro_batch),
        micro_batches: Some(global_batch.div_ceil(sel.micro_batch)),
        schedule: ScheduleKind::OneFOneB,
        weight_versions: 1,
        optimizer_state_factor: state_factor,
        precision: Some(precision),
    };
    let notes = [
        format!("Imported by pipeplan from Sailor's profiles of {model} on {gpu} at micro-batch {} (one data-parallel replica's).", sel.micro_batch),
        format!("Times: profiles_tmp.json (seconds, forward and backward per layer) at tensor-parallel degree {base}{}; degrees {:?} carried as measurements.",
            if base > 1 { ", times its degree for one GPU" } else { "" },
            degrees.iter().filter(|&&d| d > 1).collect::<Vec<_>>()),
        sizes_note(precision),
        format!("Optimizer {optimizer_note} (optimizer_state_factor {state_factor})."),
        format!("Cluster: {} nodes of {} {gpu} ({}); bandwidths are the saturation values of Sailor's fitted curves (intra-node {:.1} GB/s, inter-node {:.1} GB/s per GPU){}.", sel.nodes, m.gpus_per_node, m.node_size_from, m.intra / 1e9, m.inter / 1e9, m.intra_from),
        format!("Batch: global batch {global_batch} (training config) in micro-batches of {}.", sel.micro_batch),
    ];
    let mut source = notes.join(" ");
    if !skipped.is_empty() {
        source.push_str(&format!(
            " Degrees {skipped:?} are timed but not sized in llm_info.json and are left out."
        ));
    }
    let inst = Instance {
        format: FORMAT.to_string(),
        name: name.clone(),
        source,
        model: Model {
            name: model,
            batch: sel.micro_batch,
            input,
            layers,
        },
        cluster: m.cluster(sel),
        training,
        extensions: BTreeMap::new(),
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}

/// The fields of Sailor's training config the import reads.
struct TrainingConfig {
    model: String,
    layers: usize,
    global_batch: u32,
    /// `optimizer`, default Adam.
    optimizer: String,
}

impl TrainingConfig {
    fn parse(text: &str) -> Result<TrainingConfig, InputError> {
        let cfg: Value = crate::error::parse_json(text, "Sailor training config")?;
        Ok(TrainingConfig {
            model: str_field(&cfg, "model")?,
            layers: uint_field(&cfg, "num_all_layers")? as usize,
            global_batch: uint_field(&cfg, "global_batch_size")?,
            optimizer: cfg
                .get("optimizer")
                .and_then(Value::as_str)
                .unwrap_or("Adam")
                .to_string(),
        })
    }
}

/// Imports the training config file `path`; the checkout is `root` or the one above the file.
pub fn import_file(
    path: &Path,
    root: Option<&Path>,
    sel: &Selection,
    name: Option<&str>,
) -> Result<Instance, InputError> {
    let files = match root {
        Some(r) => Files::new(r),
        None => Files::above(path).ok_or_else(|| {
            InputError::field(
                "import.data_root",
                format!(
                    "no Sailor checkout above {} (a folder with Planner/llm_info.json); \
                     give it with --data-root",
                    path.display()
                ),
            )
        })?,
    };
    import_config(path, &files, sel, name)
}

/// Imports the training config file `path` with the checkout `files`; errors carry the path.
fn import_config(
    path: &Path,
    files: &Files,
    sel: &Selection,
    name: Option<&str>,
) -> Result<Instance, InputError> {
    let text = crate::error::read_text(path)?;
    import(&text, files, sel, name).map_err(|e| e.in_file(path))
}

/// The keys of a JSON object, for a message: numbers (micro-batch sizes, degrees) in numeric
/// order, before any other key.
fn keys(v: &Value) -> String {
    let mut keys: Vec<&String> = v
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    keys.sort_by_key(|k| (k.parse::<u64>().unwrap_or(u64::MAX), *k));
    keys.iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn str_field(v: &Value, key: &str) -> Result<String, InputError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| InputError::field(key, "missing or not a string"))
}

fn uint_field(v: &Value, key: &str) -> Result<u32, InputError> {
    v.get(key)
        .and_then(Value::as_u64)
        .filter(|&n| n > 0 && n <= u32::MAX as u64)
        .map(|n| n as u32)
        .ok_or_else(|| InputError::field(key, "missing or not a positive integer"))
}

fn prefix(e: InputError, p: &str) -> InputError {
    match e {
        InputError::Field { field, message } => InputError::field(format!("{p}.{field}"), message),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::Files;

    const LLM: &str = "Planner/llm_info.json";

    #[test]
    fn a_checkout_parses_a_file_once_for_all_its_clones_and_keeps_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(LLM);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let files = Files::new(dir.path());

        // A file that cannot be read is not kept: once written, it is read.
        let missing = files.read(LLM).unwrap_err().to_string();
        assert!(missing.contains("llm_info.json"), "{missing}");
        std::fs::write(&file, r#"{"model": 1}"#).unwrap();
        assert_eq!(files.read(LLM).unwrap()["model"], 1);

        // A clone shares what was parsed: the file changed on disk is not read again.
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(files.clone().read(LLM).unwrap()["model"], 1);
        // A new `Files` of the same folder reads it afresh.
        let broken = Files::new(dir.path()).read(LLM).unwrap_err().to_string();
        assert!(broken.contains("llm_info.json"), "{broken}");
    }
}
