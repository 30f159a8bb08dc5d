//! A versioned suite: a folder of instance files, `manifest.jsonl` (one member per line, with
//! the hash of its canonical JSON) and `best-known.json` (`docs/suite.md`).
//!
//! [`Suite::open`] reads a suite and checks every member; [`check()`] lists every problem of a
//! suite folder; [`generate()`] builds a suite from its versioned recipe ([`v1`]).

mod best_known;
mod check;
mod generate;
pub mod manifest;
pub mod memory;
pub mod notices;
mod readme;
pub mod recipe;
pub mod v1;

pub use best_known::{BestKnown, BestKnownEntry, FoldReport};
pub use check::{check, Check, Problem};
pub use generate::{generate, recipe, Generated, Skipped, VERSIONS};
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

    /// Loads one member's instance and checks it against the manifest: its hash, layer and GPU
    /// counts. Errors name the member and its file.
    pub fn load(&self, member: &Member) -> Result<Instance, SuiteError> {
        let path = self.dir.join(&member.file);
        let invalid = |what: String| SuiteError::Invalid {
            path: path.display().to_string(),
            what: format!("member {}: {what}", member.name),
        };
        if !path.is_file() {
            return Err(invalid(format!("file {} not found", member.file)));
        }
        let instance = Instance::from_path(&path).map_err(|e| {
            // The instance error already starts with the path; keep only what follows it.
            let text = e.to_string();
            let prefix = format!("{}: ", path.display());
            invalid(text.strip_prefix(&prefix).unwrap_or(&text).to_string())
        })?;
        let hash = instance_hash(&instance);
        if hash != member.hash {
            return Err(invalid(format!(
                "hash {hash} does not match the manifest's {} (the file changed after the \
                 suite was made)",
                member.hash
            )));
        }
        if instance.num_layers() != member.layers || instance.cluster.gpus != member.gpus {
            return Err(invalid(format!(
                "the manifest says {} layers and {} GPUs, the instance has {} and {}",
                member.layers,
                member.gpus,
                instance.num_layers(),
                instance.cluster.gpus
            )));
        }
        Ok(instance)
    }

    /// The members carrying every tag of `tags` (all members when `tags` is empty).
    pub fn tagged<'a>(&'a self, tags: &'a [String]) -> impl Iterator<Item = &'a Member> + 'a {
        self.members.iter().filter(move |m| m.has_tags(tags))
    }

    /// The suite's best-known values (empty when the file does not exist yet).
    pub fn best_known(&self) -> Result<BestKnown, SuiteError> {
        BestKnown::read_or_empty(&self.dir.join(BEST_KNOWN))
    }
}
