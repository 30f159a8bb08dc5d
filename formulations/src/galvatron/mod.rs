//! The Galvatron family (`docs/galvatron.md`, Galvatron-BMW paper): hybrid parallel strategies (pp, tp,
//! dp, sdp, checkpointing) per layer under a memory budget, with the reference engine's
//! (PKU-DAIR/Hetu-Galvatron) cost model.
//!
//! - [`profile`]: the `layer_types` extension (per-layer-type profiles, hardware coefficients,
//!   search settings); [`derive`](mod@derive): its derivation from the chain when absent;
//! - [`import`](mod@import): Galvatron's profile and hardware JSON files into an instance;
//! - [`settings`]: the engine's search arguments and its quirks' switches;
//! - [`strategy`]: the decision tree of per-layer strategies;
//! - [`cost`]: the engine's memory, time, transition and pipeline cost models;
//! - [`fit`]: the curve fits of its `sequence` profile modes;
//! - [`output`]: the engine's output config, which its training runtime reads.
//!
//! Formulas, quirks and the import interface: `docs/galvatron.md`.

mod config;
pub mod cost;
pub mod derive;
pub mod fit;
pub mod import;
mod lmdif;
pub mod output;
pub mod profile;
mod profile_modes;
pub mod settings;
pub mod strategy;

/// The engine's megabyte (MiB): its profiles' sizes are in units of 2^20 bytes.
const MB: f64 = 1024.0 * 1024.0;

pub use profile::{LayerTypes, EXTENSION};
pub use settings::{PipelineType, Quirks, Settings};
pub use strategy::Strategy;
