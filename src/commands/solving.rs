//! `solve`, `compare`, `evaluate` and `algorithms`.

use super::{write_or_print, Failure, Format, NO_PLAN};
use crate::cli::{AlgorithmsArgs, CompareArgs, EvaluateArgs, OutputArgs, SolveArgs, SolveFlags};
use crate::report::{self, Record};
use crate::table::Table;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveError, SolveOptions};
use pipeplan_solvers::{harness, registry};

fn options(f: &SolveFlags) -> SolveOptions {
    SolveOptions {
        time_limit: f.time_limit.0,
        seed: f.seed,
        stages: f.stages,
        params: f.set.iter().cloned().collect(),
    }
}

fn algorithm(name: &str) -> Result<Box<dyn Algorithm>, Failure> {
    registry::by_name(name).ok_or_else(|| {
        Failure::input(format!(
            "--algo: unknown algorithm {name:?}; known: {}",
            registry::names().join(", ")
        ))
    })
}

/// `pipeplan solve`.
pub fn solve(a: SolveArgs) -> Result<(), Failure> {
    let inst = match a.from {
        Some(from) => {
            a.calibration
                .apply(super::files::import_profile(from, &a.instance, &a.profile)?)?
        }
        None => {
            if let Some(option) = a.profile.first_given() {
                return Err(Failure::input(format!(
                    "solve: {option} is an import option: give --from FORMAT to read {} as a \
                     profile, or set it in the instance",
                    a.instance.display()
                )));
            }
            super::read_calibrated(&a.instance, &a.calibration)?
        }
    };
    let algo = algorithm(&a.algo)?;
    let opts = options(&a.flags);
    let sol = match harness::run(algo.as_ref(), &inst, &opts) {
        Err(SolveError::Unsupported(u)) => {
            return Err(Failure::input(harness::unsupported_message(
                algo.as_ref(),
                &inst,
                &u,
            )))
        }
        // A field of the instance the algorithm reads (an extension, say) is named in its file.
        Err(SolveError::Input(e)) if e.is_about_instance() && a.from.is_none() => {
            return Err(e.in_file(super::instance_name(&a.instance)).into());
        }
        other => other?,
    };
    if let Some(p) = &a.output {
        write_or_print(Some(p), &report::json(&sol))?;
    }
    let text = match a.out.format() {
        Format::Json => report::json(&sol),
        Format::Csv => report::csv(&[Record::of_solution(&sol)]),
        Format::Table => report::solution_text(&inst, &sol),
    };
    write_or_print(None, &text)
}

/// Reads every file, reporting all bad ones at once.
fn read_instances(
    paths: &[std::path::PathBuf],
    cal: &crate::cli::CalibrationArgs,
) -> Result<Vec<Instance>, Failure> {
    let cal = cal.read()?;
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for p in paths {
        match super::read_instance(p) {
            Ok(i) => ok.push(match &cal {
                Some(c) => c.apply(&i),
                None => i,
            }),
            Err(e) => bad.push(e.to_string()),
        }
    }
    if bad.is_empty() {
        Ok(ok)
    } else {
        Err(Failure::input(bad.join("\nerror: ")))
    }
}

/// `pipeplan compare`.
pub fn compare(a: CompareArgs) -> Result<(), Failure> {
    let instances = read_instances(&a.instances, &a.calibration)?;
    let algos: Vec<Box<dyn Algorithm>> = if a.algos.is_empty() {
        registry::all()
    } else {
        a.algos
            .iter()
            .map(|n| algorithm(n.trim()))
            .collect::<Result<_, _>>()?
    };
    let opts = options(&a.flags);
    let table = a.out.format() == Format::Table;
    let progress = crate::progress::Progress::new(instances.len(), "compare", table);
    // With a bar, one instance at a time (gaps are per instance: the rows are the same).
    let rows = if progress.shown() {
        let mut rows = Vec::new();
        for inst in &instances {
            rows.extend(harness::compare(&algos, std::slice::from_ref(inst), &opts));
            progress.tick();
        }
        rows
    } else {
        harness::compare(&algos, &instances, &opts)
    };
    drop(progress);
    if let Some(p) = &a.output {
        write_or_print(Some(p), &report::json(&rows))?;
    }
    if let Some(p) = &a.html {
        let page = crate::html::comparison_html(&instances, &rows).map_err(Failure::input)?;
        write_or_print(Some(p), &page)?;
        eprintln!("wrote {}", p.display());
    }
    let text = match a.out.format() {
        Format::Json => report::json(&rows),
        Format::Csv => report::csv(&rows.iter().map(Record::of_row).collect::<Vec<_>>()),
        Format::Table => report::comparison_text(&instances, &rows, a.wide),
    };
    write_or_print(None, &text)?;
    if rows.iter().any(|r| r.solution().is_some()) {
        Ok(())
    } else {
        Err(Failure {
            code: NO_PLAN,
            message: "no algorithm produced a plan".into(),
        })
    }
}

/// `pipeplan evaluate`.
pub fn evaluate(a: EvaluateArgs) -> Result<(), Failure> {
    let j = super::Judged::read(&a.plan, &a.instance, &a.from, &a.calibration)?;
    let (inst, plan, e) = (j.inst, j.plan, j.ev);
    let text = match a.out.format() {
        Format::Json => report::json(&e),
        Format::Csv => report::csv(&[Record::of_evaluation(&inst, &plan, &e)]),
        Format::Table => report::evaluation_text(&inst, &plan, &e),
    };
    write_or_print(None, &text)
}

/// `pipeplan algorithms`.
pub fn algorithms(a: AlgorithmsArgs) -> Result<(), Failure> {
    if a.params {
        return params(a.out);
    }
    let entries = registry::entries();
    let text = match a.out.format() {
        Format::Json => report::json(&entries),
        Format::Csv => report::csv(&entries),
        Format::Table => {
            let mut t = Table::new(&["algorithm", "family", "exact", "description"], &[]);
            for e in &entries {
                t.row(vec![
                    e.name.into(),
                    e.family.clone(),
                    if e.exact { "yes" } else { "no" }.into(),
                    e.description.into(),
                ]);
            }
            t.render()
        }
    };
    write_or_print(None, &text)
}

/// `pipeplan algorithms --params`: every declared setting, one row each.
fn params(out: OutputArgs) -> Result<(), Failure> {
    let entries = registry::settings();
    let text = match out.format() {
        Format::Json => report::json(&entries),
        Format::Csv => report::csv(&entries),
        Format::Table => {
            let mut t = Table::new(
                &["algorithm", "setting", "values", "default", "what it does"],
                &[],
            );
            for e in &entries {
                t.row(vec![
                    e.algorithm.into(),
                    e.setting.into(),
                    e.values.clone(),
                    e.default.unwrap_or("(derived)").into(),
                    e.doc.into(),
                ]);
            }
            t.render()
        }
    };
    write_or_print(None, &text)
}
