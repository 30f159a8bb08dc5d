//! The analytic generators: parameter counts and FLOPs against published figures, the accounting
//! rules, error messages, and the shipped instances in `instances/` (which must be exactly
//! `generate::shipped()`; run with `PIPEPLAN_REGENERATE=1` to rewrite them).

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::generate::{
    generate, models, network, shipped, Device, GenerateOptions, Optimizer,
};
use pipeplan_formulations::instance::{Cluster, Instance, Precision, ScheduleKind};
use pipeplan_formulations::plan::{Plan, Schedule};
use pipeplan_formulations::InputError;
use std::collections::BTreeSet;
use std::path::PathBuf;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn cluster(gpus: u32, gib: f64) -> Cluster {
    Cluster::single_node(gpus, gib * GIB, 12e9)
}

fn opts(model: &str) -> GenerateOptions {
    GenerateOptions::new(model, cluster(4, 16.0))
}

fn params(model: &str) -> f64 {
    network(&opts(model)).unwrap().params()
}

#[track_caller]
fn assert_within(got: f64, want: f64, rel: f64, what: &str) {
    let err = (got - want).abs() / want;
    assert!(
        err <= rel,
        "{what}: got {got}, published {want} ({:.2}% off, allowed {:.0}%)",
        100.0 * err,
        100.0 * rel
    );
}

/// Parameter counts against the published ones (torchvision's model tables, Hugging Face
/// configurations, the GPT-3 paper, Galvatron-BMW's Table I, Alpa's benchmark names).
#[test]
fn parameter_counts_match_published_figures() {
    let published: [(&str, f64, f64); 18] = [
        ("resnet50", 25_557_032.0, 0.001),
        ("resnet101", 44_549_160.0, 0.001),
        ("inception-v3", 23_834_568.0, 0.10),
        ("densenet121", 7_978_856.0, 0.10),
        ("wide-resnet", 126_886_696.0, 0.001),
        ("wresnet-1b", 1.0e9, 0.10),
        ("wresnet-2b", 2.0e9, 0.10),
        ("bert-large", 335e6, 0.05),
        ("gpt3-2.6b", 2.65e9, 0.05),
        ("gpt3-6.7b", 6.7e9, 0.05),
        ("gpt3-175b", 175e9, 0.01),
        ("llama3-8b", 8.03e9, 0.001),
        ("llama3-70b", 70.6e9, 0.001),
        ("llama3-405b", 405.9e9, 0.001),
        ("mixtral-8x7b", 46.7e9, 0.001),
        ("t5-512-4", 737_668_096.0, 0.001),
        ("vit-huge", 632e6, 0.01),
        ("swin-huge", 701e6, 0.01),
    ];
    for (model, want, rel) in published {
        assert_within(params(model), want, rel, model);
    }
    // Exact where the architecture is fully public.
    assert_eq!(params("resnet50"), 25_557_032.0);
    assert_eq!(params("resnet101"), 44_549_160.0);
    assert_eq!(params("inception-v3"), 23_834_568.0);
    assert_eq!(params("densenet121"), 7_978_856.0);
    assert_eq!(params("wide-resnet"), 126_886_696.0);
    assert_eq!(params("t5-512-4"), 737_668_096.0);
    assert_eq!(params("gpt3-2.6b"), 2_651_553_280.0);
    // Every model of the table has a test row.
    let names: BTreeSet<&str> = models().iter().map(|m| m.name).collect();
    let tested: BTreeSet<&str> = published.iter().map(|p| p.0).collect();
    assert_eq!(names, tested);
}

#[test]
fn resnet50_at_224_px_is_4_1_gmacs() {
    let net = network(&GenerateOptions {
        image_size: Some(224),
        ..opts("resnet50")
    })
    .unwrap();
    assert_within(net.macs(), 4.1e9, 0.10, "ResNet-50 MACs at 224 px");
    // Conv + fc MACs of torchvision's ResNet-50 are 4.0892 G.
    assert_within(net.macs(), 4.0892e9, 0.001, "ResNet-50 MACs at 224 px");
}

#[test]
fn transformer_flops_follow_24_s_h2_plus_4_s2_h() {
    // Forward FLOPs of one GPT block: 24 s h^2 + 4 s^2 h (MLP 4h).
    let net = network(&opts("gpt3-2.6b")).unwrap();
    let (s, h) = (2048.0, 2560.0);
    let block = &net.layers[1];
    assert_eq!(block.name, "layer.0");
    assert_within(
        2.0 * block.macs,
        24.0 * s * h * h + 4.0 * s * s * h,
        1e-12,
        "GPT block FLOPs",
    );
}

#[test]
fn granularity() {
    let layers = |m: &str| network(&opts(m)).unwrap().layers.len();
    assert_eq!(layers("resnet50"), 18);
    assert_eq!(layers("resnet101"), 35);
    assert_eq!(layers("inception-v3"), 17);
    assert_eq!(layers("densenet121"), 63);
    assert_eq!(layers("bert-large"), 26);
    assert_eq!(layers("gpt3-2.6b"), 34);
    assert_eq!(layers("t5-512-4"), 51);
    assert_eq!(layers("vit-huge"), 34);
    assert_eq!(layers("swin-huge"), 37);
}

#[test]
fn every_model_generates_a_valid_instance_that_round_trips() {
    for m in models() {
        let inst = generate(&opts(m.name)).unwrap();
        inst.validate().unwrap();
        let back = Instance::from_json(&inst.to_json()).unwrap();
        assert_eq!(back, inst, "{}", m.name);
        // Deterministic.
        assert_eq!(generate(&opts(m.name)).unwrap().to_json(), inst.to_json());
        assert_eq!(inst.model.batch, m.default_batch);
        for l in &inst.model.layers {
            assert!((l.backward - 2.0 * l.forward).abs() <= 1e-6, "{}", l.name);
            assert!(l.saved.unwrap() > 0.0, "{}: {}", m.name, l.name);
        }
        assert!(!inst.source.is_empty());
    }
}

#[test]
fn bytes_and_times_follow_the_stated_rules() {
    // BERT-Large, mixed precision, batch 8: an encoder layer keeps s h (34 + 5 a s / h) bytes
    // per sample (Korthikanti et al.) and weighs 12.6M parameters x 2 bytes.
    let inst = generate(&opts("bert-large")).unwrap();
    let enc = &inst.model.layers[1];
    assert_eq!(enc.name, "encoder.0");
    let (s, h, a, b) = (512.0, 1024.0, 16.0, 8.0);
    assert_eq!(enc.saved, Some(s * h * (34.0 + 5.0 * a * s / h) * b));
    assert_eq!(enc.weights, 12_596_224.0 * 2.0);
    assert_eq!(enc.output, s * h * 2.0 * b);
    // forward = 2 x MACs x batch / (125 TFLOP/s x 0.3).
    let macs = 12.0 * s * h * h + 2.0 * s * s * h;
    assert!((enc.forward - 2.0 * macs * b / (125e12 * 0.3) * 1e3).abs() < 1e-6);
    assert_eq!(inst.training.optimizer_state_factor, 6.0);
    assert_eq!(inst.training.precision, Some(Precision::Mixed));
    assert_eq!(inst.training.schedule, ScheduleKind::OneFOneB);
    assert_eq!(inst.training.micro_batches, Some(16));
    assert_eq!(inst.model.input, s * b * 8.0);

    // ResNet-50, fp32: weights are parameters x 4 bytes; the MadPipe defaults.
    let inst = generate(&opts("resnet50")).unwrap();
    let w: f64 = inst.model.layers.iter().map(|l| l.weights).sum();
    assert_eq!(w, 25_557_032.0 * 4.0);
    assert_eq!(inst.model.input, 3.0 * 1000.0 * 1000.0 * 4.0 * 8.0);
    assert_eq!(inst.training.schedule, ScheduleKind::Async);
    assert_eq!(inst.training.optimizer_state_factor, 0.0);
    assert_eq!(inst.training.weight_versions, 2);
    assert_eq!(inst.training.micro_batches, None);
    // Stem output: 64 channels at 250 x 250 after the stride-2 convolution and max-pooling.
    assert_eq!(
        inst.model.layers[0].output,
        64.0 * 250.0 * 250.0 * 4.0 * 8.0
    );

    // Options: precision, optimizer, device, efficiency, schedule.
    let o = GenerateOptions {
        precision: Some(Precision::Fp32),
        optimizer: Some(Optimizer::Momentum),
        device: Device::A100,
        efficiency: Some(1.0),
        schedule: Some(ScheduleKind::Gpipe),
        ..opts("resnet50")
    };
    let fast = generate(&o).unwrap();
    assert_eq!(fast.training.optimizer_state_factor, 1.0);
    assert_eq!(fast.training.micro_batches, Some(16));
    let ratio = inst.model.layers[5].forward / fast.model.layers[5].forward;
    assert!((ratio - 19.5 / (15.7 * 0.5)).abs() < 1e-4, "{ratio}");
}

#[test]
fn t5_cuts_carry_the_encoder_output() {
    let inst = generate(&opts("t5-512-4")).unwrap();
    let b = 8.0;
    let enc_out = 512.0 * 1024.0 * 2.0 * b;
    let dec = inst
        .model
        .layers
        .iter()
        .find(|l| l.name == "decoder.3")
        .unwrap();
    assert_eq!(dec.output, 4.0 * 1024.0 * 2.0 * b);
    assert_eq!(dec.cut, Some(dec.output + enc_out));
    // Encoder layers: plain chain, no explicit cut.
    assert!(inst.model.layers[5].cut.is_none());
    // The imbalance: an encoder layer keeps far more activations, a decoder layer more weights.
    let enc = &inst.model.layers[5];
    assert!(enc.saved.unwrap() > 10.0 * dec.saved.unwrap());
    assert!(dec.weights > enc.weights);
}

fn field_of(e: &InputError) -> &str {
    match e {
        InputError::Field { field, .. } => field,
        other => panic!("expected a field error, got {other}"),
    }
}

#[test]
fn bad_options_are_reported_by_field() {
    let e = generate(&opts("resnet-50")).unwrap_err();
    assert_eq!(field_of(&e), "model");
    let msg = e.to_string();
    assert!(msg.contains("unknown model \"resnet-50\""), "{msg}");
    for m in models() {
        assert!(msg.contains(m.name), "{msg}");
    }

    let e = generate(&GenerateOptions {
        batch: 0,
        ..opts("resnet50")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "batch");

    let e = generate(&GenerateOptions {
        image_size: Some(20),
        ..opts("inception-v3")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "image_size");
    assert!(e.to_string().contains("too small"), "{e}");
    assert_eq!(
        field_of(
            &generate(&GenerateOptions {
                image_size: Some(0),
                ..opts("resnet50")
            })
            .unwrap_err()
        ),
        "image_size"
    );

    let e = generate(&GenerateOptions {
        seq_len: Some(1024),
        ..opts("bert-large")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");
    assert!(e.to_string().contains("512"), "{e}");
    let e = generate(&GenerateOptions {
        seq_len: Some(0),
        ..opts("t5-512-4")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");
    let e = generate(&GenerateOptions {
        image_size: Some(224),
        ..opts("gpt3-2.6b")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "image_size");
    let e = generate(&GenerateOptions {
        seq_len: Some(128),
        ..opts("resnet50")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");

    for bad in [0.0, -1.0, 1.5, f64::NAN] {
        let e = generate(&GenerateOptions {
            efficiency: Some(bad),
            ..opts("resnet50")
        })
        .unwrap_err();
        assert_eq!(field_of(&e), "efficiency");
    }
    for bad in [0.0, -3.0, f64::INFINITY] {
        let e = generate(&GenerateOptions {
            device_tflops: Some(bad),
            ..opts("resnet50")
        })
        .unwrap_err();
        assert_eq!(field_of(&e), "device_tflops");
    }
    let e = generate(&GenerateOptions {
        micro_batches: Some(0),
        ..opts("bert-large")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "micro_batches");
    let e = generate(&GenerateOptions::new("resnet50", cluster(0, 8.0))).unwrap_err();
    assert_eq!(field_of(&e), "cluster.gpus");
}

#[test]
fn other_input_sizes() {
    let small = generate(&GenerateOptions {
        image_size: Some(299),
        batch: 32,
        ..opts("inception-v3")
    })
    .unwrap();
    assert_eq!(small.name, "inception-v3-299px-b32-4gpu-16gib");
    let short = generate(&GenerateOptions {
        seq_len: Some(128),
        name: Some("short".into()),
        ..opts("bert-large")
    })
    .unwrap();
    assert_eq!(short.name, "short");
    let odd = generate(&GenerateOptions {
        image_size: Some(300),
        ..opts("swin-huge")
    });
    assert!(odd.is_ok());
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn instance_files(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.strip_suffix(".json").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `instances/*.json` are exactly `shipped()`, byte for byte (pretty JSON + newline).
/// With `PIPEPLAN_REGENERATE=1`, rewrites them (and removes stale `.json` files) instead.
#[test]
fn shipped_instances_are_up_to_date() {
    let dir = repo_root().join("instances");
    let list = shipped();
    let stems: BTreeSet<String> = list.iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(stems.len(), list.len(), "duplicate stems");
    if std::env::var("PIPEPLAN_REGENERATE").as_deref() == Ok("1") {
        std::fs::create_dir_all(&dir).unwrap();
        for stale in instance_files(&dir).difference(&stems) {
            std::fs::remove_file(dir.join(format!("{stale}.json"))).unwrap();
        }
        for (stem, inst) in &list {
            std::fs::write(dir.join(format!("{stem}.json")), inst.to_json() + "\n").unwrap();
        }
    }
    let mut stale = Vec::new();
    for (stem, inst) in &list {
        let path = dir.join(format!("{stem}.json"));
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                if text != inst.to_json() + "\n" {
                    stale.push(format!("{stem}.json differs"));
                }
                let back = Instance::from_path(&path).unwrap();
                assert_eq!(&back, inst, "{stem}: round trip");
            }
            Err(e) => stale.push(format!("{stem}.json: {e}")),
        }
    }
    for extra in instance_files(&dir).difference(&stems) {
        stale.push(format!("{extra}.json is not generated by shipped()"));
    }
    assert!(
        stale.is_empty(),
        "instances/ is out of date (run PIPEPLAN_REGENERATE=1 cargo test -p \
         pipeplan-formulations --test generate): {stale:?}"
    );
}

#[test]
fn shipped_instances_span_the_intended_range() {
    let list = shipped();
    assert!((15..=20).contains(&list.len()), "{}", list.len());
    for (stem, inst) in &list {
        assert_eq!(stem, &inst.name);
        inst.validate().unwrap();
        let gpus = inst.cluster.gpus;
        let gib = inst.cluster.memory / GIB;
        assert!((2..=16).contains(&gpus), "{stem}");
        assert!((3.0..=40.0).contains(&gib), "{stem}");
        assert!(inst.source.contains("Why this instance"), "{stem}");
    }
    let readme = std::fs::read_to_string(repo_root().join("instances/README.md")).unwrap();
    for (stem, _) in &list {
        assert!(
            readme.contains(&format!("`{stem}`")),
            "{stem} missing from instances/README.md"
        );
    }
    for required in [
        "resnet50",
        "resnet101",
        "inception-v3",
        "densenet121",
        "wide-resnet",
        "bert-large",
        "gpt3-2.6b",
        "t5-512-4",
    ] {
        assert!(
            list.iter().any(|(s, _)| s.starts_with(required)),
            "{required} is not shipped"
        );
    }
}

/// Min over contiguous partitions into `p` stages of the max over stages of `cost(stage, k, l)`
/// (layers k..l); returns the last layer of each stage.
fn min_max_partition(l: usize, p: usize, cost: &dyn Fn(usize, usize, usize) -> f64) -> Vec<usize> {
    let mut best = vec![vec![f64::INFINITY; l + 1]; p];
    let mut arg = vec![vec![0usize; l + 1]; p];
    for (i, b) in best[0].iter_mut().enumerate().skip(1) {
        *b = cost(0, 0, i);
    }
    for s in 1..p {
        for i in s + 1..=l {
            for k in s..i {
                let v = best[s - 1][k].max(cost(s, k, i));
                if v < best[s][i] {
                    best[s][i] = v;
                    arg[s][i] = k;
                }
            }
        }
    }
    let mut ends = Vec::with_capacity(p);
    let mut i = l;
    for s in (0..p).rev() {
        ends.push(i - 1);
        if s > 0 {
            i = arg[s][i];
        }
    }
    ends.reverse();
    ends
}

/// The claims of instances/README.md: which shipped instances a compute-balanced contiguous
/// partition fits (under the instance's default schedule, at its least period for async), and
/// that every instance but one has a fitting pure-pipeline plan (async: at a long period, where
/// every stage keeps one micro-batch; 1f1b: a memory-balanced partition).
#[test]
fn memory_claims_of_the_readme_hold() {
    let compute_balanced_fits = ["gpt3-2.6b-s2048-b1-8gpu-40gib"];
    let no_pipeline_fits = ["gpt3-6.7b-s2048-b1-8gpu-16gib"];
    for (stem, inst) in shipped() {
        let c = inst.chain();
        let (l, p) = (c.len(), inst.cluster.gpus as usize);
        let compute = |_s: usize, k: usize, i: usize| c.compute(k, i);
        let plan = Plan::contiguous(
            &min_max_partition(l, p, &compute),
            Schedule::default_for(&inst),
        );
        let fits = evaluate(&inst, &plan).unwrap().fits;
        assert_eq!(
            fits,
            compute_balanced_fits.contains(&stem.as_str()),
            "{stem}: compute-balanced partition fits = {fits}"
        );
        let sync = inst.training.schedule != ScheduleKind::Async;
        let copies = if sync { 1.0 } else { 2.0 } + 1.0 + inst.training.optimizer_state_factor;
        let memory = |s: usize, k: usize, i: usize| {
            let in_flight = if sync { (p - s) as f64 } else { 1.0 };
            let mut m = c.weights(k, i) * copies + in_flight * c.saved(k, i);
            if k > 0 {
                m += 2.0 * c.cut[k - 1];
            }
            if i < l {
                m += 2.0 * c.cut[i - 1];
            }
            m
        };
        let schedule = if sync {
            Schedule::default_for(&inst)
        } else {
            Schedule::Async {
                period: Some(3.0 * c.compute(0, l)),
                pattern: None,
            }
        };
        let plan = Plan::contiguous(&min_max_partition(l, p, &memory), schedule);
        let fits = evaluate(&inst, &plan).unwrap().fits;
        assert_eq!(
            fits,
            !no_pipeline_fits.contains(&stem.as_str()),
            "{stem}: memory-balanced pipeline fits = {fits}"
        );
    }
}

/// Today's language models: the parameter counts of the released checkpoints (Hugging Face
/// `config.json` shapes: Meta-Llama-3-8B / 70B, Llama-3.1-405B, Mixtral-8x7B-v0.1; GPT-3 175B
/// from the GPT-3 paper's Table 2.1).
#[test]
fn todays_language_models_match_their_released_parameter_counts() {
    assert_eq!(params("llama3-8b"), 8_030_261_248.0);
    assert_eq!(params("llama3-70b"), 70_553_706_496.0);
    assert_eq!(params("llama3-405b"), 405_853_388_800.0);
    assert_eq!(params("mixtral-8x7b"), 46_702_792_704.0);
    assert_within(params("gpt3-175b"), 175e9, 0.01, "gpt3-175b");
    assert_eq!(network(&opts("gpt3-175b")).unwrap().layers.len(), 98);
    assert_eq!(network(&opts("llama3-405b")).unwrap().layers.len(), 128);
}

/// A mixture-of-experts block holds every expert but each token runs two: at one token its
/// multiply-accumulates are the weights a token touches (attention, two experts, the router)
/// plus the two score products.
#[test]
fn mixtral_counts_every_expert_but_computes_two() {
    let net = network(&GenerateOptions {
        seq_len: Some(1),
        ..opts("mixtral-8x7b")
    })
    .unwrap();
    let (h, dkv, ff, experts) = (4096.0, 1024.0, 14336.0, 8.0);
    let block = &net.layers[1];
    let attention = 2.0 * h * h + 2.0 * h * dkv;
    assert_eq!(
        block.params,
        2.0 * h + attention + experts * 3.0 * h * ff + h * experts
    );
    assert_eq!(
        block.macs,
        attention + 2.0 * h + 2.0 * 3.0 * h * ff + h * experts
    );
    let dense = network(&GenerateOptions {
        seq_len: Some(1),
        ..opts("llama3-8b")
    })
    .unwrap();
    assert_eq!(dense.layers[1].macs, attention + 2.0 * h + 3.0 * h * ff);
}

#[test]
fn context_lengths_are_checked() {
    let e = network(&GenerateOptions {
        seq_len: Some(8193),
        ..opts("llama3-8b")
    })
    .unwrap_err();
    assert!(e.to_string().contains("8192 tokens of context"), "{e}");
}

/// `blocks` repeats a decoder-only model's block: the chain has blocks + 2 layers, every block
/// the model's own, and the name and title say how many; other models and zero are refused.
#[test]
fn blocks_repeat_a_decoder_block() {
    let base = network(&opts("gpt3-6.7b")).unwrap();
    let o = GenerateOptions {
        blocks: Some(1248),
        ..opts("gpt3-6.7b")
    };
    let long = network(&o).unwrap();
    assert_eq!(long.layers.len(), 1250);
    assert_eq!(long.layers[700].macs, base.layers[1].macs);
    assert_eq!(long.layers[700].params, base.layers[1].params);
    assert_eq!(long.layers[1249].name, "head");
    let inst = generate(&o).unwrap();
    assert_eq!(inst.name, "gpt3-6.7b-1248blocks-s2048-b1-4gpu-16gib");
    assert_eq!(inst.model.name, "GPT-3 6.7B with 1248 decoder blocks");
    let llama = GenerateOptions {
        blocks: Some(510),
        ..opts("llama3-8b")
    };
    assert_eq!(generate(&llama).unwrap().num_layers(), 512);
    // The model's own count is the default.
    assert_eq!(generate(&opts("llama3-405b")).unwrap().num_layers(), 128);
    let e = generate(&GenerateOptions {
        blocks: Some(4),
        ..opts("resnet50")
    })
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("blocks: resnet50 has a fixed layout"), "{e}");
    for b in [0, 100_001] {
        let e = generate(&GenerateOptions {
            blocks: Some(b),
            ..opts("gpt3-2.6b")
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("{b} decoder blocks; between 1 and 100000")),
            "{e}"
        );
    }
}
