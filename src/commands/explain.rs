//! `pipeplan explain`: why a plan's period or iteration and memory are what they are.

use super::{write_or_print, Failure, Format, Judged};
use crate::cli::ExplainArgs;
use crate::report;
use pipeplan_formulations::evaluate::explain::explain;

/// Runs `explain`.
pub fn run(a: ExplainArgs) -> Result<(), Failure> {
    let j = Judged::read(&a.plan, &a.instance, &a.from, &a.calibration)?;
    let inst = &j.inst;
    let x = explain(inst, &j.plan, &j.ev);
    let text = match a.out.format() {
        Format::Json => report::json(&x),
        Format::Csv => {
            #[derive(serde::Serialize)]
            struct Row<'a> {
                stage: usize,
                binding: &'a str,
                load_ms: f64,
                bottleneck_ms: f64,
                compute_ms: f64,
                recompute_and_swap_ms: f64,
                communication_ms: f64,
                grad_sync_ms: f64,
                gpu: u32,
                memory: f64,
                memory_limit: f64,
            }
            let rows: Vec<Row> = x
                .stages
                .iter()
                .map(|s| Row {
                    stage: s.stage,
                    binding: s.binding,
                    load_ms: s.load_ms,
                    bottleneck_ms: s.bottleneck_ms,
                    compute_ms: s.compute_ms,
                    recompute_and_swap_ms: s.recompute_and_swap_ms,
                    communication_ms: s.communication_ms,
                    grad_sync_ms: s.grad_sync_ms,
                    gpu: s.memory.gpu,
                    memory: s.memory.total(),
                    memory_limit: s.memory_limit,
                })
                .collect();
            report::csv(&rows)
        }
        Format::Table => {
            let mut out = format!("== {}\n", report::instance_line(inst));
            for w in &x.why {
                out.push_str(&format!("{w}\n"));
            }
            for s in &x.stages {
                out.push_str(&format!("\nstage {} (binding: {})\n", s.stage, s.binding));
                for f in &s.findings {
                    out.push_str(&format!("  - {f}\n"));
                }
            }
            out
        }
    };
    write_or_print(None, &text)
}
