//! Running a sweep's runs in parallel and storing each as it finishes: `jobs` workers take the
//! next run in plan order; the calling thread alone writes the store, one transaction per row.
//! What is stored does not depend on `jobs` or on the order runs finish in (only timings and
//! memory do).

use super::child::{self, ChildRunner, Ended};
use super::plan::{Input, RunKey, RunSpec};
use super::row::{Measured, RunRow};
use super::shard::Shard;
use super::store::Store;
use super::SweepError;
use pipeplan_solvers::algorithm::Algorithm;
use pipeplan_solvers::registry;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How runs are made.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Each run in its own process (crashes isolated, memory measured): what the CLI does.
    Process(ChildRunner),
    /// In this process, without memory or CPU figures (tests of the library).
    InProcess {
        /// Time limit of every solve.
        time_limit: Option<Duration>,
    },
}

impl Mode {
    fn time_limit(&self) -> Option<Duration> {
        match self {
            Mode::Process(c) => c.time_limit,
            Mode::InProcess { time_limit } => *time_limit,
        }
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Runs of the whole sweep.
    pub planned: usize,
    /// Runs of other shards.
    pub other_shards: usize,
    /// Runs of this shard already in the store (`--resume`).
    pub already_stored: usize,
    /// Runs made and stored now.
    pub stored: usize,
    /// Of those, solved.
    pub solved: usize,
    /// Of those, failed.
    pub failed: usize,
    /// Of those, unsupported.
    pub unsupported: usize,
    /// Runs stopped by a signal, not stored (`--resume` makes them).
    pub interrupted: usize,
}

/// The runs of `shard` that `store` lacks. Without `resume`, a store already holding any of
/// them is an error (nothing is overwritten).
pub fn pending(
    store: &Store,
    runs: &[RunSpec],
    shard: Option<Shard>,
    resume: bool,
) -> Result<(Vec<RunSpec>, Summary), SweepError> {
    let stored: HashSet<RunKey> = store.keys()?;
    let mut summary = Summary {
        planned: runs.len(),
        ..Summary::default()
    };
    let mut todo = Vec::new();
    for run in runs {
        let key = run.key();
        if shard.is_some_and(|s| !s.contains(&key)) {
            summary.other_shards += 1;
        } else if stored.contains(&key) {
            summary.already_stored += 1;
        } else {
            todo.push(run.clone());
        }
    }
    if summary.already_stored > 0 && !resume {
        return Err(store.err(format!(
            "already holds {} of this sweep's runs; use --resume to make only the missing ones \
             (stored runs are never overwritten)",
            summary.already_stored
        )));
    }
    Ok((todo, summary))
}

enum Done {
    Row(Box<RunRow>),
    Interrupted,
}

/// Makes `runs` (on `inputs`) with `jobs` workers, storing each as it finishes; `tick` is called
/// once per run. A run's process that refuses its arguments stops the sweep (runs under way
/// finish and are stored first).
pub fn execute(
    store: &Store,
    inputs: &[Input],
    runs: &[RunSpec],
    jobs: usize,
    mode: &Mode,
    tick: &(dyn Fn() + Sync),
) -> Result<Summary, SweepError> {
    let algos: HashMap<&str, Box<dyn Algorithm>> = registry::all()
        .into_iter()
        .filter(|a| runs.iter().any(|r| r.algorithm == a.name()))
        .map(|a| (a.name(), a))
        .collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut summary = Summary::default();
    let mut abort: Option<SweepError> = None;
    let (tx, rx) = mpsc::channel::<Result<Done, SweepError>>();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(runs.len().max(1)) {
            let tx = tx.clone();
            let (next, stop, algos) = (&next, &stop, &algos);
            s.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(run) = runs.get(i) else { return };
                let done = make(run, &inputs[run.input], algos, mode);
                if tx.send(done).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for done in rx {
            match done {
                Ok(Done::Row(row)) => match store.insert(&row) {
                    Ok(()) => {
                        summary.stored += 1;
                        match row.result.as_str() {
                            "solved" => summary.solved += 1,
                            "unsupported" => summary.unsupported += 1,
                            _ => summary.failed += 1,
                        }
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        abort.get_or_insert(e);
                    }
                },
                Ok(Done::Interrupted) => summary.interrupted += 1,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    abort.get_or_insert(e);
                }
            }
            tick();
        }
    });
    match abort {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// Makes one run.
fn make(
    run: &RunSpec,
    input: &Input,
    algos: &HashMap<&str, Box<dyn Algorithm>>,
    mode: &Mode,
) -> Result<Done, SweepError> {
    let time_limit = mode.time_limit();
    // A declined pair needs no process: its row is the same as the process would report.
    if let Some(Err(u)) = algos
        .get(run.algorithm.as_str())
        .map(|a| a.supports(&input.instance))
    {
        let record = child::unsupported(&input.instance, &run.algorithm, u.0);
        return Ok(Done::Row(Box::new(RunRow::new(
            run,
            time_limit,
            &record,
            None,
            Measured::default(),
        ))));
    }
    match mode {
        Mode::InProcess { time_limit } => {
            let start = Instant::now();
            let (record, stop) = child::solve(
                &input.instance,
                &run.algorithm,
                &run.settings,
                run.seed,
                *time_limit,
            )?;
            let measured = Measured {
                wall_ms: Some(start.elapsed().as_secs_f64() * 1e3),
                ..Measured::default()
            };
            Ok(Done::Row(Box::new(RunRow::new(
                run,
                *time_limit,
                &record,
                stop,
                measured,
            ))))
        }
        Mode::Process(runner) => match runner.run(&input.path, run)? {
            Ended::Reported(row) => Ok(Done::Row(row)),
            Ended::Interrupted(_) => Ok(Done::Interrupted),
            Ended::Refused(why) => Err(SweepError::Input(format!(
                "{}: {why}",
                run.key().describe(&run.instance)
            ))),
        },
    }
}
