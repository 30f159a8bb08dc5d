//! The runs of one configuration on one instance aggregated into a cell (`docs/sweep.md`,
//! "Report"): repeats and seeds are summarised by medians, so that one slow or lucky run does
//! not decide a comparison.

use super::super::row::RunRow;

/// Median of `values` (the mean of the two middle values for an even count); `None` if empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Shifted geometric mean: exp(mean(ln(x + shift))) - shift; `None` if empty.
pub fn shifted_geometric_mean(values: &[f64], shift: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().map(|x| (x + shift).ln()).sum::<f64>() / values.len() as f64;
    Some(mean.exp() - shift)
}

/// The runs of one (configuration, instance).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    /// Runs (seeds x repeats).
    pub runs: usize,
    /// Runs that produced a plan.
    pub solved: usize,
    /// Runs whose plan the evaluator says fits.
    pub fits: usize,
    /// Runs the algorithm declined.
    pub unsupported: usize,
    /// The claimed objective: its name, unit and the median over the solved runs that claim
    /// it (the most claimed kind when runs differ).
    pub objective: Option<(String, String, f64)>,
    /// Median solve time (ms) over the solved runs.
    pub time_ms: Option<f64>,
    /// Median evaluated throughput (samples/s) over the runs whose plan fits.
    pub throughput: Option<f64>,
}

impl Cell {
    /// The cell of `runs`.
    pub fn of(runs: &[&RunRow]) -> Cell {
        let solved: Vec<&&RunRow> = runs.iter().filter(|r| r.result == "solved").collect();
        let mut kinds: Vec<(&str, &str, Vec<f64>)> = Vec::new();
        for r in &solved {
            let (Some(name), Some(unit), Some(v)) = (
                r.claimed_objective_name.as_deref(),
                r.claimed_objective_unit.as_deref(),
                r.claimed_objective,
            ) else {
                continue;
            };
            match kinds.iter_mut().find(|(n, _, _)| *n == name) {
                Some(k) => k.2.push(v),
                None => kinds.push((name, unit, vec![v])),
            }
        }
        // Most runs first, then by name: deterministic.
        kinds.sort_by(|a, b| b.2.len().cmp(&a.2.len()).then(a.0.cmp(b.0)));
        let objective = kinds
            .into_iter()
            .next()
            .and_then(|(n, u, v)| median(v).map(|m| (n.to_string(), u.to_string(), m)));
        let fitting: Vec<f64> = solved
            .iter()
            .filter(|r| r.evaluated_fits == Some(true))
            .filter_map(|r| r.evaluated_throughput)
            .collect();
        Cell {
            runs: runs.len(),
            solved: solved.len(),
            fits: runs
                .iter()
                .filter(|r| r.evaluated_fits == Some(true))
                .count(),
            unsupported: runs.iter().filter(|r| r.result == "unsupported").count(),
            objective,
            time_ms: median(solved.iter().filter_map(|r| r.solve_ms).collect()),
            throughput: median(fitting),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_means() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        // Shift 10: sqrt((0 + 10) * (30 + 10)) - 10 = 20 - 10 = 10.
        let g = shifted_geometric_mean(&[0.0, 30.0], 10.0).unwrap();
        assert!((g - 10.0).abs() < 1e-12, "{g}");
    }
}
