//! Performance profiles of a sweep: rho(tau) per configuration.

use crate::{err, side_legend, tick, with_legend};
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
/// A configuration has one color in every panel; each panel's legend, beside it, lists those it
/// draws. SVG text.
pub fn profiles_svg(profiles: &[ProfilePanel<'_>]) -> Result<String, String> {
    let panels = profiles.len().max(1);
    let (w, h) = (900 + crate::LEGEND_WIDTH, 380u32);
    // Every configuration of any panel, in order of first appearance: its index is its color.
    let mut labels: Vec<&str> = Vec::new();
    for c in profiles.iter().flat_map(|p| &p.curves) {
        if !labels.contains(&c.0) {
            labels.push(c.0);
        }
    }
    let color = |label: &str| {
        let i = labels.iter().position(|l| *l == label).unwrap_or(0);
        let RGBAColor(r, g, b, _) = Palette99::pick(i).to_rgba();
        RGBColor(r, g, b)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h * panels as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        for (p, area) in profiles.iter().zip(root.split_evenly((panels, 1))) {
            profile_panel(&area, p, &color)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn profile_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &ProfilePanel<'_>,
    color: &dyn Fn(&str) -> RGBColor,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let (area, legend) = with_legend(area);
    // The axis reaches past the largest finite ratio, at least to 2.
    let top = p
        .curves
        .iter()
        .flat_map(|c| c.1.iter().map(|s| s.0))
        .fold(2.0_f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&area)
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
    for c in &p.curves {
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
                color(c.0).stroke_width(2),
            )))
            .map_err(err)?;
    }
    let entries: Vec<(&str, RGBColor)> = p.curves.iter().map(|c| (c.0, color(c.0))).collect();
    side_legend(&legend, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `x` and `fill` of each legend swatch of `label`: the last rectangle before its text.
    fn swatches(svg: &str, label: &str) -> Vec<(String, String)> {
        let attr = |r: &str, name: &str| {
            let at = r.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            r[at..at + r[at..].find('"').unwrap()].to_string()
        };
        svg.match_indices(&format!(">\n{label}\n</text>"))
            .map(|(at, _)| {
                let r = &svg[svg[..at].rfind("<rect").unwrap()..at];
                (attr(r, "x"), attr(r, "fill"))
            })
            .collect()
    }

    #[test]
    fn a_configuration_keeps_its_color_in_every_panel_and_legends_sit_beside_the_plots() {
        let steps = [(1.0, 0.5), (2.0, 1.0)];
        let panel = |metric, curves| ProfilePanel {
            metric,
            problems: 2,
            curves,
        };
        let svg = profiles_svg(&[
            panel("time", vec![("a", &steps[..]), ("b", &steps[..])]),
            panel("period", vec![("b", &steps[..])]),
        ])
        .unwrap();
        let b = swatches(&svg, "b");
        assert_eq!(b.len(), 2, "b is in both legends");
        assert_eq!(b[0].1, b[1].1, "b changed color between panels");
        assert_ne!(swatches(&svg, "a")[0].1, b[0].1);
        for (x, _) in &b {
            assert!(x.parse::<f64>().unwrap() >= 900.0, "legend at x = {x}");
        }
    }

    #[test]
    fn a_long_legend_stays_in_its_panel() {
        let steps = [(1.0, 1.0)];
        let names: Vec<String> = (0..40).map(|i| format!("config-{i}")).collect();
        let curves = names.iter().map(|n| (n.as_str(), &steps[..])).collect();
        let svg = profiles_svg(&[ProfilePanel {
            metric: "time",
            problems: 1,
            curves,
        }])
        .unwrap();
        let height: f64 = svg[svg.find("height=\"").unwrap() + 8..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let last_text_y = svg
            .match_indices("<text x=\"")
            .map(|(at, _)| {
                let t = &svg[at..];
                let y = &t[t.find(" y=\"").unwrap() + 4..];
                y[..y.find('"').unwrap()].parse::<f64>().unwrap()
            })
            .fold(0.0, f64::max);
        assert!(last_text_y < height, "{last_text_y} past {height}");
        assert!(
            svg.contains("... and "),
            "the entries past the room are counted"
        );
    }
}
