//! Comparing two stores run by run: the same keys, and per key the same result (every column
//! but timings, memory and version). CI checks with it that a Slurm array's merged shards equal
//! a single-process sweep (`docs/sweep.md`, "Diff").

use super::plan::RunKey;
use super::row::RunRow;
use super::store::Store;
use super::SweepError;
use std::collections::BTreeMap;

/// How two stores differ.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Diff {
    /// Runs only in the first store.
    pub only_first: Vec<String>,
    /// Runs only in the second store.
    pub only_second: Vec<String>,
    /// Runs in both with different results, and the columns that differ.
    pub different: Vec<(String, Vec<&'static str>)>,
    /// Runs in both with the same result.
    pub same: usize,
}

impl Diff {
    /// Whether the stores hold the same runs with the same results.
    pub fn is_empty(&self) -> bool {
        self.only_first.is_empty() && self.only_second.is_empty() && self.different.is_empty()
    }
}

/// Compares the runs of two stores.
pub fn diff(first: &Store, second: &Store) -> Result<Diff, SweepError> {
    let index = |rows: Vec<RunRow>| -> BTreeMap<RunKey, RunRow> {
        rows.into_iter().map(|r| (r.key(), r)).collect()
    };
    let a = index(first.rows()?);
    let b = index(second.rows()?);
    let mut d = Diff::default();
    for (k, ra) in &a {
        match b.get(k) {
            None => d.only_first.push(ra.describe()),
            Some(rb) => {
                let cols = ra.result_differences(rb);
                if cols.is_empty() {
                    d.same += 1;
                } else {
                    d.different.push((ra.describe(), cols));
                }
            }
        }
    }
    d.only_second = b
        .iter()
        .filter(|(k, _)| !a.contains_key(k))
        .map(|(_, r)| r.describe())
        .collect();
    Ok(d)
}
