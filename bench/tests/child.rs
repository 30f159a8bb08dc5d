//! A run's process ending badly: a crash is the run's failure (stored), a refusal stops the
//! sweep, a signal asking it to stop leaves the run for `--resume`, and the watchdog kills a run
//! that outlives its time limit. The process is a shell script standing in for `pipeplan sweep
//! run-one` (the run's arguments follow the script as `$0`, `$1`, ...).

use pipeplan_bench::sweep::child::{ChildRunner, Ended};
use pipeplan_bench::sweep::plan::RunSpec;
use std::path::Path;
use std::time::Duration;

fn runner(script: &str, watchdog: Option<Duration>) -> ChildRunner {
    ChildRunner {
        program: "/bin/sh".into(),
        prefix: vec!["-c".into(), script.into()],
        time_limit: Some(Duration::from_millis(100)),
        threads: 1,
        watchdog,
    }
}

fn run(script: &str, watchdog: Option<Duration>) -> Ended {
    let spec = RunSpec {
        input: 0,
        instance: "i".into(),
        hash: "sha256:i".into(),
        algorithm: "uniform".into(),
        settings: Default::default(),
        seed: 0,
        repeat: 0,
    };
    runner(script, watchdog)
        .run(Path::new("/nonexistent.json"), &spec)
        .unwrap()
}

fn failed_with(e: Ended) -> String {
    match e {
        Ended::Reported(row) => {
            assert_eq!(row.result, "failed");
            assert!(row.wall_ms.is_some() && row.cpu_ms.is_some());
            row.message.unwrap()
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[test]
fn a_crash_is_the_runs_failure() {
    let m = failed_with(run("echo 'boom: bad plan' >&2; kill -SEGV $$", None));
    assert!(m.starts_with("crashed: killed by signal 11"), "{m}");
    assert!(m.contains("boom: bad plan"), "{m}");
    let m = failed_with(run("echo 'panicked at x' >&2; exit 101", None));
    assert_eq!(m, "crashed: exit code 101: panicked at x");
    let m = failed_with(run("echo not json; exit 0", None));
    assert!(m.contains("printed no report"), "{m}");
}

#[test]
fn a_refusal_stops_the_sweep_and_a_stop_signal_leaves_the_run() {
    match run("echo 'error: x.json: hash differs' >&2; exit 2", None) {
        Ended::Refused(why) => assert_eq!(why, "x.json: hash differs"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(run("kill -TERM $$", None), Ended::Interrupted(_)));
    // A process started in the background without job control (`cmd &` in a script, `nohup`)
    // ignores SIGINT, and its children inherit that; a shell cannot undo it. Restore the
    // default here so the child's SIGINT ends it wherever the tests are started from.
    // SAFETY: signal takes a signal number and a handler constant, and no test here handles
    // SIGINT.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
    assert!(matches!(run("kill -INT $$", None), Ended::Interrupted(_)));
}

#[test]
fn the_watchdog_kills_a_run_that_outlives_its_limit() {
    let m = failed_with(run("sleep 30", Some(Duration::from_millis(200))));
    assert!(m.starts_with("killed: still running 0.2 s"), "{m}");
}
