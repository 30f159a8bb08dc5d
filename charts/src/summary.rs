//! A comparison's summary chart: every algorithm's evaluated throughput and peak memory, claimed
//! beside evaluated.

use crate::{err, tick, GIB};
use plotters::prelude::*;

/// One algorithm in a comparison's summary chart.
pub struct SummaryBar {
    /// Algorithm name.
    pub name: String,
    /// Evaluated throughput (samples/s).
    pub throughput: f64,
    /// Claimed throughput (samples/s), if the algorithm claims one.
    pub claimed_throughput: Option<f64>,
    /// Evaluated peak memory of the busiest GPU (bytes).
    pub memory: f64,
    /// Claimed peak memory (bytes), if claimed.
    pub claimed_memory: Option<f64>,
}

/// A comparison's summary for one instance: throughput and peak memory per algorithm, claimed
/// (light) beside evaluated (dark), with the GPU memory as a red line. SVG text.
pub fn summary_svg(title: &str, bars: &[SummaryBar], limit: f64) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
        let (left, right) = root.split_horizontally(550);
        let tp: Vec<(f64, Option<f64>)> = bars
            .iter()
            .map(|b| (b.throughput, b.claimed_throughput))
            .collect();
        let mem: Vec<(f64, Option<f64>)> = bars
            .iter()
            .map(|b| (b.memory / GIB, b.claimed_memory.map(|m| m / GIB)))
            .collect();
        let names: Vec<String> = bars.iter().map(|b| b.name.clone()).collect();
        paired(&left, "throughput (samples/s)", &names, &tp, None)?;
        paired(&right, "peak memory (GiB)", &names, &mem, Some(limit / GIB))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn paired<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    what: &str,
    names: &[String],
    values: &[(f64, Option<f64>)],
    limit: Option<f64>,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let n = names.len().max(1) as i32;
    let top = values
        .iter()
        .flat_map(|(e, c)| [*e, c.unwrap_or(0.0)])
        .chain(limit)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{what}: claimed (light), evaluated (dark)"),
            ("sans-serif", 13),
        )
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(130)
        .build_cartesian_2d(0.0..top.max(1e-9), (0..n - 1).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(names.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => {
                names.get((n - 1 - i) as usize).cloned().unwrap_or_default()
            }
            _ => String::new(),
        })
        .x_label_formatter(&|v| tick(*v))
        .max_light_lines(1)
        .draw()
        .map_err(err)?;
    let dark = RGBColor(21, 101, 192);
    let light = RGBColor(144, 202, 249);
    let mut rects = Vec::new();
    for (i, (e, c)) in values.iter().enumerate() {
        let seg = n - 1 - i as i32;
        let (lo, mid, hi) = (
            SegmentValue::Exact(seg),
            SegmentValue::CenterOf(seg),
            SegmentValue::Exact(seg + 1),
        );
        if let Some(c) = c.filter(|c| c.is_finite()) {
            rects.push(Rectangle::new(
                [(0.0, mid.clone()), (c, hi)],
                light.filled(),
            ));
        }
        rects.push(Rectangle::new([(0.0, lo), (*e, mid)], dark.filled()));
    }
    chart.draw_series(rects).map_err(err)?;
    if let Some(l) = limit {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(l, SegmentValue::Exact(0)), (l, SegmentValue::Exact(n))],
                RED.stroke_width(2),
            )))
            .map_err(err)?;
    }
    Ok(())
}
