//! Building a suite folder from its versioned recipe: the instances, `manifest.jsonl`,
//! `README.md`, `NOTICE.md` and the licence copies. Same recipe and same peers folder, same
//! bytes.

use super::memory::MemoryClass;
use super::recipe::Recipe;
use super::{manifest, notices, readme, v1, Member, SuiteError, MANIFEST};
use pipeplan_formulations::Instance;
use std::path::Path;

/// The suite versions pipeplan can generate.
pub const VERSIONS: [&str; 1] = ["v1"];

/// The recipe of a suite version.
pub fn recipe(version: &str) -> Result<Recipe, SuiteError> {
    match version {
        "v1" => Ok(v1::recipe()),
        other => Err(SuiteError::Invalid {
            path: "suite version".into(),
            what: format!(
                "unknown suite version {other:?}; known: {}",
                VERSIONS.join(", ")
            ),
        }),
    }
}

/// A member or file left out because its data is missing (the peers folder was not given).
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Member name or file path.
    pub what: String,
    /// Why.
    pub why: String,
}

/// A generated suite, in memory.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Version name.
    pub version: &'static str,
    /// Members in manifest order, with their instances.
    pub members: Vec<(Member, Instance)>,
    /// The other files: (path in the suite's folder, text).
    pub others: Vec<(String, String)>,
    /// What could not be built.
    pub skipped: Vec<Skipped>,
}

/// An instance file's text: pretty JSON and a final newline, as `instances/`.
pub fn instance_text(inst: &Instance) -> String {
    format!("{}\n", inst.to_json())
}

/// Builds suite `version`. `peers` is the peers folder; without it the members and licence
/// copies that need it are [`Skipped`] (a complete suite needs it: see [`Generated::write`]).
pub fn generate(version: &str, peers: Option<&Path>) -> Result<Generated, SuiteError> {
    let recipe = recipe(version)?;
    let levels = MemoryClass::ALL.len();
    let mut members = Vec::new();
    let mut skipped = Vec::new();
    for s in &recipe.scenarios {
        if s.needs_peers() && peers.is_none() {
            skipped.extend(MemoryClass::ALL.iter().map(|&c| Skipped {
                what: s.member_name(c),
                why: format!(
                    "derived from a {} profile: no peers folder",
                    s.origin.source()
                ),
            }));
            continue;
        }
        members.extend(s.members(&recipe, peers)?);
    }
    let mut others = vec![
        ("README.md".to_string(), readme::readme(&recipe)),
        ("NOTICE.md".to_string(), notices::notice(&recipe, levels)),
    ];
    for (u, _) in notices::used(&recipe, levels) {
        match peers {
            None => skipped.push(Skipped {
                what: u.copy_path(),
                why: format!("a copy of {}: no peers folder", u.licence_file),
            }),
            Some(dir) => {
                let path = dir.join(u.licence_file);
                let text = std::fs::read_to_string(&path).map_err(|e| SuiteError::Io {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
                others.push((u.copy_path(), text));
            }
        }
    }
    Ok(Generated {
        version: recipe.version,
        members,
        others,
        skipped,
    })
}

impl Generated {
    /// The manifest's text.
    pub fn manifest(&self) -> String {
        let members: Vec<Member> = self.members.iter().map(|(m, _)| m.clone()).collect();
        manifest::to_text(&members)
    }

    /// Every file: (path in the suite's folder, text), instances first.
    pub fn files(&self) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = self
            .members
            .iter()
            .map(|(m, inst)| (m.file.clone(), instance_text(inst)))
            .collect();
        files.push((MANIFEST.to_string(), self.manifest()));
        files.extend(self.others.iter().cloned());
        files
    }

    /// Writes the suite into `dir`, which must be absent or empty. Refused when anything was
    /// skipped: a partial suite would not be the version it names.
    pub fn write(&self, dir: &Path) -> Result<(), SuiteError> {
        let io = |path: &Path, e: std::io::Error| SuiteError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(s) = self.skipped.first() {
            return Err(SuiteError::Invalid {
                path: dir.display().to_string(),
                what: format!(
                    "suite {} is incomplete: {} left out ({}), and {} more",
                    self.version,
                    s.what,
                    s.why,
                    self.skipped.len() - 1
                ),
            });
        }
        if dir.exists() {
            let mut entries = std::fs::read_dir(dir).map_err(|e| io(dir, e))?;
            if entries.next().is_some() {
                return Err(SuiteError::Invalid {
                    path: dir.display().to_string(),
                    what: "not empty; generate a suite into a new or empty folder".into(),
                });
            }
        }
        for (rel, text) in self.files() {
            let path = dir.join(&rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
            }
            std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        }
        Ok(())
    }
}
