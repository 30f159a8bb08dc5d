//! One module per group of subcommands, and the error every command returns.

mod accuracy;
pub mod cluster;
mod explain;
pub(crate) mod export;
mod files;
pub mod max_batch;
pub(crate) mod plot;
pub mod profile_plan;
mod reproduce;
mod solving;
pub mod suite;
pub mod sweep;
mod trace;

use crate::cli::{CalibrationArgs, Command, OutputArgs, PlanFromArgs, Reproduce};
use pipeplan_formulations::export::RuntimePlan;
use pipeplan_formulations::InputError;
use pipeplan_solvers::algorithm::SolveError;
use std::path::{Path, PathBuf};

/// Exit code: the solver found no feasible plan.
pub const NO_PLAN: u8 = 1;
/// Exit code: bad input (file, option, unsupported algorithm).
pub const BAD_INPUT: u8 = 2;

/// A failed command: the message for standard error and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// Exit code ([`NO_PLAN`] or [`BAD_INPUT`]).
    pub code: u8,
    /// One line naming the file, field or binding constraint.
    pub message: String,
}

impl Failure {
    /// A bad-input failure.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            code: BAD_INPUT,
            message: message.into(),
        }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Failure {
        Failure::input(e.to_string())
    }
}

impl From<SolveError> for Failure {
    fn from(e: SolveError) -> Failure {
        let code = match e {
            SolveError::Input(_) | SolveError::Unsupported(_) => BAD_INPUT,
            SolveError::Infeasible(_)
            | SolveError::TimeLimit(_)
            | SolveError::Interrupted
            | SolveError::Solver(_) => NO_PLAN,
        };
        Failure {
            code,
            message: e.to_string(),
        }
    }
}

/// Runs a subcommand.
pub fn run(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::Solve(a) => solving::solve(a),
        Command::Compare(a) => solving::compare(a),
        Command::Evaluate(a) => solving::evaluate(a),
        Command::Export(a) => export::run(a),
        Command::Algorithms(a) => solving::algorithms(a),
        Command::Validate(a) => files::validate(a),
        Command::Import(a) => files::import(a),
        Command::Generate(a) => files::generate(a),
        Command::Schema(a) => files::schema(a),
        Command::ProfilePlan(a) => profile_plan::run(a),
        Command::MaxBatch(a) => max_batch::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Accuracy(a) => accuracy::accuracy(a),
        Command::Calibrate(a) => accuracy::calibrate(a),
        Command::Reproduce(Reproduce::MadpipeFig7(a)) => reproduce::madpipe_fig7(a),
        Command::Suite(c) => suite::run(c),
        Command::Sweep(a) => sweep::run(a),
    }
}

/// Which output the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human table.
    Table,
    /// JSON.
    Json,
    /// CSV.
    Csv,
}

impl OutputArgs {
    /// The chosen format.
    pub fn format(self) -> Format {
        if self.json {
            Format::Json
        } else if self.csv {
            Format::Csv
        } else {
            Format::Table
        }
    }
}

/// Reads an instance file; `-` reads standard input (so `pipeplan import ... | pipeplan solve -
/// ...` runs without a file in between), named `<stdin>` in errors ([`instance_name`]).
pub fn read_instance(path: &Path) -> Result<pipeplan_formulations::Instance, InputError> {
    use std::io::Read;
    if path != Path::new("-") {
        return pipeplan_formulations::Instance::from_path(path);
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| InputError::Io {
            path: instance_name(path).display().to_string(),
            message: e.to_string(),
        })?;
    pipeplan_formulations::Instance::from_json(&text).map_err(|e| e.in_file(instance_name(path)))
}

/// How errors name the instance argument `path`: `<stdin>` for `-`, else the path.
pub fn instance_name(path: &Path) -> &Path {
    if path == Path::new("-") {
        Path::new("<stdin>")
    } else {
        path
    }
}

impl CalibrationArgs {
    /// The calibration file, if one is given.
    pub fn read(&self) -> Result<Option<GivenCalibration>, InputError> {
        self.calibration
            .as_deref()
            .map(|p| {
                pipeplan_formulations::calibration::CalibrationFile::from_path(p).map(|file| {
                    GivenCalibration {
                        path: p.to_path_buf(),
                        file,
                    }
                })
            })
            .transpose()
    }

    /// `inst` under the calibration file's constants, if one is given.
    pub fn apply(
        &self,
        inst: pipeplan_formulations::Instance,
    ) -> Result<pipeplan_formulations::Instance, InputError> {
        Ok(match self.read()? {
            Some(c) => c.apply(&inst),
            None => inst,
        })
    }
}

/// A calibration file named by `--calibration`.
pub struct GivenCalibration {
    /// Where it was read.
    pub path: PathBuf,
    /// What it holds.
    pub file: pipeplan_formulations::calibration::CalibrationFile,
}

impl GivenCalibration {
    /// The constants.
    pub fn constants(&self) -> &pipeplan_formulations::calibration::Calibration {
        &self.file.constants
    }

    /// `inst` under the constants; a warning on standard error when the file was fitted to
    /// runs on other GPU models than the one `inst` was profiled on.
    pub fn apply(&self, inst: &pipeplan_formulations::Instance) -> pipeplan_formulations::Instance {
        self.warn_if_foreign(inst);
        inst.calibrated(self.constants())
    }

    /// The warning of [`GivenCalibration::apply`] alone.
    pub fn warn_if_foreign(&self, inst: &pipeplan_formulations::Instance) {
        if let Some(why) = self.file.foreign_gpu(inst) {
            eprintln!("warning: {}: {why}", self.path.display());
        }
    }
}

/// [`read_instance`], under the calibration of `cal` when it names one.
pub fn read_calibrated(
    path: &Path,
    cal: &CalibrationArgs,
) -> Result<pipeplan_formulations::Instance, InputError> {
    cal.apply(read_instance(path)?)
}

/// A plan file, or a solution file's plan with what the solution says about it.
pub struct PlanFile {
    /// The plan.
    pub plan: pipeplan_formulations::Plan,
    /// The algorithm of a solution file.
    pub algorithm: Option<String>,
    /// The claimed peak memory per GPU of a solution file.
    pub claimed_peaks: Option<Vec<f64>>,
}

/// Reads a plan file, or the `plan` of a solution file (with its algorithm and claimed peaks).
pub fn read_plan(path: &Path) -> Result<PlanFile, InputError> {
    let text = pipeplan_formulations::error::read_text(path)?;
    let solution = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| match v {
            serde_json::Value::Object(m) if !m.contains_key("stages") => Some(m),
            _ => None,
        });
    let Some(mut solution) = solution.filter(|m| m.contains_key("plan")) else {
        let plan = pipeplan_formulations::Plan::from_json(&text).map_err(|e| e.in_file(path))?;
        return Ok(PlanFile {
            plan,
            algorithm: None,
            claimed_peaks: None,
        });
    };
    // A solution file: errors refer to its `plan` member.
    let inner = solution.remove("plan").unwrap_or_default();
    let plan = pipeplan_formulations::Plan::from_json(&inner.to_string()).map_err(|e| {
        InputError::InFile {
            file: format!("{} (member `plan`)", path.display()),
            inner: Box::new(e),
        }
    })?;
    let algorithm = solution.get("algorithm").and_then(|a| a.as_str());
    let peaks = match solution.get("claimed").and_then(|c| c.get("peak_memory")) {
        None | Some(serde_json::Value::Null) => None,
        Some(m) => {
            let peaks: Vec<f64> = serde_json::from_value(m.clone()).map_err(|_| {
                InputError::field("claimed.peak_memory", "not a list of bytes per GPU")
                    .in_file(path)
            })?;
            pipeplan_formulations::plan::check_claimed_peaks(&peaks)
                .map_err(|e| e.in_file(path))?;
            Some(peaks)
        }
    };
    Ok(PlanFile {
        plan,
        algorithm: algorithm.map(str::to_string),
        claimed_peaks: peaks,
    })
}

/// A plan file judged against an instance file (under `cal`), for the commands that show a
/// plan; [`Judged::blame`] names the file an error is about.
pub struct Judged<'a> {
    /// The instance, calibrated.
    pub inst: pipeplan_formulations::Instance,
    /// The plan.
    pub plan: pipeplan_formulations::Plan,
    /// The neutral evaluator's verdict.
    pub ev: pipeplan_formulations::Evaluation,
    /// The algorithm of a solution file (none for a plan or a runtime's file).
    pub algorithm: Option<String>,
    /// The claimed peak memory per GPU of a solution file.
    pub claimed_peaks: Option<Vec<f64>>,
    plan_path: &'a Path,
    inst_path: &'a Path,
}

impl<'a> Judged<'a> {
    /// Reads both files (the plan in a runtime's format with `--plan-from`) and evaluates.
    pub fn read(
        plan_path: &'a Path,
        inst_path: &'a Path,
        from: &PlanFromArgs,
        cal: &CalibrationArgs,
    ) -> Result<Judged<'a>, InputError> {
        let inst = read_calibrated(inst_path, cal)?;
        let file = match from.plan_from {
            None => read_plan(plan_path)?,
            Some(_) => PlanFile {
                plan: read_runtime_plan(plan_path, from, &inst)?.0.plan,
                algorithm: None,
                claimed_peaks: None,
            },
        };
        let plan = file.plan;
        let ev = pipeplan_formulations::evaluate(&inst, &plan)
            .map_err(|e| blame(plan_path, inst_path, e))?;
        Ok(Judged {
            inst,
            plan,
            ev,
            algorithm: file.algorithm,
            claimed_peaks: file.claimed_peaks,
            plan_path,
            inst_path,
        })
    }

    /// `e` located in the plan file or the instance file, whichever it is about.
    pub fn blame(&self, e: InputError) -> InputError {
        blame(self.plan_path, self.inst_path, e)
    }
}

/// The plan file at `path` read in the runtime's format `from` names, on `inst` (PipeDream's
/// modules and the Sailor mending as `from` asks), its notes printed on standard error and
/// returned; without a format, a plan or solution file.
pub fn read_runtime_plan(
    path: &Path,
    from: &PlanFromArgs,
    inst: &pipeplan_formulations::Instance,
) -> Result<(RuntimePlan, Vec<String>), InputError> {
    let Some(format) = from.plan_from else {
        let rp = RuntimePlan::from_json(&pipeplan_formulations::error::read_text(path)?)
            .map_err(|e| e.in_file(path))?;
        return Ok((rp, Vec::new()));
    };
    let noted = format.read_path(path, from.modules.as_deref(), from.repair_layers, inst)?;
    let told = noted.messages(path, "--repair-layers");
    for m in &told {
        eprintln!("note: {m}");
    }
    Ok((noted.plan, told))
}

fn blame(plan: &Path, inst: &Path, e: InputError) -> InputError {
    match e {
        // The timeline's `periods` is the command's option, in no file.
        InputError::Field { field, message } if field == "periods" => {
            InputError::field("--periods", message)
        }
        e if e.is_about_plan() => e.in_file(plan),
        e => e.in_file(inst),
    }
}

/// Writes `text` to `path`, or prints it when `path` is `None` or `-`.
pub fn write_or_print(path: Option<&Path>, text: &str) -> Result<(), Failure> {
    match path.filter(|p| *p != Path::new("-")) {
        Some(p) => std::fs::write(p, ensure_newline(text))
            .map_err(|e| Failure::input(format!("{}: cannot write: {e}", p.display()))),
        None => {
            print!("{}", ensure_newline(text));
            Ok(())
        }
    }
}

fn ensure_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_documented_meaning() {
        let code = |e: SolveError| Failure::from(e).code;
        assert_eq!(code(SolveError::Infeasible("x".into())), NO_PLAN);
        assert_eq!(code(SolveError::TimeLimit(1.0)), NO_PLAN);
        assert_eq!(code(SolveError::Solver("x".into())), NO_PLAN);
        assert_eq!(
            code(SolveError::Input(InputError::field("f", "m"))),
            BAD_INPUT
        );
        assert_eq!(
            code(SolveError::Unsupported(
                pipeplan_solvers::algorithm::Unsupported("x".into())
            )),
            BAD_INPUT
        );
    }
}
