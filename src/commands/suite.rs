//! `pipeplan suite generate | check | list`: versioned benchmark suites (`docs/suite.md`).

use super::{write_or_print, Failure, Format};
use crate::cli::OutputArgs;
use crate::report;
use crate::table::Table;
use clap::{Args, Subcommand};
use pipeplan_bench::suite::{self, Member, SuiteError, MANIFEST};
use std::path::{Path, PathBuf};

/// The subcommands of `pipeplan suite`.
#[derive(Debug, Subcommand)]
pub enum SuiteCommand {
    /// Build a versioned suite (instances, manifest, README, licence notices) into a new folder.
    Generate(GenerateArgs),
    /// Check every member's file against the manifest (hash, layers, GPUs); list every problem.
    Check(CheckArgs),
    /// List a suite's members (name, layers, GPUs, tags), optionally only those with given tags.
    List(ListArgs),
}

/// `pipeplan suite generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Suite version (v1).
    #[arg(value_name = "VERSION")]
    pub suite: String,
    /// Folder to write (absent or empty).
    #[arg(long, short)]
    pub output: PathBuf,
    /// The peers folder holding other tools' profiles (default: $PIPEPLAN_PEERS).
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
}

/// `pipeplan suite check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The suite's folder (holding manifest.jsonl).
    pub dir: PathBuf,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `pipeplan suite list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The suite's folder (holding manifest.jsonl).
    pub dir: PathBuf,
    /// Only members carrying this tag (repeatable: every tag given), e.g. `memory:tight`.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl From<SuiteError> for Failure {
    fn from(e: SuiteError) -> Failure {
        Failure::input(e.to_string())
    }
}

/// Runs a `pipeplan suite` subcommand.
pub fn run(cmd: SuiteCommand) -> Result<(), Failure> {
    match cmd {
        SuiteCommand::Generate(a) => generate(a),
        SuiteCommand::Check(a) => check(a),
        SuiteCommand::List(a) => list(a),
    }
}

fn generate(a: GenerateArgs) -> Result<(), Failure> {
    // Fail on a bad version before asking for the peers folder.
    suite::recipe(&a.suite)?;
    let peers = a
        .peers
        .clone()
        .or_else(|| std::env::var_os("PIPEPLAN_PEERS").map(PathBuf::from));
    let peers = match peers {
        Some(p) if p.is_dir() => p,
        Some(p) => {
            return Err(Failure::input(format!(
                "{}: peers folder not found; suite {} imports other tools' profiles from it",
                p.display(),
                a.suite
            )))
        }
        None => {
            return Err(Failure::input(format!(
                "suite {} imports other tools' profiles: give the peers folder (--peers DIR or \
                 PIPEPLAN_PEERS)",
                a.suite
            )))
        }
    };
    let built = suite::generate(&a.suite, Some(&peers))?;
    built.write(&a.output)?;
    eprintln!(
        "wrote {}: suite {}, {} members",
        a.output.display(),
        built.version,
        built.members.len()
    );
    Ok(())
}

fn check(a: CheckArgs) -> Result<(), Failure> {
    let result = suite::check(&a.dir)?;
    let text = match a.out.format() {
        Format::Json => report::json(&serde_json::json!({
            "dir": a.dir.display().to_string(),
            "members": result.members,
            "problems": result.problems,
        })),
        Format::Csv => report::csv(&result.problems),
        Format::Table => {
            let mut t: String = result
                .problems
                .iter()
                .map(|p| format!("invalid  {}\n", p.message))
                .collect();
            if result.problems.is_empty() {
                t = format!(
                    "ok  {}: {} members, every file matches {MANIFEST}\n",
                    a.dir.display(),
                    result.members
                );
            }
            t
        }
    };
    write_or_print(None, &text)?;
    match result.problems.as_slice() {
        [] => Ok(()),
        [one] => Err(Failure::input(one.message.clone())),
        [first, ..] => Err(Failure::input(format!(
            "{}: {} problems among {} members; the first: {}",
            a.dir.display(),
            result.problems.len(),
            result.members,
            first.message
        ))),
    }
}

/// A member as one CSV record (tags joined by spaces).
#[derive(serde::Serialize)]
struct Row<'a> {
    name: &'a str,
    file: &'a str,
    hash: &'a str,
    layers: usize,
    gpus: u32,
    tags: String,
}

fn list(a: ListArgs) -> Result<(), Failure> {
    let members = suite::manifest::read(&a.dir.join(MANIFEST))?;
    let chosen: Vec<&Member> = members.iter().filter(|m| m.has_tags(&a.tags)).collect();
    if chosen.is_empty() && !members.is_empty() {
        return Err(no_member_has(&a.dir, &a.tags, &members));
    }
    let text = match a.out.format() {
        Format::Json => report::json(&chosen),
        Format::Csv => {
            let rows: Vec<Row> = chosen
                .iter()
                .map(|m| Row {
                    name: &m.name,
                    file: &m.file,
                    hash: &m.hash,
                    layers: m.layers,
                    gpus: m.gpus,
                    tags: m.tags.join(" "),
                })
                .collect();
            report::csv(&rows)
        }
        Format::Table => {
            let mut t = Table::new(&["member", "layers", "GPUs", "tags"], &[1, 2]);
            for m in &chosen {
                t.row(vec![
                    m.name.clone(),
                    m.layers.to_string(),
                    m.gpus.to_string(),
                    m.tags.join(" "),
                ]);
            }
            t.render()
        }
    };
    write_or_print(None, &text)
}

/// The error of a tag filter nothing matches, listing the tags that exist.
fn no_member_has(dir: &Path, tags: &[String], members: &[Member]) -> Failure {
    let mut known: Vec<&str> = members
        .iter()
        .flat_map(|m| m.tags.iter().map(String::as_str))
        .collect();
    known.sort_unstable();
    known.dedup();
    Failure::input(format!(
        "{}: no member has every tag of --tag {}; the tags are: {}",
        dir.display(),
        tags.join(" --tag "),
        known.join(", ")
    ))
}
