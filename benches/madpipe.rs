//! MadPipe-DP + the T^ search of Algorithm 1 (`pipeplan_solvers::madpipe::dp::madpipe_dp`) with
//! the paper's grids (101 x 11 x 51 points, K = 10 rounds):
//!
//! - `madpipe-dp/resnet101-1000px-b8-8gpu-8gib P=8`: the performance target (docs/design.md), < 2 s on 2 cores
//!   (the paper reports up to 15 minutes for its first phase on large networks);
//! - `shipped-cnn/*`: every shipped CNN instance (ResNet-50/101, Inception-v3, DenseNet-121 at
//!   1000 px) at P = its GPU count.
//!
//! Before measuring, one run per shipped CNN instance prints its time, the DP's period
//! `max(T, T^)` (the paper's dashed line), `T`, `T^`, how many stages went to the special GPU,
//! and `balanced-time`'s max stage compute (no memory, no links) for scale.
//! Run with `cargo bench --bench madpipe`.
//!
//! Measured (criterion medians) on a 2-vCPU AMD EPYC VM shared with other builds (load ~2.5),
//! rustc 1.95, release: `madpipe-dp/resnet101 P=8` 58 ms; shipped-cnn: resnet50 4 GPUs 4.3 ms,
//! 8 GPUs 8.3 ms; resnet101 2 GPUs 1.4 ms, 8 GPUs 56 ms; inception-v3 4 GPUs 3.4 ms, 8 GPUs
//! 4.7 ms; densenet121 4 GPUs 57 ms, 8 GPUs 69 ms.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pipeplan_formulations::Instance;
use pipeplan_solvers::baselines::BalancedTime;
use pipeplan_solvers::madpipe::dp::{madpipe_dp, DpOptions};
use pipeplan_solvers::{Algorithm, Deadline, SolveOptions};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const TARGET: &str = "resnet101-1000px-b8-8gpu-8gib";

const CNNS: [&str; 8] = [
    "resnet50-1000px-b8-4gpu-8gib",
    "resnet50-1000px-b8-8gpu-16gib",
    "resnet101-1000px-b8-2gpu-16gib",
    "resnet101-1000px-b8-8gpu-8gib",
    "inception-v3-1000px-b8-4gpu-6gib",
    "inception-v3-1000px-b8-8gpu-3gib",
    "densenet121-1000px-b8-4gpu-8gib",
    "densenet121-1000px-b8-8gpu-4gib",
];

fn shipped(name: &str) -> Instance {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances")
        .join(format!("{name}.json"));
    Instance::from_path(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// One run per shipped CNN: what the DP finds, how long it takes, and balanced-time for scale.
fn report() {
    eprintln!(
        "{:<34} {:>2} {:>9} {:>10} {:>10} {:>10} {:>7} {:>8} {:>13}",
        "instance", "P", "time ms", "max(T,T^)", "T", "T^", "special", "states", "balanced-time"
    );
    for name in CNNS {
        let inst = shipped(name);
        let p = inst.cluster.gpus as usize;
        let start = Instant::now();
        let r = madpipe_dp(&inst, p, &DpOptions::default(), None, &Deadline::none())
            .expect("madpipe-dp solves");
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let bt = BalancedTime
            .solve(&inst, &SolveOptions::default())
            .expect("balanced-time solves")
            .claimed
            .objective
            .expect("balanced-time claims its objective")
            .value;
        let special = r.detail.iter().filter(|s| s.special).count();
        eprintln!(
            "{name:<34} {p:>2} {ms:>9.1} {:>10.1} {:>10.1} {:>10.1} {special:>7} {:>8} {bt:>13.1}",
            r.period, r.dp_period, r.t_hat, r.states
        );
    }
}

fn target(c: &mut Criterion) {
    report();
    let inst = shipped(TARGET);
    let opts = DpOptions::default();
    let mut g = c.benchmark_group("madpipe-dp");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::new(TARGET, "P=8"), |b| {
        b.iter(|| madpipe_dp(black_box(&inst), 8, &opts, None, &Deadline::none()).unwrap())
    });
    g.finish();
}

fn cnns(c: &mut Criterion) {
    let opts = DpOptions::default();
    let mut g = c.benchmark_group("shipped-cnn");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for name in CNNS {
        let inst = shipped(name);
        let p = inst.cluster.gpus as usize;
        g.bench_function(BenchmarkId::new(name, format!("P={p}")), |b| {
            b.iter(|| madpipe_dp(black_box(&inst), p, &opts, None, &Deadline::none()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, target, cnns);
criterion_main!(benches);
