//! Shared by the command-line tests: running the binary, the shipped instances, output as text.
//! Each test file uses a part of it.
#![allow(dead_code)]

pub mod sailor;
pub mod setup;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `pipeplan` with `args` in the workspace root.
pub fn pipeplan<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pipeplan"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

/// Path of the shipped instance file `name`.
pub fn shipped(name: &str) -> PathBuf {
    root().join("instances").join(name)
}

/// [`shipped`] as a command-line argument.
pub fn shipped_str(name: &str) -> String {
    shipped(name).display().to_string()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `pipeplan` with `args` and fails the test, showing standard error, unless it exits 0.
#[track_caller]
pub fn ok<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let out = pipeplan(args);
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert_eq!(out.status.code(), Some(0), "{shown:?}: {}", stderr(&out));
    out
}

/// [`ok`], with standard output read as JSON.
#[track_caller]
pub fn ok_json<S: AsRef<OsStr>>(args: &[S]) -> serde_json::Value {
    serde_json::from_slice(&ok(args).stdout).expect("standard output is JSON")
}
