//! Settings of the DawnPiper algorithms (`--set key=value`).

use crate::algorithm::{SolveError, SolveOptions};
use pipeplan_formulations::dawnpiper::memopt::Allowed;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::{InputError, Instance};

/// Parsed settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpOptions {
    /// Schedule planned for (`schedule` = async | 1f1b | gpipe; default: the instance's).
    pub kind: ScheduleKind,
    /// Actions MemOpt may use (`memopt` = on | off | swap | recompute; default on).
    pub allowed: Allowed,
    /// Largest graph the exhaustive reference accepts (`max_nodes`, default 64).
    pub max_nodes: usize,
}

impl DpOptions {
    /// Keys every DawnPiper algorithm accepts.
    pub const KEYS: [&'static str; 2] = ["schedule", "memopt"];

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
        Ok(DpOptions {
            kind,
            allowed,
            max_nodes,
        })
    }
}
