//! `.ci/setup` run against fake machines: library folders, interpreters and PATHs made of
//! placeholder files.

use super::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `.ci/setup` with `args`, run by `/bin/bash` (an absolute path: the tests replace PATH).
pub fn setup(args: &[&str]) -> Command {
    let mut cmd = Command::new("/bin/bash");
    cmd.arg(root().join(".ci/setup")).args(args);
    cmd
}

/// The packages a `.ci/setup --check` command lists, one per line; fails the test, showing
/// standard error, unless it exits 0.
#[track_caller]
pub fn listed(cmd: &mut Command) -> Vec<String> {
    let out = cmd.output().expect("bash runs .ci/setup");
    assert!(
        out.status.success(),
        "setup --check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// An executable shell script `dir/name` running `body`.
pub fn executable(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}
