//! Gaps against the exact references of the same objective kind.

use super::compare::Row;
use crate::algorithm::{Algorithm, ObjectiveKind, Status};

/// The relative gap of `value` over the reference `best` of the same objective (smaller is
/// better): (value - best) / best; infinite when the reference is 0 and the value is not.
pub fn relative_gap(value: f64, best: f64) -> f64 {
    if best > 0.0 {
        (value - best) / best
    } else if value > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// Fills `gap_vs_exact` and `period_gap_vs_exact` for the rows of one instance.
pub(super) fn fill_gaps(rows: &mut [Row], algos: &[Box<dyn Algorithm>]) {
    // Best proven-optimal value per objective kind, from exact algorithms (in row order, so the
    // first of equal optima is the reference).
    let mut best: Vec<(ObjectiveKind, f64, String)> = Vec::new();
    for (row, algo) in rows.iter().zip(algos) {
        let Some(sol) = row.solution() else { continue };
        let Some(obj) = &sol.claimed.objective else {
            continue;
        };
        if !algo.exact() || sol.stats.status != Status::Optimal {
            continue;
        }
        match best.iter_mut().find(|(k, _, _)| *k == obj.kind) {
            Some(entry) if obj.value < entry.1 => {
                entry.1 = obj.value;
                entry.2 = row.algorithm.clone();
            }
            Some(_) => {}
            None => best.push((obj.kind, obj.value, row.algorithm.clone())),
        }
    }
    for row in rows.iter_mut() {
        let Some(obj) = row.solution().and_then(|s| s.claimed.objective) else {
            continue;
        };
        if let Some((_, b, who)) = best.iter().find(|(k, _, _)| *k == obj.kind) {
            row.gap_vs_exact = Some(relative_gap(obj.value, *b));
            row.exact_reference = Some(who.clone());
        }
    }
    let Some((_, best_period, _)) = best
        .iter()
        .find(|(k, _, _)| *k == ObjectiveKind::AsyncPeriod)
    else {
        return;
    };
    for row in rows.iter_mut() {
        let Some(ev) = row.solution().and_then(|s| s.evaluated.as_ref()) else {
            continue;
        };
        if let (Some(t), true) = (ev.period_ms, ev.fits) {
            if *best_period > 0.0 {
                row.period_gap_vs_exact = Some((t - best_period) / best_period);
            }
        }
    }
}
