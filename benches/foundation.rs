//! Foundation benchmarks: the neutral evaluator on a plan, and the `balanced-time` solve (exact
//! min-max DP, O(P L^2) stage-cost evaluations), on
//!
//! - the longest chain available: PipeDream's `nasnetalarge/graph.txt` imported from the peers
//!   folder (`../shared/peers/pipedream`, or `$PIPEPLAN_PEERS/pipedream`) on 8 GPUs; without the
//!   peers folder a notice is printed and a synthetic chain of 1250 layers stands in
//!   (benchmark id `synthetic-1250`);
//! - a shipped instance, `instances/gpt3-2.6b-s2048-b1-8gpu-40gib.json` (34 layers, 8 GPUs, 1f1b);
//! - a scaling series of synthetic chains (250, 500, 1000 layers, 8 GPUs).
//!
//! The evaluated plan is `balanced-time`'s. Figures and the machine they ran on: BENCHMARKS.md.
//! Run with `cargo bench --bench foundation`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::import::{import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{
    Bandwidth, Cluster, Instance, Layer, Model, Training, FORMAT,
};
use pipeplan_formulations::{peers, Plan};
use pipeplan_solvers::baselines::BalancedTime;
use pipeplan_solvers::{Algorithm, SolveOptions};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// 8 GPUs in two nodes of 4, 16 GiB each, NVLink-class inside a node, 100 Gb/s between nodes.
fn cluster() -> Cluster {
    Cluster {
        gpus: 8,
        gpus_per_node: Some(4),
        gpu: None,
        memory: 16.0 * 1024f64.powi(3),
        bandwidth: Bandwidth {
            intra_node: 100e9,
            inter_node: Some(12.5e9),
        },
        pcie: None,
    }
}

/// A deterministic synthetic chain of `n` layers with irregular times and sizes (a 64-bit LCG),
/// the shape of a CNN profile: 0.05-2 ms forward, backward 2x, 0-4 MB weights, 0.1-8 MB outputs.
fn synthetic(n: usize) -> Instance {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ n as u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let layers = (0..n)
        .map(|i| {
            let f = 0.05 + 1.95 * next();
            Layer {
                name: format!("l{i}"),
                kind: None,
                forward: f,
                backward: 2.0 * f,
                weights: 4e6 * next(),
                output: 1e5 + 7.9e6 * next(),
                saved: None,
                cut: None,
                tensor_parallel: Vec::new(),
            }
        })
        .collect();
    let inst = Instance {
        format: FORMAT.to_string(),
        name: format!("synthetic-{n}"),
        source: "benches/foundation.rs synthetic chain".into(),
        model: Model {
            name: format!("synthetic-{n}"),
            batch: 8,
            input: 1e6,
            layers,
        },
        cluster: cluster(),
        training: Training::default(),
        extensions: BTreeMap::new(),
        calibration: None,
    };
    inst.validate().expect("synthetic instance is valid");
    inst
}

/// The folder named `name` holding a `graph.txt`, searched recursively under `dir`.
fn find_profile(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                let graph = path.join("graph.txt");
                if path.file_name().is_some_and(|n| n == name) && graph.is_file() {
                    return Some(graph);
                }
                stack.push(path);
            }
        }
    }
    None
}

/// nasnetalarge from the peers folder, else (with a notice) the 1250-layer synthetic chain.
fn longest_chain() -> Instance {
    const WHAT: &str = "benches/foundation nasnetalarge";
    if let Some(dir) = peers::subdir("pipedream", WHAT) {
        match find_profile(&dir, "nasnetalarge") {
            Some(path) => {
                return import_file(Source::PipeDream, &path, &ImportOptions::new(cluster()))
                    .unwrap_or_else(|e| panic!("{e}"))
            }
            None => peers::skip_notice(
                WHAT,
                &format!("no nasnetalarge/graph.txt under {}", dir.display()),
            ),
        }
    }
    peers::skip_notice(WHAT, "benchmarking a synthetic 1250-layer chain instead");
    synthetic(1250)
}

fn shipped_gpt3() -> Instance {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances")
        .join("gpt3-2.6b-s2048-b1-8gpu-40gib.json");
    Instance::from_path(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// balanced-time's plan, the one the evaluator benchmarks judge.
fn balanced_time_plan(inst: &Instance) -> Plan {
    BalancedTime
        .solve(inst, &SolveOptions::default())
        .expect("balanced-time solves every instance")
        .plan
}

fn bench_pair(c: &mut Criterion, group: &str, inst: &Instance) {
    let plan = balanced_time_plan(inst);
    // Fail loudly rather than time an error path.
    evaluate(inst, &plan).expect("the evaluator accepts balanced-time's plan");
    let id = format!(
        "{} L={} P={}",
        inst.name,
        inst.num_layers(),
        plan.stages.len()
    );
    let opts = SolveOptions::default();
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function(BenchmarkId::new("evaluate", &id), |b| {
        b.iter(|| evaluate(black_box(inst), black_box(&plan)).unwrap())
    });
    g.bench_function(BenchmarkId::new("balanced-time", &id), |b| {
        b.iter(|| BalancedTime.solve(black_box(inst), &opts).unwrap())
    });
    g.finish();
}

fn longest(c: &mut Criterion) {
    bench_pair(c, "longest", &longest_chain());
}

fn shipped(c: &mut Criterion) {
    bench_pair(c, "shipped", &shipped_gpt3());
}

fn scaling(c: &mut Criterion) {
    for n in [250, 500, 1000] {
        bench_pair(c, "scaling", &synthetic(n));
    }
}

criterion_group!(benches, longest, shipped, scaling);
criterion_main!(benches);
