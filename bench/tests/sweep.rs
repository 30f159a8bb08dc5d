//! Sweeps through the library, runs made in this process: resume, shards, merge, diff, store
//! errors, the report's numbers on a hand-made store, and best-known candidates.

use pipeplan_bench::suite::{instance_hash, manifest, BestKnown, Member};
use pipeplan_bench::sweep::diff::diff;
use pipeplan_bench::sweep::execute::{execute, pending, Mode};
use pipeplan_bench::sweep::merge::merge;
use pipeplan_bench::sweep::plan::{plan, read_inputs, Input, RunKey, RunSpec, SweepSpec};
use pipeplan_bench::sweep::report::profile::{Curve, Profile};
use pipeplan_bench::sweep::report::{build, candidates};
use pipeplan_bench::sweep::row::{Measured, RunRow};
use pipeplan_bench::sweep::shard::Shard;
use pipeplan_bench::sweep::store::Store;
use pipeplan_formulations::testing::chain;
use pipeplan_solvers::harness::Record;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Two small instances as files in `dir`.
fn instance_files(dir: &Path) -> Vec<PathBuf> {
    let mut a = chain(&[5.0, 1.0, 1.0, 1.0, 1.0, 5.0], 3);
    a.name = "a".into();
    let mut b = chain(&[1.0, 2.0, 3.0, 4.0], 2);
    b.name = "b".into();
    [a, b]
        .iter()
        .map(|inst| {
            let p = dir.join(format!("{}.json", inst.name));
            std::fs::write(&p, serde_json::to_string_pretty(inst).unwrap()).unwrap();
            p
        })
        .collect()
}

fn spec() -> SweepSpec {
    SweepSpec {
        algorithms: vec![
            "uniform".into(),
            "balanced-time".into(),
            "exact-contiguous".into(),
        ],
        set: vec![],
        seeds: vec![0],
        repeat: 2,
        time_limit: Some(std::time::Duration::from_secs(30)),
    }
}

fn sweep(dir: &Path) -> (Vec<Input>, Vec<RunSpec>) {
    let inputs = read_inputs(&instance_files(dir)).unwrap();
    let runs = plan(&inputs, &spec()).unwrap();
    (inputs, runs)
}

const MODE: Mode = Mode::InProcess {
    time_limit: Some(std::time::Duration::from_secs(30)),
};

/// Runs the missing runs of `shard` into the store at `path`.
fn run_into(path: &Path, inputs: &[Input], runs: &[RunSpec], shard: Option<Shard>, jobs: usize) {
    let store = Store::open_or_create(path).unwrap();
    let (todo, _) = pending(&store, runs, shard, true).unwrap();
    execute(&store, inputs, &todo, jobs, &MODE, &|| {}).unwrap();
}

fn rows(path: &Path) -> Vec<RunRow> {
    Store::open_read(path).unwrap().rows().unwrap()
}

fn keys(path: &Path) -> HashSet<RunKey> {
    Store::open_read(path).unwrap().keys().unwrap()
}

/// A copy of store `from` at `to` in which the run `victim` was edited by another program
/// (`set`: the SQL assignments).
fn edited_copy(from: &Path, to: &Path, victim: &RunRow, set: &str) {
    std::fs::copy(from, to).unwrap();
    let conn = rusqlite::Connection::open(to).unwrap();
    conn.execute(
        &format!(
            "UPDATE runs SET {set} WHERE instance_hash = ?1 AND algorithm = ?2 AND settings = ?3 \
             AND seed = ?4 AND \"repeat\" = ?5"
        ),
        rusqlite::params![
            victim.instance_hash,
            victim.algorithm,
            victim.settings,
            victim.seed,
            victim.repeat
        ],
    )
    .unwrap();
}

#[test]
fn resume_makes_only_the_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, runs) = sweep(dir.path());
    assert_eq!(runs.len(), 2 * 3 * 2);
    let path = dir.path().join("r.sqlite");
    // A sweep killed after some runs: the store holds shard 0 of 2.
    run_into(&path, &inputs, &runs, Some(Shard::parse("0/2").unwrap()), 2);
    let before = rows(&path);
    assert!(!before.is_empty() && before.len() < runs.len());
    let store = Store::open_or_create(&path).unwrap();
    let e = pending(&store, &runs, None, false).unwrap_err().to_string();
    assert!(e.contains("use --resume"), "{e}");
    let (todo, summary) = pending(&store, &runs, None, true).unwrap();
    assert_eq!(summary.already_stored, before.len());
    assert_eq!(todo.len(), runs.len() - before.len());
    let done = execute(&store, &inputs, &todo, 2, &MODE, &|| {}).unwrap();
    assert_eq!(done.stored, todo.len());
    drop(store);
    let after = rows(&path);
    assert_eq!(after.len(), runs.len());
    // The runs stored before are untouched, timings included.
    for r in &before {
        assert!(after.contains(r), "{} changed", r.describe());
    }
    let all: HashSet<RunKey> = runs.iter().map(RunSpec::key).collect();
    assert_eq!(keys(&path), all);
}

#[test]
fn shards_are_disjoint_and_their_union_is_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, runs) = sweep(dir.path());
    let whole = dir.path().join("whole.sqlite");
    run_into(&whole, &inputs, &runs, None, 1);
    let n = 3;
    let mut parts = Vec::new();
    let mut seen: HashSet<RunKey> = HashSet::new();
    for k in 0..n {
        let p = dir.path().join(format!("s{k}.sqlite"));
        run_into(&p, &inputs, &runs, Some(Shard { index: k, count: n }), 2);
        for key in keys(&p) {
            assert!(seen.insert(key.clone()), "{key:?} is in two shards");
        }
        parts.push(p);
    }
    assert_eq!(seen, keys(&whole));
    let merged = dir.path().join("merged.sqlite");
    merge(&parts, &merged).unwrap();
    let d = diff(
        &Store::open_read(&merged).unwrap(),
        &Store::open_read(&whole).unwrap(),
    )
    .unwrap();
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(d.same, runs.len());
}

#[test]
fn jobs_do_not_change_what_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, runs) = sweep(dir.path());
    let one = dir.path().join("one.sqlite");
    let four = dir.path().join("four.sqlite");
    run_into(&one, &inputs, &runs, None, 1);
    run_into(&four, &inputs, &runs, None, 4);
    let d = diff(
        &Store::open_read(&one).unwrap(),
        &Store::open_read(&four).unwrap(),
    )
    .unwrap();
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(d.same, runs.len());
}

#[test]
fn merge_is_idempotent_and_refuses_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, runs) = sweep(dir.path());
    let a = dir.path().join("a.sqlite");
    let b = dir.path().join("b.sqlite");
    run_into(&a, &inputs, &runs, Some(Shard { index: 0, count: 2 }), 1);
    run_into(&b, &inputs, &runs, Some(Shard { index: 1, count: 2 }), 1);
    let m = dir.path().join("m.sqlite");
    merge(&[a.clone(), b.clone()], &m).unwrap();
    let first = rows(&m);
    assert_eq!(first.len(), runs.len());
    merge(&[a.clone(), b.clone()], &m).unwrap();
    assert_eq!(rows(&m), first, "merging twice changes nothing");
    merge(std::slice::from_ref(&m), &m).unwrap();
    assert_eq!(
        rows(&m),
        first,
        "merging a store into itself changes nothing"
    );
    let aa = dir.path().join("aa.sqlite");
    merge(&[a.clone(), a.clone()], &aa).unwrap();
    assert_eq!(rows(&aa), rows(&a));

    // The same run with another objective in a copy of `a`.
    let c = dir.path().join("c.sqlite");
    let victim = rows(&a)[0].clone();
    edited_copy(&a, &c, &victim, "claimed_objective = 1e9");
    let out = dir.path().join("conflict.sqlite");
    let e = merge(&[a.clone(), c.clone()], &out)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&victim.describe()), "{e}");
    assert!(e.contains("claimed_objective"), "{e}");
    assert!(e.contains("a.sqlite") && e.contains("c.sqlite"), "{e}");
    assert!(!out.exists(), "a failed merge writes nothing");
    // Into an existing output: it is left as it was.
    let before = std::fs::read(&m).unwrap();
    assert!(merge(std::slice::from_ref(&c), &m).is_err());
    assert_eq!(std::fs::read(&m).unwrap(), before);
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn files_that_are_not_stores_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let check = |path: &Path, expect: &str| {
        let bytes = std::fs::read(path).unwrap();
        for e in [
            Store::open_or_create(path).err().unwrap().to_string(),
            Store::open_read(path).err().unwrap().to_string(),
            merge(&[path.to_path_buf()], &dir.path().join("out.sqlite"))
                .unwrap_err()
                .to_string(),
        ] {
            assert!(e.contains(expect), "{e}");
            assert!(e.starts_with(&path.display().to_string()), "{e}");
        }
        assert_eq!(
            std::fs::read(path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.ends_with("-wal") || n.contains("out")),
            "{names:?}"
        );
    };
    let garbage = dir.path().join("garbage.sqlite");
    std::fs::write(&garbage, vec![0x5a; 4096]).unwrap();
    check(&garbage, "not a SQLite database");

    let foreign = dir.path().join("foreign.sqlite");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE runs (x); INSERT INTO runs VALUES (1);")
            .unwrap();
    }
    check(&foreign, "without pipeplan's sweep metadata");

    let newer = dir.path().join("newer.sqlite");
    drop(Store::open_or_create(&newer).unwrap());
    {
        let conn = rusqlite::Connection::open(&newer).unwrap();
        conn.execute(
            "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    check(&newer, "schema version 2 is newer");

    // A store cut short (a disk that filled up, a copy that stopped).
    let (inputs, runs) = sweep(dir.path());
    let whole = dir.path().join("whole.sqlite");
    run_into(&whole, &inputs, &runs, None, 1);
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    check(&cut, "corrupt");
}

#[test]
fn a_word_pipeplan_never_writes_is_named_with_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, runs) = sweep(dir.path());
    let path = dir.path().join("edited.sqlite");
    run_into(&path, &inputs, &runs, None, 1);
    let victim = rows(&path)
        .into_iter()
        .find(|r| r.status.is_some())
        .expect("a solved run");
    for (column, words) in [
        ("status", "optimal, feasible, heuristic"),
        ("result", "solved, unsupported, failed"),
        ("stop", "time-limit, interrupted, node-cap"),
    ] {
        let edited = dir.path().join(format!("{column}.sqlite"));
        edited_copy(&path, &edited, &victim, &format!("\"{column}\" = 'done'"));
        let bytes = std::fs::read(&edited).unwrap();
        let e = Store::open_read(&edited)
            .unwrap()
            .rows()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&edited.display().to_string()), "{e}");
        assert!(e.contains(&victim.describe()), "{e}");
        assert!(
            e.contains(&format!(
                "column `{column}` holds \"done\" where pipeplan writes {words}"
            )),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&edited).unwrap(),
            bytes,
            "reading changed the store"
        );
        // A merge refuses it before writing anything.
        let out = dir.path().join(format!("merged-{column}.sqlite"));
        let e = merge(&[path.clone(), edited.clone()], &out)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&edited.display().to_string()), "{e}");
        assert!(
            e.contains(&format!("column `{column}` holds \"done\"")),
            "{e}"
        );
        assert!(!out.exists(), "a refused merge writes nothing");
    }
}

#[test]
fn a_suite_member_that_does_not_match_its_manifest_stops_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let files = instance_files(dir.path());
    let members: Vec<Member> = files
        .iter()
        .map(|f| {
            let inst = pipeplan_formulations::Instance::from_path(f).unwrap();
            Member {
                name: inst.name.clone(),
                file: f.file_name().unwrap().to_string_lossy().into_owned(),
                hash: instance_hash(&inst),
                layers: inst.num_layers(),
                gpus: inst.cluster.gpus,
                tags: vec![],
            }
        })
        .collect();
    manifest::write(&dir.path().join("manifest.jsonl"), &members).unwrap();
    let inputs = read_inputs(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[1].name, "b");
    // Edit one member.
    let mut b = pipeplan_formulations::Instance::from_path(&files[1]).unwrap();
    b.model.layers[0].forward = 7.0;
    std::fs::write(&files[1], serde_json::to_string(&b).unwrap()).unwrap();
    let e = read_inputs(&[dir.path().to_path_buf()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match the manifest"), "{e}");
}

/// A hand-made row: `algorithm` on `instance`, solved with `objective` (of `kind`) in `ms`
/// (evaluated throughput 1000 / objective), or failed when `objective` is `None`.
fn row(
    instance: &str,
    algorithm: &str,
    repeat: u32,
    kind: &str,
    objective: Option<f64>,
    ms: f64,
    fits: bool,
) -> RunRow {
    let spec = RunSpec {
        input: 0,
        instance: instance.into(),
        hash: format!("sha256:{instance}"),
        algorithm: algorithm.into(),
        settings: BTreeMap::new(),
        seed: 0,
        repeat,
    };
    let record = match objective {
        Some(v) => Record {
            result: "solved".into(),
            status: Some("heuristic".into()),
            claimed_objective_name: Some(kind.into()),
            claimed_objective: Some(v),
            claimed_objective_unit: Some("ms".into()),
            evaluated_fits: Some(fits),
            evaluated_throughput: Some(1000.0 / v),
            solve_ms: Some(ms),
            ..Record::default()
        },
        None => Record {
            result: "failed".into(),
            reason: Some("no feasible plan".into()),
            ..Record::default()
        },
    };
    RunRow::new(&spec, None, &record, None, Measured::default())
}

fn curve(p: &Profile, name: &str) -> Curve {
    p.curves
        .iter()
        .find(|c| c.configuration == name)
        .unwrap()
        .clone()
}

#[test]
fn report_numbers_on_a_hand_made_store() {
    // Instances p, q, r; uniform and balanced-time claim one objective kind, galvatron-base
    // another, on p only.
    //        uniform (objective, ms)     balanced-time (objective, ms)
    //   p    10, 1                       8, 4
    //   q    12, 2 and 12, 6 (repeats)   12, 3
    //   r    failed                      20, 5
    let k = "max stage compute";
    let g = "iteration time (engine cost model)";
    let rows = vec![
        row("p", "uniform", 0, k, Some(10.0), 1.0, true),
        row("q", "uniform", 0, k, Some(12.0), 2.0, false),
        row("q", "uniform", 1, k, Some(12.0), 6.0, false),
        row("r", "uniform", 0, k, None, 0.0, false),
        row("p", "balanced-time", 0, k, Some(8.0), 4.0, true),
        row("q", "balanced-time", 0, k, Some(12.0), 3.0, true),
        row("r", "balanced-time", 0, k, Some(20.0), 5.0, false),
        row("p", "galvatron-base", 0, g, Some(50.0), 9.0, true),
    ];
    let rep = build(&rows, None);
    assert_eq!(rep.runs, 8);
    assert_eq!(rep.instances, vec!["p", "q", "r"]);
    let conf = |name: &str| {
        rep.configurations
            .iter()
            .find(|c| c.configuration == name)
            .unwrap()
            .clone()
    };
    let u = conf("uniform");
    assert_eq!(u.runs, 4);
    assert_eq!(u.solved_share, 0.75);
    assert_eq!(u.fits_share, 0.25);
    // Gaps against the store's best: p (10 - 8) / 8 = 25%, q 0%; r unsolved.
    assert_eq!(u.gaps, 2);
    assert!((u.gap_mean.unwrap() - 0.125).abs() < 1e-12);
    assert_eq!(u.gap_worst, Some(0.25));
    assert_eq!(u.gap_worst_instance.as_deref(), Some("p"));
    // Times: p 1, q median(2, 6) = 4; shifted geometric mean = sqrt(11 * 14) - 10.
    let sgm = (11.0f64 * 14.0).sqrt() - 10.0;
    assert!(
        (u.time_sgm_ms.unwrap() - sgm).abs() < 1e-9,
        "{:?}",
        u.time_sgm_ms
    );
    let b = conf("balanced-time");
    assert_eq!(
        (b.solved_share, b.gap_mean, b.gap_worst),
        (1.0, Some(0.0), Some(0.0))
    );

    // Time profile over p, q, r: best times p 1, q 3, r 5.
    //   uniform: p 1 -> 1; q 4 -> 4/3; r unsolved.
    //   balanced-time: p 4 -> 4; q 1; r 1.   galvatron-base: p 9.
    let time = &rep.profiles[0];
    assert_eq!(time.metric, "solve time");
    assert_eq!(time.problems, 3);
    let ut = curve(time, "uniform");
    assert_eq!(ut.steps, vec![(1.0, 1.0 / 3.0), (4.0 / 3.0, 2.0 / 3.0)]);
    assert_eq!(ut.at[1], (1.1, 1.0 / 3.0));
    assert_eq!(ut.at[2], (1.5, 2.0 / 3.0));
    assert_eq!(ut.solved, 2.0 / 3.0);
    let bt = curve(time, "balanced-time");
    assert_eq!(bt.steps, vec![(1.0, 2.0 / 3.0), (4.0, 1.0)]);
    assert_eq!(curve(time, "galvatron-base").steps, vec![(9.0, 1.0 / 3.0)]);

    // Objective profile of max stage compute: uniform 10/8, 1, -; balanced-time 1, 1, 1;
    // galvatron-base claims another kind and is not in it.
    let obj = rep
        .profiles
        .iter()
        .find(|p| p.metric == format!("claimed {k}"))
        .unwrap();
    assert_eq!(obj.curves.len(), 2);
    assert_eq!(
        curve(obj, "uniform").steps,
        vec![(1.0, 1.0 / 3.0), (1.25, 2.0 / 3.0)]
    );
    assert_eq!(curve(obj, "balanced-time").steps, vec![(1.0, 1.0)]);
    let other = rep
        .profiles
        .iter()
        .find(|p| p.metric == format!("claimed {g}"))
        .unwrap();
    assert_eq!(other.problems, 1);

    // Throughput of plans that fit (1000 / objective): p uniform 100, balanced-time 125,
    // galvatron-base 20; q balanced-time 83.3. Ratios best / value: uniform p 1.25;
    // balanced-time p 1, q 1; galvatron-base p 6.25.
    let tp = rep.profiles.last().unwrap();
    assert!(tp.metric.starts_with("evaluated throughput"));
    let uc = curve(tp, "uniform");
    assert_eq!(uc.steps.len(), 1);
    assert!((uc.steps[0].0 - 1.25).abs() < 1e-12 && uc.steps[0].1 == 1.0 / 3.0);
    assert_eq!(curve(tp, "balanced-time").steps, vec![(1.0, 2.0 / 3.0)]);
    let gc = curve(tp, "galvatron-base");
    assert!((gc.steps[0].0 - 6.25).abs() < 1e-12);

    // Against a best-known value: p's max stage compute is known to be 5.
    let bk: BestKnown = serde_json::from_value(serde_json::json!({"entries": [{
        "instance": "p", "hash": "sha256:p", "objective": k, "unit": "ms", "value": 5.0,
        "found_by": "x", "settings": [], "version": "0", "optimal": true, "bound": null
    }]}))
    .unwrap();
    let rep = build(&rows, Some(&bk));
    let u = rep
        .configurations
        .iter()
        .find(|c| c.configuration == "uniform")
        .unwrap();
    // p: (10 - 5) / 5 = 100%; q: 0% -> mean 50%.
    assert_eq!(u.gap_worst, Some(1.0));
    assert!((u.gap_mean.unwrap() - 0.5).abs() < 1e-12);
}

#[test]
fn best_known_candidates_mark_optima_of_exact_algorithms_only() {
    let mut exact = row(
        "p",
        "exact-contiguous",
        0,
        "async period",
        Some(10.0),
        1.0,
        true,
    );
    exact.status = Some("optimal".into());
    exact.bound = Some(10.0);
    let mut heuristic = row("p", "madpipe", 0, "async period", Some(10.0), 1.0, true);
    heuristic.status = Some("optimal".into());
    heuristic.bound = Some(3.0);
    let failed = row("p", "uniform", 0, "async period", None, 1.0, false);
    let is_exact = |a: &str| a == "exact-contiguous";
    let c = candidates(&[exact, heuristic, failed], is_exact);
    assert_eq!(c.len(), 2);
    assert!(c[0].optimal && c[0].bound == Some(10.0));
    assert!(!c[1].optimal && c[1].bound.is_none());
    let mut bk = BestKnown::default();
    let r = bk.fold(&c);
    assert_eq!(r.added.len(), 1);
    assert!(bk.entries[0].optimal);
    assert_eq!(bk.entries[0].found_by, "exact-contiguous");
}
