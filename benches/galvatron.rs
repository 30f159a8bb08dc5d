//! Galvatron searches (`galvatron-base`, `galvatron-bmw`):
//!
//! - `galvatron-golden/<file>`: `galvatron-base` on every recording of the real engine,
//!   `$PIPEPLAN_PEERS/galvatron/golden/*.json`, imported from its own `config` (profiles in
//!   `galvatron/v2.x_14f5972`); printed before measuring: our time, the engine's recorded
//!   `result.timing.search_wall_s` (a 2-vCPU machine like ours), their ratio (target >= 50x) and
//!   whether the plan's throughput is the engine's (relative 1e-6);
//! - `galvatron-shipped/*`: shipped instances (derived `layer_types`), `galvatron-base` and
//!   `galvatron-bmw`.
//!
//! Without the peers folder the golden group prints a SKIPPED line.
//! Run with `cargo bench --bench galvatron`. Measured figures: BENCHMARKS.md (Galvatron section).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pipeplan_formulations::galvatron::import::import;
use pipeplan_formulations::{peers, Instance};
use pipeplan_solvers::{registry, SolveOptions};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SHIPPED: [&str; 3] = [
    "bert-large-s512-b8-8gpu-8gib",
    "t5-512-4-s512-b8-8gpu-8gib",
    "gpt3-2.6b-s2048-b1-16gpu-32gib",
];

fn json_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.extension().and_then(|x| x.to_str()) == Some("json")
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
    });
    v.sort();
    v
}

fn opts() -> SolveOptions {
    SolveOptions {
        time_limit: None,
        ..SolveOptions::default()
    }
}

fn bench_instances(c: &mut Criterion, group: &str, items: Vec<(String, Instance, Option<f64>)>) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(1));
    for (name, inst, recorded) in items {
        for algo in ["galvatron-base", "galvatron-bmw"] {
            let a = registry::by_name(algo).unwrap();
            let t = Instant::now();
            let sol = a.solve(&inst, &opts());
            let el = t.elapsed().as_secs_f64();
            match &sol {
                Ok(s) => eprintln!(
                    "{group}/{name} {algo}: {:.3} s, throughput {:.3} samples/s, {}{}",
                    el,
                    s.claimed.throughput.unwrap_or(0.0),
                    s.notes.first().cloned().unwrap_or_default(),
                    recorded.map_or(String::new(), |r| format!(
                        ", engine recorded {r:.3} s, ratio {:.1}x",
                        r / el
                    ))
                ),
                Err(e) => eprintln!("{group}/{name} {algo}: {e}"),
            }
            g.bench_with_input(BenchmarkId::new(algo, &name), &inst, |b, inst| {
                b.iter(|| black_box(a.solve(inst, &opts()).ok()))
            });
        }
    }
    g.finish();
}

fn goldens(c: &mut Criterion) {
    let Some(dir) = peers::subdir("galvatron/golden", "bench galvatron-golden") else {
        return;
    };
    let root = dir.parent().unwrap().join("v2.x_14f5972");
    let algo = registry::by_name("galvatron-base").unwrap();
    let mut g = c.benchmark_group("galvatron-golden");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for f in json_files(&dir, "") {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let inst = import(&doc, &root).unwrap_or_else(|e| panic!("{name}: {e}"));
        let result = &doc["result"];
        let recorded = result["timing"]["search_wall_s"].as_f64();
        let t = Instant::now();
        let sol = algo
            .solve(&inst, &opts())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = t.elapsed().as_secs_f64();
        let want = result["throughput_samples_per_s"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let got = sol.claimed.throughput.unwrap_or(f64::NAN);
        eprintln!(
            "galvatron-golden/{name}: ours {ours:.4} s, engine {}, same throughput: {}",
            recorded.map_or("-".into(), |r| format!("{r:.2} s, ratio {:.0}x", r / ours)),
            (got - want).abs() <= 1e-6 * want
        );
        g.bench_function(&name, |b| {
            b.iter(|| black_box(algo.solve(&inst, &opts()).ok()))
        });
    }
    g.finish();
}

fn shipped(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances");
    let items = SHIPPED
        .iter()
        .map(|n| {
            (
                n.to_string(),
                Instance::from_path(&dir.join(format!("{n}.json"))).unwrap(),
                None,
            )
        })
        .collect();
    bench_instances(c, "galvatron-shipped", items);
}

criterion_group!(benches, goldens, shipped);
criterion_main!(benches);
