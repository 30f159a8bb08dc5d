//! Galvatron's output config ([`OutputConfig`]) as a plan: pipeline stage `p` on GPUs
//! `p*w..(p+1)*w` (`w` = the instance's GPUs / `pp_deg`), each run of layers with the same
//! strategy one [`Stage`] (tp groups strided when `tp_consecutive_flags` is 0), the schedule
//! `pipedream_flush` (1F1B) or `gpipe` with `chunks` micro-batches of `global_bsz / chunks`
//! samples (rounded up), and [`Extras`] for the rest.

use crate::error::InputError;
use crate::export::layout::strided;
use crate::export::RuntimePlan;
use crate::galvatron::output::{
    as_run, async_grad_reduce, split, whole_gradients, Extras, OutputConfig,
};
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};

fn bad(field: &str, msg: impl Into<String>) -> InputError {
    InputError::field(field, msg)
}

/// A per-layer list of the config, one entry per chain layer.
fn per_layer(text: &str, field: &str, n: usize) -> Result<Vec<u64>, InputError> {
    let v = split(text, field)?;
    if v.len() != n {
        return Err(bad(
            field,
            format!("{} entries; the instance has {n} layers", v.len()),
        ));
    }
    Ok(v)
}

/// 0/1 flags of a per-layer list.
fn flags(text: &str, field: &str, n: usize) -> Result<Vec<bool>, InputError> {
    per_layer(text, field, n)?
        .into_iter()
        .enumerate()
        .map(|(i, x)| match x {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad(field, format!("entry {i} is {x}; expected 0 or 1"))),
        })
        .collect()
}

/// Reads an output config.
pub fn read(text: &str, inst: &Instance) -> Result<RuntimePlan, InputError> {
    let cfg: OutputConfig = crate::error::parse_json(text, "Galvatron output config")?;
    let n = inst.num_layers();
    let pp = cfg.pp_deg;
    let gpus = inst.cluster.gpus;
    if pp == 0 || gpus % pp != 0 {
        return Err(bad(
            "pp_deg",
            format!("{pp} does not divide the instance's {gpus} GPUs"),
        ));
    }
    let w = gpus / pp;
    let division = split(&cfg.pp_division, "pp_division")?;
    if division.len() != pp as usize {
        return Err(bad(
            "pp_division",
            format!(
                "{} layer counts {division:?}, but pp_deg is {pp} (one count per stage)",
                division.len()
            ),
        ));
    }
    if let Some(s) = division.iter().position(|&c| c == 0) {
        return Err(bad(
            "pp_division",
            format!("stage {s} of {division:?} has no layer"),
        ));
    }
    if division.iter().sum::<u64>() != n as u64 {
        return Err(bad(
            "pp_division",
            format!(
                "{} layers in all; the instance has {n}",
                division.iter().sum::<u64>()
            ),
        ));
    }
    let layers = Layers::read(&cfg, n)?;
    let embed_sdp = options(&cfg)?;
    let schedule = schedule(&cfg)?;
    let whole = whole_gradients(async_grad_reduce(inst), cfg.chunks);
    let stages = stages(&division, w, &layers, &cfg.default_dp_type, whole)?;
    Ok(RuntimePlan {
        plan: Plan {
            order: None,
            stages,
            schedule,
        },
        galvatron: Some(Extras {
            vtp: cfg.vtp.unwrap_or(1),
            embed_sdp,
            vsp: cfg.vsp == Some(1),
            global_bsz: cfg.global_bsz,
            default_dp_type: cfg.default_dp_type,
        }),
    })
}

/// The per-layer strategy lists of a config.
struct Layers {
    tp: Vec<u64>,
    consec: Vec<bool>,
    sdp: Vec<bool>,
    ckpt: Vec<bool>,
    /// Ulysses sequence parallelism.
    sp: Vec<bool>,
}

impl Layers {
    /// Reads the lists for `n` layers; Ulysses below tp 2 and context parallelism are errors.
    fn read(cfg: &OutputConfig, n: usize) -> Result<Layers, InputError> {
        let tp = per_layer(&cfg.tp_sizes_enc, "tp_sizes_enc", n)?;
        let consec = flags(&cfg.tp_consecutive_flags, "tp_consecutive_flags", n)?;
        let sdp = flags(&cfg.dp_types_enc, "dp_types_enc", n)?;
        let ckpt = flags(&cfg.checkpoint, "checkpoint", n)?;
        let sp = match &cfg.use_sp {
            Some(sp) => flags(sp, "use_sp", n)?,
            None => vec![false; n],
        };
        if let Some(l) = (0..n).find(|&l| sp[l] && tp[l] < 2) {
            return Err(bad(
                "use_sp",
                format!(
                    "layer {l} uses Ulysses sequence parallelism at tp {}: it needs tp of at least 2",
                    tp[l]
                ),
            ));
        }
        if let Some(cp) = &cfg.cp_sizes_enc {
            if let Some(l) = per_layer(cp, "cp_sizes_enc", n)?
                .iter()
                .position(|&x| x != 1)
            {
                return Err(bad(
                    "cp_sizes_enc",
                    format!(
                        "layer {l} uses context parallelism, which pipeplan's plans do not model"
                    ),
                ));
            }
        }
        Ok(Layers {
            tp,
            consec,
            sdp,
            ckpt,
            sp,
        })
    }
}

/// Checks the options pipeplan's plans cannot hold (`vsp` above 1, `vcp`, data-parallel types
/// other than ddp, zero2 and zero3, which the plan's extras carry); returns `embed_sdp`.
fn options(cfg: &OutputConfig) -> Result<bool, InputError> {
    if cfg.vsp.is_some_and(|v| v > 1) {
        return Err(bad(
            "vsp",
            format!("{}: expected 0 or 1", cfg.vsp.unwrap_or(0)),
        ));
    }
    if let Some(v) = cfg.vcp.filter(|&v| v != 1) {
        return Err(bad(
            "vcp",
            format!("{v}: pipeplan's plans hold only vcp = 1"),
        ));
    }
    if !["ddp", "zero2", "zero3"].contains(&cfg.default_dp_type.as_str()) {
        return Err(bad(
            "default_dp_type",
            format!("`{}`; expected ddp, zero2 or zero3", cfg.default_dp_type),
        ));
    }
    match cfg.embed_sdp.unwrap_or(0) {
        0 => Ok(false),
        1 => Ok(true),
        x => Err(bad("embed_sdp", format!("{x}; expected 0 or 1"))),
    }
}

/// The schedule: `pipedream_flush` (1F1B) or `gpipe`, `chunks` micro-batches of
/// `global_bsz / chunks` samples (rounded up).
fn schedule(cfg: &OutputConfig) -> Result<Schedule, InputError> {
    if cfg.chunks == 0 || cfg.global_bsz == 0 {
        return Err(bad(
            if cfg.chunks == 0 {
                "chunks"
            } else {
                "global_bsz"
            },
            "must be at least 1",
        ));
    }
    let (m, micro) = (cfg.chunks, cfg.global_bsz.div_ceil(cfg.chunks));
    let (m, micro) = (
        u32::try_from(m).map_err(|_| bad("chunks", "too large"))?,
        u32::try_from(micro).map_err(|_| bad("global_bsz", "too large"))?,
    );
    match cfg.pipeline_type.as_str() {
        "pipedream_flush" => Ok(Schedule::OneFOneB {
            micro_batches: Some(m),
            micro_batch: Some(micro),
        }),
        "gpipe" => Ok(Schedule::Gpipe {
            micro_batches: Some(m),
            micro_batch: Some(micro),
        }),
        other => Err(bad(
            "pipeline_type",
            format!("`{other}`; expected pipedream_flush or gpipe"),
        )),
    }
}

/// Pipeline stage `p` on GPUs `p*w..(p+1)*w`, each run of layers with the same strategy one
/// [`Stage`].
fn stages(
    division: &[u64],
    w: u32,
    layers: &Layers,
    default_dp_type: &str,
    whole_gradients: bool,
) -> Result<Vec<Stage>, InputError> {
    let Layers {
        tp,
        consec,
        sdp,
        ckpt,
        sp,
    } = layers;
    let mut stages = Vec::new();
    let mut first = 0;
    for (p, &len) in division.iter().enumerate() {
        let base = p as u32 * w;
        let end = first + len as usize;
        let mut l = first;
        while l < end {
            let key = |i: usize| (tp[i], consec[i] || tp[i] == 1, sdp[i], ckpt[i], sp[i]);
            let mut e = l;
            while e + 1 < end && key(e + 1) == key(l) {
                e += 1;
            }
            let t = tp[l] as u32;
            if t == 0 || w % t != 0 {
                return Err(bad(
                    "tp_sizes_enc",
                    format!(
                        "layer {l} has tp {t}, which does not divide the {w} GPUs of pipeline \
                         stage {p}"
                    ),
                ));
            }
            let dp = w / t;
            let stage = Stage {
                gpus: if consec[l] {
                    (base..base + w).collect()
                } else {
                    strided(base, dp, t)
                },
                dp,
                tp: t,
                ulysses: sp[l],
                checkpoint: if ckpt[l] {
                    (l..=e).collect()
                } else {
                    Vec::new()
                },
                ..Stage::single(l, e, base)
            };
            stages.push(as_run(stage, default_dp_type, sdp[l], whole_gradients));
            l = e + 1;
        }
        first = end;
    }
    Ok(stages)
}
