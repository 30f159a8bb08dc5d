//! Charts drawn with plotters: a plan's schedule as a Gantt chart above its per-GPU memory bars,
//! a comparison's summary (evaluated throughput and peak memory, claimed beside evaluated), and
//! the evaluator against measured runs ([`parity`]).
//! SVG is plotters' own output; PNG rasterises that SVG with resvg. Used by the CLI (`plot`, `accuracy --plot`,
//! `compare --html`) and the Python package (a solution's chart in Jupyter).

use pipeplan_formulations::evaluate::breakdown::{memory_breakdown, MemoryBreakdown};
use pipeplan_formulations::timeline::{timeline, EventKind, Timeline, Track};
use pipeplan_formulations::{Evaluation, Instance, Plan};
use plotters::prelude::*;

pub mod parity;

pub use parity::parity_svg;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn color(kind: EventKind) -> RGBColor {
    match kind {
        EventKind::Forward => RGBColor(66, 133, 244),
        EventKind::Backward => RGBColor(52, 168, 83),
        EventKind::Recompute => RGBColor(251, 140, 0),
        EventKind::Swap => RGBColor(219, 68, 55),
        EventKind::SwapOut | EventKind::SwapIn => RGBColor(240, 120, 110),
        EventKind::GradSync => RGBColor(142, 36, 170),
        EventKind::SendForward => RGBColor(150, 150, 150),
        EventKind::SendBackward => RGBColor(90, 90, 90),
    }
}

/// The parts of a memory bar, bottom to top, with their colors.
const PARTS: [(&str, RGBColor); 7] = [
    ("weights", RGBColor(92, 107, 192)),
    ("gradients", RGBColor(121, 134, 203)),
    ("optimizer state", RGBColor(159, 168, 218)),
    ("activations x in flight", RGBColor(102, 187, 106)),
    ("buffers", RGBColor(255, 202, 40)),
    ("transient", RGBColor(255, 138, 101)),
    ("reserved", RGBColor(189, 189, 189)),
];

fn parts(b: &MemoryBreakdown) -> [f64; 7] {
    [
        b.weights,
        b.gradients,
        b.optimizer,
        b.activations,
        b.buffers,
        b.transient,
        b.reserved,
    ]
}

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

/// The tracks of a timeline, top to bottom: every GPU, then every link.
fn tracks(t: &Timeline) -> Vec<(String, Track)> {
    let mut out: Vec<(String, Track)> = t
        .memory
        .keys()
        .map(|&g| (format!("GPU {g}"), Track::Gpus(vec![g])))
        .collect();
    let links = t.links();
    out.extend(
        links
            .into_iter()
            .map(|(a, b)| (format!("link {a}-{b}"), Track::Link(a, b))),
    );
    let hosts = t.host_gpus();
    out.extend(
        hosts
            .into_iter()
            .map(|g| (format!("GPU {g} PCIe"), Track::Host(vec![g]))),
    );
    out
}

/// The chart of a plan the evaluator judged (`ev`): the simulator's timeline over `periods`
/// periods (or iterations) and the evaluator's memory breakdown, drawn by [`plan_svg`].
pub fn plan_chart(
    title: &str,
    inst: &Instance,
    plan: &Plan,
    ev: &Evaluation,
    claimed: Option<&[f64]>,
    periods: usize,
) -> Result<String, String> {
    let t = timeline(inst, plan, periods).map_err(|e| e.to_string())?;
    let memory = memory_breakdown(inst, plan, ev);
    plan_svg(title, &t, &memory, claimed, ev.memory_limit)
}

/// A plan's chart: the schedule (Gantt) above the memory bars of every GPU (evaluated parts,
/// claimed peak as a black tick, the GPU's memory as a red line). SVG text.
pub fn plan_svg(
    title: &str,
    t: &Timeline,
    memory: &[MemoryBreakdown],
    claimed: Option<&[f64]>,
    limit: f64,
) -> Result<String, String> {
    let rows = tracks(t);
    let height = 260 + 22 * rows.len() as u32 + 320;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
        let (top, bottom) = root.split_vertically(height - 360);
        gantt(&top, t, &rows)?;
        bars(&bottom, memory, claimed, limit)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn gantt<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    t: &Timeline,
    rows: &[(String, Track)],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let n = rows.len().max(1) as i32;
    let caption = match (t.period, t.steady_from) {
        (Some(p), Some(s)) => format!(
            "schedule ({}; period {:.3} ms, periodic from {:.3} ms)",
            t.schedule, p, s
        ),
        _ => format!("schedule ({}; one iteration, {:.3} ms)", t.schedule, t.end),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 14))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..t.end.max(1e-9), (0..n - 1).into_segmented())
        .map_err(err)?;
    let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    // Row r is drawn at segment n - 1 - r, so the first track is on top.
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("time (ms)")
        .y_labels(rows.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels
                .get((n - 1 - i) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    let row_of = |track: &Track, g: Option<u32>| -> Option<usize> {
        rows.iter().position(|(_, r)| match (r, track, g) {
            (Track::Gpus(v), Track::Gpus(_), Some(g)) => v[0] == g,
            (Track::Link(a, b), Track::Link(c, d), None) => a == c && b == d,
            (Track::Host(v), Track::Host(_), Some(g)) => v[0] == g,
            _ => false,
        })
    };
    let mut boxes = Vec::new();
    for e in &t.events {
        let targets: Vec<usize> = match &e.track {
            Track::Gpus(gs) => gs
                .iter()
                .filter_map(|&g| row_of(&e.track, Some(g)))
                .collect(),
            Track::Link(..) => row_of(&e.track, None).into_iter().collect(),
            Track::Host(gs) => gs
                .iter()
                .filter_map(|&g| row_of(&e.track, Some(g)))
                .collect(),
        };
        for r in targets {
            let seg = n - 1 - r as i32;
            boxes.push(Rectangle::new(
                [
                    (e.start, SegmentValue::Exact(seg)),
                    (e.end, SegmentValue::Exact(seg + 1)),
                ],
                color(e.kind).filled(),
            ));
        }
    }
    chart.draw_series(boxes).map_err(err)?;
    // Legend: one entry per kind present.
    let mut kinds: Vec<EventKind> = t.events.iter().map(|e| e.kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for k in kinds {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<i32>)>>())
            .map_err(err)?
            .label(k.name())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color(k).filled()));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    memory: &[MemoryBreakdown],
    claimed: Option<&[f64]>,
    limit: f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let top = memory
        .iter()
        .map(|b| b.total())
        .chain(claimed.into_iter().flatten().copied())
        .chain([limit])
        .fold(0.0, f64::max)
        * 1.1
        / GIB;
    let n = memory.len().max(1) as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "memory per GPU at its peak (evaluated parts; black tick: claimed; red: GPU memory)",
            ("sans-serif", 14),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(90)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top.max(1e-9))
        .map_err(err)?;
    let gpus: Vec<u32> = memory.iter().map(|b| b.gpu).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(gpus.len().min(64))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => gpus
                .get(*i as usize)
                .map(|g| format!("GPU {g}"))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc("GiB")
        .draw()
        .map_err(err)?;
    let x = |i: usize| SegmentValue::Exact(i as i32);
    for (p, (name, c)) in PARTS.iter().enumerate() {
        let rects: Vec<_> = memory
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let v = parts(b);
                let below: f64 = v[..p].iter().sum();
                Rectangle::new(
                    [(x(i), below / GIB), (x(i + 1), (below + v[p]) / GIB)],
                    c.filled(),
                )
            })
            .collect();
        let c = *c;
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    if let Some(cl) = claimed {
        let ticks: Vec<_> = memory
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                cl.get(b.gpu as usize).map(|&v| {
                    PathElement::new(
                        vec![(x(i), v / GIB), (x(i + 1), v / GIB)],
                        BLACK.stroke_width(3),
                    )
                })
            })
            .collect();
        chart.draw_series(ticks).map_err(err)?;
    }
    // White gaps between neighbouring bars.
    let gaps: Vec<_> = (1..memory.len())
        .map(|i| PathElement::new(vec![(x(i), 0.0), (x(i), top)], WHITE.stroke_width(6)))
        .collect();
    chart.draw_series(gaps).map_err(err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x(0), limit / GIB), (x(memory.len()), limit / GIB)],
            RED.stroke_width(2),
        )))
        .map_err(err)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

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
