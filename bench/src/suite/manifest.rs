//! The manifest: one JSON object per line naming a member, its file, hash, size and tags.

use super::SuiteError;
use pipeplan_formulations::instance::Instance;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Component, Path};

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

impl Member {
    /// Whether the member carries every tag of `tags`.
    pub fn has_tags(&self, tags: &[String]) -> bool {
        tags.iter().all(|t| self.tags.contains(t))
    }

    /// What is wrong with the member's fields, if anything: `field: why`.
    fn problem(&self) -> Option<String> {
        let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if self.name.is_empty() || !self.name.chars().all(name_ok) {
            return Some(format!(
                "name: {:?} is not a member name (letters, digits, `.`, `_`, `-`)",
                self.name
            ));
        }
        let file = Path::new(&self.file);
        let inside = file.components().all(|c| matches!(c, Component::Normal(_)));
        if self.file.is_empty() || !inside {
            return Some(format!(
                "file: {:?} must be a path inside the suite's folder (relative, no `..`)",
                self.file
            ));
        }
        let hex = self.hash.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
            return Some(format!(
                "hash: {:?} is not `sha256:` and 64 lowercase hex digits",
                self.hash
            ));
        }
        if let Some(t) = self
            .tags
            .iter()
            .find(|t| t.is_empty() || t.contains(char::is_whitespace))
        {
            return Some(format!("tags: {t:?} is not a tag (non-empty, no spaces)"));
        }
        None
    }
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
    parse(&text).map_err(|what| SuiteError::Invalid {
        path: path.display().to_string(),
        what,
    })
}

/// Parses a manifest's text: one member a line, blank lines ignored. The error names the line
/// (and the column or field).
pub fn parse(text: &str) -> Result<Vec<Member>, String> {
    let mut members: Vec<Member> = Vec::new();
    let mut files = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let member: Member = serde_json::from_str(line).map_err(|e| {
            // Each line is its own document: serde's "at line 1" would mislead.
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            format!("line {n}, column {}: {msg}", e.column())
        })?;
        if let Some(p) = member.problem() {
            return Err(format!("line {n}: member {}: {p}", member.name));
        }
        if members.iter().any(|m| m.name == member.name) {
            return Err(format!("line {n}: member {} is listed twice", member.name));
        }
        if !files.insert(member.file.clone()) {
            return Err(format!(
                "line {n}: member {}: file {} belongs to another member too",
                member.name, member.file
            ));
        }
        members.push(member);
    }
    Ok(members)
}

/// The manifest's text: one member per line (compact JSON, fields in declared order).
pub fn to_text(members: &[Member]) -> String {
    let mut text = String::new();
    for member in members {
        text.push_str(&serde_json::to_string(member).expect("members serialize"));
        text.push('\n');
    }
    text
}

/// Writes a manifest, one member per line.
pub fn write(path: &Path, members: &[Member]) -> Result<(), SuiteError> {
    std::fs::write(path, to_text(members)).map_err(|e| SuiteError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
