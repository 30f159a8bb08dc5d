//! `.ci/setup --check --slurm`: Slurm's daemons, client and munge are listed exactly when they
//! are missing (looked for on PATH and in $PIPEPLAN_SETUP_SBIN; here only in fake folders).

mod support;

use support::setup::{executable, listed, setup};

const SLURM: [&str; 4] = ["slurmctld", "slurmd", "slurm-client", "munge"];

/// What `.ci/setup --check --slurm` lists with `path` as PATH and no sbin folder.
fn would_install(path: &str) -> Vec<String> {
    listed(
        setup(&["--check", "--slurm"])
            .env("PATH", path)
            .env("PIPEPLAN_SETUP_SBIN", ""),
    )
}

/// A folder of executables with these names (`basename` is the real one: the script uses it).
fn bin_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in names {
        executable(dir.path(), n, "");
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
