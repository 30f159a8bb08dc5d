//! Criterion benchmarks of the DawnPiper family.
//!
//! - `dawnpiper/2000-node-graph/8-stages`: BiPar + MemOpt on a generated 2000-node chain
//!   (BERT-like varied node times and sizes, memory tight enough that MemOpt runs on every
//!   stage); target < 1 s (docs/design.md, performance targets).
//! - `dawnpiper/operator-graph/8-stages/{16GiB,4GiB,4GiB-comm-include}`: the same on the
//!   largest dnn-partitioning operator graph (`OperatorGraphs/*.json`, by file size) under
//!   `PIPEPLAN_PEERS`/dnn-partitioning, imported with its `graph` extension for 8 GPUs with
//!   150 GB/s links and 12 GB/s PCIe: at 16 GiB (no memory optimization needed), at 4 GiB
//!   (MemOpt on most stages) and at 4 GiB with `comm=include`; target < 1 s. A SKIPPED notice
//!   when the peers folder is absent. Each variant's claimed objective, evaluated period and
//!   fit are printed once before timing.
//! - `max-batch/bert-large/<algorithm>`: max-batch of every registered algorithm (DawnPiper's
//!   with memopt on) on the shipped BERT-Large instance (8 GPUs, 8 GiB), each solve limited to
//!   2 s as `pipeplan max-batch` does; the result of each is printed once before timing.

use criterion::{criterion_group, criterion_main, Criterion};
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveOptions};
use pipeplan_solvers::dawnpiper::bipar::Dawnpiper;
use pipeplan_solvers::max_batch::{max_batch, MaxBatchOptions};
use pipeplan_solvers::registry;
use std::time::Duration;

fn graph(n: usize) -> Instance {
    let layers: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let f = 0.05 + 0.3 * ((i * 37 % 101) as f64 / 101.0);
            serde_json::json!({"name": format!("op{i}"), "forward": f, "backward": 2.0 * f,
                "weights": if i % 4 == 0 { 4.0e6 } else { 0.0 },
                "output": 2.0e6 + 3.0e7 * ((i * 53 % 97) as f64 / 97.0)})
        })
        .collect();
    let doc = serde_json::json!({
        "format": "pipeplan/instance@1", "name": "generated-2000",
        "model": {"batch": 8, "input": 1e7, "layers": layers},
        "cluster": {"gpus": 8, "memory": 6e9, "bandwidth": {"intra_node": 1.5e11}, "pcie": 1.2e10},
        "training": {"schedule": "async", "optimizer_state_factor": 2}
    });
    Instance::from_json(&doc.to_string()).expect("valid generated graph")
}

/// The largest peer operator graph, imported for 8 GPUs of `memory_gib` GiB (None with a
/// notice).
fn peer_operator_graph(memory_gib: f64) -> Option<Instance> {
    use pipeplan_formulations::import::{import_file, ImportOptions, Source};
    use pipeplan_formulations::instance::Cluster;
    let what = "dawnpiper/operator-graph/8-stages";
    let dir = pipeplan_formulations::peers::subdir("dnn-partitioning", what)?;
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    for sub in [
        "throughput-inputs/OperatorGraphs",
        "latency-inputs/OperatorGraphs",
    ] {
        for e in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            let len = e.metadata().map_or(0, |m| m.len());
            if e.path().extension().is_some_and(|x| x == "json")
                && best.as_ref().is_none_or(|b| len > b.0)
            {
                best = Some((len, e.path()));
            }
        }
    }
    let Some((_, path)) = best else {
        pipeplan_formulations::peers::skip_notice(what, "no OperatorGraphs/*.json");
        return None;
    };
    let opts = ImportOptions::new(Cluster {
        pcie: Some(1.2e10),
        ..Cluster::single_node(8, memory_gib * 1024f64.powi(3), 1.5e11)
    });
    match import_file(Source::DnnPartitioning, &path, &opts) {
        Ok(inst) => {
            eprintln!("{what}: {} ({} nodes)", path.display(), inst.num_layers());
            Some(inst)
        }
        Err(e) => {
            pipeplan_formulations::peers::skip_notice(what, &format!("{}: {e}", path.display()));
            None
        }
    }
}

fn bench(c: &mut Criterion) {
    let inst = graph(2000);
    let opts = SolveOptions {
        stages: Some(8),
        ..SolveOptions::default()
    };
    let t = std::time::Instant::now();
    let sol = Dawnpiper.solve(&inst, &opts).expect("fits");
    eprintln!(
        "dawnpiper 2000 nodes: first solve {:.3} s, {:?} {:?}",
        t.elapsed().as_secs_f64(),
        sol.claimed.objective,
        sol.stats.counters
    );
    c.bench_function("dawnpiper/2000-node-graph/8-stages", |b| {
        b.iter(|| Dawnpiper.solve(&inst, &opts).expect("fits"))
    });
    for (label, memory, comm) in [
        ("16GiB", 16.0, "ignore"),
        ("4GiB", 4.0, "ignore"),
        ("4GiB-comm-include", 4.0, "include"),
    ] {
        let Some(inst) = peer_operator_graph(memory) else {
            break;
        };
        let mut o = opts.clone();
        o.params.insert("comm".into(), comm.into());
        let name = format!("dawnpiper/operator-graph/8-stages/{label}");
        let t = std::time::Instant::now();
        match Dawnpiper.solve(&inst, &o) {
            Ok(sol) => {
                let secs = t.elapsed().as_secs_f64();
                let ev = pipeplan_formulations::evaluate(&inst, &sol.plan).expect("evaluates");
                eprintln!(
                    "{name}: {} nodes, first solve {secs:.3} s, claimed {:?}, evaluated period \
                     {:?} ms, fits {} (claimed {:?}), max memory {:.3} GiB, counters {:?}",
                    inst.num_layers(),
                    sol.claimed.objective,
                    ev.period_ms,
                    ev.fits,
                    sol.claimed.fits,
                    ev.max_memory / 1024f64.powi(3),
                    sol.stats.counters
                );
                c.bench_function(&name, |b| b.iter(|| Dawnpiper.solve(&inst, &o)));
            }
            Err(e) => eprintln!("SKIPPED {name}: {e}"),
        }
    }
    let bert = Instance::from_path(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("instances/bert-large-s512-b8-8gpu-8gib.json"),
    )
    .expect("shipped instance");
    // Every registered algorithm, as `pipeplan max-batch` runs it (DawnPiper's with memopt on).
    for algo in registry::all() {
        let mut mo = MaxBatchOptions::default();
        if algo.name().starts_with("dawnpiper") {
            mo.solve.params.insert("memopt".into(), "on".into());
        }
        let name = format!("max-batch/bert-large/{}", algo.name());
        let r = max_batch(algo.as_ref(), &bert, &mo);
        eprintln!(
            "{name}: micro-batch {:?}, throughput {:?}, {} solves",
            r.micro_batch, r.throughput, r.solves
        );
        c.bench_function(&name, |b| b.iter(|| max_batch(algo.as_ref(), &bert, &mo)));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
