//! The scaling study (`benches/scaling.rs`, `docs/limits.md`, BENCHMARKS.md "Scaling"): every
//! algorithm on two ladders of generated instances, one growing the chain (34 to 1,250 layers
//! on 32 GPUs), one growing the cluster (8 to 4,096 GPUs for a 128-layer model), and the growth
//! exponent fitted to the times it measures.
//!
//! Every rung is a `pipeplan generate` command ([`Rung::command`]); its memory per GPU is the
//! least whole GiB in which `balanced-memory`'s plan fits ([`Rung::instance`]), so that every
//! rung is as constrained as the others: the best plain contiguous pipeline just fits, plans that
//! balance time alone do not.

use pipeplan_formulations::generate::{generate, Device, GenerateOptions};
use pipeplan_formulations::instance::{Bandwidth, Cluster};
use pipeplan_formulations::{InputError, Instance};
use pipeplan_solvers::{harness, registry, SolveOptions};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// What a ladder grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Layers of the chain, at a fixed cluster.
    Layers,
    /// GPUs of the cluster, at a fixed model.
    Gpus,
}

impl Axis {
    /// The symbol of the rung's size in benchmark ids and tables (`L` or `G`).
    pub fn symbol(self) -> &'static str {
        match self {
            Axis::Layers => "L",
            Axis::Gpus => "G",
        }
    }

    /// What the size counts.
    pub fn unit(self) -> &'static str {
        match self {
            Axis::Layers => "layers",
            Axis::Gpus => "GPUs",
        }
    }
}

/// One rung of a ladder: a generated model on a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Rung {
    /// What the ladder grows.
    pub axis: Axis,
    /// Generator model name.
    pub model: &'static str,
    /// Decoder blocks (`--blocks`), when not the model's own count.
    pub blocks: Option<u32>,
    /// Samples per micro-batch (`--batch`).
    pub batch: u32,
    /// Micro-batches per iteration (`--micro-batches`).
    pub micro_batches: u32,
    /// GPUs (`--gpus`).
    pub gpus: u32,
}

/// GPUs per node of every rung.
pub const GPUS_PER_NODE: u32 = 8;
/// Bandwidth inside a node (bytes/s; NVLink of an A100 node, one direction).
pub const INTRA_NODE: f64 = 300e9;
/// Bandwidth between nodes (bytes/s; a 200 Gb/s InfiniBand port).
pub const INTER_NODE: f64 = 25e9;
/// Host-device bandwidth for swapping (bytes/s; PCIe 4.0 x16).
pub const PCIE: f64 = 25e9;

/// The layer ladder: GPT-3 6.7B's block (h 4096, 32 heads, sequence 2048) repeated 32, 126, 510
/// and 1,248 times (34, 128, 512 and 1,250 layers with the embeddings and the head) on 32 GPUs,
/// micro-batches of 8 sequences, 128 per iteration (GPT-3 6.7B's batch of 1,024 sequences).
pub fn layer_ladder() -> Vec<Rung> {
    [None, Some(126), Some(510), Some(1248)]
        .into_iter()
        .map(|blocks| Rung {
            axis: Axis::Layers,
            model: "gpt3-6.7b",
            blocks,
            batch: 8,
            micro_batches: 128,
            gpus: 32,
        })
        .collect()
}

/// The GPU ladder: Llama 3 405B (128 layers, sequence 8192) on 8, 64, 512 and 4,096 GPUs,
/// micro-batches of 16 sequences, 128 per iteration (Llama 3 405B's batch of 2,048 sequences:
/// enough samples per micro-batch for data parallelism on 4,096 GPUs).
pub fn gpu_ladder() -> Vec<Rung> {
    [8, 64, 512, 4096]
        .into_iter()
        .map(|gpus| Rung {
            axis: Axis::Gpus,
            model: "llama3-405b",
            blocks: None,
            batch: 16,
            micro_batches: 128,
            gpus,
        })
        .collect()
}

impl Rung {
    /// The rung's size on its axis: layers of the chain, or GPUs.
    pub fn size(&self, inst: &Instance) -> usize {
        match self.axis {
            Axis::Layers => inst.num_layers(),
            Axis::Gpus => self.gpus as usize,
        }
    }

    fn options(&self, memory: f64) -> GenerateOptions {
        let cluster = Cluster {
            gpus: self.gpus,
            gpus_per_node: Some(GPUS_PER_NODE.min(self.gpus)),
            gpu: None,
            memory,
            bandwidth: Bandwidth {
                intra_node: INTRA_NODE,
                inter_node: Some(INTER_NODE),
            },
            pcie: Some(PCIE),
        };
        let mut o = GenerateOptions::new(self.model, cluster);
        o.blocks = self.blocks;
        o.batch = self.batch;
        o.micro_batches = Some(self.micro_batches);
        o.device = Device::A100;
        o
    }

    /// The instance: the generated model with the least whole GiB per GPU in which
    /// `balanced-memory`'s plan fits (its evaluated peak, rounded up). The plan and its peak do
    /// not depend on the memory, so one solve at any memory finds it.
    pub fn instance(&self) -> Result<Instance, String> {
        let probe = generate(&self.options(GIB)).map_err(|e| e.to_string())?;
        let algo = registry::by_name("balanced-memory").ok_or("balanced-memory is registered")?;
        let sol = harness::run(algo.as_ref(), &probe, &SolveOptions::default())
            .map_err(|e| format!("balanced-memory on {}: {e}", probe.name))?;
        let peak = sol
            .evaluated
            .ok_or("the harness evaluates every plan")?
            .max_memory;
        generate(&self.options((peak / GIB).ceil() * GIB)).map_err(|e: InputError| e.to_string())
    }

    /// The `pipeplan generate` command writing `inst` (this rung's instance).
    pub fn command(&self, inst: &Instance) -> String {
        let blocks = self
            .blocks
            .map_or(String::new(), |b| format!(" --blocks {b}"));
        format!(
            "pipeplan generate {}{blocks} --batch {} --micro-batches {} --device a100 --gpus {} \
             --gpus-per-node {} --memory {}GiB --bandwidth 300GB/s --inter-node-bandwidth \
             25GB/s --pcie 25GB/s",
            self.model,
            self.batch,
            self.micro_batches,
            self.gpus,
            GPUS_PER_NODE.min(self.gpus),
            inst.cluster.memory / GIB,
        )
    }
}

/// The least-squares slope of ln(time) against ln(size) over `points` (size, seconds): the
/// exponent k of time ~ size^k. `None` with fewer than two distinct sizes or a non-positive
/// value.
pub fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    if points.iter().any(|&(x, t)| !(x > 0.0 && t > 0.0)) {
        return None;
    }
    let n = points.len() as f64;
    let xs: Vec<f64> = points.iter().map(|p| p.0.ln()).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// How one algorithm fared on one rung.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A plan; `seconds` per solve (the median of criterion's samples, or the one run), and
    /// what stopped the search early, if anything (`time limit`, `node cap`, ...).
    Solved {
        /// Seconds per solve.
        seconds: f64,
        /// Whether the time comes from a single run (the case took more than a second).
        once: bool,
        /// The solution's `stop`, as `pipeplan solve` prints it.
        stop: Option<String>,
    },
    /// No plan: the error, after `seconds`.
    Failed {
        /// Seconds until the error.
        seconds: f64,
        /// The error as `pipeplan solve` prints it.
        error: String,
        /// Whether the time limit (not the instance) ended the solve.
        time_limit: bool,
    },
    /// The algorithm declined the instance (`Algorithm::supports`).
    Unsupported {
        /// Its reason.
        reason: String,
    },
}

impl Cell {
    /// The time to fit a growth exponent to: only a plan found without meeting the time limit.
    pub fn fitted_seconds(&self) -> Option<f64> {
        match self {
            Cell::Solved { seconds, stop, .. } if stop.as_deref() != Some("time limit") => {
                Some(*seconds)
            }
            _ => None,
        }
    }

    /// The table's text: the time, marked `(once)` for a single run and with the stop reason;
    /// for no plan, what ended the solve.
    pub fn text(&self) -> String {
        match self {
            Cell::Solved {
                seconds,
                once,
                stop,
            } => {
                let mut t = fmt_seconds(*seconds);
                let marks: Vec<&str> = once
                    .then_some("once")
                    .into_iter()
                    .chain(stop.as_deref())
                    .collect();
                if !marks.is_empty() {
                    t.push_str(&format!(" ({})", marks.join(", ")));
                }
                t
            }
            Cell::Failed {
                seconds,
                time_limit: true,
                ..
            } => format!("time limit, no plan ({})", fmt_seconds(*seconds)),
            Cell::Failed { seconds, .. } => format!("no plan ({})", fmt_seconds(*seconds)),
            Cell::Unsupported { .. } => "unsupported".into(),
        }
    }
}

/// Seconds with three significant digits in a readable unit (µs, ms, s).
pub fn fmt_seconds(s: f64) -> String {
    let (v, unit) = if s < 1e-3 {
        (s * 1e6, "µs")
    } else if s < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A ladder's results as a Markdown table: one row per algorithm, its cell at every rung, and
/// the growth exponent over the rungs it completed; then the message of every cell without a
/// plan. `sizes` are the rungs' sizes; `rows` each hold an algorithm's name and one cell per
/// rung (`None`: not measured, e.g. filtered out).
pub fn markdown(axis: Axis, sizes: &[usize], rows: &[(String, Vec<Option<Cell>>)]) -> String {
    let mut out = "| algorithm |".to_string();
    for s in sizes {
        out.push_str(&format!(" {}={s} |", axis.symbol()));
    }
    out.push_str(&format!(" exponent vs {} |\n|---|", axis.unit()));
    out.push_str(&"---:|".repeat(sizes.len() + 1));
    out.push('\n');
    let mut notes = Vec::new();
    for (name, cells) in rows {
        out.push_str(&format!("| {name} |"));
        let mut points = Vec::new();
        for (size, cell) in sizes.iter().zip(cells) {
            let text = match cell {
                Some(c) => {
                    if let Some(t) = c.fitted_seconds() {
                        points.push((*size as f64, t));
                    }
                    match c {
                        Cell::Failed { error, .. } => {
                            notes.push(format!("- {name}, {}={size}: {error}", axis.symbol()))
                        }
                        Cell::Unsupported { reason } => notes.push(format!(
                            "- {name}, {}={size}: unsupported: {reason}",
                            axis.symbol()
                        )),
                        Cell::Solved { .. } => {}
                    }
                    c.text()
                }
                None => "-".into(),
            };
            out.push_str(&format!(" {text} |"));
        }
        let k = match growth_exponent(&points) {
            Some(k) => format!("{k:.2} ({} rungs)", points.len()),
            None => "-".into(),
        };
        out.push_str(&format!(" {k} |\n"));
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exponent_of_a_power_law_is_its_power() {
        let pts: Vec<(f64, f64)> = [34.0, 128.0, 512.0, 1250.0]
            .iter()
            .map(|&x: &f64| (x, 3e-3 * x.powf(2.0)))
            .collect();
        assert!((growth_exponent(&pts).unwrap() - 2.0).abs() < 1e-12);
        let flat = [(8.0, 0.5), (64.0, 0.5)];
        assert!(growth_exponent(&flat).unwrap().abs() < 1e-12);
        // Least squares, not the end points: (1, 1), (2, 4), (4, 4) -> slope of the fit.
        let k = growth_exponent(&[(1.0, 1.0), (2.0, 4.0), (4.0, 4.0)]).unwrap();
        assert!((k - 1.0).abs() < 1e-12, "{k}");
    }

    #[test]
    fn no_exponent_from_one_size_or_a_zero_time() {
        assert_eq!(growth_exponent(&[]), None);
        assert_eq!(growth_exponent(&[(8.0, 1.0)]), None);
        assert_eq!(growth_exponent(&[(8.0, 1.0), (8.0, 2.0)]), None);
        assert_eq!(growth_exponent(&[(8.0, 0.0), (64.0, 2.0)]), None);
    }

    #[test]
    fn ladders_have_the_sizes_of_the_study() {
        let layers: Vec<Option<u32>> = layer_ladder().iter().map(|r| r.blocks).collect();
        assert_eq!(layers, [None, Some(126), Some(510), Some(1248)]);
        let gpus: Vec<u32> = gpu_ladder().iter().map(|r| r.gpus).collect();
        assert_eq!(gpus, [8, 64, 512, 4096]);
    }

    #[test]
    fn a_rung_has_the_least_memory_balanced_memory_fits_in() {
        let rung = &layer_ladder()[1];
        let inst = rung.instance().unwrap();
        assert_eq!(inst.num_layers(), 128);
        assert_eq!(rung.size(&inst), 128);
        let bm = registry::by_name("balanced-memory").unwrap();
        let fits = |inst: &Instance| {
            harness::run(bm.as_ref(), inst, &SolveOptions::default())
                .unwrap()
                .evaluated
                .unwrap()
                .fits
        };
        assert!(fits(&inst));
        let mut less = inst.clone();
        less.cluster.memory -= GIB;
        assert!(!fits(&less));
        let cmd = rung.command(&inst);
        assert!(
            cmd.starts_with("pipeplan generate gpt3-6.7b --blocks 126 "),
            "{cmd}"
        );
        assert!(
            cmd.contains(&format!("--memory {}GiB", inst.cluster.memory / GIB)),
            "{cmd}"
        );
    }

    #[test]
    fn cells_print_time_marks_and_errors() {
        let once = Cell::Solved {
            seconds: 34.5,
            once: true,
            stop: None,
        };
        assert_eq!(once.text(), "34.5 s (once)");
        assert_eq!(once.fitted_seconds(), Some(34.5));
        let limit = Cell::Solved {
            seconds: 60.01,
            once: true,
            stop: Some("time limit".into()),
        };
        assert_eq!(limit.text(), "60.0 s (once, time limit)");
        assert_eq!(limit.fitted_seconds(), None);
        let capped = Cell::Solved {
            seconds: 0.0123,
            once: false,
            stop: Some("node cap".into()),
        };
        assert_eq!(capped.text(), "12.3 ms (node cap)");
        assert_eq!(fmt_seconds(4.2e-5), "42.0 µs");
        let rows = vec![
            (
                "a".to_string(),
                vec![Some(once.clone()), Some(once.clone())],
            ),
            (
                "b".to_string(),
                vec![
                    Some(Cell::Unsupported {
                        reason: "too big".into(),
                    }),
                    None,
                ],
            ),
        ];
        let md = markdown(Axis::Gpus, &[8, 64], &rows);
        assert!(
            md.starts_with("| algorithm | G=8 | G=64 | exponent vs GPUs |\n"),
            "{md}"
        );
        assert!(
            md.contains("| a | 34.5 s (once) | 34.5 s (once) | 0.00 (2 rungs) |"),
            "{md}"
        );
        assert!(md.contains("| b | unsupported | - | - |"), "{md}");
        assert!(md.contains("- b, G=8: unsupported: too big"), "{md}");
    }
}
