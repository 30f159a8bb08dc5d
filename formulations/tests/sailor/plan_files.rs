//! Plan files as plans: bad ones name their field, a mistyped layer index is mended only when
//! one change makes the plan valid, a plan for other machines says so.

use super::*;

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
