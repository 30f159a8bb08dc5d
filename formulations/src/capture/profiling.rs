//! Profiling plans: the runs a user measures to obtain the statistics (`pipeplan profile-plan`).
//!
//! - mCAP / CAPTURE (Description 1 of the CAPTURE paper, generalised to any L and mesh count S):
//!   the chain is split into S blocks; for block p the first stage after the fixed blocks 0..p-1
//!   grows one layer per run (so consecutive runs share its start and give M_a), followed by
//!   single-layer stages (M_i) and an even split of the rest. Runs the blocks cannot provide
//!   (the tail of the chain) are added one requirement at a time. About L + 1 runs per batch size.
//! - CAPSlog: trimmed runs with at most two intact layers per GPU: windows of single-layer stages
//!   (M_i) and windows of two-layer stages (M_a = PM(l-1, l) - PM(l-1, l-1)), about 2L/S runs.
//! - CAPTURE adds the mCAP scheme over sub-meshes of 2 and 4 GPUs, with dp and tp.
//!
//! Every plan is generated for two batch sizes, by default a quarter and a half of the target
//! (the paper's defaults, [`default_batches`]). [`covers`] checks that a set of runs yields M_i
//! and M_a for every layer.

use crate::capture::profile::Parallelism;
use crate::error::InputError;
use serde::Serialize;
use std::collections::BTreeSet;

/// Which profiling scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// mCAP: pipeline-only runs (Description 1).
    Mcap,
    /// CAPSlog: trimmed pipeline-only runs, at most two layers per GPU.
    Capslog,
    /// CAPTURE: mCAP's runs plus 2- and 4-way dp and tp sub-mesh runs.
    Capture,
}

/// One profiling run to perform.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfilingRun {
    /// Parallelism of every stage.
    pub parallelism: Parallelism,
    /// GPUs per stage (sub-mesh size).
    pub degree: u32,
    /// Batch size (samples per micro-batch).
    pub batch: f64,
    /// Layer range `[first, last]` of each stage (trimmed runs do not cover the whole chain).
    pub stages: Vec<[usize; 2]>,
}

/// The paper's profiling batch sizes for a target batch: a quarter and a half of it.
pub fn default_batches(target_batch: f64) -> [f64; 2] {
    [target_batch / 4.0, target_batch / 2.0]
}

/// The runs of `method` for a chain of `layers` layers on `gpus` GPUs (`per_node` per node), each
/// at both profiling `batches` (see [`default_batches`]). Errors when the batches are not two
/// distinct positive sizes, the mesh cannot be split or the chain is too short.
pub fn plan(
    method: Method,
    layers: usize,
    gpus: u32,
    per_node: u32,
    batches: [f64; 2],
) -> Result<Vec<ProfilingRun>, InputError> {
    if !batches.iter().all(|b| b.is_finite() && *b > 0.0) || batches[0] == batches[1] {
        return Err(InputError::field(
            "profiling batches",
            format!(
                "need two distinct positive batch sizes (the predictor fits a line through \
                 them), found {} and {}",
                batches[0], batches[1]
            ),
        ));
    }
    if gpus < 2 {
        return Err(InputError::field(
            "cluster.gpus",
            "profiling runs need at least 2 GPUs (a stage and a neighbour)",
        ));
    }
    let mut configs = vec![(Parallelism::Pp, 1u32)];
    if method == Method::Capture {
        for d in [2u32, 4] {
            if d > per_node {
                continue;
            }
            if per_node % d != 0 {
                return Err(InputError::field(
                    "cluster.gpus_per_node",
                    format!("{per_node} GPUs per node cannot be split into sub-meshes of {d}"),
                ));
            }
            configs.push((Parallelism::Dp, d));
            configs.push((Parallelism::Tp, d));
        }
    }
    let mut out = Vec::new();
    for batch in batches {
        for &(par, d) in &configs {
            let meshes = (gpus / d) as usize;
            if layers < meshes {
                return Err(InputError::field(
                    "model.layers",
                    format!(
                        "{par} degree {d}: {layers} layers cannot fill {meshes} meshes with at \
                         least one layer each"
                    ),
                ));
            }
            // Full runs cannot isolate middle layers on two meshes: trimmed runs then.
            let parts = match method {
                Method::Capslog => capslog_runs(layers, meshes),
                _ => mcap_runs(layers, meshes).unwrap_or_else(|_| capslog_runs(layers, meshes)),
            };
            out.extend(parts.into_iter().map(|stages| ProfilingRun {
                parallelism: par,
                degree: d,
                batch,
                stages,
            }));
        }
    }
    Ok(out)
}

/// `k` layers over `g` GPUs as evenly as possible, larger parts first.
fn eq(k: usize, g: usize) -> Vec<usize> {
    (0..g).map(|i| k / g + usize::from(i < k % g)).collect()
}

/// Stage ranges from layer counts.
fn ranges(counts: &[usize]) -> Vec<[usize; 2]> {
    let mut first = 0;
    counts
        .iter()
        .map(|&c| {
            let r = [first, first + c - 1];
            first += c;
            r
        })
        .collect()
}

/// A full partition with a stage of layers `a..=b` at mesh `p`: the `a` layers before it evenly
/// over `p` meshes, the rest single-layer stages first (two of them), then evenly.
fn around(layers: usize, meshes: usize, a: usize, b: usize, p: usize) -> Option<Vec<usize>> {
    let before = a;
    let after = layers - 1 - b;
    let rest = meshes - p - 1;
    if before < p || (p == 0 && before > 0) || after < rest || (rest == 0 && after > 0) {
        return None;
    }
    let mut counts = eq(before, p);
    counts.push(b + 1 - a);
    // Two single-layer stages when the last mesh still gets the rest, else one fewer.
    let singles = if rest >= 3 { 2 } else { rest.saturating_sub(1) };
    counts.extend(std::iter::repeat_n(1, singles));
    counts.extend(eq(after - singles, rest - singles));
    Some(counts)
}

/// mCAP's pipeline runs (Description 1, generalised) over `meshes` meshes.
pub fn mcap_runs(layers: usize, meshes: usize) -> Result<Vec<Vec<[usize; 2]>>, String> {
    if layers < meshes {
        return Err(format!(
            "{layers} layers cannot fill {meshes} meshes with at least one layer each"
        ));
    }
    let mut runs: Vec<Vec<[usize; 2]>> = Vec::new();
    let push = |runs: &mut Vec<Vec<[usize; 2]>>, counts: Vec<usize>| {
        let r = ranges(&counts);
        if !runs.contains(&r) {
            runs.push(r);
        }
    };
    let blocks = eq(layers, meshes);
    let mut start = 0;
    for (p, &q) in blocks.iter().enumerate() {
        let first_n = if p == 0 { 1 } else { 2 };
        for n in first_n..=q + 1 {
            if start + n > layers {
                break;
            }
            if let Some(c) = around(layers, meshes, start, start + n - 1, p) {
                push(&mut runs, c);
            }
        }
        start += q;
    }
    // Requirements the blocks could not meet (the tail of the chain).
    for l in 0..layers {
        let (have_i, have_a) = coverage(&runs, layers);
        if !have_i[l] {
            if let Some(c) = (0..meshes).find_map(|p| around(layers, meshes, l, l, p)) {
                push(&mut runs, c);
            }
        }
        if l > 0 && !have_a[l] {
            // Extend a stage already measured up to l - 1 (one run), else measure both.
            let measured: BTreeSet<[usize; 2]> = runs.iter().flatten().copied().collect();
            let extended = (0..l)
                .filter(|&a| measured.contains(&[a, l - 1]))
                .find_map(|a| (0..meshes).find_map(|p| around(layers, meshes, a, l, p)));
            if let Some(c) = extended {
                push(&mut runs, c);
                continue;
            }
            let a = l - 1;
            let p = (0..meshes).find(|&p| {
                around(layers, meshes, a, l, p).is_some()
                    && around(layers, meshes, a, a, p).is_some()
            });
            if let Some(p) = p {
                for b in [a, l] {
                    push(&mut runs, around(layers, meshes, a, b, p).expect("checked"));
                }
            }
        }
    }
    let (have_i, have_a) = coverage(&runs, layers);
    let missing: Vec<String> = (0..layers)
        .filter(|&l| !have_i[l] || !have_a[l])
        .map(|l| l.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "runs over all {meshes} meshes cannot isolate layers {} (too few meshes around \
             them); use trimmed runs",
            missing.join(", ")
        ));
    }
    Ok(runs)
}

/// CAPSlog's trimmed runs over `meshes` meshes: windows of singles, then windows of pairs
/// starting at even and at odd layers.
pub fn capslog_runs(layers: usize, meshes: usize) -> Vec<Vec<[usize; 2]>> {
    let mut runs = Vec::new();
    let singles: Vec<[usize; 2]> = (0..layers).map(|l| [l, l]).collect();
    runs.extend(singles.chunks(meshes).map(<[_]>::to_vec));
    for parity in [0, 1] {
        let pairs: Vec<[usize; 2]> = (parity..layers.saturating_sub(1))
            .step_by(2)
            .map(|a| [a, a + 1])
            .collect();
        runs.extend(pairs.chunks(meshes).map(<[_]>::to_vec));
    }
    runs
}

/// Which layers the runs give M_i (a single-layer stage) and M_a (stages from one start ending
/// at l - 1 and at l) for. Index 0 of the second vector is always true (M_a(0) is never used).
pub fn coverage(runs: &[Vec<[usize; 2]>], layers: usize) -> (Vec<bool>, Vec<bool>) {
    let stages: BTreeSet<(usize, usize)> = runs.iter().flatten().map(|&[a, b]| (a, b)).collect();
    let mut have_i = vec![false; layers];
    let mut have_a = vec![false; layers];
    if let Some(h) = have_a.first_mut() {
        *h = true;
    }
    for &(a, b) in &stages {
        if a == b {
            have_i[a] = true;
        }
        if b > a && stages.contains(&(a, b - 1)) {
            have_a[b] = true;
        }
    }
    (have_i, have_a)
}

/// True when the runs give M_i and M_a for every layer.
pub fn covers(runs: &[Vec<[usize; 2]>], layers: usize) -> bool {
    let (i, a) = coverage(runs, layers);
    i.iter().chain(&a).all(|&x| x)
}
