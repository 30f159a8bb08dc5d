//! What a sweep runs: its instances (suite folders and instance files), and one [`RunSpec`] per
//! (instance, algorithm, settings, seed, repeat), in a fixed order (`docs/sweep.md`, "Runs and
//! keys").

use super::SweepError;
use crate::suite::{instance_hash, Suite};
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::Algorithm;
use pipeplan_solvers::registry;
use pipeplan_solvers::settings::Settings;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One instance of a sweep.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its name: the suite member's, or the file's `name`.
    pub name: String,
    /// [`instance_hash`] of the instance.
    pub hash: String,
    /// The file a run's process reads.
    pub path: PathBuf,
    /// The instance.
    pub instance: Instance,
}

/// Reads the sweep's instances: a folder is a suite (its manifest's members, every hash checked
/// before any run), a file is one instance. An instance given twice (same hash) counts once.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, SweepError> {
    let mut inputs: Vec<Input> = Vec::new();
    let mut push = |input: Input| {
        if !inputs.iter().any(|i| i.hash == input.hash) {
            inputs.push(input);
        }
    };
    for p in paths {
        if p.is_dir() {
            let suite = Suite::open(p)?;
            for m in &suite.members {
                push(Input {
                    name: m.name.clone(),
                    hash: m.hash.clone(),
                    path: absolute(&suite.dir.join(&m.file)),
                    instance: suite.load(m)?,
                });
            }
        } else {
            let instance = Instance::from_path(p).map_err(|e| SweepError::Input(e.to_string()))?;
            push(Input {
                name: instance.name.clone(),
                hash: instance_hash(&instance),
                path: absolute(p),
                instance,
            });
        }
    }
    if inputs.is_empty() {
        return Err(SweepError::Input("no instance to run".into()));
    }
    Ok(inputs)
}

/// `p` made absolute (a run's process, or a Slurm task, may start elsewhere).
pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What to run on every instance.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    /// Algorithm names, in the order given.
    pub algorithms: Vec<String>,
    /// `--set KEY=VALUE` pairs; each applies to the algorithms that declare KEY.
    pub set: Vec<(String, String)>,
    /// Seeds; every run is made once per seed.
    pub seeds: Vec<u64>,
    /// Repeats per seed (at least 1).
    pub repeat: u32,
    /// Time limit of every solve (`None`: no limit).
    pub time_limit: Option<Duration>,
}

/// A run's identity in a store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunKey {
    /// Instance hash.
    pub instance_hash: String,
    /// Algorithm name.
    pub algorithm: String,
    /// Canonical settings text.
    pub settings: String,
    /// Seed.
    pub seed: i64,
    /// Repeat index.
    pub repeat: i64,
}

impl RunKey {
    /// The key as one line (`hash`, `algorithm`, `settings`, `seed`, `repeat`, tab-separated):
    /// what shards hash.
    pub fn text(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}",
            self.instance_hash, self.algorithm, self.settings, self.seed, self.repeat
        )
    }

    /// The run named for a person, with the instance's name.
    pub fn describe(&self, instance: &str) -> String {
        let settings = if self.settings.is_empty() {
            String::new()
        } else {
            format!(" [{}]", self.settings)
        };
        format!(
            "{instance} / {}{settings} / seed {} / repeat {}",
            self.algorithm, self.seed, self.repeat
        )
    }
}

/// One run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Index of its instance in the sweep's inputs.
    pub input: usize,
    /// Instance name.
    pub instance: String,
    /// Instance hash.
    pub hash: String,
    /// Algorithm name.
    pub algorithm: String,
    /// The settings that apply to this algorithm.
    pub settings: BTreeMap<String, String>,
    /// Seed.
    pub seed: u64,
    /// Repeat index.
    pub repeat: u32,
}

/// Settings as stored: `KEY=VALUE` sorted by key, comma-separated.
pub fn settings_text(settings: &BTreeMap<String, String>) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl RunSpec {
    /// The run's key.
    pub fn key(&self) -> RunKey {
        RunKey {
            instance_hash: self.hash.clone(),
            algorithm: self.algorithm.clone(),
            settings: settings_text(&self.settings),
            // Seeds are checked to fit when the sweep is planned.
            seed: self.seed as i64,
            repeat: i64::from(self.repeat),
        }
    }
}

/// An algorithm with the settings of a sweep that apply to it.
pub type Configured = (Box<dyn Algorithm>, BTreeMap<String, String>);

/// The algorithms of a spec, each with the settings that apply to it, checked against its
/// declaration. A key that no listed algorithm declares is an error.
pub fn algorithms(spec: &SweepSpec) -> Result<Vec<Configured>, SweepError> {
    if spec.algorithms.is_empty() {
        return Err(SweepError::Input(
            "--algos: give at least one algorithm".into(),
        ));
    }
    let mut out: Vec<Configured> = Vec::new();
    for name in &spec.algorithms {
        let name = name.trim();
        let algo = registry::by_name(name).ok_or_else(|| {
            SweepError::Input(format!(
                "--algos: unknown algorithm {name:?}; known: {}",
                registry::names().join(", ")
            ))
        })?;
        if out.iter().any(|(a, _)| a.name() == algo.name()) {
            return Err(SweepError::Input(format!(
                "--algos: {name} is listed twice"
            )));
        }
        let params = algo.params();
        let settings: BTreeMap<String, String> = spec
            .set
            .iter()
            .filter(|(k, _)| params.iter().any(|p| p.name == k))
            .cloned()
            .collect();
        Settings::parse(algo.name(), &params, &settings)
            .map_err(|e| SweepError::Input(e.to_string()))?;
        out.push((algo, settings));
    }
    for (key, value) in &spec.set {
        if !out
            .iter()
            .any(|(a, _)| a.params().iter().any(|p| p.name == key))
        {
            return Err(SweepError::Input(format!(
                "--set {key}: no listed algorithm takes this setting (see `pipeplan algorithms --params`)"
            )));
        }
        if value.contains(',') || key.contains(',') {
            return Err(SweepError::Input(format!(
                "--set {key}={value}: a sweep's settings may not contain commas"
            )));
        }
    }
    Ok(out)
}

/// Every run of a sweep, instance-major, then algorithm (as listed), seed, repeat.
pub fn plan(inputs: &[Input], spec: &SweepSpec) -> Result<Vec<RunSpec>, SweepError> {
    if spec.repeat == 0 {
        return Err(SweepError::Input("--repeat: must be at least 1".into()));
    }
    if spec.seeds.is_empty() {
        return Err(SweepError::Input("--seed: give at least one seed".into()));
    }
    if let Some(s) = spec.seeds.iter().find(|&&s| i64::try_from(s).is_err()) {
        return Err(SweepError::Input(format!(
            "--seed {s}: seeds of a sweep must be below 2^63"
        )));
    }
    let algos = algorithms(spec)?;
    let mut runs = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for (algo, settings) in &algos {
            for &seed in &spec.seeds {
                for repeat in 0..spec.repeat {
                    runs.push(RunSpec {
                        input: i,
                        instance: input.name.clone(),
                        hash: input.hash.clone(),
                        algorithm: algo.name().to_string(),
                        settings: settings.clone(),
                        seed,
                        repeat,
                    });
                }
            }
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(algos: &[&str], set: &[(&str, &str)]) -> SweepSpec {
        SweepSpec {
            algorithms: algos.iter().map(|s| s.to_string()).collect(),
            set: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            seeds: vec![0],
            repeat: 1,
            time_limit: None,
        }
    }

    #[test]
    fn settings_go_to_the_algorithms_that_take_them() {
        let params = registry::settings();
        let entry = params.first().expect("some algorithm declares a setting");
        let other = registry::names()
            .into_iter()
            .find(|n| !params.iter().any(|p| p.algorithm == *n))
            .expect("some algorithm takes no setting");
        let value = entry.default.unwrap_or("true");
        let algos =
            algorithms(&spec(&[entry.algorithm, other], &[(entry.setting, value)])).unwrap();
        assert_eq!(
            algos[0].1.get(entry.setting).map(String::as_str),
            Some(value)
        );
        assert!(algos[1].1.is_empty());
        let e = algorithms(&spec(&[other], &[(entry.setting, value)]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("no listed algorithm"), "{e}");
        let e = algorithms(&spec(&["nope"], &[])).err().unwrap();
        assert!(e.to_string().contains("unknown algorithm"), "{e}");
    }

    #[test]
    fn settings_text_is_sorted() {
        let m: BTreeMap<String, String> = [("b", "2"), ("a", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(settings_text(&m), "a=1,b=2");
        assert_eq!(settings_text(&BTreeMap::new()), "");
    }
}
