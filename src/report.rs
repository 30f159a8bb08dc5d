//! How results are printed: a human table, JSON (the library's own types) or CSV (one flat row
//! per solve, for pandas). Every column says whether its figure is the algorithm's `claimed`
//! value or the neutral evaluator's `evaluated` one.

use crate::table::Table;
use pipeplan_formulations::evaluate::Evaluation;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::units::{fmt_bytes, fmt_ms, fmt_percent};
use pipeplan_formulations::{Instance, Plan};
use pipeplan_solvers::algorithm::Solution;
pub use pipeplan_solvers::harness::Record;
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

/// `GPUs`, after the GPU model when the instance names it (`GH-96 GPUs`).
pub fn gpus_word(inst: &Instance) -> String {
    match &inst.cluster.gpu {
        Some(g) => format!("{g} GPUs"),
        None => "GPUs".to_string(),
    }
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
        "{}: {} layers, {} {}{} x {}, default schedule {}",
        inst.name,
        inst.num_layers(),
        c.gpus,
        gpus_word(inst),
        nodes,
        fmt_bytes(c.memory),
        inst.training.schedule
    )
}

/// The stages of a plan with the evaluator's per-stage figures (when given).
pub fn plan_table(inst: &Instance, plan: &Plan, eval: Option<&Evaluation>) -> String {
    // A plan in its own layer order names the layers of that order.
    let ordered = plan.order.is_some();
    let resolved = pipeplan_formulations::layer_order::resolve(inst, plan);
    let (inst, plan) = match &resolved {
        Ok((i, p)) => (i.as_ref(), p.as_ref()),
        Err(_) => (inst, plan),
    };
    let mut t = Table::new(
        &[
            "stage",
            "layers",
            "names",
            "GPUs",
            "dp",
            "tp",
            "zero",
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
            // A Ulysses group splits the sequence, not the weights: say so next to its size.
            if s.ulysses {
                format!("{} ulysses", s.tp)
            } else {
                s.tp.to_string()
            },
            // The ZeRO stage; 3 is sdp.
            match s.zero_stage() {
                0 => String::new(),
                3 if s.shards_with_whole_gradients() => "3 whole-grad".into(),
                z => z.to_string(),
            },
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
    let mut out = t.render();
    if ordered {
        out.push_str(
            "layers are positions in the plan's layer order (plan.order), a topological order of \
             the instance's layer graph\n",
        );
    }
    out
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
        "  of which gradient sync".into(),
        "-".into(),
        opt(e.and_then(|e| e.grad_sync_ms), fmt_ms),
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
        opt(e, |e| fmt_percent(e.bubble, 1)),
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
        st.status.name(),
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
            line.push_str(&format!(", gap {}", fmt_percent(g, 2)));
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
        sol.stats.status.name().into(),
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
            (Some(g), Some(_)) if g.is_finite() => fmt_percent(g, 2),
            (Some(_), Some(_)) => "inf".into(),
            _ => "-".into(),
        },
        opt(row.period_gap_vs_exact, |g| format!("{:+.2}%", 100.0 * g)),
        opt(sol.stats.plans_examined(), |n| format!("{n}")),
    ]
}
