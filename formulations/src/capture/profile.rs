//! The `memory_profile` extension: per-layer memory statistics M_i (peak memory of the layer alone
//! on a GPU) and M_a (memory added when the layer joins a stage of preceding layers), one table
//! per (parallelism, degree, profiling batch size). Format: `docs/capture.md`.

use crate::capture::runs::{self, RawRun};
pub use crate::capture::stats::{check_degree, Parallelism, StatTable};
use crate::cost::{in_flight, state_copies};
use crate::error::InputError;
use crate::instance::Instance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Name of the extension in `instance.extensions`.
pub const EXTENSION: &str = "memory_profile";

/// The extension as written in an instance file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    /// Statistics tables.
    #[serde(default)]
    statistics: Vec<StatTable>,
    /// Raw profiling runs, turned into statistics tables.
    #[serde(default)]
    runs: Vec<RawRun>,
    /// Micro-batches in flight on a GPU during profiling (needed by the 1F1B correction).
    #[serde(default)]
    in_flight: Option<f64>,
}

/// Validated memory statistics for one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryProfile {
    /// The tables, sorted by (parallelism, degree, batch); exactly two batch sizes per
    /// (parallelism, degree).
    pub tables: Vec<StatTable>,
    /// Micro-batches in flight during profiling, when known.
    pub in_flight: Option<f64>,
    /// True when the statistics were derived from the chain (no extension in the instance).
    pub derived: bool,
    /// What was derived or ingested, for the solution's notes.
    pub notes: Vec<String>,
}

const FIELD: &str = "extensions.memory_profile";

impl MemoryProfile {
    /// The instance's statistics: the extension when present (statistics and/or raw runs), else
    /// derived from the chain with [`MemoryProfile::derive`], for stages of up to `max_degree`
    /// GPUs. Errors name the field.
    pub fn of_instance(inst: &Instance, max_degree: u32) -> Result<MemoryProfile, InputError> {
        match inst.extensions.get(EXTENSION) {
            None => Ok(MemoryProfile::derive(inst, max_degree)),
            Some(v) => MemoryProfile::parse(v, inst.num_layers()),
        }
    }

    /// Parses and validates the extension's JSON for a chain of `layers` layers.
    pub fn parse(value: &serde_json::Value, layers: usize) -> Result<MemoryProfile, InputError> {
        let raw: RawProfile = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
            InputError::field(format!("{FIELD}.{}", e.path()), e.inner().to_string())
        })?;
        if raw.statistics.is_empty() && raw.runs.is_empty() {
            return Err(InputError::field(
                FIELD,
                "neither `statistics` nor `runs`: give the M_i / M_a tables or the raw profiling runs",
            ));
        }
        if let Some(g) = raw.in_flight {
            if !(g.is_finite() && g > 0.0) {
                return Err(InputError::field(
                    format!("{FIELD}.in_flight"),
                    format!("must be a positive number of micro-batches, found {g}"),
                ));
            }
        }
        let mut notes = Vec::new();
        let mut tables = raw.statistics.clone();
        for (t, table) in tables.iter().enumerate() {
            check_table(table, layers, &format!("{FIELD}.statistics[{t}]"))?;
        }
        if !raw.runs.is_empty() {
            let from_runs = runs::ingest(&raw.runs, layers, &format!("{FIELD}.runs"))?;
            notes.push(format!(
                "memory statistics ingested from {} raw profiling runs ({} tables)",
                raw.runs.len(),
                from_runs.len()
            ));
            tables.extend(from_runs);
        }
        let tables = check_tables(tables)?;
        Ok(MemoryProfile {
            tables,
            in_flight: raw.in_flight,
            derived: false,
            notes,
        })
    }

    /// Derives the statistics from the chain with the evaluator's memory model (docs/evaluator.md),
    /// as a profiler would measure them: every stage keeps the in-flight count of the first stage
    /// of a pipeline over all GPUs (gpipe: m; 1f1b: min(m, G); async: G), communication buffers
    /// 2 x cut bytes on each side that has a neighbour (divided by dp, as in the evaluator), model
    /// states divided by tp. Tables for pp and for dp / tp at every power-of-two degree up to
    /// `max_degree`, at batch sizes micro/4 and micro/2 (the paper's defaults). The model is linear
    /// in the batch, so scaling to the trained micro-batch is exact.
    pub fn derive(inst: &Instance, max_degree: u32) -> MemoryProfile {
        let chain = inst.chain();
        let n = chain.len();
        let kind = inst.training.schedule;
        let g_count = inst.cluster.gpus as f64;
        let m = inst.micro_batches() as f64;
        // The first stage's count: every GPU's stage ahead of it.
        let in_flight = f64::from(in_flight(kind, g_count as usize, 0, m as u32));
        let copies = state_copies(inst, kind);
        let micro = inst.micro_batch() as f64;
        // Cut bytes after layer l, with no cut before layer 0 or after the last layer, so that
        // M_i(first) + sum M_a telescopes into exactly the evaluator's buffers.
        let cut = |l: isize| -> f64 {
            if l < 0 || l as usize + 1 >= n {
                0.0
            } else {
                chain.cut[l as usize]
            }
        };
        let mut configs = vec![(Parallelism::Pp, 1)];
        let mut d = 2;
        while d <= max_degree {
            configs.push((Parallelism::Dp, d));
            configs.push((Parallelism::Tp, d));
            d *= 2;
        }
        let mut tables = Vec::new();
        for (par, d) in configs {
            let df = d as f64;
            let (state_div, act_div, buf_div) = match par {
                Parallelism::Pp => (1.0, 1.0, 1.0),
                Parallelism::Dp => (1.0, df, df),
                Parallelism::Tp => (df, df, 1.0),
            };
            for frac in [0.25, 0.5] {
                let batch = micro * frac;
                // Activations and buffers were sized at the trained micro-batch: scale them.
                let s = frac;
                let mut m_i = Vec::with_capacity(n);
                let mut m_a = Vec::with_capacity(n);
                for l in 0..n {
                    let li = l as isize;
                    let states = chain.weights[l] * copies / state_div;
                    let acts = in_flight * chain.saved[l] * s / act_div;
                    m_i.push(states + acts + 2.0 * s * (cut(li - 1) + cut(li)) / buf_div);
                    m_a.push(states + acts + 2.0 * s * (cut(li) - cut(li - 1)) / buf_div);
                }
                tables.push(StatTable {
                    parallelism: par,
                    degree: d,
                    batch,
                    m_i,
                    m_a,
                });
            }
        }
        let tables = check_tables(tables).expect("derived statistics are consistent");
        MemoryProfile {
            tables,
            in_flight: Some(in_flight),
            derived: true,
            notes: vec![format!(
                "no memory_profile extension: statistics derived from the chain with the \
                 evaluator's memory model ({in_flight} micro-batches in flight per stage, \
                 schedule {kind}, degrees up to {max_degree})"
            )],
        }
    }

    /// The two tables (low batch, high batch) of a parallelism and degree, if profiled.
    pub fn pair(&self, par: Parallelism, degree: u32) -> Option<(&StatTable, &StatTable)> {
        let mut it = self
            .tables
            .iter()
            .filter(|t| t.parallelism == par && t.degree == degree);
        let a = it.next()?;
        let b = it.next()?;
        Some((a, b))
    }

    /// Number of layers the tables describe.
    pub fn layers(&self) -> usize {
        self.tables.first().map_or(0, |t| t.m_i.len())
    }

    /// Merges layers `l` and `l + 1` in every table (CAPTURE's layer merger):
    /// M_i(l, l+1) = M_i(l) + M_a(l+1), M_a(l, l+1) = M_a(l) + M_a(l+1).
    pub fn merge_pair(&mut self, l: usize) {
        for t in &mut self.tables {
            t.m_i[l] += t.m_a[l + 1];
            t.m_a[l] += t.m_a[l + 1];
            t.m_i.remove(l + 1);
            t.m_a.remove(l + 1);
        }
    }
}

fn check_table(t: &StatTable, layers: usize, field: &str) -> Result<(), InputError> {
    if !(t.batch.is_finite() && t.batch > 0.0) {
        return Err(InputError::field(
            format!("{field}.batch"),
            format!("must be a positive batch size, found {}", t.batch),
        ));
    }
    check_degree(t.parallelism, t.degree, &format!("{field}.degree"))?;
    for (name, v) in [("m_i", &t.m_i), ("m_a", &t.m_a)] {
        if v.len() != layers {
            return Err(InputError::field(
                format!("{field}.{name}"),
                format!(
                    "{} values but the chain has {layers} layers{}",
                    v.len(),
                    if v.len() < layers {
                        format!(": layers {}..{} lack data", v.len(), layers - 1)
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(InputError::field(
                format!("{field}.{name}[{i}]"),
                format!("must be a finite number of bytes, found {}", v[i]),
            ));
        }
    }
    if let Some(i) = t.m_i.iter().position(|&x| x < 0.0) {
        return Err(InputError::field(
            format!("{field}.m_i[{i}]"),
            format!(
                "a layer alone on a GPU cannot use negative memory ({})",
                t.m_i[i]
            ),
        ));
    }
    Ok(())
}

/// Sorts the tables and checks that each (parallelism, degree) has exactly two distinct batch
/// sizes and that pp is present.
fn check_tables(mut tables: Vec<StatTable>) -> Result<Vec<StatTable>, InputError> {
    tables.sort_by(|a, b| {
        (a.parallelism, a.degree)
            .cmp(&(b.parallelism, b.degree))
            .then(a.batch.total_cmp(&b.batch))
    });
    let mut groups: BTreeMap<(Parallelism, u32), Vec<f64>> = BTreeMap::new();
    for t in &tables {
        groups
            .entry((t.parallelism, t.degree))
            .or_default()
            .push(t.batch);
    }
    for ((par, d), batches) in &groups {
        let what = format!("{par} degree {d}");
        if batches.len() != 2 {
            return Err(InputError::field(
                FIELD,
                format!(
                    "{what}: {} tables (batch sizes {batches:?}); the predictor needs exactly two \
                     profiling batch sizes",
                    batches.len()
                ),
            ));
        }
        if batches[0] == batches[1] {
            return Err(InputError::field(
                FIELD,
                format!(
                    "{what}: both tables have batch size {}; the two profiling batch sizes must \
                     be distinct",
                    batches[0]
                ),
            ));
        }
    }
    if !groups.contains_key(&(Parallelism::Pp, 1)) {
        return Err(InputError::field(
            FIELD,
            "no pipeline-only (pp, degree 1) statistics; they are required",
        ));
    }
    Ok(tables)
}
