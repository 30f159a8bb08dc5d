//! The `pipeplan` binary end to end: outputs, documented errors and exit codes.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{ok, ok_json, pipeplan, root, shipped, stderr, stdout};

const SMALL: &str = "resnet50-1000px-b8-4gpu-8gib.json";
const SYNC: &str = "gpt3-2.6b-s2048-b1-8gpu-40gib.json";

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// A copy of a shipped instance with one edit, as a file.
fn edited(dir: &Path, name: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shipped(SMALL)).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

#[test]
fn bad_files_give_the_documented_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(shipped(SMALL)).unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            edited(dir.path(), "version.json", |v| {
                v["format"] = "pipeplan/instance@2".into()
            }),
            "format: unsupported version \"pipeplan/instance@2\"",
        ),
        (
            edited(dir.path(), "gpus.json", |v| v["cluster"]["gpus"] = 0.into()),
            "cluster.gpus: zero GPUs",
        ),
        (
            edited(dir.path(), "negative.json", |v| {
                v["model"]["layers"][3]["weights"] = (-5).into()
            }),
            "model.layers[3].weights: negative size",
        ),
        (
            edited(dir.path(), "missing.json", |v| {
                v["cluster"].as_object_mut().unwrap().remove("memory");
            }),
            "cluster: missing field `memory`",
        ),
        (
            {
                let path = dir.path().join("nan.json");
                let bad = text.replacen("\"forward\": ", "\"forward\": NaN, \"x\": ", 1);
                std::fs::write(&path, bad).unwrap();
                path
            },
            "model.layers[0].forward:",
        ),
        (
            {
                let path = dir.path().join("truncated.json");
                std::fs::write(&path, &text[..text.len() / 2]).unwrap();
                path
            },
            "truncated JSON",
        ),
        (dir.path().join("absent.json"), "absent.json: "),
    ];
    for (path, expected) in &cases {
        for args in [
            vec!["validate", p(path)],
            vec!["solve", p(path), "--algo", "balanced-time"],
            vec!["compare", p(path)],
            vec!["evaluate", p(path), p(path)],
        ] {
            let out = pipeplan(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            let all = stdout(&out) + &stderr(&out);
            assert!(
                all.contains(expected),
                "{args:?}: expected {expected:?} in {all:?}"
            );
            assert!(!all.contains("panicked"), "{args:?} panicked: {all}");
        }
    }
}

#[test]
fn bad_options_exit_2_naming_the_option() {
    let inst = shipped(SMALL);
    for (args, expected) in [
        (
            vec!["solve", p(&inst), "--algo", "nope"],
            "--algo: unknown algorithm",
        ),
        (
            vec!["solve", p(&inst), "--algo", "uniform", "--set", "k=v"],
            "--set k",
        ),
        (
            vec!["solve", p(&inst), "--algo", "uniform", "--stages", "9"],
            "--stages: 9 stages need 9 GPUs",
        ),
        (vec!["compare", p(&inst), "--algos", "uniform,nope"], "nope"),
        (
            vec!["generate", "resnet50", "--gpus", "4", "--memory", "8GiB"],
            "--bandwidth: required",
        ),
        (
            vec![
                "generate",
                "alexnet",
                "--gpus",
                "4",
                "--memory",
                "8GiB",
                "--bandwidth",
                "12GB/s",
            ],
            "resnet50",
        ),
        (
            vec!["solve", p(&inst), "--algo", "uniform", "--time-limit", "0"],
            "time limit",
        ),
    ] {
        let out = pipeplan(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: expected {expected:?} in {}",
            stderr(&out)
        );
    }
}

#[test]
fn compare_table_labels_claimed_and_evaluated() {
    let out = ok(&["compare", p(&shipped(SMALL)), "--wide"]);
    let text = stdout(&out);
    for name in pipeplan_solvers::registry::names() {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
    for col in [
        "objective (claimed)",
        "period|iter claimed",
        "period|iter evaluated",
        "max mem evaluated",
        "fits evaluated",
        "solve time",
        "gap vs exact",
    ] {
        assert!(text.contains(col), "column {col:?} missing");
    }
}

#[test]
fn compare_json_and_csv_carry_claimed_and_evaluated() {
    let insts = [shipped(SMALL), shipped(SYNC)];
    let out = ok(&[
        "compare",
        p(&insts[0]),
        p(&insts[1]),
        "--algos",
        "balanced-time,ilp-balanced-time,uniform",
        "--json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!(r["result"], "solved");
        assert!(r["solution"]["claimed"]["objective"]["value"].is_f64());
        assert!(r["solution"]["evaluated"]["throughput"].is_f64());
        assert!(r["solution"]["stats"]["wall_ms"].is_f64());
    }
    // The ILP and the DP prove the same optimum; the uniform split is measured against it.
    for chunk in rows.chunks(3) {
        let v = |i: usize| chunk[i]["solution"]["claimed"]["objective"]["value"].as_f64();
        let (dp, ilp) = (v(0).unwrap(), v(1).unwrap());
        assert!((dp - ilp).abs() <= 1e-6 * dp, "{dp} vs {ilp}");
        let gap = chunk[2]["gap_vs_exact"].as_f64().unwrap();
        assert!((gap - (v(2).unwrap() - dp) / dp).abs() < 1e-9);
    }

    let out = ok(&["compare", p(&insts[1]), "--csv"]);
    let text = stdout(&out);
    let header = text.lines().next().unwrap();
    for col in [
        "claimed_objective",
        "claimed_iteration_ms",
        "evaluated_iteration_ms",
        "evaluated_max_memory",
        "evaluated_fits",
        "solve_ms",
        "gap_vs_exact",
    ] {
        assert!(header.split(',').any(|c| c == col), "{col} not in {header}");
    }
    assert_eq!(
        text.lines().count(),
        1 + pipeplan_solvers::registry::names().len()
    );
}

#[test]
fn solve_json_round_trips_through_evaluate() {
    let dir = tempfile::tempdir().unwrap();
    let sol_path = dir.path().join("sol.json");
    let inst = shipped(SYNC);
    let sol: serde_json::Value = ok_json(&[
        "solve",
        p(&inst),
        "--algo",
        "balanced-memory",
        "--json",
        "-o",
        p(&sol_path),
    ]);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sol_path).unwrap()).unwrap();
    assert_eq!(sol["plan"], saved["plan"]);
    for key in ["plan", "claimed", "evaluated", "stats"] {
        assert!(sol.get(key).is_some(), "{key} missing");
    }
    // Evaluating the solution file (or its bare plan) gives the solution's evaluated figures.
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, sol["plan"].to_string()).unwrap();
    for file in [&sol_path, &plan_path] {
        let ev: serde_json::Value = ok_json(&["evaluate", p(file), p(&inst), "--json"]);
        assert_eq!(ev, sol["evaluated"]);
    }
    // A plan that does not cover the chain is bad input.
    std::fs::write(
        &plan_path,
        r#"{"stages": [{"first": 0, "last": 2, "gpus": [0]}], "schedule": {"kind": "1f1b"}}"#,
    )
    .unwrap();
    let out = pipeplan(&["evaluate", p(&plan_path), p(&inst)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("plan.json"), "{}", stderr(&out));
}

#[test]
fn solve_from_a_profile_imports_in_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let graph = root().join("formulations/tests/fixtures/import/pipedream/skip.txt");
    let cluster = ["--gpus", "2", "--memory", "16GiB", "--bandwidth", "12GB/s"];
    let inst = dir.path().join("imported.json");
    let mut import = vec!["import", "--from", "pipedream", p(&graph), "-o", p(&inst)];
    import.extend(cluster);
    assert_eq!(pipeplan(&import).status.code(), Some(0));
    let two = ok(&["solve", p(&inst), "--algo", "pipedream", "--json"]);
    let solve_from = [
        "solve",
        p(&graph),
        "--from",
        "pipedream",
        "--algo",
        "pipedream",
    ];
    let mut one = solve_from.to_vec();
    one.extend(cluster);
    one.push("--json");
    let one = pipeplan(&one);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    let json = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (a, b) = (json(&one), json(&two));
    assert_eq!(a["plan"], b["plan"]);
    assert_eq!(a["claimed"], b["claimed"]);
    assert_eq!(a["evaluated"], b["evaluated"]);
    // The import's errors and its options without --from are one clear message each.
    let out = pipeplan(&solve_from);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--gpus: required"),
        "{}",
        stderr(&out)
    );
    let out = pipeplan(&["solve", p(&inst), "--algo", "pipedream", "--gpus", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--gpus is an import option: give --from FORMAT"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn import_and_generate_write_valid_instances() {
    let dir = tempfile::tempdir().unwrap();
    let graph = root().join("formulations/tests/fixtures/import/pipedream/skip.txt");
    let out_path = dir.path().join("imported.json");
    ok(&[
        "import",
        "--from",
        "pipedream",
        p(&graph),
        "--gpus",
        "2",
        "--memory",
        "16GiB",
        "--bandwidth",
        "12GB/s",
        "-o",
        p(&out_path),
    ]);
    ok(&["validate", p(&out_path)]);

    let out = pipeplan(&["import", "--from", "pipedream", p(&graph), "--gpus", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--memory: required"));

    let gen_path = dir.path().join("gen.json");
    ok(&[
        "generate",
        "bert-large",
        "--gpus",
        "4",
        "--memory",
        "16GiB",
        "--bandwidth",
        "150GB/s",
        "-o",
        p(&gen_path),
    ]);
    ok(&["solve", p(&gen_path), "--algo", "balanced-time"]);

    let out = ok(&["generate", "--list"]);
    assert!(stdout(&out).contains("gpt3-2.6b"));
}

#[test]
fn shipped_schema_is_the_generated_one() {
    let out = ok(&["schema"]);
    let shipped = std::fs::read_to_string(root().join("docs/instance.schema.json")).unwrap();
    assert_eq!(
        stdout(&out),
        shipped,
        "docs/instance.schema.json is stale: run `pipeplan schema -o docs/instance.schema.json`"
    );
    for kind in ["plan", "solution"] {
        let out = ok(&["schema", kind]);
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap();
    }
}

#[test]
fn validate_checks_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = edited(dir.path(), "bad.json", |v| v["cluster"]["gpus"] = 0.into());
    let good = shipped(SMALL);
    let out = pipeplan(&["validate", p(&good), p(&bad), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v[0]["valid"], true);
    assert_eq!(v[1]["valid"], false);
}

/// The points of `reproduce madpipe-fig7` with two fast algorithms on Inception-v3 at 32 GiB and
/// 12 GB/s, on `gpus`, with `extra` arguments.
fn small_fig7(gpus: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "reproduce",
        "madpipe-fig7",
        "--baseline",
        "uniform",
        "--reference",
        "balanced-memory",
        "--models",
        "inception-v3",
        "--gpus",
        gpus,
        "--memory",
        "32",
        "--bandwidth",
        "12",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = pipeplan(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn reproduce_runs_a_small_grid_with_any_two_algorithms() {
    let points = small_fig7("2,4", &[]);
    assert_eq!(points.len(), 2);
    for p in &points {
        if let (Some(b), Some(r)) = (
            p["baseline_period_ms"].as_f64(),
            p["reference_period_ms"].as_f64(),
        ) {
            assert!((p["ratio"].as_f64().unwrap() - b / r).abs() < 1e-12);
        }
    }
    let out = pipeplan(&["reproduce", "madpipe-fig7", "--baseline", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("\"nope\" is not available"));
}

/// `reproduce` plans and judges under a calibration like every command that evaluates: with
/// a terabyte reserved on every GPU, no plan of the grid fits.
#[test]
fn reproduce_takes_a_calibration() {
    let text = std::fs::read_to_string("calibrations/clariden-gh200.json").unwrap();
    let mut cal: serde_json::Value = serde_json::from_str(&text).unwrap();
    cal["constants"]["reserved_memory"] = serde_json::json!(1e12);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reserve.json");
    std::fs::write(&path, cal.to_string()).unwrap();
    let grid = |extra: &[&str]| {
        let points = small_fig7("2", extra);
        assert_eq!(points.len(), 1);
        points.into_iter().next().unwrap()
    };
    let plain = grid(&[]);
    assert!(plain["baseline_period_ms"].as_f64().is_some(), "{plain}");
    let file = path.display().to_string();
    let reserved = grid(&["--calibration", &file]);
    assert!(reserved["baseline_period_ms"].is_null(), "{reserved}");
    assert!(reserved["reference_period_ms"].is_null(), "{reserved}");
    let notes = reserved["notes"].to_string();
    assert!(notes.contains("plan does not fit"), "{notes}");
}

/// `-` is standard input for instance arguments and standard output for `-o`: import piped into
/// solve gives the solve of the written file; a malformed standard input is named `<stdin>`.
#[test]
fn dash_reads_standard_input() {
    use std::io::Write;
    use std::process::Stdio;
    let inst = shipped(SMALL);
    let text = std::fs::read_to_string(&inst).unwrap();
    let run = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pipeplan"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let piped = run(&["solve", "-", "--algo", "balanced-time", "--json"], &text);
    assert!(piped.status.success(), "{}", stderr(&piped));
    let direct = pipeplan(&["solve", p(&inst), "--algo", "balanced-time", "--json"]);
    let plan = |o: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["plan"].clone()
    };
    assert_eq!(plan(&piped), plan(&direct));
    let bad = run(&["solve", "-", "--algo", "balanced-time"], "{\"format\": ");
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("<stdin>"), "{}", stderr(&bad));
    let written = ok(&[
        "generate",
        "bert-large",
        "--gpus",
        "4",
        "--memory",
        "16GiB",
        "--bandwidth",
        "150GB/s",
        "-o",
        "-",
    ]);
    assert!(stdout(&written).contains("pipeplan/instance@1"));
}

#[test]
fn algorithms_params_lists_every_declared_setting_and_bad_values_get_one_format() {
    let rows: serde_json::Value = ok_json(&["algorithms", "--params", "--json"]);
    let rows = rows.as_array().unwrap();
    let has = |algo: &str, setting: &str| {
        rows.iter()
            .any(|r| r["algorithm"] == algo && r["setting"] == setting)
    };
    assert!(has("madpipe", "grid_t") && has("dawnpiper", "memopt") && has("mcap-bo", "engine"));
    assert!(!rows.iter().any(|r| r["algorithm"] == "uniform"));
    for (algo, set, want) in [
        (
            "exact-contiguous",
            "fewer=maybe",
            "--set fewer: expected true or false, found \"maybe\"",
        ),
        (
            "madpipe",
            "rounds=0",
            "--set rounds: expected an integer >= 1, found \"0\"",
        ),
        (
            "uniform",
            "grid_t=3",
            "--set grid_t: uniform takes no settings",
        ),
    ] {
        let out = pipeplan(&["solve", p(&shipped(SMALL)), "--algo", algo, "--set", set]);
        assert_eq!(out.status.code(), Some(2), "{algo}");
        assert!(stderr(&out).contains(want), "{algo}: {}", stderr(&out));
    }
}

#[test]
fn compare_default_table_fits_120_columns_and_says_what_is_claimed() {
    let out = ok(&["compare", p(&shipped(SMALL)), p(&shipped(SYNC))]);
    let text = stdout(&out);
    for line in text.lines().filter(|l| !l.starts_with("  ")) {
        assert!(line.chars().count() <= 120, "{} wide: {line}", line.len());
    }
    assert!(text.contains("objective: claimed; period|iter, samples/s, max mem, fits: evaluated"));
    for name in pipeplan_solvers::registry::names() {
        assert!(text.contains(name), "{name} missing");
    }
}
