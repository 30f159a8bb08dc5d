//! `pipeplan plot`: a plan's schedule and memory as a chart (SVG or PNG).

use super::{Failure, Judged};
use crate::cli::{ImageFormat, PlotArgs};
use pipeplan_charts as charts;
use std::path::Path;

/// Runs `plot`.
pub fn run(a: PlotArgs) -> Result<(), Failure> {
    let j = Judged::read(&a.plan, &a.instance, &a.from, &a.calibration)?;
    let (inst, plan, ev) = (&j.inst, &j.plan, &j.ev);
    // Titled after a solution's algorithm, else after the file.
    let name = j.algorithm.clone().unwrap_or_else(|| {
        a.plan
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("plan")
            .to_string()
    });
    let svg = charts::plan_chart(&name, inst, plan, ev, j.claimed_peaks.as_deref(), a.periods)
        .map_err(|e| match e {
            charts::PlanChartError::Input(e) => Failure::from(j.blame(e)),
            charts::PlanChartError::Draw(e) => Failure::input(e),
        })?;
    write_image(&a.output, a.format, &svg)
}

/// Writes chart `svg` to `path` as `format` (default: from the extension, PNG for `.png`, else
/// SVG), and says so on standard error.
pub fn write_image(path: &Path, format: Option<ImageFormat>, svg: &str) -> Result<(), Failure> {
    let format = format.unwrap_or_else(|| match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("png") => ImageFormat::Png,
        _ => ImageFormat::Svg,
    });
    let bytes = match format {
        ImageFormat::Svg => svg.as_bytes().to_vec(),
        ImageFormat::Png => charts::png(svg).map_err(Failure::input)?,
    };
    std::fs::write(path, bytes)
        .map_err(|e| Failure::input(format!("{}: cannot write: {e}", path.display())))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
