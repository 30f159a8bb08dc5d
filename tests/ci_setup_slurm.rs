//! `.ci/setup --check --slurm`: Slurm's daemons, client and munge are listed exactly when they
//! are missing (looked for on PATH and in $PIPEPLAN_SETUP_SBIN; here only in fake folders).

use std::path::Path;
use std::process::Command;

const SLURM: [&str; 4] = ["slurmctld", "slurmd", "slurm-client", "munge"];

/// What `.ci/setup --check --slurm` lists with `path` as PATH and no sbin folder.
fn would_install(path: &str) -> Vec<String> {
    let out = Command::new("/bin/bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/setup"))
        .args(["--check", "--slurm"])
        .env("PATH", path)
        .env("PIPEPLAN_SETUP_SBIN", "")
        .output()
        .expect("bash runs .ci/setup");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A folder of executables with these names (`basename` is the real one: the script uses it).
fn bin_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in names {
        let p = dir.path().join(n);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::os::unix::fs::symlink("/usr/bin/basename", dir.path().join("basename")).unwrap();
    dir
}

#[test]
fn missing_slurm_is_listed_and_present_slurm_is_not() {
    let none = bin_dir(&[]);
    let listed = would_install(&none.path().display().to_string());
    for p in SLURM {
        assert!(listed.contains(&p.to_string()), "{p} not in {listed:?}");
    }
    let all = bin_dir(&["slurmctld", "slurmd", "sbatch", "munged"]);
    let listed = would_install(&all.path().display().to_string());
    for p in SLURM {
        assert!(!listed.contains(&p.to_string()), "{p} in {listed:?}");
    }
    let some = bin_dir(&["sbatch"]);
    let listed = would_install(&some.path().display().to_string());
    assert!(!listed.contains(&"slurm-client".to_string()));
    assert!(listed.contains(&"slurmd".to_string()));
}
