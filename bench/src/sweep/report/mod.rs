//! A store summarised per configuration (algorithm and settings), the way optimization papers
//! report benchmarks: share solved and fitting, gap to the best-known value of the same
//! objective, time as a shifted geometric mean, and Dolan–Moré performance profiles
//! (definitions: `docs/sweep.md`, "Report").

pub mod cells;
pub mod profile;

use super::row::RunRow;
use crate::suite::{BestKnown, BestKnownEntry};
use cells::{shifted_geometric_mean, Cell};
use pipeplan_solvers::harness::relative_gap;
use pipeplan_solvers::registry;
use profile::Profile;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The shift of the shifted geometric mean of solve times (ms).
pub const TIME_SHIFT_MS: f64 = 10.0;

/// One configuration's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    /// `algorithm` or `algorithm [settings]`.
    pub configuration: String,
    /// Algorithm name.
    pub algorithm: String,
    /// Canonical settings.
    pub settings: String,
    /// Runs stored.
    pub runs: usize,
    /// Instances it ran on.
    pub instances: usize,
    /// Runs it declined (unsupported).
    pub unsupported: usize,
    /// Share of its runs that produced a plan.
    pub solved_share: f64,
    /// Share of its runs whose plan the evaluator says fits.
    pub fits_share: f64,
    /// Objective kinds it claims.
    pub objectives: Vec<String>,
    /// Instances with a gap (a claimed objective and a reference of the same kind).
    pub gaps: usize,
    /// Mean gap of the claimed objective to the reference.
    pub gap_mean: Option<f64>,
    /// Worst gap.
    pub gap_worst: Option<f64>,
    /// The instance of the worst gap.
    pub gap_worst_instance: Option<String>,
    /// Instances with a solve time (solved at least once).
    pub timed: usize,
    /// Shifted geometric mean of the per-instance median solve time (ms), shift
    /// [`TIME_SHIFT_MS`].
    pub time_sgm_ms: Option<f64>,
}

/// The report of a store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Runs in the store.
    pub runs: usize,
    /// Instance names, in report order.
    pub instances: Vec<String>,
    /// Where gaps are measured from.
    pub reference: String,
    /// One summary per configuration.
    pub configurations: Vec<ConfigSummary>,
    /// Performance profiles: solve time, each claimed objective kind, evaluated throughput.
    pub profiles: Vec<Profile>,
}

fn label(algorithm: &str, settings: &str) -> String {
    if settings.is_empty() {
        algorithm.to_string()
    } else {
        format!("{algorithm} [{settings}]")
    }
}

/// Builds the report of `rows`. Gaps are measured against `best_known` (entries of the same
/// member, objective and hash) where it has a value, else against the best value of that
/// objective in the store.
pub fn build(rows: &[RunRow], best_known: Option<&BestKnown>) -> Report {
    let g = Grid::new(rows);
    let store_best = store_best(rows, &g);
    // Reference of each (instance, objective): the best-known entry, else the store's best.
    let reference = |i: usize, objective: &str| -> Option<f64> {
        let (name, hash) = &g.instances[i];
        best_known
            .and_then(|bk| bk.get(name, objective))
            .filter(|e| e.hash == *hash)
            .map(|e| e.value)
            .or_else(|| store_best.get(&(i, objective.to_string())).copied())
    };
    let configurations = (0..g.configs.len())
        .map(|c| summary(&g, c, &reference))
        .collect();
    Report {
        runs: rows.len(),
        instances: g.instances.iter().map(|(n, _)| n.clone()).collect(),
        reference: if best_known.is_some() {
            "best-known values (the store's best where the file has none)".into()
        } else {
            "the best value of the same objective in the store".into()
        },
        configurations,
        profiles: profiles(&g),
    }
}

/// A store's runs by configuration (algorithm and settings, in registry order) and instance (by
/// name, one per hash).
struct Grid {
    configs: Vec<(String, String)>,
    /// (name, hash).
    instances: Vec<(String, String)>,
    /// Instance index by hash.
    instance_index: HashMap<String, usize>,
    /// The runs of each (configuration, instance).
    cells: BTreeMap<(usize, usize), Cell>,
}

impl Grid {
    fn new(rows: &[RunRow]) -> Grid {
        let order = registry::names();
        let algo_rank = |a: &str| order.iter().position(|n| *n == a).unwrap_or(order.len());
        let mut configs: Vec<(String, String)> = rows
            .iter()
            .map(|r| (r.algorithm.clone(), r.settings.clone()))
            .collect();
        configs.sort_by(|a, b| (algo_rank(&a.0), &a.0, &a.1).cmp(&(algo_rank(&b.0), &b.0, &b.1)));
        configs.dedup();
        // Instances: (name, hash), by name.
        let mut instances: Vec<(String, String)> = rows
            .iter()
            .map(|r| (r.instance.clone(), r.instance_hash.clone()))
            .collect();
        instances.sort();
        instances.dedup_by(|a, b| a.1 == b.1);
        let config_index: HashMap<(&str, &str), usize> = configs
            .iter()
            .enumerate()
            .map(|(i, (a, s))| ((a.as_str(), s.as_str()), i))
            .collect();
        let instance_index: HashMap<String, usize> = instances
            .iter()
            .enumerate()
            .map(|(i, (_, h))| (h.clone(), i))
            .collect();
        let mut by_cell: BTreeMap<(usize, usize), Vec<&RunRow>> = BTreeMap::new();
        for r in rows {
            let c = config_index[&(r.algorithm.as_str(), r.settings.as_str())];
            let i = instance_index[r.instance_hash.as_str()];
            by_cell.entry((c, i)).or_default().push(r);
        }
        let cells: BTreeMap<(usize, usize), Cell> = by_cell
            .iter()
            .map(|(k, runs)| (*k, Cell::of(runs)))
            .collect();
        Grid {
            configs,
            instances,
            instance_index,
            cells,
        }
    }

    /// The configuration labels, in order.
    fn labels(&self) -> Vec<String> {
        self.configs.iter().map(|(a, s)| label(a, s)).collect()
    }
}

/// The best claimed value of each (instance, objective) among the store's solved runs.
fn store_best(rows: &[RunRow], g: &Grid) -> BTreeMap<(usize, String), f64> {
    let mut store_best: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.result == "solved") {
        let (Some(name), Some(v)) = (&r.claimed_objective_name, r.claimed_objective) else {
            continue;
        };
        let i = g.instance_index[r.instance_hash.as_str()];
        let e = store_best.entry((i, name.clone())).or_insert(v);
        *e = e.min(v);
    }
    store_best
}

/// Configuration `c`'s row: its runs, shares, gaps to the reference and time.
fn summary(g: &Grid, c: usize, reference: &dyn Fn(usize, &str) -> Option<f64>) -> ConfigSummary {
    let (algorithm, settings) = &g.configs[c];
    let mine: Vec<(usize, &Cell)> = g
        .cells
        .range((c, 0)..(c + 1, 0))
        .map(|((_, i), cell)| (*i, cell))
        .collect();
    let runs: usize = mine.iter().map(|(_, x)| x.runs).sum();
    let share = |n: usize| {
        if runs == 0 {
            0.0
        } else {
            n as f64 / runs as f64
        }
    };
    let mut objectives: Vec<String> = mine
        .iter()
        .filter_map(|(_, x)| x.objective.as_ref().map(|o| o.0.clone()))
        .collect();
    objectives.sort();
    objectives.dedup();
    let gaps: Vec<(usize, f64)> = mine
        .iter()
        .filter_map(|(i, x)| {
            let (name, _, v) = x.objective.as_ref()?;
            Some((*i, relative_gap(*v, reference(*i, name)?)))
        })
        .collect();
    let worst = gaps
        .iter()
        .copied()
        .reduce(|a, b| if b.1 > a.1 { b } else { a });
    let times: Vec<f64> = mine.iter().filter_map(|(_, x)| x.time_ms).collect();
    ConfigSummary {
        configuration: label(algorithm, settings),
        algorithm: algorithm.clone(),
        settings: settings.clone(),
        runs,
        instances: mine.len(),
        unsupported: mine.iter().map(|(_, x)| x.unsupported).sum(),
        solved_share: share(mine.iter().map(|(_, x)| x.solved).sum()),
        fits_share: share(mine.iter().map(|(_, x)| x.fits).sum()),
        objectives,
        gaps: gaps.len(),
        gap_mean: (!gaps.is_empty())
            .then(|| gaps.iter().map(|g| g.1).sum::<f64>() / gaps.len() as f64),
        gap_worst: worst.map(|w| w.1),
        gap_worst_instance: worst.map(|w| g.instances[w.0].0.clone()),
        timed: times.len(),
        time_sgm_ms: shifted_geometric_mean(&times, TIME_SHIFT_MS),
    }
}

/// The performance profiles: solve time, each claimed objective, and evaluated throughput.
fn profiles(g: &Grid) -> Vec<Profile> {
    let (configs, instances, cells) = (&g.configs, &g.instances, &g.cells);
    let labels = g.labels();
    let grid = |f: &dyn Fn(&Cell) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
        (0..configs.len())
            .map(|c| {
                (0..instances.len())
                    .map(|i| cells.get(&(c, i)).and_then(f))
                    .collect()
            })
            .collect()
    };
    let mut profiles = vec![profile::profile(
        "solve time",
        &labels,
        &grid(&|x: &Cell| x.time_ms),
    )];
    // One objective profile per claimed kind: over the instances where some configuration
    // claims it, among the configurations that claim it.
    let mut kinds: Vec<String> = cells
        .values()
        .filter_map(|x| x.objective.as_ref().map(|o| o.0.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let claims = |x: &Cell| x.objective.as_ref().filter(|o| o.0 == kind).map(|o| o.2);
        let cs: Vec<usize> = (0..configs.len())
            .filter(|&c| {
                (0..instances.len()).any(|i| cells.get(&(c, i)).and_then(claims).is_some())
            })
            .collect();
        let is: Vec<usize> = (0..instances.len())
            .filter(|&i| {
                cs.iter()
                    .any(|&c| cells.get(&(c, i)).and_then(claims).is_some())
            })
            .collect();
        let values: Vec<Vec<Option<f64>>> = cs
            .iter()
            .map(|&c| {
                is.iter()
                    .map(|&i| cells.get(&(c, i)).and_then(claims))
                    .collect()
            })
            .collect();
        let names: Vec<String> = cs.iter().map(|&c| labels[c].clone()).collect();
        profiles.push(profile::profile(
            &format!("claimed {kind}"),
            &names,
            &values,
        ));
    }
    // Throughput is larger-better: its profile compares 1 / throughput.
    profiles.push(profile::profile(
        "evaluated throughput (plans that fit)",
        &labels,
        &grid(&|x: &Cell| x.throughput.filter(|t| *t > 0.0).map(|t| 1.0 / t)),
    ));
    profiles
}

/// The best-known candidates of a store: every solved run's claimed objective, with its
/// provenance; `optimal` only when `exact(algorithm)` and the run's status is `optimal`, and
/// bounds only from exact algorithms.
pub fn candidates(rows: &[RunRow], exact: impl Fn(&str) -> bool) -> Vec<BestKnownEntry> {
    rows.iter()
        .filter(|r| r.result == "solved")
        .filter_map(|r| {
            let exact = exact(&r.algorithm);
            Some(BestKnownEntry {
                instance: r.instance.clone(),
                hash: r.instance_hash.clone(),
                objective: r.claimed_objective_name.clone()?,
                unit: r.claimed_objective_unit.clone()?,
                value: r.claimed_objective?,
                found_by: r.algorithm.clone(),
                settings: r.settings_list(),
                version: r.version.clone(),
                optimal: exact && r.status.as_deref() == Some("optimal"),
                bound: if exact { r.bound } else { None },
            })
        })
        .collect()
}
