//! `.ci/setup --check`: the libclang detection decides what a fresh machine installs, so it is
//! tested against fake library folders. bindgen (through clang-sys) links `libclang.so` or
//! `libclang-<version>.so`; the LLVM runtime `libclang-cpp.so.<n>` and a bare `libclang.so.<n>`
//! do not count, and with only those the build dies in HiGHS's bindgen step. The Python check
//! (python3-venv) is tested against fake interpreters.

mod support;

use std::path::Path;
use support::setup::{executable, listed, setup};

/// What `.ci/setup --check` would install with `dirs` as the only library folders.
fn would_install(dirs: &[&Path], libclang_path: Option<&Path>) -> Vec<String> {
    let joined = dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let mut cmd = setup(&["--check"]);
    cmd.env("PIPEPLAN_SETUP_LIBDIRS", joined)
        .env_remove("LIBCLANG_PATH");
    if let Some(p) = libclang_path {
        cmd.env("LIBCLANG_PATH", p);
    }
    listed(&mut cmd)
}

/// A temporary library folder holding empty files with these names.
fn lib_dir(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::write(dir.path().join(f), b"").unwrap();
    }
    dir
}

fn wants_libclang(files: &[&str]) -> bool {
    let dir = lib_dir(files);
    would_install(&[dir.path()], None).contains(&"libclang-dev".to_owned())
}

#[test]
fn llvm_runtime_alone_is_not_libclang() {
    // The reported machine: llvm-14's runtime without libclang-dev.
    assert!(wants_libclang(&["libclang-cpp.so.14", "libLLVM-14.so.1"]));
    assert!(wants_libclang(&["libclang-cpp.so"]));
    assert!(wants_libclang(&[]));
}

#[test]
fn versioned_soname_alone_cannot_be_linked() {
    assert!(wants_libclang(&["libclang.so.1", "libclang-14.so.1"]));
}

#[test]
fn linkable_libclang_is_found() {
    assert!(!wants_libclang(&["libclang.so"]));
    assert!(!wants_libclang(&["libclang-14.so", "libclang-cpp.so.14"]));
    assert!(!wants_libclang(&["libclang-16.0.6.so"]));
}

#[test]
fn any_listed_folder_counts_and_libclang_path_is_honoured() {
    let empty = lib_dir(&["libclang-cpp.so.14"]);
    let full = lib_dir(&["libclang.so"]);
    let both = would_install(&[empty.path(), full.path()], None);
    assert!(!both.contains(&"libclang-dev".to_owned()), "{both:?}");
    let via_env = would_install(&[empty.path()], Some(full.path()));
    assert!(!via_env.contains(&"libclang-dev".to_owned()), "{via_env:?}");
}

/// What `.ci/setup --check` would install with `python` as the interpreter it probes.
fn would_install_with_python(python: &Path) -> Vec<String> {
    listed(setup(&["--check"]).env("PIPEPLAN_SETUP_PYTHON", python))
}

/// A fake interpreter: a script that exits with `code` whatever it is asked.
fn fake_python(dir: &Path, code: i32) -> std::path::PathBuf {
    executable(
        dir,
        &format!("python-exit-{code}"),
        &format!("exit {code}\n"),
    )
}

#[test]
fn python_without_venv_or_missing_needs_python3_venv() {
    let dir = tempfile::tempdir().unwrap();
    let venv = "python3-venv".to_owned();
    // `import ensurepip, venv` fails: Debian's python3 without python3-venv.
    assert!(would_install_with_python(&fake_python(dir.path(), 1)).contains(&venv));
    assert!(would_install_with_python(&dir.path().join("no-such-python")).contains(&venv));
    assert!(!would_install_with_python(&fake_python(dir.path(), 0)).contains(&venv));
}

#[test]
fn unknown_flags_are_rejected() {
    let out = setup(&["--install-everything"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}

/// What `.ci/setup --check --browser` would install with only `bin` on the PATH.
fn would_install_for_browser(bin: &Path) -> Vec<String> {
    listed(
        setup(&["--check", "--browser"])
            .env("PATH", bin)
            .env("PIPEPLAN_SETUP_LIBDIRS", ""),
    )
}

#[test]
fn browser_flag_installs_chromium_only_when_absent() {
    let bin = tempfile::tempdir().unwrap();
    let need = would_install_for_browser(bin.path());
    assert!(need.contains(&"chromium".to_string()), "{need:?}");
    executable(bin.path(), "chromium", "");
    let need = would_install_for_browser(bin.path());
    assert!(!need.contains(&"chromium".to_string()), "{need:?}");
    // Without the flag Chromium is never installed.
    let empty = tempfile::tempdir().unwrap();
    let need = listed(
        setup(&["--check"])
            .env("PATH", empty.path())
            .env("PIPEPLAN_SETUP_LIBDIRS", ""),
    );
    assert!(!need.contains(&"chromium".to_string()), "{need:?}");
}
