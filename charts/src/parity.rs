//! The evaluator against measured runs as parity charts (`pipeplan accuracy --plot`): per run,
//! the evaluated value against the measured one, for the iteration time and the peak memory, on
//! log axes, with the line of equality and a band of relative error around it.

use crate::{draw_legend, err, tick, GIB};
use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::evaluate::accuracy::Score;
use plotters::prelude::*;
use std::path::Path;

/// The band drawn by `accuracy --plot`: 15% relative error, the worst case the evaluator is held
/// to on measured runs (BENCHMARKS.md, "The evaluator against real GPUs").
pub const BAND: f64 = 0.15;

/// Which constants judged the runs: `calibrated with FILE`, or `uncalibrated (the reference
/// model)` without a file or for a file of the reference constants (`cal`, its content). Heads
/// `accuracy`'s table and the chart's title.
pub fn calibration_label(file: Option<&Path>, cal: &Calibration) -> String {
    match file.filter(|_| !cal.is_identity()) {
        Some(p) => format!("calibrated with {}", p.display()),
        None => "uncalibrated (the reference model)".to_string(),
    }
}

/// The chart's title: which constants judged how many runs.
pub fn title(file: Option<&Path>, cal: &Calibration, runs: usize) -> String {
    format!(
        "evaluator {}: {runs} measured runs",
        calibration_label(file, cal)
    )
}

/// One panel's points: per data set, its (measured, evaluated) pairs.
type Sets<'a> = Vec<(&'a str, Vec<(f64, f64)>)>;

/// Two panels side by side, iteration time (s) and peak memory (GiB): every run of `scores` as a
/// point (measured, evaluated), one color per data set, the line evaluated = measured, and
/// dashed lines at `band` relative error either side (0.15: 15%). SVG text; an error when there
/// is no run to draw.
pub fn parity_svg(title: &str, scores: &[Score], band: f64) -> Result<String, String> {
    if scores.is_empty() {
        return Err("no run judged: no parity chart to draw".into());
    }
    let sets = |pick: &dyn Fn(&Score) -> (f64, f64)| -> Sets<'_> {
        let mut sets: Sets<'_> = Vec::new();
        for s in scores {
            let i = match sets.iter().position(|(d, _)| *d == s.dataset) {
                Some(i) => i,
                None => {
                    sets.push((&s.dataset, Vec::new()));
                    sets.len() - 1
                }
            };
            sets[i].1.push(pick(s));
        }
        sets
    };
    let time = sets(&|s| {
        (
            s.measured_iteration_ms / 1e3,
            s.predicted_iteration_ms / 1e3,
        )
    });
    let memory = sets(&|s| (s.measured_peak_memory / GIB, s.predicted_peak_memory / GIB));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
        let (left, right) = root.split_horizontally(550);
        panel(&left, "iteration time (s)", &time, band)?;
        panel(
            &right,
            "peak memory of the busiest GPU (GiB)",
            &memory,
            band,
        )?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    what: &str,
    sets: &Sets<'_>,
    band: f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    // One range for both axes, so that the line of equality is the diagonal.
    let values = sets
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|&(m, e)| [m, e]))
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = values.fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if lo.is_finite() {
        (lo / 1.5, hi * 1.5)
    } else {
        (0.1, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{what}: evaluated against measured"),
            ("sans-serif", 13),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("measured")
        .y_desc("evaluated")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    let grey = RGBColor(120, 120, 120);
    chart
        .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.stroke_width(1)))
        .map_err(err)?
        .label("evaluated = measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    for (i, factor) in [1.0 + band, 1.0 - band].into_iter().enumerate() {
        let line = chart
            .draw_series(DashedLineSeries::new(
                [(lo, lo * factor), (hi, hi * factor)],
                6,
                4,
                grey.stroke_width(1),
            ))
            .map_err(err)?;
        if i == 0 {
            // The legend's sample is dashed too: two strokes with a gap.
            line.label(format!("±{:.0}%", 100.0 * band))
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (7, 0)], grey)
                        + PathElement::new(vec![(11, 0), (18, 0)], grey)
                });
        }
    }
    for (i, (dataset, points)) in sets.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(err)?
            .label(format!("{dataset} ({})", points.len()))
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(dataset: &str, measured_ms: f64, predicted_ms: f64) -> Score {
        Score {
            name: format!("{dataset}/{measured_ms}"),
            dataset: dataset.into(),
            predicted_iteration_ms: predicted_ms,
            measured_iteration_ms: measured_ms,
            time_error: predicted_ms / measured_ms - 1.0,
            predicted_peak_memory: 20.0 * GIB,
            measured_peak_memory: 21.0 * GIB,
            memory_error: 20.0 / 21.0 - 1.0,
            predicted_grad_sync_ms: 0.0,
            measured_grad_sync_ms: None,
        }
    }

    #[test]
    fn every_run_is_a_point_in_both_panels_and_no_run_is_an_error() {
        let scores = [
            score("A", 1000.0, 1100.0),
            score("A", 2000.0, 1900.0),
            score("B", 500.0, 800.0),
        ];
        let svg = parity_svg("runs", &scores, 0.15).unwrap();
        // Each run twice (time and memory), and one legend marker per data set and panel.
        assert_eq!(svg.matches("<circle").count(), 2 * 3 + 2 * 2, "{svg}");
        assert!(svg.contains("A (2)") && svg.contains("B (1)"));
        assert!(svg.contains("±15%"));
        assert!(svg.contains("iteration time (s)") && svg.contains("peak memory"));
        assert_eq!(
            parity_svg("runs", &[], 0.15).unwrap_err(),
            "no run judged: no parity chart to draw"
        );
    }
}
