//! Licence notices of the peer data a suite's members derive from: each upstream licence,
//! copied verbatim from the peers folder into `licenses/`, and `NOTICE.md` saying which members
//! derive from which repository, at which commit, and how they were changed.
//!
//! Every peer source is MIT or Apache-2.0, which allow shipping derived data with attribution
//! (and, for Apache-2.0, a statement of the changes): `docs/suite.md`, "Licences".

use super::recipe::{Origin, Recipe};
use pipeplan_formulations::import::Source;
use std::fmt::Write;

/// Where a peer format's data comes from and under which terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Upstream {
    /// The import format.
    pub source: Source,
    /// GitHub repository.
    pub repo: &'static str,
    /// Commit the peers folder holds.
    pub commit: &'static str,
    /// SPDX licence identifier.
    pub licence: &'static str,
    /// The copyright line of the licence file.
    pub copyright: &'static str,
    /// The licence file, relative to the peers folder.
    pub licence_file: &'static str,
}

/// The upstream of every peer format (as `$PIPEPLAN_PEERS/README.md` records them).
pub const UPSTREAMS: [Upstream; 5] = [
    Upstream {
        source: Source::PipeDream,
        repo: "msr-fiddle/pipedream",
        commit: "7db6a1c3e64996d5b319faec6ca38cb31bfea1c4",
        licence: "MIT",
        copyright: "Copyright (c) 2015 - present Microsoft Corporation",
        licence_file: "pipedream/LICENSE.txt",
    },
    Upstream {
        source: Source::Piper,
        repo: "msr-fiddle/piper",
        commit: "d7fc8cf91048f4b71dc2f9182fa14ebf720c016e",
        licence: "MIT",
        copyright: "Copyright (c) 2021 - present Microsoft Corporation",
        licence_file: "piper/LICENSE.txt",
    },
    Upstream {
        source: Source::DnnPartitioning,
        repo: "msr-fiddle/dnn-partitioning",
        commit: "b207b6ad27a1407d321f1e028cea96d7f2c90e3e",
        licence: "MIT",
        copyright: "Copyright (c) 2020 - present Microsoft Corporation",
        licence_file: "dnn-partitioning/LICENSE.txt",
    },
    Upstream {
        source: Source::Galvatron,
        repo: "PKU-DAIR/Hetu-Galvatron",
        commit: "14f59728aa4fcbc6a7880eb8870826e89d2c1f92",
        licence: "Apache-2.0",
        copyright: "Copyright 2024 Peking University",
        licence_file: "galvatron/v2.x_14f5972/LICENSE",
    },
    Upstream {
        source: Source::Sailor,
        repo: "eth-easl/sailor",
        commit: "cf2c8e3cc53ce178fe58a4003f46b4b6b848fc33",
        licence: "MIT",
        copyright: "Copyright (c) 2023 - present | ETH Zurich",
        licence_file: "sailor/LICENSE",
    },
];

impl Upstream {
    /// Where the suite keeps the copy of the licence.
    pub fn copy_path(&self) -> String {
        format!("licenses/{}-LICENSE.txt", self.source.name())
    }
}

/// The upstreams `recipe` derives members from, in [`UPSTREAMS`] order, with their member
/// counts.
pub fn used(recipe: &Recipe, levels: usize) -> Vec<(Upstream, usize)> {
    UPSTREAMS
        .iter()
        .filter_map(|u| {
            let n = recipe
                .scenarios
                .iter()
                .filter(|s| matches!(s.origin, Origin::Peer(p) if p.source == u.source))
                .count();
            (n > 0).then_some((*u, n * levels))
        })
        .collect()
}

/// `NOTICE.md` of a suite built from `recipe`.
pub fn notice(recipe: &Recipe, levels: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "# Notices: data from other projects\n");
    let _ = writeln!(
        t,
        "Suite {}'s own files (the `source:analytic` members, made by pipeplan's generators, \
         the manifest and the READMEs) are MIT OR Apache-2.0, as pipeplan. The other members \
         derive from profiles published by the projects below and remain under their licences \
         (copied verbatim in `licenses/`). Each was read by `pipeplan import` and changed: the \
         profile's graph linearized into a chain, units converted, and a cluster, schedule, \
         micro-batch count and memory budget added; each instance's `source` field states \
         every change and assumption.\n",
        recipe.version
    );
    let _ = writeln!(
        t,
        "| members | derived from | commit | licence | copyright | licence text |\n\
         |---|---|---|---|---|---|"
    );
    for (u, n) in used(recipe, levels) {
        let _ = writeln!(
            t,
            "| {n} x `instances/{}-*.json` | github.com/{} | `{}` | {} | {} | `{}` |",
            u.source.name(),
            u.repo,
            u.commit,
            u.licence,
            u.copyright.replace('|', "\\|"),
            u.copy_path()
        );
    }
    t
}
