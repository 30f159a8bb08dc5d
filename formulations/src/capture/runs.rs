//! Raw profiling runs: per run, the stages (layer ranges) and the peak memory measured on each.
//! M_i(l) comes from stages holding l alone, M_a(l) = PM(a, l) - PM(a, l - 1) from pairs of
//! stages that start at the same layer a; repeated measurements are averaged.

use crate::capture::stats::{check_degree, Parallelism, StatTable};
use crate::error::InputError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One profiling run as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    /// Parallelism of every stage of the run.
    pub parallelism: Parallelism,
    /// Degree of every stage (1 for pp).
    pub degree: u32,
    /// Profiling batch size (samples per micro-batch).
    pub batch: f64,
    /// Layer range `[first, last]` (0-based, inclusive) of each stage. Trimmed runs (CAPSlog) need
    /// not cover the whole chain.
    pub stages: Vec<[usize; 2]>,
    /// Peak memory per GPU measured on each stage (bytes), one per entry of `stages`.
    pub peak: Vec<f64>,
}

type Key = (Parallelism, u32, u64);
/// Sum and count of the peaks measured per stage range `(first, last)`.
type Measured = BTreeMap<(usize, usize), (f64, u32)>;

/// Turns raw runs into statistics tables (one per parallelism, degree and batch size). Fails,
/// naming the field, on malformed runs, and lists exactly which layers lack M_i or M_a.
pub fn ingest(runs: &[RawRun], layers: usize, field: &str) -> Result<Vec<StatTable>, InputError> {
    peaks(runs, layers, field)?
        .into_iter()
        .map(|(key, sums)| table(key, sums, layers, field))
        .collect()
}

/// The runs checked, and their peaks summed and counted per table and stage range.
fn peaks(
    runs: &[RawRun],
    layers: usize,
    field: &str,
) -> Result<BTreeMap<Key, Measured>, InputError> {
    let mut pm: BTreeMap<Key, Measured> = BTreeMap::new();
    for (r, run) in runs.iter().enumerate() {
        let f = |name: &str| format!("{field}[{r}].{name}");
        check_degree(run.parallelism, run.degree, &f("degree"))?;
        if !(run.batch.is_finite() && run.batch > 0.0) {
            return Err(InputError::field(
                f("batch"),
                format!("must be a positive batch size, found {}", run.batch),
            ));
        }
        if run.stages.is_empty() {
            return Err(InputError::field(f("stages"), "no stage"));
        }
        if run.peak.len() != run.stages.len() {
            return Err(InputError::field(
                f("peak"),
                format!("{} peaks for {} stages", run.peak.len(), run.stages.len()),
            ));
        }
        let mut prev_last: Option<usize> = None;
        for (s, &[a, b]) in run.stages.iter().enumerate() {
            let sf = format!("{field}[{r}].stages[{s}]");
            if a > b || b >= layers {
                return Err(InputError::field(
                    sf,
                    format!("[{a}, {b}] is not a layer range of a chain of {layers} layers"),
                ));
            }
            if prev_last.is_some_and(|p| a <= p) {
                return Err(InputError::field(
                    sf,
                    "stages must be in chain order without overlap",
                ));
            }
            prev_last = Some(b);
            let p = run.peak[s];
            if !(p.is_finite() && p >= 0.0) {
                return Err(InputError::field(
                    format!("{field}[{r}].peak[{s}]"),
                    format!("must be a non-negative number of bytes, found {p}"),
                ));
            }
            let e = pm
                .entry((run.parallelism, run.degree, run.batch.to_bits()))
                .or_default()
                .entry((a, b))
                .or_insert((0.0, 0));
            e.0 += p;
            e.1 += 1;
        }
    }
    Ok(pm)
}

/// The statistics table of one (parallelism, degree, batch): M_i(l) = PM(l, l), M_a(l) = mean
/// over starts a of PM(a, l) - PM(a, l - 1); fails naming the layers without data.
fn table(
    (par, degree, bits): Key,
    sums: Measured,
    layers: usize,
    field: &str,
) -> Result<StatTable, InputError> {
    let batch = f64::from_bits(bits);
    let mean: BTreeMap<(usize, usize), f64> = sums
        .into_iter()
        .map(|(k, (s, c))| (k, s / c as f64))
        .collect();
    let mut m_i = vec![f64::NAN; layers];
    let mut a_sum = vec![0.0; layers];
    let mut a_cnt = vec![0u32; layers];
    for (&(a, b), &v) in &mean {
        if a == b {
            m_i[a] = v;
        }
        if b > a {
            if let Some(&prev) = mean.get(&(a, b - 1)) {
                a_sum[b] += v - prev;
                a_cnt[b] += 1;
            }
        }
    }
    let missing_i: Vec<usize> = (0..layers).filter(|&l| m_i[l].is_nan()).collect();
    let missing_a: Vec<usize> = (1..layers).filter(|&l| a_cnt[l] == 0).collect();
    if !missing_i.is_empty() || !missing_a.is_empty() {
        let mut parts = Vec::new();
        if !missing_i.is_empty() {
            parts.push(format!(
                "no M_i (no stage holding the layer alone) for layers {}",
                list(&missing_i)
            ));
        }
        if !missing_a.is_empty() {
            parts.push(format!(
                "no M_a (no two stages from one start ending at l - 1 and l) for layers {}",
                list(&missing_a)
            ));
        }
        return Err(InputError::field(
            field,
            format!("{par} degree {degree} batch {batch}: {}", parts.join("; ")),
        ));
    }
    let m_a = (0..layers)
        .map(|l| {
            if a_cnt[l] == 0 {
                0.0
            } else {
                a_sum[l] / a_cnt[l] as f64
            }
        })
        .collect();
    Ok(StatTable {
        parallelism: par,
        degree,
        batch,
        m_i,
        m_a,
    })
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
