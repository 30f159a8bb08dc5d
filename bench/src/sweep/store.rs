//! A sweep store: one SQLite file with a `meta` table (format name and schema version) and a
//! `runs` table (one row per run, unique per key; columns in [`super::row`]). A file that is not
//! a store, or a store of a newer schema, is refused before anything is written
//! (`docs/sweep.md`, "Store schema").

use super::plan::RunKey;
use super::row::{column_declarations, RunRow, COLUMNS, KEY_COLUMNS};
use super::SweepError;
use rusqlite::{Connection, OpenFlags};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The `format` value in `meta` that marks a pipeplan sweep store.
pub const FORMAT: &str = "pipeplan-sweep";
/// Schema version this pipeplan writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Opened for a sweep's writes, in write-ahead-log mode.
    wal: bool,
}

impl Drop for Store {
    /// A store closed normally goes back to a rollback journal (its log checkpointed and
    /// removed), so that readers leave no `-wal` / `-shm` files beside it; a killed sweep leaves
    /// its log, which the next open recovers.
    fn drop(&mut self) {
        if self.wal {
            let _ = self.conn.execute_batch("PRAGMA journal_mode = DELETE;");
        }
    }
}

fn store_err(path: &Path, what: impl std::fmt::Display) -> SweepError {
    SweepError::Store {
        path: path.display().to_string(),
        message: what.to_string(),
    }
}

/// Quotes a column name.
pub(crate) fn q(name: &str) -> String {
    format!("\"{name}\"")
}

fn create_sql() -> String {
    let cols = column_declarations().join(", ");
    let key = KEY_COLUMNS.map(q).join(", ");
    format!(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE runs (id INTEGER PRIMARY KEY, {cols}, UNIQUE ({key}));
         INSERT INTO meta VALUES ('format', '{FORMAT}'), ('schema_version', '{SCHEMA_VERSION}'),
             ('created_by', 'pipeplan {}');",
        env!("CARGO_PKG_VERSION")
    )
}

/// Checks that `path` is a store this pipeplan reads, opening it read-only (nothing is
/// written, not even a journal).
fn check(path: &Path) -> Result<(), SweepError> {
    let mut header = [0u8; 16];
    {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| store_err(path, e))?;
        f.read_exact(&mut header)
            .map_err(|_| store_err(path, "not a SQLite database (too short): not a sweep store"))?;
    }
    if &header != b"SQLite format 3\0" {
        return Err(store_err(
            path,
            "not a SQLite database (corrupt, or another kind of file): not a sweep store",
        ));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| store_err(path, e))?;
    let corrupt = |e: rusqlite::Error| store_err(path, format!("corrupt database: {e}"));
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(corrupt)?
        > 0;
    let meta = |key: &str| -> Result<Option<String>, SweepError> {
        if !has_meta {
            return Ok(None);
        }
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(store_err(path, format!("corrupt database: {e}"))),
            })
    };
    if meta("format")?.as_deref() != Some(FORMAT) {
        return Err(store_err(
            path,
            "a SQLite database without pipeplan's sweep metadata (table `meta`, format \
             pipeplan-sweep): not a sweep store; give another path",
        ));
    }
    let version = meta("schema_version")?.unwrap_or_default();
    match version.parse::<i64>() {
        Ok(v) if v == SCHEMA_VERSION => {}
        Ok(v) if v > SCHEMA_VERSION => {
            return Err(store_err(
                path,
                format!(
                    "store schema version {v} is newer than this pipeplan's ({SCHEMA_VERSION}); \
                     use a newer pipeplan"
                ),
            ))
        }
        _ => {
            return Err(store_err(
                path,
                format!(
                "unknown store schema version {version:?} (this pipeplan reads {SCHEMA_VERSION})"
            ),
            ))
        }
    }
    let verdict: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(corrupt)?;
    if verdict != "ok" {
        return Err(store_err(path, format!("corrupt database: {verdict}")));
    }
    Ok(())
}

impl Store {
    /// Opens the store at `path`, creating it when there is no file (or an empty one). Writes
    /// go through SQLite's write-ahead log: a committed row survives the process being killed.
    pub fn open_or_create(path: &Path) -> Result<Store, SweepError> {
        let fresh = match std::fs::metadata(path) {
            Ok(m) => m.len() == 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(store_err(path, e)),
        };
        if !fresh {
            check(path)?;
        }
        let conn = Connection::open(path).map_err(|e| store_err(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            wal: true,
        };
        if fresh {
            store
                .conn
                .execute_batch(&format!("BEGIN; {} COMMIT;", create_sql()))
                .map_err(|e| store_err(path, e))?;
        }
        // NORMAL: in WAL mode a commit survives a crash of the process (not of the machine,
        // whose lost rows `--resume` runs again).
        store
            .conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(|e| store_err(path, e))?;
        Ok(store)
    }

    /// Opens an existing store to read it (`report`, `diff`, `merge`'s inputs).
    pub fn open_read(path: &Path) -> Result<Store, SweepError> {
        if !path.exists() {
            return Err(store_err(path, "no such file"));
        }
        check(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| store_err(path, e))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            wal: false,
        })
    }

    /// A new, empty store at `path` (which must not exist), in rollback-journal mode: for a file
    /// written once and renamed into place (`merge`).
    pub(crate) fn create_plain(path: &Path) -> Result<Store, SweepError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| store_err(path, e))?;
        conn.execute_batch(&format!("BEGIN; {} COMMIT;", create_sql()))
            .map_err(|e| store_err(path, e))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            wal: false,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn err(&self, what: impl std::fmt::Display) -> SweepError {
        store_err(&self.path, what)
    }

    /// The keys of every stored run.
    pub fn keys(&self) -> Result<HashSet<RunKey>, SweepError> {
        let sql = format!("SELECT {} FROM runs", KEY_COLUMNS.map(q).join(", "));
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let keys = stmt
            .query_map([], |r| {
                Ok(RunKey {
                    instance_hash: r.get(0)?,
                    algorithm: r.get(1)?,
                    settings: r.get(2)?,
                    seed: r.get(3)?,
                    repeat: r.get(4)?,
                })
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<HashSet<_>, _>>()
            .map_err(|e| self.err(super::row::read_error(&e)))?;
        Ok(keys)
    }

    /// Stores one run in its own transaction.
    pub fn insert(&self, row: &RunRow) -> Result<(), SweepError> {
        let sql = format!(
            "INSERT INTO runs ({}) VALUES ({})",
            COLUMNS.iter().map(|c| q(c)).collect::<Vec<_>>().join(", "),
            (1..=COLUMNS.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let values = row.values();
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(values.iter())))
            .map_err(|e| self.err(format!("cannot store {}: {e}", row.describe())))?;
        Ok(())
    }

    /// Every stored run, ordered by key.
    pub fn rows(&self) -> Result<Vec<RunRow>, SweepError> {
        let mut rows = Vec::new();
        self.for_each_row(|r| rows.push(r))?;
        Ok(rows)
    }

    /// Reads every stored run, keeping none: what [`Store::rows`] would refuse (a cell of another
    /// type, a word pipeplan never writes) is refused here too. Returns the number of runs.
    pub fn check_rows(&self) -> Result<usize, SweepError> {
        let mut n = 0;
        self.for_each_row(|_| n += 1)?;
        Ok(n)
    }

    /// Hands every stored run to `f` as it is read, in key order; the first unreadable run is
    /// the error.
    fn for_each_row(&self, mut f: impl FnMut(RunRow)) -> Result<(), SweepError> {
        let sql = format!(
            "SELECT {} FROM runs ORDER BY {}",
            COLUMNS.iter().map(|c| q(c)).collect::<Vec<_>>().join(", "),
            KEY_COLUMNS.map(q).join(", ")
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], RunRow::from_sql)
            .map_err(|e| self.err(e))?;
        for row in rows {
            f(row.map_err(|e| self.err(super::row::read_error(&e)))?);
        }
        Ok(())
    }

    /// Number of stored runs.
    pub fn count(&self) -> Result<usize, SweepError> {
        self.conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| self.err(e))
    }
}
