//! Waiting for a solve without the GIL, and Ctrl-C while waiting.

use crate::errors::error;
use pipeplan_solvers::harness::Interrupt;
use pyo3::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// How often a waiting call looks for Ctrl-C.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a worker thread and waits for it without the GIL, polling for signals. On
/// Ctrl-C (any exception of `check_signals`) it raises `flag`, waits for `work` to return and
/// re-raises the exception.
pub(crate) fn wait_interruptibly<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Interrupt) -> T + Send,
) -> PyResult<T> {
    let flag = Interrupt::default();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        // Waiting happens in closures that must be `Send` (`py.detach`): a `&Receiver` is not,
        // a `&Mutex<Receiver>` is. Only this thread locks it.
        let rx = Mutex::new(rx);
        let recv = |timeout: Option<Duration>| {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            match timeout {
                Some(t) => rx.recv_timeout(t),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            }
        };
        let flag_ref = &flag;
        scope.spawn(move || {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(flag_ref)));
            // The receiver waits until this arrives; it cannot be gone.
            let _ = tx.send(out);
        });
        let out = loop {
            match py.detach(|| recv(Some(SIGNAL_POLL))) {
                Ok(out) => break out,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(signal) = py.check_signals() {
                        flag.store(true, Ordering::Relaxed);
                        // The solves stop at their next deadline check; their result is dropped.
                        let _ = py.detach(|| recv(None));
                        return Err(signal);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(error(
                        py,
                        "SolverError",
                        "the solver thread vanished".into(),
                    ))
                }
            }
        };
        out.map_err(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            error(py, "SolverError", format!("internal error: {what}"))
        })
    })
}
