//! Galvatron searches (`galvatron-base`, `galvatron-bmw`):
//!
//! - `galvatron-golden/<file>`: the engine's search on every golden config of
//!   `$PIPEPLAN_PEERS/galvatron/golden/*.json`, with the search time the golden file records
//!   (`search_time_s`, assumed field) and the ratio printed before measuring (DESIGN.md §9 target:
//!   >= 50x faster, same plan);
//! - `galvatron-configs/<file>`: import configs `$PIPEPLAN_PEERS/galvatron/configs/search_*.json`
//!   (e.g. built from the public Hetu-Galvatron profiles);
//! - `galvatron-shipped/*`: shipped instances (derived `layer_types`), so the bench always
//!   measures something.
//!
//! Peer folders that are absent are skipped with a visible notice.
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

fn peer_configs(c: &mut Criterion) {
    for (sub, prefix, group) in [
        ("galvatron/golden", "", "galvatron-golden"),
        ("galvatron/configs", "search_", "galvatron-configs"),
    ] {
        let Some(dir) = peers::subdir(sub, &format!("bench {group}")) else {
            continue;
        };
        let root = dir.parent().unwrap().to_path_buf();
        let mut items = Vec::new();
        for f in json_files(&dir, prefix) {
            let doc: serde_json::Value = match std::fs::read_to_string(&f)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
            {
                Some(d) => d,
                None => continue,
            };
            match import(&doc, &root) {
                Ok(inst) => {
                    let recorded = doc.get("search_time_s").and_then(serde_json::Value::as_f64);
                    items.push((
                        f.file_stem().unwrap().to_string_lossy().into_owned(),
                        inst,
                        recorded,
                    ));
                }
                Err(e) => eprintln!("{}: {e}", f.display()),
            }
        }
        bench_instances(c, group, items);
    }
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

criterion_group!(benches, shipped, peer_configs);
criterion_main!(benches);
