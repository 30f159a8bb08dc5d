//! A fit written down: the calibration file of measured runs, with the fit's report in it
//! (`docs/calibration.md`, "The file"). `pipeplan calibrate` writes it and prints its figures;
//! the Python package returns it.

use super::{fit, Fit, Options};
use pipeplan_formulations::calibration::CalibrationFile;
use pipeplan_formulations::evaluate::accuracy::{
    summarize, sync_summary, Score, Summary, SyncSummary,
};
use pipeplan_formulations::import::sailor::report::Gathered;
use pipeplan_formulations::InputError;

/// How the fit runs, as the file states it.
const METHOD: &str = "soft-L1 loss of relative errors (scale 5%), argmin Nelder-Mead from fixed \
                      starts; peak memory, measured gradient reductions and iteration times fit \
                      their constants in turn; p2p_overlap given";

/// The labels of the three scorings, in order.
const SCORINGS: [&str; 3] = [
    "before (reference model)",
    "after (in-sample)",
    "after, leave-one-out",
];

/// The constants fitted to gathered runs, their errors, and the file that holds them.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The fit.
    pub fit: Fit,
    /// Every run's errors before, after and left out, each as the `all` row.
    pub summary: [Summary; 3],
    /// The gradient reductions' errors, likewise.
    pub sync: [SyncSummary; 3],
    /// The calibration file: the constants and the fit's report.
    pub file: CalibrationFile,
}

/// Fits the constants to the judged runs of `gathered` and writes the report: the method, the
/// runs left out and why, the summaries, every run's errors, and the constants that rest on no
/// run or on one.
pub fn calibrate(gathered: &Gathered, options: &Options) -> Result<Calibrated, InputError> {
    let Gathered {
        ready,
        not,
        repaired,
    } = gathered;
    if ready.len() < 2 && !not.is_empty() {
        // Say why the others cannot be fitted to, as `accuracy` would.
        return Err(InputError::field(
            "calibrate",
            format!(
                "{} judged run(s) of {}: fitting and cross-validating needs at least 2; not \
                 judged:{}",
                ready.len(),
                ready.len() + not.len(),
                not.iter()
                    .map(|n| format!("\n{}", n.line()))
                    .collect::<String>()
            ),
        ));
    }
    let fit = fit(ready, options)?;
    let scorings = [&fit.before, &fit.after, &fit.cross_validated];
    let summary = [0, 1, 2].map(|i| all_row(SCORINGS[i], scorings[i]));
    let sync = [0, 1, 2].map(|i| sync_summary(SCORINGS[i], scorings[i]));
    let per_run: Vec<serde_json::Value> = fit
        .cross_validated
        .iter()
        .zip(&fit.after)
        .map(|(cv, after)| {
            serde_json::json!({
                "name": cv.name,
                "dataset": cv.dataset,
                "time_error": after.time_error,
                "memory_error": after.memory_error,
                "time_error_left_out": cv.time_error,
                "memory_error_left_out": cv.memory_error,
                "grad_sync_ms": after.predicted_grad_sync_ms,
                "grad_sync_ms_measured": after.measured_grad_sync_ms,
            })
        })
        .collect();
    let mut report = serde_json::json!({
        "method": METHOD,
        "runs": ready.len(),
        "grad_sync_runs": fit.sync_runs,
        "left_out": not.iter().map(|n| format!("{}: {}: {}", n.name, n.status, n.reason)).collect::<Vec<_>>(),
        "summary": summary,
        "grad_sync_summary": sync,
        "per_run": per_run,
    });
    if !fit.unconstrained.is_empty() {
        report["unconstrained"] = fit.unconstrained.clone().into();
    }
    if !fit.single_run.is_empty() {
        report["single_run"] = fit
            .single_run
            .iter()
            .map(|(c, run)| (c.to_string(), serde_json::Value::from(run.as_str())))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if !repaired.is_empty() {
        report["repaired"] = repaired
            .iter()
            .map(|r| format!("{}: {}", r.name, r.repair))
            .collect();
    }
    let mut file = CalibrationFile::new(fit.constants, report);
    file.gpus = ready
        .iter()
        .filter_map(|r| r.instance.cluster.gpu.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(Calibrated {
        fit,
        summary,
        sync,
        file,
    })
}

/// The `all` row of `scores`, named `label`.
fn all_row(label: &str, scores: &[Score]) -> Summary {
    let all = summarize(scores).pop().expect("fit scores every run");
    Summary {
        dataset: label.to_string(),
        ..all
    }
}
