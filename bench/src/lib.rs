//! Benchmarking at scale: versioned instance suites (a manifest of hashed instances and the
//! best-known value of each), sweeps of many runs stored in SQLite, and their reports.
//!
//! See `docs/suite.md` and `docs/sweep.md`.

pub mod suite;
pub mod sweep;
