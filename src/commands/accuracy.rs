//! `pipeplan accuracy` and `pipeplan calibrate`: the evaluator against measured runs.

use super::{write_or_print, Failure, Format};
use crate::cli::{AccuracyArgs, CalibrateArgs, RunsArgs};
use crate::report;
use crate::table::Table;
use pipeplan_charts::parity;
use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::evaluate::accuracy::{
    summarize, sync_summary, Score, Summary, SyncSummary,
};
use pipeplan_formulations::import::sailor::report::{Gathered, NotJudged, Repaired};
use pipeplan_formulations::import::sailor::runs::RunOptions;
use pipeplan_formulations::units::{fmt_bytes, fmt_ms, fmt_percent};
use pipeplan_solvers::calibrate::Calibrated;
use serde::Serialize;

fn gather(a: &RunsArgs) -> Result<Gathered, Failure> {
    let opts = RunOptions {
        root: a.sailor_root.clone(),
        model: a.model.clone(),
        repair_layers: a.repair_layers,
    };
    Ok(pipeplan_formulations::import::sailor::report::gather(
        &a.dirs, &opts,
    )?)
}

fn pct(e: f64) -> String {
    format!("{:+.1}%", 100.0 * e)
}

fn abs_pct(e: f64) -> String {
    fmt_percent(e, 1)
}

fn scores_table(scores: &[Score]) -> String {
    let mut t = Table::new(
        &[
            "run",
            "iteration (evaluated)",
            "measured",
            "error",
            "peak memory (evaluated)",
            "measured",
            "error",
            "gradient sync (evaluated)",
            "measured",
        ],
        &[1, 2, 3, 4, 5, 6, 7, 8],
    );
    for s in scores {
        t.row(vec![
            s.name.clone(),
            fmt_ms(s.predicted_iteration_ms),
            fmt_ms(s.measured_iteration_ms),
            pct(s.time_error),
            fmt_bytes(s.predicted_peak_memory),
            fmt_bytes(s.measured_peak_memory),
            pct(s.memory_error),
            fmt_ms(s.predicted_grad_sync_ms),
            s.measured_grad_sync_ms
                .map_or_else(|| "-".to_string(), fmt_ms),
        ]);
    }
    t.render()
}

/// A table of absolute relative errors: per row a label, its number of runs and the errors,
/// under `header` (label column first).
fn error_table(
    header: &[&str],
    rows: impl IntoIterator<Item = (String, usize, Vec<f64>)>,
) -> String {
    let right: Vec<usize> = (1..header.len()).collect();
    let mut t = Table::new(header, &right);
    for (label, runs, errors) in rows {
        let mut row = vec![label, runs.to_string()];
        row.extend(errors.into_iter().map(abs_pct));
        t.row(row);
    }
    t.render()
}

fn summary_table(title: &str, sums: &[Summary]) -> String {
    error_table(
        &[
            title,
            "runs",
            "time median",
            "time worst",
            "memory median",
            "memory worst",
        ],
        sums.iter().map(|s| {
            let errors = vec![s.time_median, s.time_worst, s.memory_median, s.memory_worst];
            (s.dataset.clone(), s.runs, errors)
        }),
    )
}

fn not_judged_text(not: &[NotJudged]) -> String {
    let mut out = String::new();
    if !not.is_empty() {
        out.push_str("\nnot judged (left out of the summary):\n");
        for n in not {
            out.push_str(&n.line());
            out.push('\n');
        }
    }
    out
}

fn repaired_text(repaired: &[Repaired]) -> String {
    let mut out = String::new();
    if !repaired.is_empty() {
        out.push_str("\nmended (--repair-layers), then judged:\n");
        for r in repaired {
            out.push_str(&format!("  {}: {}\n", r.name, r.repair));
        }
    }
    out
}

/// `pipeplan accuracy`.
pub fn accuracy(a: AccuracyArgs) -> Result<(), Failure> {
    let given = a.calibration.read()?;
    let cal = given
        .as_ref()
        .map_or(Calibration::IDENTITY, |g| *g.constants());
    let gathered = gather(&a.runs)?;
    if let Some(g) = &given {
        for run in &gathered.ready {
            g.warn_if_foreign(&run.instance);
        }
    }
    let scores = gathered.scores(&cal)?;
    let Gathered { not, repaired, .. } = &gathered;
    let summary = summarize(&scores);
    let file = a.calibration.calibration.as_deref();
    let which = parity::calibration_label(file, &cal);
    let text = match a.out.format() {
        Format::Json => {
            #[derive(Serialize)]
            struct Out<'a> {
                calibration: &'a Calibration,
                runs: &'a [Score],
                not_judged: &'a [NotJudged],
                #[serde(skip_serializing_if = "<[Repaired]>::is_empty")]
                repaired: &'a [Repaired],
                summary: &'a [Summary],
            }
            report::json(&Out {
                calibration: &cal,
                runs: &scores,
                not_judged: not,
                repaired,
                summary: &summary,
            })
        }
        Format::Csv => {
            let rows = gathered.records(&scores);
            report::csv(&rows)
        }
        Format::Table => {
            let mut out = format!("evaluator {which}; error = (evaluated - measured) / measured\n");
            if !scores.is_empty() {
                out.push_str(&scores_table(&scores));
            }
            out.push_str(&repaired_text(repaired));
            out.push_str(&not_judged_text(not));
            if summary.is_empty() {
                out.push_str("\nno run judged: no error to summarise\n");
            } else {
                out.push_str("\nabsolute relative error\n");
                out.push_str(&summary_table("data set", &summary));
            }
            let sync = sync_summary("data-parallel runs", &scores);
            if sync.runs > 0 {
                out.push('\n');
                out.push_str(&sync_table(&[sync]));
            }
            out
        }
    };
    write_or_print(None, &text)?;
    // After the table, which says why runs were not judged when none can be drawn.
    if let Some(path) = &a.plot {
        let title = parity::title(file, &cal, scores.len());
        let svg = parity::parity_svg(&title, &scores, parity::BAND).map_err(Failure::input)?;
        super::plot::write_image(path, None, &svg)?;
    }
    Ok(())
}

fn sync_table(rows: &[SyncSummary]) -> String {
    error_table(
        &["gradient reduction", "runs", "median", "worst"],
        rows.iter()
            .map(|r| (r.label.clone(), r.runs, vec![r.median, r.worst])),
    )
}

/// `pipeplan calibrate`.
pub fn calibrate(a: CalibrateArgs) -> Result<(), Failure> {
    let gathered = gather(&a.runs)?;
    let options = pipeplan_solvers::calibrate::Options {
        p2p_overlap: a.p2p_overlap,
    };
    let Calibrated {
        fit,
        summary,
        sync,
        file,
    } = pipeplan_solvers::calibrate::calibrate(&gathered, &options)?;
    let Gathered {
        ready,
        not,
        repaired,
    } = gathered;
    let c = &fit.constants;
    let mut text = format!(
        "fitted on {} measured runs: reserved_memory {}, activation_factor {:.3}, \
         compute_factor {:.3}, p2p_efficiency {:.3}, collective_efficiency {:.3} ({}), \
         p2p_overlap {:.3} (given)\n",
        ready.len(),
        fmt_bytes(c.reserved_memory),
        c.activation_factor,
        c.compute_factor,
        c.p2p_efficiency,
        c.collective_efficiency,
        match fit.sync_runs {
            _ if fit.unconstrained.contains(&"collective_efficiency") => {
                "not fitted: below".to_string()
            }
            0 => "no run measured a gradient reduction: fitted to iteration times".to_string(),
            1 => "fitted to the gradient reduction of 1 data-parallel run".to_string(),
            n => format!("fitted to the gradient reductions of {n} data-parallel runs"),
        },
        c.p2p_overlap
    );
    if !fit.unconstrained.is_empty() {
        text.push_str(&format!(
            "not fitted, kept at the reference value (no run's prediction depends on it): {}\n",
            fit.unconstrained.join(", ")
        ));
    }
    if !fit.single_run.is_empty() {
        let named: Vec<String> = fit
            .single_run
            .iter()
            .map(|(c, run)| format!("{c} ({run})"))
            .collect();
        text.push_str(&format!(
            "fitted to one run alone (the fold that leaves the run out keeps the reference \
             value): {}\n",
            named.join(", ")
        ));
    }
    text.push_str(&summary_table("absolute relative error", &summary));
    if fit.sync_runs > 0 {
        text.push_str(&sync_table(&sync));
    }
    text.push_str(&repaired_text(&repaired));
    text.push_str(&not_judged_text(&not));
    match a.output.as_deref() {
        Some(p) if p != std::path::Path::new("-") => {
            write_or_print(Some(p), &file.to_json())?;
            text.push_str(&format!("wrote {}\n", p.display()));
            write_or_print(None, &text)
        }
        _ => {
            eprint!("{text}");
            write_or_print(None, &file.to_json())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_signed_and_absolute() {
        assert_eq!(pct(0.0512), "+5.1%");
        assert_eq!(pct(-0.2), "-20.0%");
        assert_eq!(abs_pct(0.15), "15.0%");
    }
}
