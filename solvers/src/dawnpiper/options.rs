//! Settings of the DawnPiper algorithms (`--set key=value`).

use crate::algorithm::{SolveError, SolveOptions};
use pipeplan_formulations::dawnpiper::memopt::Allowed;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::{InputError, Instance};

/// How the search treats communication across cuts (`comm`, `docs/dawnpiper.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comm {
    /// The paper's objective (Section 4.1): max over stages of compute + MemOpt overhead; links
    /// are not looked at (default).
    Ignore,
    /// Appendix B.2: the same objective, but each BiPar walk skips cut positions whose
    /// avoidable communication (bytes beyond the window's inevitable ones) takes longer over
    /// the link than the average stage compute on either side (Theorem 4.1's condition 2);
    /// if that leaves no fitting position, the walk is redone without the filter.
    Avoid,
    /// Not in the paper: the objective also counts every link as a resource
    /// (2 x cut bytes / bandwidth per micro-batch), like the evaluator's period.
    Include,
}

impl Comm {
    /// The setting's value as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Comm::Ignore => "ignore",
            Comm::Avoid => "avoid",
            Comm::Include => "include",
        }
    }
}

/// Parsed settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpOptions {
    /// Schedule planned for (`schedule` = async | 1f1b | gpipe; default: the instance's).
    pub kind: ScheduleKind,
    /// Actions MemOpt may use (`memopt` = on | off | swap | recompute; default on).
    pub allowed: Allowed,
    /// Largest graph the exhaustive reference accepts (`max_nodes`, default 64).
    pub max_nodes: usize,
    /// Communication handling (`comm` = ignore | avoid | include; default ignore).
    pub comm: Comm,
}

impl DpOptions {
    /// Keys every DawnPiper algorithm accepts.
    pub const KEYS: [&'static str; 3] = ["schedule", "memopt", "comm"];

    /// Reads the settings (unknown keys are rejected by the caller's `check_params`).
    pub fn from(inst: &Instance, opts: &SolveOptions) -> Result<DpOptions, SolveError> {
        let bad = |k: &str, v: &str, what: &str| {
            SolveError::Input(InputError::field(
                format!("--set {k}"),
                format!("\"{v}\": expected {what}"),
            ))
        };
        let kind = match opts.params.get("schedule").map(|s| s.trim()) {
            None => inst.training.schedule,
            Some("async") => ScheduleKind::Async,
            Some("1f1b") => ScheduleKind::OneFOneB,
            Some("gpipe") => ScheduleKind::Gpipe,
            Some(v) => return Err(bad("schedule", v, "async, 1f1b or gpipe")),
        };
        let allowed = match opts.params.get("memopt").map(|s| s.trim()) {
            None | Some("on") | Some("true") => Allowed::ALL,
            Some("off") | Some("false") => Allowed::NONE,
            Some("swap") => Allowed {
                swap: true,
                recompute: false,
            },
            Some("recompute") => Allowed {
                swap: false,
                recompute: true,
            },
            Some(v) => return Err(bad("memopt", v, "on, off, swap or recompute")),
        };
        let max_nodes = match opts.params.get("max_nodes") {
            None => 64,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(bad("max_nodes", v, "a positive integer")),
            },
        };
        let comm = match opts.params.get("comm").map(|s| s.trim()) {
            None | Some("ignore") => Comm::Ignore,
            Some("avoid") => Comm::Avoid,
            Some("include") => Comm::Include,
            Some(v) => return Err(bad("comm", v, "ignore, avoid or include")),
        };
        Ok(DpOptions {
            kind,
            allowed,
            max_nodes,
            comm,
        })
    }
}
