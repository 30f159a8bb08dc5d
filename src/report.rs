//! How results are printed: a human table, JSON (the library's own types) or CSV (one flat row
//! per solve, for pandas). Every column says whether its figure is the algorithm's `claimed`
//! value or the neutral evaluator's `evaluated` one.

use crate::table::Table;
use pipeplan_formulations::evaluate::Evaluation;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::units::{fmt_bytes, fmt_ms};
use pipeplan_formulations::{Instance, Plan};
use pipeplan_solvers::algorithm::{counter, Solution, Status};
use pipeplan_solvers::harness::{Outcome, Row};
use serde::Serialize;

/// What the table columns mean, printed under every comparison.
pub const LEGEND: &str = "\
claimed = the algorithm's own figure under its own model; evaluated = pipeplan's neutral evaluator
(docs/evaluator.md). period|iter: period per micro-batch of an async pipeline, or iteration time per
batch of a synchronous one (1f1b, gpipe). gap = (claimed objective - best proven optimum of the same
objective by an exact algorithm) / that optimum; `reference` marks the algorithm that proved it.
period gap (evaluated, --wide): evaluated period of an async plan that fits against the proven optimum over
contiguous partitions without swap or recompute (exact-contiguous); negative when a non-contiguous
allocation or memory optimization (DawnPiper's swap / recompute) beats it.
evals|plans (--wide): objective evaluations of a Bayesian optimization (mcap-bo) or plans an enumeration
compared (capture, mcap-bf). Per-GPU memory vectors (claimed and evaluated) are in --csv / --json.";

/// One solve as one flat record (CSV output of `solve` and `compare`).
#[derive(Debug, Default, Serialize)]
pub struct Record {
    /// Instance name.
    pub instance: String,
    /// Algorithm name.
    pub algorithm: String,
    /// solved, unsupported or failed.
    pub result: String,
    /// Optimality status of the claim.
    pub status: Option<String>,
    /// Claimed objective: name.
    pub claimed_objective_name: Option<String>,
    /// Claimed objective: value.
    pub claimed_objective: Option<f64>,
    /// Claimed objective: unit.
    pub claimed_objective_unit: Option<String>,
    /// Claimed async period (ms).
    pub claimed_period_ms: Option<f64>,
    /// Claimed synchronous iteration time (ms).
    pub claimed_iteration_ms: Option<f64>,
    /// Claimed throughput (samples/s).
    pub claimed_throughput: Option<f64>,
    /// Claimed largest peak memory (bytes).
    pub claimed_max_memory: Option<f64>,
    /// Claimed fit.
    pub claimed_fits: Option<bool>,
    /// Schedule family evaluated.
    pub evaluated_schedule: Option<String>,
    /// Evaluated async period (ms).
    pub evaluated_period_ms: Option<f64>,
    /// Evaluated iteration time (ms).
    pub evaluated_iteration_ms: Option<f64>,
    /// Evaluated throughput (samples/s).
    pub evaluated_throughput: Option<f64>,
    /// Evaluated largest peak memory (bytes).
    pub evaluated_max_memory: Option<f64>,
    /// GPU of that peak.
    pub evaluated_max_memory_gpu: Option<u32>,
    /// GPU memory (bytes).
    pub memory_limit: Option<f64>,
    /// Evaluated fit (memory and schedule).
    pub evaluated_fits: Option<bool>,
    /// Simulator's verdict on the periodic pattern.
    pub evaluated_valid_schedule: Option<bool>,
    /// Evaluated idle fraction.
    pub evaluated_bubble: Option<f64>,
    /// Stages of the plan.
    pub stages: Option<usize>,
    /// GPUs used.
    pub gpus_used: Option<u32>,
    /// Solve wall time (ms).
    pub solve_ms: Option<f64>,
    /// Proven bound on the objective.
    pub bound: Option<f64>,
    /// Relative gap to the bound.
    pub gap: Option<f64>,
    /// Gap of the claimed objective against the exact reference.
    pub gap_vs_exact: Option<f64>,
    /// The exact reference.
    pub exact_reference: Option<String>,
    /// Gap of the evaluated async period against the proven contiguous optimum.
    pub period_gap_vs_exact: Option<f64>,
    /// Claimed peak memory of every GPU (bytes, space-separated, index = GPU id).
    pub claimed_memory_vector: Option<String>,
    /// Evaluated peak memory of every GPU (bytes, space-separated, index = GPU id).
    pub evaluated_memory_vector: Option<String>,
    /// Objective evaluations of a search that counts them (mcap-bo's Bayesian optimization).
    pub evaluations: Option<f64>,
    /// Plans a search compared (capture, mcap-bf enumerations).
    pub plans_visited: Option<f64>,
    /// Why there is no solution.
    pub reason: Option<String>,
}

/// A memory vector as one CSV cell: bytes per GPU, space-separated.
fn vector_cell(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Optimal => "optimal",
        Status::Feasible => "feasible",
        Status::Heuristic => "heuristic",
    }
}

impl Record {
    /// The record of a solution.
    pub fn of_solution(sol: &Solution) -> Record {
        let c = &sol.claimed;
        let mut r = Record {
            instance: sol.instance.clone(),
            algorithm: sol.algorithm.clone(),
            result: "solved".into(),
            status: Some(status_name(sol.stats.status).into()),
            claimed_objective_name: c.objective.as_ref().map(|o| o.name().to_string()),
            claimed_objective: c.objective.as_ref().map(|o| o.value),
            claimed_objective_unit: c.objective.as_ref().map(|o| o.unit().to_string()),
            claimed_period_ms: c.period_ms,
            claimed_iteration_ms: c.iteration_ms,
            claimed_throughput: c.throughput,
            claimed_max_memory: c.max_memory,
            claimed_fits: c.fits,
            stages: Some(sol.plan.stages.len()),
            solve_ms: Some(sol.stats.wall_ms),
            bound: sol.stats.bound,
            gap: sol.stats.gap,
            claimed_memory_vector: c.peak_memory.as_deref().map(vector_cell),
            evaluations: sol.stats.counters.get(counter::EVALUATIONS).copied(),
            plans_visited: sol.stats.counters.get(counter::PLANS_VISITED).copied(),
            ..Record::default()
        };
        if let Some(e) = &sol.evaluated {
            r.fill_evaluation(e);
        }
        r
    }

    /// The record of a comparison row.
    pub fn of_row(row: &Row) -> Record {
        let mut r = match &row.outcome {
            Outcome::Solved { solution } => Record::of_solution(solution),
            Outcome::Unsupported { reason } | Outcome::Failed { reason } => Record {
                instance: row.instance.clone(),
                algorithm: row.algorithm.clone(),
                result: match row.outcome {
                    Outcome::Unsupported { .. } => "unsupported".into(),
                    _ => "failed".into(),
                },
                reason: Some(reason.clone()),
                ..Record::default()
            },
        };
        r.gap_vs_exact = row.gap_vs_exact.filter(|g| g.is_finite());
        r.exact_reference = row.exact_reference.clone();
        r.period_gap_vs_exact = row.period_gap_vs_exact;
        r
    }

    /// The record of a plan judged by `evaluate`.
    pub fn of_evaluation(inst: &Instance, plan: &Plan, e: &Evaluation) -> Record {
        let mut r = Record {
            instance: inst.name.clone(),
            result: "evaluated".into(),
            stages: Some(plan.stages.len()),
            ..Record::default()
        };
        r.fill_evaluation(e);
        r
    }

    fn fill_evaluation(&mut self, e: &Evaluation) {
        self.evaluated_schedule = Some(e.schedule.to_string());
        self.evaluated_period_ms = e.period_ms;
        self.evaluated_iteration_ms = e.iteration_ms;
        self.evaluated_throughput = Some(e.throughput);
        self.evaluated_max_memory = Some(e.max_memory);
        self.evaluated_max_memory_gpu = Some(e.max_memory_gpu);
        self.memory_limit = Some(e.memory_limit);
        self.evaluated_fits = Some(e.fits);
        self.evaluated_valid_schedule = e.valid_schedule;
        self.evaluated_bubble = Some(e.bubble);
        self.gpus_used = Some(e.gpus_used);
        self.evaluated_memory_vector = Some(vector_cell(&e.peak_memory));
    }
}

/// CSV text of records (any flat serializable rows), with a header.
pub fn csv<T: Serialize>(records: &[T]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.serialize(r).expect("records serialize to CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory writer")).expect("CSV is UTF-8")
}

/// Pretty JSON of any result.
pub fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("results serialize to JSON")
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "NO" }.into()
}

fn objective_value(value: f64, unit: &str) -> String {
    match unit {
        "ms" => fmt_ms(value),
        "bytes" => fmt_bytes(value),
        _ => format!("{value:.4} {unit}"),
    }
}

fn throughput(v: f64) -> String {
    format!("{v:.2}")
}

/// One line about an instance: name, size, cluster, schedule.
pub fn instance_line(inst: &Instance) -> String {
    let c = &inst.cluster;
    let nodes = if inst.gpus_per_node() < c.gpus {
        format!(" ({} per node)", inst.gpus_per_node())
    } else {
        String::new()
    };
    format!(
        "{}: {} layers, {} GPUs{} x {}, default schedule {}",
        inst.name,
        inst.num_layers(),
        c.gpus,
        nodes,
        fmt_bytes(c.memory),
        inst.training.schedule
    )
}

/// The stages of a plan with the evaluator's per-stage figures (when given).
pub fn plan_table(inst: &Instance, plan: &Plan, eval: Option<&Evaluation>) -> String {
    let mut t = Table::new(
        &[
            "stage",
            "layers",
            "names",
            "GPUs",
            "dp",
            "tp",
            "sdp",
            "ckpt",
            "time/mb (evaluated)",
            "in flight",
            "peak memory (evaluated)",
        ],
        &[0, 4, 5, 8, 9, 10],
    );
    for (i, s) in plan.stages.iter().enumerate() {
        let name = |k: usize| {
            inst.model
                .layers
                .get(k)
                .map(|l| l.name.clone())
                .unwrap_or_default()
        };
        let names = if s.first == s.last {
            name(s.first)
        } else {
            format!("{} .. {}", name(s.first), name(s.last))
        };
        let gpus = s
            .gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let peak = eval.map(|e| {
            s.gpus
                .iter()
                .filter_map(|&g| e.peak_memory.get(g as usize))
                .fold(0.0, |a: f64, &b| a.max(b))
        });
        t.row(vec![
            i.to_string(),
            format!("{}-{}", s.first, s.last),
            names,
            gpus,
            s.dp.to_string(),
            s.tp.to_string(),
            if s.sdp { "yes" } else { "" }.into(),
            if s.checkpoint.is_empty() {
                String::new()
            } else {
                s.checkpoint.len().to_string()
            },
            opt(eval.and_then(|e| e.stage_time.get(i).copied()), fmt_ms),
            opt(eval.and_then(|e| e.in_flight.get(i).copied()), |v| {
                v.to_string()
            }),
            opt(peak, fmt_bytes),
        ]);
    }
    t.render()
}

/// Claimed against evaluated metrics of one solution (or evaluated only).
pub fn metrics_table(claimed: Option<&Solution>, eval: Option<&Evaluation>) -> String {
    let mut t = Table::new(&["metric", "claimed", "evaluated"], &[1, 2]);
    let c = claimed.map(|s| &s.claimed);
    let e = eval;
    t.row(vec![
        "schedule".into(),
        "-".into(),
        opt(e.map(|e| e.schedule), |k: ScheduleKind| k.to_string()),
    ]);
    t.row(vec![
        "period (async, per micro-batch)".into(),
        opt(c.and_then(|c| c.period_ms), fmt_ms),
        opt(e.and_then(|e| e.period_ms), fmt_ms),
    ]);
    t.row(vec![
        "iteration (sync, per batch)".into(),
        opt(c.and_then(|c| c.iteration_ms), fmt_ms),
        opt(e.and_then(|e| e.iteration_ms), fmt_ms),
    ]);
    t.row(vec![
        "throughput (samples/s)".into(),
        opt(c.and_then(|c| c.throughput), throughput),
        opt(e.map(|e| e.throughput), throughput),
    ]);
    t.row(vec![
        "max memory".into(),
        opt(c.and_then(|c| c.max_memory), fmt_bytes),
        opt(e, |e| {
            format!("{} (GPU {})", fmt_bytes(e.max_memory), e.max_memory_gpu)
        }),
    ]);
    t.row(vec![
        "memory limit".into(),
        "-".into(),
        opt(e, |e| fmt_bytes(e.memory_limit)),
    ]);
    t.row(vec![
        "bubble".into(),
        "-".into(),
        opt(e, |e| format!("{:.1}%", 100.0 * e.bubble)),
    ]);
    t.row(vec![
        "fits".into(),
        opt(c.and_then(|c| c.fits), yes_no),
        opt(e, |e| yes_no(e.fits)),
    ]);
    t.row(vec![
        "valid schedule (simulator)".into(),
        "-".into(),
        opt(e.and_then(|e| e.valid_schedule), yes_no),
    ]);
    t.render()
}

/// Human report of one solve.
pub fn solution_text(inst: &Instance, sol: &Solution) -> String {
    let mut out = format!("instance   {}\n", instance_line(inst));
    let st = &sol.stats;
    out.push_str(&format!(
        "algorithm  {} ({}), status {}, solved in {}\n",
        sol.algorithm,
        sol.family,
        status_name(st.status),
        fmt_ms(st.wall_ms)
    ));
    if let Some(o) = &sol.claimed.objective {
        let mut line = format!(
            "objective  {} = {} (claimed)",
            o.name(),
            objective_value(o.value, o.unit())
        );
        if let Some(b) = st.bound {
            line.push_str(&format!(", bound {}", objective_value(b, o.unit())));
        }
        if let Some(g) = st.gap {
            line.push_str(&format!(", gap {:.2}%", 100.0 * g));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&plan_table(inst, &sol.plan, sol.evaluated.as_ref()));
    out.push('\n');
    out.push_str(&metrics_table(Some(sol), sol.evaluated.as_ref()));
    if let Some(v) = &sol.claimed.peak_memory {
        let used = sol.plan.gpus();
        let cells = |v: &[f64]| {
            used.iter()
                .map(|&g| v.get(g as usize).map_or("-".into(), |&x| fmt_bytes(x)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("\nmemory per GPU (claimed):   {}\n", cells(v)));
        if let Some(e) = &sol.evaluated {
            out.push_str(&format!(
                "memory per GPU (evaluated): {}\n",
                cells(&e.peak_memory)
            ));
        }
    }
    push_notes(&mut out, "algorithm notes", &sol.notes);
    if let Some(e) = &sol.evaluated {
        push_notes(&mut out, "evaluator notes", &e.notes);
    }
    out
}

/// Human report of a plan judged by `evaluate`.
pub fn evaluation_text(inst: &Instance, plan: &Plan, e: &Evaluation) -> String {
    let mut out = format!("instance   {}\n\n", instance_line(inst));
    out.push_str(&plan_table(inst, plan, Some(e)));
    out.push('\n');
    out.push_str(&metrics_table(None, Some(e)));
    push_notes(&mut out, "evaluator notes", &e.notes);
    out
}

fn push_notes(out: &mut String, title: &str, notes: &[String]) {
    if !notes.is_empty() {
        out.push_str(&format!("\n{title}:\n"));
        for n in notes {
            out.push_str(&format!("  - {n}\n"));
        }
    }
}

/// Columns of the narrow comparison table (fits 120 columns), as indices into the wide one.
pub(crate) const NARROW: [usize; 9] = [0, 1, 2, 3, 5, 7, 9, 11, 14];
/// Their headers: short, with the caption saying which are claimed and which evaluated.
pub(crate) const NARROW_HEADER: [&str; 9] = [
    "algorithm",
    "status",
    "objective",
    "schedule",
    "period|iter",
    "samples/s",
    "max mem",
    "fits",
    "gap",
];
/// Caption of the narrow table.
pub(crate) const NARROW_CAPTION: &str =
    "objective: claimed; period|iter, samples/s, max mem, fits: \
    evaluated;\ngap: claimed objective vs the best exact one (--wide: every column)";

/// Human table of a comparison, one block per instance, with the legend: the narrow table (fits
/// 120 columns) or, `wide`, every column with claimed and evaluated side by side.
pub fn comparison_text(instances: &[Instance], rows: &[Row], wide: bool) -> String {
    let mut out = String::new();
    for inst in instances {
        out.push_str(&format!("== {}\n", instance_line(inst)));
        if !wide {
            out.push_str(NARROW_CAPTION);
            out.push('\n');
        }
        let mut t = if wide {
            Table::new(
                &[
                    "algorithm",
                    "status",
                    "objective (claimed)",
                    "schedule",
                    "period|iter claimed",
                    "period|iter evaluated",
                    "samples/s claimed",
                    "samples/s evaluated",
                    "max mem claimed",
                    "max mem evaluated",
                    "fits claimed",
                    "fits evaluated",
                    "valid schedule",
                    "solve time",
                    "gap vs exact",
                    "period gap (evaluated)",
                    "evals|plans",
                ],
                &[2, 4, 5, 6, 7, 8, 9, 13, 14, 15, 16],
            )
        } else {
            Table::new(&NARROW_HEADER, &[2, 4, 5, 6, 8])
        };
        let mut reasons = Vec::new();
        for row in rows.iter().filter(|r| r.instance == inst.name) {
            match &row.outcome {
                Outcome::Solved { solution } => {
                    let cells = solution_cells(solution, row);
                    t.row(if wide {
                        cells
                    } else {
                        NARROW.iter().map(|&i| cells[i].clone()).collect()
                    })
                }
                Outcome::Unsupported { reason } | Outcome::Failed { reason } => {
                    let what = if matches!(row.outcome, Outcome::Unsupported { .. }) {
                        "unsupported"
                    } else {
                        "failed"
                    };
                    t.row(vec![row.algorithm.clone(), what.into()]);
                    reasons.push(format!("{}: {what}: {reason}", row.algorithm));
                }
            }
        }
        out.push_str(&t.render());
        for r in reasons {
            out.push_str(&format!("  {r}\n"));
        }
        out.push('\n');
    }
    out.push_str(LEGEND);
    out.push('\n');
    out
}

pub(crate) fn solution_cells(sol: &Solution, row: &Row) -> Vec<String> {
    let c = &sol.claimed;
    let e = sol.evaluated.as_ref();
    let claimed_time = c.period_ms.or(c.iteration_ms);
    let eval_time = e.and_then(|e| e.period_ms.or(e.iteration_ms));
    vec![
        sol.algorithm.clone(),
        status_name(sol.stats.status).into(),
        opt(c.objective.as_ref(), |o| objective_value(o.value, o.unit())),
        opt(e, |e| e.schedule.to_string()),
        opt(claimed_time, fmt_ms),
        opt(eval_time, fmt_ms),
        opt(c.throughput, throughput),
        opt(e, |e| throughput(e.throughput)),
        opt(c.max_memory, fmt_bytes),
        opt(e, |e| fmt_bytes(e.max_memory)),
        opt(c.fits, yes_no),
        opt(e, |e| yes_no(e.fits)),
        opt(e.and_then(|e| e.valid_schedule), yes_no),
        fmt_ms(sol.stats.wall_ms),
        match (row.gap_vs_exact, &row.exact_reference) {
            (Some(_), Some(r)) if *r == sol.algorithm => "reference".into(),
            (Some(g), Some(_)) if g.is_finite() => format!("{:.2}%", 100.0 * g),
            (Some(_), Some(_)) => "inf".into(),
            _ => "-".into(),
        },
        opt(row.period_gap_vs_exact, |g| format!("{:+.2}%", 100.0 * g)),
        opt(sol.stats.plans_examined(), |n| format!("{n}")),
    ]
}
