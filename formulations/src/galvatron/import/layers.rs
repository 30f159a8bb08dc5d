//! The layer types and the embedding and head layers ("other") from the computation and memory
//! profiles, in the engine's static or `sequence` profile modes.

use super::json::{by_seq, tp_map};
use super::{field, num};
use crate::error::InputError;
use crate::galvatron::fit::{Curve, FitMethod};
use crate::galvatron::profile::{LayerType, Other, OtherMemory};
use crate::galvatron::profile_modes::{fitted_time, seq_range};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The most layers of one type an import builds: far beyond any model's, and small enough that a
/// mistyped count is refused rather than exhausting memory.
const MAX_LAYERS: usize = 1_000_000;

/// One entry of `model_layer_configs`: hidden size, layer count, sequence length.
pub(super) type LayerConfig = (f64, usize, f64);

/// `model_layer_configs`: one entry per layer type, each number positive.
pub(super) fn layer_configs(config: &Map<String, Value>) -> Result<Vec<LayerConfig>, InputError> {
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
        let layers = get("layer_num")?;
        if layers.fract() != 0.0 || layers > MAX_LAYERS as f64 {
            return Err(field(
                format!("config.model_layer_configs[{i}].layer_num"),
                format!("{layers:?} is not a layer count (a whole number, at most {MAX_LAYERS})"),
            ));
        }
        cfgs.push((get("hidden_size")?, layers as usize, get("seq_len")?));
    }
    Ok(cfgs)
}

/// The computation and memory profiles, read.
pub(super) struct Profiles<'a> {
    /// The computation profile's entries in file order (the engine's lists follow it).
    pub(super) time: Vec<(String, Value)>,
    pub(super) time_path: &'a Path,
    pub(super) mem: Map<String, Value>,
    pub(super) mem_path: &'a Path,
    /// `_sp` when the settings use sequence parallelism: the memory profile's key suffix.
    pub(super) sp: &'static str,
    /// `time_profile_mode` is `sequence`.
    pub(super) time_sequence: bool,
    /// `memory_profile_mode` is `sequence`.
    pub(super) memory_sequence: bool,
    /// How the `sequence` mode's curves are fitted.
    pub(super) fits: FitMethod,
}

/// Each layer type of `cfgs` from the profiles, with the longest profiled sequence of each
/// (memory `sequence` mode; else its own length).
pub(super) fn layer_types(
    p: &Profiles,
    cfgs: &[LayerConfig],
) -> Result<(Vec<LayerType>, Vec<f64>), InputError> {
    // Longest profiled sequence of each type (memory `sequence` mode), else its own length.
    let mut max_seqs: Vec<f64> = Vec::new();

    let mut types = Vec::new();
    for (i, &(hidden, layers, seq)) in cfgs.iter().enumerate() {
        let seq_key = format!("{}", seq as u64);
        let key = format!("layertype_{i}{}", p.sp);
        let m = p.mem.get(&key).ok_or_else(|| {
            field(
                &key,
                format!("missing in the memory profile (layer type {i})"),
            )
            .in_file(p.mem_path)
        })?;
        // Memory `sequence` mode: parameters of the shortest profiled sequence, activations of
        // the longest scaled linearly to this type's length.
        let (param_at, act_at, act_scale) = if p.memory_sequence {
            let (min, max) = seq_range(m, &key, p.mem_path)?;
            (min.to_string(), max.to_string(), (max, seq))
        } else {
            (seq_key.clone(), seq_key.clone(), (1.0, 1.0))
        };
        let param = by_seq(m, &param_at, &key, p.mem_path)?
            .get("parameter_size")
            .ok_or_else(|| {
                field(
                    format!("{key}.parameter_size"),
                    format!("missing (layer type {i})"),
                )
                .in_file(p.mem_path)
            })?;
        let param = num(param, p.mem_path, &format!("{key}.parameter_size"))?;
        let act = by_seq(m, &act_at, &key, p.mem_path)?
            .get("tp_activation_per_bsz_dict")
            .ok_or_else(|| {
                field(
                    format!("{key}.tp_activation_per_bsz_dict"),
                    format!("missing (layer type {i})"),
                )
                .in_file(p.mem_path)
            })?;
        let act: BTreeMap<String, f64> = tp_map(
            act,
            p.mem_path,
            &format!("{key}.tp_activation_per_bsz_dict"),
        )?
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
                p.time.iter().filter(move |(k, _)| k.starts_with(&prefix))
            })
            .collect();
        let plain = format!("layertype_{i}");
        let fwd = collected
            .get(i)
            .copied()
            .or_else(|| p.time.iter().find(|(k, _)| *k == plain))
            .map(|(k, v)| (k, v))
            .ok_or_else(|| {
                field(
                    format!("layertype_{i}"),
                    format!("missing in the computation profile (layer type {i})"),
                )
                .in_file(p.time_path)
            })?;
        let fwd = if p.time_sequence {
            fitted_time(
                &p.time,
                &format!("layertype_{i}_"),
                Curve::Quadratic,
                seq,
                p.fits,
                p.time_path,
            )?
        } else {
            num(fwd.1, p.time_path, fwd.0)?
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
    Ok((types, max_seqs))
}

/// The embedding and head layers: their memory with pipelining off, on the first stage and on
/// the last, and their forward time (`notes` tells when the profile has none).
pub(super) fn other(
    p: &Profiles,
    cfgs: &[LayerConfig],
    max_seqs: &[f64],
    notes: &mut Vec<String>,
) -> Result<Other, InputError> {
    let seq_info = cfgs
        .iter()
        .map(|c| format!("{}", c.2 as u64))
        .collect::<Vec<_>>()
        .join("_");
    let other_mem = |name: &str| -> Result<OtherMemory, InputError> {
        let key = format!("{name}{}", p.sp);
        let Some(v) = p.mem.get(&key) else {
            return Err(field(
                &key,
                "missing in the memory profile (embedding/head memory)",
            )
            .in_file(p.mem_path));
        };
        // Profiles key several sequence lengths as `a_b_c` or, as the engine's profiler writes
        // them for several layer types, `[a,b,c]`. Memory `sequence` mode: the longest
        // profiled sequence of the first type (pp off, first stage) or the last (last stage),
        // its activation scaled linearly to that type's length.
        let (v, rescale) = if p.memory_sequence {
            let t = if name.ends_with("_last") {
                cfgs.len() - 1
            } else {
                0
            };
            let at = max_seqs[t];
            (
                by_seq(v, &format!("{}", at as u64), &key, p.mem_path)?,
                Some((at, cfgs[t].2)),
            )
        } else {
            match v.get(format!("[{}]", seq_info.replace('_', ","))) {
                Some(inner) => (inner, None),
                None => (by_seq(v, &seq_info, &key, p.mem_path)?, None),
            }
        };
        let get = |w: &str| {
            v.get(w)
                .ok_or_else(|| field(format!("{key}.{w}"), "missing").in_file(p.mem_path))
                .and_then(|x| tp_map(x, p.mem_path, &format!("{key}.{w}")))
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
    let other_fwd = if p.time_sequence {
        // Entry 0 of the engine's per-type list: the fit at the first type's length.
        fitted_time(
            &p.time,
            "layertype_other_",
            Curve::Line,
            cfgs[0].2,
            p.fits,
            p.time_path,
        )?
    } else {
        match p
            .time
            .iter()
            .find(|(k, _)| k.starts_with("layertype_other_"))
        {
            Some((k, v)) => num(v, p.time_path, k)?,
            None => {
                notes.push(
                    "computation profile has no layertype_other_* key: embedding/head time 0"
                        .to_string(),
                );
                0.0
            }
        }
    };
    Ok(Other {
        pp_off: other_mem("other_memory_pp_off")?,
        pp_on_first: other_mem("other_memory_pp_on_first")?,
        pp_on_last: other_mem("other_memory_pp_on_last")?,
        forward_ms_per_sample: other_fwd,
    })
}
