//! Merging stores (shards of one sweep, or sweeps of one study) into one file: the union of
//! their runs, each key once. Two stores holding the same key with different results (any
//! column but timings, memory and version) are a conflict, and nothing is written. The output
//! is built in a temporary file beside it and renamed into place (`docs/sweep.md`, "Merge").

use super::row::{result_columns, RunRow, COLUMNS, KEY_COLUMNS};
use super::store::{q, Store};
use super::SweepError;
use std::path::{Path, PathBuf};

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MergeSummary {
    /// Each input read (an existing output first) and its number of runs.
    pub inputs: Vec<(String, usize)>,
    /// Runs in the output.
    pub runs: usize,
}

/// At most this many conflicts are named in the error.
const NAMED_CONFLICTS: usize = 5;

/// Merges `inputs` into `output`. An existing `output` is one of the inputs (its runs are kept),
/// so merging again, or merging a store into itself, changes nothing.
pub fn merge(inputs: &[PathBuf], output: &Path) -> Result<MergeSummary, SweepError> {
    if inputs.is_empty() {
        return Err(SweepError::Input("merge: give at least one store".into()));
    }
    let mut sources: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let candidates = output
        .exists()
        .then(|| output.to_path_buf())
        .into_iter()
        .chain(inputs.iter().cloned());
    for p in candidates {
        // Every input is checked (format, schema, integrity, each run's cells) before anything
        // is written.
        Store::open_read(&p)?.check_rows()?;
        let canonical = p.canonicalize().unwrap_or_else(|_| p.clone());
        if !seen.contains(&canonical) {
            seen.push(canonical);
            sources.push(p);
        }
    }
    let dir = output
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged.sqlite".into());
    let temp = dir.join(format!(".{name}.merge-{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let result = build(&sources, &temp);
    match result {
        Ok(summary) => {
            std::fs::rename(&temp, output).map_err(|e| SweepError::Store {
                path: output.display().to_string(),
                message: format!("cannot move the merged store into place: {e}"),
            })?;
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            let _ = std::fs::remove_file(temp.with_extension("tmp-journal"));
            Err(e)
        }
    }
}

/// One conflict: the run, the input that holds the second version, the columns that differ.
struct Conflict {
    row: RunRow,
    input: usize,
    columns: Vec<&'static str>,
}

/// The merge's SQL: the rows of the attached input whose key the output holds with other
/// results (both versions), and the insertion of the input's new keys.
struct Statements {
    select_both: String,
    insert: String,
}

impl Statements {
    fn new() -> Statements {
        let cols = COLUMNS.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
        let join = KEY_COLUMNS
            .iter()
            .map(|c| format!("s.{0} = m.{0}", q(c)))
            .collect::<Vec<_>>()
            .join(" AND ");
        let differs = result_columns()
            .iter()
            .map(|c| format!("s.{0} IS NOT m.{0}", q(c)))
            .collect::<Vec<_>>()
            .join(" OR ");
        let prefixed = |p: &str| {
            COLUMNS
                .iter()
                .map(|c| format!("{p}.{}", q(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let select_both = format!(
            "SELECT {}, {} FROM src.runs s JOIN main.runs m ON {join} WHERE {differs}",
            prefixed("s"),
            prefixed("m"),
        );
        let insert = format!(
            "INSERT OR IGNORE INTO main.runs ({cols}) SELECT {cols} FROM src.runs ORDER BY {}",
            KEY_COLUMNS.map(q).join(", ")
        );
        Statements {
            select_both,
            insert,
        }
    }
}

fn build(sources: &[PathBuf], temp: &Path) -> Result<MergeSummary, SweepError> {
    let out = Store::create_plain(temp)?;
    let sql = Statements::new();
    let mut counts = Vec::new();
    let mut conflicts: Vec<Conflict> = Vec::new();
    let mut conflict_count = 0usize;
    for (i, src) in sources.iter().enumerate() {
        let n = add(&out, &sql, src, i, &mut conflicts, &mut conflict_count)?;
        counts.push((src.display().to_string(), n));
    }
    // On a conflict the temporary file is removed by the caller: nothing is written.
    if conflict_count > 0 {
        return Err(conflict_error(sources, &conflicts, conflict_count));
    }
    let runs = out.count()?;
    drop(out);
    // The file's content is on disk before it is renamed into place.
    std::fs::File::open(temp)
        .and_then(|f| f.sync_all())
        .map_err(|e| SweepError::Store {
            path: temp.display().to_string(),
            message: e.to_string(),
        })?;
    Ok(MergeSummary {
        inputs: counts,
        runs,
    })
}

/// Adds input `i` (`src`) to `out`: counts its conflicts with what `out` holds, naming the
/// first few, and inserts its new keys. Returns its number of runs.
fn add(
    out: &Store,
    sql: &Statements,
    src: &Path,
    i: usize,
    conflicts: &mut Vec<Conflict>,
    conflict_count: &mut usize,
) -> Result<usize, SweepError> {
    let conn = out.conn();
    let sql_err = |e: rusqlite::Error| out.err(e);
    conn.execute(
        "ATTACH DATABASE ?1 AS src",
        [src.to_string_lossy().as_ref()],
    )
    .map_err(|e| SweepError::Store {
        path: src.display().to_string(),
        message: e.to_string(),
    })?;
    let n: i64 = conn
        .query_row("SELECT count(*) FROM src.runs", [], |r| r.get(0))
        .map_err(sql_err)?;
    // One transaction per input: a database cannot be detached inside a transaction.
    conn.execute_batch("BEGIN").map_err(sql_err)?;
    {
        let mut stmt = conn.prepare(&sql.select_both).map_err(sql_err)?;
        let mut rows = stmt.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            *conflict_count += 1;
            if conflicts.len() < NAMED_CONFLICTS {
                let (s, m) = both(r).map_err(sql_err)?;
                let columns = s.result_differences(&m);
                conflicts.push(Conflict {
                    row: s,
                    input: i,
                    columns,
                });
            }
        }
    }
    conn.execute(&sql.insert, []).map_err(sql_err)?;
    conn.execute_batch("COMMIT").map_err(sql_err)?;
    conn.execute("DETACH DATABASE src", []).map_err(sql_err)?;
    Ok(n as usize)
}

/// The error naming the first conflicts (where each run was stored first, and the columns
/// that differ) and counting the rest.
fn conflict_error(sources: &[PathBuf], conflicts: &[Conflict], count: usize) -> SweepError {
    let named: Vec<String> = conflicts
        .iter()
        .map(|c| {
            let first = first_holder(sources, c)
                .map(|j| sources[j].display().to_string())
                .unwrap_or_else(|| "an earlier input".into());
            format!(
                "{} differs between {first} and {} in {}",
                c.row.describe(),
                sources[c.input].display(),
                c.columns.join(", ")
            )
        })
        .collect();
    let more = if count > named.len() {
        format!(" (and {} more)", count - named.len())
    } else {
        String::new()
    };
    SweepError::Conflict(format!(
        "{count} run(s) stored with different results{more}: {}; nothing written",
        named.join("; ")
    ))
}

/// The source row and the merged row of a joined conflict.
fn both(r: &rusqlite::Row<'_>) -> rusqlite::Result<(RunRow, RunRow)> {
    Ok((
        RunRow::from_sql_at(r, 0)?,
        RunRow::from_sql_at(r, COLUMNS.len())?,
    ))
}

/// The first input before the conflicting one that holds the run with other results.
fn first_holder(sources: &[PathBuf], c: &Conflict) -> Option<usize> {
    let key = c.row.key();
    (0..c.input).find(|&j| {
        Store::open_read(&sources[j])
            .and_then(|s| s.rows())
            .is_ok_and(|rows| {
                rows.iter()
                    .any(|r| r.key() == key && !r.result_differences(&c.row).is_empty())
            })
    })
}
