//! Best-known values: per member and objective, the best value found, by whom, and whether an
//! exact algorithm proved it optimal (or only bounded it).

use super::SuiteError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The best-known file of a suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestKnown {
    /// One entry per (member, objective), sorted by member then objective.
    pub entries: Vec<BestKnownEntry>,
}

/// The best value known for one member and one objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestKnownEntry {
    /// Member name.
    pub instance: String,
    /// Member hash (the value is only valid for that exact instance).
    pub hash: String,
    /// Objective name, as `ObjectiveKind::name()` prints it.
    pub objective: String,
    /// Its unit.
    pub unit: String,
    /// Best value found (smaller is better).
    pub value: f64,
    /// Algorithm that found it.
    pub found_by: String,
    /// Settings it ran with (`KEY=VALUE`).
    pub settings: Vec<String>,
    /// pipeplan version that found it.
    pub version: String,
    /// Proven optimal by an exact algorithm.
    pub optimal: bool,
    /// Best proven lower bound when not optimal.
    pub bound: Option<f64>,
}

impl BestKnown {
    /// Reads a best-known file; a missing file is an empty one.
    pub fn read_or_empty(path: &Path) -> Result<BestKnown, SuiteError> {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BestKnown::default()),
            Err(e) => Err(SuiteError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            }),
            Ok(text) => serde_json::from_str(&text).map_err(|e| SuiteError::Invalid {
                path: path.display().to_string(),
                what: e.to_string(),
            }),
        }
    }

    /// The entry of one member and objective.
    pub fn get(&self, instance: &str, objective: &str) -> Option<&BestKnownEntry> {
        self.entries
            .iter()
            .find(|e| e.instance == instance && e.objective == objective)
    }
}
