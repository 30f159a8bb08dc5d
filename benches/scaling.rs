//! Scaling: every algorithm of the registry, run through the harness as `pipeplan solve` runs it
//! (settings checked, support checked, time limit, evaluation), on two ladders of generated
//! instances (`pipeplan_bench::scaling`, `docs/limits.md`):
//!
//! - layers: GPT-3 6.7B's block repeated to 34, 128, 512 and 1,250 layers, on 32 GPUs;
//! - GPUs: Llama 3 405B (128 layers) on 8, 64, 512 and 4,096 GPUs.
//!
//! Each case is first run once. A case that takes a second or more, or stops at its time limit,
//! keeps that single run's time (marked `once`); a faster one is sampled by criterion (10
//! samples, short warm-up and measurement) and reports the median of those samples. At the end
//! the bench prints, per ladder, a Markdown table of every cell and the growth exponent (the
//! least-squares slope of log time against log size over the rungs with a plan found before the
//! time limit), and the message of every cell without a plan (BENCHMARKS.md, "Scaling").
//!
//! Run with `cargo bench --bench scaling` (13.5 minutes on 2 shared cores);
//! `cargo bench --bench scaling -- madpipe` runs only the ids containing `madpipe`.
//! `PIPEPLAN_SCALING_TIME_LIMIT` (as `--time-limit`: `20`, `500ms`, `none`) replaces the time
//! limit of `pipeplan solve` (60 s).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pipeplan_bench::scaling::{gpu_ladder, layer_ladder, markdown, Cell, Rung};
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::parse_time_limit;
use pipeplan_solvers::harness::run;
use pipeplan_solvers::{registry, Algorithm, SolveError, SolveOptions, Stop};
use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Criterion samples per sampled case.
const SAMPLES: usize = 10;
/// A case whose single run takes this long is not sampled.
const ONCE: Duration = Duration::from_secs(1);

/// The solve options of every case: `pipeplan solve`'s, with the time limit of
/// `PIPEPLAN_SCALING_TIME_LIMIT` when it is set.
fn options() -> SolveOptions {
    let mut opts = SolveOptions::default();
    if let Ok(text) = std::env::var("PIPEPLAN_SCALING_TIME_LIMIT") {
        opts.time_limit =
            parse_time_limit(&text).unwrap_or_else(|e| panic!("PIPEPLAN_SCALING_TIME_LIMIT: {e}"));
    }
    opts
}

/// The positional argument of `cargo bench --bench scaling -- FILTER`, if any.
fn filter() -> Option<String> {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-') && a != "--bench")
}

/// What stopped a solution early, as `pipeplan solve` prints it.
fn stop_text(stop: Option<Stop>) -> Option<String> {
    stop.map(|s| s.to_string())
}

/// One case: a single timed run, then criterion's samples when that run was quick.
fn case(
    c: &mut Criterion,
    group: &str,
    algo: &dyn Algorithm,
    rung: &str,
    inst: &Instance,
    opts: &SolveOptions,
) -> Cell {
    let start = Instant::now();
    let first = run(algo, inst, opts);
    let took = start.elapsed();
    let sol = match first {
        Err(SolveError::Unsupported(u)) => return Cell::Unsupported { reason: u.0 },
        Err(e) => {
            return Cell::Failed {
                seconds: took.as_secs_f64(),
                time_limit: matches!(e, SolveError::TimeLimit(_)),
                error: e.to_string(),
            }
        }
        Ok(sol) => sol,
    };
    let stop = stop_text(sol.stats.stop);
    if took >= ONCE || sol.stats.stop == Some(Stop::TimeLimit) {
        eprintln!("{group}/{}/{rung}: one run, {took:.3?}", algo.name());
        return Cell::Solved {
            seconds: took.as_secs_f64(),
            once: true,
            stop,
        };
    }
    // (iterations, elapsed) of every call criterion makes; its last SAMPLES calls are the samples.
    let calls = RefCell::new(Vec::new());
    let mut g = c.benchmark_group(group);
    g.sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    g.bench_function(BenchmarkId::new(algo.name(), rung), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(run(algo, black_box(inst), opts).expect("solved once already"));
            }
            let d = start.elapsed();
            calls.borrow_mut().push((iters, d));
            d
        })
    });
    g.finish();
    let calls = calls.into_inner();
    let mut per: Vec<f64> = calls[calls.len().saturating_sub(SAMPLES)..]
        .iter()
        .map(|&(n, d)| d.as_secs_f64() / n as f64)
        .collect();
    per.sort_by(f64::total_cmp);
    let seconds = match per.len() {
        0 => took.as_secs_f64(),
        n if n % 2 == 1 => per[n / 2],
        n => (per[n / 2 - 1] + per[n / 2]) / 2.0,
    };
    Cell::Solved {
        seconds,
        once: false,
        stop,
    }
}

/// Every algorithm on every rung of `ladder`; prints the instances' commands, then the table.
fn ladder(c: &mut Criterion, name: &str, ladder: Vec<Rung>) {
    let opts = options();
    let filter = filter();
    let mut instances = Vec::new();
    eprintln!("== {name}: instances");
    for rung in &ladder {
        let inst = rung.instance().unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "{}: {} layers, {} GPUs: {}",
            inst.name,
            inst.num_layers(),
            inst.cluster.gpus,
            rung.command(&inst)
        );
        instances.push(inst);
    }
    let axis = ladder[0].axis;
    let sizes: Vec<usize> = ladder
        .iter()
        .zip(&instances)
        .map(|(r, i)| r.size(i))
        .collect();
    let mut rows = Vec::new();
    for algo in registry::all() {
        let mut cells = Vec::new();
        for (size, inst) in sizes.iter().zip(&instances) {
            let rung = format!("{}={size}", axis.symbol());
            let id = format!("{name}/{}/{rung}", algo.name());
            if filter.as_deref().is_some_and(|f| !id.contains(f)) {
                cells.push(None);
                continue;
            }
            cells.push(Some(case(c, name, algo.as_ref(), &rung, inst, &opts)));
        }
        if cells.iter().any(Option::is_some) {
            rows.push((algo.name().to_string(), cells));
        }
    }
    let limit = match opts.time_limit {
        Some(t) => format!("{} s", t.as_secs_f64()),
        None => "none".into(),
    };
    eprintln!(
        "\n== {name} (time limit {limit})\n\n{}",
        markdown(axis, &sizes, &rows)
    );
}

fn layers(c: &mut Criterion) {
    ladder(c, "scaling-layers", layer_ladder());
}

fn gpus(c: &mut Criterion) {
    ladder(c, "scaling-gpus", gpu_ladder());
}

criterion_group!(benches, layers, gpus);
criterion_main!(benches);
