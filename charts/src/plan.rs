//! A plan's chart: the simulator's timeline as a Gantt chart above each GPU's memory, in the
//! evaluator's parts.

use crate::{err, side_legend, tick, with_legend, GIB};
use pipeplan_formulations::evaluate::breakdown::{memory_breakdown, MemoryBreakdown};
use pipeplan_formulations::timeline::{timeline, EventKind, Timeline, Track};
use pipeplan_formulations::{Evaluation, InputError, Instance, Plan};
use plotters::prelude::*;

fn color(kind: EventKind) -> RGBColor {
    match kind {
        EventKind::Forward => RGBColor(66, 133, 244),
        EventKind::Backward => RGBColor(52, 168, 83),
        EventKind::Recompute => RGBColor(251, 140, 0),
        EventKind::Swap => RGBColor(219, 68, 55),
        EventKind::SwapOut => RGBColor(240, 120, 110),
        EventKind::SwapIn => RGBColor(0, 151, 167),
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

/// The chart of a plan the evaluator judged (`ev`), titled `NAME on INSTANCE (N GPUs)` after
/// what made the plan (an algorithm, a file) and the GPUs it uses: the simulator's
/// timeline over `periods` periods (or iterations) and the evaluator's memory breakdown, drawn
/// by [`plan_svg`].
pub fn plan_chart(
    name: &str,
    inst: &Instance,
    plan: &Plan,
    ev: &Evaluation,
    claimed: Option<&[f64]>,
    periods: usize,
) -> Result<String, PlanChartError> {
    let t = timeline(inst, plan, periods).map_err(PlanChartError::Input)?;
    let memory = memory_breakdown(inst, plan, ev);
    plan_svg(
        &format!("{name} on {} ({} GPUs)", inst.name, ev.gpus_used),
        &t,
        &memory,
        claimed,
        ev.memory_limit,
    )
    .map_err(PlanChartError::Draw)
}

/// Why [`plan_chart`] drew nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanChartError {
    /// The plan has no timeline to draw (one too large to unroll), naming the field.
    Input(InputError),
    /// The drawing failed.
    Draw(String),
}

impl std::fmt::Display for PlanChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanChartError::Input(e) => e.fmt(f),
            PlanChartError::Draw(e) => f.write_str(e),
        }
    }
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
        let root = SVGBackend::with_string(&mut svg, (1100 + crate::LEGEND_WIDTH, height))
            .into_drawing_area();
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
    let (area, legend) = with_legend(area);
    let caption = match (t.period, t.steady_from) {
        (Some(p), Some(s)) => format!(
            "schedule ({}; period {:.3} ms, periodic from {:.3} ms)",
            t.schedule, p, s
        ),
        _ => format!("schedule ({}; one iteration, {:.3} ms)", t.schedule, t.end),
    };
    let mut chart = ChartBuilder::on(&area)
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
        .x_label_formatter(&|v| tick(*v))
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
    let entries: Vec<(&str, RGBColor)> = kinds.iter().map(|&k| (k.name(), color(k))).collect();
    side_legend(&legend, &entries)
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
    let (area, legend) = with_legend(area);
    let mut chart = ChartBuilder::on(&area)
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
        .y_label_formatter(&|v| tick(*v))
        .max_light_lines(1)
        .draw()
        .map_err(err)?;
    let x = |i: usize| SegmentValue::Exact(i as i32);
    for (p, (_, c)) in PARTS.iter().enumerate() {
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
        chart.draw_series(rects).map_err(err)?;
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
    side_legend(&legend, &PARTS)
}
