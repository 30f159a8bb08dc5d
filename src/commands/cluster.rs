//! The cluster and schedule given on the command line, as the instance format's values.

use crate::cli::{ClusterArgs, ScheduleArg};
use pipeplan_formulations::instance::{Bandwidth, Cluster, ScheduleKind};
use pipeplan_formulations::units::{parse_quantity, Dimension};
use pipeplan_formulations::InputError;

fn quantity(flag: &str, text: &str, dim: Dimension) -> Result<f64, InputError> {
    parse_quantity(text, dim).map_err(|m| InputError::field(flag, m))
}

/// The schedule family of a command-line value.
pub fn schedule(s: ScheduleArg) -> ScheduleKind {
    match s {
        ScheduleArg::Async => ScheduleKind::Async,
        ScheduleArg::OneFOneB => ScheduleKind::OneFOneB,
        ScheduleArg::Gpipe => ScheduleKind::Gpipe,
    }
}

impl ClusterArgs {
    /// The cluster, requiring `--gpus`, `--memory` and `--bandwidth`.
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
        let mut cluster = Cluster {
            gpus,
            gpus_per_node: None,
            memory: quantity("--memory", memory, Dimension::Size)?,
            bandwidth: Bandwidth {
                intra_node: quantity("--bandwidth", bandwidth, Dimension::Bandwidth)?,
                inter_node: None,
            },
            pcie: None,
        };
        self.apply_optional(&mut cluster)?;
        Ok(cluster)
    }

    /// Overrides the fields of `cluster` given on the command line.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_needs_every_field_and_names_it() {
        let mut c = ClusterArgs {
            gpus: Some(4),
            memory: Some("16GiB".into()),
            bandwidth: None,
            gpus_per_node: None,
            inter_node_bandwidth: None,
            pcie: None,
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
