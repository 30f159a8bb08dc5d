//! The `layer_types` extension: Galvatron's per-layer-type profiles, the embedding/head ("other")
//! profile, the hardware coefficients and the engine's search settings.
//!
//! Units are the engine's: memory in MB (2^20 bytes), times in ms, communication coefficients in
//! ms per MB. Maps keyed by a tensor-parallel degree use the degree as a string key (`"1"`, `"2"`).

use super::fit::{Curve, FitMethod};
use super::settings::Settings;
use crate::error::InputError;
use crate::instance::Instance;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Name of the extension in `Instance::extensions`.
pub const EXTENSION: &str = "layer_types";

/// The whole extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerTypes {
    /// Layer types in chain order: the first `types[0].layers` layers of the chain are of type 0,
    /// and so on. The counts sum to the number of layers.
    pub types: Vec<LayerType>,
    /// Embedding / head layers outside the chain.
    #[serde(default)]
    pub other: Other,
    /// Communication coefficients.
    pub hardware: Hardware,
    /// The engine's search arguments.
    #[serde(default)]
    pub settings: Settings,
}

/// One profiled layer type (e.g. a transformer encoder layer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerType {
    /// Name (e.g. `layertype_0`).
    pub name: String,
    /// How many consecutive chain layers have this type.
    pub layers: usize,
    /// Sequence length.
    pub seq_len: f64,
    /// Hidden size.
    pub hidden_size: f64,
    /// Parameter memory of one layer (MB); model states are 4x this.
    pub parameter_mb: f64,
    /// Activation memory per sample (MB) by tp degree, plus `checkpoint` (checkpointed layer).
    pub activation_mb_per_sample: BTreeMap<String, f64>,
    /// Forward time of one layer per sample (ms).
    pub forward_ms_per_sample: f64,
}

/// Memory of the "other" layers for one situation (MB), by vocabulary-tp degree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtherMemory {
    /// Model states by vocab tp degree.
    pub model_states: BTreeMap<String, f64>,
    /// Activation per sample by vocab tp degree.
    pub activation: BTreeMap<String, f64>,
}

/// The embedding / head ("other") profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Other {
    /// Without pipelining (everything on one stage).
    #[serde(default)]
    pub pp_off: OtherMemory,
    /// First pipeline stage (embedding).
    #[serde(default)]
    pub pp_on_first: OtherMemory,
    /// Last pipeline stage (head).
    #[serde(default)]
    pub pp_on_last: OtherMemory,
    /// Forward time of the other layers per sample (ms).
    #[serde(default)]
    pub forward_ms_per_sample: f64,
}

/// Communication coefficients (the engine's `comm_coe_dict`, `p2p_comm_coe_dict`, overlap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    /// Allreduce ms per MB by group: `"N"` for the whole world, `"n_1"` consecutive groups of n,
    /// `"n_0"` strided groups of n, `"1"` = 0.
    pub allreduce_ms_per_mb: BTreeMap<String, f64>,
    /// Point-to-point ms per MB by pipeline degree.
    pub p2p_ms_per_mb: BTreeMap<String, f64>,
    /// Slow-down of computation and communication when they overlap.
    pub overlap_coe: f64,
    /// Measured all-gather / reduce-scatter times by tp degree (`sp_time_*.json`'s
    /// `allreduce_*` halved, as the engine reads them); read only under `sp_space tp+sp`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sp_allreduce: BTreeMap<String, Collective>,
    /// Measured all-to-all times by tp degree (`sp_time_*.json`'s `all2all_*`); read only
    /// under `sp_space tp+sp`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sp_all2all: BTreeMap<String, Collective>,
}

/// Times of one collective in one group, measured at message sizes of whole MB, and the line
/// the engine fits through them (`remap_config`: `curve_fit` of ms on MB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Collective {
    /// `(size in MB, time in ms)`, in the file's order.
    pub measured: Vec<(u64, f64)>,
    /// Least-squares slope, ms per MB.
    pub slope: f64,
    /// Least-squares intercept, ms.
    pub intercept: f64,
}

impl Collective {
    /// Fits the line through the measurements by `method`; `None` with fewer than two distinct
    /// sizes.
    pub fn fit(measured: Vec<(u64, f64)>, method: FitMethod) -> Option<Collective> {
        let x: Vec<f64> = measured.iter().map(|m| m.0 as f64).collect();
        let y: Vec<f64> = measured.iter().map(|m| m.1).collect();
        let c = method.params(Curve::Line, &x, &y)?;
        Some(Collective {
            measured,
            slope: c[0],
            intercept: c[1],
        })
    }
    /// The engine's time of a message of `bytes` (ms) in the layers' cost model: the measured
    /// time when the size is one it measured exactly, else [`Collective::line_ms`].
    pub fn time_ms(&self, bytes: f64) -> f64 {
        self.measured
            .iter()
            .find(|(mb, _)| (*mb * 1024 * 1024) as f64 == bytes)
            .map_or_else(|| self.line_ms(bytes), |m| m.1)
    }
    /// The fitted line at `bytes` in MB (ms): what the engine's embedding/head model always
    /// reads (its exact-size lookup looks in the wrong dictionary and never hits).
    pub fn line_ms(&self, bytes: f64) -> f64 {
        self.slope * (1.0 / 1024.0 / 1024.0 * bytes) + self.intercept
    }
}

impl LayerType {
    /// Activation per sample at tp degree `tp` (MB).
    pub fn activation(&self, tp: u32) -> Option<f64> {
        self.activation_mb_per_sample.get(&tp.to_string()).copied()
    }
}

impl OtherMemory {
    /// Value by degree, or the scalar profile (`"1"` only) applied to every degree.
    fn at(map: &BTreeMap<String, f64>, tp: u32) -> Option<f64> {
        map.get(&tp.to_string())
            .or_else(|| (map.len() == 1).then(|| map.values().next()).flatten())
            .copied()
    }
    /// Model states at vocab tp `tp`.
    pub fn model_states_at(&self, tp: u32) -> Option<f64> {
        Self::at(&self.model_states, tp)
    }
    /// Activation per sample at vocab tp `tp`.
    pub fn activation_at(&self, tp: u32) -> Option<f64> {
        Self::at(&self.activation, tp)
    }
}

impl Hardware {
    /// The engine's `comm_coe_dict[key]`.
    pub fn coe(&self, key: &str) -> Option<f64> {
        if key == "1" {
            return Some(self.allreduce_ms_per_mb.get("1").copied().unwrap_or(0.0));
        }
        self.allreduce_ms_per_mb.get(key).copied()
    }
    /// The measured collective of a tp group under `sp_space tp+sp`: all-to-all for a Ulysses
    /// strategy, all-gather otherwise.
    pub fn sp_collective(&self, tp: u32, ulysses: bool) -> Option<&Collective> {
        let map = if ulysses {
            &self.sp_all2all
        } else {
            &self.sp_allreduce
        };
        map.get(&tp.to_string())
    }
    /// `comm_coe_dict['%d'] if present else comm_coe_dict['%d_1']`.
    pub fn coe_plain(&self, n: u32) -> Option<f64> {
        self.coe(&n.to_string())
            .or_else(|| self.coe(&format!("{n}_1")))
    }
}

impl LayerTypes {
    /// Reads the extension of an instance, checked against the instance; `Ok(None)` if absent.
    pub fn from_instance(inst: &Instance) -> Result<Option<LayerTypes>, InputError> {
        let Some(v) = inst.extensions.get(EXTENSION) else {
            return Ok(None);
        };
        let text = v.to_string();
        let lt: LayerTypes =
            crate::error::parse_json(&text, "layer_types extension").map_err(|e| match e {
                InputError::Json { field, message, .. } => InputError::field(
                    if field.is_empty() {
                        "extensions.layer_types".to_string()
                    } else {
                        format!("extensions.layer_types.{field}")
                    },
                    message,
                ),
                e => e,
            })?;
        lt.check(inst.num_layers())?;
        Ok(Some(lt))
    }

    /// Layer type index of every chain layer.
    pub fn type_of_layers(&self) -> Vec<usize> {
        let mut v = Vec::new();
        for (t, ty) in self.types.iter().enumerate() {
            v.extend(std::iter::repeat_n(t, ty.layers));
        }
        v
    }

    /// Layer counts per type.
    pub fn counts(&self) -> Vec<usize> {
        self.types.iter().map(|t| t.layers).collect()
    }

    /// Checks every number and that the counts match the chain.
    pub fn check(&self, layers: usize) -> Result<(), InputError> {
        let f = "extensions.layer_types";
        if self.types.is_empty() {
            return Err(InputError::field(
                format!("{f}.types"),
                "at least one layer type",
            ));
        }
        let total: usize = self.counts().iter().sum();
        if total != layers {
            return Err(InputError::field(
                format!("{f}.types"),
                format!("layer counts sum to {total} but the chain has {layers} layers"),
            ));
        }
        let finite = |name: String, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(InputError::field(
                    name,
                    format!("must be finite and >= 0, got {v}"),
                ))
            }
        };
        for (i, t) in self.types.iter().enumerate() {
            let p = format!("{f}.types[{i}]");
            if t.layers == 0 {
                return Err(InputError::field(
                    format!("{p}.layers"),
                    "must be at least 1",
                ));
            }
            finite(format!("{p}.seq_len"), t.seq_len)?;
            finite(format!("{p}.hidden_size"), t.hidden_size)?;
            finite(format!("{p}.parameter_mb"), t.parameter_mb)?;
            finite(
                format!("{p}.forward_ms_per_sample"),
                t.forward_ms_per_sample,
            )?;
            for (k, v) in &t.activation_mb_per_sample {
                if k != "checkpoint" && k.parse::<u32>().map_or(true, |d| !d.is_power_of_two()) {
                    return Err(InputError::field(
                        format!("{p}.activation_mb_per_sample.{k}"),
                        "keys are power-of-two tp degrees or \"checkpoint\"",
                    ));
                }
                finite(format!("{p}.activation_mb_per_sample.{k}"), *v)?;
            }
            if t.activation(1).is_none() {
                return Err(InputError::field(
                    format!("{p}.activation_mb_per_sample"),
                    format!(
                        "layer type {} has no activation for tp 1 (key \"1\")",
                        t.name
                    ),
                ));
            }
        }
        for (name, m) in [
            ("pp_off", &self.other.pp_off),
            ("pp_on_first", &self.other.pp_on_first),
            ("pp_on_last", &self.other.pp_on_last),
        ] {
            for (k, v) in m.model_states.iter().chain(&m.activation) {
                finite(format!("{f}.other.{name}.{k}"), *v)?;
            }
        }
        finite(
            format!("{f}.other.forward_ms_per_sample"),
            self.other.forward_ms_per_sample,
        )?;
        for (k, v) in self
            .hardware
            .allreduce_ms_per_mb
            .iter()
            .chain(&self.hardware.p2p_ms_per_mb)
        {
            finite(format!("{f}.hardware.{k}"), *v)?;
        }
        if !(self.hardware.overlap_coe.is_finite() && self.hardware.overlap_coe >= 1.0) {
            return Err(InputError::field(
                format!("{f}.hardware.overlap_coe"),
                "must be a finite number >= 1",
            ));
        }
        self.settings.check(&format!("{f}.settings"))?;
        self.check_sp_times(f)
    }

    /// Under `sp_space tp+sp`, both collectives timed for every tp group the search can form,
    /// with finite times and fits (the engine would fail on a missing group mid-search).
    fn check_sp_times(&self, f: &str) -> Result<(), InputError> {
        let s = &self.settings;
        if !s.ulysses() {
            return Ok(());
        }
        let mut tp = 2;
        while tp <= s.max_tp_deg.min(s.gpu_num()) {
            for (name, op, map) in [
                ("sp_allreduce", "allreduce", &self.hardware.sp_allreduce),
                ("sp_all2all", "all2all", &self.hardware.sp_all2all),
            ] {
                let at = format!("{f}.hardware.{name}.{tp}");
                let Some(c) = map.get(&tp.to_string()) else {
                    return Err(InputError::field(
                        at,
                        format!(
                            "sp_space tp+sp needs the times of groups of {tp} GPUs (the sp_time \
                             file's `{op}_size_{tp}_<MB>MB_time`)"
                        ),
                    ));
                };
                let bad = c.measured.iter().any(|m| !(m.1.is_finite() && m.1 >= 0.0))
                    || !(c.slope.is_finite() && c.intercept.is_finite());
                if bad {
                    return Err(InputError::field(
                        at,
                        "times and their fit must be finite, times >= 0",
                    ));
                }
            }
            tp *= 2;
        }
        Ok(())
    }
}
