//! Size limits on the command line (`docs/limits.md`): `generate --blocks` makes a long chain;
//! `solve` declines a size an exact algorithm cannot finish with exit code 2 and the message
//! naming the size, the limit and the setting, and the setting given, it solves; `compare` lists
//! the pair as unsupported with the same reason.

mod support;

use support::{ok, pipeplan, stderr, stdout};

#[test]
fn a_declined_size_is_exit_2_until_its_setting_lifts_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gpt-128.json");
    let f = file.to_str().unwrap();
    let out = ok(&[
        "generate",
        "gpt3-6.7b",
        "--blocks",
        "126",
        "--gpus",
        "64",
        "--gpus-per-node",
        "8",
        "--memory",
        "80GiB",
        "--bandwidth",
        "300GB/s",
        "-o",
        f,
    ]);
    assert!(
        stderr(&out).contains("128 layers, 64 GPUs"),
        "{}",
        stderr(&out)
    );

    let out = pipeplan(&["solve", f, "--algo", "ilp-balanced-time"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.starts_with(
            "error: ilp-balanced-time does not support instance \
             gpt3-6.7b-126blocks-s2048-b1-64gpu-80gib: L = 128 layers"
        ) && e.contains("8064 binary variables, above the limit of 4096")
            && e.contains("--set max_binaries=8064 lifts it"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");

    // Lifted, it runs: a plan (0) or the time limit (1), not a refusal (2).
    let out = pipeplan(&[
        "solve",
        f,
        "--algo",
        "ilp-balanced-time",
        "--set",
        "max_binaries=8064",
        "--time-limit",
        "1",
    ]);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));

    let out = ok(&[
        "compare",
        f,
        "--algos",
        "uniform,ilp-balanced-time",
        "--csv",
    ]);
    let csv = stdout(&out);
    let row = csv
        .lines()
        .find(|l| l.contains(",ilp-balanced-time,"))
        .expect("a row for the declined pair");
    assert!(
        row.contains(",unsupported,") && row.contains("8064 binary variables"),
        "{row}"
    );

    let out = pipeplan(&[
        "generate",
        "resnet50",
        "--blocks",
        "3",
        "--gpus",
        "4",
        "--memory",
        "8GiB",
        "--bandwidth",
        "12GB/s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: blocks: resnet50 has a fixed layout"),
        "{}",
        stderr(&out)
    );
}
