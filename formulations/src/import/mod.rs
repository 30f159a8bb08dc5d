//! Importers: profiles of other tools turned into pipeplan instances.
//!
//! Each importer reads the text of one profile file and the cluster the user describes (the
//! profiles carry no cluster, or only part of one) and returns a validated [`Instance`]:
//!
//! | [`Source`] | file | module |
//! |---|---|---|
//! | `pipedream` | PipeDream profiler `graph.txt` | [`pipedream`] |
//! | `piper` | Piper planner input JSON | [`piper`] |
//! | `dnn-partitioning` | dnn-partitioning layer- or operator-graph JSON | [`dnn_partitioning`] |
//! | `galvatron` | a Galvatron search config naming its profiles and hardware files | [`crate::galvatron::import`] |
//! | `sailor` | a Sailor training config, with the profiles and cluster files of its checkout | [`sailor`] |
//!
//! A Galvatron config carries the cluster, the schedule and the batch (the engine's arguments)
//! and names the files it reads relative to [`ImportOptions::data_root`]; of the options only
//! the name applies to it ([`Source::carries_cluster`]). The other three describe DAGs. The importers place the nodes in a deterministic topological order
//! ([`dag`]) and give every layer an explicit `cut`: the bytes of every tensor live across a cut
//! placed after it. The instance's `source` field states every unit and assumption used.
//!
//! **Precedence.** What the user states in [`ImportOptions`] wins; what the user leaves open is
//! taken from the profile when the profile carries it; the rest gets the documented default:
//!
//! - cluster: [`ImportOptions::cluster`], unless [`ImportOptions::cluster_from_profile`] is set,
//!   in which case the GPU count, memory and bandwidth the profile carries replace those of
//!   `cluster` (which still supplies what the profile lacks);
//! - `training.micro_batches`: the user's, else the profile's (Piper `mbsInBatch`), else none;
//! - `training.precision`: the user's, else the profile's (PipeDream: fp32), else none;
//! - `model.batch`: [`ImportOptions::batch`], else what the profile implies, else 1;
//! - time unit: [`ImportOptions::time_unit_ms`], else the format's documented unit.

pub mod dag;
pub mod dnn_partitioning;
mod node_ids;
pub mod pipedream;
pub mod piper;
pub mod request;
pub mod sailor;

pub use request::{ClusterSpec, ImportRequest};

use crate::error::InputError;
use crate::instance::{Cluster, Instance, Layer, Model, Precision, Training, FORMAT};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What the user adds to a profile to make an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// The cluster (GPUs, memory, bandwidths).
    pub cluster: Cluster,
    /// Training settings (defaults when not given).
    pub training: Training,
    /// Instance name; importers fall back to a name derived from the profile.
    pub name: Option<String>,
    /// Samples per micro-batch at which the profile was taken (`model.batch`). `None`: what the
    /// profile implies (see each format), else 1, i.e. one "sample" = one profiled micro-batch.
    pub batch: Option<u32>,
    /// Length of the profile's time unit in milliseconds (1000 for seconds). `None`: the unit the
    /// format's own code uses (see each format).
    pub time_unit_ms: Option<f64>,
    /// Take the GPU count, GPU memory and bandwidth from the profile when it carries them
    /// (Piper, dnn-partitioning) instead of from [`ImportOptions::cluster`].
    pub cluster_from_profile: bool,
    /// Folder the paths of a Galvatron config are relative to (default: the config file's
    /// folder with [`import_file`], the working directory with [`import`]); for Sailor, the
    /// checkout's `sailor/` folder (default: the one above the config file).
    pub data_root: Option<PathBuf>,
    /// GPU type, for profiles of several (Sailor).
    pub gpu_type: Option<String>,
    /// Nodes, for profiles that know the GPUs per node (Sailor; default 1).
    pub nodes: Option<u32>,
    /// Galvatron: how the `sequence` profile mode's curves are fitted (default: as the engine).
    pub galvatron_fits: crate::galvatron::fit::FitMethod,
}

impl ImportOptions {
    /// Options with this cluster, default training, and everything else left to the profile.
    pub fn new(cluster: Cluster) -> Self {
        ImportOptions {
            cluster,
            training: Training::default(),
            name: None,
            batch: None,
            time_unit_ms: None,
            cluster_from_profile: false,
            data_root: None,
            gpu_type: None,
            nodes: None,
            galvatron_fits: Default::default(),
        }
    }
}

/// Profile formats pipeplan imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// PipeDream profiler `graph.txt`.
    PipeDream,
    /// Piper JSON.
    Piper,
    /// dnn-partitioning layer-graph JSON (operator graphs are read too).
    DnnPartitioning,
    /// A Galvatron search config (a JSON document with a `config` object, e.g. a golden run).
    Galvatron,
    /// A Sailor training config, read with its checkout's profiles.
    Sailor,
}

impl Source {
    /// Every format, in a fixed order.
    pub const ALL: [Source; 5] = [
        Source::PipeDream,
        Source::Piper,
        Source::DnnPartitioning,
        Source::Galvatron,
        Source::Sailor,
    ];

    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Source::PipeDream => "pipedream",
            Source::Piper => "piper",
            Source::DnnPartitioning => "dnn-partitioning",
            Source::Galvatron => "galvatron",
            Source::Sailor => "sailor",
        }
    }

    /// Whether the file states the whole cluster (then [`ImportOptions::cluster`] is not used).
    pub fn carries_cluster(self) -> bool {
        matches!(self, Source::Galvatron | Source::Sailor)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Source {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Source, InputError> {
        Source::ALL
            .into_iter()
            .find(|src| src.name() == s)
            .ok_or_else(|| {
                InputError::field(
                    "source",
                    format!(
                        "unknown profile format {s:?}; expected pipedream, piper, \
                         dnn-partitioning, galvatron or sailor"
                    ),
                )
            })
    }
}

/// Imports `text` in the format `source`.
pub fn import(source: Source, text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    check_options(opts)?;
    let profile = match source {
        Source::PipeDream => pipedream::read(text)?,
        Source::Piper => piper::read(text)?,
        Source::DnnPartitioning => dnn_partitioning::read(text)?,
        Source::Galvatron => {
            let doc = crate::error::parse_json(text, "config document")?;
            let root = opts.data_root.clone().unwrap_or_default();
            let mut inst = crate::galvatron::import::import_with(&doc, &root, opts.galvatron_fits)?;
            if let Some(n) = &opts.name {
                inst.name = n.clone();
            }
            return Ok(inst);
        }
        Source::Sailor => {
            let root = opts.data_root.clone().ok_or_else(|| {
                InputError::field(
                    "import.data_root",
                    "a Sailor config is read with its checkout: give the `sailor/` folder",
                )
            })?;
            return sailor::import(
                text,
                &sailor::Files::new(root),
                &sailor_selection(opts)?,
                opts.name.as_deref(),
            );
        }
    };
    finish(source, profile, opts)
}

/// Reads and imports a profile file. Without [`ImportOptions::name`], the instance is named after
/// the file (after its folder for a file called `graph.txt`, as PipeDream names profiles by
/// folder). Errors carry the file's path.
pub fn import_file(
    source: Source,
    path: &Path,
    opts: &ImportOptions,
) -> Result<Instance, InputError> {
    let text = crate::error::read_text(path)?;
    let mut opts = opts.clone();
    if source == Source::Sailor {
        check_options(&opts)?;
        return sailor::import_file(
            path,
            opts.data_root.as_deref(),
            &sailor_selection(&opts)?,
            opts.name.as_deref(),
        );
    }
    if source == Source::Galvatron {
        // The config names its model; its files lie beside it unless a root is given.
        if opts.data_root.is_none() {
            opts.data_root = path.parent().map(Path::to_path_buf);
        }
    } else if opts.name.is_none() {
        opts.name = name_from_path(path);
    }
    import(source, &text, &opts).map_err(|e| e.in_file(path))
}

/// Sailor's selection from the options: the GPU type is required, nodes default to 1 and the
/// micro-batch (`batch`) to 1.
fn sailor_selection(opts: &ImportOptions) -> Result<sailor::Selection, InputError> {
    let gpu_type = opts.gpu_type.clone().ok_or_else(|| {
        InputError::field(
            "import.gpu_type",
            "missing: Sailor profiles several GPU types; name one (e.g. GH-96, A100-40)",
        )
    })?;
    Ok(sailor::Selection {
        gpu_type,
        nodes: opts.nodes.unwrap_or(1),
        micro_batch: opts.batch.unwrap_or(1),
        gpus_per_node: opts.cluster.gpus_per_node,
    })
}

fn name_from_path(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    if stem == "graph" {
        if let Some(dir) = path.parent().and_then(|d| d.file_name()) {
            return dir.to_str().map(str::to_string);
        }
    }
    Some(stem.to_string())
}

fn check_options(opts: &ImportOptions) -> Result<(), InputError> {
    if opts.batch == Some(0) {
        return Err(InputError::field(
            "import.batch",
            "must be at least 1 sample",
        ));
    }
    if let Some(u) = opts.time_unit_ms {
        if !(u.is_finite() && u > 0.0) {
            return Err(InputError::field(
                "import.time_unit_ms",
                format!("must be a positive number of milliseconds, found {u}"),
            ));
        }
    }
    Ok(())
}

/// What a format module reads from a profile, before the user's options are applied.
/// Times are in the profile's own unit.
pub(crate) struct Profile {
    /// Name when the user gives none.
    pub default_name: String,
    /// Bytes of the model input (a_0).
    pub input: f64,
    /// The chain, times in the profile's unit.
    pub layers: Vec<Layer>,
    /// The profile's time unit in ms, and where that comes from.
    pub time_unit: (f64, String),
    /// Samples per micro-batch the profile implies, and why.
    pub batch: Option<(u32, String)>,
    /// Cluster fields the profile carries.
    pub gpus: Option<u32>,
    /// GPU memory (bytes) the profile carries.
    pub memory: Option<f64>,
    /// Bandwidth (bytes/s) the profile carries.
    pub bandwidth: Option<f64>,
    /// Micro-batches per batch the profile carries.
    pub micro_batches: Option<u32>,
    /// Precision the profile implies.
    pub precision: Option<Precision>,
    /// Instance extensions the profile carries (e.g. DawnPiper's `graph`).
    pub extensions: std::collections::BTreeMap<String, serde_json::Value>,
    /// Sentences for the `source` field: the format, the units, the linearization.
    pub notes: Vec<String>,
}

impl Profile {
    pub(crate) fn new(default_name: &str, time_unit: (f64, String)) -> Profile {
        Profile {
            default_name: default_name.to_string(),
            input: 0.0,
            layers: Vec::new(),
            time_unit,
            batch: None,
            gpus: None,
            memory: None,
            bandwidth: None,
            micro_batches: None,
            precision: None,
            extensions: Default::default(),
            notes: Vec::new(),
        }
    }

    /// The profile's time unit in ms: the user's, else the profile's; says which in `notes`.
    fn unit(&self, opts: &ImportOptions, notes: &mut Vec<String>) -> f64 {
        match opts.time_unit_ms {
            Some(u) => {
                notes.push(format!(
                    "Profile times read as units of {u} ms (set by the user)."
                ));
                u
            }
            None => {
                notes.push(self.time_unit.1.clone());
                self.time_unit.0
            }
        }
    }

    /// `model.batch`: the user's, else the profile's, else 1; says which in `notes`.
    fn samples_per_micro_batch(&self, opts: &ImportOptions, notes: &mut Vec<String>) -> u32 {
        match (opts.batch, &self.batch) {
            (Some(b), _) => {
                notes.push(format!(
                    "model.batch = {b} samples per profiled micro-batch (set by the user)."
                ));
                b
            }
            (None, Some((b, why))) => {
                notes.push(why.clone());
                *b
            }
            (None, None) => {
                notes.push(
                    "The profile does not record its batch size: model.batch = 1, i.e. one \
                     sample stands for one profiled micro-batch (set the batch import option to \
                     fix throughputs in samples/s)."
                        .to_string(),
                );
                1
            }
        }
    }

    /// The user's cluster, with the fields the profile carries when `cluster_from_profile`
    /// asks for them (noted).
    fn cluster(
        &self,
        opts: &ImportOptions,
        notes: &mut Vec<String>,
    ) -> Result<Cluster, InputError> {
        let mut cluster = opts.cluster.clone();
        if !opts.cluster_from_profile {
            return Ok(cluster);
        }
        let mut took = Vec::new();
        if let Some(g) = self.gpus {
            if let Some(n) = cluster.gpus_per_node.filter(|&n| n == 0 || g % n != 0) {
                return Err(InputError::field(
                    "cluster.gpus_per_node",
                    format!(
                        "{n} does not divide the profile's {g} GPUs (cluster_from_profile); \
                         give a GPUs-per-node count that divides it, or none"
                    ),
                ));
            }
            cluster.gpus = g;
            took.push("GPU count");
        }
        if let Some(m) = self.memory {
            cluster.memory = m;
            took.push("GPU memory");
        }
        if let Some(b) = self.bandwidth {
            cluster.bandwidth.intra_node = b;
            took.push("bandwidth");
        }
        if !took.is_empty() {
            notes.push(format!(
                "Cluster {} taken from the profile; the rest from the user.",
                took.join(", ")
            ));
        }
        Ok(cluster)
    }
}

/// Applies the precedence rules of the module docs and validates.
fn finish(source: Source, mut p: Profile, opts: &ImportOptions) -> Result<Instance, InputError> {
    let mut notes = std::mem::take(&mut p.notes);
    let unit = p.unit(opts, &mut notes);
    let batch = p.samples_per_micro_batch(opts, &mut notes);
    let cluster = p.cluster(opts, &mut notes)?;
    let mut training = opts.training.clone();
    if training.micro_batches.is_none() {
        training.micro_batches = p.micro_batches;
    }
    if training.precision.is_none() {
        training.precision = p.precision;
    }
    let layers = p
        .layers
        .into_iter()
        .map(|mut l| {
            l.forward *= unit;
            l.backward *= unit;
            l
        })
        .collect();
    let name = opts.name.clone().unwrap_or(p.default_name);
    let inst = Instance {
        format: FORMAT.to_string(),
        name: name.clone(),
        source: format!(
            "Imported by pipeplan from a {source} profile. {}",
            notes.join(" ")
        ),
        model: Model {
            name,
            batch,
            input: p.input,
            layers,
        },
        cluster,
        training,
        extensions: p.extensions,
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}

/// Rejects negative or non-finite numbers read from a profile, naming the field.
pub(crate) fn non_negative(
    field: impl FnOnce() -> String,
    what: &str,
    v: f64,
) -> Result<f64, InputError> {
    if !v.is_finite() {
        Err(InputError::field(
            field(),
            format!("{what} is not a finite number ({v})"),
        ))
    } else if v < 0.0 {
        Err(InputError::field(field(), format!("negative {what} {v}")))
    } else {
        Ok(v)
    }
}

/// "a -> b -> a" for cycle messages.
pub(crate) fn cycle_text(names: &[&str]) -> String {
    names.join(" -> ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_round_trip() {
        for s in Source::ALL {
            assert_eq!(s.name().parse::<Source>().unwrap(), s);
            assert_eq!(s.to_string(), s.name());
        }
        let e = "metis".parse::<Source>().unwrap_err().to_string();
        assert!(e.contains("unknown profile format \"metis\""), "{e}");
    }

    #[test]
    fn names_from_paths() {
        assert_eq!(
            name_from_path(Path::new("profiles/resnet50/graph.txt")).as_deref(),
            Some("resnet50")
        );
        assert_eq!(
            name_from_path(Path::new("inputs/bert32a100.json")).as_deref(),
            Some("bert32a100")
        );
    }
}
