//! An instance from Sailor's profiles: every layer with its tensor-parallel measurements, the
//! profile's data type, and selections the profile lacks.

use super::*;

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
