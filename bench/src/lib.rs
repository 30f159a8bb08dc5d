//! Benchmarking at scale: versioned instance suites (a manifest of hashed instances and the
//! best-known value of each), sweeps of many runs stored in SQLite, and their reports.
//!
//! See `docs/suite.md` and `docs/sweep.md`; the scaling study of every algorithm: `docs/limits.md`.

pub mod scaling;
pub mod suite;
pub mod sweep;
