//! Test support, behind the `testing` feature: locating the reference data of other tools
//! (`$PIPEPLAN_PEERS`, default `shared/peers/` beside the workspace) that tests and benchmarks
//! read at run time. The data is never part of this repository: a clone without it skips those
//! checks with a visible notice.

use std::io::Write;
use std::path::PathBuf;

/// The peers folder: `$PIPEPLAN_PEERS`, else `shared/peers` beside the workspace root.
/// `None` (after printing a skip notice for `what`) when it does not exist.
pub fn dir(what: &str) -> Option<PathBuf> {
    let path = match std::env::var_os("PIPEPLAN_PEERS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/peers"),
    };
    if path.is_dir() {
        Some(path)
    } else {
        skip_notice(
            what,
            &format!(
                "peers folder {} not found (set PIPEPLAN_PEERS)",
                path.display()
            ),
        );
        None
    }
}

/// A sub-folder of the peers folder, or `None` with a skip notice.
pub fn subdir(sub: &str, what: &str) -> Option<PathBuf> {
    let base = dir(what)?;
    let p = base.join(sub);
    if p.is_dir() {
        Some(p)
    } else {
        skip_notice(what, &format!("{} not found", p.display()));
        None
    }
}

/// Prints `SKIPPED <what>: <why>` straight to the process's stderr, so that the notice shows even
/// though the test harness captures the output of passing tests.
pub fn skip_notice(what: &str, why: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {what}: {why}");
}

pub mod pipedream_runs;
pub mod sailor_runs;
