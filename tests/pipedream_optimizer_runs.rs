//! `pipedream` against the recorded answers of PipeDream's optimizer
//! (`$PIPEPLAN_PEERS/pipedream/OPTIMIZER_RUNS.md`, raw output in `optimizer_runs/<name>.txt`).
//!
//! Every row of the runs table whose command runs `optimizer_graph_hierarchical.py` is replayed
//! through the command line, as a user would: `import --from pipedream` with the cluster of its
//! flags (`-n`, `-b`, `-s`; two levels as `--gpus-per-node` and `--inter-node-bandwidth`), then
//! `solve --algo pipedream --json` with the settings of its flags (`replicate`,
//! `memory_check`, `activation_compression_ratio`). The claimed objective must equal the printed
//! "Time per stage in pipeline" to a relative 1e-9. The optimizer breaks ties between equally
//! good plans differently from run to run (`optimizer_runs/repeats_summary.txt`), so stage
//! boundaries are compared only for single-level runs whose repeats all printed one plan, on
//! graphs whose antichain states are our layers (a chain: "Total number of states" equals the
//! layer count).
//!
//! Every run also names how many antichain states it searched; pipeplan's note must give the
//! same count (its states are the optimizer's, `docs/pipedream.md`, "States").
//!
//! The project's own runs of the optimizer (`references/pipedream/`, flags and profiles the
//! recordings do not use) are replayed the same way, and so are the runs of the folder
//! `$PIPEPLAN_PIPEDREAM_RUNS` when it is set (a `README.md` table and `<name>.txt` outputs, as
//! `scripts/pipedream-random-runs` writes them). A run of more than two levels (`-n 2 2 2`),
//! which pipeplan's cluster cannot hold, is imported as one level of all its GPUs and solved
//! through the library with the run's levels (`PdConfig`).

mod support;

use pipeplan_formulations::peers;
use pipeplan_formulations::peers::pipedream_runs::{
    pipeline_time, read_runs, states, unique_plans, Equivalent, OptimizerRun,
};
use pipeplan_formulations::Instance;
use pipeplan_solvers::madpipe::pipedream::{
    pipedream_partition, PdConfig, PdLevel, PdProfile, PdStates,
};
use std::path::Path;
use support::pipeplan;

/// What a replay found: the claimed time (ms), the stages `(first, end, replicas)` and the
/// antichain states searched.
type Found = (f64, Vec<(usize, usize, usize)>, Option<usize>);

/// A run of more than two levels through the library: the profile of the instance the import
/// wrote, searched with the run's levels and settings.
fn library(run: &OptimizerRun, e: &Equivalent, instance: &Path) -> Found {
    let inst = Instance::from_path(instance).unwrap_or_else(|e| panic!("{}: {e}", run.name));
    let flag = |k: &str| e.params[k] == "true";
    let cfg = PdConfig {
        levels: e
            .levels
            .iter()
            .map(|&(machines, bandwidth)| PdLevel {
                machines: machines as usize,
                bandwidth,
            })
            .collect(),
        replicate: flag("replicate"),
        memory_check: flag("memory_check"),
        memory: inst.usable_memory(),
        activation_compression_ratio: e.params["activation_compression_ratio"].parse().ok(),
        use_fewer_machines: flag("use_fewer_machines"),
    };
    let s = PdStates::of(&PdProfile::of(&inst));
    let part = pipedream_partition(&s, &cfg)
        .unwrap_or_else(|| panic!("{}: no plan through the library", run.name));
    let stages = part
        .stages
        .iter()
        .map(|st| (st.first, st.last + 1, st.replicas))
        .collect();
    (part.time, stages, Some(s.len()))
}

/// The run through the command line: `solve --json` on the imported instance, and the same in
/// one process (`solve --from pipedream GRAPH ...`), which must agree.
fn command_line(run: &OptimizerRun, e: &Equivalent, instance: &Path) -> Found {
    let mut solve = e.solve_args(&instance.display().to_string());
    solve.push("--json".into());
    let mut one = e.one_process_args();
    one.push("--json".into());
    let v: serde_json::Value = serde_json::from_slice(&succeeds(run, &solve)).unwrap();
    let sol = if v.is_array() { v[0].clone() } else { v };
    let ms = sol["claimed"]["objective"]["value"].as_f64().unwrap();
    let v1: serde_json::Value = serde_json::from_slice(&succeeds(run, &one)).unwrap();
    assert_eq!(
        v1["claimed"]["objective"]["value"].as_f64(),
        Some(ms),
        "{}: solve --from differs from import | solve",
        run.name
    );
    let stages = sol["plan"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["first"].as_u64().unwrap() as usize,
                s["last"].as_u64().unwrap() as usize + 1,
                s["dp"].as_u64().unwrap_or(1) as usize,
            )
        })
        .collect();
    let searched = sol["notes"].as_array().unwrap().iter().find_map(|n| {
        let n = n.as_str()?;
        let at = n.find("the optimizer's ")? + "the optimizer's ".len();
        n[at..].split(' ').next()?.parse::<usize>().ok()
    });
    (ms, stages, searched)
}

/// The optimizer runs of `folder`'s `README.md` table, whose outputs are `<name>.txt` beside it;
/// at least one.
fn runs_beside_their_table(folder: &Path) -> Vec<OptimizerRun> {
    let table = folder.join("README.md");
    let md = std::fs::read_to_string(&table).unwrap_or_else(|e| panic!("{}: {e}", table.display()));
    let runs = read_runs(&md).unwrap_or_else(|m| panic!("{}: {m}", folder.display()));
    assert!(
        !runs.is_empty(),
        "no optimizer command in {}",
        table.display()
    );
    runs
}

/// Runs `pipeplan` with `args`, which must succeed; its standard output.
fn succeeds(run: &OptimizerRun, args: &[String]) -> Vec<u8> {
    let o = pipeplan(args);
    assert!(
        o.status.success(),
        "{} ({}): {}",
        run.name,
        args[..2].join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

#[test]
fn recorded_optimizer_runs_reproduce() {
    let what = "pipedream_optimizer_runs::recorded_optimizer_runs_reproduce";
    let Some(dir) = peers::subdir("pipedream", what) else {
        return;
    };
    let Ok(md) = std::fs::read_to_string(dir.join("OPTIMIZER_RUNS.md")) else {
        peers::skip_notice(what, "no OPTIMIZER_RUNS.md");
        return;
    };
    let runs = read_runs(&md).unwrap_or_else(|m| panic!("OPTIMIZER_RUNS.md: {m}"));
    assert!(
        !runs.is_empty(),
        "no optimizer command in OPTIMIZER_RUNS.md"
    );
    // The project's own runs of the optimizer, on the same profiles, and those of
    // `$PIPEPLAN_PIPEDREAM_RUNS` (`scripts/pipedream-random-runs`): outputs beside their table.
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("references/pipedream");
    let own_runs = runs_beside_their_table(&own);
    let extra = std::env::var_os("PIPEPLAN_PIPEDREAM_RUNS").map(|d| {
        let d = std::path::PathBuf::from(d);
        let runs = runs_beside_their_table(&d);
        (d, runs)
    });
    let recorded = dir.join("optimizer_runs");
    let all = runs
        .iter()
        .map(|r| (r, recorded.as_path()))
        .chain(own_runs.iter().map(|r| (r, own.as_path())))
        .chain(
            extra
                .iter()
                .flat_map(|(d, runs)| runs.iter().map(move |r| (r, d.as_path()))),
        );
    let summary =
        std::fs::read_to_string(dir.join("optimizer_runs/repeats_summary.txt")).unwrap_or_default();
    let unique = unique_plans(&summary);
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (run, outputs) in all {
        let stdout = outputs.join(format!("{}.txt", run.name));
        let text = std::fs::read_to_string(&stdout)
            .unwrap_or_else(|e| panic!("{}: {e}", stdout.display()));
        let expected = pipeline_time(&text)
            .unwrap_or_else(|| panic!("{}: no 'Time per stage in pipeline'", stdout.display()));
        let instance = tmp.path().join(format!("{}.json", run.name));
        let e = run.equivalent(&dir).unwrap_or_else(|m| panic!("{m}"));
        succeeds(run, &e.import_args(&instance.display().to_string()));
        let (ms, stages, searched) = if e.solved_by_cli() {
            command_line(run, &e, &instance)
        } else {
            library(run, &e, &instance)
        };
        let got = ms / 1e3;
        let rel = (got - expected).abs() / expected;
        let layers = stages.last().map_or(0, |s| s.1);
        let chain = states(&text) == Some(layers);
        let boundaries = match unique.get(&run.name) {
            _ if !chain => "antichain states are not our layers: plan not compared",
            Some(theirs) if *theirs == stages => "same plan (unique)",
            Some(theirs) => {
                failures.push(format!(
                    "{}: plan {stages:?}, the optimizer's (unique over its repeats) {theirs:?}",
                    run.name
                ));
                "different plan"
            }
            None => "plan not unique in the optimizer's repeats: not compared",
        };
        eprintln!(
            "{}: pipeline time {got:.17} s, optimizer {expected:.17} s (relative {rel:.1e}); {boundaries}",
            run.name
        );
        if rel.is_nan() || rel > 1e-9 {
            failures.push(format!(
                "{}: pipeline time {got} s, the optimizer printed {expected} s",
                run.name
            ));
        }
        if searched != states(&text) {
            failures.push(format!(
                "{}: {searched:?} antichain states searched, the optimizer printed {:?}",
                run.name,
                states(&text)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
