//! A versioned suite: a folder of instance files, `manifest.jsonl` (one member per line, with
//! the hash of its canonical JSON) and `best-known.json`.

mod best_known;
pub mod manifest;

pub use best_known::{BestKnown, BestKnownEntry, FoldReport};
pub use manifest::{instance_hash, Member};

use pipeplan_formulations::instance::Instance;
use std::path::{Path, PathBuf};

/// File name of a suite's manifest inside its folder.
pub const MANIFEST: &str = "manifest.jsonl";
/// File name of a suite's best-known values inside its folder.
pub const BEST_KNOWN: &str = "best-known.json";

/// Why a suite cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// File path.
        path: String,
        /// OS message.
        message: String,
    },
    /// A file's content is wrong; `what` names the line or field.
    #[error("{path}: {what}")]
    Invalid {
        /// File path.
        path: String,
        /// What is wrong, and where.
        what: String,
    },
}

/// An opened suite: its members, checked against the manifest's hashes.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite's folder.
    pub dir: PathBuf,
    /// Members in manifest order.
    pub members: Vec<Member>,
}

impl Suite {
    /// Reads `DIR/manifest.jsonl`. Every member's file must exist and hash to the manifest's
    /// value; the first mismatch is the error.
    pub fn open(dir: &Path) -> Result<Suite, SuiteError> {
        let members = manifest::read(&dir.join(MANIFEST))?;
        let suite = Suite {
            dir: dir.to_path_buf(),
            members,
        };
        for member in &suite.members {
            suite.load(member)?;
        }
        Ok(suite)
    }

    /// Loads one member's instance and checks its hash.
    pub fn load(&self, member: &Member) -> Result<Instance, SuiteError> {
        let path = self.dir.join(&member.file);
        let instance = Instance::from_path(&path).map_err(|e| SuiteError::Invalid {
            path: path.display().to_string(),
            what: e.to_string(),
        })?;
        let hash = instance_hash(&instance);
        if hash != member.hash {
            return Err(SuiteError::Invalid {
                path: path.display().to_string(),
                what: format!(
                    "hash {hash} does not match the manifest's {} for member {}",
                    member.hash, member.name
                ),
            });
        }
        Ok(instance)
    }

    /// The suite's best-known values (empty when the file does not exist yet).
    pub fn best_known(&self) -> Result<BestKnown, SuiteError> {
        BestKnown::read_or_empty(&self.dir.join(BEST_KNOWN))
    }
}
