//! One stored run: the columns of a store's `runs` table, in one declaration (the struct, the
//! column list, their SQL types and the conversions come from the same macro call), and which
//! columns are the run's key, its result, or measurements (`docs/sweep.md`, "Store schema").

use super::plan::{RunKey, RunSpec};
use pipeplan_solvers::algorithm::{Status, Stop};
use pipeplan_solvers::harness::Record;
use rusqlite::types::{ToSql, Value};
use std::time::Duration;

/// SQL declaration of a column's Rust type.
trait SqlType {
    const DECL: &'static str;
}

impl SqlType for String {
    const DECL: &'static str = "TEXT NOT NULL";
}
impl SqlType for i64 {
    const DECL: &'static str = "INTEGER NOT NULL";
}
impl SqlType for Option<String> {
    const DECL: &'static str = "TEXT";
}
impl SqlType for Option<f64> {
    const DECL: &'static str = "REAL";
}
impl SqlType for Option<i64> {
    const DECL: &'static str = "INTEGER";
}
impl SqlType for Option<bool> {
    const DECL: &'static str = "INTEGER";
}

macro_rules! run_row {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty ),* $(,)?) => {
        /// One run as stored: a row of the `runs` table.
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        pub struct RunRow {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        /// Every column of `runs`, in table order.
        pub const COLUMNS: &[&str] = &[ $( stringify!($name) ),* ];

        /// `name TYPE` of every column, for `CREATE TABLE`.
        pub(crate) fn column_declarations() -> Vec<String> {
            vec![ $( format!("\"{}\" {}", stringify!($name), <$ty as SqlType>::DECL) ),* ]
        }

        /// The SQL declaration of column `name`, if the table has it.
        fn declaration_of(name: &str) -> Option<&'static str> {
            [ $( (stringify!($name), <$ty as SqlType>::DECL) ),* ]
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, d)| d)
        }

        impl RunRow {
            /// The row's values, in [`COLUMNS`] order.
            pub fn values(&self) -> Vec<Value> {
                vec![ $( to_value(&self.$name) ),* ]
            }

            /// Reads a row selected with every column in [`COLUMNS`] order.
            pub(crate) fn from_sql(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
                RunRow::from_sql_at(row, 0)
            }

            /// [`RunRow::from_sql`] from the selection's column `offset` on.
            pub(crate) fn from_sql_at(
                row: &rusqlite::Row<'_>,
                offset: usize,
            ) -> rusqlite::Result<RunRow> {
                let mut i = offset;
                let mut next = || { i += 1; i - 1 };
                let r = RunRow { $( $name: row.get(next())?, )* };
                match r.unknown_word() {
                    None => Ok(r),
                    Some(u) => Err(rusqlite::Error::FromSqlConversionFailure(
                        offset + COLUMNS.iter().position(|c| *c == u.column).unwrap_or(0),
                        rusqlite::types::Type::Text,
                        Box::new(u),
                    )),
                }
            }
        }
    };
}

/// A row that cannot be read, in words: the column and what it holds against what pipeplan
/// writes there (a store edited by another program); other errors as SQLite words them.
pub(crate) fn read_error(e: &rusqlite::Error) -> String {
    let held = |ty: &rusqlite::types::Type| match ty {
        rusqlite::types::Type::Null => "nothing (NULL)",
        rusqlite::types::Type::Integer => "an integer",
        rusqlite::types::Type::Real => "a real number",
        rusqlite::types::Type::Text => "text",
        rusqlite::types::Type::Blob => "a blob",
    };
    let column = |name: &str, what: &str| {
        let wants = declaration_of(name).unwrap_or("another type");
        format!(
            "a run's column `{name}` holds {what} where pipeplan writes {wants}: the store was \
             edited by another program (docs/sweep.md, \"Store schema\")"
        )
    };
    match e {
        rusqlite::Error::InvalidColumnType(_, name, ty) => column(name, held(ty)),
        rusqlite::Error::FromSqlConversionFailure(_, _, u) => match u.downcast_ref::<UnknownWord>()
        {
            Some(u) => format!(
                "run {}: column `{}` holds {:?} where pipeplan writes {}: the store was edited by \
                 another program (docs/sweep.md, \"Store schema\")",
                u.run,
                u.column,
                u.value,
                u.words.join(", ")
            ),
            None => e.to_string(),
        },
        other => other.to_string(),
    }
}

/// What `result` holds: the run made a plan, the algorithm does not take the instance, or the
/// run failed.
pub const RESULTS: [&str; 3] = ["solved", "unsupported", "failed"];

/// A word pipeplan never writes in a column that holds one of a few (`result`, `status`,
/// `stop`): a report counting by that column would leave the run out unsaid.
#[derive(Debug)]
struct UnknownWord {
    run: String,
    column: &'static str,
    value: String,
    words: Vec<&'static str>,
}

impl std::fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column `{}` holds {:?}", self.column, self.value)
    }
}

impl std::error::Error for UnknownWord {}

fn to_value<T: ToSql>(v: &T) -> Value {
    match v.to_sql() {
        Ok(rusqlite::types::ToSqlOutput::Owned(v)) => v,
        Ok(rusqlite::types::ToSqlOutput::Borrowed(r)) => r.into(),
        // Every column type converts; nothing else reaches here.
        _ => Value::Null,
    }
}

run_row! {
    /// Instance name (the suite member's, else the file's `name`).
    instance: String,
    /// `sha256:` hash of the instance's canonical JSON (`pipeplan_bench::suite::instance_hash`).
    instance_hash: String,
    /// Algorithm name.
    algorithm: String,
    /// Canonical settings: `KEY=VALUE` sorted by key, comma-separated; empty for none.
    settings: String,
    /// Seed of the run.
    seed: i64,
    /// Repeat index (0-based) of the same (instance, algorithm, settings, seed).
    repeat: i64,
    /// pipeplan version that ran it.
    version: String,
    /// Time limit of the solve (s); none for no limit.
    time_limit_s: Option<f64>,
    /// solved, unsupported or failed.
    result: String,
    /// Why there is no solution (unsupported, failed), or how the run crashed.
    message: Option<String>,
    /// Optimality status of the claim (optimal, feasible, heuristic).
    status: Option<String>,
    /// What ended the run early (time-limit, node-cap, ...), if anything.
    stop: Option<String>,
    /// Claimed objective: name.
    claimed_objective_name: Option<String>,
    /// Claimed objective: value.
    claimed_objective: Option<f64>,
    /// Claimed objective: unit.
    claimed_objective_unit: Option<String>,
    /// Claimed async period (ms).
    claimed_period_ms: Option<f64>,
    /// Claimed synchronous iteration time (ms).
    claimed_iteration_ms: Option<f64>,
    /// Claimed throughput (samples/s).
    claimed_throughput: Option<f64>,
    /// Claimed largest peak memory (bytes).
    claimed_max_memory: Option<f64>,
    /// Claimed fit.
    claimed_fits: Option<bool>,
    /// Claimed peak memory of every GPU (bytes, space-separated).
    claimed_memory_vector: Option<String>,
    /// Schedule family evaluated.
    evaluated_schedule: Option<String>,
    /// Evaluated async period (ms).
    evaluated_period_ms: Option<f64>,
    /// Evaluated iteration time (ms).
    evaluated_iteration_ms: Option<f64>,
    /// Evaluated throughput (samples/s).
    evaluated_throughput: Option<f64>,
    /// Evaluated largest peak memory (bytes).
    evaluated_max_memory: Option<f64>,
    /// GPU of that peak.
    evaluated_max_memory_gpu: Option<i64>,
    /// GPU memory (bytes).
    memory_limit: Option<f64>,
    /// Evaluated fit (memory and schedule).
    evaluated_fits: Option<bool>,
    /// Simulator's verdict on the periodic pattern.
    evaluated_valid_schedule: Option<bool>,
    /// Evaluated idle fraction.
    evaluated_bubble: Option<f64>,
    /// Evaluated peak memory of every GPU (bytes, space-separated).
    evaluated_memory_vector: Option<String>,
    /// Stages of the plan.
    stages: Option<i64>,
    /// GPUs used.
    gpus_used: Option<i64>,
    /// Proven bound on the claimed objective.
    bound: Option<f64>,
    /// Relative gap between the objective and the bound.
    gap: Option<f64>,
    /// Objective evaluations of a search that counts them.
    evaluations: Option<f64>,
    /// Plans an enumeration compared.
    plans_visited: Option<f64>,
    /// Solve wall time measured by the harness (ms; solved runs).
    solve_ms: Option<f64>,
    /// Wall time of the run's process, start to exit (ms).
    wall_ms: Option<f64>,
    /// User + system CPU time of the run's process (ms, from `wait4`).
    cpu_ms: Option<f64>,
    /// Peak resident set of the run's process (bytes): its `VmHWM` at the end of the run.
    peak_rss_bytes: Option<i64>,
    /// When the run finished (Unix time, s).
    finished_at: i64,
}

/// The run's key columns: a run is stored at most once per key.
pub const KEY_COLUMNS: [&str; 5] = ["instance_hash", "algorithm", "settings", "seed", "repeat"];

/// Columns that measure the run rather than its result (timings, memory, when, and which
/// pipeplan ran it): they may differ between two runs of the same key; every other column may not.
pub const MEASURED_COLUMNS: [&str; 6] = [
    "solve_ms",
    "wall_ms",
    "cpu_ms",
    "peak_rss_bytes",
    "finished_at",
    "version",
];

/// The result columns: every column that is neither measured nor part of the key.
pub fn result_columns() -> Vec<&'static str> {
    COLUMNS
        .iter()
        .copied()
        .filter(|c| !MEASURED_COLUMNS.contains(c) && !KEY_COLUMNS.contains(c))
        .collect()
}

/// What the sweep measured of a run's process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    /// Wall time of the process (ms).
    pub wall_ms: Option<f64>,
    /// User + system CPU time (ms).
    pub cpu_ms: Option<f64>,
    /// Peak resident set (bytes).
    pub peak_rss_bytes: Option<u64>,
}

/// A finite value, or none: non-finite numbers do not survive JSON (the child's report), so
/// every path stores them as NULL alike.
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn int<T: TryInto<i64>>(v: Option<T>) -> Option<i64> {
    v.and_then(|x| x.try_into().ok())
}

impl RunRow {
    /// The row of `run`, from the harness's record of it (`record.instance` is replaced by the
    /// run's instance name) and what was measured of its process.
    pub fn new(
        run: &RunSpec,
        time_limit: Option<Duration>,
        record: &Record,
        stop: Option<String>,
        measured: Measured,
    ) -> RunRow {
        let key = run.key();
        let r = record;
        RunRow {
            instance: run.instance.clone(),
            instance_hash: key.instance_hash,
            algorithm: key.algorithm,
            settings: key.settings,
            seed: key.seed,
            repeat: key.repeat,
            version: env!("CARGO_PKG_VERSION").to_string(),
            time_limit_s: time_limit.map(|d| d.as_secs_f64()),
            result: r.result.clone(),
            message: r.reason.clone(),
            status: r.status.clone(),
            stop,
            claimed_objective_name: r.claimed_objective_name.clone(),
            claimed_objective: finite(r.claimed_objective),
            claimed_objective_unit: r.claimed_objective_unit.clone(),
            claimed_period_ms: finite(r.claimed_period_ms),
            claimed_iteration_ms: finite(r.claimed_iteration_ms),
            claimed_throughput: finite(r.claimed_throughput),
            claimed_max_memory: finite(r.claimed_max_memory),
            claimed_fits: r.claimed_fits,
            claimed_memory_vector: r.claimed_memory_vector.clone(),
            evaluated_schedule: r.evaluated_schedule.clone(),
            evaluated_period_ms: finite(r.evaluated_period_ms),
            evaluated_iteration_ms: finite(r.evaluated_iteration_ms),
            evaluated_throughput: finite(r.evaluated_throughput),
            evaluated_max_memory: finite(r.evaluated_max_memory),
            evaluated_max_memory_gpu: int(r.evaluated_max_memory_gpu),
            memory_limit: finite(r.memory_limit),
            evaluated_fits: r.evaluated_fits,
            evaluated_valid_schedule: r.evaluated_valid_schedule,
            evaluated_bubble: finite(r.evaluated_bubble),
            evaluated_memory_vector: r.evaluated_memory_vector.clone(),
            stages: int(r.stages),
            gpus_used: int(r.gpus_used),
            bound: finite(r.bound),
            gap: finite(r.gap),
            evaluations: finite(r.evaluations),
            plans_visited: finite(r.plans_visited),
            solve_ms: finite(r.solve_ms),
            wall_ms: measured.wall_ms,
            cpu_ms: measured.cpu_ms,
            peak_rss_bytes: int(measured.peak_rss_bytes),
            finished_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }
    }

    /// The run's key.
    pub fn key(&self) -> RunKey {
        RunKey {
            instance_hash: self.instance_hash.clone(),
            algorithm: self.algorithm.clone(),
            settings: self.settings.clone(),
            seed: self.seed,
            repeat: self.repeat,
        }
    }

    /// The settings as `KEY=VALUE` items.
    pub fn settings_list(&self) -> Vec<String> {
        if self.settings.is_empty() {
            Vec::new()
        } else {
            self.settings.split(',').map(str::to_string).collect()
        }
    }

    /// The result columns whose values differ from `other`'s (by name), empty when the two
    /// rows are the same result.
    pub fn result_differences(&self, other: &RunRow) -> Vec<&'static str> {
        let (a, b) = (self.values(), other.values());
        COLUMNS
            .iter()
            .zip(a.iter().zip(&b))
            .filter(|(c, (x, y))| !MEASURED_COLUMNS.contains(c) && x != y)
            .map(|(c, _)| *c)
            .collect()
    }

    /// One line naming the run: instance, algorithm, settings, seed and repeat.
    pub fn describe(&self) -> String {
        self.key().describe(&self.instance)
    }

    /// The first of `result`, `status` and `stop` that holds a word pipeplan never writes there.
    fn unknown_word(&self) -> Option<UnknownWord> {
        self.unknown("result", Some(&self.result), RESULTS.iter().copied())
            .or_else(|| {
                let words = Status::ALL.iter().map(|s| s.name());
                self.unknown("status", self.status.as_deref(), words)
            })
            .or_else(|| {
                let words = Stop::ALL.iter().map(|s| s.name());
                self.unknown("stop", self.stop.as_deref(), words)
            })
    }

    /// `value` of `column` when it is none of `words` (nothing is allocated for a known word:
    /// every row read passes here).
    fn unknown(
        &self,
        column: &'static str,
        value: Option<&str>,
        words: impl Iterator<Item = &'static str> + Clone,
    ) -> Option<UnknownWord> {
        let value = value?;
        if words.clone().any(|w| w == value) {
            return None;
        }
        Some(UnknownWord {
            run: self.describe(),
            column,
            value: value.to_string(),
            words: words.collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_of_another_type_is_named_with_what_pipeplan_writes() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let e = c
            .query_row("SELECT 'x' AS evaluated_iteration_ms", [], |r| {
                r.get::<_, Option<f64>>(0)
            })
            .unwrap_err();
        let m = read_error(&e);
        assert!(
            m.starts_with(
                "a run's column `evaluated_iteration_ms` holds text where pipeplan writes REAL"
            ),
            "{m}"
        );
        let e = c
            .query_row("SELECT 1.5 AS seed", [], |r| r.get::<_, i64>(0))
            .unwrap_err();
        assert!(read_error(&e)
            .contains("`seed` holds a real number where pipeplan writes INTEGER NOT NULL"));
    }

    /// Record fields the store does not keep: gaps are relations between rows, which the report
    /// computes; `reason` is stored as `message`.
    const NOT_STORED: [&str; 3] = ["gap_vs_exact", "exact_reference", "period_gap_vs_exact"];

    #[test]
    fn every_record_field_has_a_column() {
        let fields = serde_json::to_value(Record::default()).unwrap();
        for (name, _) in fields.as_object().unwrap() {
            let stored = match name.as_str() {
                "reason" => "message",
                n => n,
            };
            assert!(
                COLUMNS.contains(&stored) || NOT_STORED.contains(&stored),
                "Record field {name} has no column: add one and raise the schema version"
            );
        }
    }

    #[test]
    fn schema_1_columns() {
        // Changing the columns changes the schema: raise `store::SCHEMA_VERSION` with it.
        assert_eq!(COLUMNS.len(), 43);
        assert_eq!(super::super::store::SCHEMA_VERSION, 1);
        for c in KEY_COLUMNS.iter().chain(&MEASURED_COLUMNS) {
            assert!(COLUMNS.contains(c), "{c}");
        }
        assert!(!result_columns().contains(&"seed"));
        assert!(result_columns().contains(&"claimed_objective"));
    }
}
