//! The statistics tables both the `memory_profile` extension ([`super::profile`]) and the raw
//! profiling runs ([`super::runs`]) produce: M_i and M_a per layer for one parallelism, degree
//! and profiling batch size.

use crate::error::InputError;
use serde::{Deserialize, Serialize};

/// How a stage's layers are spread over its GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Parallelism {
    /// Pipeline only: the stage on one GPU (degree 1).
    Pp,
    /// Data parallelism over the stage's GPUs.
    Dp,
    /// Tensor parallelism over the stage's GPUs.
    Tp,
}

impl std::fmt::Display for Parallelism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Parallelism::Pp => "pp",
            Parallelism::Dp => "dp",
            Parallelism::Tp => "tp",
        })
    }
}

/// One statistics table: M_i and M_a of every layer for one parallelism, degree and batch size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatTable {
    /// Parallelism of the profiled stages.
    pub parallelism: Parallelism,
    /// Degree (GPUs per stage): 1 for `pp`, a power of two >= 2 for `dp` / `tp`.
    pub degree: u32,
    /// Profiling batch size (samples per micro-batch, the unit of `training.micro_batch`).
    pub batch: f64,
    /// M_i per layer (bytes per GPU).
    pub m_i: Vec<f64>,
    /// M_a per layer (bytes per GPU, may be negative); `m_a[0]` is never used.
    pub m_a: Vec<f64>,
}

/// Checks that a parallelism and degree go together: pp has degree 1, dp / tp a power of two
/// of at least 2.
pub fn check_degree(par: Parallelism, degree: u32, field: &str) -> Result<(), InputError> {
    match par {
        Parallelism::Pp if degree != 1 => Err(InputError::field(
            field,
            format!("pipeline-only (pp) statistics have degree 1, found {degree}"),
        )),
        Parallelism::Dp | Parallelism::Tp if degree < 2 || !degree.is_power_of_two() => {
            Err(InputError::field(
                field,
                format!("{par} degree must be a power of two of at least 2, found {degree}"),
            ))
        }
        _ => Ok(()),
    }
}
