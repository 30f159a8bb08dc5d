//! A Slurm job array for a sweep: each task runs the same `pipeplan sweep run` on its shard
//! (from `SLURM_ARRAY_TASK_ID` / `SLURM_ARRAY_TASK_COUNT`) into its own store, with `--resume`
//! so that a requeued task goes on where it stopped (`docs/sweep.md`, "Slurm").

use std::path::{Path, PathBuf};

/// The `#SBATCH` options of the array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayOptions {
    /// Number of tasks (shards).
    pub tasks: u64,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` (Slurm's format, e.g. `2:00:00`).
    pub time: Option<String>,
    /// `--cpus-per-task` (also the `--jobs` of each task).
    pub cpus_per_task: u32,
    /// `--job-name`.
    pub job_name: String,
    /// Folder of the tasks' logs.
    pub log_dir: PathBuf,
}

/// The store of shard `%a`: `results.sqlite` becomes `results.<task>.sqlite`, with `task` a
/// shell expression (e.g. `${SLURM_ARRAY_TASK_ID}`) or a number.
pub fn shard_store(store: &Path, task: &str) -> PathBuf {
    let stem = store
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    let name = match store.extension() {
        Some(ext) => format!("{stem}.{task}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{task}"),
    };
    store.with_file_name(name)
}

/// Quotes a word for the shell (single quotes).
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The batch script: `program` with `args` (a `sweep run` without `--store`, `--shard`,
/// `--jobs`) writing each task's shard of the sweep to [`shard_store`] of `store`.
pub fn script(program: &Path, args: &[String], store: &Path, opts: &ArrayOptions) -> String {
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!(
        "#SBATCH --job-name={}\n",
        shell_quote(&opts.job_name)
    ));
    s.push_str(&format!("#SBATCH --array=0-{}\n", opts.tasks.max(1) - 1));
    s.push_str(&format!(
        "#SBATCH --cpus-per-task={}\n",
        opts.cpus_per_task.max(1)
    ));
    s.push_str("#SBATCH --ntasks=1\n");
    if let Some(p) = &opts.partition {
        s.push_str(&format!("#SBATCH --partition={}\n", shell_quote(p)));
    }
    if let Some(t) = &opts.time {
        s.push_str(&format!("#SBATCH --time={}\n", shell_quote(t)));
    }
    let log = opts.log_dir.join(format!("{}.%A_%a.log", opts.job_name));
    s.push_str(&format!("#SBATCH --output={}\n", log.display()));
    s.push_str(
        "# Written by `pipeplan sweep slurm`. Each task runs its shard of the sweep \
         (SLURM_ARRAY_TASK_ID of\n# SLURM_ARRAY_TASK_COUNT) into its own store; --resume makes \
         a requeued task go on where it stopped.\nset -euo pipefail\n",
    );
    let mut line = vec![shell_quote(&program.display().to_string())];
    line.extend(args.iter().map(|a| shell_quote(a)));
    line.push("--store".into());
    // The path around the task number is quoted; the number itself must expand.
    let marked = shard_store(store, "\u{1}").display().to_string();
    let (before, after) = marked.split_once('\u{1}').unwrap_or((&marked, ""));
    let quote = |w: &str| {
        if w.is_empty() {
            String::new()
        } else {
            shell_quote(w)
        }
    };
    line.push(format!(
        "{}\"${{SLURM_ARRAY_TASK_ID}}\"{}",
        quote(before),
        quote(after)
    ));
    line.push("--resume".into());
    line.push("--jobs".into());
    line.push("\"${SLURM_CPUS_PER_TASK:-1}\"".into());
    s.push_str(&format!("exec {}\n", line.join(" ")));
    s
}

/// The command that merges the array's stores into `store`.
pub fn merge_command(program: &Path, store: &Path, tasks: u64) -> String {
    let mut words = vec![
        shell_quote(&program.display().to_string()),
        "sweep".into(),
        "merge".into(),
    ];
    words.extend(
        (0..tasks.max(1))
            .map(|i| shell_quote(&shard_store(store, &i.to_string()).display().to_string())),
    );
    words.push("-o".into());
    words.push(shell_quote(&store.display().to_string()));
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_stores() {
        assert_eq!(
            shard_store(Path::new("/x/results.sqlite"), "3"),
            PathBuf::from("/x/results.3.sqlite")
        );
        assert_eq!(shard_store(Path::new("r"), "0"), PathBuf::from("r.0"));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a/b.json"), "a/b.json");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn script_runs_each_shard_into_its_store() {
        let opts = ArrayOptions {
            tasks: 4,
            partition: Some("debug".into()),
            time: None,
            cpus_per_task: 2,
            job_name: "sweep".into(),
            log_dir: PathBuf::from("/tmp/logs"),
        };
        let s = script(
            Path::new("/bin/pipeplan"),
            &["sweep".into(), "run".into(), "/a b/x.json".into()],
            Path::new("/out/r.sqlite"),
            &opts,
        );
        assert!(s.contains("#SBATCH --array=0-3\n"), "{s}");
        assert!(s.contains("#SBATCH --partition=debug\n"), "{s}");
        assert!(s.contains("#SBATCH --cpus-per-task=2\n"), "{s}");
        assert!(
            s.contains("exec /bin/pipeplan sweep run '/a b/x.json' --store /out/r.\"${SLURM_ARRAY_TASK_ID}\".sqlite --resume"),
            "{s}"
        );
    }
}
