//! Export to every runtime format, without peers' files:
//! - every plan of every algorithm on shipped instances either exports (and, for the formats
//!   pipeplan reads back, reads back as the same plan) or is refused with reasons and a nearest
//!   plan that is valid and that the runtime runs;
//! - the grammar of each written file: Megatron-LM's arguments (known flags, consistent degrees,
//!   layout string), torchtitan's TOML (parsed, degrees, split points), DeepSpeed's JSON (batch
//!   identity, ZeRO stage, `parts`);
//! - hand-built plans for each mapping (uneven first / last stages, the layout string, block
//!   recomputation, selective checkpointing, strided tp groups, ZeRO stages per runtime).

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::evaluate::explain::explain;
use pipeplan_formulations::export::deepspeed::partition_uniform;
use pipeplan_formulations::export::layout;
use pipeplan_formulations::export::{cautions, export, ExportError, Format, RuntimePlan};
use pipeplan_formulations::plan_from::{PlanFormat, ReadOptions};
use pipeplan_formulations::testing::shipped;
use pipeplan_formulations::{Instance, Plan, Schedule, Stage};
use pipeplan_solvers::harness::run;
use pipeplan_solvers::{registry, SolveOptions};
use serde_json::Value;

/// Reads a written file back where pipeplan has a reader (PipeDream: with its own modules).
fn read_back(format: Format, inst: &Instance, rp: &RuntimePlan, text: &str) {
    let (pf, opts) = match format {
        Format::Galvatron => (PlanFormat::Galvatron, ReadOptions::default()),
        Format::Pipedream => {
            let mut g = String::new();
            for (s, st) in rp.plan.stages.iter().enumerate() {
                for l in st.first..=st.last {
                    g.push_str(&format!(
                        "{} -- x -- stage_id={s}\n",
                        inst.model.layers[l].name
                    ));
                }
            }
            (
                PlanFormat::Pipedream,
                ReadOptions {
                    modules: Some(("modules.txt".into(), g)),
                    ..ReadOptions::default()
                },
            )
        }
        _ => return,
    };
    let back = pf
        .read(text, inst, &opts)
        .unwrap_or_else(|e| panic!("{format}: {e}\n{text}"));
    let mut want = explicit(inst, &rp.plan);
    if let (
        Format::Pipedream,
        Schedule::Async {
            period: Some(t),
            pattern: None,
        },
    ) = (format, &want.schedule)
    {
        // PipeDream's runtime paces itself: a period fixed at that pace (the only one it
        // exports) reads back as none, at the same evaluated period.
        let p = evaluate(inst, &back.plan).unwrap().period_ms.unwrap();
        assert!(
            (p - t).abs() <= 1e-9 * t,
            "{format}: period {p} read back, {t} exported"
        );
        want.schedule = Schedule::one_f_one_b_star(None);
    }
    assert_eq!(
        per_layer(&back.plan),
        per_layer(&want),
        "{format}: read back as another plan\n{text}\n{:?}\n{want:?}",
        back.plan
    );
    assert_eq!(back.plan.schedule, want.schedule);
    if rp.galvatron.is_some() {
        assert_eq!(back.galvatron, rp.galvatron);
    }
}

/// GPUs (in order), dp, tp, ZeRO stage, checkpointed, swapped, recomputed.
type LayerUse = (Vec<u32>, u32, u32, u8, bool, bool, bool);

/// What a plan does with each layer: its GPUs (in order), degrees, sharding and memory
/// actions. Neighbouring stages doing the same on the same GPUs are one run in a runtime's file.
fn per_layer(plan: &Plan) -> Vec<LayerUse> {
    plan.stages
        .iter()
        .flat_map(|s| {
            (s.first..=s.last).map(move |l| {
                (
                    s.gpus.clone(),
                    s.dp,
                    s.tp,
                    s.zero_stage(),
                    s.checkpoint.contains(&l),
                    s.swap.contains(&l),
                    s.recompute.contains(&l),
                )
            })
        })
        .collect()
}

/// The plan with the batch a runtime file states made explicit (synchronous schedules): the
/// instance's defaults of the micro-batch size and count written in.
fn explicit(inst: &Instance, plan: &Plan) -> Plan {
    let (micro, m) = layout::batch(inst, plan);
    let schedule = match plan.schedule {
        Schedule::OneFOneB { .. } => sync(m, micro),
        Schedule::Gpipe { .. } => Schedule::Gpipe {
            micro_batches: Some(m),
            micro_batch: Some(micro),
        },
        ref s => s.clone(),
    };
    Plan {
        order: None,
        stages: plan.stages.clone(),
        schedule,
    }
}

/// Checks a written file's grammar.
fn grammar(format: Format, inst: &Instance, plan: &Plan, text: &str) {
    match format {
        Format::Galvatron | Format::Pipedream => {
            serde_json::from_str::<Value>(text).unwrap();
        }
        Format::Megatron => megatron_grammar(inst, plan, text),
        Format::Torchtitan => torchtitan_grammar(inst, plan, text),
        Format::Deepspeed => deepspeed_grammar(inst, plan, text),
    }
}

/// Every line `--flag value [\]` with a known flag; degrees multiply to the GPUs; the split
/// covers the layers.
fn megatron_grammar(inst: &Instance, plan: &Plan, text: &str) {
    let mut args = std::collections::BTreeMap::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    for (i, line) in lines.iter().enumerate() {
        let line = line.strip_suffix(" \\").unwrap_or(line);
        assert_eq!(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .nth(i)
                .unwrap()
                .ends_with(" \\"),
            i + 1 < lines.len(),
            "continuation of line {i}:\n{text}"
        );
        let (flag, value) = line.split_once(' ').unwrap_or((line, ""));
        assert!(
            [
                "--tensor-model-parallel-size",
                "--pipeline-model-parallel-size",
                "--num-layers",
                "--decoder-first-pipeline-num-layers",
                "--decoder-last-pipeline-num-layers",
                "--pipeline-model-parallel-layout",
                "--micro-batch-size",
                "--global-batch-size",
                "--recompute-granularity",
                "--recompute-method",
                "--recompute-num-layers",
                "--use-distributed-optimizer",
            ]
            .contains(&flag),
            "unknown flag {flag}"
        );
        assert!(
            args.insert(flag.to_string(), value.to_string()).is_none(),
            "{flag} twice"
        );
    }
    let num = |k: &str| args.get(k).map(|v| v.parse::<usize>().unwrap());
    let (tp, pp, layers) = (
        num("--tensor-model-parallel-size").unwrap(),
        num("--pipeline-model-parallel-size").unwrap(),
        num("--num-layers").unwrap(),
    );
    let gpus = plan.gpus().len();
    assert_eq!(gpus % (tp * pp), 0);
    let dp = gpus / (tp * pp);
    let (mb, gb) = (
        num("--micro-batch-size").unwrap(),
        num("--global-batch-size").unwrap(),
    );
    assert_eq!(
        gb % (mb * dp),
        0,
        "global batch is micro x dp x micro-batches"
    );
    if let Some(layout) = args.get("--pipeline-model-parallel-layout") {
        let layout = layout.trim_matches('"');
        let stages: Vec<&str> = layout.split('|').collect();
        assert_eq!(stages.len(), pp, "{layout}");
        let mut t = 0;
        for (p, s) in stages.iter().enumerate() {
            let mut s = *s;
            if p == 0 {
                s = s.strip_prefix('E').expect("E starts the first stage");
            }
            if p + 1 == pp {
                s = s.strip_suffix('L').expect("L ends the last stage");
            }
            t += match s {
                "" => 0,
                "t" => 1,
                _ => s.strip_prefix("t*").unwrap().parse::<usize>().unwrap(),
            };
        }
        assert_eq!(t, layers);
    }
    if let (Some(f), Some(l)) = (
        num("--decoder-first-pipeline-num-layers"),
        num("--decoder-last-pipeline-num-layers"),
    ) {
        assert!(f + l <= layers);
        if pp > 2 {
            assert_eq!((layers - f - l) % (pp - 2), 0);
        }
    }
    let _ = inst;
}

fn torchtitan_grammar(inst: &Instance, plan: &Plan, text: &str) {
    let doc: toml_edit::DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}\n{text}"));
    let p = doc["parallelism"].as_table().expect("[parallelism]");
    let int = |k: &str| p[k].as_integer().unwrap_or_else(|| panic!("{k}")) as usize;
    let (rep, shard, tp, pp) = (
        int("data_parallel_replicate_degree"),
        int("data_parallel_shard_degree"),
        int("tensor_parallel_degree"),
        int("pipeline_parallel_degree"),
    );
    assert_eq!(rep * shard * tp * pp, plan.gpus().len());
    let splits = p["pipeline_parallel_split_points"].as_array().unwrap();
    assert_eq!(splits.len(), pp - 1);
    for s in splits {
        let name = s.as_str().unwrap();
        assert!(inst.model.layers.iter().any(|l| l.name == name), "{name}");
    }
    assert!(["1F1B", "GPipe"].contains(&p["pipeline_parallel_schedule"].as_str().unwrap()));
    let mb = int("pipeline_parallel_microbatch_size");
    let t = doc["training"].as_table().unwrap();
    let local = t["local_batch_size"].as_integer().unwrap() as usize;
    let global = t["global_batch_size"].as_integer().unwrap() as usize;
    assert_eq!(local % mb, 0);
    assert_eq!(global, local * rep * shard);
    let mode = doc["activation_checkpoint"]["mode"].as_str().unwrap();
    assert!(["none", "full", "selective"].contains(&mode));
}

fn deepspeed_grammar(inst: &Instance, plan: &Plan, text: &str) {
    let v: Value = serde_json::from_str(text).unwrap();
    let ds = &v["ds_config"];
    let (tb, mb, gas) = (
        ds["train_batch_size"].as_u64().unwrap(),
        ds["train_micro_batch_size_per_gpu"].as_u64().unwrap(),
        ds["gradient_accumulation_steps"].as_u64().unwrap(),
    );
    let pm = &v["pipeline_module"];
    let stages = pm["num_stages"].as_u64().unwrap();
    let dp = plan.gpus().len() as u64 / stages;
    assert_eq!(tb, mb * gas * dp, "DeepSpeed's batch identity");
    let zero = ds["zero_optimization"]["stage"].as_u64().unwrap();
    assert!([0, 1, 2, 3].contains(&zero));
    // DeepSpeed's pipeline engine asserts against ZeRO-2 and -3.
    assert!(stages == 1 || zero < 2, "ZeRO-{zero} with {stages} stages");
    let parts: Vec<usize> = pm["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(parts.len() as u64, stages + 1);
    assert_eq!((parts[0], *parts.last().unwrap()), (0, inst.num_layers()));
    assert!(parts.windows(2).all(|w| w[0] < w[1]));
}

fn check_one(format: Format, inst: &Instance, rp: &RuntimePlan, who: &str) -> bool {
    match export(format, inst, rp) {
        Ok(text) => {
            grammar(format, inst, &rp.plan, &text);
            read_back(format, inst, rp, &text);
            true
        }
        Err(ExportError::Inexpressible(x)) => {
            assert!(!x.reasons.is_empty());
            x.nearest.check(inst).unwrap_or_else(|e| {
                panic!(
                    "{who} -> {format}: nearest plan invalid: {e}\n{:?}",
                    x.nearest
                )
            });
            let near = RuntimePlan::of(x.nearest.clone());
            let left = format.limits(inst, &near);
            assert!(
                left.is_empty(),
                "{who} -> {format}: the nearest plan is not expressible either: {left:?}\n{:?}",
                x.nearest
            );
            let text = export(format, inst, &near).unwrap();
            grammar(format, inst, &near.plan, &text);
            read_back(format, inst, &near, &text);
            false
        }
        Err(ExportError::Input(e)) => panic!("{who} -> {format}: {e}"),
    }
}

#[test]
fn every_algorithms_plan_exports_or_has_an_expressible_nearest_plan() {
    let opts = SolveOptions {
        time_limit: Some(std::time::Duration::from_secs(20)),
        ..Default::default()
    };
    for name in [
        "resnet50-1000px-b8-4gpu-8gib.json",
        "gpt3-2.6b-s2048-b1-8gpu-40gib.json",
    ] {
        let inst = shipped(name);
        let mut exported = std::collections::BTreeMap::<&str, usize>::new();
        for algo in registry::all() {
            if algo.supports(&inst).is_err() || algo.name() == "mcap-bo" {
                continue;
            }
            let Ok(sol) = run(algo.as_ref(), &inst, &opts) else {
                continue;
            };
            let rp = RuntimePlan {
                plan: sol.plan.clone(),
                galvatron: sol.galvatron.clone(),
            };
            for f in Format::ALL {
                let who = format!("{name}: {}", algo.name());
                if check_one(f, &inst, &rp, &who) {
                    *exported.entry(f.name()).or_default() += 1;
                }
            }
        }
        eprintln!("{name}: plans exported as they are, per format: {exported:?}");
    }
}

/// A transformer-like chain: `embeddings`, `layer.0..n`, `head`.
fn llm(blocks: usize, gpus: u32) -> Instance {
    let mut inst = pipeplan_formulations::testing::chain(&vec![1.0; blocks + 2], gpus);
    let n = inst.model.layers.len();
    for (i, l) in inst.model.layers.iter_mut().enumerate() {
        l.name = match i {
            0 => "embeddings".into(),
            _ if i + 1 == n => "head".into(),
            _ => format!("layer.{}", i - 1),
        };
    }
    inst
}

fn sync(m: u32, mb: u32) -> Schedule {
    Schedule::OneFOneB {
        micro_batches: Some(m),
        micro_batch: Some(mb),
    }
}

/// Stages `(first, last)` each on `w` GPUs with tp `tp`.
fn plan(ranges: &[(usize, usize)], w: u32, tp: u32, schedule: Schedule) -> Plan {
    Plan {
        order: None,
        stages: ranges
            .iter()
            .enumerate()
            .map(|(p, &(a, b))| Stage {
                gpus: (p as u32 * w..(p as u32 + 1) * w).collect(),
                dp: w / tp,
                tp,
                ..Stage::single(a, b, 0)
            })
            .collect(),
        schedule,
    }
}

fn ok(format: Format, inst: &Instance, p: &Plan) -> String {
    let text = export(format, inst, &RuntimePlan::of(p.clone()))
        .unwrap_or_else(|e| panic!("{format}: {e:?}"));
    grammar(format, inst, p, &text);
    text
}

#[test]
fn megatron_splits_and_recompute() {
    // 8 blocks + embedding + head over 4 stages of 2 GPUs (tp 2): the first and last stages
    // hold 1 and 3 blocks, the middle ones 2 each.
    let inst = llm(8, 8);
    let mut p = plan(&[(0, 1), (2, 3), (4, 5), (6, 9)], 2, 2, sync(8, 4));
    let text = ok(Format::Megatron, &inst, &p);
    assert!(text.contains("--num-layers 8 \\"), "{text}");
    assert!(
        text.contains("--decoder-first-pipeline-num-layers 1 \\"),
        "{text}"
    );
    assert!(
        text.contains("--decoder-last-pipeline-num-layers 3 \\"),
        "{text}"
    );
    assert!(text.contains("--micro-batch-size 4 \\"), "dp 1: {text}");
    assert!(text.contains("--global-batch-size 32"), "{text}");
    // An uneven middle needs the layout string.
    let q = plan(&[(0, 1), (2, 2), (3, 5), (6, 9)], 2, 2, sync(8, 4));
    let text = ok(Format::Megatron, &inst, &q);
    assert!(
        text.contains("--pipeline-model-parallel-layout \"Et|t|t*3|t*3L\""),
        "{text}"
    );
    // The first block of every stage recomputed: block method, 1 layer.
    for (s, l) in [(0, 1), (1, 2), (2, 4), (3, 6)] {
        p.stages[s].checkpoint = vec![l];
    }
    let text = ok(Format::Megatron, &inst, &p);
    assert!(text.contains("--recompute-method block \\"), "{text}");
    assert!(text.contains("--recompute-num-layers 1"), "{text}");
    // Every block: uniform.
    for st in &mut p.stages {
        st.checkpoint = (st.first..=st.last).filter(|&l| l != 0 && l != 9).collect();
    }
    let text = ok(Format::Megatron, &inst, &p);
    assert!(text.contains("--recompute-method uniform \\"), "{text}");
    // Per-layer tp degrees: refused; the nearest plan has one tp.
    let mut r = plan(&[(0, 4), (5, 9)], 4, 4, sync(8, 4));
    r.stages[1].tp = 2;
    r.stages[1].dp = 2;
    let Err(ExportError::Inexpressible(x)) = export(Format::Megatron, &inst, &RuntimePlan::of(r))
    else {
        panic!("per-layer tp must be refused");
    };
    assert!(
        x.reasons[0].contains("tensor-parallel degrees differ"),
        "{:?}",
        x.reasons
    );
    assert!(x
        .nearest
        .stages
        .iter()
        .all(|s| s.tp == x.nearest.stages[0].tp));
}

#[test]
fn torchtitan_split_points_and_checkpointing() {
    let inst = llm(8, 8);
    let mut p = plan(&[(0, 3), (4, 6), (7, 9)], 2, 1, sync(4, 8));
    // Needs pp | GPUs: 3 stages of 2 GPUs use 6 of 8, which torchtitan's degrees express.
    for st in &mut p.stages {
        st.sdp = true;
    }
    let text = ok(Format::Torchtitan, &inst, &p);
    assert!(
        text.contains("pipeline_parallel_split_points = [\"layer.3\", \"layer.6\"]"),
        "{text}"
    );
    assert!(text.contains("data_parallel_shard_degree = 2"), "{text}");
    assert!(text.contains("mode = \"none\""), "{text}");
    // Every second block of each stage: selective, 2.
    p.stages[0].checkpoint = vec![2];
    p.stages[1].checkpoint = vec![5];
    p.stages[2].checkpoint = vec![8];
    let text = ok(Format::Torchtitan, &inst, &p);
    assert!(text.contains("selective_ac_option = \"2\""), "{text}");
}

#[test]
fn deepspeed_parts_and_zero() {
    assert_eq!(partition_uniform(10, 4), vec![0, 3, 6, 8, 10]);
    assert_eq!(partition_uniform(3, 4), vec![0, 1, 2, 3, 3]);
    let inst = llm(8, 8);
    let p = plan(&[(0, 2), (3, 5), (6, 7), (8, 9)], 2, 1, sync(4, 8));
    let text = ok(Format::Deepspeed, &inst, &p);
    assert!(text.contains("\"partition_method\": \"uniform\""), "{text}");
    // ZeRO-3 without pipelining.
    let mut q = plan(&[(0, 9)], 8, 1, sync(4, 8));
    q.stages[0].sdp = true;
    let text = ok(Format::Deepspeed, &inst, &q);
    assert!(text.contains("\"stage\": 3"), "{text}");
    // ZeRO-3 with pipelining: refused.
    let mut r = p.clone();
    for st in &mut r.stages {
        st.sdp = true;
    }
    assert!(matches!(
        export(Format::Deepspeed, &inst, &RuntimePlan::of(r)),
        Err(ExportError::Inexpressible(_))
    ));
}

#[test]
fn galvatron_strided_tp_groups_round_trip() {
    let inst = llm(6, 8);
    let mut p = plan(&[(0, 3), (4, 7)], 4, 2, sync(4, 8));
    // Stage 1's tp groups strided: replicas on {4, 6} and {5, 7}.
    p.stages[1].gpus = vec![4, 6, 5, 7];
    let text = ok(Format::Galvatron, &inst, &p);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["tp_consecutive_flags"], "1,1,1,1,0,0,0,0");
    read_back(Format::Galvatron, &inst, &RuntimePlan::of(p.clone()), &text);
    // Any other order is refused.
    p.stages[1].gpus = vec![7, 6, 5, 4];
    assert!(matches!(
        export(Format::Galvatron, &inst, &RuntimePlan::of(p)),
        Err(ExportError::Inexpressible(_))
    ));
}

#[test]
fn ulysses_stages_export_to_galvatron_only() {
    let inst = llm(6, 8);
    let mut p = plan(&[(0, 3), (4, 7)], 4, 2, sync(4, 8));
    p.stages[1].ulysses = true;
    let text = ok(Format::Galvatron, &inst, &p);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["use_sp"], "0,0,0,0,1,1,1,1");
    read_back(Format::Galvatron, &inst, &RuntimePlan::of(p.clone()), &text);
    // The other runtimes say so and offer the plan with tp in its place.
    for f in [Format::Megatron, Format::Deepspeed, Format::Torchtitan] {
        match export(f, &inst, &RuntimePlan::of(p.clone())) {
            Err(ExportError::Inexpressible(x)) => {
                assert!(
                    x.reasons[0].contains("stage 1 uses Ulysses"),
                    "{f}: {:?}",
                    x.reasons
                );
                assert!(x.nearest.stages.iter().all(|s| !s.ulysses), "{f}");
            }
            other => panic!("{f}: {other:?}"),
        }
    }
}

#[test]
fn bad_runtime_files_name_the_field() {
    let inst = llm(2, 4);
    let good = r#"{"pp_deg": 2, "tp_sizes_enc": "1,1,1,1", "tp_consecutive_flags": "1,1,1,1",
        "dp_types_enc": "0,0,0,0", "use_sp": "0,0,0,0", "checkpoint": "0,0,0,0",
        "global_bsz": 8, "chunks": 2, "pp_division": "2,2", "pipeline_type": "pipedream_flush",
        "default_dp_type": "ddp", "vtp": 1, "vsp": 0, "embed_sdp": 0}"#;
    let rp = PlanFormat::Galvatron
        .read(good, &inst, &ReadOptions::default())
        .unwrap();
    assert_eq!(rp.plan.stages.len(), 2);
    for (from, to, field) in [
        (
            "\"1,1,1,1\", \"tp_cons",
            "\"1,1,1\", \"tp_cons",
            "tp_sizes_enc",
        ),
        ("\"2,2\"", "\"3,2\"", "pp_division"),
        ("\"2,2\"", "\"4,0\"", "pp_division"),
        ("\"2,2\"", "\"1,1,2\"", "pp_division"),
        (
            "\"use_sp\": \"0,0,0,0\"",
            "\"use_sp\": \"0,1,0,0\"",
            "use_sp",
        ),
        ("\"pp_deg\": 2", "\"pp_deg\": 3", "pp_deg"),
        ("pipedream_flush", "zigzag", "pipeline_type"),
        (
            "\"checkpoint\": \"0,0,0,0\"",
            "\"checkpoint\": \"0,0,x,0\"",
            "checkpoint",
        ),
        ("\"vsp\": 0", "\"vsp\": 2", "vsp"),
    ] {
        let bad = good.replacen(from, to, 1);
        assert_ne!(bad, good, "{from}");
        let e = PlanFormat::Galvatron
            .read(&bad, &inst, &ReadOptions::default())
            .unwrap_err();
        assert_eq!(e.field_path(), Some(field), "{e}");
    }
    let e = PlanFormat::Pipedream
        .read(
            r#"{"module_to_stage_map": [0], "stage_to_rank_map": {"0": [0]}}"#,
            &inst,
            &ReadOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("--modules"), "{e}");
}

/// `p` with every stage at ZeRO stage `z`.
fn at_zero(p: &Plan, z: u8) -> Plan {
    let mut p = p.clone();
    p.stages.iter_mut().for_each(|s| s.set_zero_stage(z));
    p
}

/// `p` with `whole_gradients` set to `whole` on every stage.
fn with_whole_gradients(p: &Plan, whole: bool) -> Plan {
    let mut p = p.clone();
    p.stages.iter_mut().for_each(|s| s.whole_gradients = whole);
    p
}

/// The reasons `format` refuses `p` for, and its nearest plan.
fn refused(format: Format, inst: &Instance, p: &Plan) -> (Vec<String>, Plan) {
    match export(format, inst, &RuntimePlan::of(p.clone())) {
        Err(ExportError::Inexpressible(x)) => (x.reasons, x.nearest),
        other => panic!("{format} must refuse: {other:?}"),
    }
}

#[test]
fn zero_stages_per_runtime() {
    let inst = llm(8, 8);
    let pipelined = plan(&[(0, 4), (5, 9)], 4, 1, sync(4, 8));
    let whole = plan(&[(0, 9)], 8, 1, sync(4, 8));
    let zero = |text: &str| {
        serde_json::from_str::<Value>(text).unwrap()["ds_config"]["zero_optimization"]["stage"]
            .as_u64()
            .unwrap()
    };
    // DeepSpeed: the stage as given, ZeRO-2 and -3 only without pipelining.
    assert_eq!(
        zero(&ok(Format::Deepspeed, &inst, &at_zero(&pipelined, 1))),
        1
    );
    assert_eq!(zero(&ok(Format::Deepspeed, &inst, &at_zero(&whole, 2))), 2);
    let (why, nearest) = refused(Format::Deepspeed, &inst, &at_zero(&pipelined, 2));
    assert!(why[0].contains("ZeRO stage 2"), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.zero_stage() == 1));
    let mut mixed = at_zero(&pipelined, 1);
    mixed.stages[1].zero = 0;
    let (why, _) = refused(Format::Deepspeed, &inst, &mixed);
    assert!(why[0].contains("ZeRO stages 0, 1"), "{why:?}");
    // Megatron-LM: ZeRO-1 is its distributed optimizer; ZeRO-2 is not run.
    let text = ok(Format::Megatron, &inst, &at_zero(&pipelined, 1));
    assert!(text.contains("--use-distributed-optimizer"), "{text}");
    assert!(!ok(Format::Megatron, &inst, &pipelined).contains("distributed"));
    let (why, nearest) = refused(Format::Megatron, &inst, &at_zero(&pipelined, 2));
    assert!(why[0].contains("ZeRO-2"), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.zero_stage() == 1));
    // On one replica no ZeRO stage divides anything: Megatron-LM runs it as plain data
    // parallelism, as DeepSpeed does.
    let single = plan(&[(0, 4), (5, 9)], 1, 1, sync(4, 8));
    for z in [2, 3] {
        let text = ok(Format::Megatron, &inst, &at_zero(&single, z));
        assert!(!text.contains("distributed"), "{text}");
        assert_eq!(zero(&ok(Format::Deepspeed, &inst, &at_zero(&single, z))), 0);
    }
    // The refusal describes the nearest plan with its ZeRO stage.
    let e = export(
        Format::Megatron,
        &inst,
        &RuntimePlan::of(at_zero(&pipelined, 2)),
    )
    .unwrap_err();
    let ExportError::Inexpressible(x) = e else {
        panic!("{e:?}")
    };
    let text = x.message(&inst, &at_zero(&pipelined, 2));
    assert!(
        text.contains("(2 pipeline stages, tp 1, dp 4, ZeRO 1, 1F1B"),
        "{text}"
    );
    // Only Galvatron writes ZeRO-3 with whole gradients (FSDP's no_sync); the others' nearest
    // plan divides them at every micro-batch.
    let sharded = with_whole_gradients(&at_zero(&whole, 3), true);
    for format in [Format::Deepspeed, Format::Torchtitan] {
        let (why, nearest) = refused(format, &inst, &sharded);
        assert!(why[0].contains("FSDP's no_sync"), "{format}: {why:?}");
        assert!(
            nearest.stages.iter().all(|s| s.sdp && !s.whole_gradients),
            "{format}: {nearest:?}"
        );
    }
    // torchtitan and PipeDream: neither divides part of the states.
    let (why, nearest) = refused(Format::Torchtitan, &inst, &at_zero(&pipelined, 2));
    assert!(why[0].contains("ZeRO-2"), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.sdp));
    let (why, nearest) = refused(Format::Pipedream, &inst, &at_zero(&pipelined, 1));
    assert!(why.iter().any(|w| w.contains("ZeRO-1 or -2")), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.zero_stage() == 0));
}

#[test]
fn galvatron_default_dp_type_is_the_replicated_stages_zero_stage() {
    let inst = llm(6, 8);
    // 4 micro-batches: Galvatron's runtime (async_grad_reduce, its default, as the instance has
    // no settings) holds the gradients whole until the last, so its zero2 is ZeRO-1. One
    // micro-batch: zero2 is ZeRO-2.
    let p = plan(&[(0, 3), (4, 7)], 4, 2, sync(4, 8));
    let once = plan(&[(0, 3), (4, 7)], 4, 2, sync(1, 8));
    let config =
        |p: &Plan| -> Value { serde_json::from_str(&ok(Format::Galvatron, &inst, p)).unwrap() };
    // Over several micro-batches its zero3 holds the gradients whole too (FSDP's no_sync).
    for (p, z, whole, default, flags) in [
        (&p, 0, false, "ddp", "0,0,0,0,0,0,0,0"),
        (&p, 1, false, "zero2", "0,0,0,0,0,0,0,0"),
        (&once, 2, false, "zero2", "0,0,0,0,0,0,0,0"),
        (&p, 3, true, "ddp", "1,1,1,1,1,1,1,1"),
        (&once, 3, false, "ddp", "1,1,1,1,1,1,1,1"),
    ] {
        let q = with_whole_gradients(&at_zero(p, z), whole);
        let v = config(&q);
        assert_eq!(v["default_dp_type"], default, "ZeRO-{z}");
        assert_eq!(v["dp_types_enc"], flags, "ZeRO-{z}");
        read_back(
            Format::Galvatron,
            &inst,
            &RuntimePlan::of(q.clone()),
            &v.to_string(),
        );
    }
    // With settings that turn async_grad_reduce off, zero2 is ZeRO-2 over 4 micro-batches too.
    let sync_reduce = without_async_grad_reduce(&inst);
    let v: Value =
        serde_json::from_str(&ok(Format::Galvatron, &sync_reduce, &at_zero(&p, 2))).unwrap();
    assert_eq!(v["default_dp_type"], "zero2");
    let rp = PlanFormat::Galvatron
        .read(&v.to_string(), &sync_reduce, &ReadOptions::default())
        .unwrap();
    assert!(rp.plan.stages.iter().all(|s| s.zero == 2));
    // A zero3 file shards its unflagged layers: they read back as sdp and export as they were.
    let mut v = config(&p);
    v["default_dp_type"] = "zero3".into();
    let rp = PlanFormat::Galvatron
        .read(&v.to_string(), &inst, &ReadOptions::default())
        .unwrap();
    assert!(rp.plan.stages.iter().all(|s| s.sdp));
    let again: Value =
        serde_json::from_str(&export(Format::Galvatron, &inst, &rp).unwrap()).unwrap();
    assert_eq!(again, v);
    // The other of ZeRO-1 and -2 is refused, and the nearest plan runs at the one zero2 runs.
    let (why, nearest) = refused(Format::Galvatron, &inst, &at_zero(&p, 2));
    assert!(why[0].contains("which is ZeRO-1"), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.zero == 1));
    let (why, nearest) = refused(Format::Galvatron, &inst, &at_zero(&once, 1));
    assert!(why[0].contains("ZeRO-1"), "{why:?}");
    assert!(nearest.stages.iter().all(|s| s.zero == 2));
    // Sharded stages hold their gradients as zero3 does, or are refused; the nearest plan does.
    let (why, nearest) = refused(Format::Galvatron, &inst, &at_zero(&p, 3));
    assert!(
        why[0].contains("holds them whole until the last"),
        "{why:?}"
    );
    assert!(nearest
        .stages
        .iter()
        .all(|s| s.shards_with_whole_gradients()));
    let (why, nearest) = refused(
        Format::Galvatron,
        &inst,
        &with_whole_gradients(&at_zero(&once, 3), true),
    );
    assert!(
        why[0].contains("divides them at every micro-batch here"),
        "{why:?}"
    );
    assert!(nearest.stages.iter().all(|s| s.sdp && !s.whole_gradients));
    // One default for every replicated stage: stages at 0 and 1 are refused.
    let mut mixed = at_zero(&p, 1);
    mixed.stages[0].zero = 0;
    let (why, _) = refused(Format::Galvatron, &inst, &mixed);
    assert!(why[0].contains("ZeRO stages 0, 1"), "{why:?}");
    // A solution's extras that contradict its stages are an input error naming the field.
    let mut rp = PlanFormat::Galvatron
        .read(
            &config(&at_zero(&p, 1)).to_string(),
            &inst,
            &ReadOptions::default(),
        )
        .unwrap();
    rp.plan = at_zero(&rp.plan, 0);
    match export(Format::Galvatron, &inst, &rp) {
        Err(ExportError::Input(e)) => {
            let e = e.to_string();
            assert!(e.contains("galvatron.default_dp_type"), "{e}");
            assert!(e.contains("run as `ddp`"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// `inst` with Galvatron settings that turn `async_grad_reduce` off.
fn without_async_grad_reduce(inst: &Instance) -> Instance {
    let mut sync_reduce = inst.clone();
    let mut lt = pipeplan_formulations::galvatron::derive::derive(inst);
    lt.settings.async_grad_reduce = false;
    sync_reduce.extensions.insert(
        pipeplan_formulations::galvatron::EXTENSION.into(),
        serde_json::to_value(&lt).unwrap(),
    );
    sync_reduce
}

#[test]
fn galvatron_without_async_grad_reduce_says_its_ddp_stages_reduce_at_every_micro_batch() {
    let inst = llm(6, 8);
    let sync_reduce = without_async_grad_reduce(&inst);
    // Two stages of 2 replicas at tp 2, 4 micro-batches, ZeRO-0: Galvatron's ddp.
    let p = plan(&[(0, 3), (4, 7)], 4, 2, sync(4, 8));
    let said = |i: &Instance, p: &Plan| -> Vec<String> {
        cautions(Format::Galvatron, i, p, None, &[])
            .into_iter()
            .filter(|c| c.contains("async_grad_reduce"))
            .collect()
    };
    // Under async_grad_reduce (the runtime's default) it reduces once, as the evaluator charges.
    assert!(said(&inst, &p).is_empty());
    // Off, it all-reduces after every micro-batch: the caution names the stages, the count and
    // the evaluator's one all-reduce.
    let ev = evaluate(&sync_reduce, &p).unwrap();
    let once = explain(&sync_reduce, &p, &ev)
        .stages
        .iter()
        .map(|s| s.grad_sync_ms)
        .fold(0.0, f64::max);
    assert!(once > 0.0);
    let c = said(&sync_reduce, &p);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].contains("stages 0, 1 (ddp) after each of the 4 micro-batches"),
        "{c:?}"
    );
    assert!(
        c[0].contains(&format!(
            "one all-reduce per iteration ({once}): an iteration may take up to 3 x {once} longer",
            once = pipeplan_formulations::units::fmt_ms(once)
        )),
        "{c:?}"
    );
    // One micro-batch, or ZeRO-2 (whose every micro-batch the evaluator charges): nothing more.
    assert!(said(&sync_reduce, &plan(&[(0, 3), (4, 7)], 4, 2, sync(1, 8))).is_empty());
    assert!(said(&sync_reduce, &at_zero(&p, 2)).is_empty());
    // Only one replicated stage: it alone is named.
    let mut one = p.clone();
    one.stages[1].tp = 4;
    one.stages[1].dp = 1;
    assert!(said(&sync_reduce, &one)[0].contains("of stage 0 (ddp)"));
    // Other runtimes take no Galvatron setting.
    assert!(cautions(Format::Megatron, &sync_reduce, &p, None, &[])
        .iter()
        .all(|c| !c.contains("async_grad_reduce")));
    // Beside a file, each names it; what reading the file said already is not said again.
    let file = std::path::Path::new("plan.json");
    let beside = cautions(Format::Galvatron, &sync_reduce, &p, Some(file), &[]);
    let c_named: Vec<String> = c.iter().map(|w| format!("plan.json: {w}")).collect();
    assert!(c_named.iter().all(|w| beside.contains(w)), "{beside:?}");
    let again = cautions(Format::Galvatron, &sync_reduce, &p, Some(file), &c_named);
    assert!(
        again.iter().all(|w| !w.contains("async_grad_reduce")),
        "{again:?}"
    );
    // Read back, the config gets the same note.
    let text = ok(Format::Galvatron, &sync_reduce, &p);
    let noted = PlanFormat::Galvatron
        .read_noted(&text, &sync_reduce, &ReadOptions::default())
        .unwrap();
    assert_eq!(noted.notes, c);
    let noted = PlanFormat::Galvatron
        .read_noted(&text, &inst, &ReadOptions::default())
        .unwrap();
    assert!(noted.notes.is_empty(), "{:?}", noted.notes);
}
