//! The evaluator against measured runs: predicted iteration time and peak memory next to what
//! the hardware measured (`docs/calibration.md`).

use crate::calibration::Calibration;
use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::Plan;
use serde::Serialize;

/// A plan that was run, with what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The run's name (its file, relative).
    pub name: String,
    /// The data set it belongs to.
    pub dataset: String,
    /// The instance it ran on (its calibration is replaced by the one judged with).
    pub instance: Instance,
    /// The plan.
    pub plan: Plan,
    /// Measured iteration time (ms).
    pub iteration_ms: f64,
    /// Measured peak memory of the busiest GPU (bytes).
    pub peak_memory: f64,
    /// Measured gradient synchronisation (ms), when the run recorded it.
    pub grad_sync_ms: Option<f64>,
}

/// The evaluator's prediction of one run under a calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Iteration time (ms).
    pub iteration_ms: f64,
    /// Peak memory of the busiest GPU (bytes).
    pub peak_memory: f64,
    /// Gradient synchronisation included in the iteration (ms; 0 without data parallelism).
    pub grad_sync_ms: f64,
}

impl Measured {
    /// The evaluator's prediction of the run under `cal`.
    pub fn predict(&self, cal: &Calibration) -> Result<Prediction, InputError> {
        let ev = super::evaluate(&self.instance.calibrated(cal), &self.plan)?;
        let iteration_ms = ev.iteration_ms.or(ev.period_ms).ok_or_else(|| {
            InputError::field("plan.schedule", "the evaluation has no iteration time")
        })?;
        Ok(Prediction {
            iteration_ms,
            peak_memory: ev.max_memory,
            grad_sync_ms: ev.grad_sync_ms.unwrap_or(0.0),
        })
    }

    /// The run scored under `cal`.
    pub fn score(&self, cal: &Calibration) -> Result<Score, InputError> {
        let p = self.predict(cal)?;
        Ok(Score {
            name: self.name.clone(),
            dataset: self.dataset.clone(),
            predicted_iteration_ms: p.iteration_ms,
            measured_iteration_ms: self.iteration_ms,
            time_error: relative(p.iteration_ms, self.iteration_ms),
            predicted_peak_memory: p.peak_memory,
            measured_peak_memory: self.peak_memory,
            memory_error: relative(p.peak_memory, self.peak_memory),
            predicted_grad_sync_ms: p.grad_sync_ms,
            measured_grad_sync_ms: self.grad_sync_ms,
        })
    }
}

impl Score {
    /// Signed relative error of the evaluated gradient synchronisation, for a run that measured
    /// one and whose plan the evaluator gives one (data parallelism); `None` otherwise.
    pub fn grad_sync_error(&self) -> Option<f64> {
        let measured = self.measured_grad_sync_ms.filter(|&m| m > 0.0)?;
        (self.predicted_grad_sync_ms > 0.0).then(|| relative(self.predicted_grad_sync_ms, measured))
    }
}

/// Signed relative error of a prediction: (predicted - measured) / measured.
pub fn relative(predicted: f64, measured: f64) -> f64 {
    (predicted - measured) / measured
}

/// One run, predicted and measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// Run name.
    pub name: String,
    /// Data set.
    pub dataset: String,
    /// Evaluated iteration time (ms).
    pub predicted_iteration_ms: f64,
    /// Measured iteration time (ms).
    pub measured_iteration_ms: f64,
    /// Signed relative error of the iteration time.
    pub time_error: f64,
    /// Evaluated peak memory of the busiest GPU (bytes).
    pub predicted_peak_memory: f64,
    /// Measured peak memory of the busiest GPU (bytes).
    pub measured_peak_memory: f64,
    /// Signed relative error of the peak memory.
    pub memory_error: f64,
    /// Evaluated gradient synchronisation (ms, part of the iteration).
    pub predicted_grad_sync_ms: f64,
    /// Measured gradient synchronisation (ms), when the run recorded it.
    pub measured_grad_sync_ms: Option<f64>,
}

/// Median and worst absolute relative errors of a set of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Data set (`all` for every run).
    pub dataset: String,
    /// Runs scored.
    pub runs: usize,
    /// Median absolute relative error of the iteration time.
    pub time_median: f64,
    /// Largest absolute relative error of the iteration time.
    pub time_worst: f64,
    /// Median absolute relative error of the peak memory.
    pub memory_median: f64,
    /// Largest absolute relative error of the peak memory.
    pub memory_worst: f64,
}

/// Median of absolute values (mean of the two middle ones for an even count; 0 when empty).
pub fn median_abs(v: &[f64]) -> f64 {
    let mut a: Vec<f64> = v.iter().map(|x| x.abs()).collect();
    a.sort_by(f64::total_cmp);
    match a.len() {
        0 => 0.0,
        n if n % 2 == 1 => a[n / 2],
        n => (a[n / 2 - 1] + a[n / 2]) / 2.0,
    }
}

/// Largest absolute value (0 when empty).
pub fn worst_abs(v: &[f64]) -> f64 {
    v.iter().map(|x| x.abs()).fold(0.0, f64::max)
}

/// One summary per data set (in order of first appearance), then `all`; none without scores
/// (no error is measured over no run).
pub fn summarize(scores: &[Score]) -> Vec<Summary> {
    if scores.is_empty() {
        return Vec::new();
    }
    let mut sets: Vec<&str> = Vec::new();
    for s in scores {
        if !sets.contains(&s.dataset.as_str()) {
            sets.push(&s.dataset);
        }
    }
    let of = |name: &str, pick: &dyn Fn(&Score) -> bool| {
        let chosen: Vec<&Score> = scores.iter().filter(|s| pick(s)).collect();
        let t: Vec<f64> = chosen.iter().map(|s| s.time_error).collect();
        let m: Vec<f64> = chosen.iter().map(|s| s.memory_error).collect();
        Summary {
            dataset: name.to_string(),
            runs: chosen.len(),
            time_median: median_abs(&t),
            time_worst: worst_abs(&t),
            memory_median: median_abs(&m),
            memory_worst: worst_abs(&m),
        }
    };
    let mut out: Vec<Summary> = sets
        .iter()
        .map(|d| of(d, &|s: &Score| s.dataset == *d))
        .collect();
    out.push(of("all", &|_| true));
    out
}

/// Median and worst absolute relative error of the evaluated gradient reduction, over the runs
/// that measured one with data parallelism.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncSummary {
    /// What the runs are (e.g. `after, leave-one-out`).
    pub label: String,
    /// Runs with a measured reduction and data parallelism.
    pub runs: usize,
    /// Median absolute relative error.
    pub median: f64,
    /// Largest absolute relative error.
    pub worst: f64,
}

/// The gradient reductions of `scores` ([`Score::grad_sync_error`]) summarised under `label`.
pub fn sync_summary(label: &str, scores: &[Score]) -> SyncSummary {
    let errors: Vec<f64> = scores.iter().filter_map(Score::grad_sync_error).collect();
    SyncSummary {
        label: label.to_string(),
        runs: errors.len(),
        median: median_abs(&errors),
        worst: worst_abs(&errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_worst_cases() {
        assert_eq!(median_abs(&[0.1, -0.3, 0.2]), 0.2);
        assert_eq!(median_abs(&[0.1, -0.3, 0.2, -0.4]), 0.25);
        assert_eq!(median_abs(&[]), 0.0);
        assert!(summarize(&[]).is_empty(), "no `all` row over no run");
        assert_eq!(worst_abs(&[0.1, -0.3, 0.2]), 0.3);
        assert!((relative(110.0, 100.0) - 0.1).abs() < 1e-12);
    }
}
