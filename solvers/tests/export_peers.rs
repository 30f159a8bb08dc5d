//! Export and plan import against the runtimes' own files (peers folder; each test prints a
//! `SKIPPED` line when they are absent):
//! - Galvatron: for every golden replay (`$PIPEPLAN_PEERS/galvatron/golden/*.json` and the
//!   project's own `references/galvatron/*.json`, imported and solved with `galvatron-base` as
//!   in `galvatron_golden.rs`) where the engine found a plan, `export --to galvatron` equals the
//!   engine's `result.output_config`, and reading that file back gives `galvatron-base`'s plan
//!   and extras;
//! - PipeDream: PipeDream's planner on the VGG-16 profile, 4 GPUs, exports to the runtime's
//!   `runtime/image_classification/models/vgg16/gpus=4/hybrid_conf.json`, which reads back as
//!   the same plan; the shipped `mp_conf.json` (a bare number as a JSON key) is refused with
//!   its line named.

use pipeplan_formulations::export::{export, Format, RuntimePlan};
use pipeplan_formulations::galvatron::import::import;
use pipeplan_formulations::import::{import_file, ImportOptions, Source};
use pipeplan_formulations::instance::{Cluster, Instance};
use pipeplan_formulations::peers;
use pipeplan_formulations::plan_from::{PlanFormat, ReadOptions};
use pipeplan_solvers::madpipe::pipedream::{
    pd_plan, pipedream_partition, PdConfig, PdProfile, PdStates,
};
use pipeplan_solvers::{registry, SolveOptions};
use serde_json::Value;
use std::path::PathBuf;

mod galvatron_common;
use galvatron_common::{engine_found_none, goldens};

#[test]
fn galvatron_export_equals_the_engines_output_config() {
    let Some((files, data)) =
        goldens("export_peers::galvatron_export_equals_the_engines_output_config")
    else {
        return;
    };
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        if engine_found_none(&doc) {
            eprintln!("{name}: the engine found no valid configuration: no config to compare");
            continue;
        }
        let inst = import(&doc, &data).unwrap_or_else(|e| panic!("{name}: import: {e}"));
        let sol = registry::by_name("galvatron-base")
            .unwrap()
            .solve(
                &inst,
                &SolveOptions {
                    time_limit: None,
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{name}: galvatron-base: {e}"));
        let rp = RuntimePlan {
            plan: sol.plan.clone(),
            galvatron: sol.galvatron.clone(),
        };
        assert!(
            rp.galvatron.is_some(),
            "{name}: the solution carries no extras"
        );
        let text = export(Format::Galvatron, &inst, &rp)
            .unwrap_or_else(|e| panic!("{name}: export: {e:?}"));
        let ours: Value = serde_json::from_str(&text).unwrap();
        let engine = &doc["result"]["output_config"];
        assert_eq!(
            &ours, engine,
            "{name}: export differs from the engine's output config"
        );
        // The engine's own file reads back as galvatron-base's plan.
        let engine_text = engine.to_string();
        let back = PlanFormat::Galvatron
            .read(&engine_text, &inst, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: reading the engine's config: {e}"));
        assert_eq!(
            back, rp,
            "{name}: the engine's config reads as another plan"
        );
        eprintln!(
            "{name}: export equals the engine's output_config; it reads back as the same plan"
        );
    }
}

fn vgg16(what: &str) -> Option<(Instance, PathBuf)> {
    let dir = peers::subdir("pipedream", what)?;
    let graph = dir.join("profiler/image_classification/profiles/vgg16/graph.txt");
    let runtime = dir.join("runtime/image_classification/models/vgg16/gpus=4");
    if !graph.is_file() || !runtime.is_dir() {
        peers::skip_notice(
            what,
            &format!("{} or {} missing", graph.display(), runtime.display()),
        );
        return None;
    }
    let inst = import_file(Source::PipeDream, &graph, &optimizer_cluster(4)).unwrap();
    Some((inst, runtime))
}

/// `gpus` GPUs with PipeDream's optimizer defaults: 1 GB/s, 16 GB.
fn optimizer_cluster(gpus: u32) -> ImportOptions {
    ImportOptions::new(Cluster::single_node(gpus, 16e9, 1e9))
}

/// A partitioned graph naming each layer's module (what PipeDream's code generator reads).
fn modules_of(inst: &Instance, rp: &RuntimePlan) -> (String, String) {
    let mut text = String::from("node1 -- Input -- stage_id=0\n");
    // Stage bounds are positions in the plan's layer order, when it has one.
    let layer_at = |p: usize| rp.plan.order.as_ref().map_or(p, |o| o[p]);
    for (s, st) in rp.plan.stages.iter().enumerate() {
        for p in st.first..=st.last {
            text.push_str(&format!(
                "{} -- layer -- stage_id={s}\n",
                inst.model.layers[layer_at(p)].name
            ));
        }
    }
    ("modules.txt".into(), text)
}

#[test]
fn pipedream_vgg16_exports_what_pipedream_ships() {
    let what = "export_peers::pipedream_vgg16_exports_what_pipedream_ships";
    let Some((inst, runtime)) = vgg16(what) else {
        return;
    };
    let config = PdConfig {
        replicate: true,
        memory_check: true,
        memory: inst.cluster.memory,
        ..PdConfig::single(4, inst.cluster.bandwidth.intra_node)
    };
    let part = pipedream_partition(&PdStates::of(&PdProfile::of(&inst)), &config).unwrap();
    let rp = RuntimePlan::of(pd_plan(&part));
    let text = export(Format::Pipedream, &inst, &rp).unwrap_or_else(|e| panic!("{e:?}"));
    let ours: Value = serde_json::from_str(&text).unwrap();
    let shipped_text = std::fs::read_to_string(runtime.join("hybrid_conf.json")).unwrap();
    let shipped: Value = serde_json::from_str(&shipped_text).unwrap();
    assert_eq!(ours, shipped, "ours:\n{text}\nPipeDream's:\n{shipped_text}");
    // Read back, with the modules of the plan.
    let opts = ReadOptions {
        modules: Some(modules_of(&inst, &rp)),
        ..ReadOptions::default()
    };
    let back = PlanFormat::Pipedream
        .read(&shipped_text, &inst, &opts)
        .unwrap();
    assert_eq!(back, rp);
    // The data-parallel configuration: both modules (and the criterion) on stage 0, 4 ranks.
    let dp = std::fs::read_to_string(runtime.join("dp_conf.json")).unwrap();
    let back = PlanFormat::Pipedream.read(&dp, &inst, &opts).unwrap();
    assert_eq!(back.plan.stages.len(), 1);
    assert_eq!(back.plan.stages[0].gpus, vec![0, 1, 2, 3]);
    assert_eq!(back.plan.stages[0].dp, 4);
    // mp_conf.json writes `1: [1]`, which is not JSON: refused, naming the place.
    let mp = std::fs::read_to_string(runtime.join("mp_conf.json")).unwrap();
    let err = PlanFormat::Pipedream
        .read(&mp, &inst, &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3"), "{err}");
}

#[test]
fn pipedream_plans_in_their_own_layer_order_export_and_read_back() {
    let what = "export_peers::pipedream_plans_in_their_own_layer_order_export_and_read_back";
    let Some(dir) = peers::subdir("pipedream", what) else {
        return;
    };
    let graph = dir.join("profiler/image_classification/profiles/resnet50/graph.txt");
    if !graph.is_file() {
        peers::skip_notice(what, &format!("{} missing", graph.display()));
        return;
    }
    let inst = import_file(Source::PipeDream, &graph, &optimizer_cluster(8)).unwrap();
    // The optimizer's default (transfers ignored) cuts resnet50 inside residual blocks.
    let config = PdConfig {
        replicate: true,
        activation_compression_ratio: None,
        ..PdConfig::single(8, 1e9)
    };
    let part = pipedream_partition(&PdStates::of(&PdProfile::of(&inst)), &config).unwrap();
    let rp = RuntimePlan::of(pd_plan(&part));
    assert!(rp.plan.order.is_some(), "{:?}", part.stages);
    let text = export(Format::Pipedream, &inst, &rp).unwrap_or_else(|e| panic!("{e:?}"));
    let read = ReadOptions {
        modules: Some(modules_of(&inst, &rp)),
        ..ReadOptions::default()
    };
    let back = PlanFormat::Pipedream.read(&text, &inst, &read).unwrap();
    assert_eq!(back, rp, "read back in the same layer order");
}
