//! The hardware files: all-reduce and point-to-point bandwidths, the overlap coefficient, and
//! with Ulysses the sequence-parallel collective times, as the engine's coefficients.

use super::json::read_json;
use super::json::read_ordered;
use super::{field, num, Paths};
use crate::error::InputError;
use crate::galvatron::config::resolve;
use crate::galvatron::fit::FitMethod;
use crate::galvatron::profile::{Collective, Hardware};
use crate::galvatron::settings::Settings;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Reads the hardware files `paths` names (and the `sp_time` file when the settings use Ulysses).
pub(super) fn hardware(
    root: &Path,
    config: &Map<String, Value>,
    settings: &Settings,
    paths: &Paths,
    fits: FitMethod,
) -> Result<Hardware, InputError> {
    let ar_path = &paths.allreduce;
    let ar = read_json(ar_path)?;
    let gpus = settings.gpu_num();
    let mut allreduce = BTreeMap::from([("1".to_string(), 0.0)]);
    let bw = |k: &str| -> Result<f64, InputError> {
        let v = ar.get(k).ok_or_else(|| {
            field(k, "missing in the allreduce bandwidth config").in_file(ar_path)
        })?;
        let b = num(v, ar_path, k)?;
        if b > 0.0 {
            Ok(b)
        } else {
            Err(field(k, "bandwidth must be positive").in_file(ar_path))
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
    let p2p_path = &paths.p2p;
    let p2p_file = read_json(p2p_path)?;
    let mut p2p = BTreeMap::new();
    for (k, v) in &p2p_file {
        if let Some(pp) = k.strip_prefix("pp_size_") {
            let b = num(v, p2p_path, k)?;
            if b <= 0.0 {
                return Err(field(k, "bandwidth must be positive").in_file(p2p_path));
            }
            p2p.insert(pp.to_string(), 1.0 / b);
        }
    }
    let ov_path = &paths.overlap;
    let ov = read_json(ov_path)?;
    let overlap = ov
        .get("overlap_coe")
        .ok_or_else(|| field("overlap_coe", "missing").in_file(ov_path))
        .and_then(|v| num(v, ov_path, "overlap_coe"))?;
    let (sp_allreduce, sp_all2all) = if settings.ulysses() {
        let path = resolve(
            root,
            config,
            "sp_time_path",
            &format!("sp_time_{}.json", paths.nodes),
        )?;
        sp_times(&read_ordered(&path)?, &path, fits)?
    } else {
        Default::default()
    };
    Ok(Hardware {
        allreduce_ms_per_mb: allreduce,
        p2p_ms_per_mb: p2p,
        overlap_coe: overlap,
        sp_allreduce,
        sp_all2all,
    })
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
    fits: FitMethod,
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
                Collective::fit(pts, fits)
                    .map(|c| (n.clone(), c))
                    .ok_or_else(|| {
                        field(format!("{n} GPUs"), "fewer than two distinct sizes").in_file(path)
                    })
            })
            .collect::<Result<Collectives, InputError>>()
    });
    Ok((ar?, a2a?))
}
