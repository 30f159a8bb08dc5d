//! Performance profiles of a sweep: rho(tau) per configuration.

use crate::{draw_legend, err, tick};
use plotters::prelude::*;

/// One performance profile's panel: what it measures, over how many instances, and per
/// configuration the steps `(tau, share)` of its curve rho(tau).
pub struct ProfilePanel<'a> {
    /// The metric compared (e.g. time, objective).
    pub metric: &'a str,
    /// Instances the shares are out of.
    pub problems: usize,
    /// Per configuration: its label and its steps, in increasing tau.
    pub curves: Vec<(&'a str, &'a [(f64, f64)])>,
}

/// Performance profiles (`sweep report`), one panel each: rho(tau), the share of instances on
/// which a configuration is within a factor tau of the best, as steps over a log-scaled tau.
/// SVG text.
pub fn profiles_svg(profiles: &[ProfilePanel<'_>]) -> Result<String, String> {
    let panels = profiles.len().max(1);
    let (w, h) = (900u32, 380u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h * panels as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        for (p, area) in profiles.iter().zip(root.split_evenly((panels, 1))) {
            profile_panel(&area, p)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn profile_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &ProfilePanel<'_>,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    // The axis reaches past the largest finite ratio, at least to 2.
    let top = p
        .curves
        .iter()
        .flat_map(|c| c.1.iter().map(|s| s.0))
        .fold(2.0_f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "performance profile: {} ({} instances)",
                p.metric, p.problems
            ),
            ("sans-serif", 15),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d((1.0..top).log_scale(), 0.0..1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("tau (ratio to the best)")
        .y_desc("share of instances")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    for (i, c) in p.curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mut points = vec![(1.0, 0.0)];
        let mut level = 0.0;
        for &(tau, share) in c.1 {
            points.push((tau, level));
            points.push((tau, share));
            level = share;
        }
        points.push((top, level));
        chart
            .draw_series(std::iter::once(PathElement::new(
                points,
                color.stroke_width(2),
            )))
            .map_err(err)?
            .label(c.0)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    Ok(())
}
