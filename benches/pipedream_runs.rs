//! `pipedream` on every recorded run of PipeDream's optimizer (`$PIPEPLAN_PEERS/pipedream/
//! OPTIMIZER_RUNS.md`), against the optimizer's recorded wall time on the same kind of machine
//! (2 vCPU, whole process, interpreter start-up included).
//!
//! Before measuring, a table: per run, our whole-process time (`pipeplan solve --from pipedream
//! GRAPH --algo pipedream ...` with the run's cluster and settings, one process as the optimizer
//! is; and `pipeplan import ... -o - | pipeplan solve - ...`; release binaries, median of 21
//! after three warm-ups), the recorded wall times, their ratio (one process), and whether the claimed
//! pipeline time equals the printed one. Criterion then times import + solve in-process per run.
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

/// The recorded runs the command line reproduces (one or two levels; a run of more levels is
/// named and left out: `pipedream` on an instance searches at most two).
fn runs() -> Option<(PathBuf, Vec<OptimizerRun>)> {
    let dir = peers::subdir("pipedream", WHAT)?;
    let md = std::fs::read_to_string(dir.join("OPTIMIZER_RUNS.md")).ok()?;
    let mut runs = read_runs(&md).unwrap_or_else(|m| panic!("{m}"));
    runs.retain(|r| {
        let e = r.equivalent(&dir).unwrap_or_else(|m| panic!("{m}"));
        if !e.solved_by_cli() {
            eprintln!("{WHAT}: {} left out: {} levels", r.name, e.levels.len());
        }
        e.solved_by_cli()
    });
    Some((dir, runs))
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

/// Whole-process time of the run as one command, `pipeplan solve --from pipedream GRAPH ...`
/// (import and solve in one process, as the optimizer reads its graph and searches), median of
/// 21 after three warm-ups (a run of a few ms varies by a ms from one start to the next); with
/// `piped`, of `pipeplan import ... -o - | pipeplan solve - ...` as a
/// shell runs it.
fn whole_process(dir: &Path, run: &OptimizerRun, piped: bool) -> Duration {
    let e = run.equivalent(dir).unwrap_or_else(|m| panic!("{m}"));
    let bin = env!("CARGO_BIN_EXE_pipeplan");
    let check = |ok: bool, stderr: &[u8]| {
        assert!(ok, "{}: {}", run.name, String::from_utf8_lossy(stderr));
    };
    let once = || {
        let start = Instant::now();
        if piped {
            let mut first = Command::new(bin)
                .args(e.import_args("-"))
                .stdout(Stdio::piped())
                .spawn()
                .expect("runs");
            let second = Command::new(bin)
                .args(e.solve_args("-"))
                .stdin(first.stdout.take().expect("piped"))
                .stdout(Stdio::null())
                .output()
                .expect("runs");
            let status = first.wait().expect("runs");
            check(status.success() && second.status.success(), &second.stderr);
        } else {
            let o = Command::new(bin)
                .args(e.one_process_args())
                .stdout(Stdio::null())
                .output()
                .expect("runs");
            check(o.status.success(), &o.stderr);
        }
        start.elapsed()
    };
    for _ in 0..3 {
        once();
    }
    let mut times: Vec<Duration> = (0..21).map(|_| once()).collect();
    times.sort();
    times[10]
}

fn report(dir: &Path, runs: &[OptimizerRun]) {
    eprintln!(
        "| run | ours, one process (s) | import piped into solve (s) | optimizer, median of 5 (s) | ratio | optimizer, this run (s) | ratio | same pipeline time |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    for r in runs {
        let ours = whole_process(dir, r, false).as_secs_f64();
        let piped = whole_process(dir, r, true).as_secs_f64();
        let stdout =
            std::fs::read_to_string(dir.join("optimizer_runs").join(format!("{}.txt", r.name)))
                .unwrap_or_default();
        let same = match pipeline_time(&stdout) {
            Some(t) => ((solve(dir, r) - t).abs() <= 1e-9 * t).to_string(),
            None => "no printed time".into(),
        };
        let vs = |w: Option<f64>| match w {
            Some(w) => (format!("{w:.3}"), format!("{:.1}x", w / ours)),
            None => ("-".into(), "-".into()),
        };
        let ((median, by_median), (this, by_this)) = (vs(r.wall_median_s), vs(r.wall_s));
        eprintln!(
            "| {} | {ours:.4} | {piped:.4} | {median} | {by_median} | {this} | {by_this} | {same} |",
            r.name
        );
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
