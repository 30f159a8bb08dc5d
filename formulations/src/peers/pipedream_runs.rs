//! The recorded runs of PipeDream's optimizer (`pipedream/OPTIMIZER_RUNS.md` in the peers
//! folder, raw output in `optimizer_runs/<name>.txt`): each run's command, read as the
//! optimizer's `argparse` reads it, and what it printed. Tests replay them and benchmarks time
//! them against the recorded wall time.

use crate::instance::{Bandwidth, Cluster};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One recorded run of `optimizer_graph_hierarchical.py`.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerRun {
    /// Run name (the stdout file's stem).
    pub name: String,
    /// The command's flags and their values (`-n`, `-b` take several).
    pub flags: BTreeMap<String, Vec<String>>,
    /// The recorded wall time of "this run" (s), when the table gives it.
    pub wall_s: Option<f64>,
    /// The recorded median wall time of five runs (s, "wall, median of 5"), when given.
    pub wall_median_s: Option<f64>,
}

/// The optimizer's flags that have a pipeplan equivalent.
const KNOWN: [&str; 8] = [
    "-f",
    "-n",
    "-b",
    "-s",
    "--activation_compression_ratio",
    "--straight_pipeline",
    "--use_memory_constraint",
    "--use_fewer_machines",
];

/// The runs of the table in `OPTIMIZER_RUNS.md`: rows whose second cell is a command running
/// `optimizer_graph_hierarchical.py`.
pub fn read_runs(md: &str) -> Result<Vec<OptimizerRun>, String> {
    let mut runs = Vec::new();
    for line in md.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(command) = cells.get(2).map(|c| c.trim_matches('`')) else {
            continue;
        };
        let Some(rest) = command.split("optimizer_graph_hierarchical.py").nth(1) else {
            continue;
        };
        let name = cells[1]
            .split_whitespace()
            .next()
            .ok_or_else(|| format!("a run without a name: {line}"))?
            .to_string();
        let mut flags: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut key: Option<String> = None;
        for a in rest.split_whitespace() {
            if a.starts_with('-') && a.parse::<f64>().is_err() {
                flags.entry(a.to_string()).or_default();
                key = Some(a.to_string());
            } else {
                let k = key
                    .as_ref()
                    .ok_or_else(|| format!("{name}: value {a} before any flag"))?;
                flags.get_mut(k).expect("entered").push(a.to_string());
            }
        }
        // "wall, this run" is the first cell after the single-stage time that ends in " s";
        // "wall, median of 5" the next one that starts with a time in s (its range follows).
        let seconds = |c: &str| -> Option<f64> {
            let mut words = c.split_whitespace();
            let v = words.next()?.parse().ok()?;
            (words.next() == Some("s")).then_some(v)
        };
        let this = cells
            .iter()
            .enumerate()
            .skip(7)
            .find_map(|(i, c)| Some((i, c.strip_suffix(" s")?.trim().parse::<f64>().ok()?)));
        let wall_s = this.map(|(_, v)| v);
        let wall_median_s = this.and_then(|(i, _)| cells.get(i + 1).and_then(|c| seconds(c)));
        runs.push(OptimizerRun {
            name,
            flags,
            wall_s,
            wall_median_s,
        });
    }
    Ok(runs)
}

/// The first number printed after `prefix` on a line of the optimizer's output.
pub fn printed<T: std::str::FromStr>(stdout: &str, prefix: &str) -> Option<T> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// The printed "Time per stage in pipeline" (s).
pub fn pipeline_time(stdout: &str) -> Option<f64> {
    printed(stdout, "Time per stage in pipeline:")
}

/// The printed "Total number of states".
pub fn states(stdout: &str) -> Option<usize> {
    printed(stdout, "Total number of states:")
}

/// Single-level plans that every repeat of a run printed (`repeats_summary.txt`), by run name:
/// `(start, end, replicas)` over antichain states `[start, end)`.
pub fn unique_plans(summary: &str) -> BTreeMap<String, Vec<(usize, usize, usize)>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, bool)> = None;
    for line in summary.lines() {
        if let Some(rest) = line.strip_prefix("== ") {
            let name = rest
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            current = Some((name, rest.contains(" 1 distinct plans")));
        } else if let (Some((name, true)), Some(plan)) = (&current, line.split("L1:").nth(1)) {
            if line.contains("L2:") {
                continue;
            }
            let stages: Option<Vec<_>> = plan
                .split_whitespace()
                .map(|s| {
                    let (range, r) = s.split_once('x')?;
                    let (a, b) = range
                        .trim_matches(|c| c == '(' || c == ')')
                        .split_once(',')?;
                    Some((a.parse().ok()?, b.parse().ok()?, r.parse().ok()?))
                })
                .collect();
            if let Some(stages) = stages {
                out.insert(name.clone(), stages);
            }
        }
    }
    out
}

/// What a run asks of pipeplan: the graph, the cluster and the `pipedream` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Equivalent {
    /// The profile (`-f`), under the peers' `pipedream` folder.
    pub graph: PathBuf,
    /// `-n` GPUs (per server, then servers), `-s` memory, `-b` bandwidths. A run of more than
    /// two levels, which pipeplan's cluster cannot hold, gets one level of all its GPUs at the
    /// innermost bandwidth: enough to import the profile (see [`Equivalent::levels`]).
    pub cluster: Cluster,
    /// Every `-n`/`-b` level, innermost first: (machines, bytes/s).
    pub levels: Vec<(u32, f64)>,
    /// `--set` settings of `solve --algo pipedream`.
    pub params: BTreeMap<String, String>,
}

impl Equivalent {
    /// Whether `pipeplan solve` reproduces the run (one or two levels); a run of more levels is
    /// reproduced through the library's `PdConfig`, which takes any number.
    pub fn solved_by_cli(&self) -> bool {
        self.levels.len() <= 2
    }

    /// `pipeplan import` arguments writing the instance to `out` (`-`: standard output).
    pub fn import_args(&self, out: &str) -> Vec<String> {
        let mut args: Vec<String> = ["import", "--from", "pipedream"].map(String::from).to_vec();
        args.push(self.graph.display().to_string());
        args.extend(self.cluster_args());
        args.extend(["-o".into(), out.into()]);
        args
    }

    /// The cluster as import options: `--gpus`, `--memory`, `--bandwidth`, and two levels as
    /// `--gpus-per-node` and `--inter-node-bandwidth`.
    fn cluster_args(&self) -> Vec<String> {
        let c = &self.cluster;
        let mut args: Vec<String> = vec![
            "--gpus".into(),
            c.gpus.to_string(),
            "--memory".into(),
            c.memory.to_string(),
            "--bandwidth".into(),
            c.bandwidth.intra_node.to_string(),
        ];
        if let (Some(per_node), Some(inter)) = (c.gpus_per_node, c.bandwidth.inter_node) {
            args.extend([
                "--gpus-per-node".into(),
                per_node.to_string(),
                "--inter-node-bandwidth".into(),
                inter.to_string(),
            ]);
        }
        args
    }

    /// `pipeplan solve --from pipedream GRAPH ...` arguments: the import and the solve of the
    /// run in one process.
    pub fn one_process_args(&self) -> Vec<String> {
        let mut args = self.solve_args(&self.graph.display().to_string());
        args.extend(["--from".into(), "pipedream".into()]);
        args.extend(self.cluster_args());
        args
    }

    /// `pipeplan solve --algo pipedream` arguments on `instance` (`-`: standard input), with
    /// the run's settings.
    pub fn solve_args(&self, instance: &str) -> Vec<String> {
        let mut args: Vec<String> = ["solve", instance, "--algo", "pipedream"]
            .map(String::from)
            .to_vec();
        for (k, v) in &self.params {
            args.extend(["--set".into(), format!("{k}={v}")]);
        }
        args
    }
}

impl OptimizerRun {
    fn one(&self, flag: &str) -> Option<&str> {
        self.flags
            .get(flag)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    /// The pipeplan equivalent of the command, with `-f` resolved under `dir` (the peers'
    /// `pipedream` folder, which mirrors the optimizer's checkout).
    pub fn equivalent(&self, dir: &Path) -> Result<Equivalent, String> {
        let name = &self.name;
        if let Some(unknown) = self.flags.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!(
                "{name}: optimizer flag {unknown} has no pipeplan equivalent"
            ));
        }
        let number = |flag: &str, v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("{name}: {flag} {v} is not a number"))
        };
        let profile = self.one("-f").ok_or_else(|| format!("{name}: no -f"))?;
        let machines = self
            .flags
            .get("-n")
            .ok_or_else(|| format!("{name}: no -n"))?
            .iter()
            .map(|n| n.parse::<u32>().map_err(|_| format!("{name}: -n {n}")))
            .collect::<Result<Vec<u32>, String>>()?;
        let bandwidths = match self.flags.get("-b") {
            Some(b) => b
                .iter()
                .map(|v| number("-b", v))
                .collect::<Result<Vec<f64>, String>>()?,
            None => vec![1e9],
        };
        if machines.is_empty() || machines.len() != bandwidths.len() {
            return Err(format!(
                "{name}: -n {machines:?} -b {bandwidths:?}: one bandwidth per level"
            ));
        }
        let memory = match self.one("-s") {
            Some(v) => number("-s", v)?,
            None => 16e9,
        };
        let cluster = Cluster {
            gpus: machines.iter().product(),
            gpus_per_node: (machines.len() == 2).then_some(machines[0]),
            gpu: None,
            memory,
            bandwidth: Bandwidth {
                intra_node: bandwidths[0],
                inter_node: (machines.len() == 2).then(|| bandwidths[1]),
            },
            pcie: None,
        };
        let mut params = BTreeMap::new();
        params.insert(
            "replicate".to_string(),
            (!self.flags.contains_key("--straight_pipeline")).to_string(),
        );
        params.insert(
            "memory_check".to_string(),
            self.flags
                .contains_key("--use_memory_constraint")
                .to_string(),
        );
        params.insert(
            "use_fewer_machines".to_string(),
            self.flags.contains_key("--use_fewer_machines").to_string(),
        );
        params.insert(
            "activation_compression_ratio".to_string(),
            self.one("--activation_compression_ratio")
                .unwrap_or("none")
                .to_string(),
        );
        Ok(Equivalent {
            graph: dir.join(profile.trim_start_matches("../")),
            cluster,
            levels: machines.iter().copied().zip(bandwidths).collect(),
            params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "| name | command | states |\n|---|---|---|\n\
        | r_n4x2 (extra) | `python optimizer_graph_hierarchical.py -f ../profiler/x/graph.txt -n 4 2 -b 10000000000 1000000000 --activation_compression_ratio 1` | 240 | (0,240)x2 | 0.08 | 0.44 | 14.79 s | 14.4 s (14.1-15.0) | 65 MiB |\n";

    #[test]
    fn a_two_level_command_becomes_nodes() {
        let runs = read_runs(MD).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].name, "r_n4x2");
        assert_eq!(runs[0].wall_s, Some(14.79));
        assert_eq!(runs[0].wall_median_s, Some(14.4));
        let e = runs[0].equivalent(Path::new("/p")).unwrap();
        assert_eq!(e.graph, Path::new("/p/profiler/x/graph.txt"));
        assert_eq!(e.cluster.gpus, 8);
        assert_eq!(e.cluster.gpus_per_node, Some(4));
        assert_eq!(e.cluster.bandwidth.inter_node, Some(1e9));
        assert_eq!(e.params["activation_compression_ratio"], "1");
        assert_eq!(e.params["memory_check"], "false");
        assert!(e.solved_by_cli());
        // Three levels: the library's levels, one level of every GPU for the import.
        let md = MD.replace(
            "-n 4 2 -b 10000000000 1000000000",
            "-n 2 2 2 -b 1e10 5e9 1e9",
        );
        let e = read_runs(&md).unwrap()[0]
            .equivalent(Path::new("/p"))
            .unwrap();
        assert_eq!(e.levels, [(2, 1e10), (2, 5e9), (2, 1e9)]);
        assert!(!e.solved_by_cli());
        assert_eq!((e.cluster.gpus, e.cluster.gpus_per_node), (8, None));
        assert_eq!(e.cluster.bandwidth.inter_node, None);
        let md = MD.replace("-b 10000000000 1000000000", "-b 10000000000");
        let e = read_runs(&md).unwrap()[0].equivalent(Path::new("/p"));
        assert!(e.unwrap_err().contains("one bandwidth per level"));
    }

    #[test]
    fn unknown_flags_are_named() {
        let md = MD.replace("-n 4 2", "-n 4 2 -o out");
        let e = read_runs(&md).unwrap()[0].equivalent(Path::new("/p"));
        assert!(e
            .unwrap_err()
            .contains("flag -o has no pipeplan equivalent"));
        let md = MD.replace("-n 4 2", "-n 4 2 --use_fewer_machines");
        let e = read_runs(&md).unwrap()[0].equivalent(Path::new("/p"));
        assert_eq!(e.unwrap().params["use_fewer_machines"], "true");
    }

    #[test]
    fn printed_numbers() {
        let out = "Total number of states: 40\nTime per stage in pipeline: 0.0261490000000002\n";
        assert_eq!(states(out), Some(40));
        assert_eq!(pipeline_time(out), Some(0.0261490000000002));
        let summary = "== a: 3 runs, 1 distinct plans, time\n    3x  L1: (0,17)x3 (17,40)x1\n\
                       == b: 3 runs, 2 distinct plans\n    2x  L1: (0,1)x1\n";
        let u = unique_plans(summary);
        assert_eq!(u["a"], vec![(0, 17, 3), (17, 40, 1)]);
        assert!(!u.contains_key("b"));
    }
}
