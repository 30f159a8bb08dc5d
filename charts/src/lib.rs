//! Charts drawn with plotters: a plan's schedule as a Gantt chart above its per-GPU memory bars
//! ([`plan_svg`]), a comparison's summary (evaluated throughput and peak memory, claimed beside
//! evaluated; [`summary_svg`]), a sweep's performance profiles ([`profiles_svg`]), and the
//! evaluator against measured runs ([`parity`]). SVG is plotters' own output; [`png`] rasterises
//! that SVG with resvg. Used by the CLI (`plot`, `accuracy --plot`, `compare --html`, `sweep
//! report`) and the Python package (a solution's chart and the accuracy chart in Jupyter).
use plotters::prelude::*;

pub mod parity;
mod plan;
mod profiles;
mod summary;

pub use parity::parity_svg;
pub use plan::{plan_chart, plan_svg, PlanChartError};
pub use profiles::{profiles_svg, ProfilePanel};
pub use summary::{summary_svg, SummaryBar};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The chart's series legend at `at`, on a translucent white box: every chart draws it alike.
fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// Width in pixels of the legend column beside a chart whose data fill the plot ([`side_legend`]).
const LEGEND_WIDTH: u32 = 170;

/// Pixels from the top of a chart's area to the top of its plot, below a one-line caption: where
/// its legend column starts.
const LEGEND_TOP: i32 = 30;

/// Splits `area` into the chart's part and a legend column of [`LEGEND_WIDTH`] on its right.
fn with_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> (
    DrawingArea<DB, plotters::coord::Shift>,
    DrawingArea<DB, plotters::coord::Shift>,
) {
    let width = area.dim_in_pixel().0;
    area.split_horizontally(width.saturating_sub(LEGEND_WIDTH))
}

/// A legend in its own column (from [`with_legend`]), for charts whose data fill the plot, where
/// a legend inside would hide some: per entry a square of its color and its label, from
/// [`LEGEND_TOP`] pixels down (level with the plot's top). Entries that would not fit the
/// column at 18 px each are set closer, down to 11 px in a smaller font; past that, the last line
/// counts the rest.
fn side_legend<DB: DrawingBackend>(
    column: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(&str, RGBColor)],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let top = LEGEND_TOP;
    let room = column.dim_in_pixel().1 as i32 - top - 8;
    let n = entries.len().max(1) as i32;
    let pitch = (room / n).clamp(11, 18);
    let rows = (room / pitch).max(1) as usize;
    let shown = if entries.len() > rows {
        rows - 1
    } else {
        entries.len()
    };
    let font = TextStyle::from(("sans-serif", (pitch - 2).min(12)).into_font()).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ),
    );
    let y = |i: usize| top + pitch / 2 + pitch * i as i32;
    let half = (pitch / 2 - 2).min(5);
    for (i, (label, color)) in entries[..shown].iter().enumerate() {
        column
            .draw(&Rectangle::new(
                [(4, y(i) - half), (16, y(i) + half)],
                color.filled(),
            ))
            .map_err(err)?;
        column
            .draw(&Text::new(label.to_string(), (22, y(i)), font.clone()))
            .map_err(err)?;
    }
    if shown < entries.len() {
        let more = format!("... and {} more", entries.len() - shown);
        column
            .draw(&Text::new(more, (22, y(shown)), font))
            .map_err(err)?;
    }
    Ok(())
}

/// An axis label: the value with at most three significant digits and no trailing zeros (`10`,
/// `0.1`, `2.5`, `1200`).
fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing the chart failed: {e}")
}

/// Rasterises SVG text to PNG (text drawn with the system's fonts).
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut opt = resvg::usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // plotters names the generic family; map it to a font the machine has.
    let family = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
        .into_iter()
        .find(|f| {
            db.faces()
                .any(|face| face.families.iter().any(|(n, _)| n == f))
        })
        .map(str::to_string)
        .or_else(|| {
            db.faces()
                .next()
                .and_then(|f| f.families.first().map(|(n, _)| n.clone()))
        });
    if let Some(f) = family {
        db.set_sans_serif_family(f.clone());
        opt.font_family = f;
    }
    let tree = resvg::usvg::Tree::from_str(svg, &opt).map_err(err)?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "drawing the chart failed: empty image".to_string())?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn ticks_read_as_round_values() {
        let t: Vec<String> = [
            10.0,
            0.1,
            1.0,
            2.5,
            60.0,
            0.05,
            0.30000000000000004,
            1234.6,
            0.0,
        ]
        .map(tick)
        .into();
        assert_eq!(
            t,
            ["10", "0.1", "1", "2.5", "60", "0.05", "0.3", "1235", "0"]
        );
    }
}
