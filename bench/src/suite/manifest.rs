//! The manifest: one JSON object per line naming a member, its file, hash, size and tags.

use super::SuiteError;
use pipeplan_formulations::instance::Instance;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// One instance of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// Unique name within the suite.
    pub name: String,
    /// Instance file, relative to the suite's folder.
    pub file: String,
    /// [`instance_hash`] of the instance.
    pub hash: String,
    /// Number of layers.
    pub layers: usize,
    /// Number of GPUs.
    pub gpus: u32,
    /// Free-form tags (model family, source, memory tightness, schedule...).
    pub tags: Vec<String>,
}

/// `sha256:` and the hex SHA-256 of the instance's canonical JSON (compact, fields in their
/// declared order), so that formatting and key order in a file do not change its identity.
pub fn instance_hash(instance: &Instance) -> String {
    let canonical = serde_json::to_vec(instance).expect("instances serialize");
    let digest = Sha256::digest(&canonical);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Reads a manifest; errors name the line.
pub fn read(path: &Path) -> Result<Vec<Member>, SuiteError> {
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut members: Vec<Member> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let member: Member = serde_json::from_str(line).map_err(|e| SuiteError::Invalid {
            path: path.display().to_string(),
            what: format!("line {}: {e}", i + 1),
        })?;
        if members.iter().any(|m| m.name == member.name) {
            return Err(SuiteError::Invalid {
                path: path.display().to_string(),
                what: format!("line {}: member {} is listed twice", i + 1, member.name),
            });
        }
        members.push(member);
    }
    Ok(members)
}

/// Writes a manifest, one member per line.
pub fn write(path: &Path, members: &[Member]) -> Result<(), SuiteError> {
    let mut text = String::new();
    for member in members {
        text.push_str(&serde_json::to_string(member).expect("members serialize"));
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| SuiteError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
