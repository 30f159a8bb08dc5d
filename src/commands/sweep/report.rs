//! `pipeplan sweep report`: the summary table, the performance profiles (text, CSV, SVG) and an
//! HTML page, from `pipeplan_bench::sweep::report` (definitions: `docs/sweep.md`, "Report").

use super::args::ReportArgs;
use crate::commands::{write_or_print, Failure, Format};
use crate::table::Table;
use pipeplan_bench::suite::{BestKnown, Suite};
use pipeplan_bench::sweep::report::profile::Profile;
use pipeplan_bench::sweep::report::{self, Report, TIME_SHIFT_MS};
use pipeplan_bench::sweep::store::Store;
use pipeplan_formulations::units::{fmt_ms, fmt_percent};
use pipeplan_solvers::registry;
use std::path::PathBuf;

/// What the report's figures mean, printed under the tables.
pub const DEFINITIONS: &str = "\
runs: stored runs (instances x seeds x repeats); solved / fits: share of runs with a plan / with a
plan the evaluator says fits (evaluated). Repeats and seeds of one instance are aggregated by
medians. gap: (claimed objective - reference) / reference, the reference being the best-known value
of the same objective kind (else the store's best); mean and worst over instances. time: shifted
geometric mean, shift 10 ms, of each instance's median solve time over its solved runs.
Performance profiles (Dolan-More): rho(tau) = share of the instances on which the configuration is
within a factor tau of the best configuration (solve time; claimed objective, per kind, among the
configurations claiming it; evaluated throughput of plans that fit, larger is better).";

fn pct(x: f64) -> String {
    fmt_percent(x, 1)
}

fn gap(x: Option<f64>) -> String {
    match x {
        Some(g) if g.is_finite() => fmt_percent(g, 2),
        Some(_) => "inf".into(),
        None => "-".into(),
    }
}

/// Runs `sweep report`.
pub fn run(a: ReportArgs) -> Result<(), Failure> {
    let store = Store::open_read(&a.store)?;
    let rows = store.rows()?;
    let suite = a
        .suite
        .as_deref()
        .map(Suite::open)
        .transpose()
        .map_err(|e| Failure::input(e.to_string()))?;
    let bk_path: Option<PathBuf> = match (&suite, &a.best_known) {
        (Some(s), _) => Some(s.dir.join(pipeplan_bench::suite::BEST_KNOWN)),
        (None, Some(p)) => Some(p.clone()),
        (None, None) => None,
    };
    let best_known = bk_path
        .as_deref()
        .map(BestKnown::read_or_empty)
        .transpose()
        .map_err(|e| Failure::input(e.to_string()))?;
    let rep = report::build(&rows, best_known.as_ref());
    if a.update_best_known {
        let (Some(path), Some(mut bk)) = (bk_path.clone(), best_known.clone()) else {
            return Err(Failure::input(
                "--update-best-known: give --suite DIR or --best-known FILE",
            ));
        };
        let exact = |name: &str| registry::by_name(name).is_some_and(|a| a.exact());
        let mut cands = report::candidates(&rows, exact);
        let mut skipped = 0;
        if let Some(s) = &suite {
            cands.retain(|c| {
                let member = s
                    .members
                    .iter()
                    .any(|m| m.name == c.instance && m.hash == c.hash);
                skipped += usize::from(!member);
                member
            });
        }
        let folded = bk.fold(&cands);
        if folded.changed() {
            bk.write(&path).map_err(|e| Failure::input(e.to_string()))?;
        }
        eprintln!(
            "{}: {} added, {} improved, {} proven optimal, {} bounds raised{}",
            path.display(),
            folded.added.len(),
            folded.improved.len(),
            folded.proven.len(),
            folded.bounds_raised.len(),
            if skipped > 0 {
                format!("; {skipped} values of runs on instances not in the suite skipped")
            } else {
                String::new()
            }
        );
        if !folded.conflicts.is_empty() {
            eprintln!(
                "{} conflicts (not applied), by kind:",
                folded.conflicts.len()
            );
            for (kind, n) in &folded.conflict_kinds {
                eprintln!("  {n:>5}  {kind}");
            }
        }
        for c in &folded.conflicts {
            eprintln!("conflict (not applied): {c}");
        }
    }
    if let Some(p) = &a.profile_csv {
        write_or_print(Some(p), &profile_csv(&rep))?;
    }
    if let Some(p) = &a.svg {
        let svg = profiles_svg(&rep.profiles).map_err(Failure::input)?;
        write_or_print(Some(p), &svg)?;
    }
    if let Some(p) = &a.html {
        write_or_print(Some(p), &html(&rep, &a.store.display().to_string())?)?;
        eprintln!("wrote {}", p.display());
    }
    let text = match a.out.format() {
        Format::Json => crate::report::json(&rep),
        Format::Csv => crate::report::csv(
            &rep.configurations
                .iter()
                .map(CsvRow::of)
                .collect::<Vec<_>>(),
        ),
        Format::Table => text(&rep),
    };
    write_or_print(None, &text)
}

/// A summary row for CSV (lists joined).
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    configuration: &'a str,
    algorithm: &'a str,
    settings: &'a str,
    runs: usize,
    instances: usize,
    unsupported: usize,
    solved_share: f64,
    fits_share: f64,
    objectives: String,
    gaps: usize,
    gap_mean: Option<f64>,
    gap_worst: Option<f64>,
    gap_worst_instance: Option<&'a str>,
    timed: usize,
    time_sgm_ms: Option<f64>,
}

impl CsvRow<'_> {
    fn of(c: &report::ConfigSummary) -> CsvRow<'_> {
        CsvRow {
            configuration: &c.configuration,
            algorithm: &c.algorithm,
            settings: &c.settings,
            runs: c.runs,
            instances: c.instances,
            unsupported: c.unsupported,
            solved_share: c.solved_share,
            fits_share: c.fits_share,
            objectives: c.objectives.join("; "),
            gaps: c.gaps,
            gap_mean: c.gap_mean,
            gap_worst: c.gap_worst,
            gap_worst_instance: c.gap_worst_instance.as_deref(),
            timed: c.timed,
            time_sgm_ms: c.time_sgm_ms,
        }
    }
}

/// The profiles' step data: one row per (metric, configuration, tau).
fn profile_csv(rep: &Report) -> String {
    #[derive(serde::Serialize)]
    struct Step<'a> {
        metric: &'a str,
        problems: usize,
        configuration: &'a str,
        tau: f64,
        share: f64,
    }
    let mut steps = Vec::new();
    for p in &rep.profiles {
        for c in &p.curves {
            for &(tau, share) in &c.steps {
                steps.push(Step {
                    metric: &p.metric,
                    problems: p.problems,
                    configuration: &c.configuration,
                    tau,
                    share,
                });
            }
        }
    }
    crate::report::csv(&steps)
}

fn summary_table(rep: &Report) -> Table {
    let mut t = Table::new(
        &[
            "configuration",
            "runs",
            "solved",
            "fits",
            "gap mean",
            "gap worst",
            "worst on",
            "time (sgm)",
            "fastest",
        ],
        &[1, 2, 3, 4, 5, 7, 8],
    );
    let fastest = rep.profiles.first();
    for (i, c) in rep.configurations.iter().enumerate() {
        t.row(vec![
            c.configuration.clone(),
            c.runs.to_string(),
            pct(c.solved_share),
            pct(c.fits_share),
            gap(c.gap_mean),
            gap(c.gap_worst),
            // An instance is named only where some gap is positive.
            c.gap_worst_instance
                .clone()
                .filter(|_| c.gap_worst.is_some_and(|g| g > 0.0))
                .unwrap_or_else(|| "-".into()),
            c.time_sgm_ms.map_or("-".into(), fmt_ms),
            fastest
                .and_then(|p| p.curves.get(i))
                .map_or("-".into(), |cv| pct(cv.at[0].1)),
        ]);
    }
    t
}

fn profile_table(p: &Profile) -> Table {
    let mut header: Vec<String> = vec!["configuration".into()];
    if let Some(c) = p.curves.first() {
        header.extend(c.at.iter().map(|(tau, _)| format!("rho({tau})")));
    }
    header.push("solved".into());
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&h, &(1..h.len()).collect::<Vec<_>>());
    for c in &p.curves {
        let mut row = vec![c.configuration.clone()];
        row.extend(c.at.iter().map(|(_, s)| pct(*s)));
        row.push(pct(c.solved));
        t.row(row);
    }
    t
}

fn text(rep: &Report) -> String {
    let mut out = format!(
        "{} runs on {} instances; gaps against {}\n",
        rep.runs,
        rep.instances.len(),
        rep.reference
    );
    out.push_str(&summary_table(rep).render());
    for p in &rep.profiles {
        out.push_str(&format!(
            "\nperformance profile: {} ({} instances)\n",
            p.metric, p.problems
        ));
        out.push_str(&profile_table(p).render());
    }
    out.push('\n');
    out.push_str(DEFINITIONS);
    out.push('\n');
    out
}

fn table_html(t: &Table) -> String {
    let mut s = String::from("<table class=\"sortable\"><thead><tr>");
    for h in t.header() {
        s.push_str(&format!("<th>{}</th>", crate::html::esc(h)));
    }
    s.push_str("</tr></thead><tbody>\n");
    for row in t.rows() {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if t.right_aligned(i) {
                " class=\"num\""
            } else {
                ""
            };
            s.push_str(&format!("<td{class}>{}</td>", crate::html::esc(cell)));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    s
}

fn html(rep: &Report, store: &str) -> Result<String, Failure> {
    use crate::html::{esc, SCRIPT, STYLE};
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>pipeplan sweep report</title><style>",
    );
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>pipeplan sweep report</h1>\n");
    out.push_str(&format!(
        "<p>{}: {} runs on {} instances; gaps against {}; time shift {} ms.</p>\n",
        esc(store),
        rep.runs,
        rep.instances.len(),
        esc(&rep.reference),
        TIME_SHIFT_MS
    ));
    out.push_str(&table_html(&summary_table(rep)));
    out.push_str("<h2>Performance profiles</h2>\n");
    let svg = profiles_svg(&rep.profiles).map_err(Failure::input)?;
    out.push_str(&format!("<div class=\"chart profiles\">{svg}</div>\n"));
    for p in &rep.profiles {
        out.push_str(&format!(
            "<h3>{} ({} instances)</h3>\n",
            esc(&p.metric),
            p.problems
        ));
        out.push_str(&table_html(&profile_table(p)));
    }
    out.push_str(&format!(
        "<h2>Definitions</h2><p class=\"legend\">{}</p>\n<script>{SCRIPT}</script></body></html>\n",
        esc(DEFINITIONS)
    ));
    Ok(out)
}

/// The report's performance profiles drawn by `pipeplan-charts`.
fn profiles_svg(profiles: &[Profile]) -> Result<String, String> {
    let panels: Vec<pipeplan_charts::ProfilePanel<'_>> = profiles
        .iter()
        .map(|p| pipeplan_charts::ProfilePanel {
            metric: &p.metric,
            problems: p.problems,
            curves: p
                .curves
                .iter()
                .map(|c| (c.configuration.as_str(), c.steps.as_slice()))
                .collect(),
        })
        .collect();
    pipeplan_charts::profiles_svg(&panels)
}
