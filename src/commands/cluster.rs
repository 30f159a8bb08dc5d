//! The cluster and schedule given on the command line, as the instance format's values.

use crate::cli::{ClusterArgs, ScheduleArg};
use pipeplan_formulations::import::ClusterSpec;
use pipeplan_formulations::instance::ScheduleKind;

/// The schedule family of a command-line value.
pub fn schedule(s: ScheduleArg) -> ScheduleKind {
    match s {
        ScheduleArg::Async => ScheduleKind::Async,
        ScheduleArg::OneFOneB => ScheduleKind::OneFOneB,
        ScheduleArg::Gpipe => ScheduleKind::Gpipe,
    }
}

impl ClusterArgs {
    /// The cluster flags as given (parsed and checked by [`ClusterSpec`]).
    pub fn spec(&self) -> ClusterSpec {
        ClusterSpec {
            gpus: self.gpus,
            memory: self.memory.clone(),
            bandwidth: self.bandwidth.clone(),
            gpus_per_node: self.gpus_per_node,
            inter_node_bandwidth: self.inter_node_bandwidth.clone(),
            pcie: self.pcie.clone(),
        }
    }
}
