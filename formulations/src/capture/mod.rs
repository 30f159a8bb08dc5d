//! The CAPTURE / mCAP / CAPSlog family's formulation (`docs/capture.md`): per-layer
//! memory statistics and the predictor built on them.
//!
//! - [`profile`]: the `memory_profile` extension (statistics tables M_i / M_a per parallelism,
//!   degree and profiling batch size), its validation, and its derivation from the chain;
//! - [`stats`]: the statistics tables (M_i / M_a per layer) both of those produce;
//! - [`runs`]: ingestion of raw profiling runs (stage ranges and per-stage peaks) into statistics;
//! - [`predictor`]: stage memory prediction (M_i + sum of M_a, batch scaling, logarithmic degree
//!   fit, optional 1F1B correction) and the layer merger;
//! - [`profiling`]: the profiling plans a user must run (mCAP, CAPSlog, CAPTURE).

pub mod predictor;
pub mod profile;
pub mod profiling;
pub mod runs;
pub mod stats;

pub use predictor::{Predictor, StageConfig};
pub use profile::{MemoryProfile, Parallelism, StatTable};
