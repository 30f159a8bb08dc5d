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
pub use plan::{plan_chart, plan_svg};
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
