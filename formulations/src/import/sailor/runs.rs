//! Sailor's measured runs under folders: each plan file with its instance, ready to be judged.
//!
//! A run's model is named by a folder on its path (`.../GPT-NEO/N8/plan_config_N8_D2.json` is
//! a run of the `GPT-Neo-2.7` training config: a folder name, letters and digits only and
//! lower-cased, that starts the model's name or that the model's name starts, as `OPT-350M`),
//! unless the caller names it. The checkout is the nearest folder
//! above the run with `Planner/llm_info.json`, unless the caller gives one.

use super::plan::SailorPlan;
use super::{Files, Selection};
use crate::error::InputError;
use crate::evaluate::accuracy::Measured;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How runs are read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    /// The Sailor checkout (`sailor/` folder); default: found above each run.
    pub root: Option<PathBuf>,
    /// The model of every run (a training config's `model`); default: from the run's path.
    pub model: Option<String>,
    /// Mend a plan that lists one layer index in place of the one missing
    /// ([`SailorPlan::repair_layers`]); default: such a plan is invalid.
    pub repair_layers: bool,
}

/// What became of one plan file.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Ready to be judged.
    Ready(Box<Measured>),
    /// A valid run pipeplan cannot judge yet, with the reason.
    Unsupported(String),
    /// A file that is not a valid run, with the reason (file and field).
    Invalid(String),
}

/// One plan file found under a folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Path relative to the folder it was found under.
    pub name: String,
    /// The data set: the run's folder without its trailing `N<nodes>` folder.
    pub dataset: String,
    /// The file.
    pub path: PathBuf,
    /// Ready, unsupported or invalid.
    pub outcome: Outcome,
    /// What was mended to make the plan valid ([`RunOptions::repair_layers`]), if anything.
    pub repaired: Option<String>,
}

/// Every `plan_config*.json` under `dirs` (a file given directly counts too), prepared, in path
/// order, each file once however often it is given. Runs are named under the folder they were
/// given in, or under the folders' common ancestor when several are given, so that runs of two
/// folders alike inside (two clusters' `OPT-350/N4/...`) keep apart, in their names and data
/// sets. A folder that cannot be read is an error.
pub fn collect(dirs: &[PathBuf], opts: &RunOptions) -> Result<Vec<Run>, InputError> {
    let folder = |dir: &PathBuf| {
        if dir.is_file() {
            dir.parent().unwrap_or(Path::new("")).to_path_buf()
        } else {
            dir.clone()
        }
    };
    let common = if dirs.len() > 1 {
        common_ancestor(dirs.iter().map(folder))
    } else {
        None
    };
    let mut seen = std::collections::HashSet::new();
    let mut checkouts = Checkouts::new();
    let mut runs = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        if dir.is_file() {
            files.push(dir.clone());
        } else {
            walk(dir, &mut files)?;
        }
        files.sort();
        let base = common.clone().unwrap_or_else(|| folder(dir));
        for f in files {
            let canonical = f.canonicalize().unwrap_or_else(|_| f.clone());
            if !seen.insert(canonical.clone()) {
                continue;
            }
            // The common ancestor is canonical, so its runs are named from canonical paths.
            let path = if common.is_some() { canonical } else { f };
            runs.push(prepare(&path, &base, opts, &mut checkouts));
        }
    }
    Ok(runs)
}

/// The deepest folder holding all of `folders` (canonical); `None` when one cannot be resolved.
fn common_ancestor(folders: impl Iterator<Item = PathBuf>) -> Option<PathBuf> {
    let mut common: Option<PathBuf> = None;
    for f in folders {
        let f = f.canonicalize().ok()?;
        common = Some(match common {
            None => f,
            Some(c) => c
                .components()
                .zip(f.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let entries = std::fs::read_dir(dir).map_err(|e| InputError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("plan_config") && n.ends_with(".json"))
        {
            out.push(p);
        }
    }
    Ok(())
}

/// The checkouts runs were read with, by root: the runs of one checkout share its parsed files.
type Checkouts = BTreeMap<PathBuf, Files>;

/// Reads and prepares one run found under `base`, with the files of the checkouts read so far.
fn prepare(path: &Path, base: &Path, opts: &RunOptions, checkouts: &mut Checkouts) -> Run {
    let (name, dataset) = name_and_dataset(path, base);
    let (outcome, repaired) = match outcome(path, &name, &dataset, opts, checkouts) {
        Ok(o) => o,
        Err(e) => (Outcome::Invalid(e.to_string()), None),
    };
    Run {
        name,
        dataset,
        path: path.to_path_buf(),
        outcome,
        repaired,
    }
}

/// A run's name (its path under `base`) and data set (that path's folder without a trailing
/// `N<nodes>` folder). When `base` is itself a data set's folder (or one of its `N<nodes>`
/// folders), the folders above it name the run and its data set, so runs of different data sets
/// given one folder each keep apart (`OPT-350/N1/...`, data set `OPT-350`).
fn name_and_dataset(path: &Path, base: &Path) -> (String, String) {
    let is_nodes =
        |s: &str| s.len() > 1 && s.starts_with('N') && s[1..].bytes().all(|b| b.is_ascii_digit());
    let split = |path: &Path, base: &Path| {
        let rel = path.strip_prefix(base).unwrap_or(path).to_path_buf();
        let parent = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let dataset = match parent.file_name().and_then(|n| n.to_str()) {
            Some(last) if is_nodes(last) => {
                parent.parent().map(Path::to_path_buf).unwrap_or_default()
            }
            _ => parent,
        };
        (rel, dataset)
    };
    let (mut rel, mut dataset) = split(path, base);
    if dataset.as_os_str().is_empty() {
        if let (Ok(path), Ok(mut up)) = (path.canonicalize(), base.canonicalize()) {
            while dataset.as_os_str().is_empty() && up.pop() && up.parent().is_some() {
                (rel, dataset) = split(&path, &up);
            }
        }
    }
    let dataset = match dataset.display().to_string() {
        s if s.is_empty() => ".".to_string(),
        s => s,
    };
    (rel.display().to_string(), dataset)
}

fn outcome(
    path: &Path,
    name: &str,
    dataset: &str,
    opts: &RunOptions,
    checkouts: &mut Checkouts,
) -> Result<(Outcome, Option<String>), InputError> {
    let text = crate::error::read_text(path)?;
    let mut sp = SailorPlan::from_json(&text)?;
    let unsupported = sp.unsupported().map(|(_, why)| why).or_else(|| {
        (sp.node_sizes.len() > 1).then(|| {
            format!(
                "machines of several sizes ({:?} GPUs): not supported yet",
                sp.node_sizes
            )
        })
    });
    if let Some(reason) = unsupported {
        return Ok((Outcome::Unsupported(reason), None));
    }
    let need = |key: &str, what: &str| {
        InputError::field(
            key,
            format!("missing: a measured run needs `{key}` ({what})"),
        )
    };
    let iteration_ms = sp
        .measured_iteration_ms
        .ok_or_else(|| need("real", "the iteration time, s"))?;
    let peak_memory = sp
        .measured_peak_memory
        .ok_or_else(|| need("max_mem", "the peak memory, bytes"))?;
    let found = match &opts.root {
        Some(r) => Files::new(r),
        None => Files::above(path).ok_or_else(|| {
            InputError::field(
                "",
                "no Sailor checkout (a folder with Planner/llm_info.json) above this run; give \
                 one with --sailor-root",
            )
        })?,
    };
    let files = checkouts.entry(found.root.clone()).or_insert(found).clone();
    let (model, config) = training_config(&files, path, opts)?;
    let gpu_type = sp.gpu_types.first().cloned().unwrap_or_default();
    // The run's GPU type, micro-batch and degrees against the profile first: its errors name
    // the profile's field, not the training config the import reads it through.
    let profiled = files.profiled_degrees(&model, &gpu_type, sp.micro_batch)?;
    sp.check_degrees(
        &profiled,
        &format!("profiles_tmp.json.{model}.{gpu_type}.{}", sp.micro_batch),
    )?;
    let sel = selection(&sp, gpu_type, &config, &files)?;
    let instance = super::import_config(&config, &files, &sel, None)?;
    let repaired = if opts.repair_layers {
        sp.repair_layers(instance.model.layers.len())
    } else {
        None
    };
    let plan = sp.to_plan(&instance)?;
    let ready = Outcome::Ready(Box::new(Measured {
        name: name.to_string(),
        dataset: dataset.to_string(),
        instance,
        plan,
        iteration_ms,
        peak_memory,
        grad_sync_ms: sp.measured_grad_sync_ms,
    }));
    Ok((ready, repaired))
}

/// The run's model (`--model`, else read from its path) and the checkout's training config
/// of it.
fn training_config(
    files: &Files,
    path: &Path,
    opts: &RunOptions,
) -> Result<(String, PathBuf), InputError> {
    let configs = files.training_configs()?;
    let model = match &opts.model {
        Some(m) => m.clone(),
        None => model_from_path(path, configs.keys())?,
    };
    let config = configs.get(&model).ok_or_else(|| {
        InputError::field(
            "",
            format!(
                "no training config of model {model:?} in {}; models: {}",
                files.root.display(),
                configs.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    Ok((model, config.clone()))
}

/// What to import for the run: its GPU type and micro-batch, on its `N` nodes (else enough
/// for its GPUs) of its machines' size (else the checkout's for the type).
fn selection(
    sp: &SailorPlan,
    gpu_type: String,
    config: &Path,
    files: &Files,
) -> Result<Selection, InputError> {
    let used: u32 = sp.stages.iter().map(|s| s.dp * s.tp).sum();
    let probe = Selection {
        gpu_type,
        nodes: 1,
        micro_batch: sp.micro_batch,
        gpus_per_node: sp.node_sizes.first().copied(),
    };
    // A one-node import tells the checkout's node size.
    let node_size = match probe.gpus_per_node {
        Some(g) => g,
        None => super::import_config(config, files, &probe, None)?
            .cluster
            .gpus
            .max(1),
    };
    let nodes = sp.nodes.unwrap_or_else(|| used.div_ceil(node_size));
    let held = u64::from(nodes) * u64::from(node_size);
    if u64::from(used) > held {
        return Err(InputError::field(
            "N",
            format!(
                "{nodes} nodes of {node_size} {} hold {held} GPUs, but the plan uses {used}",
                probe.gpu_type
            ),
        ));
    }
    Ok(Selection { nodes, ..probe })
}

/// The model a folder on `path` names (see the module docs).
fn model_from_path<'a>(
    path: &Path,
    models: impl Iterator<Item = &'a String> + Clone,
) -> Result<String, InputError> {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    for dir in path.ancestors().skip(1) {
        let Some(d) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let d = norm(d);
        if d.is_empty() {
            continue;
        }
        // `GPT-NEO` for `GPT-Neo-2.7`, or `OPT-350M` for `OPT-350`.
        let hits: Vec<&String> = models
            .clone()
            .filter(|m| {
                let m = norm(m);
                m.starts_with(&d) || d.starts_with(&m)
            })
            .collect();
        if let [m] = hits.as_slice() {
            return Ok((*m).clone());
        }
    }
    Err(InputError::field(
        "",
        format!(
            "no folder on the path names a model ({}); give it with --model",
            models.cloned().collect::<Vec<_>>().join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_names_the_model_it_starts_or_that_starts_it() {
        let models = [
            "GPT-Neo-2.7".to_string(),
            "OPT-350".to_string(),
            "OPT-30".to_string(),
        ];
        let model = |p: &str| model_from_path(Path::new(p), models.iter());
        let named = |p: &str| model(p).unwrap();
        assert_eq!(named("v/GPT-NEO/N8/plan_config_N8_D2.json"), "GPT-Neo-2.7");
        assert_eq!(named("v/gpt_neo_2.7b/N8/plan.json"), "GPT-Neo-2.7");
        assert_eq!(named("v/OPT-350M/N4/plan.json"), "OPT-350");
        assert_eq!(named("v/opt-30b/N4/plan.json"), "OPT-30");
        // `OPT` starts two models; the nearest folder that names one wins.
        assert_eq!(named("OPT-350/OPT/plan.json"), "OPT-350");
        let e = model("v/OPT/N4/plan.json").unwrap_err().to_string();
        assert!(e.contains("no folder on the path names a model"), "{e}");
    }
}
