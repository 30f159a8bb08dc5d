//! Galvatron formulations: importer, strategy space, cost model (hand-computed values on the
//! hand-written fixtures of `tests/fixtures/galvatron/`), derivation, and input errors.

use pipeplan_formulations::evaluate::breakdown::memory_breakdown;
use pipeplan_formulations::galvatron::cost::{
    chunk_like_torch, layer_memory, layer_time, other_time, pipeline_cost, transition, MemoryCall,
    PipelineCall,
};
use pipeplan_formulations::galvatron::derive::{derive, layer_types};
use pipeplan_formulations::galvatron::fit::FitMethod;
use pipeplan_formulations::galvatron::import::{import, import_file};
use pipeplan_formulations::galvatron::{strategy, LayerTypes, PipelineType, Settings, Strategy};
use pipeplan_formulations::{evaluate, Instance, Plan, Schedule, Stage};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/galvatron")
}

fn tiny() -> (Instance, LayerTypes) {
    let inst = import_file(&fixtures().join("config.json"), &fixtures()).expect("imports");
    let lt = LayerTypes::from_instance(&inst)
        .unwrap()
        .expect("extension");
    (inst, lt)
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-12), "{a} != {b}");
}

fn st(pp: u32, tp: u32, dp: u32, consec: Option<bool>, fsdp: Option<bool>, cpt: bool) -> Strategy {
    Strategy {
        pp,
        tp,
        dp,
        consec,
        fsdp,
        cpt,
        sp: false,
    }
}

#[test]
fn import_reads_profiles_settings_and_hardware() {
    let (inst, lt) = tiny();
    assert_eq!(inst.num_layers(), 8);
    assert_eq!(inst.cluster.gpus, 4);
    assert_eq!(lt.counts(), vec![4, 4]);
    assert_eq!(lt.types[1].parameter_mb, 64.0);
    assert_eq!(lt.types[0].forward_ms_per_sample, 2.0);
    assert_eq!(lt.other.forward_ms_per_sample, 1.0);
    assert!(lt.settings.zero2() && lt.settings.settle_bsz == 16);
    assert_eq!(lt.settings.pipeline_type, PipelineType::PipedreamFlush);
    close(lt.hardware.coe("4").unwrap(), 0.01);
    close(lt.hardware.coe("2_0").unwrap(), 1.0 / 80.0);
    close(lt.hardware.coe("2_1").unwrap(), 1.0 / 125.0);
    close(lt.hardware.p2p_ms_per_mb["2"], 1.0 / 50.0);
    assert_eq!(lt.hardware.coe("1"), Some(0.0));
    assert!(
        inst.source.contains("some_engine_flag_pipeplan_ignores"),
        "{}",
        inst.source
    );
    // The instance round-trips through JSON with its extension.
    let back = Instance::from_json(&inst.to_json()).unwrap();
    assert_eq!(LayerTypes::from_instance(&back).unwrap().unwrap(), lt);
}

#[test]
fn imported_weights_follow_the_engines_precision() {
    const MB: f64 = 1048576.0;
    // bf16: the engine's parameter_size is 4 bytes per parameter; the chain stores the 2-byte
    // weights, with the fp32 master copy and Adam's moments as 6 weight-sized states. fp32: the
    // weights are parameter_size, with the 2 moments. Both are the engine's 4 x parameter_size.
    let mut fp32 = config_doc();
    fp32["config"]["mixed_precision"] = "fp32".into();
    let fp32 = import(&fp32, &fixtures()).unwrap();
    let (bf16, lt) = tiny();
    for (inst, bytes, factor) in [(&bf16, 2.0, 6.0), (&fp32, 4.0, 2.0)] {
        assert_eq!(inst.training.optimizer_state_factor, factor);
        let parameter_mb = [lt.types[0].parameter_mb, lt.types[1].parameter_mb];
        for (l, layer) in inst.model.layers.iter().enumerate() {
            let p = parameter_mb[l / 4];
            close(layer.weights, p * MB * bytes / 4.0);
            close(layer.weights * (2.0 + factor), 4.0 * p * MB);
        }
    }
    // ZeRO-2 over 4 replicas keeps the bf16 weights whole and divides the rest: 1/8 of the
    // model states whole, 7/8 divided, the engine's zero2_ratio (without its 0.003 bias).
    let mut plan = Plan {
        order: None,
        stages: vec![Stage {
            gpus: (0..4).collect(),
            dp: 4,
            ..Stage::single(0, 7, 0)
        }],
        schedule: Schedule::one_f_one_b_star(None),
    };
    plan.stages[0].set_zero_stage(2);
    let ev = evaluate(&bf16, &plan).unwrap();
    let part = &memory_breakdown(&bf16, &plan, &ev)[0];
    let states: f64 = 4.0 * (lt.types[0].parameter_mb + lt.types[1].parameter_mb) * 4.0 * MB;
    close(part.weights, states / 8.0);
    close(part.gradients + part.optimizer, states * 7.0 / 8.0 / 4.0);
}

#[test]
fn ulysses_twins_follow_their_tp_strategies() {
    let (_, lt) = tiny();
    let mut s = lt.settings.clone();
    let plain = strategy::generate(&s);
    s.sp_space = "tp+sp".into();
    let both = strategy::generate(&s);
    // Every tp > 1 strategy (ckpt copies included) gains its Ulysses twin right after it.
    let mut want = Vec::new();
    for st in &plain {
        want.push(*st);
        if st.tp > 1 {
            want.push(Strategy { sp: true, ..*st });
        }
    }
    assert_eq!(both, want);
    assert!(both.iter().any(|x| x.sp) && both.iter().all(|x| !x.sp || x.tp > 1));
    assert_eq!(
        both.iter().find(|x| x.sp && x.cpt).unwrap().to_string(),
        "1-2-2*-c-sp"
    );
    // The engine refuses `sp` alone; anything else is not an sp_space.
    for bad in ["sp", "ulysses"] {
        s.sp_space = bad.into();
        let e = s.check("config").unwrap_err().to_string();
        assert!(e.contains("config.sp_space"), "{e}");
    }
}

/// The tiny config under `sp_space tp+sp` with the sequence-parallel times `entries` (key, ms):
/// the import's result.
fn import_with_sp_times(entries: &[(String, f64)]) -> Result<Instance, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sp_time_tiny.json");
    let body: serde_json::Map<String, serde_json::Value> = entries
        .iter()
        .map(|(k, v)| (k.clone(), (*v).into()))
        .collect();
    std::fs::write(&file, serde_json::Value::Object(body).to_string()).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("config.json")).unwrap())
            .unwrap();
    doc["config"]["sp_space"] = "tp+sp".into();
    doc["config"]["sp_time_path"] = file.display().to_string().into();
    import(&doc, &fixtures()).map_err(|e| e.to_string())
}

#[test]
fn sequence_parallel_times_import_and_bad_files_are_named() {
    // Groups of 2 and 4 GPUs, 8 sizes each (1 to 128 MB).
    let times = |groups: &[u32], sizes: u32| -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for &n in groups {
            for k in 0..sizes {
                let mb = 1u64 << k;
                out.push((format!("allreduce_size_{n}_{mb}MB_time"), 0.2 * mb as f64));
                out.push((format!("all2all_size_{n}_{mb}MB_time"), 0.3 * mb as f64));
            }
        }
        out
    };
    let inst = import_with_sp_times(&times(&[2, 4], 8)).unwrap();
    let lt = LayerTypes::from_instance(&inst).unwrap().unwrap();
    assert!(lt.settings.ulysses());
    // All-reduce times halved, as the engine reads them; the lines exact.
    let ar = &lt.hardware.sp_allreduce["4"];
    assert!(ar.measured.contains(&(1, 0.1)), "{:?}", ar.measured);
    close(ar.slope, 0.1);
    close(lt.hardware.sp_all2all["2"].slope, 0.3);
    // Fewer than 8 sizes, a key not of the engine's form, a group the search needs missing.
    let e = import_with_sp_times(&times(&[2, 4], 7)).unwrap_err();
    assert!(
        e.contains("needs at least 8") && e.contains("sp_time_"),
        "{e}"
    );
    let mut bad = times(&[2, 4], 8);
    bad.push(("allreduce_size_x_1MB_time".into(), 1.0));
    let e = import_with_sp_times(&bad).unwrap_err();
    assert!(e.contains("allreduce_size_x_1MB_time"), "{e}");
    let e = import_with_sp_times(&times(&[2], 8)).unwrap_err();
    assert!(e.contains("sp_allreduce.4"), "{e}");
}

#[test]
fn ulysses_needs_sequence_parallel_times_for_every_tp_group() {
    use pipeplan_formulations::galvatron::profile::Collective;
    let (_, lt) = tiny();
    let mut u = lt.clone();
    u.settings.sp_space = "tp+sp".into();
    let layers: usize = u.counts().iter().sum();
    let e = u.check(layers).unwrap_err().to_string();
    assert!(e.contains("hardware.sp_allreduce.2"), "{e}");
    // Eight sizes, 1 to 128 MB, 0.1 ms + 0.01 ms per MB: the line is fitted exactly.
    let c = Collective::fit(
        (0..8)
            .map(|k| (1u64 << k, 0.1 + 0.01 * (1u64 << k) as f64))
            .collect(),
        FitMethod::Engine,
    )
    .unwrap();
    assert!((c.slope - 0.01).abs() < 1e-12 && (c.intercept - 0.1).abs() < 1e-12);
    // A measured size is read as measured; any other from the line.
    assert_eq!(c.time_ms(4.0 * 1024.0 * 1024.0), c.measured[2].1);
    assert!((c.time_ms(3.0 * 1024.0 * 1024.0) - 0.13).abs() < 1e-12);
    for tp in ["2", "4"] {
        u.hardware.sp_allreduce.insert(tp.into(), c.clone());
    }
    u.hardware.sp_all2all.insert("2".into(), c.clone());
    let e = u.check(layers).unwrap_err().to_string();
    assert!(e.contains("hardware.sp_all2all.4"), "{e}");
    u.hardware.sp_all2all.insert("4".into(), c);
    u.check(layers).unwrap();
}

#[test]
fn strategy_tree_and_engine_options() {
    let (_, lt) = tiny();
    let mut s = lt.settings.clone();
    // 4 GPUs: pp1 {tp1 dp4 x2, tp2 dp2 x4, tp4}, pp2 {tp1 dp2 x2, tp2}, pp4 -> 11, x2 with ckpt.
    assert_eq!(strategy::generate(&s).len(), 22);
    s.disable_ckpt = true;
    assert_eq!(strategy::generate(&s).len(), 11);
    s.disable_sdp = true;
    assert_eq!(strategy::generate(&s).len(), 7);
    s.disable_tp_consec = true;
    assert_eq!(strategy::generate(&s).len(), 6);
    s.max_tp_deg = 2;
    s.max_pp_deg = 2;
    // Left: pp1 tp1 dp4, pp1 tp2 dp2 consec, pp2 tp1 dp2, pp2 tp2 dp1.
    assert_eq!(strategy::generate(&s).len(), 4);
    s.disable_pp = true;
    assert!(strategy::generate(&s).iter().all(|x| x.pp == 1));
    let mut s = lt.settings.clone();
    s.disable_dp = true;
    s.check("config").unwrap();
    assert!(strategy::generate(&s).iter().all(|x| x.fsdp != Some(false)));
    // The engine asserts against disable_dp with sdp off where its filters apply (dp+tp and
    // dp+pp turn sdp off), and takes both flags in a one-strategy preset, which skips them.
    for (space, disable_sdp, refused) in [
        ("full", true, Some("disable_sdp")),
        ("dp+tp", false, Some("search_space dp+tp")),
        ("dp+pp", false, Some("search_space dp+pp")),
        ("3d", true, None),
        ("sdp", true, None),
    ] {
        let t = Settings {
            search_space: space.into(),
            disable_sdp,
            ..s.clone()
        };
        match (t.check("config"), refused) {
            (Err(e), Some(why)) => {
                let e = e.to_string();
                assert!(e.contains("config.disable_dp") && e.contains(why), "{e}");
            }
            (Ok(()), None) => assert_eq!(strategy::generate(&t).len(), 1),
            (got, _) => panic!("{space}, disable_sdp {disable_sdp}: {got:?}"),
        }
    }
    s.search_space = "dp".into();
    assert_eq!(
        strategy::generate(&s),
        vec![st(1, 1, 4, None, Some(false), false)]
    );
}

#[test]
fn memory_matches_hand_computation() {
    let (_, lt) = tiny();
    let call = MemoryCall {
        bsz: 16,
        mbsz: 4,
        min_tp: 1,
        stage: 0,
        embed_sdp: false,
        vsp: false,
        pipeline: PipelineType::PipedreamFlush,
    };
    let m = layer_memory(&lt, 0, &st(1, 1, 4, None, Some(false), false), &call).unwrap();
    // One chunk of 4 samples per replica; ZeRO-2 (mixed, 1 chunk): 7/8 (1/4 + 0.003) + 1/8.
    let z2 = 7.0 / 8.0 * (0.25 + 0.003) + 1.0 / 8.0;
    close(m.activation, 80.0 * 4.0);
    close(m.model_states, 192.0 * z2);
    close(m.total, 192.0 * z2 + 320.0);
    let (k1, o1) = &m.other[0];
    assert_eq!(*k1, 1);
    close(o1[0], 400.0 * z2 + 40.0 * 4.0 + 1024.0);
    let (k2, o2) = &m.other[1];
    assert_eq!(*k2, 2);
    let z2_2 = 7.0 / 8.0 * (0.5 + 0.003) + 1.0 / 8.0;
    close(o2[0], 200.0 * z2_2 + 20.0 * 8.0 + 1024.0);

    // 1F1B: pp 2, 4 chunks of 2: stage 0 keeps 2 micro-batches, stage 1 keeps 1.
    let s = st(2, 1, 2, None, Some(false), false);
    let c0 = MemoryCall { mbsz: 2, ..call };
    let c1 = MemoryCall { stage: 1, ..c0 };
    close(layer_memory(&lt, 0, &s, &c0).unwrap().activation, 320.0);
    close(layer_memory(&lt, 0, &s, &c1).unwrap().activation, 160.0);
    let z2_async = 6.0 / 8.0 * (0.5 + 0.003) + 2.0 / 8.0;
    close(
        layer_memory(&lt, 0, &s, &c0).unwrap().model_states,
        192.0 * z2_async,
    );
    // GPipe: every stage keeps all chunks, i.e. the activation of one micro-batch per chunk.
    let g = MemoryCall {
        pipeline: PipelineType::Gpipe,
        ..c1
    };
    close(layer_memory(&lt, 0, &s, &g).unwrap().activation, 160.0);
    // Checkpointing keeps only the layer input.
    let sc = st(1, 1, 4, None, Some(true), true);
    let mc = layer_memory(&lt, 1, &sc, &call).unwrap();
    close(mc.activation, 8.0 * 4.0);
    close(mc.model_states, 256.0 * (0.25 + 0.003));
}

#[test]
fn time_matches_hand_computation() {
    let (_, lt) = tiny();
    // dp 4: fct 32, bct 64, gradient 144 MB (halved for bf16) at 0.01 ms/MB, overlap 1.25.
    let dp = st(1, 1, 4, None, Some(false), false);
    close(
        layer_time(&lt, 0, &dp, 16.0, false).unwrap(),
        (32.0 + 1.8 + (64.0 - 1.8 / 1.25)) * 0.001 / 4.0,
    );
    close(
        layer_time(&lt, 0, &dp, 16.0, true).unwrap(),
        96.0 * 0.001 / 4.0,
    );
    // tp 4: two allreduces fwd + bwd of 16 x 512 x 1024 fp32 values, halved for bf16.
    let tp = st(1, 4, 1, None, None, false);
    close(
        layer_time(&lt, 0, &tp, 16.0, false).unwrap(),
        (32.0 + 64.0 + 384.0 * 0.01) * 0.001 / 4.0,
    );
    // Checkpointing adds a forward to the backward and half again to the tp traffic.
    let tpc = st(1, 4, 1, None, None, true);
    close(
        layer_time(&lt, 0, &tpc, 16.0, false).unwrap(),
        (32.0 + 96.0 + 576.0 * 0.01) * 0.001 / 4.0,
    );
    // pp 2 adds the p2p message 2 x 2 x 8 x 512 x 1024 x 4 B / 2 = 64 MB at 1/50 ms/MB.
    let pp = st(2, 2, 1, None, None, false);
    let base = 2.0 * 16.0 / 2.0 * 4.0;
    let tp_msg = 2.0 * 1.0 / 2.0 * (16.0 * 512.0 * 1024.0 * 16.0 / 1048576.0) * 4.0 / 2.0;
    let expect = (base + 2.0 * base + tp_msg * (1.0 / 125.0) + 64.0 / 50.0) * 0.001 / 4.0;
    close(layer_time(&lt, 0, &pp, 16.0, false).unwrap(), expect);
}

#[test]
fn other_time_pipeline_cost_and_transitions() {
    let (_, lt) = tiny();
    // pp 1, vocab tp 1 on 4 GPUs, micro-batch 4: forward 4 x 1 ms, backward twice that, the
    // embedding gradient 400/4 MB over dp 4 (0.01 ms/MB x 3/4) half in the backward, overlapped
    // at 1.25 (a compute of c next to a message of m takes m + (1.25 c - m) / 1.25).
    let o = other_time(&lt, 4, 1, 1, 4, false, false).unwrap();
    assert_eq!(o.iter().map(|x| x.vtp).collect::<Vec<_>>(), vec![1, 2, 4]);
    let comm = 100.0 * 0.01 * 0.75;
    let backward = comm * 0.5 + (8.0 * 1.25 - comm * 0.5) / 1.25;
    close(o[0].dp[0], 0.001 * (4.0 + backward));
    close(o[0].pipeline[0], 0.001 * (4.0 + 8.0));
    // Under embed_sdp the gradient moves half in the forward and whole in the backward.
    let sdp = other_time(&lt, 4, 1, 1, 4, true, false).unwrap();
    let forward = comm * 0.5 + (4.0 * 1.25 - comm * 0.5) / 1.25;
    close(
        sdp[0].dp[0],
        0.001 * (forward + comm + (8.0 * 1.25 - comm) / 1.25),
    );
    let s = vec![st(1, 1, 4, None, Some(false), false); 8];
    let pc = pipeline_cost(
        &lt,
        &s,
        &PipelineCall {
            partition: &[8],
            chunks: &[1, 1],
            bsz: 16,
            min_tp: 1,
            other_time: &o[0].pipeline,
        },
    )
    .unwrap();
    let compute: f64 = (0..8)
        .map(|l| layer_time(&lt, l / 4, &s[l], 16.0, true).unwrap())
        .sum::<f64>()
        + o[0].pipeline[0];
    let reduce: f64 = (0..8)
        .map(|l| layer_time(&lt, l / 4, &s[l], 16.0, false).unwrap())
        .sum();
    close(pc.iteration, compute + (reduce - compute).max(0.0));
    // Transitions (the engine's inter_layer_cost): tp 1 -> 2 pays (2-1)/2 x mbsz x (2 // min_tp)
    // x seq x hidden x 2 B at the coefficient of the larger tp group (consecutive: "2_1").
    let a = st(1, 1, 4, None, Some(false), false);
    let b = st(1, 2, 2, Some(true), Some(false), false);
    close(
        transition(&lt, 0, &a, &b, 4, 1).unwrap(),
        0.5 * 4.0 * 2.0 * 512.0 * 1024.0 * 2.0 * (1.0 / 125.0) * 1e-7,
    );
    close(
        transition(&lt, 0, &a, &b, 4, 2).unwrap(),
        0.5 * 4.0 * 1.0 * 512.0 * 1024.0 * 2.0 * (1.0 / 125.0) * 1e-7,
    );
    assert_eq!(transition(&lt, 0, &b, &a, 4, 1).unwrap(), 0.0);
    // Under sequence parallelism any change of tp pays, at the larger group's coefficient.
    let mut sp = lt.clone();
    sp.settings.sequence_parallel = true;
    close(
        transition(&sp, 0, &b, &a, 4, 1).unwrap(),
        transition(&lt, 0, &a, &b, 4, 1).unwrap(),
    );
    let bf = Strategy {
        fsdp: Some(true),
        ..b
    };
    assert_eq!(transition(&lt, 0, &b, &bf, 4, 1).unwrap(), 1e-9);
    let mut off = lt.clone();
    off.settings.quirks.transition_biases = false;
    assert_eq!(transition(&off, 0, &b, &bf, 4, 1).unwrap(), 0.0);
    assert_eq!(chunk_like_torch(10, 4), vec![3, 3, 3, 1]);
    assert_eq!(chunk_like_torch(4, 3), vec![2, 2]);
}

#[test]
fn derivation_covers_every_shipped_instance() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../instances");
    let mut adam_checked = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let inst = Instance::from_path(&p).unwrap();
        let searched = layer_types(&inst).unwrap();
        let lt = searched.layer_types;
        assert!(searched.derived);
        assert_eq!(lt.counts().iter().sum::<usize>(), inst.num_layers());
        let chain = inst.chain();
        let l = inst.num_layers() - 1;
        let mb = inst.micro_batch() as f64;
        close(lt.types[l].forward_ms_per_sample * mb, chain.forward[l]);
        close(
            lt.types[l].activation(1).unwrap() * mb * 1048576.0,
            chain.saved[l],
        );
        // The engine counts 4 bytes per parameter: the stored weights with fp32, twice them
        // with 2-byte mixed-precision weights.
        let per_parameter = if lt.settings.mixed() { 2.0 } else { 1.0 };
        close(
            lt.types[l].parameter_mb * 1048576.0,
            chain.weights[l] * per_parameter,
        );
        // Under Adam (factor 2 in fp32, 6 with an fp32 master copy) the engine's model states,
        // 4 x parameter_size, are the chain's: weights, gradients and optimizer states.
        let adam = if lt.settings.mixed() { 6.0 } else { 2.0 };
        if inst.training.optimizer_state_factor == adam {
            adam_checked += 1;
            close(
                4.0 * lt.types[l].parameter_mb * 1048576.0,
                chain.weights[l] * (2.0 + adam),
            );
        }
        assert_eq!(lt.settings.gpu_num(), inst.cluster.gpus);
    }
    assert!(adam_checked > 0, "no shipped instance trains with Adam");
    // An extension in the instance wins over the derivation.
    let (inst, lt) = tiny();
    let searched = layer_types(&inst).unwrap();
    assert_eq!((searched.layer_types, searched.derived), (lt, false));
    assert_ne!(derive(&inst).types.len(), 2);
}

fn config_doc() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("config.json")).unwrap()).unwrap()
}

/// A temporary copy of the fixtures folder, removed when dropped.
fn copy_fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn folder_lookup_uses_the_engine_file_names() {
    // Profile paths that are folders are searched for the engine's conventional names.
    let tmp = copy_fixtures();
    let dir = tmp.path();
    std::fs::rename(
        dir.join("handwritten_time_profile.json"),
        dir.join("computation_profiling_bf16_tiny.json"),
    )
    .unwrap();
    std::fs::rename(
        dir.join("handwritten_memory_profile.json"),
        dir.join("memory_profiling_bf16_tiny.json"),
    )
    .unwrap();
    let mut doc = config_doc();
    doc["config"]["time_profiling_path"] = serde_json::json!(".");
    doc["config"]["memory_profiling_path"] = serde_json::json!(".");
    let by_folder = import(&doc, dir).expect("imports by folder");
    let by_file = import(&config_doc(), &fixtures()).expect("imports by file");
    assert_eq!(
        serde_json::to_value(&by_folder).unwrap(),
        serde_json::to_value(&by_file).unwrap()
    );
    std::fs::remove_file(dir.join("memory_profiling_bf16_tiny.json")).unwrap();
    let e = import(&doc, dir).unwrap_err().to_string();
    assert!(e.contains("memory_profiling_bf16_tiny.json"), "{e}");
}

#[test]
fn missing_profile_keys_are_named() {
    let tmp = copy_fixtures();
    let dir = tmp.path();
    let mem = dir.join("handwritten_memory_profile.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mem).unwrap()).unwrap();
    m.as_object_mut().unwrap().remove("layertype_1");
    std::fs::write(&mem, m.to_string()).unwrap();
    let e = import(&config_doc(), dir).unwrap_err().to_string();
    assert!(
        e.contains("layertype_1") && e.contains("layer type 1") && e.contains("memory_profile"),
        "{e}"
    );

    let ar = dir.join("allreduce_bandwidth_1nodes_4gpus_per_node.json");
    std::fs::write(&ar, r#"{"allreduce_size_4_consec_1": 100.0}"#).unwrap();
    std::fs::copy(fixtures().join("handwritten_memory_profile.json"), &mem).unwrap();
    let e = import(&config_doc(), dir).unwrap_err().to_string();
    assert!(e.contains("allreduce_size_2_consec_0"), "{e}");

    let mut doc = config_doc();
    doc["config"]["model_layer_configs"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"hidden_size": 8, "layer_num": 1, "seq_len": 512}));
    let e = import(&doc, &fixtures()).unwrap_err().to_string();
    assert!(
        e.contains("layertype_2"),
        "an unknown layer type is named: {e}"
    );

    // A static-mode memory profile keyed by sequence length without the type's own length.
    let mut doc = config_doc();
    doc["config"]["model_layer_configs"][0]["seq_len"] = 257.into();
    let e = import(&doc, &fixtures()).unwrap_err().to_string();
    assert!(
        e.contains("layertype_0")
            && e.contains("no entry for sequence length 257 (profiled: 512)")
            && e.contains("handwritten_memory_profile.json"),
        "{e}"
    );

    let mut doc = config_doc();
    doc["config"]["memory_constraint"] = serde_json::json!(-1);
    let e = import(&doc, &fixtures()).unwrap_err().to_string();
    assert!(e.contains("config.memory_constraint"), "{e}");
}

#[test]
fn bad_extension_fields_are_named() {
    let (inst, _) = tiny();
    let mut bad = inst.clone();
    bad.extensions.get_mut("layer_types").unwrap()["types"][0]["layers"] = serde_json::json!(3);
    let e = LayerTypes::from_instance(&bad).unwrap_err().to_string();
    assert!(
        e.contains("layer counts sum to 7") && e.contains("8 layers"),
        "{e}"
    );
    let mut bad = inst.clone();
    bad.extensions.get_mut("layer_types").unwrap()["types"][1]["activation_mb_per_sample"]["3"] =
        serde_json::json!(1.0);
    let e = LayerTypes::from_instance(&bad).unwrap_err().to_string();
    assert!(e.contains("types[1].activation_mb_per_sample.3"), "{e}");
    let mut bad = inst;
    bad.extensions.get_mut("layer_types").unwrap()["types"][0]["colour"] = serde_json::json!(1);
    let e = LayerTypes::from_instance(&bad).unwrap_err().to_string();
    assert!(
        e.contains("extensions.layer_types") && e.contains("colour"),
        "{e}"
    );
    // A missing activation for a tp degree is reported by the cost model with the layer type.
    let (_, mut lt) = tiny();
    lt.types[0].activation_mb_per_sample.remove("4");
    let call = MemoryCall {
        bsz: 16,
        mbsz: 4,
        min_tp: 1,
        stage: 0,
        embed_sdp: false,
        vsp: false,
        pipeline: PipelineType::Gpipe,
    };
    let e = layer_memory(&lt, 0, &st(1, 4, 1, None, None, false), &call).unwrap_err();
    assert!(e.contains("layertype_0") && e.contains("tp 4"), "{e}");
}
