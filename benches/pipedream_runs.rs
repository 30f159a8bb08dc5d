//! `pipedream` on every recorded run of PipeDream's optimizer (`$PIPEPLAN_PEERS/pipedream/
//! OPTIMIZER_RUNS.md`), against the optimizer's recorded wall time on the same kind of machine
//! (2 vCPU, whole process, interpreter start-up included).
//!
//! Before measuring, a table: per run, our whole-process time (`pipeplan import ... -o - |
//! pipeplan solve - --algo pipedream` with the run's settings, release binaries, median of 5
//! after one warm-up), the recorded wall time, their ratio, and whether the claimed pipeline time
//! equals the printed one. Criterion then times import + solve in-process per run.
//! Run with `cargo bench --bench pipedream_runs`; without the peers folder it prints SKIPPED.

use criterion::{criterion_group, criterion_main, Criterion};
use pipeplan_formulations::import::{import_file, ImportOptions, Source};
use pipeplan_formulations::peers;
use pipeplan_formulations::peers::pipedream_runs::{pipeline_time, read_runs, OptimizerRun};
use pipeplan_solvers::harness::run;
use pipeplan_solvers::{registry, SolveOptions};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WHAT: &str = "benches/pipedream_runs";

fn runs() -> Option<(PathBuf, Vec<OptimizerRun>)> {
    let dir = peers::subdir("pipedream", WHAT)?;
    let md = std::fs::read_to_string(dir.join("OPTIMIZER_RUNS.md")).ok()?;
    Some((dir, read_runs(&md).unwrap_or_else(|m| panic!("{m}"))))
}

/// Import and solve in-process; the claimed pipeline time (s).
fn solve(dir: &Path, recorded: &OptimizerRun) -> f64 {
    let e = recorded.equivalent(dir).unwrap_or_else(|m| panic!("{m}"));
    let inst = import_file(Source::PipeDream, &e.graph, &ImportOptions::new(e.cluster))
        .unwrap_or_else(|m| panic!("{m}"));
    let opts = SolveOptions {
        params: e.params,
        ..SolveOptions::default()
    };
    let algo = registry::by_name("pipedream").expect("registered");
    let sol = run(algo.as_ref(), &inst, &opts).unwrap_or_else(|m| panic!("{m}"));
    sol.claimed
        .objective
        .expect("pipedream claims its time")
        .value
        / 1e3
}

/// The command-line equivalent: `pipeplan import ... -o -` piped into `pipeplan solve - ...`.
fn command_line(dir: &Path, run: &OptimizerRun) -> (Vec<String>, Vec<String>) {
    let e = run.equivalent(dir).unwrap_or_else(|m| panic!("{m}"));
    (e.import_args("-"), e.solve_args("-"))
}

/// Whole-process time of the two commands joined by a pipe, as a shell runs `import | solve`
/// (median of 5 after a warm-up).
fn whole_process(dir: &Path, run: &OptimizerRun) -> Duration {
    let (import, solve) = command_line(dir, run);
    let bin = env!("CARGO_BIN_EXE_pipeplan");
    let once = || {
        let start = Instant::now();
        let mut first = Command::new(bin)
            .args(&import)
            .stdout(Stdio::piped())
            .spawn()
            .expect("runs");
        let second = Command::new(bin)
            .args(&solve)
            .stdin(first.stdout.take().expect("piped"))
            .stdout(Stdio::null())
            .output()
            .expect("runs");
        let status = first.wait().expect("runs");
        assert!(
            status.success() && second.status.success(),
            "{}: {}",
            run.name,
            String::from_utf8_lossy(&second.stderr)
        );
        start.elapsed()
    };
    once();
    let mut times: Vec<Duration> = (0..5).map(|_| once()).collect();
    times.sort();
    times[2]
}

fn report(dir: &Path, runs: &[OptimizerRun]) {
    eprintln!(
        "| run | ours, whole process (s) | optimizer, recorded (s) | ratio | same pipeline time |"
    );
    eprintln!("|---|---|---|---|---|");
    for r in runs {
        let ours = whole_process(dir, r).as_secs_f64();
        let stdout =
            std::fs::read_to_string(dir.join("optimizer_runs").join(format!("{}.txt", r.name)))
                .unwrap_or_default();
        let same = match pipeline_time(&stdout) {
            Some(t) => ((solve(dir, r) - t).abs() <= 1e-9 * t).to_string(),
            None => "no printed time".into(),
        };
        let (theirs, ratio) = match r.wall_s {
            Some(w) => (format!("{w:.2}"), format!("{:.0}x", w / ours)),
            None => ("-".into(), "-".into()),
        };
        eprintln!("| {} | {ours:.4} | {theirs} | {ratio} | {same} |", r.name);
    }
}

fn bench(c: &mut Criterion) {
    let Some((dir, runs)) = runs() else {
        return;
    };
    report(&dir, &runs);
    let mut g = c.benchmark_group("pipedream-runs");
    g.sample_size(10);
    for r in &runs {
        g.bench_function(&r.name, |b| b.iter(|| black_box(solve(&dir, r))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
