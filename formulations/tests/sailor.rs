//! Sailor's profiles and plan files (peers folder `sailor/`), tensor-parallel measurements and
//! the calibration constants in the evaluator.

use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::import::sailor::plan::SailorPlan;
use pipeplan_formulations::import::sailor::runs::{collect, Outcome, RunOptions};
use pipeplan_formulations::import::sailor::{import_file, Selection};
use pipeplan_formulations::instance::{Instance, Layer, Precision, TensorParallel};
use pipeplan_formulations::peers;
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::plan_from::sailor::{read_noted, scaled_profile};
use pipeplan_formulations::testing::shipped;
use std::path::PathBuf;

fn sailor() -> Option<PathBuf> {
    peers::subdir("sailor/sailor", "Sailor profiles and measured runs")
}

fn opt_config(root: &std::path::Path) -> PathBuf {
    root.join("Planner/simulations/configs/training_config_opt_350.json")
}

fn select(gpu: &str, nodes: u32, mbs: u32) -> Selection {
    Selection {
        gpu_type: gpu.into(),
        nodes,
        micro_batch: mbs,
        gpus_per_node: None,
    }
}

#[test]
fn opt_on_gh200_imports_every_layer_with_its_tensor_parallel_measurements() {
    let Some(root) = sailor() else { return };
    let inst = import_file(&opt_config(&root), None, &select("GH-96", 4, 8), None).unwrap();
    assert_eq!(inst.model.layers.len(), 26);
    assert_eq!(inst.cluster.gpus, 16);
    assert_eq!(inst.cluster.gpus_per_node, Some(4));
    assert_eq!(inst.model.batch, 8);
    // Degrees profiled at micro-batch 8 on GH-96 and sized in llm_info: 1 (the base), 2, 4.
    let degrees: Vec<u32> = inst.model.layers[1]
        .tensor_parallel
        .iter()
        .map(|t| t.degree)
        .collect();
    assert_eq!(degrees, vec![2, 4]);
    // profiles_tmp.json OPT-350 / GH-96 / mbs 8 / tp 4, layer 1: [0.003021, 0.006469, ...] s.
    let l1 = &inst.model.layers[1].tensor_parallel[1];
    assert!((l1.forward - 3.021).abs() < 1e-9 && (l1.backward - 6.469).abs() < 1e-9);
    // llm_info OPT-350 tp 4 layer 1: 3153664 params in fp32 (params_bytes 4 x that), act_mem_floats
    // 27398144 x 4 B x 8; the runs trained in fp32.
    assert_eq!(l1.weights, 3153664.0 * 4.0);
    assert_eq!(l1.saved, 27398144.0 * 4.0 * 8.0);
    // tp 1 layer 1: act_output_bytes 8388608 (2048 x 1024 fp32) per sample.
    assert_eq!(inst.model.layers[1].output, 8388608.0 * 8.0);
    assert_eq!(inst.training.precision, Some(Precision::Fp32));
    assert_eq!(inst.training.optimizer_state_factor, 3.0);
    let again = import_file(&opt_config(&root), None, &select("GH-96", 4, 8), None).unwrap();
    assert_eq!(inst, again);
    let back = Instance::from_json(&inst.to_json()).unwrap();
    assert_eq!(back, inst);
}

/// A copy of the checkout's files an import reads, with `llm_info.json` OPT-350's
/// `params_bytes` set to `bytes_per_param` x `params_floats`.
fn with_bytes_per_param(root: &std::path::Path, bytes_per_param: f64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "Planner/simulations/configs/training_config_opt_350.json",
        "Planner/simulations/configs/basic_cluster_config.json",
        "Planner/simulations/profiles_tmp.json",
        "providers/intra_node_bandwidths.json",
        "providers/multizone_bandwidths_het.json",
    ] {
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(rel), to).unwrap();
    }
    let text = std::fs::read_to_string(root.join("Planner/llm_info.json")).unwrap();
    let mut llm: serde_json::Value = serde_json::from_str(&text).unwrap();
    for layers in llm["OPT-350"].as_object_mut().unwrap().values_mut() {
        for layer in layers.as_object_mut().unwrap().values_mut() {
            let floats = layer["params_floats"].as_f64().unwrap();
            layer["params_bytes"] = (floats * bytes_per_param).into();
        }
    }
    std::fs::write(dir.path().join("Planner/llm_info.json"), llm.to_string()).unwrap();
    dir
}

#[test]
fn the_data_type_is_the_one_the_profile_recorded() {
    let Some(root) = sailor() else { return };
    // Two bytes per parameter: a run profiled in fp16, trained in mixed precision.
    let fp16 = with_bytes_per_param(&root, 2.0);
    let inst = import_file(&opt_config(fp16.path()), None, &select("GH-96", 4, 8), None).unwrap();
    assert_eq!(inst.training.precision, Some(Precision::Mixed));
    assert_eq!(inst.training.optimizer_state_factor, 8.0);
    assert_eq!(
        inst.model.layers[1].tensor_parallel[1].weights,
        3153664.0 * 2.0
    );
    // Anything else is named, with the file and field.
    let odd = with_bytes_per_param(&root, 3.0);
    let e = import_file(&opt_config(odd.path()), None, &select("GH-96", 4, 8), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("llm_info.json.OPT-350.1.0.params_bytes")
            && e.contains("expected 4 (fp32) or 2"),
        "{e}"
    );
}

#[test]
fn missing_selections_are_named() {
    let Some(root) = sailor() else { return };
    let err = |sel: Selection| {
        import_file(&opt_config(&root), None, &sel, None)
            .unwrap_err()
            .to_string()
    };
    let e = err(select("H100", 1, 8));
    assert!(
        e.contains("OPT-350 is not profiled on H100") && e.contains("GH-96"),
        "{e}"
    );
    let e = err(select("GH-96", 1, 3));
    assert!(e.contains("not profiled at micro-batch 3"), "{e}");
    // The sizes that are profiled, in numeric order.
    assert!(e.contains("profiled sizes: 1, 2, 4, 8, 16"), "{e}");
    assert!(e.contains("training_config_opt_350.json"), "{e}");
}

#[test]
fn measured_runs_are_judged_or_reported_with_the_reason() {
    let Some(root) = sailor() else { return };
    let runs = collect(
        &[root.join("Planner/simulations/validation")],
        &RunOptions::default(),
    )
    .unwrap();
    let ready = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ready(_)))
        .count();
    let reason = |name: &str| match &runs
        .iter()
        .find(|r| r.name.ends_with(name))
        .unwrap()
        .outcome
    {
        Outcome::Invalid(r) | Outcome::Unsupported(r) => r.clone(),
        Outcome::Ready(_) => String::new(),
    };
    // The README's defects: layer 29 twice and 19 missing; a 26-layer layout for a 34-layer model.
    let dup = reason("GPT-NEO/N8/plan_config_N8_D2.json");
    assert!(
        dup.contains("layer 29 is listed 2 times") && dup.contains("[19]"),
        "{dup}"
    );
    assert!(dup.contains("--repair-layers would mend it"), "{dup}");
    let short = reason("GPT-NEO/N4/plan_config_N4_D4.json");
    assert!(
        short.contains("34 layers") && short.contains("missing"),
        "{short}"
    );
    assert!(reason("mit/N3/plan_config_N3_D1.json").contains("heterogeneous"));
    // Every homogeneous, well-formed GH200 run is judged.
    assert_eq!(
        ready,
        19,
        "{:#?}",
        runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    for r in &runs {
        if let Outcome::Ready(m) = &r.outcome {
            assert_eq!(m.dataset, r.dataset);
            let p = m.predict(&Calibration::IDENTITY).unwrap();
            assert!(p.iteration_ms > 0.0 && p.peak_memory > 0.0, "{}", r.name);
            // Every run recorded its gradient reduction (`red_grads`), within the iteration.
            let sync = m.grad_sync_ms.unwrap_or(-1.0);
            assert!(sync > 0.0 && sync < m.iteration_ms, "{}: {sync}", r.name);
        }
    }
}

#[test]
fn asked_to_repair_the_three_mistyped_gpt_neo_plans_are_judged_and_say_so() {
    let Some(root) = sailor() else { return };
    let opts = RunOptions {
        repair_layers: true,
        ..RunOptions::default()
    };
    let runs = collect(
        &[root.join("Planner/simulations/validation/clariden")],
        &opts,
    )
    .unwrap();
    let mended: Vec<(&str, &str)> = runs
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.repaired.as_deref()?)))
        .collect();
    let names: Vec<&str> = mended.iter().map(|m| m.0).collect();
    assert_eq!(
        names,
        [
            "GPT-NEO/N16/plan_config_N16_D4.json",
            "GPT-NEO/N4/plan_config_N4_D1.json",
            "GPT-NEO/N8/plan_config_N8_D2.json"
        ]
    );
    for (name, note) in &mended {
        assert!(
            note.contains("layers_per_stage[2][3]")
                && note.contains("layer 29, listed twice, read as 19"),
            "{name}: {note}"
        );
    }
    let ready = |name: &str| {
        runs.iter()
            .find(|r| r.name == name)
            .is_some_and(|r| matches!(r.outcome, Outcome::Ready(_)))
    };
    assert!(names.iter().all(|n| ready(n)));
    // The mislabelled 26-layer layout is no typo: still invalid.
    assert!(!ready("GPT-NEO/N4/plan_config_N4_D4.json"));
    let judged = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ready(_)))
        .count();
    assert_eq!(judged, 22);
}

/// One edit of a run's plan file.
type Edit = fn(&mut serde_json::Value);

/// Copies of OPT-350's `N4_D2` run (2 stages x dp 2 x tp 4, micro-batch 1, 4 nodes of 4), each
/// changed by its edit, under `OPT-350/N4/` of a new folder.
fn edited_runs(root: &std::path::Path, edits: &[(&str, Edit)]) -> tempfile::TempDir {
    let run =
        root.join("Planner/simulations/validation/clariden/OPT-350/N4/plan_config_N4_D2.json");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("OPT-350/N4");
    std::fs::create_dir_all(&folder).unwrap();
    for (name, edit) in edits {
        let mut p = plan.clone();
        edit(&mut p);
        std::fs::write(
            folder.join(format!("plan_config_{name}.json")),
            p.to_string(),
        )
        .unwrap();
    }
    dir
}

/// Every replica of every stage of a plan file: `[[[gpu_type, gpus_per_node, zone]], tp]`.
fn replicas(p: &mut serde_json::Value) -> impl Iterator<Item = &mut serde_json::Value> {
    p["pipeline_list"][0]["tmp_per_stage"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|s| s.as_array_mut().unwrap().iter_mut())
}

#[test]
fn runs_are_judged_on_their_own_machines_and_profiled_degrees_only() {
    let Some(root) = sailor() else { return };
    let dir = edited_runs(
        &root,
        &[
            ("as_run", |_| {}),
            ("nodes_of_2", |p| {
                replicas(p).for_each(|r| r[0][0][1] = 2.into());
                p["N"] = 8.into();
            }),
            ("tp_3", |p| replicas(p).for_each(|r| r[1] = 3.into())),
            ("mixed_sizes", |p| {
                replicas(p).take(1).for_each(|r| r[0][0][1] = 8.into())
            }),
            ("mixed_dp", |p| {
                let pipeline = &mut p["pipeline_list"][0];
                pipeline["dp"][1] = 1.into();
                pipeline["tmp_per_stage"][1].as_array_mut().unwrap().pop();
            }),
            ("too_few_nodes", |p| p["N"] = 2.into()),
            ("unprofiled_gpu", |p| {
                replicas(p).for_each(|r| r[0][0][0] = "H100-80".into())
            }),
            ("mixed_tp", |p| {
                p["pipeline_list"][0]["tmp_per_stage"][1][1][1] = 2.into();
            }),
        ],
    );
    let opts = RunOptions {
        root: Some(root.clone()),
        ..RunOptions::default()
    };
    let runs = collect(&[dir.path().to_path_buf()], &opts).unwrap();
    let outcome = |name: &str| {
        &runs
            .iter()
            .find(|r| r.name.ends_with(&format!("plan_config_{name}.json")))
            .unwrap()
            .outcome
    };
    let reason = |name: &str, unsupported: bool| match (outcome(name), unsupported) {
        (Outcome::Unsupported(e), true) | (Outcome::Invalid(e), false) => e.as_str(),
        (other, _) => panic!("{name}: {other:?}"),
    };
    let invalid = |name: &str| reason(name, false);
    let unsupported = |name: &str| reason(name, true);
    let Outcome::Ready(as_run) = outcome("as_run") else {
        panic!("{:?}", outcome("as_run"))
    };
    assert_eq!(as_run.instance.cluster.gpus_per_node, Some(4));
    assert_eq!(as_run.instance.cluster.gpus, 16);
    // The run's machines hold 2 GPUs each: 8 nodes of 2, each tp group over two of them.
    let Outcome::Ready(halves) = outcome("nodes_of_2") else {
        panic!("{:?}", outcome("nodes_of_2"))
    };
    assert_eq!(halves.instance.cluster.gpus_per_node, Some(2));
    assert_eq!(halves.instance.cluster.gpus, 16);
    assert!(
        halves
            .instance
            .source
            .contains("8 nodes of 2 GH-96 (not basic_cluster_config.json's 4)"),
        "{}",
        halves.instance.source
    );
    // GH-96 at micro-batch 1 is profiled at degrees 1, 2 and 4: tp 3 would be a guess.
    let e = invalid("tp_3");
    assert!(
        e.contains("pipeline_list[0].tmp_per_stage[0]")
            && e.contains("tensor-parallel degree 3")
            && e.contains("profiles_tmp.json.OPT-350.GH-96.1: profiled degrees 1, 2, 4"),
        "{e}"
    );
    let e = unsupported("mixed_sizes");
    assert!(e.contains("machines of several sizes ([8, 4] GPUs)"), "{e}");
    // A well-formed plan pipeplan does not model: not supported, not invalid.
    let e = unsupported("mixed_dp");
    assert!(
        e.contains("stages of different data-parallel degrees [2, 1]: not supported yet"),
        "{e}"
    );
    // The run's own node count must hold its plan.
    let e = invalid("too_few_nodes");
    assert!(
        e.contains("N: 2 nodes of 4 GH-96 hold 8 GPUs, but the plan uses 16"),
        "{e}"
    );
    // A GPU type the profile lacks is named in the profile, not in the training config.
    let e = invalid("unprofiled_gpu");
    assert!(
        e.starts_with("profiles_tmp.json.OPT-350.H100-80: OPT-350 is not profiled on H100-80"),
        "{e}"
    );
    let e = unsupported("mixed_tp");
    assert!(
        e.contains("replicas of stage 1 at different tensor-parallel degrees [4, 2]"),
        "{e}"
    );
}

const PLAN: &str = r#"{
  "pipeline_list": [{"num_stages": 2, "layers_per_stage": [[0, 1], [2, 3]],
    "tmp_per_stage": [[[[["X", 4, "z"]], 2], [[["X", 4, "z"]], 2]], [[[["X", 4, "z"]], 2], [[["X", 4, "z"]], 2]]],
    "dp": [2, 2]}],
  "mbs": 2, "gbs": 16, "real": 1.5, "max_mem": 1000, "red_grads": 0.25
}"#;

#[test]
fn plan_files_become_plans_and_bad_ones_name_the_field() {
    let sp = SailorPlan::from_json(PLAN).unwrap();
    assert_eq!(sp.measured_iteration_ms, Some(1500.0));
    assert_eq!(sp.measured_grad_sync_ms, Some(250.0));
    let inst = four_layers(8);
    let plan = sp.to_plan(&inst).unwrap();
    assert_eq!(plan.stages[0].gpus, vec![0, 1, 2, 3]);
    assert_eq!(plan.stages[1].gpus, vec![4, 5, 6, 7]);
    assert_eq!((plan.stages[1].dp, plan.stages[1].tp), (2, 2));
    assert_eq!(
        plan.schedule,
        Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: Some(4)
        }
    );
    let bad = |from: &str, to: &str| {
        SailorPlan::from_json(&PLAN.replace(from, to))
            .and_then(|p| p.to_plan(&inst))
            .unwrap_err()
            .to_string()
    };
    let e = bad("\"real\": 1.5", "\"real\": -1");
    assert!(
        e.contains("real") && e.contains("not a positive number"),
        "{e}"
    );
    let e = bad("\"red_grads\": 0.25", "\"red_grads\": \"fast\"");
    assert!(e.contains("red_grads") && e.contains(">= 0"), "{e}");
    let e = bad("\"red_grads\": 0.25", "\"red_grads\": 2.5");
    assert!(
        e.contains("red_grads") && e.contains("longer than the iteration"),
        "{e}"
    );
    for n in ["0", "\"four\"", "2.5"] {
        let e = bad("\"mbs\": 2", &format!("\"N\": {n}, \"mbs\": 2"));
        assert_eq!(
            e, "N: not a positive integer (the nodes the run used)",
            "{n}"
        );
    }
    let none = SailorPlan::from_json(&PLAN.replace(", \"red_grads\": 0.25", "")).unwrap();
    assert_eq!(none.measured_grad_sync_ms, None, "optional");
    assert_eq!(sp.node_sizes, [4]);
    let e = bad(
        "[[[\"X\", 4, \"z\"]], 2], [[[\"X\", 4",
        "[[[\"X\", 0, \"z\"]], 2], [[[\"X\", 4",
    );
    assert!(
        e.contains("tmp_per_stage[0][0]") && e.contains("GPUs per node is not a positive integer"),
        "{e}"
    );
    // Each replica trains the instance's profiled micro-batch (2): nothing is scaled.
    assert_eq!(scaled_profile(&plan, &inst), None);
    let half = SailorPlan::from_json(&PLAN.replace("\"mbs\": 2", "\"mbs\": 1"))
        .and_then(|p| p.to_plan(&inst))
        .unwrap();
    let note = scaled_profile(&half, &inst).unwrap();
    assert!(
        note.contains("micro-batches of 1 per replica") && note.contains("--batch 1"),
        "{note}"
    );
    // Every stage's degree must be one the profile measured at the plan's micro-batch.
    assert!(sp.check_degrees(&[1, 2, 4], "p").is_ok());
    let e = sp
        .check_degrees(&[1, 4], "profiles.M.X.2")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "pipeline_list[0].tmp_per_stage[0]: tensor-parallel degree 2: the profile has no \
         measurement at it (profiles.M.X.2: profiled degrees 1, 4)"
    );
    let e = bad("[[0, 1], [2, 3]]", "[[0, 1], [1, 3]]");
    assert!(
        e.contains("layer 1 is listed 2 times") && e.contains("[2]"),
        "{e}"
    );
    let e = bad("[[0, 1], [2, 3]]", "[[2, 3], [0, 1]]");
    assert!(
        e.contains("layers_per_stage[1]") && e.contains("must follow the model's order"),
        "{e}"
    );
    let e = bad("\"gbs\": 16", "\"gbs\": 18");
    assert!(
        e.contains("gbs") && e.contains("multiple of mbs x dp = 4"),
        "{e}"
    );
    let e = bad("\"dp\": [2, 2]", "\"dp\": [2, 1]");
    assert!(
        e.contains("1 replicas but dp[1] = 1") || e.contains("2 replicas but dp[1] = 1"),
        "{e}"
    );
    let e = bad("\"dp\": [2, 2]}]", "\"dp\": [2, 2]}, {}]");
    assert_eq!(
        e,
        "pipeline_list: 2 pipelines: plans of several pipelines are not supported yet"
    );
    let e = bad("2]]],", "1]]],");
    assert_eq!(
        e,
        "pipeline_list[0].tmp_per_stage[1]: replicas of stage 1 at different tensor-parallel \
         degrees [2, 1]: not supported yet"
    );
    let e = SailorPlan::from_json(PLAN)
        .unwrap()
        .to_plan(&four_layers(4))
        .unwrap_err()
        .to_string();
    assert!(e.contains("uses 8 GPUs but the instance has 4"), "{e}");
}

#[test]
fn one_mistyped_layer_index_is_mended_only_when_one_change_makes_the_plan_valid() {
    let plan =
        |layers: &str| SailorPlan::from_json(&PLAN.replace("[[0, 1], [2, 3]]", layers)).unwrap();
    let mut sp = plan("[[0, 1], [1, 3]]");
    let note = sp.repair_layers(4).expect("one change mends it");
    assert_eq!(
        note,
        "pipeline_list[0].layers_per_stage[1][0]: layer 1, listed twice, read as 2, the one missing"
    );
    assert_eq!(sp.stages[1].layers, [2, 3]);
    assert!(sp.to_plan(&four_layers(8)).is_ok());
    // Valid plans, and plans no single change mends, stay as they are.
    for layers in [
        "[[0, 1], [2, 3]]",
        "[[0, 1], [1, 1]]",
        "[[0, 0], [3, 3]]",
        "[[0, 1], [2, 7]]",
        "[[0, 1], [3, 2]]",
    ] {
        let mut sp = plan(layers);
        let before = sp.clone();
        assert_eq!(sp.repair_layers(4), None, "{layers}");
        assert_eq!(sp, before, "{layers}");
    }
}

/// Four equal layers on `gpus` GPUs (4 per node), each measured at degree 2.
#[test]
fn a_plan_for_other_machines_is_judged_on_the_instances_and_says_so() {
    let mut inst = four_layers(8);
    // An instance that names no GPU type cannot be compared with the file's: no note.
    let quiet = read_noted(PLAN, &inst, false).unwrap();
    assert_eq!(quiet.notes, Vec::<String>::new());
    assert_eq!(quiet.mended, None);
    inst.cluster.gpu = Some("X".into());
    assert_eq!(read_noted(PLAN, &inst, false).unwrap().notes.len(), 0);
    inst.cluster.gpu = Some("A100-40".into());
    inst.cluster.gpus_per_node = Some(8);
    let noted = read_noted(PLAN, &inst, false).unwrap();
    assert_eq!(
        noted.notes,
        [
            "the plan was made for other machines: its GPUs are X, the instance's A100-40 \
          (cluster.gpu); its machines hold 4 GPUs, the instance's nodes 8 \
          (cluster.gpus_per_node); it is judged on the instance's"
        ]
    );
    // The plan is the one the file describes, on the instance's GPUs.
    let sp = SailorPlan::from_json(PLAN).unwrap();
    assert_eq!(noted.plan.plan, sp.to_plan(&inst).unwrap());
    // A micro-batch the instance was not profiled at is told after it.
    let half = read_noted(&PLAN.replace("\"mbs\": 2", "\"mbs\": 1"), &inst, false).unwrap();
    assert_eq!(half.notes.len(), 2);
    assert!(half.notes[1].contains("--batch 1"), "{:?}", half.notes);
}

fn four_layers(gpus: u32) -> Instance {
    let mut inst = shipped("bert-large-s512-b8-8gpu-8gib.json");
    let mut layers = Vec::new();
    for i in 0..4 {
        let mut l = Layer::new(format!("l{i}"), 4.0, 8.0, 1e8, 1e6);
        l.tensor_parallel.push(TensorParallel {
            degree: 2,
            forward: 3.0,
            backward: 5.0,
            weights: 6e7,
            saved: 2e6,
        });
        layers.push(l);
    }
    inst.model.layers = layers;
    inst.model.batch = 2;
    inst.cluster.gpus = gpus;
    inst.cluster.gpus_per_node = Some(4);
    inst.training.micro_batch = Some(2);
    inst.validate().unwrap();
    inst
}

fn tp_stage(gpus: Vec<u32>, dp: u32, tp: u32) -> Plan {
    Plan {
        order: None,
        stages: vec![Stage {
            dp,
            tp,
            gpus,
            ..Stage::single(0, 3, 0)
        }],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(1),
            micro_batch: None,
        },
    }
}

#[test]
fn measured_degrees_replace_the_scaling_rule() {
    let inst = four_layers(8);
    // tp 2 is measured: 4 layers x (3 + 5) ms, no all-reduce added.
    let ev = evaluate(&inst, &tp_stage(vec![0, 1], 1, 2)).unwrap();
    assert!(
        (ev.stage_time[0] - 32.0).abs() < 1e-9,
        "{:?}",
        ev.stage_time
    );
    assert!(
        ev.notes.iter().all(|n| !n.contains("does not measure")),
        "{:?}",
        ev.notes
    );
    // tp 4 is not: 4 layers x (4 + 8) ms / 4 plus the all-reduces of the scaling rule, and the
    // notes say so.
    let ev4 = evaluate(&inst, &tp_stage(vec![0, 1, 2, 3], 1, 4)).unwrap();
    assert!(
        ev4.stage_time[0] > 12.0 && ev4.stage_time[0] < 14.0,
        "{:?}",
        ev4.stage_time
    );
    assert_eq!(
        ev4.notes,
        ["stage 0 (tp 4) at a tensor-parallel degree the instance does not measure (it measures \
          2): their layers are one GPU's numbers divided by the degree, with an all-reduce of \
          each layer's output per pass"]
    );
    // Without measurements the rule is the model, and nothing is said.
    let mut plain = inst.clone();
    plain
        .model
        .layers
        .iter_mut()
        .for_each(|l| l.tensor_parallel.clear());
    let ev = evaluate(&plain, &tp_stage(vec![0, 1, 2, 3], 1, 4)).unwrap();
    assert!(ev.notes.is_empty(), "{:?}", ev.notes);
    // A layer measured at other degrees than layer 0 is refused, naming it.
    let mut bad = inst.clone();
    bad.model.layers[2].tensor_parallel[0].degree = 4;
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("model.layers[2].tensor_parallel"), "{e}");
}

#[test]
fn calibration_constants_act_where_documented() {
    let inst = four_layers(8);
    let plan = Plan {
        order: None,
        stages: vec![
            Stage {
                dp: 1,
                tp: 2,
                gpus: vec![0, 1],
                ..Stage::single(0, 1, 0)
            },
            Stage {
                dp: 1,
                tp: 2,
                gpus: vec![4, 5],
                ..Stage::single(2, 3, 0)
            },
        ],
        schedule: Schedule::OneFOneB {
            micro_batches: Some(4),
            micro_batch: None,
        },
    };
    let base = evaluate(&inst, &plan).unwrap();
    let identity = evaluate(&inst.calibrated(&Calibration::IDENTITY), &plan).unwrap();
    assert_eq!(base, identity);
    let with = |c: Calibration| evaluate(&inst.calibrated(&c), &plan).unwrap();
    let reserved = with(Calibration {
        reserved_memory: 1e9,
        ..Calibration::IDENTITY
    });
    for g in [0usize, 1, 4, 5] {
        assert!((reserved.peak_memory[g] - base.peak_memory[g] - 1e9).abs() < 1.0);
    }
    assert_eq!(reserved.peak_memory[2], 0.0, "unused GPUs hold nothing");
    let slower = with(Calibration {
        compute_factor: 2.0,
        ..Calibration::IDENTITY
    });
    assert!((slower.stage_time[0] - 2.0 * base.stage_time[0]).abs() < 1e-9);
    // Blocking transfers join the stages' time; a slower link lengthens the iteration.
    let blocking = with(Calibration {
        p2p_overlap: 0.0,
        ..Calibration::IDENTITY
    });
    assert!(blocking.stage_time[0] > base.stage_time[0]);
    assert!(blocking.iteration_ms > base.iteration_ms);
    // A slow point-to-point link lengthens the iteration, not the gradient reduction; slow
    // collectives lengthen the reduction of data-parallel stages and nothing else.
    let slow_p2p = with(Calibration {
        p2p_efficiency: 0.01,
        ..Calibration::IDENTITY
    });
    assert!(slow_p2p.iteration_ms > base.iteration_ms);
    let replicated = Plan {
        stages: plan
            .stages
            .iter()
            .map(|s| Stage {
                dp: 2,
                tp: 1,
                ..s.clone()
            })
            .collect(),
        ..plan.clone()
    };
    let sync = |c: Calibration| {
        let ev = evaluate(&inst.calibrated(&c), &replicated).unwrap();
        (ev.grad_sync_ms.unwrap(), ev.iteration_ms.unwrap())
    };
    let (sync0, it0) = sync(Calibration::IDENTITY);
    assert!(sync0 > 0.0);
    let (sync_p2p, _) = sync(Calibration {
        p2p_efficiency: 0.01,
        ..Calibration::IDENTITY
    });
    assert_eq!(sync_p2p, sync0);
    let (sync_slow, it_slow) = sync(Calibration {
        collective_efficiency: 0.5,
        ..Calibration::IDENTITY
    });
    assert!((sync_slow - 2.0 * sync0).abs() < 1e-9 * sync0);
    assert!((it_slow - it0 - sync0).abs() < 1e-9 * it0);
    assert_eq!(
        base.grad_sync_ms,
        Some(0.0),
        "one replica: nothing to reduce"
    );
    let more_acts = with(Calibration {
        activation_factor: 3.0,
        ..Calibration::IDENTITY
    });
    assert!(more_acts.max_memory > base.max_memory);
    assert_eq!(
        inst.calibrated(&Calibration {
            reserved_memory: 1e9,
            ..Calibration::IDENTITY
        })
        .usable_memory(),
        inst.cluster.memory - 1e9
    );
}
