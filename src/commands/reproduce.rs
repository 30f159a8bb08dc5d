//! `pipeplan reproduce madpipe-fig7`: the experiment grid of the MadPipe paper (§5, Fig. 7),
//! re-run on pipeplan's analytic instances and judged by the neutral evaluator.
//!
//! For every network, GPU count P, memory M and bandwidth beta, `pipedream` and `madpipe` solve
//! the same generated instance; the figure of merit is the ratio of the two **evaluated** periods
//! (the valid schedules', the paper's solid lines). Per network and memory, the table shows the
//! geometric mean of the ratios over P and beta, as the paper's Fig. 7 does. A configuration where
//! one planner finds no plan that fits is counted, not averaged.

use super::{write_or_print, Failure, Format};
use crate::cli::ReproduceArgs;
use crate::report;
use crate::table::Table;
use pipeplan_formulations::generate::{generate, GenerateOptions};
use pipeplan_formulations::instance::Cluster;
use pipeplan_solvers::algorithm::{Algorithm, SolveOptions};
use pipeplan_solvers::{harness, registry};
use rayon::prelude::*;
use serde::Serialize;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// One configuration of the grid.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Network.
    pub model: String,
    /// GPUs.
    pub gpus: u32,
    /// Memory per GPU (GiB).
    pub memory_gib: f64,
    /// Link bandwidth (GB/s).
    pub bandwidth_gbs: f64,
    /// Evaluated period of the baseline's plan (ms), when it produced one that fits.
    pub baseline_period_ms: Option<f64>,
    /// Evaluated period of the reference planner's plan (ms), when it produced one that fits.
    pub reference_period_ms: Option<f64>,
    /// Baseline period / reference period, when both exist.
    pub ratio: Option<f64>,
    /// Why a planner has no period.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn period(
    algo: &dyn Algorithm,
    inst: &pipeplan_formulations::Instance,
    opts: &SolveOptions,
) -> Result<f64, String> {
    let sol = harness::run(algo, inst, opts).map_err(|e| e.to_string())?;
    let ev = sol.evaluated.expect("the harness evaluates");
    if !ev.fits {
        return Err(format!("plan does not fit: {}", ev.notes.join("; ")));
    }
    ev.period_ms
        .ok_or_else(|| "not an asynchronous plan".to_string())
}

/// `pipeplan reproduce madpipe-fig7`.
pub fn madpipe_fig7(a: ReproduceArgs) -> Result<(), Failure> {
    let find = |name: &str| {
        registry::by_name(name).ok_or_else(|| {
            Failure::input(format!(
                "algorithm {name:?} is not available; known: {}",
                registry::names().join(", ")
            ))
        })
    };
    let baseline = find(&a.baseline)?;
    let reference = find(&a.reference)?;
    let opts = SolveOptions {
        time_limit: a.time_limit.0,
        ..SolveOptions::default()
    };
    let calibration = a.calibration.read()?;
    let mut grid = Vec::new();
    for model in &a.models {
        for &p in &a.gpus {
            for &m in &a.memory_gib {
                for &b in &a.bandwidth_gbs {
                    grid.push((model.clone(), p, m, b));
                }
            }
        }
    }
    let progress =
        crate::progress::Progress::new(grid.len(), "madpipe-fig7", !a.out.json && !a.out.csv);
    let points: Vec<Point> = grid
        .par_iter()
        .map(|(model, p, m, b)| -> Result<Point, Failure> {
            let _tick = Tick(&progress);
            let cluster = Cluster::single_node(*p, m * GIB, b * 1e9);
            let mut inst = generate(&GenerateOptions::new(model, cluster))?;
            if let Some(c) = &calibration {
                inst = c.apply(&inst);
            }
            let mut notes = Vec::new();
            let mut get = |algo: &dyn Algorithm| match period(algo, &inst, &opts) {
                Ok(t) => Some(t),
                Err(e) => {
                    notes.push(format!("{}: {e}", algo.name()));
                    None
                }
            };
            let bp = get(baseline.as_ref());
            let rp = get(reference.as_ref());
            Ok(Point {
                model: model.clone(),
                gpus: *p,
                memory_gib: *m,
                bandwidth_gbs: *b,
                baseline_period_ms: bp,
                reference_period_ms: rp,
                ratio: bp.zip(rp).map(|(x, y)| x / y),
                notes,
            })
        })
        .collect::<Result<_, _>>()?;
    let text = match a.out.format() {
        Format::Json => report::json(&points),
        Format::Csv => report::csv(
            &points
                .iter()
                .map(|p| {
                    (
                        &p.model,
                        p.gpus,
                        p.memory_gib,
                        p.bandwidth_gbs,
                        p.baseline_period_ms,
                        p.reference_period_ms,
                        p.ratio,
                    )
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => summary(&a, &points),
    };
    write_or_print(None, &text)
}

/// Geometric means per memory size (rows) and network (columns).
fn summary(a: &ReproduceArgs, points: &[Point]) -> String {
    let mut header = vec!["memory (GiB)".to_string()];
    header.extend(a.models.iter().cloned());
    let cols: Vec<&str> = header.iter().map(String::as_str).collect();
    let right: Vec<usize> = (0..cols.len()).collect();
    let mut t = Table::new(&cols, &right);
    for &m in &a.memory_gib {
        let mut row = vec![format!("{m}")];
        for model in &a.models {
            let here: Vec<&Point> = points
                .iter()
                .filter(|p| &p.model == model && p.memory_gib == m)
                .collect();
            let ratios: Vec<f64> = here.iter().filter_map(|p| p.ratio).collect();
            let only_ref = here
                .iter()
                .filter(|p| p.reference_period_ms.is_some() && p.baseline_period_ms.is_none())
                .count();
            let cell = if ratios.is_empty() {
                "-".to_string()
            } else {
                let g = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
                format!("{g:.3}")
            };
            row.push(format!(
                "{cell} ({}/{}{})",
                ratios.len(),
                here.len(),
                if only_ref > 0 {
                    format!(", {only_ref} ref-only")
                } else {
                    String::new()
                }
            ));
        }
        t.row(row);
    }
    format!(
        "Geometric mean over P in {:?} and beta in {:?} GB/s of period({}) / period({}), both \
         evaluated by pipeplan's evaluator.\n(n/N: configurations where both planners found a \
         plan that fits, of all; ref-only: configurations where only {} found one.)\n\n{}",
        a.gpus,
        a.bandwidth_gbs,
        a.baseline,
        a.reference,
        a.reference,
        t.render()
    )
}

/// Ticks the bar when a grid point is done, whichever way it ends.
struct Tick<'a>(&'a crate::progress::Progress);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.tick();
    }
}
