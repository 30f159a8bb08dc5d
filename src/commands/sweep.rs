//! `pipeplan sweep`: resumable benchmark sweeps stored in SQLite, Slurm job arrays of them,
//! merging and reporting (library: `pipeplan_bench::sweep`; `docs/sweep.md`).

pub mod args;
mod report;

use super::{write_or_print, Failure, Format, NO_PLAN};
use args::{DiffArgs, MergeArgs, RunArgs, RunOneArgs, SlurmArgs, Sweep, SweepArgs};
use pipeplan_bench::suite::instance_hash;
use pipeplan_bench::sweep::child::{self, ChildOutput, ChildRunner};
use pipeplan_bench::sweep::execute::{self, Mode, Summary};
use pipeplan_bench::sweep::plan::{self, absolute, Input, RunSpec, SweepSpec};
use pipeplan_bench::sweep::shard::Shard;
use pipeplan_bench::sweep::store::Store;
use pipeplan_bench::sweep::{diff, merge, slurm, SweepError};
use std::time::Instant;

impl From<SweepError> for Failure {
    fn from(e: SweepError) -> Failure {
        Failure::input(e.to_string())
    }
}

/// Runs a `sweep` subcommand.
pub fn run(cmd: Sweep) -> Result<(), Failure> {
    match cmd {
        Sweep::Run(a) => sweep_run(a),
        Sweep::Slurm(a) => sweep_slurm(a),
        Sweep::Merge(a) => sweep_merge(a),
        Sweep::Report(a) => report::run(a),
        Sweep::Diff(a) => sweep_diff(a),
        Sweep::RunOne(a) => run_one(a),
    }
}

fn spec(a: &SweepArgs) -> SweepSpec {
    SweepSpec {
        algorithms: a.algos.iter().map(|s| s.trim().to_string()).collect(),
        set: a.set.clone(),
        seeds: a.seed.clone(),
        repeat: a.repeat,
        time_limit: a.time_limit.0,
    }
}

/// The sweep's instances (under its calibration, which their hashes then include) and runs,
/// checked (suites against their manifests) before anything runs or is written.
fn planned(a: &SweepArgs) -> Result<(Vec<Input>, Vec<RunSpec>), Failure> {
    let mut inputs = plan::read_inputs(&a.inputs)?;
    if let Some(cal) = a.calibration.read()? {
        // Named for the calibration too, so that reports tell the two apart.
        let file = &cal.path;
        let label = file
            .file_stem()
            .unwrap_or(file.as_os_str())
            .to_string_lossy();
        for input in &mut inputs {
            input.instance = cal.apply(&input.instance);
            input.hash = instance_hash(&input.instance);
            input.name = format!("{} (calibrated: {label})", input.name);
        }
    }
    let runs = plan::plan(&inputs, &spec(a))?;
    Ok((inputs, runs))
}

/// The options that pass the sweep's calibration on to its runs' processes and tasks.
fn calibration_args(a: &SweepArgs) -> Vec<String> {
    a.calibration
        .calibration
        .iter()
        .flat_map(|p| {
            [
                "--calibration".to_string(),
                absolute(p).display().to_string(),
            ]
        })
        .collect()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn sweep_run(a: RunArgs) -> Result<(), Failure> {
    let (inputs, runs) = planned(&a.sweep)?;
    let shard = match &a.shard {
        Some(s) => Some(Shard::parse(s)?),
        None => Shard::from_env(|k| std::env::var(k).ok())?,
    };
    let jobs = match a.jobs {
        Some(0) => return Err(Failure::input("--jobs: must be at least 1")),
        Some(j) => j,
        None => cores(),
    };
    let store = Store::open_or_create(&a.sweep.store)?;
    let (todo, before) = execute::pending(&store, &runs, shard, a.resume)?;
    let program = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot locate pipeplan itself: {e}")))?;
    let mut prefix = vec!["sweep".to_string(), "run-one".into()];
    prefix.extend(calibration_args(&a.sweep));
    let mode = Mode::Process(ChildRunner {
        program,
        prefix,
        time_limit: a.sweep.time_limit.0,
        threads: (cores() / jobs).max(1),
        watchdog: child::watchdog(a.sweep.time_limit.0),
    });
    let table = a.out.format() == Format::Table;
    let progress = crate::progress::Progress::new(todo.len(), "sweep", table);
    let start = Instant::now();
    let done = execute::execute(&store, &inputs, &todo, jobs, &mode, &|| progress.tick())?;
    drop(progress);
    let summary = Summary {
        stored: done.stored,
        solved: done.solved,
        failed: done.failed,
        unsupported: done.unsupported,
        interrupted: done.interrupted,
        ..before
    };
    let text = match a.out.format() {
        Format::Json => crate::report::json(&summary),
        Format::Csv => crate::report::csv(&[&summary]),
        Format::Table => summary_line(&summary, &a.sweep.store, shard, start.elapsed()),
    };
    write_or_print(None, &text)?;
    if summary.interrupted > 0 {
        return Err(Failure {
            code: NO_PLAN,
            message: format!(
                "{} run(s) were stopped by a signal and not stored; run again with --resume",
                summary.interrupted
            ),
        });
    }
    Ok(())
}

fn summary_line(
    s: &Summary,
    store: &std::path::Path,
    shard: Option<Shard>,
    took: std::time::Duration,
) -> String {
    let shard = match shard {
        Some(sh) => format!(
            " (shard {}/{}: {} runs of other shards)",
            sh.index, sh.count, s.other_shards
        ),
        None => String::new(),
    };
    format!(
        "{} runs planned{shard}; {} already stored; stored {} in {} in {:.1} s: {} solved, {} \
         failed, {} unsupported",
        s.planned,
        s.already_stored,
        s.stored,
        store.display(),
        took.as_secs_f64(),
        s.solved,
        s.failed,
        s.unsupported
    )
}

fn time_limit_arg(t: &crate::args::TimeLimit) -> String {
    match t.0 {
        Some(d) => format!("{}", d.as_secs_f64()),
        None => "none".into(),
    }
}

fn sweep_slurm(a: SlurmArgs) -> Result<(), Failure> {
    let (_, runs) = planned(&a.sweep)?;
    let tasks = match a.array_size {
        Some(0) => return Err(Failure::input("--array-size: must be at least 1")),
        Some(n) => n,
        None => (runs.len() as u64).div_ceil(200).clamp(1, 1000),
    };
    if a.cpus_per_task == 0 {
        return Err(Failure::input("--cpus-per-task: must be at least 1"));
    }
    let s = &a.sweep;
    let mut args: Vec<String> = vec!["sweep".into(), "run".into()];
    args.extend(s.inputs.iter().map(|p| absolute(p).display().to_string()));
    args.push("--algos".into());
    args.push(s.algos.join(","));
    for (k, v) in &s.set {
        args.push("--set".into());
        args.push(format!("{k}={v}"));
    }
    args.push("--seed".into());
    args.push(
        s.seed
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    );
    args.push("--repeat".into());
    args.push(s.repeat.to_string());
    args.push("--time-limit".into());
    args.push(time_limit_arg(&s.time_limit));
    args.extend(calibration_args(s));
    let store = absolute(&s.store);
    let program = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot locate pipeplan itself: {e}")))?;
    let opts = slurm::ArrayOptions {
        tasks,
        partition: a.partition.clone(),
        time: a.time.clone(),
        cpus_per_task: a.cpus_per_task,
        job_name: a.job_name.clone(),
        log_dir: store
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
    };
    let script = slurm::script(&program, &args, &store, &opts);
    write_or_print(Some(&a.output), &script)?;
    if a.output != std::path::Path::new("-") {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&a.output, std::fs::Permissions::from_mode(0o755));
    }
    let per_task = (runs.len() as u64).div_ceil(tasks);
    let bound = s.time_limit.0.map_or(String::new(), |t| {
        format!(
            "; a task solves for at most about {:.0} s if every run meets its time limit",
            per_task as f64 * t.as_secs_f64() / f64::from(a.cpus_per_task)
        )
    });
    eprintln!(
        "wrote {}: {} runs in {tasks} array tasks (about {per_task} each{bound})\n\
         submit:  sbatch {}\n\
         merge:   {}",
        a.output.display(),
        runs.len(),
        a.output.display(),
        slurm::merge_command(&program, &store, tasks)
    );
    Ok(())
}

fn sweep_merge(a: MergeArgs) -> Result<(), Failure> {
    let start = Instant::now();
    let m = merge::merge(&a.stores, &a.output)?;
    let parts: Vec<String> = m.inputs.iter().map(|(_, n)| n.to_string()).collect();
    println!(
        "merged {} store(s) ({} runs) into {}: {} runs, in {:.2} s",
        m.inputs.len(),
        parts.join(" + "),
        a.output.display(),
        m.runs,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn sweep_diff(a: DiffArgs) -> Result<(), Failure> {
    let first = Store::open_read(&a.first)?;
    let second = Store::open_read(&a.second)?;
    let d = diff::diff(&first, &second)?;
    let text = match a.out.format() {
        Format::Json | Format::Csv => crate::report::json(&d),
        Format::Table => {
            let mut out = String::new();
            for r in &d.only_first {
                out.push_str(&format!("only in {}: {r}\n", a.first.display()));
            }
            for r in &d.only_second {
                out.push_str(&format!("only in {}: {r}\n", a.second.display()));
            }
            for (r, cols) in &d.different {
                out.push_str(&format!("different: {r}: {}\n", cols.join(", ")));
            }
            out.push_str(&format!(
                "{} runs with the same results (timings, memory and version not compared); {} \
                 only in {}, {} only in {}, {} different\n",
                d.same,
                d.only_first.len(),
                a.first.display(),
                d.only_second.len(),
                a.second.display(),
                d.different.len()
            ));
            out
        }
    };
    write_or_print(None, &text)?;
    if d.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            code: NO_PLAN,
            message: format!(
                "the stores differ in {} run(s)",
                d.only_first.len() + d.only_second.len() + d.different.len()
            ),
        })
    }
}

fn run_one(a: RunOneArgs) -> Result<(), Failure> {
    child::follow_parent();
    let inst = super::read_calibrated(&a.instance, &a.calibration)?;
    let hash = instance_hash(&inst);
    if hash != a.hash {
        return Err(Failure::input(format!(
            "{}: hash {hash} differs from the sweep's {} (the file{} changed during the sweep)",
            a.instance.display(),
            a.hash,
            if a.calibration.calibration.is_some() {
                " or the calibration"
            } else {
                ""
            }
        )));
    }
    let settings = a.set.into_iter().collect();
    let (record, stop) = child::solve(&inst, &a.algo, &settings, a.seed, a.time_limit.0)?;
    let out = ChildOutput {
        record,
        stop,
        peak_rss_bytes: child::peak_rss_bytes(),
    };
    let line = serde_json::to_string(&out).expect("records serialize");
    write_or_print(None, &line)
}
