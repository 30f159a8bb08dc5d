//! The largest batch size whose plan fits, for any algorithm (DawnPiper's headline metric,
//! `docs/dawnpiper.md` "max-batch").
//!
//! **Definition.** batch = micro-batch size `b` x micro-batches `m`, with `m` fixed to the
//! instance's `training.micro_batches` (default: the GPU count). Only `b` is searched:
//! `training.micro_batch = b`, so every layer's forward/backward time and activation, saved and
//! cut bytes scale linearly by `b / model.batch` (the instance format's rule); parameters do
//! not. A batch *fits* for an algorithm when it returns a plan and the neutral evaluator says
//! that plan fits (`evaluated.fits`), whatever the algorithm claimed.
//!
//! **Search.** `b = 1`, then doubling up to `max_micro_batch`, then bisection between the last
//! fitting and the first failing size. Every probe is a real solve + evaluation; the search keeps
//! the invariant "lo fits, hi fails" with both verified. Heuristic planners need not be monotone
//! (a size may fail while a larger one fits); the result is then a verified fitting size whose
//! successor fails, not necessarily the global largest: [`MaxBatch::monotone_checked`] is false
//! unless every size below was probed.

use crate::algorithm::{Algorithm, SolveOptions};
use crate::harness;
use pipeplan_formulations::Instance;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Settings of the search.
#[derive(Debug, Clone)]
pub struct MaxBatchOptions {
    /// Options of every solve (default: time limit 2 s per solve).
    pub solve: SolveOptions,
    /// Largest micro-batch size probed (default 1024).
    pub max_micro_batch: u32,
}

impl Default for MaxBatchOptions {
    fn default() -> Self {
        MaxBatchOptions {
            solve: SolveOptions {
                time_limit: Some(Duration::from_secs(2)),
                ..SolveOptions::default()
            },
            max_micro_batch: 1024,
        }
    }
}

/// Result for one algorithm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxBatch {
    /// Algorithm name.
    pub algorithm: String,
    /// The settings the row was solved with (`--set` keys and values, e.g. DawnPiper's
    /// `memopt`), as keys of the row.
    #[serde(flatten)]
    pub settings: BTreeMap<String, String>,
    /// Largest fitting micro-batch size found (None: not even 1 fits).
    pub micro_batch: Option<u32>,
    /// Micro-batches per batch (m).
    pub micro_batches: u32,
    /// micro_batch x micro_batches.
    pub batch: Option<u64>,
    /// Evaluated throughput (samples/s) of the plan at that size.
    pub throughput: Option<f64>,
    /// True when the cap `max_micro_batch` itself fits (the true maximum may be larger).
    pub capped: bool,
    /// True only when every size up to the result was probed and fits.
    pub monotone_checked: bool,
    /// Solves run.
    pub solves: u32,
    /// Why the smallest size failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Solves at size `b`: Ok(throughput) when the evaluated plan fits, Err(reason) otherwise.
fn probe(
    algo: &dyn Algorithm,
    inst: &Instance,
    b: u32,
    opts: &SolveOptions,
) -> Result<f64, String> {
    let i = inst.with_micro_batch(b);
    match harness::run(algo, &i, opts) {
        Ok(sol) => match sol.evaluated {
            Some(ev) if ev.fits => Ok(ev.throughput),
            Some(ev) => Err(format!("plan does not fit: {}", ev.notes.join("; "))),
            None => Err("not evaluated".into()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The largest micro-batch size whose plan fits for `algo` on `inst`.
pub fn max_batch(algo: &dyn Algorithm, inst: &Instance, opts: &MaxBatchOptions) -> MaxBatch {
    let m = inst.micro_batches();
    let mut row = MaxBatch {
        algorithm: algo.name().to_string(),
        settings: opts.solve.params.clone(),
        micro_batch: None,
        micro_batches: m,
        batch: None,
        throughput: None,
        capped: false,
        monotone_checked: false,
        solves: 0,
        reason: None,
    };
    let cap = opts.max_micro_batch.max(1);
    let run = |b: u32, row: &mut MaxBatch| {
        row.solves += 1;
        probe(algo, inst, b, &opts.solve)
    };
    let mut best = match run(1, &mut row) {
        Ok(t) => (1u32, t),
        Err(e) => {
            row.reason = Some(e);
            return row;
        }
    };
    // Doubling, then bisection on (lo fits, hi fails).
    let mut hi = None;
    while best.0 < cap {
        let b = (best.0 * 2).min(cap);
        match run(b, &mut row) {
            Ok(t) => best = (b, t),
            Err(_) => {
                hi = Some(b);
                break;
            }
        }
    }
    match hi {
        None => row.capped = true,
        Some(mut hi) => {
            while hi - best.0 > 1 {
                let mid = best.0 + (hi - best.0) / 2;
                match run(mid, &mut row) {
                    Ok(t) => best = (mid, t),
                    Err(_) => hi = mid,
                }
            }
        }
    }
    row.monotone_checked = best.0 <= 2;
    row.micro_batch = Some(best.0);
    row.batch = Some(best.0 as u64 * m as u64);
    row.throughput = Some(best.1);
    row
}
