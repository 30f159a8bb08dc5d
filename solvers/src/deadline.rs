//! [`Deadline`]: when a solve must stop. The harness builds it from the time limit when the solve
//! starts and hands it to the algorithm, which only asks whether it has passed and how much time
//! is left (for an inner solver such as HiGHS).

use crate::algorithm::{SolveError, Stop};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The end of a solve: a wall-clock time limit, an interruption flag, both or neither.
#[derive(Debug, Clone, Default)]
pub struct Deadline {
    limit: Option<Duration>,
    at: Option<Instant>,
    interrupt: Option<Arc<AtomicBool>>,
}

impl Deadline {
    /// No limit at all.
    pub fn none() -> Deadline {
        Deadline::default()
    }

    /// `limit` from now (`None`: no limit).
    pub fn after(limit: Option<Duration>) -> Deadline {
        Deadline {
            limit,
            at: limit.map(|d| Instant::now() + d),
            interrupt: None,
        }
    }

    /// Also stops when `flag` becomes true (e.g. a Ctrl-C handler or another thread).
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Deadline {
        self.interrupt = Some(flag);
        self
    }

    /// The time limit it was built from.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// Whether the solve must stop now.
    pub fn passed(&self) -> bool {
        self.interrupted() || self.at.is_some_and(|d| Instant::now() >= d)
    }

    fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Time left (`None`: unlimited; zero once passed).
    pub fn remaining(&self) -> Option<Duration> {
        if self.interrupted() {
            return Some(Duration::ZERO);
        }
        self.at.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Why a solve that met this deadline stopped.
    pub fn stop(&self) -> Stop {
        if self.interrupted() {
            Stop::Interrupted
        } else {
            Stop::TimeLimit
        }
    }

    /// The error of a solve that met this deadline before any feasible plan.
    pub fn error(&self) -> SolveError {
        if self.interrupted() {
            SolveError::Interrupted
        } else {
            SolveError::TimeLimit(self.limit.map_or(0.0, |d| d.as_secs_f64()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_passes_and_zero_passes_at_once() {
        let d = Deadline::none();
        assert!(!d.passed());
        assert_eq!(d.remaining(), None);
        let z = Deadline::after(Some(Duration::ZERO));
        assert!(z.passed());
        assert_eq!(z.remaining(), Some(Duration::ZERO));
        assert_eq!(z.stop(), Stop::TimeLimit);
        assert!(matches!(z.error(), SolveError::TimeLimit(s) if s == 0.0));
    }

    #[test]
    fn an_interrupt_stops_an_unlimited_deadline() {
        let flag = Arc::new(AtomicBool::new(false));
        let d = Deadline::none().with_interrupt(flag.clone());
        assert!(!d.passed());
        flag.store(true, Ordering::Relaxed);
        assert!(d.passed());
        assert_eq!(d.stop(), Stop::Interrupted);
        assert_eq!(d.error(), SolveError::Interrupted);
    }
}
