//! Best-known values: per member and objective, the best value found, by whom, and whether an
//! exact algorithm proved it optimal (or only bounded it).

use super::SuiteError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The best-known file of a suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestKnown {
    /// One entry per (member, objective), sorted by member then objective.
    pub entries: Vec<BestKnownEntry>,
}

/// The best value known for one member and one objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestKnownEntry {
    /// Member name.
    pub instance: String,
    /// Member hash (the value is only valid for that exact instance).
    pub hash: String,
    /// Objective name, as `ObjectiveKind::name()` prints it.
    pub objective: String,
    /// Its unit.
    pub unit: String,
    /// Best value found (smaller is better).
    pub value: f64,
    /// Algorithm that found it.
    pub found_by: String,
    /// Settings it ran with (`KEY=VALUE`).
    pub settings: Vec<String>,
    /// pipeplan version that found it.
    pub version: String,
    /// Proven optimal by an exact algorithm.
    pub optimal: bool,
    /// Best proven lower bound when not optimal.
    pub bound: Option<f64>,
}

impl BestKnown {
    /// Reads a best-known file; a missing file is an empty one.
    pub fn read_or_empty(path: &Path) -> Result<BestKnown, SuiteError> {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BestKnown::default()),
            Err(e) => Err(SuiteError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            }),
            Ok(text) => serde_json::from_str(&text).map_err(|e| SuiteError::Invalid {
                path: path.display().to_string(),
                what: e.to_string(),
            }),
        }
    }

    /// The entry of one member and objective.
    pub fn get(&self, instance: &str, objective: &str) -> Option<&BestKnownEntry> {
        self.entries
            .iter()
            .find(|e| e.instance == instance && e.objective == objective)
    }
}

/// Two values closer than this (relative) are equal: a proof of an equal value upgrades.
const TOLERANCE: f64 = 1e-9;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

/// What folding values into a best-known file changed, and what it refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FoldReport {
    /// Entries for a (member, objective) that had none.
    pub added: Vec<String>,
    /// Entries replaced by a better value.
    pub improved: Vec<String>,
    /// Entries of equal value now proven optimal.
    pub proven: Vec<String>,
    /// Entries whose lower bound rose.
    pub bounds_raised: Vec<String>,
    /// Values contradicting an entry (not applied), with why.
    pub conflicts: Vec<String>,
    /// The conflicts counted by kind: the objective, who found or proved what, and why
    /// (`async period: exact-contiguous proved optimal a value above one madpipe found`).
    pub conflict_kinds: BTreeMap<String, usize>,
}

impl FoldReport {
    /// Records a conflict: its line and its kind's count.
    fn refuse(&mut self, kind: String, line: String) {
        *self.conflict_kinds.entry(kind).or_default() += 1;
        self.conflicts.push(line);
    }

    /// Whether the file changed.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.improved.is_empty()
            && self.proven.is_empty()
            && self.bounds_raised.is_empty())
    }
}

impl BestKnownEntry {
    fn label(&self) -> String {
        format!(
            "{} / {} = {} {} by {}",
            self.instance, self.objective, self.value, self.unit, self.found_by
        )
    }
}

impl BestKnown {
    /// Folds newly found values in (`docs/sweep.md`, "Best-known values"): a better value
    /// replaces the entry (keeping the higher lower bound); a proven optimum of equal value
    /// makes the entry optimal; a higher lower bound is kept. Refused as conflicts, and
    /// reported: a value below a proven optimum or a proven lower bound, a proven optimum above
    /// a known feasible value, a bound above a known value, and a value for another instance
    /// (hash) of the same name. Candidates are taken best first, so the result does not depend
    /// on their order.
    pub fn fold(&mut self, candidates: &[BestKnownEntry]) -> FoldReport {
        let mut sorted: Vec<&BestKnownEntry> = candidates.iter().collect();
        sorted.sort_by(|a, b| {
            (&a.instance, &a.objective)
                .cmp(&(&b.instance, &b.objective))
                .then(a.value.total_cmp(&b.value))
                .then(b.optimal.cmp(&a.optimal))
                .then((&a.found_by, &a.settings).cmp(&(&b.found_by, &b.settings)))
        });
        let mut report = FoldReport::default();
        for c in sorted {
            self.fold_one(c, &mut report);
        }
        self.entries
            .sort_by(|a, b| (&a.instance, &a.objective).cmp(&(&b.instance, &b.objective)));
        report
    }

    fn fold_one(&mut self, c: &BestKnownEntry, report: &mut FoldReport) {
        if !c.value.is_finite() {
            return;
        }
        let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.instance == c.instance && e.objective == c.objective)
        else {
            let mut entry = c.clone();
            if entry.optimal {
                entry.bound = None;
            }
            report.added.push(entry.label());
            self.entries.push(entry);
            return;
        };
        let conflict = |why: &str| format!("{} ({why}; entry: {})", c.label(), e.label());
        let kind = |what: String| format!("{}: {what}", c.objective);
        if e.hash != c.hash {
            report.refuse(
                kind("a value found on another instance of the same name".into()),
                format!(
                    "{} (found on instance {}, the entry is for {}: another instance of that \
                     name)",
                    c.label(),
                    c.hash,
                    e.hash
                ),
            );
            return;
        }
        if close(c.value, e.value) {
            if c.optimal && !e.optimal {
                let bound = None;
                *e = BestKnownEntry { bound, ..c.clone() };
                report.proven.push(e.label());
            }
            return;
        }
        if c.value < e.value {
            if e.optimal {
                report.refuse(
                    kind(format!(
                        "{} found a value below one {} proved optimal",
                        c.found_by, e.found_by
                    )),
                    conflict("below a value proven optimal"),
                );
                return;
            }
            if let Some(b) = e.bound.filter(|b| c.value < *b && !close(c.value, *b)) {
                report.refuse(
                    kind(format!(
                        "{} found a value below a proven lower bound",
                        c.found_by
                    )),
                    conflict(&format!("below the proven lower bound {b}")),
                );
                return;
            }
            let bound = if c.optimal {
                None
            } else {
                match (e.bound, c.bound) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                }
            };
            *e = BestKnownEntry { bound, ..c.clone() };
            report.improved.push(e.label());
            return;
        }
        // A worse value: a proof of it contradicts the known feasible value; a bound may rise.
        if c.optimal {
            report.refuse(
                kind(format!(
                    "{} proved optimal a value above one {} found",
                    c.found_by, e.found_by
                )),
                conflict(
                    "proven optimal by an exact algorithm, but a lower feasible value is known",
                ),
            );
            return;
        }
        if let Some(b) = c.bound.filter(|b| *b > e.value && !close(*b, e.value)) {
            report.refuse(
                kind(format!(
                    "{}'s lower bound is above a value {} found",
                    c.found_by, e.found_by
                )),
                conflict(&format!("its lower bound {b} is above the known value")),
            );
            return;
        }
        if let Some(b) = c.bound {
            if !e.optimal && e.bound.is_none_or(|old| b > old) {
                e.bound = Some(b);
                report
                    .bounds_raised
                    .push(format!("{} (bound {b})", e.label()));
            }
        }
    }

    /// Writes the file atomically: a temporary file beside it, then a rename.
    pub fn write(&self, path: &Path) -> Result<(), SuiteError> {
        let io = |e: std::io::Error| SuiteError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let mut sorted = self.clone();
        sorted
            .entries
            .sort_by(|a, b| (&a.instance, &a.objective).cmp(&(&b.instance, &b.objective)));
        let text = serde_json::to_string_pretty(&sorted).expect("best-known values serialize");
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "best-known.json".into());
        let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&temp).map_err(io)?;
            f.write_all(text.as_bytes())
                .and_then(|()| f.write_all(b"\n"))
                .and_then(|()| f.sync_all())
                .map_err(|e| {
                    let _ = std::fs::remove_file(&temp);
                    io(e)
                })?;
        }
        std::fs::rename(&temp, path).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            io(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: f64, by: &str, optimal: bool, bound: Option<f64>) -> BestKnownEntry {
        BestKnownEntry {
            instance: "a".into(),
            hash: "sha256:a".into(),
            objective: "async period".into(),
            unit: "ms".into(),
            value,
            found_by: by.into(),
            settings: vec![],
            version: "0.1.0".into(),
            optimal,
            bound,
        }
    }

    fn start(e: BestKnownEntry) -> BestKnown {
        BestKnown { entries: vec![e] }
    }

    #[test]
    fn a_better_value_replaces_and_keeps_the_bound() {
        let mut bk = start(entry(10.0, "h1", false, Some(7.0)));
        let r = bk.fold(&[entry(9.0, "h2", false, None), entry(9.5, "h3", false, None)]);
        assert_eq!(r.improved.len(), 1);
        let e = &bk.entries[0];
        assert_eq!(
            (e.value, e.found_by.as_str(), e.bound),
            (9.0, "h2", Some(7.0))
        );
        assert!(!e.optimal);
    }

    #[test]
    fn an_equal_proven_optimum_upgrades() {
        let mut bk = start(entry(10.0, "heuristic", false, Some(8.0)));
        let r = bk.fold(&[entry(10.0, "exact", true, Some(10.0))]);
        assert_eq!(r.proven.len(), 1);
        let e = &bk.entries[0];
        assert!(e.optimal);
        assert_eq!((e.found_by.as_str(), e.bound), ("exact", None));
        // An equal value without proof changes nothing.
        let before = bk.clone();
        let r = bk.fold(&[entry(10.0, "other", false, None)]);
        assert!(!r.changed());
        assert_eq!(bk, before);
    }

    #[test]
    fn a_worse_proven_optimum_is_a_conflict() {
        let mut bk = start(entry(10.0, "heuristic", false, None));
        let r = bk.fold(&[entry(12.0, "exact", true, Some(12.0))]);
        assert_eq!(r.conflicts.len(), 1, "{r:?}");
        assert!(r.conflicts[0].contains("lower feasible value"), "{r:?}");
        assert_eq!(bk.entries[0].value, 10.0);
        assert!(!bk.entries[0].optimal);
        // Counted by kind: the objective, the prover and the finder.
        let r = bk.fold(&[
            entry(12.0, "exact", true, Some(12.0)),
            entry(13.0, "exact", true, Some(13.0)),
        ]);
        assert_eq!(
            r.conflict_kinds.into_iter().collect::<Vec<_>>(),
            [(
                "async period: exact proved optimal a value above one heuristic found".to_string(),
                2
            )]
        );
    }

    #[test]
    fn values_below_proofs_are_conflicts() {
        let mut bk = start(entry(10.0, "exact", true, None));
        let r = bk.fold(&[entry(9.0, "heuristic", false, None)]);
        assert_eq!(r.conflicts.len(), 1);
        assert_eq!(
            r.conflict_kinds.keys().collect::<Vec<_>>(),
            ["async period: heuristic found a value below one exact proved optimal"]
        );
        assert_eq!(bk.entries[0].value, 10.0);
        let mut bk = start(entry(10.0, "h", false, Some(9.5)));
        let r = bk.fold(&[entry(9.0, "h2", false, None)]);
        assert!(r.conflicts[0].contains("lower bound"), "{r:?}");
        assert_eq!(bk.entries[0].value, 10.0);
    }

    #[test]
    fn bounds_rise_and_new_entries_are_added() {
        let mut bk = start(entry(10.0, "h", false, Some(5.0)));
        let r = bk.fold(&[entry(11.0, "exact-stopped", false, Some(8.0))]);
        assert_eq!(r.bounds_raised.len(), 1);
        assert_eq!(bk.entries[0].bound, Some(8.0));
        assert_eq!(bk.entries[0].value, 10.0);
        let mut other = entry(3.0, "h", false, None);
        other.objective = "max stage memory".into();
        other.unit = "bytes".into();
        let r = bk.fold(&[other]);
        assert_eq!(r.added.len(), 1);
        assert_eq!(bk.entries.len(), 2);
    }

    #[test]
    fn order_of_candidates_does_not_matter() {
        let cands = [
            entry(9.0, "h", false, None),
            entry(9.0, "exact", true, Some(9.0)),
            entry(11.0, "h2", false, None),
        ];
        let mut a = BestKnown::default();
        let mut b = BestKnown::default();
        a.fold(&cands);
        let mut rev = cands.to_vec();
        rev.reverse();
        b.fold(&rev);
        assert_eq!(a, b);
        assert!(a.entries[0].optimal);
        assert_eq!(a.entries[0].found_by, "exact");
    }

    #[test]
    fn another_instance_of_the_same_name_is_refused() {
        let mut bk = start(entry(10.0, "h", false, None));
        let mut c = entry(5.0, "h", false, None);
        c.hash = "sha256:b".into();
        let r = bk.fold(&[c]);
        assert_eq!(r.conflicts.len(), 1);
        assert_eq!(bk.entries[0].value, 10.0);
    }

    #[test]
    fn write_is_atomic_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("best-known.json");
        let bk = start(entry(10.0, "h", false, None));
        bk.write(&path).unwrap();
        assert_eq!(BestKnown::read_or_empty(&path).unwrap(), bk);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }
}
