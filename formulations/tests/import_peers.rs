//! The importers on every real profile under the peers folder (`../shared/peers`, or
//! `$PIPEPLAN_PEERS`). Each test skips with a visible notice when its sub-folder is absent.
//!
//! Expected layout (searched recursively, so any nesting works):
//! - `pipedream/`: PipeDream profiler outputs, `.../<model>/graph.txt`
//!   (as msr-fiddle/pipedream `profiler/{image_classification,translation}/profiles/<model>/`);
//! - `piper/`: Piper inputs (`*.json` with `nodes`, `edges`, `mbsInBatch`), as msr-fiddle/piper
//!   `inputs/{bert32a100,gnmt,resnet}.json`; other JSON files (e.g. results) are skipped;
//! - `dnn-partitioning/`: dnn-partitioning inputs (`*.json` with `maxFPGAs`), as
//!   msr-fiddle/dnn-partitioning `{throughput,latency}-inputs/{LayerGraphs,OperatorGraphs}/`;
//!   other JSON files (the `human-experts/` splits) are skipped.
//!
//! Besides importing without error into a valid instance, every file is checked against totals
//! computed here straight from the file (times and weights are neither lost nor duplicated), for
//! determinism, and for a JSON round trip.

use pipeplan_formulations::import::{import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{Bandwidth, Cluster, Instance};
use pipeplan_formulations::peers;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn opts() -> ImportOptions {
    ImportOptions::new(Cluster {
        gpus: 8,
        gpus_per_node: Some(4),
        gpu: None,
        memory: 16.0 * 1024f64.powi(3),
        bandwidth: Bandwidth {
            intra_node: 100e9,
            inter_node: Some(12.5e9),
        },
        pcie: None,
    })
}

/// Files under `dir` (recursively) accepted by `keep`, sorted.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    files(dir, &|p| p.extension().is_some_and(|e| e == "json"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// What every imported instance must satisfy.
fn common_checks(source: Source, path: &Path, inst: &Instance) {
    let at = path.display();
    inst.validate().unwrap_or_else(|e| panic!("{at}: {e}"));
    assert!(!inst.model.layers.is_empty(), "{at}: no layers");
    for (i, l) in inst.model.layers.iter().enumerate() {
        let cut = l
            .cut
            .unwrap_or_else(|| panic!("{at}: layer {i} has no cut"));
        assert!(cut.is_finite() && cut >= 0.0, "{at}: layer {i} cut {cut}");
    }
    let last = inst.model.layers.last().unwrap();
    assert_eq!(
        last.cut,
        Some(0.0),
        "{at}: nothing crosses a cut after the last layer"
    );
    let again = import_file(source, path, &opts()).unwrap();
    assert_eq!(inst.to_json(), again.to_json(), "{at}: not deterministic");
    let back = Instance::from_json(&inst.to_json()).unwrap_or_else(|e| panic!("{at}: {e}"));
    assert_eq!(&back, inst, "{at}: JSON round trip");
    assert!(!inst.source.is_empty());
}

fn sum(inst: &Instance, f: impl Fn(&pipeplan_formulations::instance::Layer) -> f64) -> f64 {
    inst.model.layers.iter().map(f).sum()
}

/// Totals read straight from a graph.txt: (parameter bytes, time of non-Input nodes, time of
/// `__getitem__` nodes, node count).
fn pipedream_totals(text: &str) -> (f64, f64, f64, usize) {
    let (mut params, mut time, mut getitem, mut nodes) = (0.0, 0.0, 0.0, 0);
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
    {
        let tokens: Vec<&str> = line.trim().split(" -- ").collect();
        let meta = tokens
            .iter()
            .find(|t| t.contains("forward_compute_time="))
            .unwrap();
        let value = |key: &str| -> f64 {
            meta.split(", ")
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .unwrap()
                .parse()
                .unwrap()
        };
        let t = value("forward_compute_time") + value("backward_compute_time");
        nodes += 1;
        params += value("parameter_size");
        if !tokens[1].starts_with("Input") {
            time += t;
        }
        if tokens[1].starts_with("__getitem__") {
            getitem += t;
        }
    }
    (params, time, getitem, nodes)
}

#[test]
fn pipedream_profiles() {
    let Some(dir) = peers::subdir("pipedream", "import_peers::pipedream_profiles") else {
        return;
    };
    let found = files(&dir, &|p| p.file_name().is_some_and(|n| n == "graph.txt"));
    assert!(
        !found.is_empty(),
        "no graph.txt under {}; expected PipeDream's <model>/graph.txt profiles",
        dir.display()
    );
    for path in &found {
        let at = path.display();
        let inst = import_file(Source::PipeDream, path, &opts()).unwrap_or_else(|e| panic!("{e}"));
        common_checks(Source::PipeDream, path, &inst);
        let folder = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert_eq!(inst.name, folder);
        let text = std::fs::read_to_string(path).unwrap();
        let (params, time, getitem, nodes) = pipedream_totals(&text);
        assert!(inst.num_layers() <= nodes, "{at}");
        assert!(
            close(sum(&inst, |l| l.weights), params),
            "{at}: weights {} vs parameter_size total {params}",
            sum(&inst, |l| l.weights)
        );
        // Only Input sources (and unused __getitem__ sinks) are dropped.
        let t = sum(&inst, |l| l.forward + l.backward);
        assert!(
            t <= time * (1.0 + 1e-9) + 1e-9 && t >= time - getitem - 1e-9 * time.max(1.0),
            "{at}: layer time {t} vs {time} in the file ({getitem} in __getitem__ nodes)"
        );
        eprintln!(
            "imported {at}: {} layers, batch {}, input {} B",
            inst.num_layers(),
            inst.model.batch,
            inst.model.input
        );
    }
}

/// The TMPC pipeplan reads for a Piper node: `vanilla` at degree 1, else the fastest.
fn piper_chosen(node: &Value) -> &Value {
    let list = node["TMPCs"]["1"].as_array().unwrap();
    list.iter()
        .find(|t| t["id"] == "vanilla")
        .unwrap_or_else(|| {
            list.iter()
                .min_by(|a, b| {
                    let (x, y) = (&a["timePerSample"], &b["timePerSample"]);
                    x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap())
                })
                .unwrap()
        })
}

#[test]
fn piper_inputs() {
    let Some(dir) = peers::subdir("piper", "import_peers::piper_inputs") else {
        return;
    };
    let mut imported = 0;
    for path in json_files(&dir) {
        let at = path.display();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let is_input = doc.get("nodes").is_some()
            && doc.get("edges").is_some()
            && (doc.get("mbsInBatch").is_some() || doc.get("maxBatchSize").is_some());
        if !is_input {
            eprintln!("not a Piper input, skipped: {at}");
            continue;
        }
        let inst = import_file(Source::Piper, &path, &opts()).unwrap_or_else(|e| panic!("{e}"));
        common_checks(Source::Piper, &path, &inst);
        let nodes = doc["nodes"].as_array().unwrap();
        assert_eq!(inst.num_layers(), nodes.len(), "{at}: one layer per node");
        let time: f64 = nodes
            .iter()
            .map(|n| piper_chosen(n)["timePerSample"].as_f64().unwrap())
            .sum();
        let params: f64 = nodes
            .iter()
            .map(|n| piper_chosen(n)["parameterSize"].as_f64().unwrap())
            .sum();
        assert!(close(sum(&inst, |l| l.weights), params), "{at}");
        let mut o = opts();
        o.time_unit_ms = Some(1.0);
        o.cluster_from_profile = true;
        o.cluster.gpus_per_node = None; // the profile's GPU count need not be a multiple of 4
        let raw = import_file(Source::Piper, &path, &o).unwrap();
        assert!(
            close(sum(&raw, |l| l.forward + l.backward), time),
            "{at}: {} vs timePerSample total {time}",
            sum(&raw, |l| l.forward + l.backward)
        );
        assert_eq!(raw.cluster.gpus as u64, doc["maxDevices"].as_u64().unwrap());
        assert_eq!(
            raw.cluster.memory,
            doc["maxMemoryPerDevice"].as_f64().unwrap()
        );
        let mbs = doc.get("mbsInBatch").or(doc.get("maxBatchSize")).unwrap();
        assert_eq!(raw.training.micro_batches.map(u64::from), mbs.as_u64());
        // Piper's inputs/resnet.json holds PipeDream's ResNet-50 profile: node77 (a BatchNorm)
        // has forward 1.236 ms and backward 1.442 ms there.
        if path.file_name().is_some_and(|n| n == "resnet.json") {
            if let Some(l) = inst.model.layers.iter().find(|l| l.name == "node77") {
                assert!(
                    close(l.forward, 1.236) && close(l.backward, 1.442),
                    "{at}: {l:?}"
                );
            }
        }
        imported += 1;
        eprintln!("imported {at}: {} layers", inst.num_layers());
    }
    assert!(
        imported > 0,
        "no Piper input under {}; expected files like inputs/bert32a100.json",
        dir.display()
    );
}

#[test]
fn dnn_partitioning_inputs() {
    let Some(dir) = peers::subdir("dnn-partitioning", "import_peers::dnn_partitioning_inputs")
    else {
        return;
    };
    let mut imported = 0;
    for path in json_files(&dir) {
        let at = path.display();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        if doc.get("maxFPGAs").is_none() || doc.get("nodes").is_none() {
            eprintln!("not a dnn-partitioning input, skipped: {at}");
            continue;
        }
        let inst =
            import_file(Source::DnnPartitioning, &path, &opts()).unwrap_or_else(|e| panic!("{e}"));
        common_checks(Source::DnnPartitioning, &path, &inst);
        let nodes = doc["nodes"].as_array().unwrap();
        let backward = |n: &Value| match &n["isBackwardNode"] {
            Value::Bool(b) => *b,
            v => v.as_i64() == Some(1),
        };
        let latency = |n: &Value| n["fpgaLatency"].as_f64().unwrap();
        let fwd: f64 = nodes.iter().filter(|n| !backward(n)).map(latency).sum();
        let bwd: f64 = nodes.iter().filter(|n| backward(n)).map(latency).sum();
        assert!(close(sum(&inst, |l| l.forward), fwd), "{at}: forward time");
        assert!(
            close(sum(&inst, |l| l.backward), bwd),
            "{at}: backward time"
        );
        let forward_nodes = nodes.iter().filter(|n| !backward(n)).count();
        if path.components().any(|c| c.as_os_str() == "LayerGraphs") {
            // Layer graphs: one forward node per colour class, each with its grad node(s).
            assert_eq!(
                inst.num_layers(),
                forward_nodes,
                "{at}: one layer per forward node"
            );
        }
        let mut o = opts();
        o.cluster_from_profile = true;
        o.cluster.gpus_per_node = None; // maxFPGAs need not be a multiple of 4
        let own = import_file(Source::DnnPartitioning, &path, &o).unwrap();
        assert_eq!(own.cluster.gpus as u64, doc["maxFPGAs"].as_u64().unwrap());
        assert_eq!(own.cluster.memory, doc["maxSizePerFPGA"].as_f64().unwrap());
        imported += 1;
        eprintln!(
            "imported {at}: {} layers from {forward_nodes} forward nodes",
            inst.num_layers()
        );
    }
    assert!(
        imported > 0,
        "no dnn-partitioning input under {}; expected files like \
         throughput-inputs/LayerGraphs/resnet50_training.json",
        dir.display()
    );
}

/// `human-experts/<model>_expert.json` are the hand-made placements the paper compares with,
/// not inputs: each must place every node of its input
/// (`throughput-inputs/LayerGraphs/<model>.json`) exactly once, on at most its `maxFPGAs`
/// devices.
#[test]
fn dnn_partitioning_expert_placements() {
    let what = "import_peers::dnn_partitioning_expert_placements";
    let Some(dir) = peers::subdir("dnn-partitioning", what) else {
        return;
    };
    let experts = files(&dir.join("human-experts"), &|p| {
        p.to_string_lossy().ends_with("_expert.json")
    });
    assert!(
        !experts.is_empty(),
        "no human-experts/*_expert.json under {}",
        dir.display()
    );
    for path in experts {
        let at = path.display();
        let name = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace("_expert.json", ".json");
        let input = dir.join("throughput-inputs/LayerGraphs").join(&name);
        let read = |p: &Path| -> Value {
            serde_json::from_str(
                &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        let (expert, graph) = (read(&path), read(&input));
        import_file(Source::DnnPartitioning, &input, &opts()).unwrap_or_else(|e| panic!("{e}"));
        let devices: Vec<&Value> = ["cpus", "fpgas"]
            .iter()
            .flat_map(|k| {
                expert[k]
                    .as_array()
                    .unwrap_or_else(|| panic!("{at}: no {k}"))
            })
            .collect();
        let mut placed: Vec<u64> = devices
            .iter()
            .flat_map(|d| {
                d["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_u64().unwrap())
            })
            .collect();
        placed.sort_unstable();
        let mut ids: Vec<u64> = graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        assert_eq!(
            placed, ids,
            "{at}: every node of {name} placed exactly once"
        );
        let used = expert["fpgas"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| !d["nodes"].as_array().unwrap().is_empty())
            .count() as u64;
        assert!(
            used <= graph["maxFPGAs"].as_u64().unwrap(),
            "{at}: {used} devices"
        );
        eprintln!(
            "expert placement {at}: {} nodes on {used} devices",
            ids.len()
        );
    }
}
