//! Checking a suite folder (`pipeplan suite check`): every member against the manifest, and
//! instance files the manifest does not list. Unlike [`Suite::open`], which stops at the first
//! problem, this lists them all.

use super::{manifest, Suite, SuiteError, MANIFEST};
use std::collections::BTreeSet;
use std::path::Path;

/// One problem of a suite folder.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    /// The member it concerns (`None`: a file no member lists).
    pub member: Option<String>,
    /// One line naming the file and what is wrong.
    pub message: String,
}

/// The result of [`check()`].
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Members the manifest lists.
    pub members: usize,
    /// Problems found, in manifest order, then stray files by name.
    pub problems: Vec<Problem>,
}

/// Checks the suite in `dir`. A manifest that cannot be read or parsed is the error (naming
/// its line); problems of members and files are listed in the result.
pub fn check(dir: &Path) -> Result<Check, SuiteError> {
    let members = manifest::read(&dir.join(MANIFEST))?;
    let suite = Suite {
        dir: dir.to_path_buf(),
        members,
    };
    let mut problems: Vec<Problem> = suite
        .members
        .iter()
        .filter_map(|m| {
            suite.load(m).err().map(|e| Problem {
                member: Some(m.name.clone()),
                message: e.to_string(),
            })
        })
        .collect();
    // Instance files nobody lists: a member removed from the manifest but not from disk, or a
    // file added by hand.
    let listed: BTreeSet<&Path> = suite.members.iter().map(|m| Path::new(&m.file)).collect();
    let instances = dir.join("instances");
    if let Ok(entries) = std::fs::read_dir(&instances) {
        let mut stray: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .filter(|n| !listed.contains(Path::new("instances").join(n).as_path()))
            .collect();
        stray.sort();
        problems.extend(stray.into_iter().map(|n| Problem {
            member: None,
            message: format!(
                "{}: no member of {MANIFEST} lists this file",
                instances.join(n).display()
            ),
        }));
    }
    Ok(Check {
        members: suite.members.len(),
        problems,
    })
}
