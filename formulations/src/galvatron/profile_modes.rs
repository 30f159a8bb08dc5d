//! Reading the engine's `sequence` profile modes from the profile files
//! (`docs/galvatron.md`, "Import"): which mode a config asks for, the batch-1 entries the time
//! fits read, and the sequence lengths a memory entry is keyed by. The fits are in [`fit`].

use super::fit;
use super::import::{field, num};
use crate::error::InputError;
use serde_json::{Map, Value};
use std::path::Path;

/// A profile mode argument, `static` when absent or not emulated.
pub(super) fn mode(config: &Map<String, Value>, key: &str) -> &'static str {
    match config.get(key).and_then(Value::as_str) {
        Some("sequence") => "sequence",
        _ => "static",
    }
}

/// `(sequence length, time)` of the batch-1 entries `<prefix>..._bsz1_seq<n>` of a computation
/// profile, in file order.
fn batch1_points(
    time: &[(String, Value)],
    prefix: &str,
    path: &Path,
) -> Result<(Vec<f64>, Vec<f64>), InputError> {
    let mut x = Vec::new();
    let mut y = Vec::new();
    for (k, v) in time {
        if k.starts_with(prefix) && k.contains("_bsz1_") {
            let seq = k
                .rsplit("seq")
                .next()
                .and_then(|t| t.parse::<f64>().ok())
                .ok_or_else(|| field(k, "expected a key ending in seq<length>").in_file(path))?;
            x.push(seq);
            y.push(num(v, path, k)?);
        }
    }
    Ok((x, y))
}

/// The engine's `sequence` time mode: the batch-1 times of `prefix` fitted by `curve` in the
/// sequence length (by `method`), at `seq`.
pub(super) fn fitted_time(
    time: &[(String, Value)],
    prefix: &str,
    curve: fit::Curve,
    seq: f64,
    method: fit::FitMethod,
    path: &Path,
) -> Result<f64, InputError> {
    let (x, y) = batch1_points(time, prefix, path)?;
    let c = method.params(curve, &x, &y).ok_or_else(|| {
        let found = fit::distinct(&x);
        let why = if found < curve.params() {
            format!(
                "needs {} distinct sequence lengths, found {found}",
                curve.params()
            )
        } else {
            "scipy's curve_fit finds no optimum (the engine stops there)".to_string()
        };
        field(
            format!("{prefix}*_bsz1_seq*"),
            format!("time_profile_mode=sequence fits a {}: {why}", curve.name()),
        )
        .in_file(path)
    })?;
    Ok(method.at(curve, &c, seq))
}

/// The shortest and longest sequence lengths a memory profile entry is keyed by.
pub(super) fn seq_range(v: &Value, key: &str, path: &Path) -> Result<(f64, f64), InputError> {
    let seqs: Vec<f64> = v
        .as_object()
        .map(|m| m.keys().filter_map(|k| k.parse::<f64>().ok()).collect())
        .unwrap_or_default();
    let min = seqs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = seqs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if seqs.is_empty() {
        return Err(field(
            key,
            "memory_profile_mode=sequence needs entries keyed by sequence length",
        )
        .in_file(path));
    }
    Ok((min, max))
}
