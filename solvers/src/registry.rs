//! The registry: every family, each listing its algorithms. Adding a family is one line here.

use crate::algorithm::Algorithm;

/// A family's list of algorithms (its `algorithms()`).
pub type FamilyAlgorithms = fn() -> Vec<Box<dyn Algorithm>>;

/// Every family's `algorithms()`, in the order `pipeplan algorithms` lists them.
pub const FAMILIES: [FamilyAlgorithms; 5] = [
    crate::baselines::algorithms,
    crate::madpipe::algorithms,
    crate::galvatron::algorithms,
    crate::capture::algorithms,
    crate::dawnpiper::algorithms,
];

/// Every algorithm, in the order `pipeplan algorithms` lists them.
pub fn all() -> Vec<Box<dyn Algorithm>> {
    FAMILIES.iter().flat_map(|family| family()).collect()
}

/// The algorithm called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Algorithm>> {
    all().into_iter().find(|a| a.name() == name)
}

/// Names of every algorithm.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|a| a.name()).collect()
}

/// One algorithm as `pipeplan algorithms` lists it (and Python's `algorithms()`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AlgorithmEntry {
    /// Algorithm name (`--algo`).
    pub name: &'static str,
    /// Its family.
    pub family: String,
    /// Whether its claimed objective is exact (proven optimal when its status is `Optimal`).
    pub exact: bool,
    /// What it does.
    pub description: &'static str,
}

/// Every algorithm, in registry order.
pub fn entries() -> Vec<AlgorithmEntry> {
    all()
        .iter()
        .map(|a| AlgorithmEntry {
            name: a.name(),
            family: a.family().to_string(),
            exact: a.exact(),
            description: a.description(),
        })
        .collect()
}

/// One declared setting of one algorithm (`pipeplan algorithms --params`, Python `settings()`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SettingEntry {
    /// Algorithm name.
    pub algorithm: &'static str,
    /// Setting key (`--set KEY=VALUE`).
    pub setting: &'static str,
    /// What values it takes.
    pub values: String,
    /// Its default, when it has a fixed one.
    pub default: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
}

/// Every algorithm's declared settings, in registry order.
pub fn settings() -> Vec<SettingEntry> {
    all()
        .iter()
        .flat_map(|a| {
            a.params().into_iter().map(|p| SettingEntry {
                algorithm: a.name(),
                setting: p.name,
                values: p.kind.expected(),
                default: p.default,
                doc: p.doc,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut n = super::names();
        let len = n.len();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), len);
    }
}
