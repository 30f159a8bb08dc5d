//! Settings of the DawnPiper algorithms (`--set key=value`).

use crate::settings::{Kind, Param, Settings};
use pipeplan_formulations::dawnpiper::memopt::Allowed;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::Instance;

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
    /// Settings every DawnPiper algorithm takes.
    pub const PARAMS: [Param; 3] = [
        Param::derived(
            "schedule",
            Kind::Choice {
                values: &["async", "1f1b", "gpipe"],
            },
            "schedule planned for (default: the instance's)",
        ),
        Param::new(
            "memopt",
            Kind::Choice {
                values: &["on", "off", "swap", "recompute", "true", "false"],
            },
            "on",
            "actions MemOpt may use (true = on, false = off)",
        )
        .with_variants(&["on", "off"]),
        Param::new(
            "comm",
            Kind::Choice {
                values: &["ignore", "avoid", "include"],
            },
            "ignore",
            "communication across cuts: ignored (the paper's objective), avoided (Appendix B.2) \
             or counted as a resource",
        ),
    ];

    /// `max_nodes`, the exhaustive reference's own setting.
    pub const MAX_NODES: Param = Param::new(
        "max_nodes",
        Kind::Count { min: 1 },
        "64",
        "largest graph the exhaustive reference accepts (its work grows as P n^2)",
    );

    /// Reads checked settings (declared by [`DpOptions::PARAMS`] and [`DpOptions::MAX_NODES`]).
    pub fn from(inst: &Instance, s: &Settings) -> DpOptions {
        let kind = match s.choice("schedule") {
            Some("async") => ScheduleKind::Async,
            Some("1f1b") => ScheduleKind::OneFOneB,
            Some("gpipe") => ScheduleKind::Gpipe,
            _ => inst.training.schedule,
        };
        let allowed = match s.choice("memopt") {
            Some("off") | Some("false") => Allowed::NONE,
            Some("swap") => Allowed {
                swap: true,
                recompute: false,
            },
            Some("recompute") => Allowed {
                swap: false,
                recompute: true,
            },
            _ => Allowed::ALL,
        };
        let comm = match s.choice("comm") {
            Some("avoid") => Comm::Avoid,
            Some("include") => Comm::Include,
            _ => Comm::Ignore,
        };
        DpOptions {
            kind,
            allowed,
            max_nodes: s.count("max_nodes").map_or(64, |n| n as usize),
            comm,
        }
    }
}
