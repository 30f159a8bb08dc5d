//! `pipeplan sweep` end to end, each run in its own process: the same store whatever `--jobs`,
//! a killed sweep resumed, the Slurm script's tasks (run here without Slurm) merged into the
//! single-process store, reports in every format, `--update-best-known` on a suite, calibrated
//! sweeps, and the errors of bad stores and suites.

mod support;

use pipeplan_bench::suite::{instance_hash, manifest, BestKnown, Member};
use pipeplan_bench::sweep::store::Store;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{pipeplan, shipped_str, stderr, stdout};

/// Two small shipped instances and three quick algorithms (exact-contiguous proves its optimum).
fn sweep_args(store: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["sweep", "run"].iter().map(|s| s.to_string()).collect();
    a.push(shipped_str("resnet50-1000px-b8-4gpu-8gib.json"));
    a.push(shipped_str("resnet101-1000px-b8-2gpu-16gib.json"));
    for s in [
        "--algos",
        "uniform,balanced-time,exact-contiguous,galvatron-base",
        "--repeat",
        "2",
        "--time-limit",
        "30",
        "--store",
    ] {
        a.push(s.into());
    }
    a.push(store.display().to_string());
    a
}

fn with(mut args: Vec<String>, extra: &[&str]) -> Vec<String> {
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Standard output of a run that must succeed.
fn ok(args: &[String]) -> String {
    stdout(&support::ok(args))
}

fn same(a: &Path, b: &Path) {
    let o = pipeplan(&[
        "sweep".to_string(),
        "diff".into(),
        a.display().to_string(),
        b.display().to_string(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn jobs_do_not_change_the_store_and_runs_are_measured() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.sqlite");
    let three = dir.path().join("three.sqlite");
    let out = ok(&with(sweep_args(&one), &["--jobs", "1"]));
    assert!(out.contains("16 runs planned"), "{out}");
    ok(&with(sweep_args(&three), &["--jobs", "3"]));
    same(&one, &three);
    let rows = Store::open_read(&one).unwrap().rows().unwrap();
    assert_eq!(rows.len(), 16);
    for r in &rows {
        assert_eq!(r.result, "solved", "{}", r.describe());
        assert!(r.solve_ms.is_some() && r.wall_ms.is_some() && r.cpu_ms.is_some());
        // The child's own peak resident set: more than nothing, less than 1 GiB here.
        let rss = r.peak_rss_bytes.unwrap();
        assert!(rss > 1 << 20 && rss < 1 << 30, "{rss}");
    }
    // Nothing is overwritten without --resume.
    let o = pipeplan(&sweep_args(&one));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("use --resume"), "{}", stderr(&o));
}

#[test]
fn a_killed_sweep_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.sqlite");
    let mut args = sweep_args(&store);
    let repeat = args.iter().position(|a| a == "--repeat").unwrap() + 1;
    args[repeat] = "6".into(); // 48 runs
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipeplan"))
        .args(with(args.clone(), &["--jobs", "1"]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it (SIGKILL: no chance to clean up) once some runs are stored.
    let stored = loop {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let n = Store::open_read(&store)
            .and_then(|s| s.count())
            .unwrap_or(0);
        if n >= 3 {
            child.kill().unwrap();
            child.wait().unwrap();
            break Store::open_read(&store).unwrap().count().unwrap();
        }
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended first");
    };
    assert!((3..48).contains(&stored), "{stored}");
    let out = ok(&with(args.clone(), &["--resume"]));
    assert!(
        out.contains(&format!("{stored} already stored; stored {}", 48 - stored)),
        "{out}"
    );
    let fresh = dir.path().join("fresh.sqlite");
    let mut again = args;
    let n = again.len();
    again[n - 1] = fresh.display().to_string();
    ok(&again);
    same(&store, &fresh);
}

#[test]
fn slurm_tasks_merge_into_the_single_process_store() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single.sqlite");
    ok(&sweep_args(&single));
    let store = dir.path().join("r.sqlite");
    let script = dir.path().join("sweep.sbatch");
    let mut args = sweep_args(&store);
    args[1] = "slurm".into();
    let o = pipeplan(&with(
        args,
        &["-o", &script.display().to_string(), "--array-size", "3"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("sweep merge"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("#SBATCH --array=0-2"), "{text}");
    // Each task as Slurm would start it.
    for k in 0..3 {
        let o = Command::new("bash")
            .arg(&script)
            .env("SLURM_ARRAY_TASK_ID", k.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", "3")
            .env("SLURM_ARRAY_TASK_MIN", "0")
            .output()
            .unwrap();
        assert!(o.status.success(), "task {k}: {}", stderr(&o));
        assert!(
            stdout(&o).contains(&format!("shard {k}/3")),
            "{}",
            stdout(&o)
        );
    }
    let parts: Vec<String> = (0..3)
        .map(|k| {
            dir.path()
                .join(format!("r.{k}.sqlite"))
                .display()
                .to_string()
        })
        .collect();
    let merged = dir.path().join("merged.sqlite");
    let mut m = vec!["sweep".to_string(), "merge".into()];
    m.extend(parts.iter().cloned());
    m.extend(["-o".to_string(), merged.display().to_string()]);
    ok(&m);
    same(&merged, &single);
    // A shard number out of range.
    let o = pipeplan(&with(sweep_args(&single), &["--resume", "--shard", "3/3"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--shard 3/3: K must be in 0..2"));
}

/// A suite folder holding two shipped instances.
fn suite(dir: &Path) -> PathBuf {
    let s = dir.join("suite");
    std::fs::create_dir(&s).unwrap();
    let mut members = Vec::new();
    for name in [
        "resnet50-1000px-b8-4gpu-8gib.json",
        "resnet101-1000px-b8-2gpu-16gib.json",
    ] {
        std::fs::copy(support::shipped(name), s.join(name)).unwrap();
        let inst = pipeplan_formulations::Instance::from_path(&s.join(name)).unwrap();
        members.push(Member {
            name: inst.name.clone(),
            file: name.into(),
            hash: instance_hash(&inst),
            layers: inst.num_layers(),
            gpus: inst.cluster.gpus,
            tags: vec![],
        });
    }
    manifest::write(&s.join("manifest.jsonl"), &members).unwrap();
    s
}

#[test]
fn reports_in_every_format_and_best_known_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = suite(dir.path());
    let store = dir.path().join("r.sqlite");
    let mut args = sweep_args(&store);
    args.drain(2..4);
    args.insert(2, s.display().to_string());
    ok(&args);
    let report = |extra: &[&str]| {
        let mut a = vec!["sweep", "report", store.to_str().unwrap()];
        a.extend(extra);
        let o = pipeplan(&a);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        (stdout(&o), stderr(&o))
    };
    let (table, _) = report(&[]);
    assert!(
        table.contains("performance profile: solve time (2 instances)"),
        "{table}"
    );
    assert!(table.contains("exact-contiguous"), "{table}");
    let (json, _) = report(&["--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["runs"], 16);
    assert_eq!(v["configurations"].as_array().unwrap().len(), 4);
    let (csv, _) = report(&["--csv"]);
    assert!(
        csv.starts_with("configuration,algorithm,settings,runs"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 5);
    let html = dir.path().join("r.html");
    let svg = dir.path().join("p.svg");
    let pcsv = dir.path().join("p.csv");
    report(&[
        "--html",
        html.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--profile-csv",
        pcsv.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("class=\"sortable\""));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let steps = std::fs::read_to_string(&pcsv).unwrap();
    assert!(
        steps.starts_with("metric,problems,configuration,tau,share"),
        "{steps}"
    );

    // Best-known values: exact-contiguous proves its async period on both members.
    let (_, err) = report(&["--suite", s.to_str().unwrap(), "--update-best-known"]);
    assert!(err.contains("added"), "{err}");
    let bk = BestKnown::read_or_empty(&s.join("best-known.json")).unwrap();
    let period: Vec<_> = bk
        .entries
        .iter()
        .filter(|e| e.objective == "async period")
        .collect();
    assert_eq!(period.len(), 2);
    assert!(period
        .iter()
        .all(|e| e.optimal && e.found_by == "exact-contiguous"));
    // Folding the same store again changes nothing.
    let before = std::fs::read(s.join("best-known.json")).unwrap();
    report(&["--suite", s.to_str().unwrap(), "--update-best-known"]);
    assert_eq!(std::fs::read(s.join("best-known.json")).unwrap(), before);
}

#[test]
fn bad_stores_and_suites_are_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("g.sqlite");
    std::fs::write(&garbage, "not a database at all, not at all").unwrap();
    let o = pipeplan(&["sweep", "report", garbage.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with(&format!(
            "error: {}: not a SQLite database",
            garbage.display()
        )),
        "{}",
        stderr(&o)
    );
    // A suite member edited after the manifest: nothing runs, no store is made.
    let s = suite(dir.path());
    let f = s.join("resnet50-1000px-b8-4gpu-8gib.json");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replacen("\"name\": \"", "\"name\": \"x", 1)).unwrap();
    let store = dir.path().join("r.sqlite");
    let mut args = sweep_args(&store);
    args.drain(2..4);
    args.insert(2, s.display().to_string());
    let o = pipeplan(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("does not match the manifest"),
        "{}",
        stderr(&o)
    );
    assert!(!store.exists());
}

#[test]
fn a_calibrated_sweep_is_stored_apart_and_its_tasks_carry_the_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.sqlite");
    let cal = support::root().join("calibrations/clariden-gh200.json");
    let args = |calibrated: bool| {
        let mut a: Vec<String> = ["sweep", "run"].iter().map(|s| s.to_string()).collect();
        a.push(shipped_str("resnet50-1000px-b8-4gpu-8gib.json"));
        a.extend(["--algos", "uniform", "--store"].map(String::from));
        a.push(store.display().to_string());
        if calibrated {
            a.extend(["--calibration".to_string(), cal.display().to_string()]);
        }
        a
    };
    ok(&args(false));
    // Not the same runs: no --resume needed, nothing overwritten.
    ok(&args(true));
    let rows = Store::open_read(&store).unwrap().rows().unwrap();
    assert_eq!(rows.len(), 2);
    let raw = pipeplan_formulations::Instance::from_path(&support::shipped(
        "resnet50-1000px-b8-4gpu-8gib.json",
    ))
    .unwrap();
    let constants = pipeplan_formulations::calibration::CalibrationFile::from_path(&cal)
        .unwrap()
        .constants;
    let plain = rows.iter().find(|r| r.instance_hash == instance_hash(&raw));
    let calibrated = rows
        .iter()
        .find(|r| r.instance_hash == instance_hash(&raw.calibrated(&constants)));
    let (plain, calibrated) = (plain.unwrap(), calibrated.unwrap());
    assert_eq!(
        calibrated.instance,
        format!("{} (calibrated: clariden-gh200)", plain.instance)
    );
    // Judged as `solve --calibration` judges it, not as the reference model does.
    let o = pipeplan(&[
        "solve",
        &shipped_str("resnet50-1000px-b8-4gpu-8gib.json"),
        "-a",
        "uniform",
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let solved: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let want = solved["evaluated"]["throughput"].as_f64().unwrap();
    let got = calibrated.evaluated_throughput.unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    assert!(plain.evaluated_throughput.unwrap() > got * 1.2);
    // Slurm tasks run with the same calibration.
    let script = dir.path().join("s.sbatch");
    let mut slurm = args(true);
    slurm[1] = "slurm".into();
    ok(&with(slurm, &["-o", &script.display().to_string()]));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains(&format!("--calibration {}", cal.display())),
        "{text}"
    );
    // A bad calibration file is named, and nothing is run.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let fresh = dir.path().join("fresh.sqlite");
    let mut a = args(false);
    let n = a.len();
    a[n - 1] = fresh.display().to_string();
    let o = pipeplan(&with(a, &["--calibration", bad.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.json"), "{}", stderr(&o));
    assert!(!fresh.exists());
}
