//! Plans of other tools read back into pipeplan plans, so the neutral evaluator can judge the
//! plan a user's existing tool produced (`pipeplan evaluate --plan-from FORMAT CONFIG INSTANCE`).
//!
//! | [`PlanFormat`] | file | module |
//! |---|---|---|
//! | `galvatron` | the engine's output config | [`galvatron`] |
//! | `pipedream` | the runtime configuration, with the partitioned graph naming each module's layers | [`pipedream`] |
//! | `sailor` | a Sailor plan file (`plan_config_*.json`) | [`sailor`] |
//!
//! Each reader is the inverse of the matching [`crate::export`] writer: exporting a plan and
//! reading the file back gives the same plan. A file that sets something pipeplan's plans cannot
//! hold (e.g. Galvatron's sequence parallelism) is refused with the field named, never read as
//! a different plan.

pub mod galvatron;
pub mod pipedream;
pub mod sailor;

use crate::error::{read_text, InputError};
use crate::export::RuntimePlan;
use crate::instance::Instance;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// What a reader may need besides the plan file and the instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadOptions {
    /// PipeDream: the partitioned graph (`stage_id=N` per node) whose stages are the runtime's
    /// modules, as (file name for messages, text).
    pub modules: Option<(String, String)>,
    /// Sailor: mend one mistyped layer index when that makes the plan valid
    /// ([`sailor::read_noted`]).
    pub repair_layers: bool,
}

/// A runtime's plan file read for a user: the plan, what was mended, and what to tell them.
#[derive(Debug, Clone, PartialEq)]
pub struct Noted {
    /// The plan, checked against the instance.
    pub plan: RuntimePlan,
    /// What was mended (`repair_layers`), if anything.
    pub mended: Option<String>,
    /// Where the file and the instance differ in what the plan is judged on (e.g.
    /// [`sailor::machine_mismatch`]).
    pub notes: Vec<String>,
}

impl Noted {
    /// What to tell the user about the plan file `file`, one line each: what was mended (under
    /// `repair`, the option's name where they are, `--repair-layers` or `repair_layers`), then
    /// the notes.
    pub fn messages(&self, file: &Path, repair: &str) -> Vec<String> {
        let file = file.display();
        self.mended
            .iter()
            .map(|m| format!("{file}: mended ({repair}): {m}"))
            .chain(self.notes.iter().map(|n| format!("{file}: {n}")))
            .collect()
    }
}

/// The plan formats pipeplan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanFormat {
    /// Galvatron's output config.
    Galvatron,
    /// PipeDream's runtime configuration.
    Pipedream,
    /// A Sailor plan file.
    Sailor,
}

impl PlanFormat {
    /// Every format.
    pub const ALL: [PlanFormat; 3] = [
        PlanFormat::Galvatron,
        PlanFormat::Pipedream,
        PlanFormat::Sailor,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PlanFormat::Galvatron => "galvatron",
            PlanFormat::Pipedream => "pipedream",
            PlanFormat::Sailor => "sailor",
        }
    }

    /// The plan a file of this format describes, on `inst`'s chain and cluster; checked
    /// against the instance.
    pub fn read(
        self,
        text: &str,
        inst: &Instance,
        opts: &ReadOptions,
    ) -> Result<RuntimePlan, InputError> {
        let rp = match self {
            PlanFormat::Galvatron => galvatron::read(text, inst)?,
            PlanFormat::Pipedream => pipedream::read(text, inst, opts)?,
            PlanFormat::Sailor => sailor::read(text, inst)?,
        };
        rp.plan.check(inst)?;
        Ok(rp)
    }

    /// As [`PlanFormat::read_noted`], from the plan file at `path` and, for PipeDream, the
    /// `modules` file; an error names its file.
    pub fn read_path(
        self,
        path: &Path,
        modules: Option<&Path>,
        repair_layers: bool,
        inst: &Instance,
    ) -> Result<Noted, InputError> {
        let modules = match modules {
            Some(p) => Some((p.display().to_string(), read_text(p)?)),
            None => None,
        };
        let opts = ReadOptions {
            modules,
            repair_layers,
        };
        self.read_noted(&read_text(path)?, inst, &opts)
            .map_err(|e| e.in_file(path))
    }

    /// As [`PlanFormat::read`], with what the user should be told about the plan on `inst`,
    /// and the mending `opts.repair_layers` asks for (Sailor plan files only).
    pub fn read_noted(
        self,
        text: &str,
        inst: &Instance,
        opts: &ReadOptions,
    ) -> Result<Noted, InputError> {
        match self {
            PlanFormat::Sailor => sailor::read_noted(text, inst, opts.repair_layers),
            _ if opts.repair_layers => Err(InputError::field(
                "",
                format!(
                    "--repair-layers (repair_layers) mends Sailor plan files (--plan-from \
                     sailor), not {self}"
                ),
            )),
            PlanFormat::Galvatron => {
                // What Galvatron's runtime spends beyond the evaluator's charge.
                let plan = self.read(text, inst, opts)?;
                let notes = crate::export::galvatron::uncharged_reductions(inst, &plan.plan)
                    .into_iter()
                    .collect();
                Ok(Noted {
                    plan,
                    mended: None,
                    notes,
                })
            }
            PlanFormat::Pipedream => Ok(Noted {
                plan: self.read(text, inst, opts)?,
                mended: None,
                notes: Vec::new(),
            }),
        }
    }
}

impl fmt::Display for PlanFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlanFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<PlanFormat, String> {
        PlanFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = PlanFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown plan format `{s}`; expected one of {}",
                    names.join(", ")
                )
            })
    }
}
