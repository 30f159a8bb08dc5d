//! `compare --html`: one self-contained page (inline CSS, JS and SVG; nothing fetched), per
//! instance a sortable table, the summary chart, and each plan's chart with its notes.

use crate::report::{instance_line, solution_cells, LEGEND, NARROW, NARROW_CAPTION, NARROW_HEADER};
use pipeplan_charts::{self as charts, SummaryBar};
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::Solution;
use pipeplan_solvers::harness::{Outcome, Row};

/// Escapes text for HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Sort keys of the narrow table's columns (numbers where the column is numeric).
fn sort_keys(sol: &Solution, row: &Row) -> [Option<f64>; 9] {
    let e = sol.evaluated.as_ref();
    [
        None,
        None,
        sol.claimed.objective.as_ref().map(|o| o.value),
        None,
        e.and_then(|e| e.period_ms.or(e.iteration_ms)),
        e.map(|e| e.throughput),
        e.map(|e| e.max_memory),
        None,
        row.gap_vs_exact.filter(|g| g.is_finite()),
    ]
}

/// The pages' style sheet.
pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd}\
th{cursor:pointer;background:#f3f3f3;text-align:left}th[data-order=asc]::after{content:' \\25B2'}\
th[data-order=desc]::after{content:' \\25BC'}td.num{text-align:right}\
.legend{white-space:pre-wrap;font-size:.9em;color:#444}.chart svg{max-width:100%;height:auto}\
details{margin:.4em 0}summary{cursor:pointer}";

/// Sorting of `table.sortable` by a click on a column's header.
pub(crate) const SCRIPT: &str = r#"
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.dataset.order !== 'asc';
      table.querySelectorAll('th').forEach(function (h) { delete h.dataset.order; });
      th.dataset.order = asc ? 'asc' : 'desc';
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(r) {
        var c = r.cells[col];
        if (!c) { return null; }
        var k = c.getAttribute('data-sort');
        if (k !== null) { return k === '' ? null : parseFloat(k); }
        return c.textContent;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null && y === null) { return 0; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        var d = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
        return asc ? d : -d;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"#;

/// The report page.
pub fn comparison_html(instances: &[Instance], rows: &[Row]) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<title>pipeplan comparison</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>pipeplan comparison</h1>\n");
    for (i, inst) in instances.iter().enumerate() {
        out.push_str(&format!(
            "<section id=\"instance-{i}\"><h2>{}</h2>\n<p>{}</p>\n",
            esc(&instance_line(inst)),
            esc(&NARROW_CAPTION.replace('\n', " "))
        ));
        let mine: Vec<&Row> = rows.iter().filter(|r| r.instance == inst.name).collect();
        out.push_str("<table class=\"sortable\"><thead><tr>");
        for h in NARROW_HEADER {
            out.push_str(&format!("<th>{}</th>", esc(h)));
        }
        out.push_str("</tr></thead><tbody>\n");
        let mut bars = Vec::new();
        let mut charts_html = String::new();
        for row in &mine {
            out.push_str("<tr>");
            match &row.outcome {
                Outcome::Solved { solution } => {
                    let cells = solution_cells(solution, row);
                    let keys = sort_keys(solution, row);
                    for (c, &col) in NARROW.iter().enumerate() {
                        match keys[c] {
                            Some(k) => out.push_str(&format!(
                                "<td class=\"num\" data-sort=\"{k}\">{}</td>",
                                esc(&cells[col])
                            )),
                            None if c > 1 && c != 3 && c != 7 => out.push_str(&format!(
                                "<td class=\"num\" data-sort=\"\">{}</td>",
                                esc(&cells[col])
                            )),
                            None => out.push_str(&format!("<td>{}</td>", esc(&cells[col]))),
                        }
                    }
                    if let Some(ev) = &solution.evaluated {
                        bars.push(SummaryBar {
                            name: solution.algorithm.clone(),
                            throughput: ev.throughput,
                            claimed_throughput: solution.claimed.throughput,
                            memory: ev.max_memory,
                            claimed_memory: solution.claimed.max_memory,
                        });
                        charts_html.push_str(&plan_section(inst, solution)?);
                    }
                }
                Outcome::Unsupported { reason } | Outcome::Failed { reason } => {
                    let what = if matches!(row.outcome, Outcome::Unsupported { .. }) {
                        "unsupported"
                    } else {
                        "failed"
                    };
                    out.push_str(&format!(
                        "<td>{}</td><td title=\"{}\">{what}</td>",
                        esc(&row.algorithm),
                        esc(reason)
                    ));
                    for _ in 2..NARROW.len() {
                        out.push_str("<td class=\"num\" data-sort=\"\"></td>");
                    }
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        let limit = inst.cluster.memory;
        let summary = charts::summary_svg(&format!("{}: every plan", inst.name), &bars, limit)?;
        out.push_str(&format!("<div class=\"chart summary\">{summary}</div>\n"));
        out.push_str("<h3>Plans</h3>\n");
        out.push_str(&charts_html);
        out.push_str("</section>\n");
    }
    out.push_str(&format!(
        "<h2>Legend</h2><p class=\"legend\">{}</p>\n",
        esc(LEGEND)
    ));
    out.push_str("<script>");
    out.push_str(SCRIPT);
    out.push_str("</script></body></html>\n");
    Ok(out)
}

/// One plan's chart and notes, folded.
fn plan_section(inst: &Instance, sol: &Solution) -> Result<String, String> {
    let Some(ev) = &sol.evaluated else {
        return Ok(String::new());
    };
    let mut s = format!(
        "<details class=\"plan\"><summary>{} ({})</summary>",
        esc(&sol.algorithm),
        if ev.fits { "fits" } else { "does not fit" }
    );
    let claimed = sol.claimed.peak_memory.as_deref();
    match charts::plan_chart(&sol.algorithm, inst, &sol.plan, ev, claimed, 2) {
        Ok(svg) => s.push_str(&format!("<div class=\"chart plan-chart\">{svg}</div>")),
        Err(e) => s.push_str(&format!("<p>no chart: {}</p>", esc(&e.to_string()))),
    }
    let notes: Vec<&String> = sol.notes.iter().chain(&ev.notes).collect();
    if !notes.is_empty() {
        s.push_str("<ul>");
        for n in notes {
            s.push_str(&format!("<li>{}</li>", esc(n)));
        }
        s.push_str("</ul>");
    }
    s.push_str("</details>\n");
    Ok(s)
}
