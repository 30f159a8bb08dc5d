//! `pipeplan max-batch`: the largest batch size whose plan fits, per algorithm
//! (definition and search: `pipeplan_solvers::max_batch`, `docs/dawnpiper.md`).

use super::{write_or_print, Failure, Format};
use crate::cli::MaxBatchArgs;
use crate::report;
use crate::table::Table;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveOptions};
use pipeplan_solvers::max_batch::{max_batch, MaxBatch, MaxBatchOptions};
use pipeplan_solvers::registry;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// Runs `max-batch`.
pub fn run(a: MaxBatchArgs) -> Result<(), Failure> {
    let inst = super::read_calibrated(&a.instance, &a.calibration)?;
    if a.max_micro_batch == 0 {
        return Err(Failure::input("--max-micro-batch: must be at least 1"));
    }
    let algos: Vec<Box<dyn Algorithm>> = if a.algos.is_empty() {
        registry::all()
            .into_iter()
            .filter(|x| x.supports(&inst).is_ok())
            .collect()
    } else {
        a.algos
            .iter()
            .map(|n| {
                registry::by_name(n.trim()).ok_or_else(|| {
                    Failure::input(format!(
                        "--algo: unknown algorithm {n:?}; known: {}",
                        registry::names().join(", ")
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    // (algorithm index, settings) pairs, in registry order.
    let mut jobs: Vec<(usize, BTreeMap<String, String>)> = Vec::new();
    for (i, x) in algos.iter().enumerate() {
        let params = x.params();
        let takes = |key: &str| params.iter().any(|p| p.name == key);
        let base: BTreeMap<String, String> =
            a.set.iter().filter(|(k, _)| takes(k)).cloned().collect();
        let varied: Vec<(String, Vec<String>)> = if a.vary.is_empty() {
            params
                .iter()
                .filter(|p| !p.variants.is_empty())
                .map(|p| {
                    (
                        p.name.to_string(),
                        p.variants.iter().map(|v| v.to_string()).collect(),
                    )
                })
                .collect()
        } else {
            a.vary
                .iter()
                .filter(|(k, _)| takes(k))
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.split(',').map(|x| x.trim().to_string()).collect(),
                    )
                })
                .collect()
        };
        let mut combos = vec![base];
        for (key, values) in &varied {
            let mut next = Vec::new();
            for c in &combos {
                for v in values {
                    let mut c = c.clone();
                    c.insert(key.clone(), v.clone());
                    next.push(c);
                }
            }
            combos = next;
        }
        jobs.extend(combos.into_iter().map(|c| (i, c)));
    }
    let progress = crate::progress::Progress::new(
        jobs.len(),
        "max-batch",
        a.out.format() == super::Format::Table,
    );
    let rows: Vec<MaxBatch> = jobs
        .par_iter()
        .map(|(i, settings)| {
            let _tick = Tick(&progress);
            let solve = SolveOptions {
                time_limit: a.time_limit.0,
                seed: a.seed,
                stages: a.stages,
                params: settings.clone(),
            };
            let opts = MaxBatchOptions {
                solve,
                max_micro_batch: a.max_micro_batch,
            };
            max_batch(algos[*i].as_ref(), &inst, &opts)
        })
        .collect();
    let text = match a.out.format() {
        Format::Json => report::json(&rows),
        Format::Csv => report::csv(&rows.iter().map(CsvRow::of).collect::<Vec<_>>()),
        Format::Table => table(&inst, &rows),
    };
    write_or_print(None, &text)
}

fn table(inst: &Instance, rows: &[MaxBatch]) -> String {
    let mut t = Table::new(
        &[
            "algorithm",
            "settings",
            "micro-batch",
            "m",
            "batch",
            "throughput (samples/s)",
            "solves",
            "note",
        ],
        &[2, 3, 4, 5, 6],
    );
    for r in rows {
        let note = if let Some(why) = &r.reason {
            why.clone()
        } else if r.capped {
            "the cap fits (--max-micro-batch)".into()
        } else {
            String::new()
        };
        t.row(vec![
            r.algorithm.clone(),
            settings_cell(&r.settings),
            r.micro_batch.map_or("-".into(), |b| b.to_string()),
            r.micro_batches.to_string(),
            r.batch.map_or("-".into(), |b| b.to_string()),
            r.throughput.map_or("-".into(), |x| format!("{x:.2}")),
            r.solves.to_string(),
            note,
        ]);
    }
    format!(
        "{}: largest batch = micro-batch x m whose plan the evaluator says fits (profiled at \
         micro-batch {}; times and activations scale linearly)\n{}",
        inst.name,
        inst.model.batch,
        t.render()
    )
}

/// `k=v k=v`, or `-`.
fn settings_cell(s: &BTreeMap<String, String>) -> String {
    if s.is_empty() {
        return "-".into();
    }
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A row of the CSV output: the settings in one column (CSV has a fixed header).
#[derive(Serialize)]
struct CsvRow<'a> {
    algorithm: &'a str,
    settings: String,
    micro_batch: Option<u32>,
    micro_batches: u32,
    batch: Option<u64>,
    throughput: Option<f64>,
    capped: bool,
    monotone_checked: bool,
    solves: u32,
    reason: Option<&'a str>,
}

impl CsvRow<'_> {
    fn of(r: &MaxBatch) -> CsvRow<'_> {
        CsvRow {
            algorithm: &r.algorithm,
            settings: settings_cell(&r.settings),
            micro_batch: r.micro_batch,
            micro_batches: r.micro_batches,
            batch: r.batch,
            throughput: r.throughput,
            capped: r.capped,
            monotone_checked: r.monotone_checked,
            solves: r.solves,
            reason: r.reason.as_deref(),
        }
    }
}

/// Ticks the bar when a search is done.
struct Tick<'a>(&'a crate::progress::Progress);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.tick();
    }
}
