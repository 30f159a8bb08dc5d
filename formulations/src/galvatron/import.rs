//! Importer of Galvatron profiles: a JSON document holding a `config` object (the engine's search
//! arguments, the model's layer configs, and the profile / hardware file paths relative to a data
//! root) becomes a pipeplan instance with the `layer_types` extension.
//!
//! `config` is read in two forms. The golden form, as the engine's recorded runs write it:
//! `engine_args` (every search argument), `model_name`, `layer_configs[]`,
//! `profile_files.{memory,computation}`, `hardware_files.{allreduce,p2p,overlap,sp_time}` (a path
//! may carry a note in parentheses after it, which is dropped). It is flattened into the flat
//! form below before anything is read.
//!
//! Flat-form keys read (all others are ignored and listed in the instance's `source`):
//! - every [`Settings`](super::settings::Settings) field, under the engine's flag names (0/1 accepted for booleans);
//! - `model_name`; `model_layer_configs`: `[{"hidden_size", "layer_num", "seq_len"}]`;
//! - `time_profiling_path`, `memory_profiling_path`: files, or folders holding the engine's
//!   conventional names `computation_profiling_<precision>_<model>.json` /
//!   `memory_profiling_<precision>_<model>.json`;
//! - `allreduce_bandwidth_config_path`, `p2p_bandwidth_config_path`, `overlap_coe_path`: files,
//!   or folders holding `allreduce_bandwidth_<n>nodes_<g>gpus_per_node.json`,
//!   `p2p_bandwidth_<n>nodes_<g>gpus_per_node.json`, `overlap_coefficient.json`.

pub use super::config::not_emulated;
use super::config::{flatten, resolve, settings_from};
use super::profile::{Collective, Hardware, LayerType, LayerTypes, Other, OtherMemory, EXTENSION};
use super::profile_modes::{fitted_time, mode, seq_range};
use crate::error::InputError;
use crate::instance::{Bandwidth, Cluster, Instance, Layer, Model, Precision, Training, FORMAT};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

const MB: f64 = 1024.0 * 1024.0;

pub(super) fn field(f: impl Into<String>, m: impl Into<String>) -> InputError {
    InputError::field(f, m)
}

fn read_json(path: &Path) -> Result<Map<String, Value>, InputError> {
    let text = crate::error::read_text(path)?;
    let v: Value = crate::error::parse_json(&text, "JSON object").map_err(|e| e.in_file(path))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(field("", "expected a JSON object").in_file(path)),
    }
}

/// The top-level entries of a JSON object in file order (the engine iterates Python dicts, which
/// keep insertion order; `serde_json::Map` here is sorted).
struct Ordered(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn read_ordered(path: &Path) -> Result<Vec<(String, Value)>, InputError> {
    let text = crate::error::read_text(path)?;
    let o: Ordered = crate::error::parse_json(&text, "JSON object").map_err(|e| e.in_file(path))?;
    Ok(o.0)
}

pub(super) fn num(v: &Value, path: &Path, key: &str) -> Result<f64, InputError> {
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| field(key, "expected a finite number").in_file(path))
}

/// A value keyed by sequence length, or the value itself.
fn by_seq<'a>(v: &'a Value, seq: &str) -> &'a Value {
    match v.get(seq) {
        Some(inner) => inner,
        None => v,
    }
}

fn tp_map(v: &Value, path: &Path, key: &str) -> Result<BTreeMap<String, f64>, InputError> {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| Ok((k.clone(), num(x, path, &format!("{key}.{k}"))?)))
            .collect(),
        x => Ok([("1".to_string(), num(x, path, key)?)].into()),
    }
}

/// Reads the profiles the `config` names and builds the instance. `config` is either the flat
/// form (engine arguments at the top level, `model_layer_configs`, `*_path` keys) or the golden
/// form (`engine_args`, `layer_configs`, `profile_files`, `hardware_files`).
pub fn import(doc: &Value, root: &Path) -> Result<Instance, InputError> {
    let config = doc
        .get("config")
        .and_then(Value::as_object)
        .ok_or_else(|| field("config", "missing: the file must hold a `config` object"))?;
    let config = &flatten(config)?;
    let (settings, ignored) = settings_from(config)?;
    let mut notes = Vec::new();
    let unmodelled = not_emulated(doc)?;
    if !unmodelled.is_empty() {
        notes.push(format!(
            "engine arguments not emulated (modelled as the engine's defaults: static profile \
             values, tp-only sequence parallelism; the engine's plan and throughput may \
             differ): {}",
            unmodelled.join(", ")
        ));
    }
    let model_name = config
        .get("model_name")
        .and_then(Value::as_str)
        .unwrap_or("model")
        .to_string();
    let layer_cfgs = config
        .get("model_layer_configs")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            field(
                "config.model_layer_configs",
                "missing: [{hidden_size, layer_num, seq_len}]",
            )
        })?;
    let mut cfgs = Vec::new();
    for (i, c) in layer_cfgs.iter().enumerate() {
        let get = |k: &str| {
            c.get(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| {
                    field(
                        format!("config.model_layer_configs[{i}].{k}"),
                        "missing or not a positive number",
                    )
                })
        };
        cfgs.push((
            get("hidden_size")?,
            get("layer_num")? as usize,
            get("seq_len")?,
        ));
    }
    let prec = settings.mixed_precision.clone();
    let nodes = format!(
        "{}nodes_{}gpus_per_node",
        settings.num_nodes, settings.num_gpus_per_node
    );
    let time_path = resolve(
        root,
        config,
        "time_profiling_path",
        &format!("computation_profiling_{prec}_{model_name}.json"),
    )?;
    let mem_path = resolve(
        root,
        config,
        "memory_profiling_path",
        &format!("memory_profiling_{prec}_{model_name}.json"),
    )?;
    let ar_path = resolve(
        root,
        config,
        "allreduce_bandwidth_config_path",
        &format!("allreduce_bandwidth_{nodes}.json"),
    )?;
    let p2p_path = resolve(
        root,
        config,
        "p2p_bandwidth_config_path",
        &format!("p2p_bandwidth_{nodes}.json"),
    )?;
    let ov_path = resolve(root, config, "overlap_coe_path", "overlap_coefficient.json")?;
    let time = read_ordered(&time_path)?;
    let mem = read_json(&mem_path)?;
    let sp = if settings.sequence_parallel {
        "_sp"
    } else {
        ""
    };
    let time_sequence = mode(config, "time_profile_mode") == "sequence";
    let memory_sequence = mode(config, "memory_profile_mode") == "sequence";
    if memory_sequence && !(settings.sequence_parallel && cfgs.len() == 1) {
        return Err(field(
            "config.memory_profile_mode",
            "sequence needs sequence_parallel and a single layer type (as the engine asserts)",
        ));
    }
    // Longest profiled sequence of each type (memory `sequence` mode), else its own length.
    let mut max_seqs: Vec<f64> = Vec::new();

    let mut types = Vec::new();
    for (i, &(hidden, layers, seq)) in cfgs.iter().enumerate() {
        let seq_key = format!("{}", seq as u64);
        let key = format!("layertype_{i}{sp}");
        let m = mem.get(&key).ok_or_else(|| {
            field(
                &key,
                format!("missing in the memory profile (layer type {i})"),
            )
            .in_file(&mem_path)
        })?;
        // Memory `sequence` mode: parameters of the shortest profiled sequence, activations of
        // the longest scaled linearly to this type's length.
        let (param_at, act_at, act_scale) = if memory_sequence {
            let (min, max) = seq_range(m, &key, &mem_path)?;
            (min.to_string(), max.to_string(), (max, seq))
        } else {
            (seq_key.clone(), seq_key.clone(), (1.0, 1.0))
        };
        let param = by_seq(m, &param_at).get("parameter_size").ok_or_else(|| {
            field(
                format!("{key}.parameter_size"),
                format!("missing (layer type {i})"),
            )
            .in_file(&mem_path)
        })?;
        let param = num(param, &mem_path, &format!("{key}.parameter_size"))?;
        let act = by_seq(m, &act_at)
            .get("tp_activation_per_bsz_dict")
            .ok_or_else(|| {
                field(
                    format!("{key}.tp_activation_per_bsz_dict"),
                    format!("missing (layer type {i})"),
                )
                .in_file(&mem_path)
            })?;
        let act: BTreeMap<String, f64> =
            tp_map(act, &mem_path, &format!("{key}.tp_activation_per_bsz_dict"))?
                .into_iter()
                .map(|(k, v)| (k, v / act_scale.0 * act_scale.1))
                .collect();
        max_seqs.push(act_scale.0);
        // The engine's static mode collects, for each type in turn, every key starting with
        // `layertype_{i}_` in file order, and uses entry i of that list (quirk: with several
        // keys per type, e.g. one per sequence length, entry i is not necessarily type i's).
        // Fallback: the plain key `layertype_{i}` of older profiles.
        let collected: Vec<&(String, Value)> = (0..cfgs.len())
            .flat_map(|j| {
                let prefix = format!("layertype_{j}_");
                time.iter().filter(move |(k, _)| k.starts_with(&prefix))
            })
            .collect();
        let plain = format!("layertype_{i}");
        let fwd = collected
            .get(i)
            .copied()
            .or_else(|| time.iter().find(|(k, _)| *k == plain))
            .map(|(k, v)| (k, v))
            .ok_or_else(|| {
                field(
                    format!("layertype_{i}"),
                    format!("missing in the computation profile (layer type {i})"),
                )
                .in_file(&time_path)
            })?;
        let fwd = if time_sequence {
            fitted_time(&time, &format!("layertype_{i}_"), 2, seq, &time_path)?
        } else {
            num(fwd.1, &time_path, fwd.0)?
        };
        types.push(LayerType {
            name: format!("layertype_{i}"),
            layers,
            seq_len: seq,
            hidden_size: hidden,
            parameter_mb: param,
            activation_mb_per_sample: act,
            forward_ms_per_sample: fwd,
        });
    }
    let seq_info = cfgs
        .iter()
        .map(|c| format!("{}", c.2 as u64))
        .collect::<Vec<_>>()
        .join("_");
    let other_mem = |name: &str| -> Result<OtherMemory, InputError> {
        let key = format!("{name}{sp}");
        let Some(v) = mem.get(&key) else {
            return Err(field(
                &key,
                "missing in the memory profile (embedding/head memory)",
            )
            .in_file(&mem_path));
        };
        // Profiles key several sequence lengths as `a_b_c` or, as the engine's profiler writes
        // them for several layer types, `[a,b,c]`. Memory `sequence` mode: the longest
        // profiled sequence of the first type (pp off, first stage) or the last (last stage),
        // its activation scaled linearly to that type's length.
        let (v, rescale) = if memory_sequence {
            let t = if name.ends_with("_last") {
                cfgs.len() - 1
            } else {
                0
            };
            let at = max_seqs[t];
            (by_seq(v, &format!("{}", at as u64)), Some((at, cfgs[t].2)))
        } else {
            match v.get(format!("[{}]", seq_info.replace('_', ","))) {
                Some(inner) => (inner, None),
                None => (by_seq(v, &seq_info), None),
            }
        };
        let get = |w: &str| {
            v.get(w)
                .ok_or_else(|| field(format!("{key}.{w}"), "missing").in_file(&mem_path))
                .and_then(|x| tp_map(x, &mem_path, &format!("{key}.{w}")))
        };
        Ok(OtherMemory {
            model_states: get("model_states")?,
            activation: match rescale {
                Some((max, seq)) => get("activation")?
                    .into_iter()
                    .map(|(k, a)| (k, a / max * seq))
                    .collect(),
                None => get("activation")?,
            },
        })
    };
    // The engine's list of other-layer times holds, per type, every `layertype_other_*` key;
    // it uses entry 0, i.e. the first such key in file order.
    let other_fwd = if time_sequence {
        // Entry 0 of the engine's per-type list: the fit at the first type's length.
        fitted_time(&time, "layertype_other_", 1, cfgs[0].2, &time_path)?
    } else {
        match time.iter().find(|(k, _)| k.starts_with("layertype_other_")) {
            Some((k, v)) => num(v, &time_path, k)?,
            None => {
                notes.push(
                    "computation profile has no layertype_other_* key: embedding/head time 0"
                        .to_string(),
                );
                0.0
            }
        }
    };
    let other = Other {
        pp_off: other_mem("other_memory_pp_off")?,
        pp_on_first: other_mem("other_memory_pp_on_first")?,
        pp_on_last: other_mem("other_memory_pp_on_last")?,
        forward_ms_per_sample: other_fwd,
    };
    let ar = read_json(&ar_path)?;
    let gpus = settings.gpu_num();
    let mut allreduce = BTreeMap::from([("1".to_string(), 0.0)]);
    let bw = |k: &str| -> Result<f64, InputError> {
        let v = ar.get(k).ok_or_else(|| {
            field(k, "missing in the allreduce bandwidth config").in_file(&ar_path)
        })?;
        let b = num(v, &ar_path, k)?;
        if b > 0.0 {
            Ok(b)
        } else {
            Err(field(k, "bandwidth must be positive").in_file(&ar_path))
        }
    };
    if gpus >= 2 {
        allreduce.insert(
            gpus.to_string(),
            1.0 / bw(&format!("allreduce_size_{gpus}_consec_1"))?,
        );
    }
    let mut n = gpus / 2;
    while n >= 2 {
        allreduce.insert(
            format!("{n}_0"),
            1.0 / bw(&format!("allreduce_size_{n}_consec_0"))?,
        );
        allreduce.insert(
            format!("{n}_1"),
            1.0 / bw(&format!("allreduce_size_{n}_consec_1"))?,
        );
        n /= 2;
    }
    let p2p_file = read_json(&p2p_path)?;
    let mut p2p = BTreeMap::new();
    for (k, v) in &p2p_file {
        if let Some(pp) = k.strip_prefix("pp_size_") {
            let b = num(v, &p2p_path, k)?;
            if b <= 0.0 {
                return Err(field(k, "bandwidth must be positive").in_file(&p2p_path));
            }
            p2p.insert(pp.to_string(), 1.0 / b);
        }
    }
    let ov = read_json(&ov_path)?;
    let overlap = ov
        .get("overlap_coe")
        .ok_or_else(|| field("overlap_coe", "missing").in_file(&ov_path))
        .and_then(|v| num(v, &ov_path, "overlap_coe"))?;
    let (sp_allreduce, sp_all2all) = if settings.ulysses() {
        let path = resolve(
            root,
            config,
            "sp_time_path",
            &format!("sp_time_{nodes}.json"),
        )?;
        sp_times(&read_ordered(&path)?, &path)?
    } else {
        Default::default()
    };
    let lt = LayerTypes {
        types,
        other,
        hardware: Hardware {
            allreduce_ms_per_mb: allreduce,
            p2p_ms_per_mb: p2p,
            overlap_coe: overlap,
            sp_allreduce,
            sp_all2all,
        },
        settings,
    };
    let total: usize = lt.counts().iter().sum();
    lt.check(total)?;
    instance(&lt, &model_name, &ignored, &notes)
}

/// Collective times by group size (GPUs, as a string key).
type Collectives = BTreeMap<String, Collective>;

/// The collective times of an `sp_time_*.json` file (`allreduce_size_<n>_<m>MB_time`,
/// `all2all_size_<n>_<m>MB_time`, ms) by group size, each with its fitted line, as the engine's
/// `remap_config` reads them: all-reduce times halved (to the all-gather / reduce-scatter the
/// sequence-parallel layers run), at least 8 sizes per group.
fn sp_times(
    file: &[(String, Value)],
    path: &Path,
) -> Result<(Collectives, Collectives), InputError> {
    let mut out = [BTreeMap::new(), BTreeMap::new()];
    for (k, v) in file {
        let (which, rest) = if let Some(r) = k.strip_prefix("allreduce_size_") {
            (0, r)
        } else if let Some(r) = k.strip_prefix("all2all_size_") {
            (1, r)
        } else {
            continue;
        };
        let parsed = rest.strip_suffix("MB_time").and_then(|r| {
            let (n, mb) = r.split_once('_')?;
            Some((n.parse::<u32>().ok()?, mb.parse::<u64>().ok()?))
        });
        let Some((n, mb)) = parsed else {
            return Err(field(k, "expected <op>_size_<GPUs>_<MB>MB_time").in_file(path));
        };
        let mut t = num(v, path, k)?;
        if which == 0 {
            t /= 2.0;
        }
        out[which]
            .entry(n.to_string())
            .or_insert_with(Vec::new)
            .push((mb, t));
    }
    let [ar, a2a] = out.map(|m: BTreeMap<String, Vec<(u64, f64)>>| {
        m.into_iter()
            .map(|(n, pts)| {
                if pts.len() < 8 {
                    return Err(field(
                        format!("{n} GPUs"),
                        format!(
                            "{} message sizes measured; the engine needs at least 8",
                            pts.len()
                        ),
                    )
                    .in_file(path));
                }
                Collective::fit(pts).map(|c| (n.clone(), c)).ok_or_else(|| {
                    field(format!("{n} GPUs"), "fewer than two distinct sizes").in_file(path)
                })
            })
            .collect::<Result<Collectives, InputError>>()
    });
    Ok((ar?, a2a?))
}

/// The pipeplan instance of an extension: one chain layer per profiled layer, per sample.
fn instance(
    lt: &LayerTypes,
    name: &str,
    ignored: &[String],
    notes: &[String],
) -> Result<Instance, InputError> {
    let s = &lt.settings;
    let elem = if s.mixed() { 2.0 } else { 4.0 };
    let mut layers = Vec::new();
    for t in &lt.types {
        let out = t.seq_len * t.hidden_size * elem;
        for j in 0..t.layers {
            layers.push(Layer {
                name: format!("{}_{j}", t.name),
                kind: Some(t.name.clone()),
                forward: t.forward_ms_per_sample,
                backward: 2.0 * t.forward_ms_per_sample,
                weights: t.parameter_mb * MB,
                output: out,
                saved: Some(t.activation(1).unwrap_or(0.0) * MB),
                cut: None,
                tensor_parallel: Vec::new(),
            });
        }
    }
    let first = &lt.types[0];
    let coe_bw = |c: Option<f64>| c.filter(|c| *c > 0.0).map(|c| 1e9 / c);
    let intra = coe_bw(lt.hardware.coe_plain(2)).unwrap_or(1e11);
    let inter = coe_bw(
        lt.hardware
            .p2p_ms_per_mb
            .get(&s.gpu_num().to_string())
            .copied(),
    );
    let mut source = format!(
        "Galvatron profiles of {name}, imported by pipeplan: chain per sample (model.batch 1), \
         backward = 2 x forward (the engine's bct_fct_coe), weights = parameter_size MB, saved = \
         tp-1 activation per sample; cluster bandwidths are informative (the layer_types \
         extension carries the engine's coefficients)."
    );
    if !ignored.is_empty() {
        source.push_str(&format!(
            " Engine arguments not used by pipeplan: {}.",
            ignored.join(", ")
        ));
    }
    for n in notes {
        source.push_str(&format!(" {n}."));
    }
    let mb = if s.settle_bsz > 0 && s.settle_chunk > 0 {
        Some(((s.settle_bsz / s.settle_chunk) as u32).max(1))
    } else {
        None
    };
    let inst = Instance {
        format: FORMAT.into(),
        name: name.to_string(),
        source,
        model: Model {
            name: name.to_string(),
            batch: 1,
            input: first.seq_len * first.hidden_size * elem,
            layers,
        },
        cluster: Cluster {
            gpus: s.gpu_num(),
            gpus_per_node: Some(s.num_gpus_per_node),
            gpu: None,
            memory: s.memory_constraint * 1024.0 * MB,
            bandwidth: Bandwidth {
                intra_node: intra,
                inter_node: inter,
            },
            pcie: None,
        },
        training: Training {
            micro_batch: mb,
            micro_batches: (s.settle_chunk > 0).then_some(s.settle_chunk as u32),
            schedule: match s.pipeline_type {
                super::settings::PipelineType::Gpipe => crate::instance::ScheduleKind::Gpipe,
                super::settings::PipelineType::PipedreamFlush => {
                    crate::instance::ScheduleKind::OneFOneB
                }
            },
            weight_versions: 1,
            optimizer_state_factor: 2.0,
            precision: Some(if s.mixed() {
                Precision::Mixed
            } else {
                Precision::Fp32
            }),
        },
        extensions: [(
            EXTENSION.to_string(),
            serde_json::to_value(lt).expect("serializes"),
        )]
        .into(),
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}

/// Reads the config file and imports.
pub fn import_file(config: &Path, root: &Path) -> Result<Instance, InputError> {
    let text = crate::error::read_text(config)?;
    let doc: Value =
        crate::error::parse_json(&text, "config document").map_err(|e| e.in_file(config))?;
    import(&doc, root).map_err(|e| e.in_file(config))
}
