//! Importers: profiles of other tools turned into pipeplan instances.
//!
//! Each importer reads the text of one profile file and the cluster the user describes (the
//! profiles carry no cluster, or only part of one) and returns a validated [`Instance`].

use crate::error::InputError;
use crate::instance::{Cluster, Instance, Training};

/// What the user adds to a profile to make an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// The cluster (GPUs, memory, bandwidths).
    pub cluster: Cluster,
    /// Training settings (defaults when not given).
    pub training: Training,
    /// Instance name; importers fall back to a name derived from the profile.
    pub name: Option<String>,
}

/// Profile formats pipeplan imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// PipeDream profiler `graph.txt`.
    PipeDream,
    /// Piper JSON.
    Piper,
    /// dnn-partitioning layer-graph JSON.
    DnnPartitioning,
}

/// Imports `text` in the format `source`.
pub fn import(source: Source, text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    let _ = (source, text, opts);
    Err(InputError::field("import", "not implemented yet"))
}
