//! What a user asks for by name and text: a cluster given as quantities with units
//! ([`ClusterSpec`]) and an import with overrides ([`ImportRequest`]). The command line
//! (`pipeplan import`, `pipeplan generate`) and the Python package (`pipeplan.import_profile`,
//! `pipeplan.generate`) both go through here, so they accept the same input and report the same
//! errors. Errors name the command-line flags (`--memory`); the Python keywords mirror them.

use super::{import_file, ImportOptions, Source};
use crate::error::InputError;
use crate::instance::{Cluster, Instance, ScheduleKind};
use crate::units::{parse_quantity, Dimension};
use std::path::PathBuf;

/// A cluster as the user states it: counts, and quantities as text with units (`16GiB`,
/// `12GB/s`; a bare number is bytes or bytes/s). Every field may be missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSpec {
    /// Number of GPUs.
    pub gpus: Option<u32>,
    /// Memory per GPU.
    pub memory: Option<String>,
    /// Bandwidth between GPUs of a node.
    pub bandwidth: Option<String>,
    /// GPUs per node (default: all in one node).
    pub gpus_per_node: Option<u32>,
    /// Bandwidth between nodes (default: `bandwidth`).
    pub inter_node_bandwidth: Option<String>,
    /// Host-device bandwidth for swapping.
    pub pcie: Option<String>,
}

fn quantity(flag: &str, text: &str, dim: Dimension) -> Result<f64, InputError> {
    parse_quantity(text, dim).map_err(|m| InputError::field(flag, m))
}

impl ClusterSpec {
    /// The cluster, requiring the GPU count, memory and bandwidth.
    pub fn cluster(&self) -> Result<Cluster, InputError> {
        let missing = |flag: &str, example: &str| {
            InputError::field(flag, format!("required (e.g. {flag} {example})"))
        };
        let gpus = self.gpus.ok_or_else(|| missing("--gpus", "8"))?;
        let memory = self
            .memory
            .as_deref()
            .ok_or_else(|| missing("--memory", "16GiB"))?;
        let bandwidth = self
            .bandwidth
            .as_deref()
            .ok_or_else(|| missing("--bandwidth", "12GB/s"))?;
        let mut cluster = Cluster::single_node(
            gpus,
            quantity("--memory", memory, Dimension::Size)?,
            quantity("--bandwidth", bandwidth, Dimension::Bandwidth)?,
        );
        self.apply_optional(&mut cluster)?;
        Ok(cluster)
    }

    /// Overrides the fields of `cluster` this spec gives.
    pub fn override_fields(&self, cluster: &mut Cluster) -> Result<(), InputError> {
        if let Some(g) = self.gpus {
            cluster.gpus = g;
        }
        if let Some(m) = &self.memory {
            cluster.memory = quantity("--memory", m, Dimension::Size)?;
        }
        if let Some(b) = &self.bandwidth {
            cluster.bandwidth.intra_node = quantity("--bandwidth", b, Dimension::Bandwidth)?;
        }
        self.apply_optional(cluster)
    }

    fn apply_optional(&self, cluster: &mut Cluster) -> Result<(), InputError> {
        if let Some(n) = self.gpus_per_node {
            cluster.gpus_per_node = Some(n);
        }
        if let Some(b) = &self.inter_node_bandwidth {
            cluster.bandwidth.inter_node =
                Some(quantity("--inter-node-bandwidth", b, Dimension::Bandwidth)?);
        }
        if let Some(b) = &self.pcie {
            cluster.pcie = Some(quantity("--pcie", b, Dimension::Bandwidth)?);
        }
        Ok(())
    }
}

/// An import as `pipeplan import` takes it: the profile's format and file, the cluster as far as
/// the user states it, and the options that override what the profile carries.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRequest {
    /// Profile format.
    pub source: Source,
    /// Profile file (a Galvatron search config; a Sailor training config).
    pub file: PathBuf,
    /// The cluster. Required in full unless the file carries it
    /// ([`Source::carries_cluster`]) or `cluster_from_profile` is set; then the fields given
    /// override the file's.
    pub cluster: ClusterSpec,
    /// Take GPUs, memory and bandwidth from the profile when it has them.
    pub cluster_from_profile: bool,
    /// Instance name (default: derived from the file).
    pub name: Option<String>,
    /// Samples per micro-batch the profile was taken at (Sailor: the profiled micro-batch).
    pub batch: Option<u32>,
    /// Length of the profile's time unit in ms.
    pub time_unit_ms: Option<f64>,
    /// Galvatron / Sailor: the folder the config's paths are relative to.
    pub data_root: Option<PathBuf>,
    /// Sailor: the GPU type.
    pub gpu_type: Option<String>,
    /// Sailor: nodes of that GPU type.
    pub nodes: Option<u32>,
    /// Default schedule family written into the instance.
    pub schedule: Option<ScheduleKind>,
    /// Micro-batches per batch for synchronous schedules.
    pub micro_batches: Option<u32>,
    /// Extra weight-sized optimizer copies.
    pub optimizer_state_factor: Option<f64>,
    /// Galvatron: how the `sequence` profile mode's curves are fitted (default: as the engine).
    pub galvatron_fits: crate::galvatron::fit::FitMethod,
}

impl ImportRequest {
    /// A request for `file` in format `source`, everything else left to the profile.
    pub fn new(source: Source, file: impl Into<PathBuf>) -> ImportRequest {
        ImportRequest {
            source,
            file: file.into(),
            cluster: ClusterSpec::default(),
            cluster_from_profile: false,
            name: None,
            batch: None,
            time_unit_ms: None,
            data_root: None,
            gpu_type: None,
            nodes: None,
            schedule: None,
            micro_batches: None,
            optimizer_state_factor: None,
            galvatron_fits: Default::default(),
        }
    }

    /// Imports the file: what the user states wins over what the profile carries, and the
    /// result is validated.
    pub fn import(&self) -> Result<Instance, InputError> {
        let from_file = self.cluster_from_profile || self.source.carries_cluster();
        let cluster = if from_file {
            // Placeholder fields the profile replaces; the fields the user gives override the
            // profile after the import.
            Cluster::single_node(1, 1.0, 1.0)
        } else {
            self.cluster.cluster()?
        };
        let mut opts = ImportOptions::new(cluster);
        if self.source == Source::Sailor {
            // Sailor's import builds its cluster from the node size: `--nodes` nodes of it.
            opts.cluster.gpus_per_node = self.cluster.gpus_per_node;
        }
        opts.name = self.name.clone();
        opts.batch = self.batch;
        opts.time_unit_ms = self.time_unit_ms;
        opts.cluster_from_profile = self.cluster_from_profile;
        opts.data_root = self.data_root.clone();
        opts.gpu_type = self.gpu_type.clone();
        opts.nodes = self.nodes;
        opts.galvatron_fits = self.galvatron_fits;
        if let Some(s) = self.schedule {
            opts.training.schedule = s;
        }
        opts.training.micro_batches = self.micro_batches;
        if let Some(f) = self.optimizer_state_factor {
            opts.training.optimizer_state_factor = f;
        }
        let mut inst = import_file(self.source, &self.file, &opts)?;
        if from_file {
            // What the user gives wins over what the file carries.
            self.cluster.override_fields(&mut inst.cluster)?;
            if let Some(s) = self.schedule {
                inst.training.schedule = s;
            }
            if self.micro_batches.is_some() {
                inst.training.micro_batches = self.micro_batches;
            }
            if let Some(f) = self.optimizer_state_factor {
                inst.training.optimizer_state_factor = f;
            }
            inst.validate()?;
        }
        Ok(inst)
    }
}

/// The warning an import leaves in the instance's `source` about engine arguments it does not
/// emulate (Galvatron), for front ends to show where the user looks.
pub fn unemulated_arguments(inst: &Instance) -> Option<&str> {
    inst.source
        .split(". ")
        .find(|s| s.starts_with("engine arguments not emulated"))
        .map(|s| s.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_needs_every_field_and_names_it() {
        let mut c = ClusterSpec {
            gpus: Some(4),
            memory: Some("16GiB".into()),
            ..ClusterSpec::default()
        };
        assert!(c.cluster().unwrap_err().to_string().contains("--bandwidth"));
        c.bandwidth = Some("12 GB/s".into());
        let cl = c.cluster().unwrap();
        assert_eq!(cl.memory, 16.0 * 1024f64.powi(3));
        assert_eq!(cl.bandwidth.intra_node, 12e9);
        c.memory = Some("16 GiBs".into());
        assert!(c.cluster().unwrap_err().to_string().starts_with("--memory"));
    }
}
