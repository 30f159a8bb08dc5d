//! The largest plan spaces the family accepts (`docs/limits.md`), checked before a solve so that
//! a space too big to build or to search is declined with its size instead of exhausting the
//! machine's memory or running far past the time limit:
//!
//! - every algorithm tabulates the predicted memory of every (layer range, stage config),
//!   `C x L^2` entries of 24 bytes (the value and its two parts);
//! - CAPSlog's binary search also sorts the predicted memory of every (layer range, GPU),
//!   `L^2 / 2 x P` values of 8 bytes;
//! - capture-exact's DP keeps a memory vector (up to G values) per (layer, GPU) state and compares
//!   up to `L^2 / 2 x (G + 1) x C` transitions, each over vectors of up to G values: about
//!   `L^2 / 2 x (G + 1) x C x (G + 8)` steps (`x min(L, G)` with the 1F1B correction, which runs
//!   the DP once per stage count). At 1,250 layers on 32 GPUs (7 configs) that is 7.2e9 steps in
//!   2.9 s on 2 shared cores; 128 layers on 512 GPUs, 1.5e10 steps in 1.95 s.
//!
//! `L` is the predictor's layer count (after `--set merge=N`, which is how a larger chain fits),
//! `C` the stage configs (1 for the pipeline-only space; pp, dp and tp of each power-of-two degree
//! up to the GPUs per node for CAPTURE's), `G` the GPUs of the space, `P` the stages.

use super::Kind;
use crate::algorithm::Unsupported;
use crate::settings::Settings;
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::Instance;

/// Most memory the tables of one space may take (bytes).
pub const MAX_BYTES: f64 = 2.0 * 1024.0 * 1024.0 * 1024.0;

/// Most DP steps capture-exact takes on (about 40 s at the slowest rate measured).
pub const MAX_DP_STEPS: f64 = 1e11;

/// The space an algorithm of `kind` builds on `inst` with `settings`.
struct Shape {
    /// Predictor layers.
    layers: f64,
    /// GPUs of the space.
    gpus: f64,
    /// Stage configs (an upper bound: configs without statistics are dropped later).
    configs: f64,
    /// Whether the space is CAPTURE's hybrid one.
    hybrid: bool,
    /// Largest stage degree (a node's GPUs, rounded down to a power of two; 1 for pipelines).
    max_degree: f64,
}

fn shape(kind: Kind, inst: &Instance, settings: &Settings) -> Shape {
    let chain = inst.num_layers();
    let layers = settings
        .count("merge")
        .map_or(chain, |m| chain.min(m as usize));
    let hybrid = match kind {
        Kind::Capture => true,
        Kind::CaptureExact => settings.choice("space") != Some("pipeline"),
        _ => false,
    };
    let (gpus, configs, max_degree) = if hybrid {
        let per_node = inst.gpus_per_node().max(1);
        // pp, then dp and tp of every power-of-two degree up to the GPUs per node.
        let doublings = u32::BITS - 1 - per_node.leading_zeros();
        (
            inst.cluster.gpus as f64,
            1.0 + 2.0 * doublings as f64,
            f64::from(1u32 << doublings),
        )
    } else {
        (layers.min(inst.cluster.gpus as usize) as f64, 1.0, 1.0)
    };
    Shape {
        layers: layers as f64,
        gpus,
        configs,
        hybrid,
        max_degree,
    }
}

/// Declines a space of `kind` on `inst` above [`MAX_BYTES`] or [`MAX_DP_STEPS`], naming its size,
/// the limit and `--set merge`.
pub fn check(kind: Kind, inst: &Instance, settings: &Settings) -> Result<(), Unsupported> {
    let s = shape(kind, inst, settings);
    let l = s.layers;
    if s.hybrid && l < s.gpus / s.max_degree {
        // Fewer layers than nodes: the space itself says no plan can fill the GPUs.
        return Ok(());
    }
    let ranges = l * (l + 1.0) / 2.0;
    let mut bytes = 24.0 * s.configs * l * l;
    let mut what = format!("{} layers x {} stage configs tabulated", l, s.configs);
    match kind {
        Kind::CapslogBs | Kind::CapslogBsTb => {
            bytes += 8.0 * ranges * s.gpus;
            what.push_str(&format!(", and {} GPUs' candidate thresholds", s.gpus));
        }
        Kind::CaptureExact => {
            let runs = if settings.flag("correct_1f1b") {
                l.min(s.gpus)
            } else {
                1.0
            };
            bytes += 8.0 * (l + 1.0) * (s.gpus + 1.0) * s.gpus;
            let steps = ranges * (s.gpus + 1.0) * s.configs * (s.gpus + 8.0) * runs;
            if steps > MAX_DP_STEPS {
                return Err(Unsupported(format!(
                    "capture-exact's DP over {} layers on {} GPUs with {} stage configs{} is \
                     about {steps:.1e} steps (L^2/2 x (G+1) x C x (G+8)), above its limit of \
                     {MAX_DP_STEPS:.0e}; --set merge=N solves the chain merged to N layers",
                    l,
                    s.gpus,
                    s.configs,
                    if runs > 1.0 {
                        format!(", once per stage count ({runs})")
                    } else {
                        String::new()
                    },
                )));
            }
            what.push_str(&format!(", and {} x {} DP states", l, s.gpus));
        }
        Kind::Capture | Kind::McapBf | Kind::McapBo => {}
    }
    if bytes > MAX_BYTES {
        return Err(Unsupported(format!(
            "the plan space of {what} needs {} of memory, above the limit of {}{}; --set \
             merge=N solves the chain merged to N layers",
            fmt_bytes(bytes),
            fmt_bytes(MAX_BYTES),
            if s.hybrid { " (CAPTURE's space)" } else { "" },
        )));
    }
    Ok(())
}
