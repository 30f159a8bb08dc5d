//! What `pipeplan accuracy` reports of measured runs (`docs/calibration.md`): the runs split
//! into those judged, those not (with the reason) and those mended, and one record per run (the
//! rows of `accuracy --csv`, and of the Python package's `pipeplan.accuracy`).

use super::runs::{collect, Outcome, RunOptions};
use crate::calibration::Calibration;
use crate::error::InputError;
use crate::evaluate::accuracy::{Measured, Score};
use serde::Serialize;
use std::path::PathBuf;

/// A run that was not judged, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotJudged {
    /// Run name.
    pub name: String,
    /// Data set.
    pub dataset: String,
    /// `unsupported` (a valid run pipeplan does not model yet) or `invalid` (a bad file).
    pub status: &'static str,
    /// Why, naming the file's field.
    pub reason: String,
}

impl NotJudged {
    /// The run, its status and the reason, indented, as the reports list it.
    pub fn line(&self) -> String {
        format!("  {}: {}: {}", self.name, self.status, self.reason)
    }
}

/// A run judged after its plan was mended (`RunOptions::repair_layers`), and what was mended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repaired {
    /// Run name.
    pub name: String,
    /// Data set.
    pub dataset: String,
    /// What was mended.
    pub repair: String,
}

/// The measured runs under some folders, split for a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Gathered {
    /// The runs ready to be judged, in path order.
    pub ready: Vec<Measured>,
    /// The runs not judged, in path order.
    pub not: Vec<NotJudged>,
    /// The ready runs whose plans were mended.
    pub repaired: Vec<Repaired>,
}

/// Every measured run under `dirs` ([`collect`]), split; no run at all is an error.
pub fn gather(dirs: &[PathBuf], opts: &RunOptions) -> Result<Gathered, InputError> {
    let runs = collect(dirs, opts)?;
    if runs.is_empty() {
        return Err(InputError::field(
            "",
            format!(
                "no measured run (plan_config*.json) under {}",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let mut out = Gathered {
        ready: Vec::new(),
        not: Vec::new(),
        repaired: Vec::new(),
    };
    for r in runs {
        let not = |status: &'static str, reason: String| NotJudged {
            name: r.name.clone(),
            dataset: r.dataset.clone(),
            status,
            reason,
        };
        match r.outcome {
            Outcome::Ready(m) => {
                if let Some(repair) = r.repaired {
                    out.repaired.push(Repaired {
                        name: r.name,
                        dataset: r.dataset,
                        repair,
                    });
                }
                out.ready.push(*m);
            }
            Outcome::Unsupported(reason) => out.not.push(not("unsupported", reason)),
            Outcome::Invalid(reason) => out.not.push(not("invalid", reason)),
        }
    }
    Ok(out)
}

/// One run as `accuracy --csv` lists it: judged (with its figures) or not (with the reason).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Run name.
    pub name: String,
    /// Data set.
    pub dataset: String,
    /// `judged`, `unsupported` or `invalid`.
    pub status: &'static str,
    /// Evaluated iteration time (ms).
    pub predicted_iteration_ms: Option<f64>,
    /// Measured iteration time (ms).
    pub measured_iteration_ms: Option<f64>,
    /// Signed relative error of the iteration time.
    pub time_error: Option<f64>,
    /// Evaluated peak memory of the busiest GPU (bytes).
    pub predicted_peak_memory: Option<f64>,
    /// Measured peak memory of the busiest GPU (bytes).
    pub measured_peak_memory: Option<f64>,
    /// Signed relative error of the peak memory.
    pub memory_error: Option<f64>,
    /// Evaluated gradient synchronisation (ms).
    pub predicted_grad_sync_ms: Option<f64>,
    /// Measured gradient synchronisation (ms), when the run recorded it.
    pub measured_grad_sync_ms: Option<f64>,
    /// Why the run was not judged (empty when it was).
    pub reason: String,
    /// What was mended before it was judged (empty when nothing was).
    pub repair: String,
}

impl Gathered {
    /// Every ready run scored under `cal`, in path order.
    pub fn scores(&self, cal: &Calibration) -> Result<Vec<Score>, InputError> {
        self.ready.iter().map(|m| m.score(cal)).collect()
    }

    /// One record per run: the judged ones (`scores`, from [`Gathered::scores`]) first, then
    /// those not judged.
    pub fn records(&self, scores: &[Score]) -> Vec<Record> {
        let judged = scores.iter().map(|s| Record {
            name: s.name.clone(),
            dataset: s.dataset.clone(),
            status: "judged",
            predicted_iteration_ms: Some(s.predicted_iteration_ms),
            measured_iteration_ms: Some(s.measured_iteration_ms),
            time_error: Some(s.time_error),
            predicted_peak_memory: Some(s.predicted_peak_memory),
            measured_peak_memory: Some(s.measured_peak_memory),
            memory_error: Some(s.memory_error),
            predicted_grad_sync_ms: Some(s.predicted_grad_sync_ms),
            measured_grad_sync_ms: s.measured_grad_sync_ms,
            reason: String::new(),
            repair: self
                .repaired
                .iter()
                .find(|r| r.name == s.name)
                .map_or_else(String::new, |r| r.repair.clone()),
        });
        let not = self.not.iter().map(|n| Record {
            name: n.name.clone(),
            dataset: n.dataset.clone(),
            status: n.status,
            predicted_iteration_ms: None,
            measured_iteration_ms: None,
            time_error: None,
            predicted_peak_memory: None,
            measured_peak_memory: None,
            memory_error: None,
            predicted_grad_sync_ms: None,
            measured_grad_sync_ms: None,
            reason: n.reason.clone(),
            repair: String::new(),
        });
        judged.chain(not).collect()
    }
}
