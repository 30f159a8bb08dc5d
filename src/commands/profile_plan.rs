//! `pipeplan profile-plan`: the profiling runs a CAPTURE / mCAP / CAPSlog user must measure.
//!
//! The output lists, per run, the parallelism and degree of its stages, the batch size and the
//! layer range of every stage. Measure each stage's peak memory and feed the runs back as
//! `extensions.memory_profile.runs` (same fields plus `peak`, see `docs/capture.md`).

use super::{write_or_print, Failure, Format};
use crate::cli::{MethodArg, ProfilePlanArgs};
use crate::table::Table;
use pipeplan_formulations::capture::profiling::{self, Method, ProfilingRun};
use pipeplan_formulations::Instance;
use serde::Serialize;

/// One run as a CSV row.
#[derive(Debug, Serialize)]
struct CsvRun {
    run: usize,
    parallelism: String,
    degree: u32,
    batch: f64,
    /// Stage ranges, `first-last` separated by spaces.
    stages: String,
}

/// The JSON document.
#[derive(Debug, Serialize)]
struct Doc<'a> {
    method: &'a str,
    instance: &'a str,
    layers: usize,
    runs: &'a [ProfilingRun],
}

fn ranges(r: &ProfilingRun) -> String {
    r.stages
        .iter()
        .map(|[a, b]| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `profile-plan`.
pub fn run(a: ProfilePlanArgs) -> Result<(), Failure> {
    let inst = super::read_instance(&a.instance)?;
    let batches = batches(&a, &inst)?;
    let (method, name) = match a.method {
        MethodArg::Mcap => (Method::Mcap, "mcap"),
        MethodArg::Capslog => (Method::Capslog, "capslog"),
        MethodArg::Capture => (Method::Capture, "capture"),
    };
    let runs = profiling::plan(
        method,
        inst.num_layers(),
        inst.cluster.gpus,
        inst.gpus_per_node(),
        batches,
    )
    .map_err(|e| e.in_file(&a.instance))?;
    write_or_print(None, &render(&a, name, &inst, &runs))
}

/// The two profiling batch sizes: `--profile-batches`, else a quarter and a half of the target
/// batch; a size that is not a whole number of samples is noted on standard error.
fn batches(a: &ProfilePlanArgs, inst: &Instance) -> Result<[f64; 2], Failure> {
    let batches = match &a.profile_batches {
        Some(v) => match v[..] {
            [x, y] if x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0 && x != y => {
                [x.min(y), x.max(y)]
            }
            _ => {
                return Err(Failure::input(format!(
                    "--profile-batches: need two distinct positive sizes LOW,HIGH, found {}",
                    v.iter().map(f64::to_string).collect::<Vec<_>>().join(",")
                )))
            }
        },
        None => {
            let batch = a.batch.unwrap_or(inst.micro_batch() as f64);
            if !(batch.is_finite() && batch > 0.0) {
                return Err(Failure::input(format!(
                    "--batch: must be positive, found {batch}"
                )));
            }
            profiling::default_batches(batch)
        }
    };
    let fractional: Vec<String> = batches
        .iter()
        .filter(|b| b.fract() != 0.0)
        .map(f64::to_string)
        .collect();
    if !fractional.is_empty() {
        let origin = if a.profile_batches.is_some() {
            String::new()
        } else {
            " (a quarter and a half of the target batch)".to_string()
        };
        eprintln!(
            "note: profiling batch size {} is not a whole number of samples{origin}, which no \
             run can use; give runnable sizes with --profile-batches LOW,HIGH (e.g. 1,2)",
            fractional.join(" and ")
        );
    }
    Ok(batches)
}

/// The runs as JSON, CSV or a table.
fn render(a: &ProfilePlanArgs, name: &str, inst: &Instance, runs: &[ProfilingRun]) -> String {
    match a.out.format() {
        Format::Json => crate::report::json(&Doc {
            method: name,
            instance: &inst.name,
            layers: inst.num_layers(),
            runs,
        }),
        Format::Csv => crate::report::csv(
            &runs
                .iter()
                .enumerate()
                .map(|(i, r)| CsvRun {
                    run: i,
                    parallelism: r.parallelism.to_string(),
                    degree: r.degree,
                    batch: r.batch,
                    stages: ranges(r),
                })
                .collect::<Vec<_>>(),
        ),
        Format::Table => {
            let mut t = Table::new(
                &["run", "parallelism", "degree", "batch", "stages (layers)"],
                &[0, 2, 3],
            );
            for (i, r) in runs.iter().enumerate() {
                t.row(vec![
                    i.to_string(),
                    r.parallelism.to_string(),
                    r.degree.to_string(),
                    format!("{}", r.batch),
                    ranges(r),
                ]);
            }
            format!(
                "{} profiling runs ({name}) for {}: {} layers, {} GPUs ({} per node)\n{}",
                runs.len(),
                inst.name,
                inst.num_layers(),
                inst.cluster.gpus,
                inst.gpus_per_node(),
                t.render()
            )
        }
    }
}
