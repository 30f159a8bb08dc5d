//! The profiled layers: a model's times on one GPU type at one micro-batch size
//! (`profiles_tmp.json`) and its sizes (`llm_info.json`), at every tensor-parallel degree both
//! record, and the data type of the profiled run.

use super::{keys, Selection};
use crate::error::InputError;
use crate::instance::{Layer, Precision, TensorParallel};
use serde_json::Value;

/// Bytes per unit of `act_mem_floats` (Sailor's profiler stores allocated bytes / 4).
const ACT_MEM_UNIT: f64 = 4.0;

/// The profile of `model` on `gpu` at micro-batch `mbs` (`profiles_tmp.json`), by
/// tensor-parallel degree; an error names what is missing and what is profiled instead.
pub(super) fn profile_at<'a>(
    profiles: &'a Value,
    model: &str,
    gpu: &str,
    mbs: u32,
) -> Result<&'a Value, InputError> {
    let by_gpu = profiles.get(model).ok_or_else(|| {
        InputError::field(
            format!("profiles_tmp.json.{model}"),
            format!(
                "no profile of model {model:?}; profiled: {}",
                keys(profiles)
            ),
        )
    })?;
    let by_mbs = by_gpu.get(gpu).ok_or_else(|| {
        InputError::field(
            format!("profiles_tmp.json.{model}.{gpu}"),
            format!(
                "{model} is not profiled on {gpu}; GPU types: {}",
                keys(by_gpu)
            ),
        )
    })?;
    by_mbs.get(mbs.to_string()).ok_or_else(|| {
        InputError::field(
            format!("profiles_tmp.json.{model}.{gpu}.{mbs}"),
            format!(
                "{model} on {gpu} is not profiled at micro-batch {mbs}; profiled sizes: {}",
                keys(by_mbs)
            ),
        )
    })
}

/// The sizes of `model`'s layers by tensor-parallel degree (`llm_info.json`).
pub(super) fn sizes_of<'a>(llm: &'a Value, model: &str) -> Result<&'a Value, InputError> {
    llm.get(model).ok_or_else(|| {
        InputError::field(
            format!("llm_info.json.{model}"),
            format!("no sizes of model {model:?}; models: {}", keys(llm)),
        )
    })
}

/// The tensor-parallel degrees of a profile (`by_tp`) both timed and sized (`sizes`),
/// ascending, and those timed but not sized.
pub(super) fn degrees(by_tp: &Value, sizes: &Value) -> (Vec<u32>, Vec<u32>) {
    let mut timed: Vec<u32> = by_tp
        .as_object()
        .map(|o| o.keys().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default();
    timed.sort_unstable();
    timed
        .into_iter()
        .partition(|d| sizes.get(d.to_string()).is_some())
}

/// The data type of the profiled run, from the bytes `llm_info.json` records per parameter (its
/// first of `layers` layers with parameters at degree `base`, all of them read by then): 4 is
/// fp32 training (Sailor's runs: no `--fp16`), 2 fp16 mixed precision.
pub(super) fn precision_of(
    sizes: &Value,
    base: u32,
    layers: usize,
    model: &str,
) -> Result<Precision, InputError> {
    let at = |l: usize, key: &str| {
        sizes
            .get(base.to_string())
            .and_then(|s| s.get(l.to_string()))
            .and_then(|s| s.get(key))
            .and_then(Value::as_f64)
    };
    let (l, floats) = (0..layers)
        .find_map(|l| Some((l, at(l, "params_floats").filter(|f| *f > 0.0)?)))
        .ok_or_else(|| {
            InputError::field(
                format!("llm_info.json.{model}.{base}"),
                "no layer with parameters (params_floats > 0)",
            )
        })?;
    let field = format!("llm_info.json.{model}.{base}.{l}.params_bytes");
    let bytes = at(l, "params_bytes").ok_or_else(|| InputError::field(&field, "missing"))?;
    match bytes / floats {
        r if (r - 4.0).abs() < 1e-6 => Ok(Precision::Fp32),
        r if (r - 2.0).abs() < 1e-6 => Ok(Precision::Mixed),
        r => Err(InputError::field(
            field,
            format!("{r} bytes per parameter (params_bytes / params_floats): expected 4 (fp32) or 2 (fp16)"),
        )),
    }
}

/// The model's layers from the profile `by_tp` and the sizes `sizes` at the tensor-parallel
/// `degrees` (ascending; the first, `base`, gives one GPU's numbers, the others are carried as
/// measurements), and the model's input bytes per micro-batch.
pub(super) fn layers(
    by_tp: &Value,
    sizes: &Value,
    degrees: &[u32],
    sel: &Selection,
    model: &str,
    layers_n: usize,
) -> Result<(Vec<Layer>, f64), InputError> {
    let (gpu, mbs, base) = (&sel.gpu_type, sel.micro_batch.to_string(), degrees[0]);
    let b = sel.micro_batch as f64;
    let read_layer = |d: u32, l: usize| -> Result<(f64, f64, f64, f64, f64), InputError> {
        let times = by_tp
            .get(d.to_string())
            .and_then(|t| t.get(l.to_string()))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                InputError::field(
                    format!("profiles_tmp.json.{model}.{gpu}.{mbs}.{d}.{l}"),
                    format!("missing: [forward, backward, update] of layer {l}"),
                )
            })?;
        let t = |i: usize, what: &str| -> Result<f64, InputError> {
            let v = times.get(i).and_then(Value::as_f64).ok_or_else(|| {
                InputError::field(
                    format!("profiles_tmp.json.{model}.{gpu}.{mbs}.{d}.{l}[{i}]"),
                    format!("missing {what} time (seconds)"),
                )
            })?;
            super::super::non_negative(
                || format!("profiles_tmp.json.{model}.{gpu}.{mbs}.{d}.{l}[{i}]"),
                what,
                v,
            )
        };
        let size = |key: &str| -> Result<f64, InputError> {
            let field = || format!("llm_info.json.{model}.{d}.{l}.{key}");
            let v = sizes
                .get(d.to_string())
                .and_then(|s| s.get(l.to_string()))
                .and_then(|s| s.get(key))
                .and_then(Value::as_f64)
                .ok_or_else(|| InputError::field(field(), "missing"))?;
            super::super::non_negative(field, key, v)
        };
        Ok((
            t(0, "forward")? * 1e3,
            t(1, "backward")? * 1e3,
            size("params_bytes")?,
            size("act_output_bytes")? * b,
            size("act_mem_floats")? * ACT_MEM_UNIT * b,
        ))
    };

    let mut layers = Vec::with_capacity(layers_n);
    for l in 0..layers_n {
        // One GPU's numbers: measured at degree 1, or the smallest degree's times its degree.
        let (f, bw, w, out, saved) = read_layer(base, l)?;
        let k = base as f64;
        let name = match l {
            0 => "embedding".to_string(),
            _ if l + 1 == layers_n => "head".to_string(),
            _ => format!("layer{l}"),
        };
        let kind = match l {
            0 => "embedding",
            _ if l + 1 == layers_n => "head",
            _ => "transformer",
        };
        let mut layer = Layer::new(name, f * k, bw * k, w * k, out);
        layer.kind = Some(kind.to_string());
        layer.saved = Some(saved * k);
        for &d in degrees.iter().filter(|&&d| d > 1) {
            let (f, bw, w, _, saved) = read_layer(d, l)?;
            layer.tensor_parallel.push(TensorParallel {
                degree: d,
                forward: f,
                backward: bw,
                weights: w,
                saved,
            });
        }
        layers.push(layer);
    }
    let input = sizes
        .get(base.to_string())
        .and_then(|s| s.get("0"))
        .and_then(|s| s.get("act_input_bytes"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        * b;
    Ok((layers, input))
}
