//! `pipeplan max-batch`: the largest batch size whose plan fits, per algorithm
//! (definition and search: `pipeplan_solvers::max_batch`, `docs/dawnpiper.md`).

use super::{write_or_print, Failure, Format};
use crate::cli::OutputArgs;
use crate::report;
use crate::table::Table;
use clap::{Args, ValueEnum};
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, Family, SolveOptions};
use pipeplan_solvers::max_batch::{max_batch, MaxBatch, MaxBatchOptions};
use pipeplan_solvers::registry;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Duration;

/// Memory optimization (swap/recompute) of the DawnPiper algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MemOptArg {
    /// With swap and recompute.
    On,
    /// Without.
    Off,
    /// One row each.
    Both,
}

/// Options of `max-batch`.
#[derive(Debug, Args)]
pub struct MaxBatchArgs {
    /// Instance file.
    pub instance: PathBuf,
    /// Algorithms (repeat or comma-separate; default: all that support the instance).
    #[arg(long = "algo", value_delimiter = ',')]
    pub algos: Vec<String>,
    /// Memory optimization of the DawnPiper algorithms (other algorithms have none).
    #[arg(long, value_enum, default_value = "both")]
    pub memopt: MemOptArg,
    /// Time limit of every solve, seconds.
    #[arg(long, default_value_t = 2.0)]
    pub time_limit: f64,
    /// Largest micro-batch size probed.
    #[arg(long, default_value_t = 1024)]
    pub max_micro_batch: u32,
    /// Pipeline stages (default: each algorithm's own).
    #[arg(long)]
    pub stages: Option<usize>,
    /// Output format.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Runs `max-batch`.
pub fn run(a: MaxBatchArgs) -> Result<(), Failure> {
    let inst = super::read_instance(&a.instance)?;
    if !(a.time_limit.is_finite() && a.time_limit > 0.0) {
        return Err(Failure::input(format!(
            "--time-limit: {} is not a positive number of seconds",
            a.time_limit
        )));
    }
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
    // (algorithm index, memopt setting) pairs, in registry order.
    let mut jobs: Vec<(usize, Option<&str>)> = Vec::new();
    for (i, x) in algos.iter().enumerate() {
        if x.family() == Family::Dawnpiper {
            match a.memopt {
                MemOptArg::On => jobs.push((i, Some("on"))),
                MemOptArg::Off => jobs.push((i, Some("off"))),
                MemOptArg::Both => {
                    jobs.push((i, Some("on")));
                    jobs.push((i, Some("off")));
                }
            }
        } else {
            jobs.push((i, None));
        }
    }
    let rows: Vec<MaxBatch> = jobs
        .par_iter()
        .map(|&(i, memopt)| {
            let mut solve = SolveOptions {
                time_limit: Some(Duration::from_secs_f64(a.time_limit)),
                stages: a.stages,
                ..SolveOptions::default()
            };
            if let Some(v) = memopt {
                solve.params.insert("memopt".into(), v.into());
            }
            let opts = MaxBatchOptions {
                solve,
                max_micro_batch: a.max_micro_batch,
            };
            max_batch(algos[i].as_ref(), &inst, &opts)
        })
        .collect();
    let text = match a.out.format() {
        Format::Json => report::json(&rows),
        Format::Csv => report::csv(&rows),
        Format::Table => table(&inst, &rows),
    };
    write_or_print(None, &text)
}

fn table(inst: &Instance, rows: &[MaxBatch]) -> String {
    let mut t = Table::new(
        &[
            "algorithm",
            "memopt",
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
            r.memopt.clone().unwrap_or_else(|| "-".into()),
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
