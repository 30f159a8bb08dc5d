//! One run in its own process: `pipeplan sweep run-one` solves, evaluates and prints a
//! [`ChildOutput`] line of JSON; the sweep starts it, reads that line and reaps it with `wait4`
//! (its CPU time). A crash of the run is the run's failure, not the sweep's
//! (`docs/sweep.md`, "Runs in processes").
//!
//! Peak memory is the child's own `VmHWM` (peak resident set of its address space after `exec`)
//! read at the end of the run: `wait4`'s `ru_maxrss` cannot be used, as Linux carries the
//! spawning process's resident set into the child's at `exec`, so every run would weigh at least
//! as much as the sweep itself.

use super::plan::RunSpec;
use super::row::{Measured, RunRow};
use super::SweepError;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{SolveError, SolveOptions};
use pipeplan_solvers::harness::{self, Outcome, Record, Row};
use pipeplan_solvers::registry;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a run's process reports on standard output (one JSON line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildOutput {
    /// The harness's record of the run.
    pub record: Record,
    /// What ended the solve early (`time-limit`, ...), if anything.
    pub stop: Option<String>,
    /// The process's peak resident set (bytes), where the system tells it.
    pub peak_rss_bytes: Option<u64>,
}

/// Environment variable naming the sweep's process id to a run's process (which stops when the
/// sweep is gone).
pub const PARENT_ENV: &str = "PIPEPLAN_SWEEP_PARENT";

/// Solves `inst` with `algorithm` as a comparison would (harness run, evaluation), and the
/// record of it. Errors only for an unknown algorithm name.
pub fn solve(
    inst: &Instance,
    algorithm: &str,
    settings: &BTreeMap<String, String>,
    seed: u64,
    time_limit: Option<Duration>,
) -> Result<(Record, Option<String>), SweepError> {
    let algo = registry::by_name(algorithm)
        .ok_or_else(|| SweepError::Input(format!("unknown algorithm {algorithm:?}")))?;
    let opts = SolveOptions {
        time_limit,
        seed,
        stages: None,
        params: settings.clone(),
    };
    let (outcome, stop) = match harness::run(algo.as_ref(), inst, &opts) {
        Ok(sol) => {
            let stop = sol.stats.stop.map(|s| s.name().to_string());
            (
                Outcome::Solved {
                    solution: Box::new(sol),
                },
                stop,
            )
        }
        Err(SolveError::Unsupported(u)) => (Outcome::Unsupported { reason: u.0 }, None),
        Err(e) => (
            Outcome::Failed {
                reason: e.to_string(),
            },
            None,
        ),
    };
    let row = Row {
        instance: inst.name.clone(),
        algorithm: algo.name().to_string(),
        outcome,
        gap_vs_exact: None,
        exact_reference: None,
        period_gap_vs_exact: None,
    };
    Ok((Record::of_row(&row), stop))
}

/// The record of a run whose algorithm declines the instance, as [`solve`] would make it
/// (the sweep makes these without starting a process).
pub fn unsupported(inst: &Instance, algorithm: &str, reason: String) -> Record {
    Record::of_row(&Row {
        instance: inst.name.clone(),
        algorithm: algorithm.to_string(),
        outcome: Outcome::Unsupported { reason },
        gap_vs_exact: None,
        exact_reference: None,
        period_gap_vs_exact: None,
    })
}

/// This process's peak resident set (`VmHWM` of `/proc/self/status`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// In a run's process: stop when the sweep that started it is gone (Linux: the parent-death
/// signal, then a check that the parent did not go before it was set).
pub fn follow_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and no pointers.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        }
        let expected = std::env::var(PARENT_ENV)
            .ok()
            .and_then(|v| v.parse::<i32>().ok());
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        if expected.is_some_and(|p| p != parent) {
            std::process::exit(3);
        }
    }
}

/// The arguments of `pipeplan sweep run-one` for a run (after the program and its subcommand).
pub fn run_one_args(
    path: &Path,
    run: &RunSpec,
    time_limit: Option<Duration>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--instance".into(),
        path.as_os_str().to_owned(),
        "--hash".into(),
        run.hash.clone().into(),
        "--algo".into(),
        run.algorithm.clone().into(),
        "--seed".into(),
        run.seed.to_string().into(),
        "--time-limit".into(),
        match time_limit {
            Some(d) => format!("{}", d.as_secs_f64()).into(),
            None => "none".into(),
        },
    ];
    for (k, v) in &run.settings {
        args.push("--set".into());
        args.push(format!("{k}={v}").into());
    }
    args
}

/// How a run's process ended.
#[derive(Debug)]
pub enum Ended {
    /// It reported its run.
    Reported(Box<RunRow>),
    /// It was stopped by a signal asking it to end (SIGINT, SIGTERM, SIGHUP): the run is not
    /// stored, so that `--resume` makes it again.
    Interrupted(String),
    /// It refused its arguments (exit code 2): the sweep stops with that message.
    Refused(String),
}

/// Runs of a sweep as processes: `program` with `prefix` (e.g. `sweep run-one`) and each run's
/// arguments.
#[derive(Debug, Clone)]
pub struct ChildRunner {
    /// The executable (pipeplan itself).
    pub program: PathBuf,
    /// Arguments before a run's own.
    pub prefix: Vec<String>,
    /// Time limit of every solve.
    pub time_limit: Option<Duration>,
    /// `RAYON_NUM_THREADS` of every run (unless the environment sets it).
    pub threads: usize,
    /// A run still going this long after its start is killed and stored as failed
    /// (default: [`watchdog`] of the time limit).
    pub watchdog: Option<Duration>,
}

/// A run still going this long after its time limit is killed: twice the limit plus 30 s
/// (evaluation and process start included).
pub fn watchdog(time_limit: Option<Duration>) -> Option<Duration> {
    time_limit.map(|t| t * 2 + Duration::from_secs(30))
}

impl ChildRunner {
    /// Runs `run` on the instance file `path` in a new process and waits for it.
    pub fn run(&self, path: &Path, run: &RunSpec) -> Result<Ended, SweepError> {
        let mut cmd = self.command(path, run);
        let start = Instant::now();
        let child = cmd.spawn().map_err(|e| {
            SweepError::Input(format!("cannot start {}: {e}", self.program.display()))
        })?;
        let finished = supervise(child, self.watchdog);
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(self.ended(run, finished, wall_ms))
    }

    /// The command of `run`'s process, its output piped.
    fn command(&self, path: &Path, run: &RunSpec) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix)
            .args(run_one_args(path, run, self.time_limit))
            .env(PARENT_ENV, std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so that the watchdog also ends whatever it started (which
        // would otherwise hold its output open). The sweep's end still reaches it: see
        // [`follow_parent`].
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        if std::env::var_os("RAYON_NUM_THREADS").is_none() {
            cmd.env("RAYON_NUM_THREADS", self.threads.max(1).to_string());
        }
        cmd
    }

    /// What the sweep makes of a finished process: its report, or a failed run with the
    /// reason (killed by the watchdog, crashed), or a refusal or an interruption.
    fn ended(&self, run: &RunSpec, finished: Finished, wall_ms: f64) -> Ended {
        let cpu_ms = finished.usage.map(|u| {
            let t = |tv: libc::timeval| tv.tv_sec as f64 * 1e3 + tv.tv_usec as f64 / 1e3;
            t(u.ru_utime) + t(u.ru_stime)
        });
        let stderr = String::from_utf8_lossy(&finished.stderr);
        let last_err = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.starts_with("note:"))
            .unwrap_or("")
            .trim()
            .to_string();
        let row = |record: &Record, stop: Option<String>, peak_rss_bytes: Option<u64>| {
            let measured = Measured {
                wall_ms: Some(wall_ms),
                cpu_ms,
                peak_rss_bytes,
            };
            Ended::Reported(Box::new(RunRow::new(
                run,
                self.time_limit,
                record,
                stop,
                measured,
            )))
        };
        let failed = |message: String| {
            let record = Record {
                instance: run.instance.clone(),
                algorithm: run.algorithm.clone(),
                result: "failed".into(),
                reason: Some(message),
                ..Record::default()
            };
            row(&record, None, None)
        };
        if finished.killed {
            let limit = self.watchdog.unwrap_or_default().as_secs_f64();
            return failed(format!(
                "killed: still running {limit} s after its start (twice its time limit plus 30 s)"
            ));
        }
        match finished.status {
            Exit::Code(0) => {
                let text = String::from_utf8_lossy(&finished.stdout);
                let line = text.lines().rev().find(|l| !l.trim().is_empty());
                match line.and_then(|l| serde_json::from_str::<ChildOutput>(l).ok()) {
                    Some(o) => row(&o.record, o.stop, o.peak_rss_bytes),
                    None => failed(format!(
                        "crashed: the run's process printed no report ({last_err})"
                    )),
                }
            }
            Exit::Code(2) => Ended::Refused(last_err.trim_start_matches("error: ").to_string()),
            Exit::Signal(sig) if [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].contains(&sig) => {
                Ended::Interrupted(format!("stopped by signal {sig}"))
            }
            Exit::Code(c) => failed(format!("crashed: exit code {c}: {last_err}")),
            Exit::Signal(sig) => failed(format!("crashed: killed by signal {sig}: {last_err}")),
        }
    }
}

/// What a run's process left when it ended.
struct Finished {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: Exit,
    usage: Option<libc::rusage>,
    /// Whether the watchdog killed it.
    killed: bool,
}

/// Reads `child`'s output while it runs, kills its process group if it is still going after
/// `watchdog`, and reaps it.
fn supervise(mut child: Child, watchdog: Option<Duration>) -> Finished {
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let exited = (Mutex::new(false), Condvar::new());
    let killed = Mutex::new(false);
    let (stdout, stderr, status, usage) = std::thread::scope(|s| {
        let out_reader = s.spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            v
        });
        let err_reader = s.spawn(move || {
            let mut v = Vec::new();
            let _ = err.read_to_end(&mut v);
            v
        });
        if let Some(limit) = watchdog {
            let (exited, killed) = (&exited, &killed);
            s.spawn(move || {
                let (lock, cond) = exited;
                let done = lock.lock().unwrap_or_else(|e| e.into_inner());
                let (done, _) = cond
                    .wait_timeout_while(done, limit, |d| !*d)
                    .unwrap_or_else(|e| e.into_inner());
                // The child is not reaped before `done` is set (under this lock), so `pid`
                // is still the child's.
                if !*done {
                    *killed.lock().unwrap_or_else(|e| e.into_inner()) = true;
                    // SAFETY: kill takes a process group id and a signal number.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                }
            });
        }
        wait_exit(pid);
        {
            let (lock, cond) = &exited;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cond.notify_all();
        }
        let (status, usage) = reap(pid);
        (
            out_reader.join().unwrap_or_default(),
            err_reader.join().unwrap_or_default(),
            status,
            usage,
        )
    });
    let killed = *killed.lock().unwrap_or_else(|e| e.into_inner());
    Finished {
        stdout,
        stderr,
        status,
        usage,
        killed,
    }
}

/// How a process ended.
enum Exit {
    Code(i32),
    Signal(i32),
}

/// Waits until `pid` has exited, without reaping it.
fn wait_exit(pid: libc::pid_t) {
    loop {
        // SAFETY: siginfo_t is plain data; waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to `info`; WNOWAIT leaves the child waitable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Reaps `pid`: how it ended and its resource usage.
fn reap(pid: libc::pid_t) -> (Exit, Option<libc::rusage>) {
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 writes into it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to `status` and `usage`.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            let exit = if libc::WIFSIGNALED(status) {
                Exit::Signal(libc::WTERMSIG(status))
            } else {
                Exit::Code(libc::WEXITSTATUS(status))
            };
            return (exit, Some(usage));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return (Exit::Code(-1), None);
        }
    }
}
