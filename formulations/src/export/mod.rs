//! Export: a plan written in a training runtime's own format (`docs/export.md`: the mapping per
//! format and what each runtime cannot express).
//!
//! | [`Format`] | file | module |
//! |---|---|---|
//! | `galvatron` | the engine's output config (`--galvatron_config_path`) | [`galvatron`] |
//! | `pipedream` | the runtime configuration (module to stage, stage to rank maps) | [`pipedream`] |
//! | `megatron` | Megatron-LM command-line arguments | [`megatron`] |
//! | `torchtitan` | the job TOML's `[parallelism]` section | [`torchtitan`] |
//! | `deepspeed` | `ds_config.json` and the `PipelineModule` split | [`deepspeed`] |
//!
//! A plan a runtime cannot run as it is is never rewritten silently: [`export`] returns
//! [`ExportError::Inexpressible`] with every reason and the nearest plan the runtime runs, which
//! [`Inexpressible::message`] reports with both plans' evaluated costs.

pub mod deepspeed;
pub mod galvatron;
pub mod layout;
pub mod megatron;
pub mod pipedream;
mod refusal;
pub mod torchtitan;

use crate::error::InputError;
use crate::galvatron::output::Extras;
use crate::instance::Instance;
use crate::layer_order;
use crate::plan::{Plan, Stage};
use crate::units::fmt_bytes;
use std::fmt;
use std::str::FromStr;

/// A plan as a runtime gets it: the neutral plan and, for a Galvatron planner's solution, the
/// decisions the neutral plan does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimePlan {
    /// The plan.
    pub plan: Plan,
    /// Galvatron's vocabulary tp, embedding sharding, global batch and default dp type.
    pub galvatron: Option<Extras>,
}

impl RuntimePlan {
    /// A plan without runtime extras.
    pub fn of(plan: Plan) -> RuntimePlan {
        RuntimePlan {
            plan,
            galvatron: None,
        }
    }

    /// Reads a plan file, or a solution file (its `plan`, and its `galvatron` member if any).
    pub fn from_json(text: &str) -> Result<RuntimePlan, InputError> {
        let doc: serde_json::Value = crate::error::parse_json(text, "plan or solution")?;
        let plan = Plan::from_json(text)?;
        let galvatron = match doc.get("galvatron").filter(|_| doc.get("stages").is_none()) {
            Some(v) => Some(serde_path_to_error::deserialize(v.clone()).map_err(|e| {
                InputError::field(format!("galvatron.{}", e.path()), e.inner().to_string())
            })?),
            None => None,
        };
        Ok(RuntimePlan { plan, galvatron })
    }
}

/// The runtimes pipeplan exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Galvatron's output config.
    Galvatron,
    /// PipeDream's runtime configuration.
    Pipedream,
    /// Megatron-LM's command-line arguments.
    Megatron,
    /// torchtitan's `[parallelism]` TOML.
    Torchtitan,
    /// DeepSpeed's `ds_config.json` and pipeline split.
    Deepspeed,
}

impl Format {
    /// Every format, in the order of the documentation.
    pub const ALL: [Format; 5] = [
        Format::Galvatron,
        Format::Pipedream,
        Format::Megatron,
        Format::Torchtitan,
        Format::Deepspeed,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Galvatron => "galvatron",
            Format::Pipedream => "pipedream",
            Format::Megatron => "megatron",
            Format::Torchtitan => "torchtitan",
            Format::Deepspeed => "deepspeed",
        }
    }

    /// The runtime's name in messages.
    pub fn runtime(self) -> &'static str {
        match self {
            Format::Galvatron => "Galvatron",
            Format::Pipedream => "PipeDream",
            Format::Megatron => "Megatron-LM",
            Format::Torchtitan => "torchtitan",
            Format::Deepspeed => "DeepSpeed",
        }
    }

    /// Why the runtime cannot run the plan as it is; empty when it can. The plan is in the
    /// chain's order ([`export`] relinearizes a plan with `order` first).
    pub fn limits(self, inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
        if self != Format::Galvatron {
            let stages = &rp.plan.stages;
            let mut only_galvatron = Vec::new();
            if let Some(i) = stages.iter().position(|s| s.ulysses) {
                only_galvatron.push(format!(
                    "stage {i} uses Ulysses sequence parallelism, which the {} export does not \
                     write",
                    self.runtime()
                ));
            }
            if let Some(i) = stages.iter().position(Stage::shards_with_whole_gradients) {
                only_galvatron.push(format!(
                    "stage {i} shards and holds its gradients whole until the last micro-batch \
                     (FSDP's no_sync), which the {} export does not write: its ZeRO-3 divides \
                     them at every micro-batch",
                    self.runtime()
                ));
            }
            if !only_galvatron.is_empty() {
                let plain = RuntimePlan {
                    plan: galvatron_only_removed(&rp.plan),
                    ..rp.clone()
                };
                only_galvatron.extend(self.limits(inst, &plain));
                return only_galvatron;
            }
        }
        match self {
            Format::Galvatron => galvatron::limits(inst, rp),
            Format::Pipedream => pipedream::limits(inst, rp),
            Format::Megatron => megatron::limits(inst, rp),
            Format::Torchtitan => torchtitan::limits(inst, rp),
            Format::Deepspeed => deepspeed::limits(inst, rp),
        }
    }

    /// The nearest plan the runtime runs (its [`Format::limits`] are empty), for a plan in the
    /// chain's order, as [`Format::limits`].
    pub fn nearest(self, inst: &Instance, plan: &Plan) -> Plan {
        if self != Format::Galvatron
            && plan
                .stages
                .iter()
                .any(|s| s.ulysses || s.shards_with_whole_gradients())
        {
            return self.nearest(inst, &galvatron_only_removed(plan));
        }
        match self {
            Format::Galvatron => galvatron::nearest(inst, plan),
            Format::Pipedream => pipedream::nearest(inst, plan),
            Format::Megatron => megatron::nearest(inst, plan),
            Format::Torchtitan => torchtitan::nearest(inst, plan),
            Format::Deepspeed => deepspeed::nearest(inst, plan),
        }
    }

    fn write(self, inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
        match self {
            Format::Galvatron => galvatron::write(inst, rp),
            Format::Pipedream => pipedream::write(inst, rp),
            Format::Megatron => megatron::write(inst, rp),
            Format::Torchtitan => torchtitan::write(inst, rp),
            Format::Deepspeed => deepspeed::write(inst, rp),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown export format `{s}`; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// A plan the runtime cannot run as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Inexpressible {
    /// The runtime.
    pub format: Format,
    /// Every reason.
    pub reasons: Vec<String>,
    /// The nearest plan the runtime runs.
    pub nearest: Plan,
}

/// Why [`export`] wrote nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportError {
    /// The plan does not fit the instance (or its runtime extras contradict it).
    Input(InputError),
    /// The runtime cannot express the plan.
    Inexpressible(Box<Inexpressible>),
}

impl From<InputError> for ExportError {
    fn from(e: InputError) -> Self {
        ExportError::Input(e)
    }
}

/// The plan in the runtime's format (the file's text, ending with a newline), after checking it
/// against the instance.
pub fn export(format: Format, inst: &Instance, rp: &RuntimePlan) -> Result<String, ExportError> {
    if rp.plan.order.is_some() {
        // The runtime sees the layers in the plan's order (resolving checks it; the plan is
        // checked in it).
        let (inst, plan) = layer_order::resolve(inst, &rp.plan)?;
        let plain = RuntimePlan {
            plan: plan.into_owned(),
            ..rp.clone()
        };
        return export(format, &inst, &plain).map_err(|e| match e {
            ExportError::Inexpressible(mut why) => {
                why.nearest.order = rp.plan.order.clone();
                ExportError::Inexpressible(why)
            }
            other => other,
        });
    }
    rp.plan.check(inst)?;
    let reasons = format.limits(inst, rp);
    if !reasons.is_empty() {
        return Err(ExportError::Inexpressible(Box::new(Inexpressible {
            format,
            reasons,
            nearest: format.nearest(inst, &rp.plan),
        })));
    }
    let mut text = format.write(inst, rp)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// What to say beside a file [`export`] wrote, one sentence each: that the plan does not fit
/// (`the evaluator says this plan does not fit: GPU g needs X, above the limit of Y`), and what
/// the runtime would spend beyond the evaluator's charge (Galvatron:
/// [`galvatron::uncharged_reductions`]). [`export`] writes such plans all the same, as their
/// runtime can express them.
///
/// Each is prefixed with the plan's `file` (`FILE: ...`) when there is one, and left out when
/// `told` (what reading the file said, in the same form) holds it already.
pub fn cautions(
    format: Format,
    inst: &Instance,
    plan: &Plan,
    file: Option<&std::path::Path>,
    told: &[String],
) -> Vec<String> {
    let beyond = match format {
        Format::Galvatron => galvatron::uncharged_reductions(inst, plan),
        _ => None,
    };
    misfit(inst, plan)
        .into_iter()
        .chain(beyond)
        .map(|why| match file {
            Some(f) => format!("{}: {why}", f.display()),
            None => why,
        })
        .filter(|why| !told.contains(why))
        .collect()
}

/// The evaluator's verdict on a plan that does not fit, or `None` when it fits (or cannot be
/// judged).
fn misfit(inst: &Instance, plan: &Plan) -> Option<String> {
    let ev = crate::evaluate::evaluate(inst, plan).ok()?;
    (!ev.fits).then(|| {
        format!(
            "the evaluator says this plan does not fit: GPU {} needs {}, above the limit of {}",
            ev.max_memory_gpu,
            fmt_bytes(ev.max_memory),
            fmt_bytes(ev.memory_limit)
        )
    })
}

/// The plan as the runtimes other than Galvatron write it: Ulysses stages run as tensor
/// parallelism, sharded stages divide their gradients at every micro-batch.
fn galvatron_only_removed(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    for s in &mut plan.stages {
        s.ulysses = false;
        s.whole_gradients = false;
    }
    plan
}

/// The distinct values of a list, `a, b, c`.
fn distinct(v: &[u32]) -> String {
    let set: std::collections::BTreeSet<u32> = v.iter().copied().collect();
    set.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
